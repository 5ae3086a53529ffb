// shmtool: inspect and drive a shmbus domain from a terminal.
//
//   shmtool list | info CH | echo CH | hz CH | bw CH | find TYPE | pub CH | stats [CH] | alerts | top | clean
//           sync
//           record -o FILE [CH...] | play FILE... [--step]
//           bag info|recover|export|import|graph|diff|filter|merge|compress|decompress|cat|doctor FILE...
//           service list | info NAME | call NAME JSON
//           param list NODE | get NODE NAME | set NODE NAME VALUE
//           action list | info NAME | send_goal NAME [TYPE] GOAL [--feedback]
//
// Exit codes: 0 ok, 1 runtime failure, 2 bad usage or configuration,
// 3 channel not found; every failure is one line on stderr.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "commands.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/error.hpp"

using namespace shmbus::tool;

namespace {

/// Whether `text` is a bare number of seconds > 0.
bool positive_seconds(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    return used == text.size() && v > 0 && std::isfinite(v);
  } catch (const std::exception&) {
    return false;  // not a number
  }
}

const CLI::Validator kPositiveSeconds(
    [](std::string& text) -> std::string {
      return positive_seconds(text) ? std::string() : "must be a number of seconds > 0, not '" + text + "'";
    },
    "SECONDS>0");

/// A duration: "10s", "500ms", "2min", or a bare number of seconds;
/// rewritten to seconds for the option's double.
const CLI::Validator kDuration(
    [](std::string& text) -> std::string {
      if (positive_seconds(text)) return {};
      if (const auto d = shmbus::parse_duration(text); d && d->count() > 0) {
        text = std::to_string(static_cast<double>(d->count()) / 1e9);
        return {};
      }
      return "must be a duration > 0 such as 10s, 500ms or 2min, not '" + text + "'";
    },
    "DURATION");

/// The first word that is not a global option, when it names no command:
/// CLI11 would only say that a command is required.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--domain" || a == "--config" || a == "--msg-path") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == a) return std::nullopt;
    }
    return a;
  }
  return std::nullopt;
}

/// Every command's options, filled by CLI11, and the subcommand that ran.
struct Commands {
  Globals g;
  std::string channel;  ///< info
  EchoOptions echo;
  HzOptions hz;
  BwOptions bw;
  std::string find_type;  ///< find
  PubOptions pub;
  bool once = false;  ///< pub --once
  StatsOptions stats;
  TopOptions top;
  SyncOptions sync;
  bool dry_run = false;  ///< clean
  RecordOptions record;
  PlayOptions play;
  std::string bag_file;                ///< bag recover, export
  std::vector<std::string> bag_files;  ///< bag info
  BagRewriteOptions rewrite;           ///< bag filter, merge, compress, decompress
  BagCatOptions cat;                   ///< bag cat
  bool one_file = false;               ///< bag info
  std::string bag_output;              ///< bag recover, export
  std::string encoding = "json";       ///< bag export
  bool bag_strict = false;             ///< bag export, import
  bool dot = false;                    ///< bag graph
  std::string bag_other;               ///< bag diff
  std::string bag_channel;             ///< bag diff
  std::string service;                 ///< service info
  ParamOptions param;                  ///< param list/get/set
  std::string action;                  ///< action info
  ActionGoalOptions goal;              ///< action send_goal
  std::vector<std::string> goal_args;  ///< action send_goal: [TYPE] GOAL
  ServiceCallOptions call;
  std::map<std::string, std::function<int()>> run;
};

CLI::Option* json_flag(CLI::App* c, Commands& k) { return c->add_flag("--json", k.g.json, "Print JSON for scripts"); }

