#include "shmbus/record/player.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>

#include <algorithm>
#include <utility>

#include "shmbus/clock.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus_msgs/Clock.hpp"

namespace shmbus::record {

namespace {

/// How long before a message is due the player stops sleeping and spins.
constexpr std::int64_t kSpinNs = 100'000;
/// The longest the player sleeps or waits for a command between looks at
/// its stop predicate.
constexpr std::int64_t kLookNs = 20'000'000;

bool asked_to_stop(const std::function<bool()>& stop) { return stop && stop(); }

/// One file's channels as publishers in the domain (by MCAP channel id).
struct PlayedFile {
  std::unique_ptr<mcap::Reader> reader;
  std::map<std::uint16_t, std::pair<std::string, Publisher*>> publishers;  ///< by channel id: played name, publisher
};

/// What part of the recording plays: [from, to] of its span [start, last]
/// (start UINT64_MAX: no message).
struct PlayWindow {
  std::uint64_t start = UINT64_MAX;
  std::uint64_t last = 0;
  std::uint64_t from = 0;
  std::uint64_t to = UINT64_MAX;
  [[nodiscard]] double length_s() const {
    return start == UINT64_MAX ? 0.0 : static_cast<double>(std::min(last, to) - from) / 1e9;
  }
};

PlayWindow play_window(const std::vector<PlayedFile>& files, const PlayerOptions& o) {
  PlayWindow w;
  for (const PlayedFile& f : files) {
    const mcap::Statistics& s = f.reader->info().statistics;
    if (s.message_count == 0) continue;
    w.start = std::min(w.start, s.message_start_time);
    w.last = std::max(w.last, s.message_end_time);
  }
  w.from = w.start == UINT64_MAX ? 0 : w.start + static_cast<std::uint64_t>(o.start_offset_s * 1e9);
  if (o.begin_ns) w.from = std::max(w.from, *o.begin_ns);
  w.to = o.end_ns.value_or(UINT64_MAX);
  if (w.start != UINT64_MAX && (w.from > w.last || w.to < w.from)) {
    throw Error(
        Errc::kInvalidArgument,
        fmt::format("play: nothing to play between {} and {}; the recording spans {} to {}",
                    wall_time_text(static_cast<std::int64_t>(w.from)),
                    w.to == UINT64_MAX ? std::string("its end") : wall_time_text(static_cast<std::int64_t>(w.to)),
                    wall_time_text(static_cast<std::int64_t>(w.start)),
                    wall_time_text(static_cast<std::int64_t>(w.last))));
  }
  return w;
}

/// When each message is due: base_mono + (log_time - base_log) / rate,
/// absolute deadlines on CLOCK_MONOTONIC (nothing drifts), re-based when
/// the rate changes or a pause ends.
class Pacer {
 public:
  Pacer(double rate, bool paused, std::uint64_t first, double length_s, PlayControl* control)
      : rate_(rate), paused_(paused), base_log_(first), first_(first), length_s_(length_s), control_(control) {}

  /// Starts over: the next message is due at once and fixes the schedule
  /// (loading the first chunk is not counted against the spacing).
  void restart() noexcept { anchored_ = false; }

  /// Waits until `log_time` is due (handling commands meanwhile); false
  /// when `stop` said so.
  bool wait(std::uint64_t log_time, std::uint64_t played, const std::function<bool()>& stop) {
    if (!anchored_) {
      anchored_ = true;
      base_log_ = log_time;
      base_mono_ = mono_now_ns();
    }
    for (;;) {
      if (asked_to_stop(stop)) return false;
      const std::int64_t now = mono_now_ns();
      if (control_ != nullptr) {
        control_->status({paused_, static_cast<double>(position(now) - first_) / 1e9, length_s_, rate_, played});
      }
      if (paused_) {
        if (handle(control_->next(20), log_time)) return true;  // a step
        continue;
      }
      const std::int64_t due =
          base_mono_ + static_cast<std::int64_t>(static_cast<double>(log_time - base_log_) / rate_);
      if (now >= due) return true;
      const std::int64_t left_ms = (due - now) / 1'000'000;
      if (control_ != nullptr && left_ms > 2) {
        handle(control_->next(static_cast<int>(std::min<std::int64_t>(left_ms - 1, 50))), log_time);
        continue;
      }
      // Sleep until shortly before, then spin: a wake-up is late by tens of
      // microseconds, which would shift every message by as much.
      if (due - now > kSpinNs) {
        if (!sleep_until(std::min(due - kSpinNs, now + kLookNs))) return false;
        continue;
      }
      while (mono_now_ns() < due) {
      }
      return true;
    }
  }

