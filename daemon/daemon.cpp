#include "daemon.hpp"

#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "shmbus/cli.hpp"
#include "http.hpp"
#include "metrics.hpp"
#include "monitor.hpp"
#include "outputs.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::daemon {

namespace {

bool under_systemd() { return std::getenv("NOTIFY_SOCKET") != nullptr || std::getenv("JOURNAL_STREAM") != nullptr; }

void setup_logging() {
  std::shared_ptr<spdlog::logger> logger;
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    logger = std::make_shared<spdlog::logger>("shmbusd", std::make_shared<spdlog::sinks::systemd_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>("shmbusd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

std::string thresholds_text(const std::optional<std::array<double, 3>>& t) {
  return t ? fmt::format("[{}, {}, {}] Hz", (*t)[0], (*t)[1], (*t)[2]) : std::string{"none (measured, not alerted)"};
}

std::string settings_text(const ChannelSettings& s) {
  return fmt::format("transport={} capacity={} max_message_size={} time_list_capacity={} window={} thresholds={}",
                     to_string(s.transport), s.capacity, s.max_message_size, s.time_list_capacity,
                     format_duration(s.window), thresholds_text(s.thresholds_hz));
}

void log_transition(const Transition& t) {
  const auto level = t.new_level == Level::kNominal    ? spdlog::level::info
                     : t.new_level == Level::kDegraded ? spdlog::level::warn
                                                       : spdlog::level::err;
  spdlog::log(level,
              "channel {}: level {} ({}) -> {} ({}), frequency {:.3f} Hz over {}, thresholds f1={} f2={} f3={} Hz",
              t.channel, static_cast<int>(t.old_level), to_string(t.old_level), static_cast<int>(t.new_level),
              to_string(t.new_level), t.frequency_hz, format_duration(std::chrono::nanoseconds(t.window_ns)),
              t.thresholds_hz[0], t.thresholds_hz[1], t.thresholds_hz[2]);
}

/// Sleeps until `deadline_ns` (CLOCK_MONOTONIC) or a signal of `set`.
/// Returns the signal, or 0 at the deadline.
int wait_for_signal(const sigset_t& set, std::int64_t deadline_ns) {
  const std::int64_t left = std::max<std::int64_t>(0, deadline_ns - mono_ns());
  const timespec timeout{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
  const int sig = ::sigtimedwait(&set, nullptr, &timeout);
  return sig > 0 ? sig : 0;
}

}  // namespace

Config load_config(const Options& options) {
  Config c;
  if (!options.config_path.empty()) {
    c = Config::load_file(options.config_path);
    if (const char* d = std::getenv("SHMBUS_DOMAIN"); d != nullptr && *d != '\0') {
      validate_domain_name(d);
      c.domain = d;
    }
  } else {
    c = Config::from_environment();
  }
  if (options.domain) {
    try {
      validate_domain_name(*options.domain);
    } catch (const Error& e) {
      throw Error(Errc::kConfig, std::string{"--domain: "} + e.what());
    }
    c.domain = *options.domain;
  }
  if (options.metrics_listen) c.monitor.metrics_listen = *options.metrics_listen;
  if (c.monitor.metrics_listen != "off") (void)parse_host_port(c.monitor.metrics_listen, "metrics_listen");
  if (!c.monitor.webhook.empty()) (void)parse_http_url(c.monitor.webhook);
  return c;
}

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> out;
  const auto check = [&](const ChannelSettings& s, const std::string& where, const std::string& what) {
    if (!s.thresholds_hz) return;
    const double needed = std::chrono::duration<double>(s.window).count() * (*s.thresholds_hz)[2];
    if (needed > static_cast<double>(s.time_list_capacity)) {
      out.push_back(
          fmt::format("{}: warning: {}: window {} at f3 = {} Hz needs {:.0f} stamps but time_list_capacity "
                      "is {}: the time list can never cover the window; raise time_list_capacity to {} or "
                      "shorten the window",
                      where.empty() ? config.source : where, what, format_duration(s.window), (*s.thresholds_hz)[2],
                      needed, s.time_list_capacity, std::bit_ceil(static_cast<std::uint64_t>(std::ceil(needed)))));
    }
  };
  check(config.defaults, config.defaults_where, "[defaults]");
  for (const ChannelRule& r : config.channels) check(config.channel(r.pattern), r.where, "channel " + r.pattern);
  return out;
}

std::string describe_config(const Config& config) {
  std::string out =
      fmt::format("{}: valid\ndomain = {}\nnode = {}\n[defaults] {}\n", config.source, config.domain,
                  config.node.empty() ? "(the program's name)" : config.node, settings_text(config.defaults));
  for (const ChannelRule& r : config.channels) {
    out += fmt::format("[[channel]] {} -> {}\n", r.pattern, settings_text(config.channel(r.pattern)));
  }
  const MonitorSettings& m = config.monitor;
  out += fmt::format("[monitor] scan_period={} debounce_scans={} metrics_listen={} statistics_period={} webhook={}\n",
                     format_duration(m.scan_period), m.debounce_scans, m.metrics_listen,
                     format_duration(m.statistics_period), m.webhook.empty() ? "none" : m.webhook);
  return out;
}

int run(const Options& options) {
  setup_logging();
  Config config = load_config(options);
  for (const std::string& w : config_warnings(config)) spdlog::warn("{}", w);
  const std::string domain = config.domain;
  const std::string listen = config.monitor.metrics_listen;

  std::mutex mutex;  // the monitor and the figures, between the loop and /metrics
  Monitor monitor(config);
  DaemonFigures figures;
  std::int64_t last_scan_ns = 0;

  Config bus_config = config;
  bus_config.node = "shmbusd";
  Context bus_context(bus_config);
  BusOutputs bus(bus_context);
  std::unique_ptr<AlertmanagerWebhook> webhook;
  if (!config.monitor.webhook.empty()) webhook = std::make_unique<AlertmanagerWebhook>(config.monitor.webhook, domain);

  std::unique_ptr<HttpServer> http;
  if (listen != "off") {
    const std::int64_t stale_after = 3 * config.monitor.scan_period.count();
    http = std::make_unique<HttpServer>(listen, [&, stale_after](const std::string& target) -> HttpResponse {
      std::lock_guard lock(mutex);
      if (target == "/metrics") {
        return {200, "text/plain; version=0.0.4; charset=utf-8", render_metrics(domain, monitor.statuses(), figures)};
      }
      if (target == "/healthz") {
        const bool fresh = last_scan_ns != 0 && mono_ns() - last_scan_ns < stale_after;
        return {fresh ? 200 : 503, "text/plain; charset=utf-8", fresh ? "ok\n" : "no recent scan\n"};
      }
      return {404, "text/plain; charset=utf-8", "try /metrics or /healthz\n"};
    });
    spdlog::info("serving /metrics and /healthz on {} (port {})", listen, http->port());
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);

  std::uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  std::int64_t next_watchdog = 0;
  bool ready = false;
  std::int64_t next_scan = mono_ns();
  std::int64_t next_statistics = next_scan + config.monitor.statistics_period.count();
  std::int64_t next_status = 0;
  spdlog::info("watching domain \"{}\": scan every {}, statistics every {}", domain,
               format_duration(config.monitor.scan_period), format_duration(config.monitor.statistics_period));

  for (;;) {
    const std::int64_t now = mono_ns();
    std::vector<Transition> transitions;
    std::vector<std::string> truncated;
    std::vector<std::pair<std::string, std::string>> unreadable;
    std::vector<ChannelStatus> statistics;
    {
      std::lock_guard lock(mutex);
      transitions = monitor.scan(now);
      figures.last_scan_seconds = static_cast<double>(mono_ns() - now) / 1e9;
      figures.scans++;
      figures.transitions += transitions.size();
      if (webhook) figures.webhook_failures = webhook->failures();
      last_scan_ns = now;
      truncated = monitor.take_truncation_warnings();
      for (const std::string& name : monitor.take_unreadable_warnings()) {
        unreadable.emplace_back(name, monitor.unreadable().at(name));
      }
      if (now >= next_statistics) {
        monitor.refresh_statistics();
        statistics = monitor.statuses();
        next_statistics += config.monitor.statistics_period.count();
        if (next_statistics <= now) next_statistics = now + config.monitor.statistics_period.count();
      }
    }
    for (const Transition& t : transitions) {
      log_transition(t);
      bus.publish_alert(t);
      if (webhook) webhook->notify(t);
    }
    for (const std::string& name : truncated) {
      spdlog::warn(
          "channel {}: the time list wrapped inside the {} window: it is too small for the channel's rate; "
          "the frequency is computed from the stamps that are left (raise time_list_capacity)",
          name, format_duration(monitor.config().channel(name).window));
    }
    for (const auto& [name, why] : unreadable) {
      spdlog::error("channel {} is not watched: {}", name, why);
    }
    for (const ChannelStatus& c : statistics) {
      if (c.name.rfind("/shmbus/", 0) == 0) continue;  // not statistics of our own statistics
      bus.publish_statistics(c, now - c.window_ns, now);
    }
    if (webhook) webhook->tick();
    if (!ready) {
      sd_notify(0, "READY=1");
      ready = true;
    }
    if (now >= next_status) {
      std::lock_guard lock(mutex);
      sd_notifyf(0, "STATUS=%zu channels in domain %s, %zu alerting", monitor.channel_count(), domain.c_str(),
                 monitor.alerting_count());
      next_status = now + 1'000'000'000;
    }
    if (watchdog && now >= next_watchdog) {
      sd_notify(0, "WATCHDOG=1");
      next_watchdog = now + static_cast<std::int64_t>(watchdog_usec) * 1000 / 2;
    }

    next_scan += config.monitor.scan_period.count();
    if (next_scan < mono_ns()) next_scan = mono_ns();  // overran: do not burst to catch up
    for (;;) {
      const int sig = wait_for_signal(signals, next_scan);
      if (sig == 0) break;
      if (sig == SIGHUP) {
        sd_notify(0, "RELOADING=1");
        try {
          Config fresh = load_config(options);
          if (fresh.domain != domain) {
            spdlog::warn("reload: the domain changed to \"{}\"; keeping \"{}\" (restart to switch)", fresh.domain,
                         domain);
            fresh.domain = domain;
          }
          if (fresh.monitor.metrics_listen != listen) {
            spdlog::warn("reload: metrics_listen changed; it takes effect at restart");
          }
          for (const std::string& w : config_warnings(fresh)) spdlog::warn("{}", w);
          {
            std::lock_guard lock(mutex);
            monitor.reload(fresh);
          }
          config = std::move(fresh);
          spdlog::info("reloaded {}", config.source);
        } catch (const Error& e) {
          spdlog::error("reload refused, keeping the running configuration: {}", e.what());
        }
        sd_notify(0, "READY=1");
        continue;
      }
      spdlog::info("stopping on signal {}", sig);
      sd_notify(0, "STOPPING=1");
      return 0;
    }
  }
}

int daemon_main(int argc, char** argv) {
  CLI::App app{"shmbus monitoring daemon: frequencies, alerts and statistics of every channel", "shmbusd"};
  Options options;
  std::string check;
  std::string domain;
  std::string listen;
  app.add_option("-c,--config", options.config_path, "configuration file (default: SHMBUS_CONFIG)");
  app.add_option("--domain", domain, "domain to watch (overrides the file and SHMBUS_DOMAIN)");
  app.add_option("--metrics-listen", listen, "ADDRESS:PORT for /metrics and /healthz, or off");
  app.add_option("--check-config", check, "validate FILE, print the effective settings, exit 0 or 2");
  app.add_flag("--foreground", options.foreground, "stay in the foreground (systemd runs it so anyway)");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (!domain.empty()) options.domain = domain;
  if (!listen.empty()) options.metrics_listen = listen;
  try {
    if (!check.empty()) {
      Options o = options;
      o.config_path = check;
      const Config c = load_config(o);
      std::fputs(describe_config(c).c_str(), stdout);
      for (const std::string& w : config_warnings(c)) std::fprintf(stderr, "%s\n", w.c_str());
      return 0;
    }
    // Signals are taken synchronously by the loop (sigtimedwait): block them
    // before any thread starts, so every thread inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGHUP);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    if (!options.foreground && !under_systemd()) {
      // Classic daemon: detach from the terminal; logs go to the journal.
      if (::daemon(0, 0) != 0) throw Error(Errc::kResource, "cannot detach into the background (daemon(3) failed)");
      ::setenv("JOURNAL_STREAM", "detached", 1);
    }
    return run(options);
  } catch (const Error& e) {
    std::fprintf(stderr, "shmbusd: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbusd: %s\n", e.what());
    return 1;
  }
}

}  // namespace shmbus::daemon
