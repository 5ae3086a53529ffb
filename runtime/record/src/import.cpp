#include "shmbus/record/import.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "conversion.hpp"
#include "progress.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/names.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"

namespace shmbus::record {

namespace {

/// One imported channel: its schema (none: raw bytes), its id in the
/// output, and why it is kept undecoded (empty: it is decoded).
struct Imported : ChannelOutcome {
  std::optional<schema::Schema> schema;
  std::uint16_t id = 0;
};

/// Resolves a channel's type; refuses what cannot map, naming why.
std::optional<schema::Schema> resolve(const schema::TypeCatalog& catalog, const mcap::Channel& c,
                                      const mcap::Schema* s) {
  if (!is_ros2_channel(c, s)) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("bag import: channel {} is {} with {} schemas; only ROS 2 recordings (cdr messages, "
                            "ros2msg schemas) are imported",
                            c.topic, c.message_encoding, s != nullptr ? s->encoding : std::string{"no"}));
  }
  const std::string type = short_type_name(s->name);
  if (type == "shmbus/Bytes") return std::nullopt;
  // The file's definition, read; a type the msg path does not define is it.
  // rosbag2 writes an empty one for a type it had no definition of.
  if (s->data.empty() && catalog.contains(type)) return catalog.find(type);
  schema::Schema theirs = schema_of_ros2msg(*s, c.topic);
  if (!catalog.contains(type)) return theirs;
  schema::Schema ours = [&] {
    try {
      return catalog.find(type);
    } catch (const std::exception& e) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("bag import: channel {}: type {} cannot be held: {}", c.topic, s->name, e.what()));
    }
  }();
  // Both as canonical text: full type names, values and defaults written
  // one way, no comments. The first line that differs names the field.
  if (ours.text() == theirs.text()) return ours;
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::vector<std::string> mine = lines(ours.text());
  const std::vector<std::string> file = lines(theirs.text());
  std::size_t i = 0;
  std::string section = type;
  for (; i < mine.size() && i < file.size() && mine[i] == file[i]; ++i) {
    if (mine[i].starts_with("MSG: ")) section = mine[i].substr(5);
  }
  throw Error(Errc::kInvalidArgument,
              fmt::format("bag import: channel {}: the file's {} differs from {} on the msg path in {}: the file "
                          "has '{}', the msg path '{}'; give the file's definition with --msg-path, or none",
                          c.topic, s->name, ours.root().source, section, i < file.size() ? file[i] : "nothing",
                          i < mine.size() ? mine[i] : "nothing"));
}

}  // namespace

bool is_ros2_channel(const mcap::Channel& c, const mcap::Schema* s) noexcept {
  return c.message_encoding == "cdr" && s != nullptr && s->encoding == "ros2msg";
}

bool is_ros2_recording(const std::string& path) {
  const mcap::Reader reader(path);
  const mcap::FileInfo& info = reader.info();
  return info.profile == "ros2" || std::ranges::any_of(info.channels, [&](const mcap::Channel& c) {
           return is_ros2_channel(c, info.schema(c.schema_id));
         });
}

schema::Schema schema_of_ros2msg(const mcap::Schema& s, std::string_view topic) {
  if (s.data.empty()) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("channel {}: neither the file nor the msg path defines {}; give its .msg with --msg-path "
                            "(or source the ROS 2 workspace that has it: AMENT_PREFIX_PATH)",
                            topic, s.name));
  }
  try {
    auto set = std::make_shared<schema::MessageSet>();
    const std::string root = set->add_ros2msg(s.data, s.name, fmt::format("{} (schema {})", topic, s.name));
    set->resolve();
    return schema::Schema::from_set(std::move(set), root);
  } catch (const schema::SchemaError& e) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("channel {}: the file's definition of {} cannot be read: {}", topic, s.name, e.what()));
  }
}

namespace {

/// A file beside `output` that becomes it by rename() only when the
/// import is finished: a refused import leaves nothing behind, and never
/// replaces a file that was there.
class StagedOutput {
 public:
  explicit StagedOutput(const std::string& output)
      : output_(output), staged_(fmt::format("{}.importing-{}", output, ::getpid())) {}
  ~StagedOutput() {
    if (!committed_) std::filesystem::remove(staged_, ignored_);
  }
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  StagedOutput(StagedOutput&&) = delete;
  StagedOutput& operator=(StagedOutput&&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return staged_; }
  void commit() {
    std::error_code ec;
    std::filesystem::rename(staged_, output_, ec);
    if (ec)
      throw Error(Errc::kResource,
                  fmt::format("bag import: cannot rename {} to {}: {}", staged_, output_, ec.message()));
    committed_ = true;
  }

