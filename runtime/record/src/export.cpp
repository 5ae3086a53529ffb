#include "shmbus/record/export.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <optional>

#include "conversion.hpp"
#include "progress.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/record/recording.hpp"

namespace shmbus::record {

namespace {

// Per recorded channel: its schema (none: a raw channel) and its id in the
// copy. A ROS 2 recording's channel (cdr, ros2msg) is read through the
// definition the file carries (`from_cdr`).
struct Exported : ChannelOutcome {
  std::optional<schema::Schema> schema;
  bool from_cdr = false;
  std::uint16_t id = 0;
};

/// How channel `ch` of `info` is read.
Exported exported(const mcap::FileInfo& info, const mcap::Channel& ch) {
  Exported e;
  const mcap::Schema* sc = info.schema(ch.schema_id);
  if (is_ros2_channel(ch, sc)) {
    e.schema = schema_of_ros2msg(*sc, ch.topic);
    e.from_cdr = true;
  } else {
    e.schema = schema::Schema::of(recorded_type(info, ch));
  }
  return e;
}

/// The schema record of a channel in `encoding`, one per text.
std::uint16_t schema_record(mcap::Writer& writer, std::map<std::string, std::uint16_t>& ids,
                            const std::optional<schema::Schema>& s, ExportEncoding encoding) {
  const bool cdr = encoding == ExportEncoding::kCdr;
  std::string text;
  if (cdr) {
    text = s ? schema::ros2msg_text(s->root()) : std::string{schema::kBytesRos2msgText};
  } else {
    text = s ? s->json_schema().dump() : schema::bytes_json_schema().dump();
  }
  auto it = ids.find(text);
  if (it == ids.end()) {
    const std::string name = s ? s->root().name : std::string{TypeInfo::bytes().name};
    const std::uint16_t id = cdr ? writer.add_schema(schema::ros2_type_name(name), "ros2msg", text)
                                 : writer.add_schema(name, "jsonschema", text);
    it = ids.emplace(text, id).first;
  }
  return it->second;
}

/// The copy's channels; those whose type cannot be read are refused
/// (`strict`) or marked skipped.
std::map<std::uint16_t, Exported> exported_channels(const mcap::FileInfo& info, mcap::Writer& writer,
                                                    const ExportOptions& o) {
  std::map<std::uint16_t, Exported> channels;
  std::map<std::string, std::uint16_t> schema_ids;  // schema text -> id
  for (const auto& ch : info.channels) {
    Exported& e = channels[ch.id];
    try {
      e = exported(info, ch);
    } catch (const Error& x) {
      if (o.strict) throw;
      e.left_out = x.what();
      continue;
    }
    e.id = writer.add_channel(schema_record(writer, schema_ids, e.schema, o.encoding), ch.topic,
                              o.encoding == ExportEncoding::kCdr ? "cdr" : "json", ch.metadata);
  }
  return channels;
}

/// Message `m` of channel `e` in the export's encoding, into `out`.
void convert(const Exported& e, std::span<const std::byte> bytes, ExportEncoding encoding, std::string& out) {
  out.clear();
  if (encoding == ExportEncoding::kCdr) {
    if (e.schema) {
      e.schema->to_cdr(bytes, out);
    } else {
      schema::bytes_to_cdr(bytes, out);
    }
  } else {
    out = e.schema ? e.schema->decode(bytes).dump() : schema::bytes_to_json(bytes).dump();
  }
}

}  // namespace

ExportEncoding parse_export_encoding(const std::string& name) {
  if (name == "json") return ExportEncoding::kJson;
  if (name == "cdr") return ExportEncoding::kCdr;
  throw Error(Errc::kInvalidArgument, fmt::format("export encoding '{}' is neither json nor cdr", name));
}

ExportReport export_recording(const std::string& input, const std::string& output, const ExportOptions& o) {
  std::error_code ec;
  if (input == output || std::filesystem::equivalent(input, output, ec)) {
    throw Error(Errc::kInvalidArgument, "export: the output must be another file than " + input);
  }
  mcap::Reader reader(input);
  const mcap::FileInfo& info = reader.info();
  mcap::WriterOptions w;
  // CDR with ros2msg schemas is the ros2 profile: what rosbag2 writes and
  // Foxglove reads as ROS 2.
  w.profile = o.encoding == ExportEncoding::kCdr ? "ros2" : info.profile;
  w.library = o.library;
  w.compression = mcap::parse_compression(info.compression).value_or(mcap::Compression::kZstd);
  mcap::Writer writer(output, w);
  std::map<std::uint16_t, Exported> channels = exported_channels(info, writer, o);
  for (const auto& m : info.metadata) writer.write_metadata(m);
  ExportReport report;
  ProgressReporter progress(o.progress, info.statistics.message_count);
  std::string text;
  std::vector<std::byte> held;
  reader.read_messages([&](const mcap::MessageView& m) {
    progress.read_one(writer);
    Exported& e = channels.at(m.channel_id);
    if (!e.left_out.empty() && !e.schema) {  // its type cannot be read
      ++e.messages;
      return true;
    }
    std::span<const std::byte> bytes = m.data;
    try {
      if (e.from_cdr) {
        held = e.schema->from_cdr(m.data, schema::Schema::kMaxDecodedBytes, &e.notes);
        bytes = held;
      }
      convert(e, bytes, o.encoding, text);
    } catch (const schema::CodecError& x) {
      const std::string why = fmt::format("message {} does not decode: {}", m.sequence, x.what());
      const std::string& topic = info.channel(m.channel_id)->topic;
      if (o.strict) throw Error(Errc::kInvalidArgument, fmt::format("export: {}: {} on {}", input, why, topic));
      if (e.left_out.empty()) e.left_out = why;
      ++e.messages;
      return true;
    }
    writer.write({e.id, m.sequence, m.log_time, m.publish_time, std::as_bytes(std::span{text})});
    ++report.messages;
    return true;
  });
  writer.close();
  report.bytes = writer.bytes();
  progress.done(report.bytes);
  for (const mcap::Channel& c : info.channels) {
    const Exported& e = channels.at(c.id);
    if (e.left_out.empty() || e.schema) ++report.channels;
    report_channel(info, c, e, report);
  }
  return report;
}

}  // namespace shmbus::record
