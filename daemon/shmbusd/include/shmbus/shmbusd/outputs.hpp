#pragma once
// Where the monitor's findings go besides the log and /metrics: channels on
// the bus itself (/shmbus/alerts, /shmbus/statistics, typed with the shipped
// schemas) and an Alertmanager-compatible webhook.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "shmbus/context.hpp"
#include "shmbus/monitor/monitor.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/shmbusd/http.hpp"
#include "shmbus_msgs/Alert.hpp"
#include "shmbus_msgs/Statistics.hpp"
#include "shmbus_msgs/String.hpp"

namespace shmbus::shmbusd {

using monitor::ChannelStatus;
using monitor::Transition;

/// Publishes alerts and statistics on the bus of the monitored domain.
class BusOutputs {
 public:
  explicit BusOutputs(Context& context);
  void publish_alert(const Transition& t);
  void publish_statistics(const ChannelStatus& c, std::int64_t window_start_ns, std::int64_t window_stop_ns);
  /// The web page's address on /shmbus/web, for `shmtool list` to print.
  void publish_web_address(const std::string& address);

 private:
  Context& context_;
  TypedPublisher<shmbus_msgs::Alert> alerts_;
  TypedPublisher<shmbus_msgs::Statistics> statistics_;
  std::optional<TypedPublisher<shmbus_msgs::String>> web_;
  std::uint32_t alert_seq_ = 0;
  std::uint32_t statistics_seq_ = 0;
};

/// Posts alerts to an Alertmanager v2 API (`POST /api/v2/alerts`) from its
/// own thread, so a slow or absent receiver never delays a scan. Firing
/// alerts are re-sent every `resend` so Alertmanager keeps them active; a
/// return to nominal resolves them (endsAt).
class AlertmanagerWebhook {
 public:
  AlertmanagerWebhook(const std::string& url, std::string domain,
                      std::chrono::seconds resend = std::chrono::seconds(60));
  ~AlertmanagerWebhook();
  void notify(const Transition& t);
  /// Re-sends the firing alerts when `resend` has passed.
  void tick();
  [[nodiscard]] std::uint64_t failures() const noexcept { return failures_.load(); }

  /// The v2 body for one transition (an array of postable alerts), for tests.
  static std::string body_for(const Transition& t, const std::string& domain, const std::string& starts_at,
                              const std::string& ends_at);

 private:
  void post(std::string body);
  void worker();
  HttpUrl url_;
  std::string domain_;
  std::chrono::seconds resend_;
  std::chrono::steady_clock::time_point last_resend_ = std::chrono::steady_clock::now();
  std::map<std::string, std::pair<Transition, std::string>> firing_;  // channel -> (transition, startsAt)
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> failures_{0};
  std::thread thread_;
};

/// RFC 3339 UTC time of CLOCK_REALTIME now ("2026-11-22T04:30:00.123Z").
std::string rfc3339_now();

}  // namespace shmbus::shmbusd
