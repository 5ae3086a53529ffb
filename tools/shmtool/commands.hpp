#pragma once
// The shmtool commands. Each returns the exit code (0 ok, 1 runtime failure,
// 2 bad usage or configuration, 3 channel not found) or throws shmbus::Error,
// which main() turns into one line on stderr and the code of its kind.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "format.hpp"
#include "shmbus/record/import.hpp"
#include "shmbus/record/player.hpp"
#include "shmbus/record/recorder.hpp"
#include "shmbus/record/rewrite.hpp"
#include "shmbus/record/step_replay.hpp"
#include "shmbus/rosbag2.hpp"

namespace shmbus::tool {

int run_list(const Globals& g);
int run_info(const Globals& g, const std::string& channel);

struct StatsOptions {
  std::optional<std::string> channel;
};
int run_stats(const Globals& g, const StatsOptions& o);
int run_alerts(const Globals& g);

struct TopOptions {
  double interval_s = 1.0;
  std::string sort = "rate";     ///< rate, level or name
  std::uint64_t iterations = 0;  ///< 0: until q or Ctrl-C
};
int run_top(const Globals& g, const TopOptions& o);

int run_clean(const Globals& g, bool dry_run);

struct EchoOptions {
  std::string channel;
  std::uint64_t count = 0;  ///< 0: until Ctrl-C
  bool hex = false;
  bool no_header = false;
  std::uint32_t history = 0;  ///< messages already in the ring to show first
  bool no_wait = false;       ///< exit 3 when the channel does not exist (default: wait for it)
};
int run_echo(const Globals& g, const EchoOptions& o);

struct HzOptions {
  std::string channel;
  std::optional<double> window_s;  ///< default: the channel's configured window
  double interval_s = 1.0;
  std::uint64_t reports = 0;  ///< 0: until Ctrl-C
  bool no_wait = false;       ///< exit 3 when the channel does not exist (default: wait for it)
};
int run_hz(const Globals& g, const HzOptions& o);

/// bw CHANNEL: bytes per second and message sizes over the last messages.
struct BwOptions {
  std::string channel;
  std::size_t window = 100;  ///< messages the figures cover
  double interval_s = 1.0;
  std::uint64_t reports = 0;  ///< 0: until Ctrl-C
  bool no_wait = false;       ///< exit 3 when the channel does not exist (default: wait for it)
};
int run_bw(const Globals& g, const BwOptions& o);
/// find TYPE: the channels of a type.
int run_find(const Globals& g, const std::string& type);

struct PubOptions {
  std::string channel;
  std::string type;                       ///< empty: the existing channel's
  std::optional<std::uint32_t> raw_size;  ///< raw bytes of this size
  double rate_hz = 1.0;
  std::uint64_t count = 0;  ///< 0: until Ctrl-C
  bool stamp = false;       ///< fill header.stamp (std_msgs) or header.stamp_ns and header.seq (shmbus_msgs)
  std::string data;         ///< JSON (typed) or hex (raw)
};
int run_pub(const Globals& g, const PubOptions& o);

struct SyncOptions {
  std::string name;  ///< a [[sync]] entry of the configuration; options given here override it
  std::vector<std::string> inputs;
  std::string policy;                     ///< empty: the entry's, else bounded
  std::string threshold;                  ///< a duration ("10ms"); empty: 0
  std::string output;                     ///< channel of shmbus_msgs/SyncSet
  std::string stamp_field;                ///< empty: the publish time
  std::optional<std::size_t> queue_size;  ///< default: the entry's, else 64
  std::string master;                     ///< latest: the triggering input (default: the first)
  bool no_wait = false;                   ///< exit 3 when an input does not exist (default: wait for it)
  std::uint64_t count = 0;                ///< stop after N sets (0: until Ctrl-C)
};
int run_sync(const Globals& g, const SyncOptions& o);

/// record: the library's options, bound by the command line, and what
/// only the verb has.
struct RecordOptions {
  record::RecorderOptions recorder;  ///< output, channels, sizes, split and snapshot settings
  std::string compression = "zstd";  ///< --compression's text (recorder.compression once parsed)
  bool trigger = false;              ///< send a trigger to the snapshot recorders and exit
  std::string reason;                ///< the trigger's reason
  bool quiet = false;                ///< no status line on a terminal
};
int run_record(const Globals& g, const RecordOptions& o);
/// play: the library's options, bound by the command line, and the texts
/// they are parsed from.
struct PlayOptions {
  record::PlayerOptions player;           ///< files, rate, loop, channels, exclude, offset, paused, clock
  std::vector<std::string> remap;         ///< FROM=TO texts (player.remap once parsed)
  std::string begin;                      ///< wall time text, ISO 8601 or ns (player.begin_ns once parsed)
  std::string end;                        ///< wall time text (player.end_ns once parsed)
  bool wait_for_subscribers = false;      ///< start once every played channel has a subscriber
  bool step = false;                      ///< replay in module-dependency order (step.cpp)
  record::StepReplayOptions step_replay;  ///< --step: the live modules, the output, the timeout
};
int run_play(const Globals& g, const PlayOptions& o);
/// play FILE --step --modules M -o OUT: replay in module-dependency order.
int run_play_step(const Globals& g, const PlayOptions& o);
/// bag info FILE: what a recording holds.
int run_bag_info(const Globals& g, const std::vector<std::string>& paths, bool series);
/// bag graph FILE [--json|--dot]: the recording's modules and channels.
int run_bag_graph(const Globals& g, const std::string& path, bool dot);
/// bag diff A B --channel C: two recordings of C compared frame by frame.
int run_bag_diff(const Globals& g, const std::string& a, const std::string& b, const std::string& channel);
/// bag recover IN -o OUT: an indexed file from one whose recorder died.
int run_bag_recover(const Globals& g, const std::string& in, const std::string& out, bool quiet);
/// bag filter | merge | compress | decompress: a new recording from recorded ones.
struct BagRewriteOptions {
  std::string verb;                 ///< for messages and progress
  std::vector<std::string> inputs;  ///< one, or several for merge
  std::string output;
  record::RewriteOptions rewrite;  ///< channels, exclude, chunk size; the rest from the text below
  std::string begin;               ///< wall time (ISO 8601 or ns)
  std::string end;
  std::string compression;  ///< none | lz4 | zstd; "" keeps the input's
  bool quiet = false;       ///< no progress line
};
int run_bag_rewrite(const Globals& g, const BagRewriteOptions& o);
/// bag cat FILE: the messages as lines (decoded; --json for scripts).
struct BagCatOptions {
  std::string file;
  std::vector<std::string> channels;
  std::vector<std::string> exclude;
  std::string begin;
  std::string end;
  bool strict = false;  ///< stop at the first message that does not decode
};
int run_bag_cat(const Globals& g, const BagCatOptions& o);
/// bag doctor FILE: every fault of the file, one line each (exit 1), or
/// none (exit 0).
int run_bag_doctor(const Globals& g, const std::string& file);
/// bag import IN -o OUT: a ROS 2 recording (cdr, ros2msg) as a shmbus one.
/// A channel that cannot be read or a message that does not decode is
/// kept raw and said (exit 1); with `strict` the first refuses the file.
int run_bag_import(const Globals& g, const std::string& in, const std::string& out, bool quiet, bool strict);
/// bag export IN -o OUT --encoding json: the recording with JSON messages.
/// What does not decode is skipped and said (exit 1), or with `strict`
/// refuses the file.
int run_bag_export(const Globals& g, const std::string& in, const std::string& out, const std::string& encoding,
                   bool quiet, bool strict);

/// A recording named on the command line, read as MCAP: rosbag2's sqlite3
/// files and bag folders through a converted copy (shmbus::rosbag2),
/// removed when this goes. Each message the copy left out is said once,
/// after "VERB: ", and makes exit_code() 1. With `import`, a ROS 2
/// recording is also imported into a shmbus one (what play publishes).
class RecordingInput {
 public:
  RecordingInput(const Globals& g, const std::string& path, std::string_view verb, bool import = false);
  /// The MCAP file to read.
  [[nodiscard]] const std::string& path() const noexcept { return recording_.path(); }
  /// The files read (a bag folder's split files), as the user knows them.
  [[nodiscard]] const std::vector<std::string>& files() const noexcept { return recording_.files(); }
  /// Channels whose type neither the bag nor the msg path defines.
  [[nodiscard]] const std::vector<std::string>& undefined() const noexcept { return recording_.undefined(); }
  /// What was read ("rosbag2 sqlite3, zstd per message"; empty: MCAP).
  [[nodiscard]] const std::string& storage() const noexcept { return recording_.storage(); }
  [[nodiscard]] int exit_code() const noexcept { return recording_.notes().empty() ? 0 : 1; }

