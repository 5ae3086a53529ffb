#include "web.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "shmbus/bus_channels.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/monitor/json.hpp"
#include "shmbus/names.hpp"

namespace shmbus::shmbusd {

using monitor::ChannelStatus;
using json = nlohmann::ordered_json;

namespace {

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

/// What the module graph is made of (channels, types, endpoints' nodes),
/// hashed (FNV-1a): the page fetches /api/graph again only when it changes.
struct GraphKey {
  std::uint64_t value = 14695981039346656037ULL;
  void add(std::string_view s) {
    for (const char ch : s) value = (value ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    value = (value ^ 0xffU) * 1099511628211ULL;  // a separator: "ab","c" is not "a","bc"
  }
  void add(const ChannelStatus& c) {
    add(c.name);
    add(c.type_name);
    for (const monitor::PublisherStatus& p : c.publisher_stats) add(p.node);
    add("|");
    for (const monitor::SubscriberStatus& s : c.subscriber_stats) add(s.node);
  }
};

void write_optional(std::string& out, const std::optional<std::uint64_t>& v) {
  if (v) {
    fmt::format_to(std::back_inserter(out), "{}", *v);
  } else {
    out += "null";
  }
}

/// "endpoints": {...}; returns the slowest subscriber's unread count.
std::optional<std::uint64_t> write_endpoints(std::string& out, const ChannelStatus& c) {
  out += ",\"endpoints\":{\"publishers\":[";
  for (std::size_t i = 0; i < c.publisher_stats.size(); ++i) {
    const monitor::PublisherStatus& p = c.publisher_stats[i];
    out += i == 0 ? "{\"node\":" : ",{\"node\":";
    monitor::write_json_string(out, p.node);
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"published\":{}}}", p.pid, p.published);
  }
  out += "],\"subscribers\":[";
  std::optional<std::uint64_t> slowest;
  for (std::size_t i = 0; i < c.subscriber_stats.size(); ++i) {
    const monitor::SubscriberStatus& s = c.subscriber_stats[i];
    out += i == 0 ? "{\"node\":" : ",{\"node\":";
    monitor::write_json_string(out, s.node);
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"received\":{},\"lost\":{},\"unread\":", s.pid, s.received,
                   s.lost);
    write_optional(out, s.unread);
    out += "}";
    if (s.unread) slowest = std::max(slowest.value_or(0), *s.unread);
  }
  out += "]}";
  return slowest;
}

void write_thresholds(std::string& out, const std::optional<std::array<double, 3>>& t) {
  if (t) {
    for (std::size_t i = 0; i < 3; ++i) {
      out += i == 0 ? "[" : ",";
      monitor::write_json_number(out, (*t)[i]);
    }
    out += "]";
  } else {
    out += "null";
  }
}

}  // namespace

void WebState::add_alerts(const std::vector<monitor::Transition>& transitions, std::int64_t unix_ns) {
  for (const monitor::Transition& t : transitions) {
    alerts_.push_front(Alert{unix_ns, t});
    ++alerts_total_;
    if (alerts_.size() > kMaxAlerts) alerts_.pop_back();
  }
}

void WebState::sample(const std::vector<ChannelStatus>& statuses, std::int64_t now_ns) {
  std::map<std::string, History, std::less<>> next;
  for (const ChannelStatus& c : statuses) {
    auto it = history_.find(c.name);
    History h = it != history_.end() ? std::move(it->second) : History{};
    const auto rate = static_cast<float>(
        std::isfinite(c.measure.frequency_hz) ? c.measure.frequency_hz : std::numeric_limits<float>::quiet_NaN());
    if (h.samples.size() < kHistorySamples) {
      h.samples.push_back(rate);
    } else {
      h.samples[h.next] = rate;
      h.next = (h.next + 1) % kHistorySamples;
    }
    next.emplace(c.name, std::move(h));
  }
  history_ = std::move(next);
  ++samples_taken_;
  next_sample_ns_ = now_ns + kHistoryPeriodNs;
}