/// list, info, stats, alerts, top, clean: what the domain shows.
void add_inspect_commands(CLI::App& app, Commands& k) {
  json_flag(app.add_subcommand("list", "One row per channel: type, endpoints, rate, level, counters"), k);
  CLI::App* info = app.add_subcommand("info", "Everything about one channel");
  info->add_option("CHANNEL", k.channel, "Channel name, e.g. /imu")->required();
  json_flag(info, k);
  CLI::App* stats = app.add_subcommand("stats", "Period statistics per channel, received and lost per subscriber");
  stats->add_option("CHANNEL", k.stats.channel, "Only this channel");
  json_flag(stats, k);
  json_flag(app.add_subcommand("alerts", "The level of each monitored channel, its rate and thresholds"), k);
  CLI::App* top = app.add_subcommand("top", "A live table of all channels; q quits");
  top->add_option("--interval", k.top.interval_s, "Seconds between refreshes")->check(kPositiveSeconds);
  top->add_option("--sort", k.top.sort, "Sort by rate, level or name")->check(CLI::IsMember({"rate", "level", "name"}));
  top->add_option("-n,--iterations", k.top.iterations, "Stop after N refreshes (default: until q or Ctrl-C)");
  CLI::App* clean = app.add_subcommand("clean", "Remove the domain's segments no live process uses");
  clean->add_flag("--dry-run", k.dry_run, "Only say what would be removed");
  json_flag(clean, k);
  k.run["list"] = [&k] { return run_list(k.g); };
  k.run["info"] = [&k] { return run_info(k.g, k.channel); };
  k.run["stats"] = [&k] { return run_stats(k.g, k.stats); };
  k.run["alerts"] = [&k] { return run_alerts(k.g); };
  k.run["top"] = [&k] { return run_top(k.g, k.top); };
  k.run["clean"] = [&k] { return run_clean(k.g, k.dry_run); };
}

/// echo, hz, pub: the traffic of one channel.
void add_traffic_commands(CLI::App& app, Commands& k) {
  CLI::App* echo = app.add_subcommand("echo", "Print messages, decoded through the channel's schema");
  echo->add_option("CHANNEL", k.echo.channel, "Channel name")->required();
  echo->add_option("-n,--count", k.echo.count, "Stop after N messages (default: until Ctrl-C)");
  CLI::Option* echo_json = json_flag(echo, k);
  echo->add_flag("--hex", k.echo.hex, "Print payloads as hex instead of decoding")->excludes(echo_json);
  echo->add_flag("--no-header", k.echo.no_header, "Print only the payloads");
  echo->add_option("--history", k.echo.history, "Show up to N messages already in the ring first");
  echo->add_flag("--no-wait", k.echo.no_wait, "Exit 3 if the channel does not exist (default: wait for it)");

  CLI::App* hz = app.add_subcommand("hz", "Rate and period statistics from the time list, without subscribing");
  hz->add_option("CHANNEL", k.hz.channel, "Channel name")->required();
  hz->add_option("--window", k.hz.window_s, "Window in seconds (default: the channel's configured window)")
      ->check(kPositiveSeconds);
  hz->add_option("--interval", k.hz.interval_s, "Seconds between reports")->check(kPositiveSeconds);
  hz->add_option("-n,--reports", k.hz.reports, "Stop after N reports (default: until Ctrl-C)");
  hz->add_flag("--no-wait", k.hz.no_wait, "Exit 3 if the channel does not exist (default: wait for it)");
  json_flag(hz, k);

  CLI::App* bw = app.add_subcommand("bw", "Bytes per second and message sizes, read in place (payloads not copied)");
  bw->add_option("CHANNEL", k.bw.channel, "Channel name")->required();
  bw->add_option("-w,--window", k.bw.window, "Messages the figures cover (default 100)")->check(CLI::Range(2, 100000));
  bw->add_option("--interval", k.bw.interval_s, "Seconds between reports")->check(kPositiveSeconds);
  bw->add_option("-n,--reports", k.bw.reports, "Stop after N reports (default: until Ctrl-C)");
  bw->add_flag("--no-wait", k.bw.no_wait, "Exit 3 if the channel does not exist (default: wait for it)");
  json_flag(bw, k);
  CLI::App* find = app.add_subcommand("find", "The channels of a type (package/Name or package/msg/Name)");
  find->add_option("TYPE", k.find_type, "Message type, e.g. sensor_msgs/Imu")->required();
  json_flag(find, k);

  CLI::App* pub = app.add_subcommand("pub", "Publish JSON through a schema (or raw bytes) at an exact rate");
  pub->add_option("CHANNEL", k.pub.channel, "Channel name")->required();
  pub->add_option("DATA", k.pub.data,
                  "JSON object of the fields to set (others are zero); hex bytes for a raw channel");
  CLI::Option* type_opt =
      pub->add_option("--type", k.pub.type, "Message type package/Name (default: the existing channel's)");
  pub->add_option("--raw-size", k.pub.raw_size, "Publish raw messages of BYTES bytes (type shmbus/Bytes)")
      ->excludes(type_opt);
  pub->add_option("--rate", k.pub.rate_hz, "Messages per second (default 1)");
  CLI::Option* count_opt = pub->add_option("--count", k.pub.count, "Stop after N messages (default: until Ctrl-C)");
  pub->add_flag("--once", k.once, "Publish one message and exit")->excludes(count_opt);
  pub->add_flag("--stamp", k.pub.stamp,
                "Stamp every message with the wall clock: a std_msgs/Header's header.stamp, or a shmbus_msgs/Header's "
                "header.stamp_ns and header.seq");
  k.run["echo"] = [&k] { return run_echo(k.g, k.echo); };
  k.run["hz"] = [&k] { return run_hz(k.g, k.hz); };
  k.run["bw"] = [&k] { return run_bw(k.g, k.bw); };
  k.run["find"] = [&k] { return run_find(k.g, k.find_type); };
  k.run["pub"] = [&k] {
    if (k.once) k.pub.count = 1;
    return run_pub(k.g, k.pub);
  };
}

