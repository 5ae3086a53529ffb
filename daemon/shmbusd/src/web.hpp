#pragma once
// What shmbusd's web page and /api/* show: the monitor's channels with
// their endpoints, each channel's rate over the last five minutes, the
// alert history since the daemon started and the live module graph, as
// JSON; and the page itself, compiled in.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shmbus/monitor/monitor.hpp"

namespace shmbus::shmbusd {

/// The page (HTML with its CSS and JavaScript inline; nothing fetched
/// from another host).
std::string_view web_page();

/// A channel's rates over the last five minutes and the alerts since the
/// start, in bounded memory: kHistorySamples floats per channel (a
/// channel's history goes with it) and the newest kMaxAlerts alerts.
/// Thread-safety: none; the daemon holds its lock.
class WebState {
 public:
  static constexpr std::int64_t kHistoryPeriodNs = 2'000'000'000;
  static constexpr std::size_t kHistorySamples = 150;  ///< five minutes at one per 2 s
  static constexpr std::size_t kMaxAlerts = 1000;

  /// Each transition of a scan, with the wall-clock time it was seen.
  void add_alerts(const std::vector<monitor::Transition>& transitions, std::int64_t unix_ns);
  /// Whether a history sample is due at CLOCK_MONOTONIC `now_ns`.
  [[nodiscard]] bool sample_due(std::int64_t now_ns) const noexcept { return now_ns >= next_sample_ns_; }
  /// One history sample: every channel's rate now; channels gone are forgotten.
  void sample(const std::vector<monitor::ChannelStatus>& statuses, std::int64_t now_ns);

  /// /api/channels (and each event of /api/events): every channel as
  /// `shmtool list --json` shows it, with the debounced level, and what the
  /// page adds (thresholds, endpoints, unread, age of the last message,
  /// service, the latest history sample). Written as text: a daemon with a
  /// page open writes it several times a second.
  [[nodiscard]] std::string channels(const std::string& domain, const std::vector<monitor::ChannelStatus>& statuses,
                                     std::int64_t now_ns, std::int64_t unix_ns) const;
  /// /api/alerts: newest first.
  [[nodiscard]] nlohmann::ordered_json alerts() const;
  /// /api/history: each channel's samples, oldest first.
  [[nodiscard]] nlohmann::ordered_json history() const;
  /// /api/graph: the modules (the nodes of the endpoints) and channels, in
  /// the form of `shmtool bag graph --json`; edge counts are messages
  /// published (module -> channel) and received (channel -> module).
  /// The daemon's own channels (/shmbus/...) are left out.
  [[nodiscard]] static nlohmann::json graph(const std::vector<monitor::ChannelStatus>& statuses);

 private:
  struct Alert {
    std::int64_t unix_ns = 0;
    monitor::Transition transition;
  };
  /// A ring of samples; NaN where the channel had no rate.
  struct History {
    std::vector<float> samples;  ///< at most kHistorySamples
    std::size_t next = 0;        ///< where the next sample goes once full
  };
  std::deque<Alert> alerts_;
  std::uint64_t alerts_total_ = 0;
  std::map<std::string, History, std::less<>> history_;
  std::uint64_t samples_taken_ = 0;
  std::int64_t next_sample_ns_ = 0;
};

}  // namespace shmbus::shmbusd
