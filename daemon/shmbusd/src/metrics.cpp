#include "shmbus/shmbusd/metrics.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

namespace shmbus::shmbusd {
namespace {

using monitor::PublisherStatus;
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

/// One metric with one sample per channel (and per label set `extra`).
struct ChannelMetric {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const ChannelStatus&);
};

const ChannelMetric kChannelMetrics[] = {
    {"shmbus_channel_frequency_hz", "gauge", "Message frequency over the channel's window, f=(n-1)/(Tn-T1).",
     [](const ChannelStatus& c) { return c.measure.frequency_hz; }},
    {"shmbus_channel_alert_level", "gauge", "Believed alert level: 0 unmonitored, 1 nominal, 2 degraded, 3 critical.",
     [](const ChannelStatus& c) { return static_cast<double>(c.level); }},
    {"shmbus_channel_threshold_hz", "gauge", "Configured frequency thresholds f1 < f2 < f3.", nullptr},
    {"shmbus_channel_window_seconds", "gauge", "The frequency window W.",
     [](const ChannelStatus& c) { return static_cast<double>(c.window_ns) / 1e9; }},
    {"shmbus_channel_window_stamps", "gauge", "Time-list stamps inside the window (n).",
     [](const ChannelStatus& c) { return static_cast<double>(c.measure.n); }},
    {"shmbus_channel_time_list_truncated", "gauge",
     "1 when the time list wrapped past stamps still inside the window (it is too small for W).",
     [](const ChannelStatus& c) { return c.measure.truncated ? 1.0 : 0.0; }},
    {"shmbus_channel_messages_total", "counter", "Messages published into the channel.",
     [](const ChannelStatus& c) { return static_cast<double>(c.messages); }},
    {"shmbus_channel_lost_messages_total", "counter", "Messages lost by the channel's subscribers.",
     [](const ChannelStatus& c) { return static_cast<double>(c.lost); }},
    {"shmbus_channel_publishers", "gauge", "Live publishers.",
     [](const ChannelStatus& c) { return static_cast<double>(c.publishers); }},
    {"shmbus_channel_subscribers", "gauge", "Live subscribers.",
     [](const ChannelStatus& c) { return static_cast<double>(c.subscribers); }},
};

/// The four statistics of a Summary as samples labelled stat="...".
void summary_samples(Writer& w, const char* name, std::string_view channel, const Summary& s,
                     const std::string& extra = "") {
  w.sample(name, channel, s.mean, ",stat=\"mean\"" + extra);
  w.sample(name, channel, s.min, ",stat=\"min\"" + extra);
  w.sample(name, channel, s.max, ",stat=\"max\"" + extra);
  w.sample(name, channel, s.stddev, ",stat=\"stddev\"" + extra);
}

void channel_metrics(Writer& w, const std::vector<ChannelStatus>& channels) {
  for (const ChannelMetric& m : kChannelMetrics) {
    w.family(m.name, m.type, m.help);
    for (const ChannelStatus& c : channels) {
      if (m.value != nullptr) {
        w.sample(m.name, c.name, m.value(c));
      } else if (c.thresholds_hz) {  // the thresholds: one sample per bound
        for (std::size_t i = 0; i < 3; ++i) {
          w.sample(m.name, c.name, (*c.thresholds_hz)[i], fmt::format(",bound=\"f{}\"", i + 1));
        }
      }
    }
  }
  w.family("shmbus_channel_period_seconds", "gauge",
           "Time between consecutive publishes over the window: mean, min, max, stddev (NaN without samples).");
  for (const ChannelStatus& c : channels) summary_samples(w, "shmbus_channel_period_seconds", c.name, c.measure.period);
  w.family("shmbus_channel_period_samples", "gauge", "Periods the period statistics were computed from.");
  for (const ChannelStatus& c : channels) {
    w.sample("shmbus_channel_period_samples", c.name, static_cast<double>(c.measure.period.count));
  }
}

void subscriber_metrics(Writer& w, const std::vector<ChannelStatus>& channels) {
  const auto who = [](const SubscriberStatus& s) {
    return fmt::format(",node=\"{}\",pid=\"{}\"", escape(s.node), s.pid);
  };
  w.family("shmbus_subscriber_age_seconds", "gauge",
           "Message age (take time - publish time) per subscriber over the last statistics period.");
  for (const ChannelStatus& c : channels) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      summary_samples(w, "shmbus_subscriber_age_seconds", c.name, s.age, who(s));
    }
  }
  w.family("shmbus_subscriber_received_total", "counter", "Messages a subscriber took.");
  for (const ChannelStatus& c : channels) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      w.sample("shmbus_subscriber_received_total", c.name, static_cast<double>(s.received), who(s));
    }
  }
  w.family("shmbus_subscriber_lost_total", "counter", "Messages a subscriber lost (overwritten or torn).");
  for (const ChannelStatus& c : channels) {
    for (const SubscriberStatus& s : c.subscriber_stats) {
      w.sample("shmbus_subscriber_lost_total", c.name, static_cast<double>(s.lost), who(s));
    }
  }
}

