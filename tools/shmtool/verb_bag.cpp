// shmtool bag info, recover, export, import and doctor: what a recording
// holds, an indexed file from an unfinished one, its copies in other
// encodings (the record library's export_recording and import_ros2), its
// faults; and what a bag command left undecoded, said once.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/record/export.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/record/summary.hpp"

namespace shmbus::tool {

using namespace record;  // NOLINT(google-build-using-namespace): the recording names
using Json = nlohmann::json;

int run_bag_recover(const Globals& /*g*/, const std::string& in, const std::string& out, bool quiet) {
  if (in == out) {
    throw Error(Errc::kInvalidArgument, "bag recover: -o must name another file than " + in + " (it is read whole)");
  }
  ProgressLine progress("recover", quiet);
  const mcap::RecoverReport r = mcap::recover(
      in, out, [&progress](std::uint64_t read, std::uint64_t size) { progress.update_bytes(read, size); },
      "shmtool bag recover");
  progress.clear();
  const mcap::Reader check(out);  // what was written reads back as a complete file
  print(fmt::format("recovered {} messages in {} chunks ({} metadata records) from {} into {} ({})\n", r.messages,
                    r.chunks, r.metadata, in, out, human_bytes(check.info().bytes)));
  if (!r.stopped_because.empty()) {
    print(fmt::format("the rest of {} (from byte {}) is unreadable: {}\n", in, r.valid_bytes, r.stopped_because));
  }
  return 0;
}

int run_bag_export(const Globals& g, const std::string& in, const std::string& out, const std::string& encoding,
                   bool quiet, bool strict) {
  ExportOptions o;
  o.encoding = parse_export_encoding(encoding);
  o.strict = strict;
  o.library = "shmtool bag export";
  ProgressLine progress("export", quiet);
  o.progress = progress_to(progress);
  const RecordingInput input(g, in, "bag export");
  const ExportReport r = export_recording(input.path(), out, o);
  progress.clear();
  print(fmt::format("exported {} messages on {} channels from {} into {} ({}, {})\n", r.messages, r.channels, in, out,
                    encoding, human_bytes(r.bytes)));
  Undecoded skipped;
  skipped.add(r);
  return std::max(skipped.say("bag export", "skipped"), input.exit_code());
}

namespace {

/// "zstd: 14/14 chunks, 115.5 MiB -> 30.5 MiB (3.78x)" for each
/// compression, as `mcap info` lists them.
std::string compression_text(const RecordingSummary& s) {
  if (s.compression.empty()) return "none (no chunks)";
  std::string out;
  for (const auto& [name, f] : s.compression) {
    const double ratio = f.compressed_bytes > 0
                             ? static_cast<double>(f.uncompressed_bytes) / static_cast<double>(f.compressed_bytes)
                             : 0.0;
    out += fmt::format("{}{}: {}/{} chunks, {} -> {} ({:.2f}x)", out.empty() ? "" : "\n             ", name, f.chunks,
                       s.chunks, human_bytes(f.uncompressed_bytes), human_bytes(f.compressed_bytes), ratio);
  }
  return out;
}

Json summary_json(const RecordingSummary& s) {
  Json compression = Json::object();
  for (const auto& [name, f] : s.compression) {
    compression[name] = {
        {"chunks", f.chunks}, {"compressed_bytes", f.compressed_bytes}, {"uncompressed_bytes", f.uncompressed_bytes}};
  }
  Json channels = Json::array();
  const double duration_s = s.duration_s();
  for (const auto& c : s.channels) {
    channels.push_back({{"name", c.name},
                        {"type", c.type},
                        {"schema_encoding", c.schema_encoding},
                        {"message_encoding", c.message_encoding},
                        {"messages", c.messages},
                        {"lost", c.lost},
                        {"rate_hz", duration_s > 0 ? static_cast<double>(c.messages) / duration_s : 0.0}});
  }
  // One value where the files agree (the usual case), else the list.
  auto one_or_all = [](const std::vector<std::string>& v) { return v.size() == 1 ? Json(v[0]) : Json(v); };
  return Json{{"path", s.files.front()},
              {"files", s.files},
              {"bytes", s.bytes},
              {"library", one_or_all(s.libraries)},
              {"profile", one_or_all(s.profiles)},
              {"compression", s.compression.size() == 1 ? s.compression.begin()->first
                              : s.compression.empty()   ? "none"
                                                        : "mixed"},
              {"chunks", s.chunks},
              {"chunk_compression", compression},
              {"attachments", s.attachments},
              {"metadata", s.metadata},
              {"start_ns", s.start_ns},
              {"end_ns", s.end_ns},
              {"duration_s", duration_s},
              {"messages", s.messages},
              {"channels", channels}};
}

/// `s` with the figures of `in`'s copy replaced by its bag's own: its
/// files and their size, its storage as the library, and none of the
/// copy's chunks.
void as_read(RecordingSummary& s, const RecordingInput& in) {
  const auto size = [](const std::string& f) {
    std::error_code ec;
    const std::uintmax_t n = std::filesystem::file_size(f, ec);
    return ec ? std::uintmax_t{0} : n;
  };
  const RecordingSummary copy = summarize({in.path()}, false);
  std::erase(s.files, in.path());
  s.files.insert(s.files.end(), in.files().begin(), in.files().end());
  s.bytes -= copy.bytes;
  for (const std::string& f : in.files()) s.bytes += size(f);
  s.chunks -= copy.chunks;
  for (const auto& [name, f] : copy.compression) {
    ChunkFigures& ours = s.compression[name];
    ours.chunks -= f.chunks;
    ours.compressed_bytes -= f.compressed_bytes;
    ours.uncompressed_bytes -= f.uncompressed_bytes;
    if (ours.chunks == 0) s.compression.erase(name);
  }
  for (const std::string& u : in.undefined()) {
    fmt::print(stderr,
               "bag info: {}: neither the bag nor the msg path defines its type: cat, export, import and play carry "
               "it undecoded; give its .msg with --msg-path\n",
               u);
  }
  for (const std::string& l : copy.libraries) std::erase(s.libraries, l);
  if (std::ranges::find(s.libraries, in.storage()) == s.libraries.end()) s.libraries.push_back(in.storage());
}

}  // namespace

int run_bag_info(const Globals& g, const std::vector<std::string>& paths, bool series) {
  // rosbag2's sqlite3 files and bag folders through their MCAP copies,
  // listed by their own files; a folder of plain MCAP files as those files.
  std::vector<std::unique_ptr<RecordingInput>> inputs;
  std::vector<std::string> mcaps;
  for (const std::string& p : paths) {
    if (!rosbag2::is_rosbag2_storage(p)) {
      mcaps.push_back(p);
      continue;
    }
    auto in = std::make_unique<RecordingInput>(g, p, "bag info");
    if (in->storage() == "rosbag2 mcap") {
      mcaps.insert(mcaps.end(), in->files().begin(), in->files().end());
      continue;
    }
    mcaps.push_back(in->path());
    inputs.push_back(std::move(in));
  }
  RecordingSummary s = summarize(mcaps, series);
  for (const auto& in : inputs) as_read(s, *in);
  int rc = 0;
  for (const auto& in : inputs) rc = std::max(rc, in->exit_code());
  const Json j = summary_json(s);
  if (g.json) {
    print(j.dump(2) + "\n");
    return rc;
  }
  auto joined = [](const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); };
  std::string out = s.files.size() == 1 ? fmt::format("path:        {}\n", s.files[0])
                                        : fmt::format("files:       {} ({})\n", s.files.size(), joined(s.files));
  out += fmt::format("size:        {}\nlibrary:     {}\nprofile:     {}\ncompression: {}\n", human_bytes(s.bytes),
                     joined(s.libraries), joined(s.profiles), compression_text(s));
  out += fmt::format("start:       {}\nend:         {}\nduration:    {:.3f} s\nmessages:    {}\n",
                     wall_time_text(static_cast<std::int64_t>(s.start_ns)),
                     wall_time_text(static_cast<std::int64_t>(s.end_ns)), s.duration_s(), s.messages);
  out += fmt::format("chunks:      {}\nattachments: {}\nmetadata:    {}\nchannels:\n", s.chunks, s.attachments,
                     s.metadata);
  Table t({"CHANNEL", "TYPE", "ENCODING", "MESSAGES>", "RATE>", "LOST>"});
  for (const auto& c : j["channels"]) {
    const std::string schema_encoding = c["schema_encoding"];
    t.add({c["name"], c["type"],
           schema_encoding.empty() ? c["message_encoding"].get<std::string>()
                                   : schema_encoding + "/" + c["message_encoding"].get<std::string>(),
           std::to_string(c["messages"].get<std::uint64_t>()), fmt::format("{:.1f} Hz", c["rate_hz"].get<double>()),
           std::to_string(c["lost"].get<std::uint64_t>())});
  }
  print(out + t.render(2));
  return rc;
}

