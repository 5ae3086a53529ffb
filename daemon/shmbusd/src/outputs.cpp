#include "shmbus/shmbusd/outputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include "shmbus/bus_channels.hpp"
#include "shmbus/clock.hpp"

namespace shmbus::shmbusd {

namespace {

using monitor::Level;
using monitor::PublisherStatus;
using monitor::SubscriberStatus;
using monitor::Summary;

std::uint64_t wall_ns() { return static_cast<std::uint64_t>(wall_now_ns()); }

void fill_summary(shmbus_msgs::StatisticSummary& out, const Summary& s) {
  out.mean = s.mean;
  out.min = s.min;
  out.max = s.max;
  out.stddev = s.stddev;
  out.count = s.count;
}

const char* severity(Level l) { return l == Level::kCritical ? "critical" : "warning"; }

}  // namespace

std::string rfc3339_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  ::gmtime_r(&ts.tv_sec, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, ts.tv_nsec / 1'000'000);
}

BusOutputs::BusOutputs(Context& context)
    : context_(context), alerts_(kAlertsChannel, context), statistics_(kStatisticsChannel, context) {}

void BusOutputs::publish_web_address(const std::string& address) {
  if (!web_) web_.emplace(kWebChannel, context_);
  shmbus_msgs::String m{};
  m.data.assign(address);
  // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
  static_cast<void>(web_->publish(m));
}

void BusOutputs::publish_alert(const Transition& t) {
  shmbus_msgs::Alert a{};
  a.header.stamp_ns = wall_ns();
  a.header.seq = alert_seq_++;
  a.header.frame_id.assign("shmbusd");
  a.channel.assign(t.channel);
  a.old_level = static_cast<std::uint8_t>(t.old_level);
  a.new_level = static_cast<std::uint8_t>(t.new_level);
  a.frequency_hz = t.frequency_hz;
  a.thresholds_hz = t.thresholds_hz;
  a.window_ns = static_cast<std::uint64_t>(t.window_ns);
  // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
  static_cast<void>(alerts_.publish(a));
}

namespace {

/// The count-weighted pool of several windows' summaries.
Summary pooled(const std::vector<Summary>& parts) {
  Summary out;
  double sum = 0, sq = 0;
  std::uint64_t n = 0;
  for (const Summary& p : parts) {
    if (p.count == 0) continue;
    const auto k = static_cast<double>(p.count);
    sum += p.mean * k;
    sq += (p.stddev * p.stddev + p.mean * p.mean) * k;
    n += p.count;
    out.min = n == p.count ? p.min : std::fmin(out.min, p.min);
    out.max = n == p.count ? p.max : std::fmax(out.max, p.max);
  }
  if (n != 0) {
    out.count = n;
    out.mean = sum / static_cast<double>(n);
    out.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(n) - out.mean * out.mean));
  }
  return out;
}

}  // namespace

void BusOutputs::publish_statistics(const ChannelStatus& c, std::int64_t window_start_ns, std::int64_t window_stop_ns) {
  shmbus_msgs::Statistics s{};
  s.header.stamp_ns = wall_ns();
  s.header.seq = statistics_seq_++;
  s.header.frame_id.assign("shmbusd");
  s.channel.assign(c.name);
  s.window_start_ns = static_cast<std::uint64_t>(window_start_ns);
  s.window_stop_ns = static_cast<std::uint64_t>(window_stop_ns);
  s.frequency_hz = c.measure.frequency_hz;
  s.messages = c.messages;
  s.lost = c.lost;
  s.publishers = c.publishers;
  s.subscribers = c.subscribers;
  fill_summary(s.period, c.measure.period);
  // Over all subscribers (ages) and publishers (transits): the
  // count-weighted pool of their windows.
  std::vector<Summary> ages, transits;
  for (const SubscriberStatus& sub : c.subscriber_stats) ages.push_back(sub.age);
  std::uint64_t upstream_lost = 0;
  for (const PublisherStatus& pub : c.publisher_stats) {
    transits.push_back(pub.transit);
    upstream_lost += pub.upstream_lost;
  }
  fill_summary(s.age, pooled(ages));
  fill_summary(s.transit, pooled(transits));
  s.upstream_lost = upstream_lost;
  // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
  static_cast<void>(statistics_.publish(s));
}

AlertmanagerWebhook::AlertmanagerWebhook(const std::string& url, std::string domain, std::chrono::seconds resend)
    : url_(parse_http_url(url)), domain_(std::move(domain)), resend_(resend), thread_([this] { worker(); }) {}

AlertmanagerWebhook::~AlertmanagerWebhook() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string AlertmanagerWebhook::body_for(const Transition& t, const std::string& domain, const std::string& starts_at,
                                          const std::string& ends_at) {
  // Alertmanager API v2, postableAlerts: an array of {labels, annotations,
  // startsAt, endsAt, generatorURL}. `t` is the transition that fired the
  // alert; a resolve repeats it with endsAt, so the labels match.
  nlohmann::json alert;
  alert["labels"] = {{"alertname", "ShmbusChannelFrequency"},
                     {"domain", domain},
                     {"channel", t.channel},
                     {"severity", severity(t.new_level)}};
  alert["annotations"] = {
      {"summary", fmt::format("{} is {} at {:.3f} Hz", t.channel, to_string(t.new_level), t.frequency_hz)},
      {"description", fmt::format("channel {} in domain {}: level {} -> {}, frequency {:.3f} Hz over {} s, thresholds "
                                  "f1={} f2={} f3={} Hz",
                                  t.channel, domain, to_string(t.old_level), to_string(t.new_level), t.frequency_hz,
                                  static_cast<double>(t.window_ns) / 1e9, t.thresholds_hz[0], t.thresholds_hz[1],
                                  t.thresholds_hz[2])}};
  alert["startsAt"] = starts_at;
  if (!ends_at.empty()) alert["endsAt"] = ends_at;
  alert["generatorURL"] = "http://localhost/shmbusd";
  return nlohmann::json::array({alert}).dump();
}

void AlertmanagerWebhook::notify(const Transition& t) {
  const std::string now = rfc3339_now();
  const auto it = firing_.find(t.channel);
  if (it != firing_.end()) {
    // Resolve the alert of the old severity.
    post(body_for(it->second.first, domain_, it->second.second, now));
    firing_.erase(it);
  }
  if (t.new_level == Level::kDegraded || t.new_level == Level::kCritical) {
    firing_[t.channel] = {t, now};
    post(body_for(t, domain_, now, ""));
  }
}

void AlertmanagerWebhook::tick() {
  if (std::chrono::steady_clock::now() - last_resend_ < resend_) return;
  last_resend_ = std::chrono::steady_clock::now();
  for (const auto& [channel, f] : firing_) post(body_for(f.first, domain_, f.second, ""));
}

void AlertmanagerWebhook::post(std::string body) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= 1000) {
      queue_.pop_front();  // a receiver that is gone for long: keep the newest
      failures_.fetch_add(1);
    }
    queue_.push_back(std::move(body));
  }
  cv_.notify_one();
}

void AlertmanagerWebhook::worker() {
  for (;;) {
    std::string body;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      body = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      const auto [status, reply] = http_request(url_, "POST", body, "application/json");
      if (status / 100 != 2) {
        failures_.fetch_add(1);
        spdlog::warn("webhook {}:{}{} answered {}: {}", url_.host, url_.port, url_.target, status, reply);
      }
    } catch (const std::exception& e) {
      failures_.fetch_add(1);
      spdlog::warn("webhook: {}", e.what());
    }
  }
}

}  // namespace shmbus::shmbusd