 private:
  std::string output_;
  std::string staged_;
  bool committed_ = false;
  std::error_code ignored_;
};

/// One pass over the input's messages. With a writer, each is written as
/// its channel is imported; without one, each decoded channel's messages
/// are only decoded. A message that does not decode is refused
/// (`strict`) or marks its channel undecoded; returns how many channels
/// it marked.
std::size_t import_pass(mcap::Reader& reader, const std::string& input, std::map<std::uint16_t, Imported>& channels,
                        mcap::Writer* writer, bool strict, ProgressReporter* progress, ImportReport& report) {
  const mcap::FileInfo& info = reader.info();
  std::size_t marked = 0;
  reader.read_messages([&](const mcap::MessageView& m) {
    Imported& im = channels.at(m.channel_id);
    std::vector<std::byte> bytes;
    if (!im.left_out.empty()) {
      bytes.assign(m.data.begin(), m.data.end());  // kept as it was, with its schema text
    } else {
      try {
        bytes = im.schema ? im.schema->from_cdr(m.data, schema::Schema::kMaxDecodedBytes, &im.notes)
                          : schema::bytes_from_cdr(m.data);
      } catch (const schema::CodecError& e) {
        const std::string why =
            fmt::format("message {} (log time {}) does not decode: {}", m.sequence, m.log_time, e.what());
        if (strict) {
          throw Error(Errc::kConfig,
                      fmt::format("bag import: {}: {} on {}", input, why, info.channel(m.channel_id)->topic));
        }
        im.left_out = why;
        ++marked;
        if (writer != nullptr) return false;  // written decoded so far: the pass starts again
        return true;
      }
    }
    if (writer == nullptr) return true;
    writer->write({im.id, m.sequence, m.log_time, m.publish_time, bytes});
    ++report.messages;
    ++im.messages;
    progress->read_one(*writer);
    return true;
  });
  return marked;
}

}  // namespace

ImportReport import_ros2(const std::string& input, const std::string& output, const ImportOptions& o) {
  if (input == output) throw Error(Errc::kInvalidArgument, "bag import: -o must name another file than " + input);
  mcap::Reader reader(input);
  const mcap::FileInfo& info = reader.info();
  const schema::TypeCatalog catalog(o.msg_paths);
  std::map<std::uint16_t, Imported> channels;
  for (const mcap::Channel& c : info.channels) {
    Imported& im = channels[c.id];
    try {
      im.schema = resolve(catalog, c, info.schema(c.schema_id));
    } catch (const Error& e) {
      if (o.strict) throw;
      im.left_out = e.what();
    }
  }
  StagedOutput staged(output);
  ImportReport report;
  // At most three passes: the first finds a message that does not decode,
  // the second every other one, the third writes with all of them known.
  for (int attempt = 0;; ++attempt) {
    mcap::WriterOptions w;
    w.library = o.library;
    w.compression = mcap::parse_compression(info.compression).value_or(mcap::Compression::kZstd);
    mcap::Writer writer(staged.path(), w);
    RecordedChannels channel_forms(writer);
    for (const mcap::Channel& c : info.channels) {
      Imported& im = channels.at(c.id);
      im.messages = 0;
      im.notes = {};
      if (!im.left_out.empty()) {
        // Its bytes as they were, under its own schema record: nothing lost.
        const mcap::Schema* s = info.schema(c.schema_id);
        const std::uint16_t schema_id =
            s != nullptr ? writer.add_schema(s->name, s->encoding, s->data) : std::uint16_t{0};
        mcap::KeyValues metadata = c.metadata;
        std::erase_if(metadata, [](const auto& kv) { return kv.first == "type_name" || kv.first == "type_hash"; });
        metadata.emplace_back("type_name", TypeInfo::bytes().name);
        metadata.emplace_back("type_hash", fmt::format("{:016x}", 0));
        im.id = writer.add_channel(schema_id, c.topic, c.message_encoding, std::move(metadata));
        continue;
      }
      im.id = channel_forms.add(c.topic, im.schema ? im.schema->type_info() : TypeInfo::bytes());
    }
    for (const mcap::Metadata& m : info.metadata) writer.write_metadata(m);
    report = ImportReport{};
    ProgressReporter progress(o.progress, info.statistics.message_count);
    if (import_pass(reader, input, channels, &writer, o.strict, &progress, report) == 0) {
      writer.close();
      report.bytes = writer.bytes();
      progress.done(report.bytes);
      break;
    }
    // A message did not decode after others of its channel were written:
    // every channel is checked to the end once, then written once more
    // with those that do not decode kept raw.
    if (attempt == 0) (void)import_pass(reader, input, channels, nullptr, false, nullptr, report);
  }
  staged.commit();
  report.channels = channels.size();
  for (const mcap::Channel& c : info.channels) report_channel(info, c, channels.at(c.id), report);
  return report;
}

}  // namespace shmbus::record