 private:
  /// The recording time now corresponds to.
  [[nodiscard]] std::uint64_t position(std::int64_t now) const noexcept {
    if (paused_ || now <= base_mono_) return base_log_;
    return base_log_ + static_cast<std::uint64_t>(static_cast<double>(now - base_mono_) * rate_);
  }

  /// One command; true when it releases the next message (a step).
  bool handle(PlayCommand command, std::uint64_t next_log) {
    const std::int64_t now = mono_now_ns();
    switch (command) {
      case PlayCommand::kTogglePause:
        // Pausing holds the position; resuming continues from it.
        if (!paused_) base_log_ = position(now);
        base_mono_ = now;
        paused_ = !paused_;
        return false;
      case PlayCommand::kStep:
        if (!paused_) return false;
        base_log_ = next_log;
        return true;
      case PlayCommand::kFaster:
      case PlayCommand::kSlower:
        base_log_ = position(now);
        base_mono_ = now;
        rate_ = std::clamp(command == PlayCommand::kFaster ? rate_ * 2 : rate_ / 2, 0.001, 1000.0);
        return false;
      case PlayCommand::kNone:
        return false;
    }
    return false;
  }

  double rate_;
  bool paused_;
  std::uint64_t base_log_;
  std::int64_t base_mono_ = mono_now_ns();
  bool anchored_ = false;
  std::uint64_t first_;
  double length_s_;
  PlayControl* control_;
};

}  // namespace

class Player::Impl {
 public:
  Impl(const Config& config, PlayerOptions options, PlayControl* control)
      : o_(std::move(options)), domain_(config.domain), control_(control), context_(with_node(config, o_.node)) {
    if (o_.files.empty()) throw Error(Errc::kInvalidArgument, "play: no recording given");
    if (!(o_.rate > 0)) throw Error(Errc::kInvalidArgument, fmt::format("play: rate {} is not > 0", o_.rate));
    if (o_.start_paused && control_ == nullptr) {
      throw Error(Errc::kInvalidArgument, "play: starting paused needs a control to resume it");
    }
    for (const auto& path : o_.files) files_.push_back({std::make_unique<mcap::Reader>(path), {}});
    std::sort(files_.begin(), files_.end(), [](const PlayedFile& a, const PlayedFile& b) {
      return a.reader->info().statistics.message_start_time < b.reader->info().statistics.message_start_time;
    });
    window_ = play_window(files_, o_);
    open_publishers();
    if (o_.clock) clock_ = std::make_unique<TypedPublisher<shmbus_msgs::Clock>>(kClockChannel, context_);
  }

  [[nodiscard]] std::size_t channel_count() const noexcept { return publishers_.size(); }
  [[nodiscard]] std::size_t file_count() const noexcept { return files_.size(); }

  bool wait_for_subscribers(const std::function<bool()>& stop) {
    for (const auto& [name, p] : publishers_) {
      while (introspect::ChannelReader(domain_, name).view().subscribers.empty()) {
        if (asked_to_stop(stop) || !sleep_until(mono_now_ns() + 10'000'000)) return false;
      }
    }
    return true;
  }