/// sync: aligned sets from several channels.
void add_sync_command(CLI::App& app, Commands& k) {
  CLI::App* sync = app.add_subcommand("sync", "Align several channels into sets with a bounded time disparity");
  sync->add_option("NAME", k.sync.name, "A [[sync]] entry of the configuration (options below override it)");
  sync->add_option("--inputs", k.sync.inputs, "Input channels, comma-separated (2 to 8)")->delimiter(',');
  sync->add_option("--policy", k.sync.policy, "bounded (default), exact, approximate or latest");
  sync->add_option("--threshold", k.sync.threshold, "Largest disparity of a set, e.g. 10ms (bounded: required)");
  sync->add_option("--output", k.sync.output, "Channel the sets go to (shmbus_msgs/SyncSet)");
  sync->add_option("--stamp-field", k.sync.stamp_field,
                   "Timestamp field of the inputs: nanoseconds (header.stamp_ns) or a builtin_interfaces/Time "
                   "(a ROS 2 header's header.stamp); default: the publish time");
  sync->add_option("--queue-size", k.sync.queue_size, "Messages kept per input (default 64)");
  sync->add_option("--master", k.sync.master, "latest: the input that triggers a set (default: the first)");
  sync->add_option("-n,--count", k.sync.count, "Stop after N sets (default: until Ctrl-C)");
  sync->add_flag("--no-wait", k.sync.no_wait, "Exit 3 if an input does not exist (default: wait for it)");
  k.run["sync"] = [&k] { return run_sync(k.g, k.sync); };
}

/// record CHANNELS -o FILE, record --trigger: the bus to MCAP.
void add_record_commands(CLI::App& app, Commands& k) {
  CLI::App* record = app.add_subcommand("record", "Record channels to an MCAP file until Ctrl-C or --duration");
  CLI::Option* trigger = record->add_flag("--trigger", k.record.trigger,
                                          "Make the recorders in --snapshot mode write what they keep, then exit");
  record->add_option("--reason", k.record.reason, "With --trigger: why (written into the snapshot)")->needs(trigger);
  record->add_option("-o,--output", k.record.recorder.output, "The file to write (FILE.mcap)")->excludes(trigger);
  record->add_option("CHANNELS", k.record.recorder.patterns, "Channel names or globs (e.g. /camera/*)");
  record->add_flag("--all", k.record.recorder.all, "Record every channel, also those that appear later");
  record->add_flag("-q,--quiet", k.record.quiet,
                   "No live status line on a terminal (it shows messages, MiB, lost, rate; Enter: per channel)");
  record->add_option("--exclude", k.record.recorder.exclude, "Globs of channels never recorded (repeatable)");
  record->add_option("--compression", k.record.compression, "Chunk compression: zstd (default), lz4 or none")
      ->check(CLI::IsMember({"zstd", "lz4", "none"}));
  record->add_option("--chunk-size", k.record.recorder.chunk_size, "Uncompressed bytes per chunk (default 1 MiB)")
      ->check(CLI::Range(std::uint64_t{1024}, std::uint64_t{1} << 32));
  record->add_option("--duration", k.record.recorder.duration_s, "Stop after DURATION (e.g. 30s)")
      ->transform(kDuration);
  record->add_option("--queue-size", k.record.recorder.queue_bytes,
                     "Bytes buffered between reading the rings and writing the file (default 256 MiB); "
                     "with --snapshot, the most kept in memory");
  CLI::Option* split_size = record
                                ->add_option("--split-size", k.record.recorder.split_bytes,
                                             "Start a new file (FILE_0, FILE_1, ...) past BYTES")
                                ->check(CLI::Range(std::uint64_t{4096}, UINT64_MAX));
  CLI::Option* split_duration =
      record->add_option("--split-duration", k.record.recorder.split_duration_s, "Start a new file every DURATION")
          ->transform(kDuration);
  record
      ->add_option("--snapshot", k.record.recorder.snapshot_s,
                   "Keep the last DURATION in memory; write it (FILE_0, FILE_1, ...) when triggered")
      ->transform(kDuration)
      ->excludes(split_size)
      ->excludes(split_duration);
  k.run["record"] = [&k] { return run_record(k.g, k.record); };
}