 private:
  rosbag2::Recording recording_;
};

/// A record library's progress callback drawing `line`.
inline std::function<void(const record::RewriteProgress&)> progress_to(ProgressLine& line) {
  return [&line](const record::RewriteProgress& p) { line.update(p.messages, p.total_messages, p.bytes_written); };
}

/// What a bag command left undecoded, per channel, said once at its end:
/// one line each on stderr with the count and the first reason.
class Undecoded {
 public:
  /// What a conversion (import, export) left out and noted.
  void add(const record::ConversionReport& r);
  /// `messages` of `topic` (a ROS 2 type `type`) not decoded because of
  /// `why` (the first reason of a channel is the one said).
  void add(const std::string& topic, const std::string& type, const std::string& why, std::uint64_t messages = 1);
  /// Says each channel's line, "VERB: TOPIC (TYPE): N message(s) WHAT: WHY",
  /// and returns the exit code: 1 when anything was left, else 0.
  [[nodiscard]] int say(std::string_view verb, std::string_view what) const;
  /// What decoding `topic`'s messages accepted and counted (strings
  /// without their NUL, strings cut at a NUL inside): said by say(),
  /// without changing its exit code.
  void note(const std::string& topic, const schema::CdrNotes& n);

 private:
  struct Channel {
    std::string type;
    std::uint64_t messages = 0;
    std::string why;
    schema::CdrNotes notes;
  };
  std::map<std::string, Channel> channels_;
};

/// service list: the domain's services, their servers and counters.
int run_service_list(const Globals& g);
/// service info NAME: one service's channels, server, clients and fields.
int run_service_info(const Globals& g, const std::string& name);
struct ServiceCallOptions {
  std::string name;
  std::string request;     ///< JSON of the request's fields (left out: zero)
  double timeout_s = 5.0;  ///< for a server and its answer together
};
/// service call NAME JSON: one call, the response decoded.
int run_service_call(const Globals& g, const ServiceCallOptions& o);

struct ActionGoalOptions {
  std::string name;
  std::string type;        ///< optional, as ros2 action send_goal takes it: checked against the action's
  std::string goal;        ///< JSON of the goal's fields (left out: the definition's defaults, else zero)
  bool feedback = false;   ///< print each feedback message
  double timeout_s = 5.0;  ///< for a server to appear
};
/// action list | info NAME | send_goal NAME [TYPE] GOAL: as ros2 action.
int run_action_list(const Globals& g);
int run_action_info(const Globals& g, const std::string& name);
int run_action_send_goal(const Globals& g, const ActionGoalOptions& o);

struct ParamOptions {
  std::string action;  ///< list, get or set
  std::string node;    ///< its name (`talker`, `/robot/talker`)
  std::string name;    ///< get, set: the parameter
  std::string value;   ///< set: as on a command line (`-p name:=value`)
  double timeout_s = 5.0;
};
/// param list|get|set NODE [NAME [VALUE]]: a node's parameters.
int run_param(const Globals& g, const ParamOptions& o);

}  // namespace shmbus::tool
