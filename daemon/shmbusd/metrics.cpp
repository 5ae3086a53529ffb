#include "metrics.hpp"

#include <fmt/format.h>

#include <cmath>

namespace shmbus::daemon {
namespace {

using monitor::SubscriberStatus;
using monitor::Summary;

/// Escapes a label value: backslash, double quote and newline.
std::string escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

class Writer {
 public:
  explicit Writer(const std::string& domain) : domain_(escape(domain)) {}

  void family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const char* name, std::string_view channel, double value, const std::string& extra = "") {
    out_ +=
        fmt::format("{}{{domain=\"{}\",channel=\"{}\"{}}} {}\n", name, domain_, escape(channel), extra, number(value));
  }
  void plain(const char* name, double value) {
    out_ += fmt::format("{}{{domain=\"{}\"}} {}\n", name, domain_, number(value));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string domain_;
  std::string out_;
};

template <typename F>
void for_channels(const std::vector<ChannelStatus>& cs, F f) {
  for (const ChannelStatus& c : cs) f(c);
}

}  // namespace

std::string render_metrics(const std::string& domain, const std::vector<ChannelStatus>& channels,
                           const DaemonFigures& daemon) {
  Writer w(domain);
  w.family("shmbus_channel_frequency_hz", "gauge", "Message frequency over the channel's window, f=(n-1)/(Tn-T1).");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_frequency_hz", c.name, c.measure.frequency_hz);
  });
  w.family("shmbus_channel_alert_level", "gauge",
           "Believed alert level: 0 unmonitored, 1 nominal, 2 degraded, 3 critical.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_alert_level", c.name, static_cast<double>(c.level));
  });
  w.family("shmbus_channel_threshold_hz", "gauge", "Configured frequency thresholds f1 < f2 < f3.");
  for_channels(channels, [&](const ChannelStatus& c) {
    if (!c.thresholds_hz) return;
    for (int i = 0; i < 3; ++i) {
      w.sample("shmbus_channel_threshold_hz", c.name, (*c.thresholds_hz)[static_cast<std::size_t>(i)],
               fmt::format(",bound=\"f{}\"", i + 1));
    }
  });
  w.family("shmbus_channel_window_seconds", "gauge", "The frequency window W.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_window_seconds", c.name, static_cast<double>(c.window_ns) / 1e9);
  });
  w.family("shmbus_channel_window_stamps", "gauge", "Time-list stamps inside the window (n).");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_window_stamps", c.name, static_cast<double>(c.measure.n));
  });
  w.family("shmbus_channel_time_list_truncated", "gauge",
           "1 when the time list wrapped past stamps still inside the window (it is too small for W).");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_time_list_truncated", c.name, c.measure.truncated ? 1 : 0);
  });
  w.family("shmbus_channel_messages_total", "counter", "Messages published into the channel.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_messages_total", c.name, static_cast<double>(c.messages));
  });
  w.family("shmbus_channel_lost_messages_total", "counter", "Messages lost by the channel's subscribers.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_lost_messages_total", c.name, static_cast<double>(c.lost));
  });
  w.family("shmbus_channel_publishers", "gauge", "Live publishers.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_publishers", c.name, static_cast<double>(c.publishers));
  });
  w.family("shmbus_channel_subscribers", "gauge", "Live subscribers.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_subscribers", c.name, static_cast<double>(c.subscribers));
  });
  w.family("shmbus_channel_period_seconds", "gauge",
           "Time between consecutive publishes over the window: mean, min, max, stddev (NaN without samples).");
  for_channels(channels, [&](const ChannelStatus& c) {
    const Summary& p = c.measure.period;
    w.sample("shmbus_channel_period_seconds", c.name, p.mean, ",stat=\"mean\"");
    w.sample("shmbus_channel_period_seconds", c.name, p.min, ",stat=\"min\"");
    w.sample("shmbus_channel_period_seconds", c.name, p.max, ",stat=\"max\"");
    w.sample("shmbus_channel_period_seconds", c.name, p.stddev, ",stat=\"stddev\"");
  });
  w.family("shmbus_channel_period_samples", "gauge", "Periods the period statistics were computed from.");
  for_channels(channels, [&](const ChannelStatus& c) {
    w.sample("shmbus_channel_period_samples", c.name, static_cast<double>(c.measure.period.count));
  });
  w.family("shmbus_subscriber_age_seconds", "gauge",
           "Message age (take time - publish time) per subscriber over the last statistics window.");
  for_channels(channels, [&](const ChannelStatus& c) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      const std::string who = fmt::format(",node=\"{}\",pid=\"{}\"", escape(s.node), s.pid);
      w.sample("shmbus_subscriber_age_seconds", c.name, s.age.mean, ",stat=\"mean\"" + who);
      w.sample("shmbus_subscriber_age_seconds", c.name, s.age.min, ",stat=\"min\"" + who);
      w.sample("shmbus_subscriber_age_seconds", c.name, s.age.max, ",stat=\"max\"" + who);
      w.sample("shmbus_subscriber_age_seconds", c.name, s.age.stddev, ",stat=\"stddev\"" + who);
    }
  });
  w.family("shmbus_subscriber_received_total", "counter", "Messages a subscriber took.");
  for_channels(channels, [&](const ChannelStatus& c) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      w.sample("shmbus_subscriber_received_total", c.name, static_cast<double>(s.received),
               fmt::format(",node=\"{}\",pid=\"{}\"", escape(s.node), s.pid));
    }
  });
  w.family("shmbus_subscriber_lost_total", "counter", "Messages a subscriber lost (overwritten or torn).");
  for_channels(channels, [&](const ChannelStatus& c) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      w.sample("shmbus_subscriber_lost_total", c.name, static_cast<double>(s.lost),
               fmt::format(",node=\"{}\",pid=\"{}\"", escape(s.node), s.pid));
    }
  });
  w.family("shmbus_daemon_scan_duration_seconds", "gauge", "How long the last scan of all channels took.");
  w.plain("shmbus_daemon_scan_duration_seconds", daemon.last_scan_seconds);
  w.family("shmbus_daemon_scans_total", "counter", "Scans done since the daemon started.");
  w.plain("shmbus_daemon_scans_total", static_cast<double>(daemon.scans));
  w.family("shmbus_daemon_channels", "gauge", "Channels the daemon watches.");
  w.plain("shmbus_daemon_channels", static_cast<double>(channels.size()));
  w.family("shmbus_daemon_alert_transitions_total", "counter", "Believed level transitions since the daemon started.");
  w.plain("shmbus_daemon_alert_transitions_total", static_cast<double>(daemon.transitions));
  w.family("shmbus_daemon_webhook_failures_total", "counter", "Webhook deliveries that failed.");
  w.plain("shmbus_daemon_webhook_failures_total", static_cast<double>(daemon.webhook_failures));
  return w.take();
}

}  // namespace shmbus::daemon
