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

/// A ros2msg text as its definitions by name ("" for the root), each as
/// its lines without comments, blank lines or spacing around `=`.
std::map<std::string, std::vector<std::string>> definitions(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::string clean;
    for (const char c : line) {
      if (c == ' ' || c == '\t' || c == '\r') {
        if (!clean.empty() && clean.back() != ' ') clean += ' ';
      } else {
        if (c == '=' && !clean.empty() && clean.back() == ' ') clean.pop_back();
        if (!(clean.ends_with("=") && c == ' ')) clean += c;
      }
    }
    while (!clean.empty() && clean.back() == ' ') clean.pop_back();
    if (clean.empty() || clean.find_first_not_of('=') == std::string::npos) continue;
    if (clean.starts_with("MSG: ")) {
      current = clean.substr(5);
      continue;
    }
    out[current].push_back(clean);
  }
  return out;
}

/// One imported channel: its schema (none: raw bytes) and its id in the output.
struct Imported {
  std::optional<schema::Schema> schema;
  std::uint16_t id = 0;
};

/// Resolves a channel's type; refuses what cannot map, naming why.
std::optional<schema::Schema> resolve(const schema::TypeCatalog& catalog, const mcap::Channel& c,
                                      const mcap::Schema* s) {
  if (c.message_encoding != "cdr" || s == nullptr || s->encoding != "ros2msg") {
    throw Error(Errc::kInvalidArgument,
                fmt::format("bag import: channel {} is {} with {} schemas; only ROS 2 recordings (cdr messages, "
                            "ros2msg schemas) are imported",
                            c.topic, c.message_encoding, s != nullptr ? s->encoding : std::string{"no"}));
  }
  const std::string type = short_type_name(s->name);
  if (type == "shmbus/Bytes") return std::nullopt;
  // A type the msg path does not define: the file's own definition.
  if (!catalog.contains(type)) return schema_of_ros2msg(*s, c.topic);
  schema::Schema found = [&] {
    try {
      return catalog.find(type);
    } catch (const std::exception& e) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("bag import: channel {}: type {} cannot be held: {}", c.topic, s->name, e.what()));
    }
  }();
  const auto theirs = definitions(s->data);
  for (const auto& [name, lines] : definitions(schema::ros2msg_text(found.root()))) {
    const auto it = theirs.find(name);
    if (it == theirs.end() || it->second != lines) {
      // The first line that differs names the field.
      const std::vector<std::string> none;
      const std::vector<std::string>& file = it == theirs.end() ? none : it->second;
      std::size_t i = 0;
      while (i < lines.size() && i < file.size() && lines[i] == file[i]) ++i;
      throw Error(Errc::kInvalidArgument,
                  fmt::format("bag import: channel {}: the file's {} differs from {} on the msg path in {}: the file "
                              "has '{}', the msg path '{}'; give the file's definition with --msg-path, or none",
                              c.topic, s->name, found.root().source, name.empty() ? type : name,
                              i < file.size() ? file[i] : "nothing", i < lines.size() ? lines[i] : "nothing"));
    }
  }
  return found;
}

}  // namespace

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