/// play FILE...: a recording published again (--step: in module order).
void add_play_command(CLI::App& app, Commands& k) {
  CLI::App* play = app.add_subcommand("play", "Publish a recording again, at its recorded spacing");
  play->add_option("FILES", k.play.player.files,
                   "MCAP files (a split recording plays as one), rosbag2 .db3 files or bag folders")
      ->required();
  play->add_option("--rate", k.play.player.rate, "Speed factor (default 1)")->check(CLI::Range(0.001, 1000.0));
  play->add_flag("--loop", k.play.player.loop, "Start again at the end, until Ctrl-C");
  play->add_option("--channels", k.play.player.channels, "Globs of the recorded channels to play (default: all)");
  play->add_option("--exclude", k.play.player.exclude, "Globs of recorded channels not to play");
  play->add_option("--remap", k.play.remap, "FROM=TO: publish FROM's messages on TO (repeatable)");
  play->add_flag("--wait-for-subscribers", k.play.wait_for_subscribers,
                 "Start once every played channel has a subscriber");
  play->add_option("--start-offset", k.play.player.start_offset_s, "Skip the first DURATION of the recording")
      ->transform(kDuration);
  play->add_option("--begin", k.play.begin, "Play from this wall time (2026-11-23T10:00:00Z, or ns since the epoch)");
  play->add_option("--end", k.play.end, "Play up to this wall time");
  play->add_flag("--paused", k.play.player.start_paused,
                 "Start paused (on a terminal: space resumes, s steps one message)");
  play->add_flag("--clock", k.play.player.clock, "Publish the recording's time on /shmbus/clock (rosgraph_msgs-like)");
  CLI::Option* step = play->add_flag(
      "--step", k.play.step,
      "Replay in module-dependency order: feed the live --modules exactly the recorded inputs of each frame");
  play->add_option("--modules", k.play.step_replay.modules, "With --step: the modules running live (m1,m2)")
      ->delimiter(',')
      ->needs(step);
  play->add_option("-o,--output", k.play.step_replay.output, "With --step: the recording of the replayed run")
      ->needs(step);
  play->add_option("--timeout", k.play.step_replay.timeout_s,
                   "With --step: how long a live module may take to answer a frame (default 5s)")
      ->transform(kDuration)
      ->needs(step);
  k.run["play"] = [&k] { return k.play.step ? run_play_step(k.g, k.play) : run_play(k.g, k.play); };
}

/// bag info | recover | export | graph | diff: recordings as files.
/// The options filter, merge, compress and decompress share.
void rewrite_options(CLI::App* c, BagRewriteOptions& o, bool select, bool compression) {
  c->add_option("-o,--output", o.output, "The file to write (not one of the inputs)")->required();
  if (select) {
    c->add_option("--channels", o.rewrite.channels, "Keep the channels matching these globs (default: all)");
    c->add_option("--exclude", o.rewrite.exclude, "Drop the channels matching these globs");
    c->add_option("--begin", o.begin, "Keep messages from this wall time (UTC ISO 8601 or ns since the epoch)");
    c->add_option("--end", o.end, "Keep messages before this wall time");
  }
  if (compression) {
    c->add_option("--compression", o.compression, "Chunk compression: zstd, lz4 or none (default: the input's)")
        ->check(CLI::IsMember({"zstd", "lz4", "none"}));
  }
  c->add_option("--chunk-size", o.rewrite.chunk_size, "Uncompressed bytes per chunk (default 1 MiB)");
  c->add_flag("-q,--quiet", o.quiet, "No progress line on a terminal");
}