void publisher_metrics(Writer& w, const std::vector<ChannelStatus>& channels) {
  const auto who = [](const PublisherStatus& p) {
    return fmt::format(",node=\"{}\",pid=\"{}\"", escape(p.node), p.pid);
  };
  w.family("shmbus_publisher_published_total", "counter", "Messages a publisher published.");
  for (const ChannelStatus& c : channels) {
    for (const PublisherStatus& p : c.publisher_stats) {
      w.sample("shmbus_publisher_published_total", c.name, static_cast<double>(p.published), who(p));
    }
  }
  w.family("shmbus_publisher_upstream_lost_total", "counter",
           "Messages lost before they reached a publisher (a gateway's import: lost between the hosts).");
  for (const ChannelStatus& c : channels) {
    for (const PublisherStatus& p : c.publisher_stats) {
      w.sample("shmbus_publisher_upstream_lost_total", c.name, static_cast<double>(p.upstream_lost), who(p));
    }
  }
  w.family("shmbus_publisher_blocked_seconds_total", "counter",
           "Time a publisher of an overflow = block channel spent waiting for its slowest subscriber.");
  for (const ChannelStatus& c : channels) {
    for (const PublisherStatus& p : c.publisher_stats) {
      w.sample("shmbus_publisher_blocked_seconds_total", c.name, static_cast<double>(p.blocked_ns) / 1e9, who(p));
    }
  }
  w.family("shmbus_publisher_block_timeouts_total", "counter",
           "Waits of a publisher of an overflow = block channel that reached block_timeout (the subscribers holding "
           "it up were overtaken and count what they lose).");
  for (const ChannelStatus& c : channels) {
    for (const PublisherStatus& p : c.publisher_stats) {
      w.sample("shmbus_publisher_block_timeouts_total", c.name, static_cast<double>(p.block_timeouts), who(p));
    }
  }
  w.family("shmbus_publisher_transit_seconds", "gauge",
           "Transit from another host (receive time - the origin's publish time) per gateway publisher over the "
           "last statistics period (NaN for local publishers).");
  for (const ChannelStatus& c : channels) {
    for (const PublisherStatus& p : c.publisher_stats) {
      summary_samples(w, "shmbus_publisher_transit_seconds", c.name, p.transit, who(p));
    }
  }
}

void daemon_metrics(Writer& w, std::size_t channels, const DaemonFigures& daemon) {
  const std::pair<std::array<const char*, 3>, double> figures[] = {
      {{"shmbus_daemon_scan_duration_seconds", "gauge", "How long the last scan of all channels took."},
       daemon.last_scan_seconds},
      {{"shmbus_daemon_scans_total", "counter", "Scans done since the daemon started."},
       static_cast<double>(daemon.scans)},
      {{"shmbus_daemon_channels", "gauge", "Channels the daemon watches."}, static_cast<double>(channels)},
      {{"shmbus_daemon_alert_transitions_total", "counter", "Believed level transitions since the daemon started."},
       static_cast<double>(daemon.transitions)},
      {{"shmbus_daemon_webhook_failures_total", "counter", "Webhook deliveries that failed."},
       static_cast<double>(daemon.webhook_failures)},
      {{"shmbus_daemon_web_streams", "gauge", "Web pages (event streams) open now."},
       static_cast<double>(daemon.web_streams)},
      {{"shmbus_daemon_web_events_skipped_total", "counter",
        "Page updates not sent to a page still receiving the previous one (a slow client)."},
       static_cast<double>(daemon.web_events_skipped)},
  };
  for (const auto& [family, value] : figures) {
    w.family(family[0], family[1], family[2]);
    w.plain(family[0], value);
  }
}

}  // namespace

std::string render_metrics(const std::string& domain, const std::vector<ChannelStatus>& channels,
                           const DaemonFigures& daemon) {
  Writer w(domain);
  channel_metrics(w, channels);
  subscriber_metrics(w, channels);
  publisher_metrics(w, channels);
  daemon_metrics(w, channels.size(), daemon);
  return w.take();
}

}  // namespace shmbus::shmbusd
