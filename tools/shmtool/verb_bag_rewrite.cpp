// shmtool bag filter, merge, compress, decompress and cat: recordings as
// files, streamed chunk by chunk (the record library's rewrite()), and the
// messages of one as lines.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "common.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/record/import.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/record/rewrite.hpp"
#include "shmbus/schema/json_input.hpp"

namespace shmbus::tool {

namespace {

using Json = schema::Json;

/// How one channel's messages are shown: decoded by its shmbus schema, by
/// the ROS 2 definition the file carries (CDR), parsed as JSON, or as bytes;
/// or not at all, with the reason in `unreadable`.
struct Shown {
  std::string type;
  std::optional<schema::Schema> schema;
  bool cdr = false;
  bool json = false;
  std::string unreadable;
};

std::map<std::uint16_t, Shown> shown_channels(const mcap::FileInfo& info, bool strict) {
  std::map<std::uint16_t, Shown> out;
  for (const auto& ch : info.channels) {
    Shown s;
    const mcap::Schema* sc = info.schema(ch.schema_id);
    s.type = sc != nullptr ? sc->name : "";
    if (ch.message_encoding == "shmbus") s.schema = schema::Schema::of(record::recorded_type(info, ch));
    // A ROS 2 recording (rosbag2, `bag export --encoding cdr`): decoded
    // through the definition the file carries.
    if (record::is_ros2_channel(ch, sc)) {
      try {
        s.schema = record::schema_of_ros2msg(*sc, ch.topic);
        s.cdr = true;
      } catch (const Error& e) {
        if (strict) throw;
        s.unreadable = e.what();
      }
    }
    s.json = ch.message_encoding == "json";
    out[ch.id] = std::move(s);
  }
  return out;
}

/// A message's content as JSON: its fields, or {"data": base64}.
Json content(const Shown& s, std::span<const std::byte> data, schema::CdrNotes& notes) {
  if (s.schema && s.cdr) return s.schema->decode(s.schema->from_cdr(data, schema::Schema::kMaxDecodedBytes, &notes));
  if (s.schema) return s.schema->decode(data);
  if (s.json) {
    try {
      return schema::parse_json<Json>(std::string_view{reinterpret_cast<const char*>(data.data()), data.size()});
    } catch (const std::exception&) {
      // not JSON after all: shown as bytes
    }
  }
  return schema::bytes_to_json(data);
}

}  // namespace

int run_bag_rewrite(const Globals& g, const BagRewriteOptions& o) {
  // rosbag2's sqlite3 files and bag folders through their MCAP copies.
  for (const std::string& in : o.inputs) {
    std::error_code ec;
    if (in == o.output || std::filesystem::equivalent(in, o.output, ec)) {
      throw Error(Errc::kInvalidArgument,
                  "bag " + o.verb + ": -o " + o.output + " is one of the inputs; name a new file");
    }
  }
  std::vector<std::unique_ptr<RecordingInput>> opened;
  std::vector<std::string> inputs;
  int rc = 0;
  for (const std::string& in : o.inputs) {
    opened.push_back(std::make_unique<RecordingInput>(g, in, "bag " + o.verb));
    inputs.push_back(opened.back()->path());
    rc = std::max(rc, opened.back()->exit_code());
  }
  record::RewriteOptions r = o.rewrite;
  if (!o.begin.empty()) r.begin_ns = parse_wall_time("bag " + o.verb, "--begin", o.begin);
  if (!o.end.empty()) r.end_ns = parse_wall_time("bag " + o.verb, "--end", o.end);
  if (!o.compression.empty()) {
    r.compression = mcap::parse_compression(o.compression);
    if (!r.compression) {
      throw Error(Errc::kInvalidArgument,
                  "bag " + o.verb + ": unknown --compression '" + o.compression + "'; use zstd, lz4 or none");
    }
  }
  if (r.chunk_size < 1024) {
    throw Error(Errc::kInvalidArgument, "bag " + o.verb + ": --chunk-size " + std::to_string(r.chunk_size) +
                                            " is too small; use 1024 bytes or more (default 1 MiB)");
  }
  r.library = "shmtool bag " + o.verb;
  ProgressLine progress(o.verb, o.quiet);
  r.progress = progress_to(progress);
  const record::RewriteReport report = record::rewrite(inputs, o.output, r);
  progress.clear();
  std::string renumbered;
  if (report.renumbered > 0) {
    renumbered = fmt::format("; {} channels got a new registry index (their provenance follows)", report.renumbered);
  }
  print(fmt::format("{}: wrote {} messages on {} channels from {} file(s) into {} ({}){}\n", o.verb, report.messages,
                    report.channels, o.inputs.size(), o.output, human_bytes(report.bytes), renumbered));
  return rc;
}

int run_bag_cat(const Globals& g, const BagCatOptions& o) {
  const std::uint64_t begin = o.begin.empty() ? 0 : parse_wall_time("bag cat", "--begin", o.begin);
  const std::uint64_t end = o.end.empty() ? UINT64_MAX : parse_wall_time("bag cat", "--end", o.end);
  const RecordingInput input(g, o.file, "bag cat");
  mcap::Reader reader(input.path());
  const mcap::FileInfo& info = reader.info();
  const std::map<std::uint16_t, Shown> shown = shown_channels(info, o.strict);
  std::map<std::uint16_t, bool> selected;
  for (const auto& ch : info.channels) {
    selected[ch.id] = record::selected(o.channels, o.exclude, ch.topic);
  }
  std::string out;
  Undecoded undecoded;
  reader.read_messages([&](const mcap::MessageView& m) {
    if (!selected[m.channel_id] || m.log_time < begin || m.log_time >= end) return true;
    const Shown& s = shown.at(m.channel_id);
    const std::string& topic = info.channel(m.channel_id)->topic;
    if (!s.unreadable.empty()) {
      undecoded.add(topic, s.type, s.unreadable);
      return true;
    }
    Json data;
    schema::CdrNotes notes;
    try {
      data = content(s, m.data, notes);
    } catch (const schema::CodecError& e) {
      const std::string why =
          fmt::format("message {} (log time {}) does not decode: {}", m.sequence, m.log_time, e.what());
      if (o.strict) throw Error(Errc::kInvalidArgument, fmt::format("bag cat: {}: {} on {}", o.file, why, topic));
      undecoded.add(topic, s.type, why);
      return true;
    }
    undecoded.note(topic, notes);
    if (g.json) {
      out += Json{{"topic", topic},
                  {"sequence", m.sequence},
                  {"log_time", m.log_time},
                  {"publish_time", m.publish_time},
                  {"data", std::move(data)}}
                 .dump();
    } else {
      out += fmt::format("{} {} [{}] {}", m.log_time, topic, s.type, data.dump());
    }
    out += '\n';
    if (out.size() >= 1 << 16) {
      print(out);
      out.clear();
    }
    return true;
  });
  print(out);
  return std::max(undecoded.say("bag cat", "skipped"), input.exit_code());
}

}  // namespace shmbus::tool