/// bag filter | merge | compress | decompress | cat: recordings as files.
/// Returns what runs the one given, if any was.
std::function<std::optional<int>()> add_bag_file_commands(CLI::App* bag, Commands& k) {
  CLI::App* filter = bag->add_subcommand("filter", "Copy a recording keeping some channels and a time range");
  filter->add_option("FILE", k.rewrite.inputs, "An MCAP file, a rosbag2 .db3 or a bag folder")->required()->expected(1);
  rewrite_options(filter, k.rewrite, true, true);
  CLI::App* merge = bag->add_subcommand(
      "merge", "Merge recordings into one in log-time order, their module topology and provenance merged too");
  merge->add_option("FILES", k.rewrite.inputs, "MCAP files, rosbag2 .db3 files or bag folders")->required();
  rewrite_options(merge, k.rewrite, false, true);
  CLI::App* compress = bag->add_subcommand("compress", "Rewrite a recording's chunks compressed (zstd by default)");
  compress->add_option("FILE", k.rewrite.inputs, "An MCAP file")->required()->expected(1);
  rewrite_options(compress, k.rewrite, false, true);
  CLI::App* decompress = bag->add_subcommand("decompress", "Rewrite a recording's chunks uncompressed");
  decompress->add_option("FILE", k.rewrite.inputs, "An MCAP file")->required()->expected(1);
  rewrite_options(decompress, k.rewrite, false, false);
  CLI::App* cat = bag->add_subcommand("cat", "Print a recording's messages, one line each, in log-time order");
  cat->add_option("FILE", k.cat.file, "An MCAP file, a rosbag2 .db3 or a bag folder")->required();
  cat->add_option("--channels", k.cat.channels, "Only the channels matching these globs");
  cat->add_option("--exclude", k.cat.exclude, "Not the channels matching these globs");
  cat->add_option("--begin", k.cat.begin, "From this wall time (UTC ISO 8601 or ns since the epoch)");
  cat->add_option("--end", k.cat.end, "Before this wall time");
  cat->add_flag("--strict", k.cat.strict, "Stop at the first message that does not decode (else skipped and said)");
  json_flag(cat, k);
  CLI::App* doctor = bag->add_subcommand(
      "doctor", "Check every record, CRC and index of a file; one line per fault (exit 1), none (exit 0)");
  doctor->add_option("FILE", k.bag_file, "An MCAP file")->required();
  json_flag(doctor, k);
  CLI::App* import = bag->add_subcommand(
      "import", "A ROS 2 recording (cdr messages, ros2msg schemas; rosbag2's MCAP) as a shmbus recording");
  import->add_option("FILE", k.bag_file, "A ROS 2 MCAP file, a rosbag2 .db3 or a bag folder")->required();
  import->add_option("-o,--output", k.bag_output, "The file to write")->required();
  import->add_flag("-q,--quiet", k.rewrite.quiet, "No progress line on a terminal");
  import->add_flag("--strict", k.bag_strict,
                   "Refuse the file at the first channel or message that does not decode (else kept raw and said)");
  return [&k, filter, merge, compress, decompress, cat, doctor, import]() -> std::optional<int> {
    if (cat->parsed()) return run_bag_cat(k.g, k.cat);
    if (doctor->parsed()) return run_bag_doctor(k.g, k.bag_file);
    if (import->parsed()) return run_bag_import(k.g, k.bag_file, k.bag_output, k.rewrite.quiet, k.bag_strict);
    for (CLI::App* c : {filter, merge, compress, decompress}) {
      if (!c->parsed()) continue;
      k.rewrite.verb = c->get_name();
      if (c == compress && k.rewrite.compression.empty()) k.rewrite.compression = "zstd";
      if (c == decompress) k.rewrite.compression = "none";
      return run_bag_rewrite(k.g, k.rewrite);
    }
    return std::nullopt;
  };
}