void Undecoded::add(const std::string& topic, const std::string& type, const std::string& why, std::uint64_t messages) {
  Channel& c = channels_[topic];
  if (c.why.empty()) {
    c.type = type;
    c.why = why;
  }
  c.messages += messages;
}

void Undecoded::add(const ConversionReport& r) {
  for (const UndecodedChannel& c : r.left_out) add(c.topic, c.type, c.why, c.messages);
  for (const auto& [topic, n] : r.notes) note(topic, n);
}

void Undecoded::note(const std::string& topic, const schema::CdrNotes& n) {
  if (n.strings_without_nul == 0 && n.strings_cut_at_nul == 0) return;
  Channel& c = channels_[topic];
  c.notes.strings_without_nul += n.strings_without_nul;
  c.notes.strings_cut_at_nul += n.strings_cut_at_nul;
}

int Undecoded::say(std::string_view verb, std::string_view what) const {
  int rc = 0;
  for (const auto& [topic, c] : channels_) {
    if (!c.why.empty()) {
      fmt::print(stderr, "{}: {} ({}): {} message(s) {}: {}\n", verb, topic, c.type.empty() ? "no schema" : c.type,
                 c.messages, what, c.why);
      rc = 1;
    }
    if (c.notes.strings_without_nul != 0) {
      fmt::print(stderr,
                 "{}: {}: {} string(s) without their terminating NUL, kept whole as ROS 2's Fast-CDR reads them\n",
                 verb, topic, c.notes.strings_without_nul);
    }
    if (c.notes.strings_cut_at_nul != 0) {
      fmt::print(stderr, "{}: {}: {} string(s) with a NUL inside, cut there as a ROS 2 string ends\n", verb, topic,
                 c.notes.strings_cut_at_nul);
    }
  }
  return rc;
}