  PlaySummary run(const std::function<bool()>& stop) {
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake-ups as asked, not up to 50 us later
    PlaySummary summary;
    const std::int64_t started = mono_now_ns();
    Pacer pacer(o_.rate, o_.start_paused, window_.from, window_.length_s(), control_);
    do {
      summary.stopped = !play_once(pacer, stop, summary) || (o_.loop && asked_to_stop(stop));
    } while (!summary.stopped && o_.loop);
    summary.took_s = static_cast<double>(mono_now_ns() - started) / 1e9;
    return summary;
  }

 private:
  static Config with_node(Config config, const std::string& node) {
    config.node = node;
    return config;
  }

  /// One publisher per played name; the recording's type and schema create
  /// a missing channel, and a channel that exists with another type is
  /// refused naming both (Error kTypeMismatch).
  void open_publishers() {
    for (PlayedFile& f : files_) {
      const mcap::FileInfo& info = f.reader->info();
      for (const auto& ch : info.channels) {
        if (!selected(o_.channels, o_.exclude, ch.topic)) continue;
        if (ch.topic == kProvenanceChannel) continue;  // facts about the recording, never traffic
        const auto remapped = o_.remap.find(ch.topic);
        const std::string& name = remapped == o_.remap.end() ? ch.topic : remapped->second;
        auto& p = publishers_[name];
        if (!p) p = std::make_unique<Publisher>(name, recorded_type(info, ch), context_);
        f.publishers[ch.id] = {name, p.get()};
      }
    }
    if (publishers_.empty()) {
      throw Error(Errc::kNotFound, "play: no recorded channel matches; see shmtool bag info " + o_.files.front());
    }
  }

  /// Publishes the window's messages of every file once, paced; false
  /// when stopped.
  bool play_once(Pacer& pacer, const std::function<bool()>& stop, PlaySummary& summary) {
    std::uint64_t last_clock = 0;
    bool stopped = false;
    pacer.restart();
    for (PlayedFile& f : files_) {
      if (stopped) break;
      f.reader->read_messages([&](const mcap::MessageView& m) {
        if (m.log_time > window_.to) return false;
        const auto it = f.publishers.find(m.channel_id);
        if (m.log_time < window_.from || it == f.publishers.end()) return true;
        if (!pacer.wait(m.log_time, summary.played, stop)) {
          stopped = true;
          return false;
        }
        if (clock_ && (last_clock == 0 || m.log_time >= last_clock + 1'000'000 || m.log_time < last_clock)) {
          shmbus_msgs::Clock t{};
          t.clock_ns = m.log_time;
          // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
          static_cast<void>(clock_->publish(t));
          last_clock = m.log_time;
        }
        auto& [name, publisher] = it->second;
        if (publisher->publish(m.data) == PublishResult::kTooLarge) {
          TooLarge& t = summary.too_large[name];
          ++t.messages;
          t.largest = std::max(t.largest, m.data.size());
          t.max_message_size = publisher->max_message_size();
          t.why = publisher->too_large(t.largest);
        } else {
          ++summary.played;
        }
        return true;
      });
    }
    return !stopped;
  }

  PlayerOptions o_;
  std::string domain_;
  PlayControl* control_;
  Context context_;
  std::vector<PlayedFile> files_;
  PlayWindow window_;
  std::map<std::string, std::unique_ptr<Publisher>> publishers_;
  std::unique_ptr<TypedPublisher<shmbus_msgs::Clock>> clock_;
};

Player::Player(const Config& config, PlayerOptions options, PlayControl* control)
    : impl_(std::make_unique<Impl>(config, std::move(options), control)) {}
Player::~Player() = default;
std::size_t Player::channel_count() const noexcept { return impl_->channel_count(); }
std::size_t Player::file_count() const noexcept { return impl_->file_count(); }
bool Player::wait_for_subscribers(const std::function<bool()>& stop) { return impl_->wait_for_subscribers(stop); }
PlaySummary Player::run(const std::function<bool()>& stop) { return impl_->run(stop); }

}  // namespace shmbus::record