void add_bag_commands(CLI::App& app, Commands& k) {
  CLI::App* bag = app.add_subcommand("bag", "Inspect, repair and convert recordings");
  bag->require_subcommand(1);
  CLI::App* info = bag->add_subcommand(
      "info",
      "What a recording holds: library, profile, chunks and compression, time span, channels, encodings, "
      "counts, rates, losses");
  info->add_option("FILE", k.bag_files,
                   "MCAP files, merged; a split series' first file (FILE_0.mcap) names the series; rosbag2 .db3 files "
                   "or bag folders")
      ->required();
  info->add_flag("--one-file", k.one_file, "FILE_0.mcap alone, not the split series it begins");
  json_flag(info, k);
  CLI::App* recover = bag->add_subcommand("recover", "Rebuild an indexed file from one whose recorder was killed");
  recover->add_option("FILE", k.bag_file, "The unfinished MCAP file")->required();
  recover->add_option("-o,--output", k.bag_output, "The file to write")->required();
  recover->add_flag("-q,--quiet", k.rewrite.quiet, "No progress line on a terminal");
  CLI::App* exp = bag->add_subcommand(
      "export", "Rewrite a recording for other tools: JSON messages with a jsonschema per type, or ROS 2 CDR");
  exp->add_option("FILE", k.bag_file, "An MCAP file, a rosbag2 .db3 or a bag folder")->required();
  exp->add_option("-o,--output", k.bag_output, "The file to write")->required();
  exp->add_option("--encoding", k.encoding,
                  "Message encoding of the copy: json (jsonschema) or cdr (ros2 profile, ros2msg schemas)")
      ->check(CLI::IsMember({"json", "cdr"}));
  exp->add_flag("-q,--quiet", k.rewrite.quiet, "No progress line on a terminal");
  exp->add_flag("--strict", k.bag_strict,
                "Refuse the file at the first message that does not decode (else skipped and said)");
  CLI::App* graph = bag->add_subcommand(
      "graph",
      "The modules and channels of a recording as a graph (module -> channel -> module), in topological order");
  graph->add_option("FILE", k.bag_file, "An MCAP file written by shmtool record")->required();
  CLI::Option* graph_json = json_flag(graph, k);
  graph->add_flag("--dot", k.dot, "Print Graphviz (render with dot -Tsvg)")->excludes(graph_json);
  CLI::App* diff = bag->add_subcommand(
      "diff", "Compare one channel of two recordings frame by frame (matched by identity, e.g. after play --step)");
  diff->add_option("A", k.bag_file, "The reference recording")->required();
  diff->add_option("B", k.bag_other, "The recording compared with it")->required();
  diff->add_option("--channel", k.bag_channel, "The channel to compare")->required();
  json_flag(diff, k);
  auto files = add_bag_file_commands(bag, k);
  k.run["bag"] = [&k, info, recover, graph, diff, files] {
    if (const auto rc = files()) return *rc;
    if (info->parsed()) return run_bag_info(k.g, k.bag_files, !k.one_file);
    if (diff->parsed()) return run_bag_diff(k.g, k.bag_file, k.bag_other, k.bag_channel);
    if (graph->parsed()) return run_bag_graph(k.g, k.bag_file, k.dot);
    if (recover->parsed()) return run_bag_recover(k.g, k.bag_file, k.bag_output, k.rewrite.quiet);
    return run_bag_export(k.g, k.bag_file, k.bag_output, k.encoding, k.rewrite.quiet, k.bag_strict);
  };
}

/// service list | info | call: request/response services.
void add_service_commands(CLI::App& app, Commands& k) {
  CLI::App* service = app.add_subcommand("service", "The domain's services: list them, inspect one, call one");
  service->require_subcommand(1);
  json_flag(service->add_subcommand("list", "One row per service: type, server, clients, requests, responses"), k);
  CLI::App* info = service->add_subcommand("info", "One service: its channels, server, clients and fields");
  info->add_option("NAME", k.service, "Service name (/example/add)")->required();
  json_flag(info, k);
  CLI::App* call = service->add_subcommand("call", "Call a service with a JSON request; print the decoded response");
  call->add_option("NAME", k.call.name, "Service name (/example/add)")->required();
  call->add_option("REQUEST", k.call.request, "The request's fields as JSON ('{\"a\": 2}'); left out: zero");
  call->add_option("--timeout", k.call.timeout_s, "How long to wait for a server and its answer (default 5s)")
      ->transform(kDuration);
  json_flag(call, k);
  k.run["service"] = [&k, info, call] {
    if (info->parsed()) return run_service_info(k.g, k.service);
    if (call->parsed()) return run_service_call(k.g, k.call);
    return run_service_list(k.g);
  };
}