std::string WebState::channels(const std::string& domain, const std::vector<ChannelStatus>& statuses,
                               std::int64_t now_ns, std::int64_t unix_ns) const {
  std::string out;
  out.reserve(512 * statuses.size() + 256);
  out += "{\"domain\":";
  monitor::write_json_string(out, domain);
  out += ",\"time_unix_s\":";
  monitor::write_json_number(out, seconds(unix_ns));
  out += ",\"channels\":[";
  std::size_t alerting = 0;
  std::size_t critical = 0;
  GraphKey graph;
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const ChannelStatus& c = statuses[i];
    graph.add(c);
    out += i == 0 ? "{" : ",{";
    monitor::write_channel_members(out, c, c.level);
    out += ",\"thresholds_hz\":";
    write_thresholds(out, c.thresholds_hz);
    out += ",\"window_s\":";
    monitor::write_json_number(out, seconds(c.window_ns));
    const std::optional<std::uint64_t> unread = write_endpoints(out, c);
    out += ",\"unread\":";
    write_optional(out, unread);
    out += ",\"last_age_s\":";
    monitor::write_json_number(out, c.last_stamp_ns != 0 ? seconds(std::max<std::int64_t>(0, now_ns - c.last_stamp_ns))
                                                         : std::numeric_limits<double>::quiet_NaN());
    out += ",\"service\":";
    const std::string service = service_of_channel(c.name);
    if (service.empty()) {
      out += "null";
    } else {
      monitor::write_json_string(out, service);
    }
    out += ",\"rate_sample\":";
    const auto h = history_.find(c.name);
    const bool sampled = h != history_.end() && !h->second.samples.empty();
    monitor::write_json_number(
        out, sampled ? h->second.samples[(h->second.next + h->second.samples.size() - 1) % h->second.samples.size()]
                     : std::numeric_limits<double>::quiet_NaN());
    out += "}";
    if (c.level == monitor::Level::kDegraded || c.level == monitor::Level::kCritical) ++alerting;
    if (c.level == monitor::Level::kCritical) ++critical;
  }
  fmt::format_to(std::back_inserter(out),
                 "],\"alerting\":{},\"critical\":{},\"alerts_total\":{},\"history_seq\":{},\"graph_key\":\"{:016x}\","
                 "\"history_period_s\":",
                 alerting, critical, alerts_total_, samples_taken_, graph.value);
  monitor::write_json_number(out, seconds(kHistoryPeriodNs));
  out += "}";
  return out;
}

json WebState::alerts() const {
  json out = json::array();
  for (const Alert& a : alerts_) {
    const monitor::Transition& t = a.transition;
    out.push_back({{"time_unix_s", seconds(a.unix_ns)},
                   {"channel", t.channel},
                   {"old_level", monitor::to_string(t.old_level)},
                   {"new_level", monitor::to_string(t.new_level)},
                   {"rate_hz", monitor::json_number(t.frequency_hz)},
                   {"thresholds_hz", monitor::thresholds_json(t.thresholds_hz)},
                   {"window_s", seconds(t.window_ns)}});
  }
  return {{"alerts", std::move(out)}, {"total", alerts_total_}, {"kept", kMaxAlerts}};
}

json WebState::history() const {
  json channels = json::object();
  for (const auto& [name, h] : history_) {
    json samples = json::array();
    const std::size_t n = h.samples.size();
    const std::size_t first = n < kHistorySamples ? 0 : h.next;
    for (std::size_t i = 0; i < n; ++i) samples.push_back(monitor::json_number(h.samples[(first + i) % n]));
    channels[name] = std::move(samples);
  }
  return {{"period_s", seconds(kHistoryPeriodNs)}, {"seq", samples_taken_}, {"channels", std::move(channels)}};
}

nlohmann::json WebState::graph(const std::vector<ChannelStatus>& statuses) {
  lineage::Graph g;
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> modules;  // reads, writes
  std::map<std::pair<std::string, std::string>, std::uint64_t> written;                    // (module, channel)
  std::map<std::pair<std::string, std::string>, std::uint64_t> read;                       // (channel, module)
  for (const ChannelStatus& c : statuses) {
    if (is_bus_channel(c.name)) continue;
    lineage::ChannelNode node{c.name, c.type_name, {}, {}, c.messages};
    std::set<std::string> writers;
    std::set<std::string> readers;
    for (const monitor::PublisherStatus& p : c.publisher_stats) {
      if (p.node.empty()) continue;
      writers.insert(p.node);
      modules[p.node].second.insert(c.name);
      written[{p.node, c.name}] += p.published;
    }
    for (const monitor::SubscriberStatus& s : c.subscriber_stats) {
      if (s.node.empty()) continue;
      readers.insert(s.node);
      modules[s.node].first.insert(c.name);
      read[{c.name, s.node}] += s.received;
    }
    node.writers.assign(writers.begin(), writers.end());
    node.readers.assign(readers.begin(), readers.end());
    g.channels.push_back(std::move(node));
  }
  for (auto& [name, rw] : modules) {
    g.modules.push_back({name, {rw.first.begin(), rw.first.end()}, {rw.second.begin(), rw.second.end()}});
  }
  for (const auto& [key, n] : written) g.edges.push_back({key.first, key.second, true, n});
  for (const auto& [key, n] : read) g.edges.push_back({key.first, key.second, false, n});
  std::tie(g.order, g.cycles) = lineage::order_modules(g.modules);
  return g.json();
}

}  // namespace shmbus::shmbusd
