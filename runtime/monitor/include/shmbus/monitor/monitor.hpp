#pragma once
// The monitor: every scan, for every channel of the domain, reads the new
// time-list stamps, measures the frequency over the channel's window,
// classifies it and debounces level changes. No application code involved:
// everything comes from shared memory through shmbus/introspect.hpp.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/frequency.hpp"
#include "shmbus/monitor/levels.hpp"
#include "shmbus/monitor/settings.hpp"

namespace shmbus::monitor {

/// A believed level change.
struct Transition {
  std::string channel;
  Level old_level;
  Level new_level;
  double frequency_hz;
  std::array<double, 3> thresholds_hz;
  std::int64_t window_ns;
};

/// One subscriber's counters, and its message age over the last statistics period.
struct SubscriberStatus {
  std::string node;
  std::int32_t pid = 0;
  std::uint64_t received = 0;
  std::uint64_t lost = 0;
  /// overflow = block channels: messages published that it has not taken
  /// yet (nullopt on overwrite channels, where nobody holds a publisher up).
  std::optional<std::uint64_t> unread;
  Summary age;  ///< seconds
};

/// One publisher's counters, and the transit of what it carried from another
/// host over the last statistics period (a gateway's import; count 0 for
/// local publishers).
struct PublisherStatus {
  std::string node;
  std::int32_t pid = 0;
  std::uint64_t published = 0;
  std::uint64_t upstream_lost = 0;   ///< lost before they reached it (between hosts)
  std::uint64_t blocked_ns = 0;      ///< overflow = block: time spent waiting for room
  std::uint64_t block_timeouts = 0;  ///< overflow = block: waits that reached block_timeout
  Summary transit;                   ///< seconds, origin publish to receive here
};

/// What the monitor knows of one channel.
struct ChannelStatus {
  std::string name;
  std::string type_name;
  Transport transport = Transport::kShm;
  Level level = Level::kUnmonitored;     ///< believed (debounced)
  Level observed = Level::kUnmonitored;  ///< this scan's
  WindowMeasure measure;                 ///< over the window at the last scan (period statistics: at the last refresh)
  std::optional<std::array<double, 3>> thresholds_hz;
  std::int64_t window_ns = 0;
  std::uint32_t time_list_capacity = 0;
  /// The newest time-list stamp read (CLOCK_MONOTONIC ns; 0: none yet),
  /// inside the window or not: the age of the channel's last message.
  std::int64_t last_stamp_ns = 0;
  std::uint64_t messages = 0;
  std::uint64_t lost = 0;
  std::uint32_t publishers = 0;
  std::uint32_t subscribers = 0;
  std::vector<SubscriberStatus> subscriber_stats;
  std::vector<PublisherStatus> publisher_stats;
};

/// Thread-safety: one thread scans; others must not call in parallel.
class Monitor {
 public:
  /// Who owns the subscribers' message-age extremes: the daemon resets their
  /// min/max every statistics period (kOwner); a tool only looks (kObserver)
  /// and maps the channels read-only, so it never disturbs the daemon.
  enum class Role { kOwner, kObserver };

  /// Watches `config.domain` with the thresholds and windows of `config`,
  /// a level believed after `settings.debounce_scans` scans agree.
  explicit Monitor(Config config, MonitorSettings settings = {}, Role role = Role::kOwner);
  ~Monitor();

  /// Applies a new configuration (thresholds, windows, debounce) without
  /// losing measurements; pending level changes restart their debounce.
  void reload(Config config, MonitorSettings settings);

  /// One scan at CLOCK_MONOTONIC `now_ns`: discovers channels that appeared
  /// or went away, reads new stamps, measures, classifies. Returns the
  /// believed transitions of this scan.
  std::vector<Transition> scan(std::int64_t now_ns);

  /// Refreshes counters, endpoint tables and the period and age statistics
  /// of every channel over its current window (statistics period: once a
  /// second by default), and (kOwner) starts the next statistics period.
  void refresh_statistics();

  /// The state after the last scan / refresh, in channel-name order.
  [[nodiscard]] std::vector<ChannelStatus> statuses() const;
  [[nodiscard]] std::size_t channel_count() const noexcept;
  /// Channels whose believed level is degraded or critical.
  [[nodiscard]] std::size_t alerting_count() const noexcept;
  /// Channels whose time list cannot hold a whole window at their rate.
  [[nodiscard]] std::vector<std::string> take_truncation_warnings();
  /// Channels listed in the registry whose segment cannot be used (corrupt,
  /// another layout, another user's): name -> the reason, one line. They
  /// are not measured; the others go on.
  [[nodiscard]] const std::map<std::string, std::string>& unreadable() const noexcept { return unreadable_; }
  /// The unreadable channels found since the last call (each reported once).
  [[nodiscard]] std::vector<std::string> take_unreadable_warnings();
  [[nodiscard]] const Config& config() const noexcept { return config_; }
  /// A fresh view of a watched channel through the monitor's own mapping
  /// (its schema, say, which the status leaves out); nullopt when it is not
  /// watched.
  [[nodiscard]] std::optional<introspect::ChannelView> view(std::string_view name) const;

 private:
  struct Tracked;
  void discover();
  Config config_;
  MonitorSettings settings_;
  Role role_;
  std::unique_ptr<introspect::DomainView> domain_;
  std::uint64_t generation_ = UINT64_MAX;
  std::map<std::string, std::unique_ptr<Tracked>, std::less<>> channels_;
  std::vector<std::string> truncation_warnings_;
  std::map<std::string, std::string> unreadable_;
  std::vector<std::string> unreadable_warnings_;
  std::vector<std::int64_t> scratch_;
};

}  // namespace shmbus::monitor