int run_bag_doctor(const Globals& g, const std::string& file) {
  const std::vector<mcap::Fault> faults = mcap::doctor(file);
  if (g.json) {
    Json list = Json::array();
    for (const auto& f : faults) list.push_back({{"offset", f.offset}, {"record", f.record}, {"what", f.what}});
    print(Json{{"path", file}, {"faults", list}}.dump(2) + "\n");
    return faults.empty() ? 0 : 1;
  }
  std::string out;
  for (const auto& f : faults) out += fmt::format("{}: byte {}: {}: {}\n", file, f.offset, f.record, f.what);
  if (faults.empty()) out = file + ": no faults: every record, CRC and index checks out\n";
  print(out);
  return faults.empty() ? 0 : 1;
}

int run_bag_import(const Globals& g, const std::string& in, const std::string& out, bool quiet, bool strict) {
  ImportOptions o;
  o.library = "shmtool bag import";
  o.msg_paths = g.msg_paths;
  o.strict = strict;
  ProgressLine progress("import", quiet);
  o.progress = progress_to(progress);
  std::error_code ec;
  if (in == out || std::filesystem::equivalent(in, out, ec)) {
    throw Error(Errc::kInvalidArgument, "bag import: -o must name another file than " + in);
  }
  const RecordingInput input(g, in, "bag import");
  const ImportReport r = import_ros2(input.path(), out, o);
  progress.clear();
  print(fmt::format("import: wrote {} messages on {} channels from {} into {} ({})\n", r.messages, r.channels, in, out,
                    human_bytes(r.bytes)));
  Undecoded undecoded;
  undecoded.add(r);
  return std::max(undecoded.say("bag import", "kept raw, undecoded"), input.exit_code());
}

}  // namespace shmbus::tool
