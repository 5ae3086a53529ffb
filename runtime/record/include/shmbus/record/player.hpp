#pragma once
/// @file player.hpp
/// MCAP recordings back onto the bus: a `Player` publishes the recorded
/// messages of one or more files (played one after the other by their
/// start times) on their channels, paced by their log times.
///
/// Each message is due at base + (log_time - first) / rate on
/// CLOCK_MONOTONIC (absolute deadlines: nothing drifts over a long file);
/// the player sleeps until shortly before and spins the rest, so a message
/// leaves within microseconds of its due time. A `PlayControl` (a terminal,
/// a UI) may pause, step and change the rate while it plays.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/config.hpp"

namespace shmbus::record {

struct PlayerOptions {
  std::vector<std::string> files;            ///< played one after the other, by their start times
  double rate = 1.0;                         ///< speed factor, > 0
  bool loop = false;                         ///< start again at the end
  std::vector<std::string> channels;         ///< globs of the recorded names to play (empty: all)
  std::vector<std::string> exclude;          ///< globs never played
  std::map<std::string, std::string> remap;  ///< recorded name -> the name it is published on
  double start_offset_s = 0;                 ///< skip this much of the recording's start
  std::optional<std::uint64_t> begin_ns;     ///< play from this log time (ns since the epoch)
  std::optional<std::uint64_t> end_ns;       ///< play up to this log time
  bool start_paused = false;                 ///< start paused (needs a PlayControl to resume)
  bool clock = false;                        ///< publish the recording's time on kClockChannel
  std::string node = "shmbus-play";          ///< the node the player's publishers register under
};

/// What a control asks of the player.
enum class PlayCommand : std::uint8_t { kNone, kTogglePause, kStep, kFaster, kSlower };

/// Where a playing player is, for a status line.
struct PlayStatus {
  bool paused = false;
  double position_s = 0;  ///< from the window's start
  double length_s = 0;    ///< of the window
  double rate = 1.0;
  std::uint64_t played = 0;
};

/// Pause, step (one message while paused), faster (x2) and slower (/2),
/// from a terminal or a UI. The player calls it from its own thread.
class PlayControl {
 public:
  PlayControl() = default;
  virtual ~PlayControl() = default;
  PlayControl(const PlayControl&) = delete;
  PlayControl& operator=(const PlayControl&) = delete;
  PlayControl(PlayControl&&) = delete;
  PlayControl& operator=(PlayControl&&) = delete;
  /// Waits up to `timeout_ms` for a command; kNone when none came.
  virtual PlayCommand next(int timeout_ms) = 0;
  /// Where the player is; called at least every 50 ms while it waits.
  virtual void status(const PlayStatus& /*status*/) {}
};

/// Messages of one channel that its max_message_size could not take.
struct TooLarge {
  std::uint64_t messages = 0;
  std::size_t largest = 0;  ///< bytes of the largest of them
  std::size_t max_message_size = 0;
  /// Publisher::too_large for the largest: where the channel's size came
  /// from and what to do.
  std::string why;
};

struct PlaySummary {
  std::uint64_t played = 0;  ///< messages published
  double took_s = 0;
  bool stopped = false;  ///< the stop predicate ended it before the end
  /// Per played channel name: messages not published, each larger than
  /// the channel's max_message_size (a channel made before with a smaller
  /// one, or the configuration's). Never counted in `played`.
  std::map<std::string, TooLarge> too_large;
};

class Player {
 public:
  /// Opens the files and creates one publisher per played channel (a
  /// missing channel is created with the recording's type and schema).
  /// Throws Error: kInvalidArgument for a window with nothing in it or
  /// start_paused without a control, kNotFound when no channel matches,
  /// kTypeMismatch for a channel that exists with another type, and what
  /// mcap::Reader throws for a file that is not a recording.
  Player(const Config& config, PlayerOptions options, PlayControl* control = nullptr);
  ~Player();
  Player(const Player&) = delete;
  Player& operator=(const Player&) = delete;
  Player(Player&&) = delete;
  Player& operator=(Player&&) = delete;

  [[nodiscard]] std::size_t channel_count() const noexcept;
  [[nodiscard]] std::size_t file_count() const noexcept;
  /// Waits until every played channel has a subscriber; false when `stop`
  /// said so first (polled every 10 ms).
  bool wait_for_subscribers(const std::function<bool()>& stop = {});
  /// Plays the window once (or until stopped, with loop); `stop` is polled
  /// at least every 20 ms.
  PlaySummary run(const std::function<bool()>& stop = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::record
