// The read-only commands: list, info, stats, alerts, top, clean, find. Rates,
// levels and statistics come from the daemon library's Monitor in observer
// role, so shmtool measures exactly as shmbusd does, from the time lists,
// without subscribing and without disturbing the daemon.
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/bus_channels.hpp"
#include "shmbus/error.hpp"
#include "shmbus/monitor/config_report.hpp"
#include "shmbus/monitor/daemon_info.hpp"
#include "shmbus/monitor/frequency.hpp"
#include "shmbus/monitor/json.hpp"
#include "shmbus/monitor/listing.hpp"
#include "shmbus/monitor/monitor.hpp"
#include "shmbus/names.hpp"

namespace shmbus::tool {

using monitor::ChannelStatus;
using monitor::Level;
using monitor::Monitor;
using monitor::MonitorConfig;
using monitor::thresholds_json;
using schema::Json;

namespace {

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

Table channel_table(const std::vector<ChannelStatus>& channels, bool debounced, bool colour) {
  Table t({"CHANNEL", "TYPE", "TRANSPORT", "PUBS>", "SUBS>", "RATE>", "LEVEL", "MESSAGES>", "LOST>"});
  for (const ChannelStatus& c : channels) {
    const Level level = debounced ? c.level : c.observed;
    t.add({c.name, c.type_name, std::string{to_string(c.transport)}, std::to_string(c.publishers),
           std::to_string(c.subscribers), human_rate(c.measure.frequency_hz),
           level == Level::kUnmonitored ? "-" : coloured_level(level, colour), human_count(c.messages),
           human_count(c.lost)});
  }
  return t;
}

Json summary_json(const monitor::Summary& s) {
  return Json{{"mean_s", json_number(s.mean)},
              {"min_s", json_number(s.min)},
              {"max_s", json_number(s.max)},
              {"std_dev_s", json_number(s.stddev)},
              {"count", s.count}};
}

/// A subscriber's mean message age since it started, NaN before a sample.
double age_mean_s(const introspect::EndpointView& e) {
  return e.age_samples ? static_cast<double>(e.age_sum_ns) / static_cast<double>(e.age_samples) / 1e9 : std::nan("");
}

}  // namespace

int run_list(const Globals& g) {
  const MonitorConfig loaded = load_monitor_config(g);
  const Config& config = loaded.config;
  Monitor monitor(config, loaded.monitor, Monitor::Role::kObserver);
  // Channels listed but unusable (corrupt, another user's) are rows too,
  // with the reason: hiding them would hide the problem. So is a stored
  // schema that is refused (echo, the bridge and the recorder skip it).
  const monitor::Listing listing = monitor::list_domain(monitor);
  if (g.json) {
    print_json(listing.json());
    return 0;
  }
  const auto& [channels, unreadable, refused] = listing;
  if (channels.empty() && unreadable.empty()) {
    print(fmt::format("no channels in domain \"{}\"\n", config.domain));
    return 0;
  }
  Table t = channel_table(channels, false, colour_stdout());
  for (const auto& [name, why] : unreadable) t.add({name, "?", "?", "-", "-", "-", "UNREADABLE", "-", "-"});
  print(t.render());
  for (const auto& [name, why] : unreadable) print(fmt::format("warning: {}: {}\n", name, why));
  for (const auto& [name, why] : refused)
    print(fmt::format("warning: {}: its stored schema is refused: {}\n", name, why));
  if (const auto daemon = monitor::find_daemon(config); daemon && !daemon->web.empty()) {
    print(fmt::format("live in a browser: {} (shmbusd, pid {})\n", daemon->web, daemon->pid));
  }
  return 0;
}

namespace {

/// What `info` shows of a channel: its view, and its rate and level now
/// under the configuration's settings for it.
struct InfoFacts {
  const Config& config;
  const introspect::ChannelView& view;
  const ChannelSettings& settings;
  const monitor::WindowMeasure& measure;
  Level level;
};

/// overflow = block: messages published that subscriber `e` has not taken.
std::uint64_t unread(const introspect::ChannelView& v, const introspect::EndpointView& e) {
  return e.read_cursor < v.messages ? v.messages - e.read_cursor : 0;
}

Json endpoints_json(const introspect::ChannelView& v, bool publishers) {
  const bool blocking = v.overflow == Overflow::kBlock;
  Json out = Json::array();
  for (const auto& p : publishers ? v.publishers : v.subscribers) {
    Json e{{"id", p.id}, {"pid", p.pid}, {"node", p.node}, {"alive", p.alive}};
    if (publishers) {
      e["published"] = p.messages;
      e["dropped"] = p.dropped;
      e["inputs_cut"] = p.provenance_cut;
      // A gateway's import: what it lost between the hosts, and the transit.
      e["upstream_lost"] = p.upstream_lost;
      e["transit_mean_s"] = json_number(age_mean_s(p));
      e["transit_max_s"] = p.age_min_ns != UINT64_MAX ? Json(static_cast<double>(p.age_max_ns) / 1e9) : Json();
      if (blocking) {
        e["blocked_s"] = static_cast<double>(p.blocked_ns) / 1e9;
        e["block_timeouts"] = p.block_timeouts;
      }
    } else {
      e["received"] = p.messages;
      e["lost"] = p.lost;
      e["discarded"] = p.discarded;
      e["errors"] = p.errors;
      e["age_mean_s"] = json_number(age_mean_s(p));
      e["age_max_s"] = p.age_min_ns != UINT64_MAX ? Json(static_cast<double>(p.age_max_ns) / 1e9) : Json();
      if (blocking) e["unread"] = unread(v, p);
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// The distinct nodes (modules) of live endpoints, sorted.
std::vector<std::string> endpoint_nodes(const std::vector<introspect::EndpointView>& endpoints) {
  std::vector<std::string> nodes;
  for (const auto& e : endpoints) {
    if (e.alive && !e.node.empty()) nodes.push_back(e.node);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

Json info_json(const InfoFacts& f) {
  const introspect::ChannelView& v = f.view;
  Json j;
  j["name"] = v.name;
  j["domain"] = f.config.domain;
  j["type"] = v.type_name;
  j["type_hash"] = fmt::format("{:016x}", v.type_hash);
  j["transport"] = std::string{to_string(v.transport)};
  j["capacity"] = v.capacity;
  j["max_message_size"] = v.max_message_size;
  j["generation"] = v.generation;
  j["max_grow_size"] = v.max_grow_size;
  j["grows_refused"] = v.grows_refused;
  j["time_list_capacity"] = v.time_list_capacity;
  j["creator"] = {{"pid", v.creator_pid}, {"program", v.creator_program}};
  j["sizes_from"] = v.sizes_from;
  j["stall_timeout_s"] = seconds(v.stall_timeout_ns);
  j["overflow"] = std::string{to_string(v.overflow)};
  if (v.overflow == Overflow::kBlock) j["block_timeout_s"] = seconds(v.block_timeout_ns);
  j["window_s"] = seconds(f.settings.window.count());
  j["thresholds_hz"] = thresholds_json(f.settings.thresholds_hz);
  j["rate_hz"] = f.measure.frequency_hz;
  j["level"] = monitor::to_string(f.level);
  j["messages"] = v.messages;
  j["publish_dropped"] = v.publish_dropped;
  j["received"] = v.received;
  j["lost"] = v.lost;
  j["stamps"] = v.stamps;
  j["sleepers"] = v.sleepers;
  j["solo"] = v.solo;
  j["solo_closed"] = v.solo_closed;
  j["writer_modules"] = endpoint_nodes(v.publishers);
  j["reader_modules"] = endpoint_nodes(v.subscribers);
  j["publishers"] = endpoints_json(v, true);
  j["subscribers"] = endpoints_json(v, false);
  j["schema"] = v.schema;
  return j;
}

/// The key/value part of `info`: identity, geometry, rate, level, counters.
std::string info_summary(const InfoFacts& f, bool colour) {
  const introspect::ChannelView& v = f.view;
  const ChannelSettings& s = f.settings;
  const monitor::WindowMeasure& m = f.measure;
  Table t({"", ""});
  t.add({"channel", v.name});
  t.add({"domain", f.config.domain});
  t.add({"type", fmt::format("{} (hash {:016x})", v.type_name, v.type_hash)});
  t.add({"transport", std::string{to_string(v.transport)}});
  std::string growth = v.max_grow_size == 0 ? "; does not grow" : fmt::format("; grows up to {} B", v.max_grow_size);
  if (v.generation != 0) growth += fmt::format(" (generation {})", v.generation);
  if (v.grows_refused != 0) growth += fmt::format("; {} publishes refused growing", v.grows_refused);
  t.add({"ring", fmt::format("{} slots of at most {} B{}", v.capacity, v.max_message_size, growth)});
  t.add({"created by", fmt::format("{} (pid {}), sizes from {}", v.creator_program.empty() ? "?" : v.creator_program,
                                   v.creator_pid, v.sizes_from.empty() ? "the built-in defaults" : v.sizes_from)});
  std::string covers;
  if (m.frequency_hz > 0) {
    covers = fmt::format(" (covers {} at the current rate)",
                         human_seconds(static_cast<double>(v.time_list_capacity) / m.frequency_hz));
  }
  t.add({"time list", fmt::format("{} stamps{}", v.time_list_capacity, covers)});
  t.add({"stall timeout", format_duration(std::chrono::nanoseconds(v.stall_timeout_ns))});
  t.add({"overflow", v.overflow == Overflow::kBlock
                         ? fmt::format("block (publishers wait up to {} for the slowest subscriber)",
                                       format_duration(std::chrono::nanoseconds(v.block_timeout_ns)))
                         : std::string{"overwrite (the oldest message, lost to subscribers that did not take it)"}});
  t.add({"rate", fmt::format("{} over {} ({} stamps){}", human_rate(m.frequency_hz), format_duration(s.window), m.n,
                             m.truncated ? ", time list shorter than the window" : "")});
  t.add({"level", s.thresholds_hz ? fmt::format("{} ({}, window {}, from {})", coloured_level(f.level, colour),
                                                monitor::thresholds_text(s.thresholds_hz), format_duration(s.window),
                                                f.config.source)
                                  : fmt::format("unmonitored (no thresholds for {} in {})", v.name, f.config.source)});
  if (v.thresholds_hz != s.thresholds_hz || v.window_ns != s.window.count()) {
    t.add({"creator's", fmt::format("{}, window {}", monitor::thresholds_text(v.thresholds_hz),
                                    format_duration(std::chrono::nanoseconds(v.window_ns)))});
  }
  const auto modules = [](const std::vector<std::string>& nodes) {
    return nodes.empty() ? std::string{"-"} : fmt::format("{}", fmt::join(nodes, ", "));
  };
  t.add({"written by", modules(endpoint_nodes(v.publishers))});
  t.add({"read by", modules(endpoint_nodes(v.subscribers))});
  t.add({"published", fmt::format("{} ({} dropped by publishers)", v.messages - v.publish_dropped, v.publish_dropped)});
  t.add({"received", fmt::format("{} by all subscribers, {} lost", v.received, v.lost)});
  t.add({"asleep", fmt::format("{} subscriber{} in a blocking wait", v.sleepers, v.sleepers == 1 ? "" : "s")});
  t.add({"publish path", v.solo          ? "solo (one publisher, no locked instructions)"
                         : v.solo_closed ? "shared (never solo: a process here cannot use membarrier)"
                                         : "shared"});
  const std::string rendered = t.render();
  return rendered.substr(rendered.find('\n') + 1);  // no header line
}

/// The publisher and subscriber tables of `info`.
std::string info_endpoints(const introspect::ChannelView& v) {
  std::string out = fmt::format("publishers ({}):\n", v.publishers.size());
  if (!v.publishers.empty()) {
    // Gateways' imports (publishers with transit samples or upstream
    // losses) add what they lost between the hosts and the transit.
    const bool remote = std::any_of(v.publishers.begin(), v.publishers.end(),
                                    [](const auto& e) { return e.age_samples != 0 || e.upstream_lost != 0; });
    const bool blocking = v.overflow == Overflow::kBlock;
    std::vector<std::string> head{"ID>", "PID>", "NODE", "STATE", "PUBLISHED>", "DROPPED>", "INPUTS CUT>"};
    if (blocking) head.insert(head.end(), {"BLOCKED>", "TIMEOUTS>"});
    if (remote) head.insert(head.end(), {"LOST UPSTREAM>", "TRANSIT MEAN>", "TRANSIT MAX>"});
    Table p(head);
    for (const auto& e : v.publishers) {
      std::vector<std::string> row{std::to_string(e.id),
                                   std::to_string(e.pid),
                                   e.node,
                                   e.alive ? "alive" : "dead",
                                   std::to_string(e.messages),
                                   std::to_string(e.dropped),
                                   std::to_string(e.provenance_cut)};
      if (blocking) {
        row.insert(row.end(),
                   {human_seconds(static_cast<double>(e.blocked_ns) / 1e9), std::to_string(e.block_timeouts)});
      }
      if (remote) {
        row.insert(row.end(),
                   {std::to_string(e.upstream_lost), human_seconds(age_mean_s(e)),
                    e.age_min_ns != UINT64_MAX ? human_seconds(static_cast<double>(e.age_max_ns) / 1e9) : "-"});
      }
      p.add(row);
    }
    out += p.render(2);
  }
  out += fmt::format("subscribers ({}):\n", v.subscribers.size());
  if (!v.subscribers.empty()) {
    const bool blocking = v.overflow == Overflow::kBlock;
    std::vector<std::string> head{"ID>",   "PID>",       "NODE",    "STATE",     "RECEIVED>",
                                  "LOST>", "DISCARDED>", "ERRORS>", "AGE MEAN>", "AGE MAX>"};
    if (blocking) head.emplace_back("UNREAD>");
    Table p(head);
    for (const auto& e : v.subscribers) {
      std::vector<std::string> row{
          std::to_string(e.id),
          std::to_string(e.pid),
          e.node,
          e.alive ? "alive" : "dead",
          std::to_string(e.messages),
          std::to_string(e.lost),
          std::to_string(e.discarded),
          std::to_string(e.errors),
          human_seconds(age_mean_s(e)),
          e.age_min_ns != UINT64_MAX ? human_seconds(static_cast<double>(e.age_max_ns) / 1e9) : "-"};
      if (blocking) row.push_back(std::to_string(unread(v, e)));
      p.add(row);
    }
    out += p.render(2);
  }
  return out;
}

/// The schema text, indented.
std::string info_schema(std::string_view schema) {
  if (schema.empty()) return "";
  std::string out = "schema:\n";
  while (!schema.empty()) {
    const auto nl = schema.find('\n');
    out += "  ";
    out += schema.substr(0, nl);
    out += '\n';
    schema = nl == std::string_view::npos ? std::string_view{} : schema.substr(nl + 1);
  }
  return out;
}

}  // namespace

int run_info(const Globals& g, const std::string& channel) {
  const Config config = load_config(g);
  const introspect::ChannelReader reader = open_channel(config, channel);
  const introspect::ChannelView v = reader.view();
  introspect::TimeListSnapshot snap;
  reader.snapshot(snap);
  const ChannelSettings s = config.channel(channel);
  const monitor::WindowMeasure m =
      monitor::measure_window(snap.stamps, mono_now_ns(), s.window.count(), snap.total > snap.capacity);
  const InfoFacts facts{config, v, s, m, monitor::classify(m.frequency_hz, s.thresholds_hz)};
  if (g.json) {
    print_json(info_json(facts));
  } else {
    print(info_summary(facts, colour_stdout()) + info_endpoints(v) + info_schema(v.schema));
  }
  return 0;
}

int run_stats(const Globals& g, const StatsOptions& o) {
  const MonitorConfig loaded = load_monitor_config(g);
  const Config& config = loaded.config;
  if (o.channel) (void)open_channel(config, *o.channel);  // exit 3 when missing
  Monitor monitor(config, loaded.monitor, Monitor::Role::kObserver);
  std::vector<ChannelStatus> channels = monitor::observe(monitor);
  if (o.channel) {
    std::erase_if(channels, [&](const ChannelStatus& c) { return c.name != *o.channel; });
  }
  if (g.json) {
    Json out = Json::array();
    for (const ChannelStatus& c : channels) {
      Json subs = Json::array();
      for (const auto& s : c.subscriber_stats) {
        subs.push_back(Json{{"pid", s.pid},
                            {"node", s.node},
                            {"received", s.received},
                            {"lost", s.lost},
                            {"age", summary_json(s.age)}});
      }
      out.push_back(Json{{"channel", c.name},
                         {"rate_hz", c.measure.frequency_hz},
                         {"window_s", seconds(c.window_ns)},
                         {"period", summary_json(c.measure.period)},
                         {"subscribers", std::move(subs)}});
    }
    print_json(out);
    return 0;
  }
  if (channels.empty()) {
    print(fmt::format("no channels in domain \"{}\"\n", config.domain));
    return 0;
  }
  Table periods({"CHANNEL", "RATE>", "WINDOW>", "PERIOD MEAN>", "MIN>", "MAX>", "STD DEV>", "N>"});
  Table subs({"CHANNEL", "PID>", "NODE", "RECEIVED>", "LOST>", "AGE MEAN>", "AGE MIN>", "AGE MAX>", "AGE STD DEV>"});
  for (const ChannelStatus& c : channels) {
    const monitor::Summary& p = c.measure.period;
    periods.add({c.name, human_rate(c.measure.frequency_hz), format_duration(std::chrono::nanoseconds(c.window_ns)),
                 human_seconds(p.mean), human_seconds(p.min), human_seconds(p.max), human_seconds(p.stddev),
                 std::to_string(p.count)});
    for (const auto& s : c.subscriber_stats) {
      subs.add({c.name, std::to_string(s.pid), s.node, std::to_string(s.received), std::to_string(s.lost),
                human_seconds(s.age.mean), human_seconds(s.age.min), human_seconds(s.age.max),
                human_seconds(s.age.stddev)});
    }
  }
  std::string out = "message periods over each channel's window:\n" + periods.render(2);
  if (!subs.empty()) {
    out +=
        "subscribers (message age = take time - publish time; mean and std dev since the subscriber started, min "
        "and max since shmbusd's last statistics window):\n" +
        subs.render(2);
  }
  print(out);
  return 0;
}

int run_alerts(const Globals& g) {
  const MonitorConfig loaded = load_monitor_config(g);
  const Config& config = loaded.config;
  Monitor monitor(config, loaded.monitor, Monitor::Role::kObserver);
  std::vector<ChannelStatus> channels = monitor::observe(monitor);
  std::erase_if(channels, [](const ChannelStatus& c) { return !c.thresholds_hz; });
  // Worst first, then by name.
  std::stable_sort(channels.begin(), channels.end(),
                   [](const ChannelStatus& a, const ChannelStatus& b) { return a.observed > b.observed; });
  if (g.json) {
    Json out = Json::array();
    for (const ChannelStatus& c : channels) {
      out.push_back(Json{{"channel", c.name},
                         {"level", monitor::to_string(c.observed)},
                         {"rate_hz", c.measure.frequency_hz},
                         {"thresholds_hz", thresholds_json(c.thresholds_hz)},
                         {"window_s", seconds(c.window_ns)}});
    }
    print_json(out);
    return 0;
  }
  const bool colour = colour_stdout();
  std::string out;
  if (channels.empty()) {
    out = fmt::format("no monitored channels in domain \"{}\" (none has thresholds in {})\n", config.domain,
                      config.source);
  } else {
    Table t({"CHANNEL", "LEVEL", "RATE>", "F1>", "F2>", "F3>", "WINDOW>"});
    for (const ChannelStatus& c : channels) {
      const auto& th = *c.thresholds_hz;
      t.add({c.name, coloured_level(c.observed, colour), human_rate(c.measure.frequency_hz), fmt::format("{}", th[0]),
             fmt::format("{}", th[1]), fmt::format("{}", th[2]),
             format_duration(std::chrono::nanoseconds(c.window_ns))});
    }
    out = t.render();
  }
  const auto daemon = monitor::find_daemon(config);
  out += daemon ? fmt::format("shmbusd is running (pid {}); levels above are measured now, before its debounce{}\n",
                              daemon->pid, daemon->web.empty() ? "" : "; its history: " + daemon->web)
                : fmt::format("shmbusd is not running in domain \"{}\": levels measured here, thresholds from {}\n",
                              config.domain, config.source);
  print(out);
  return 0;
}

namespace {

/// Non-canonical, no-echo input while `top` runs; restored on every exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(STDIN_FILENO) != 1 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

/// A key pressed within `timeout_ms`, or 0.
char read_key(int timeout_ms) {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0 || (p.revents & POLLIN) == 0) return 0;
  char c = 0;
  return ::read(STDIN_FILENO, &c, 1) == 1 ? c : '\0';
}

void sort_for_top(std::vector<ChannelStatus>& channels, const std::string& key) {
  if (key == "name") return;  // statuses() are in name order
  std::stable_sort(channels.begin(), channels.end(), [&](const ChannelStatus& a, const ChannelStatus& b) {
    if (key == "level" && a.level != b.level) return a.level > b.level;
    return a.measure.frequency_hz > b.measure.frequency_hz;
  });
}

}  // namespace

int run_top(const Globals& g, const TopOptions& o) {
  const MonitorConfig loaded = load_monitor_config(g);
  const Config& config = loaded.config;
  install_stop_handlers();
  const bool interactive = ::isatty(STDOUT_FILENO) == 1;
  const bool colour = colour_stdout();
  RawTerminal terminal;
  Monitor monitor(config, loaded.monitor, Monitor::Role::kObserver);
  std::string sort = o.sort;
  const auto scan_period = std::max<std::int64_t>(loaded.monitor.scan_period.count(), 1'000'000);
  const auto interval = static_cast<std::int64_t>(o.interval_s * 1e9);
  std::int64_t next_draw = mono_now_ns();
  std::int64_t next_scan = next_draw;
  std::uint64_t drawn = 0;
  while (!stop_requested()) {
    const std::int64_t now = mono_now_ns();
    if (now >= next_scan) {
      (void)monitor.scan(now);  // every scan_period, so levels debounce as in shmbusd
      next_scan += scan_period;
      if (next_scan < now) next_scan = now + scan_period;
    }
    if (now >= next_draw) {
      monitor.refresh_statistics();
      std::vector<ChannelStatus> channels = monitor.statuses();
      sort_for_top(channels, sort);
      const std::size_t alerting = monitor.alerting_count();
      std::string screen = interactive ? "\033[H\033[2J" : (drawn != 0 ? "\n" : "");
      screen += fmt::format("shmtool top - domain {} - {} channels, {} alerting - sorted by {}{}\n", config.domain,
                            channels.size(), alerting, sort, interactive ? " (r rate, l level, n name, q quit)" : "");
      screen += channel_table(channels, true, colour).render();
      print(screen);
      ++drawn;
      if (o.iterations != 0 && drawn >= o.iterations) break;
      next_draw += interval;
      if (next_draw < now) next_draw = now + interval;
    }
    const std::int64_t wake = std::min(next_scan, next_draw);
    const int wait_ms = static_cast<int>(std::max<std::int64_t>(0, (wake - mono_now_ns()) / 1'000'000));
    switch (read_key(wait_ms)) {
      case 'q':
      case 'Q':
        return 0;
      case 'r':
        sort = "rate";
        next_draw = mono_now_ns();
        break;
      case 'l':
        sort = "level";
        next_draw = mono_now_ns();
        break;
      case 'n':
        sort = "name";
        next_draw = mono_now_ns();
        break;
      default:
        break;
    }
  }
  return 0;
}

int run_clean(const Globals& g, bool dry_run) {
  const Config config = load_config(g);
  const introspect::CleanReport r = introspect::clean_domain(config.domain, dry_run, config.access());
  if (g.json) {
    print_json(Json{{"domain", config.domain}, {"dry_run", dry_run}, {"removed", r.removed}, {"kept", r.kept}});
    return 0;
  }
  std::string out;
  for (const std::string& s : r.removed)
    out += fmt::format("{} /dev/shm/{}\n", dry_run ? "would remove" : "removed", s);
  for (std::size_t i = 0; i < r.kept.size(); ++i)
    out += fmt::format("kept /dev/shm/{} ({})\n", r.kept[i], r.kept_why[i]);
  out += r.removed.empty() ? fmt::format("nothing to remove in domain \"{}\"\n", config.domain)
                           : fmt::format("{} {} segment{} of domain \"{}\"\n", dry_run ? "would remove" : "removed",
                                         r.removed.size(), r.removed.size() == 1 ? "" : "s", config.domain);
  print(out);
  return 0;
}

int run_find(const Globals& g, const std::string& type) {
  const Config config = load_config(g);
  // ROS 2 spells a type pkg/msg/Type; either spelling finds it.
  const std::string wanted = schema::ros2_type_name(type);
  Json found = Json::array();
  for (const std::string& name : introspect::DomainView(config.domain, config.access()).channel_names()) {
    try {
      const introspect::ChannelView v = introspect::ChannelReader(config.domain, name, false, config.access()).view();
      if (schema::ros2_type_name(v.type_name) == wanted) found.push_back(name);
    } catch (const Error&) {
      // removed while listing, or unreadable (shmtool list names why)
    }
  }
  if (g.json) {
    print_json(found);
    return 0;
  }
  std::string out;
  for (const auto& name : found) out += name.get<std::string>() + "\n";
  print(out);
  return 0;
}

}  // namespace shmbus::tool