/// param list | get | set: a node's parameters, as `ros2 param`.
void add_param_commands(CLI::App& app, Commands& k) {
  CLI::App* param = app.add_subcommand("param", "A node's parameters: list, get and set them (as ros2 param)");
  param->require_subcommand(1);
  CLI::App* list = param->add_subcommand("list", "The names of a node's parameters");
  list->add_option("NODE", k.param.node, "Node (talker, /robot/talker)")->required();
  CLI::App* get = param->add_subcommand("get", "One parameter's type and value");
  get->add_option("NODE", k.param.node, "Node (talker, /robot/talker)")->required();
  get->add_option("NAME", k.param.name, "Parameter")->required();
  CLI::App* set = param->add_subcommand("set", "Set one parameter (the node may refuse it: exit 1)");
  set->add_option("NODE", k.param.node, "Node (talker, /robot/talker)")->required();
  set->add_option("NAME", k.param.name, "Parameter")->required();
  set->add_option("VALUE", k.param.value, "Value as ROS 2 reads one: true, 3, 1.5, text, [1, 2]")->required();
  for (CLI::App* a : {list, get, set}) {
    a->add_option("--timeout", k.param.timeout_s, "How long to wait for the node and its answer (default 5s)")
        ->transform(kDuration);
  }
  k.run["param"] = [&k, list, get] {
    k.param.action = list->parsed() ? "list" : get->parsed() ? "get" : "set";
    return run_param(k.g, k.param);
  };
}

/// action list | info | send_goal: actions, as ros2 action.
void add_action_commands(CLI::App& app, Commands& k) {
  CLI::App* act = app.add_subcommand("action", "The domain's actions: list, inspect and send goals (as ros2 action)");
  act->require_subcommand(1);
  json_flag(act->add_subcommand("list", "One row per action: type, server, clients, goals"), k);
  CLI::App* info = act->add_subcommand("info", "One action: its server, clients, and goals by state");
  info->add_option("NAME", k.action, "Action name (/fibonacci)")->required();
  json_flag(info, k);
  CLI::App* send = act->add_subcommand("send_goal", "Send a goal (JSON of its fields); print the result");
  send->add_option("NAME", k.goal.name, "Action name (/fibonacci)")->required();
  send->add_option("ARGS", k.goal_args, "[TYPE] GOAL: the action type (checked), then the goal's JSON ({\"order\": 5})")
      ->required()
      ->expected(1, 2);
  send->add_flag("--feedback,-f", k.goal.feedback, "Print each feedback message");
  send->add_option("--timeout", k.goal.timeout_s, "How long to wait for a server (default 5s)")->transform(kDuration);
  json_flag(send, k);
  k.run["action"] = [&k, info, send] {
    if (info->parsed()) return run_action_info(k.g, k.action);
    if (send->parsed()) {
      k.goal.goal = k.goal_args.back();
      if (k.goal_args.size() == 2) k.goal.type = k.goal_args.front();
      return run_action_send_goal(k.g, k.goal);
    }
    return run_action_list(k.g);
  };
}

int run(int argc, char** argv) {
  CLI::App app{"Inspect and drive a shmbus domain: channels, rates, alerts, messages.", "shmtool"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the command too
  Commands k;
  app.add_option("--domain", k.g.domain, "Domain (default: SHMBUS_DOMAIN, else the configuration's, else 'default')");
  app.add_option("--config", k.g.config_path, "Configuration file (default: SHMBUS_CONFIG, else the embedded one)");
  app.add_option("--msg-path", k.g.msg_paths,
                 "Directory of <package>/<Name>.msg definitions (repeatable; also SHMBUS_MSG_PATH)");
  add_inspect_commands(app, k);
  add_traffic_commands(app, k);
  add_sync_command(app, k);
  add_record_commands(app, k);
  add_play_command(app, k);
  add_bag_commands(app, k);
  add_service_commands(app, k);
  add_param_commands(app, k);
  add_action_commands(app, k);

  if (const auto bad = unknown_command(app, argc, argv)) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
    std::fprintf(stderr, "shmtool: unknown command '%s'; the commands are %s; see shmtool --help\n", bad->c_str(),
                 names.c_str());
    return 2;
  }
  if (const auto code = shmbus::cli::parse(app, argc, argv)) return *code;
  for (const CLI::App* sub : app.get_subcommands()) return k.run.at(sub->get_name())();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmtool", [&] { return run(argc, argv); });
}
