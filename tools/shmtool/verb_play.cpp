// shmtool play: a recording back onto the bus at its recorded spacing
// (shmbus::record::Player, the terminal's keys as its PlayControl), or with
// --step in module-dependency order (shmbus::record::StepReplay). This maps
// the options and prints.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <poll.h>
#include <termios.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/record/player.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/record/step_replay.hpp"

namespace shmbus::tool {

using namespace record;  // NOLINT(google-build-using-namespace): the recording names

namespace {

/// FROM=TO pairs.
std::map<std::string, std::string> parse_remaps(const std::vector<std::string>& remaps) {
  std::map<std::string, std::string> out;
  for (const auto& r : remaps) {
    const auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      throw Error(Errc::kInvalidArgument, "play: --remap '" + r + "' is not FROM=TO, e.g. --remap /imu=/imu_replayed");
    }
    out[r.substr(0, eq)] = r.substr(eq + 1);
  }
  return out;
}

/// The keys on a terminal (space pauses and resumes, s steps one message
/// while paused, + and - double and halve the rate) and the status line.
class TerminalControl final : public PlayControl {
 public:
  TerminalControl() {
    ::tcgetattr(STDIN_FILENO, &saved_);
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  ~TerminalControl() override {
    ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    std::fputs("\n", stderr);
  }
  TerminalControl(const TerminalControl&) = delete;
  TerminalControl& operator=(const TerminalControl&) = delete;
  TerminalControl(TerminalControl&&) = delete;
  TerminalControl& operator=(TerminalControl&&) = delete;

  PlayCommand next(int timeout_ms) override {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    char c = 0;
    if (::poll(&p, 1, timeout_ms) <= 0 || ::read(STDIN_FILENO, &c, 1) != 1) return PlayCommand::kNone;
    switch (c) {
      case ' ':
        return PlayCommand::kTogglePause;
      case 's':
        return PlayCommand::kStep;
      case '+':
        return PlayCommand::kFaster;
      case '-':
        return PlayCommand::kSlower;
      default:
        return PlayCommand::kNone;
    }
  }

  void status(const PlayStatus& s) override {
    if (mono_now_ns() < next_status_) return;
    next_status_ = mono_now_ns() + 100'000'000;
    std::fprintf(stderr, "\r[%s] %8.3f / %.3f s  x%g  %llu messages   ", s.paused ? "paused " : "playing", s.position_s,
                 s.length_s, s.rate, static_cast<unsigned long long>(s.played));
  }

 private:
  termios saved_{};
  std::int64_t next_status_ = 0;
};

}  // namespace

int run_play(const Globals& g, const PlayOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  if (o.player.start_paused && !terminal) {
    throw Error(Errc::kInvalidArgument, "play: --paused needs a terminal on stdin (space resumes); run it from one");
  }
  PlayerOptions options = o.player;
  options.node = "shmtool-play";
  options.remap = parse_remaps(o.remap);
  // rosbag2's storage and ROS 2's MCAP files play as their imports: each
  // channel published with its type.
  std::vector<std::unique_ptr<RecordingInput>> inputs;
  int rc = 0;
  for (std::string& f : options.files) {
    inputs.push_back(std::make_unique<RecordingInput>(g, f, "play", true));
    f = inputs.back()->path();
    rc = std::max(rc, inputs.back()->exit_code());
  }
  if (!o.begin.empty()) options.begin_ns = parse_wall_time("play", "--begin", o.begin);
  if (!o.end.empty()) options.end_ns = parse_wall_time("play", "--end", o.end);
  std::optional<TerminalControl> control;
  if (terminal) control.emplace();
  Player player(config, std::move(options), control ? &*control : nullptr);
  const auto stop = [] { return stop_requested(); };
  if (o.wait_for_subscribers) {
    print(fmt::format("waiting for a subscriber on each of the {} channels\n", player.channel_count()));
    if (!player.wait_for_subscribers(stop)) return 0;
  }
  print(fmt::format("playing {} channels from {} file(s) at {}x{}{}; {}Ctrl-C stops\n", player.channel_count(),
                    player.file_count(), o.player.rate, o.player.loop ? ", looping" : "",
                    o.player.clock ? fmt::format(", time on {}", kClockChannel) : "",
                    control ? "space pauses, s steps, +/- change the rate; " : ""));
  const PlaySummary summary = player.run(stop);
  print(fmt::format("played {} messages in {:.3f} s\n", summary.played, summary.took_s));
  for (const auto& [name, t] : summary.too_large) {
    fmt::print(stderr, "play: {}: {} message(s) not published: {}\n", name, t.messages, t.why);
  }
  return summary.too_large.empty() ? rc : 1;
}

int run_play_step(const Globals& g, const PlayOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  const std::vector<std::string>& files = o.player.files;
  if (files.size() != 1) {
    throw Error(Errc::kInvalidArgument, "play --step: give one recording (a split recording: merge it first)");
  }
  record::StepReplayOptions options = o.step_replay;
  options.node = "shmtool-play";
  options.library = "shmtool play --step";
  options.recording = files.front();
  options.on_note = [](const std::string& line) { print(line); };
  record::StepReplay replay(config, std::move(options));
  const auto stop = [] { return stop_requested(); };
  replay.await_modules(stop);
  print(fmt::format("step replay of {}: {} frames through {} (live), first module {}; writing {}\n", files.front(),
                    replay.frame_count(), fmt::join(replay.live_modules(), ", "), replay.live_modules().front(),
                    o.step_replay.output));
  const auto& unframed = replay.unframed();
  for (std::size_t k = 0; k < unframed.size() && k < 3; ++k) {
    print(fmt::format("recorded {} is in no frame and is not replayed\n", unframed[k]));
  }
  const record::StepReplaySummary s = replay.run(stop);
  print(
      fmt::format("replayed {} frames in {:.3f} s ({:.0f} frames/s): {} answered by the live modules, {} failed; "
                  "{} live outputs matched no frame; {} recorded outputs in no frame\n",
                  s.frames, s.took_s, s.took_s > 0 ? static_cast<double>(s.frames) / s.took_s : 0.0,
                  s.frames - s.failed, s.failed, s.unmatched, unframed.size()));
  return s.failed == 0 && unframed.empty() ? 0 : 1;
}

}  // namespace shmbus::tool
