#include "shmbus/record/import.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "progress.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/names.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"

namespace shmbus::record {

namespace {

/// One imported channel: its schema (none: raw bytes) and its id in the output.
struct Imported {
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

schema::Schema schema_of_ros2msg(const mcap::Schema& s, std::string_view topic) {
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

ImportReport import_ros2(const std::string& input, const std::string& output, const ImportOptions& o) {
  if (input == output) throw Error(Errc::kInvalidArgument, "bag import: -o must name another file than " + input);
  mcap::Reader reader(input);
  const mcap::FileInfo& info = reader.info();
  const schema::TypeCatalog catalog(o.msg_paths);
  std::map<std::uint16_t, std::optional<schema::Schema>> types;
  for (const mcap::Channel& c : info.channels) types[c.id] = resolve(catalog, c, info.schema(c.schema_id));

  mcap::WriterOptions w;
  w.library = "shmtool bag import";
  w.compression = mcap::parse_compression(info.compression).value_or(mcap::Compression::kZstd);
  mcap::Writer writer(output, w);
  std::map<std::uint16_t, Imported> channels;
  std::map<std::string, std::uint16_t> schema_ids;
  for (const mcap::Channel& c : info.channels) {
    Imported im;
    im.schema = types.at(c.id);
    const TypeInfo type =
        im.schema ? TypeInfo{im.schema->root().name, im.schema->hash(), im.schema->text()} : TypeInfo::bytes();
    std::uint16_t schema_id = 0;
    if (im.schema) {
      auto it = schema_ids.find(type.name);
      if (it == schema_ids.end()) {
        it = schema_ids.emplace(type.name, writer.add_schema(type.name, "shmbus.msg", type.schema)).first;
      }
      schema_id = it->second;
    }
    im.id = writer.add_channel(schema_id, c.topic, "shmbus",
                               {{"type_name", type.name}, {"type_hash", fmt::format("{:016x}", type.hash)}});
    channels[c.id] = std::move(im);
  }
  for (const mcap::Metadata& m : info.metadata) writer.write_metadata(m);
  ImportReport report;
  ProgressReporter progress(o.progress, info.statistics.message_count);
  reader.read_messages([&](const mcap::MessageView& m) {
    const Imported& im = channels.at(m.channel_id);
    std::vector<std::byte> bytes;
    try {
      bytes = im.schema ? im.schema->from_cdr(m.data) : schema::bytes_from_cdr(m.data);
    } catch (const schema::CodecError& e) {
      throw Error(Errc::kConfig,
                  fmt::format("bag import: {}: message {} of {} (log time {}) does not decode: {}", input, m.sequence,
                              info.channel(m.channel_id)->topic, m.log_time, e.what()));
    }
    writer.write({im.id, m.sequence, m.log_time, m.publish_time, bytes});
    ++report.messages;
    progress.read_one(writer);
    return true;
  });
  writer.close();
  report.channels = channels.size();
  report.bytes = writer.bytes();
  progress.done(report.bytes);
  return report;
}

}  // namespace shmbus::record
