#include "shmbus/shmbusd/daemon.hpp"

#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <fmt/format.h>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "shmbus/bus_channels.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/monitor/config_report.hpp"
#include "shmbus/monitor/monitor.hpp"
#include "shmbus/names.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/service_shell/tls.hpp"
#include "shmbus/shmbusd/http.hpp"
#include "shmbus/shmbusd/metrics.hpp"
#include "shmbus/shmbusd/outputs.hpp"
#include "shmbus/shmbusd/roudi.hpp"
#include "shmbus/stop_signals.hpp"
#include "web.hpp"

namespace shmbus::shmbusd {

using monitor::ChannelStatus;
using monitor::Level;
using monitor::Transition;

namespace {

/// The listener's TLS context from the configured files (exit 2 for a bad
/// one); null for plain HTTP.
HttpTls server_tls(const std::string& cert, const std::string& key) {
  std::optional<boost::asio::ssl::context> made = service_shell::server_tls(cert, key, "monitor");
  return made ? std::make_shared<boost::asio::ssl::context>(std::move(*made)) : nullptr;
}

/// What the run loop takes synchronously (sigtimedwait): SIGHUP reloads,
/// SIGTERM and SIGINT stop.
sigset_t loop_signals() { return signal_set({SIGHUP, SIGTERM, SIGINT}); }

constexpr std::int64_t kStatusPeriodNs = 1'000'000'000;
/// How often the open web pages get the channels (at most: a scan period
/// longer than this sends one per scan).
constexpr std::int64_t kEventPeriodNs = 400'000'000;

std::int64_t unix_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// JSON as the page gets it: names from shared memory are escaped already;
/// anything else that is not UTF-8 is replaced, never thrown on.
template <typename Json>
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// The address a browser reaches `listen` at (the host's name for a
/// wildcard bind).
std::string page_address(const std::string& listen, std::uint16_t port, bool tls) {
  auto [host, unused] = parse_host_port(listen, "metrics_listen");
  if (host == "0.0.0.0" || host == "::") {
    std::array<char, 256> name{};
    host = ::gethostname(name.data(), name.size() - 1) == 0 ? name.data() : "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  return fmt::format("{}://{}:{}/", tls ? "https" : "http", host, port);
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
  const std::int64_t left = std::max<std::int64_t>(0, deadline_ns - mono_now_ns());
  const timespec timeout{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
  const int sig = ::sigtimedwait(&set, nullptr, &timeout);
  return sig > 0 ? sig : 0;
}

/// What one scan found, taken out of the lock to be emitted.
struct ScanFindings {
  std::vector<Transition> transitions;
  std::vector<std::string> truncated;
  std::vector<std::pair<std::string, std::string>> unreadable;  ///< channel, why
  std::vector<ChannelStatus> statistics;                        ///< empty unless a statistics window closed
};

/// The daemon: set-up, then scan -> emit -> notify every scan period, and
/// reload on SIGHUP. The monitor and the figures are shared with the
/// /metrics thread under `mutex_`.
class Daemon {
 public:
  explicit Daemon(const Options& options)
      : options_(options),
        config_(load_config(options)),
        domain_(config_.config.domain),
        listen_(config_.monitor.metrics_listen),
        token_(service_shell::read_token(config_.monitor.token_file, "token_file in [monitor], or --token-file")),
        tls_cert_(config_.monitor.tls_cert),
        tls_key_(config_.monitor.tls_key),
        tls_(server_tls(tls_cert_, tls_key_)),
        monitor_(config_.config, config_.monitor),
        roudi_(options.roudi ? std::make_unique<RoudiSupervisor>(config_.config, roudi_file()) : nullptr),
        bus_context_(bus_config(config_.config)),
        bus_(bus_context_) {
    for (const std::string& w : monitor::config_warnings(config_.config)) spdlog::warn("{}", w);
    if (!config_.monitor.webhook.empty()) {
      webhook_ = std::make_unique<AlertmanagerWebhook>(config_.monitor.webhook, domain_);
    }
    if (listen_ != "off") serve_metrics();
    watchdog_ = sd_watchdog_enabled(0, &watchdog_usec_) > 0;
  }

  int run() {
    const sigset_t signals = loop_signals();
    std::int64_t next_scan = mono_now_ns();
    next_statistics_ = next_scan + config_.monitor.statistics_period.count();
    spdlog::info("watching domain \"{}\": scan every {}, statistics every {}", domain_,
                 format_duration(config_.monitor.scan_period), format_duration(config_.monitor.statistics_period));
    for (;;) {
      const std::int64_t now = mono_now_ns();
      if (roudi_) roudi_->check(now);
      bool window_closed = false;
      {
        const ScanFindings f = scan(now);
        emit(f, now);
        window_closed = !f.statistics.empty();
      }
      // Once per statistics window, after its copies of every channel's
      // status are freed: glibc keeps freed heap pages, scattered between
      // live blocks, until trimmed (at 10,000 channels, half the heap).
      if (window_closed) ::malloc_trim(0);
      notify(now);
      send_events(now);
      next_scan += config_.monitor.scan_period.count();
      if (next_scan < mono_now_ns()) next_scan = mono_now_ns();  // overran: do not burst to catch up
      for (;;) {
        const int sig = wait_for_signal(signals, next_scan);
        if (sig == 0) break;
        if (sig == SIGHUP) {
          reload();
          continue;
        }
        spdlog::info("stopping on signal {}", sig);
        sd_notify(0, "STOPPING=1");
        return 0;
      }
    }
  }

 private:
  /// Where --roudi writes RouDi's pools: systemd's RuntimeDirectory, else
  /// the temporary directory.
  static std::string roudi_file() {
    const char* dir = std::getenv("RUNTIME_DIRECTORY");  // NOLINT(concurrency-mt-unsafe): read at set-up
    return fmt::format("{}/shmbusd-roudi-{}.toml", dir != nullptr ? dir : "/tmp", ::getpid());
  }

  static Config bus_config(Config c) {
    c.node = "shmbusd";
    return c;
  }

  void serve_metrics() {
    http_ = std::make_unique<HttpServer>(
        listen_, [this](const HttpRequest& request) { return answer(request); }, tls_);
    const std::string address = page_address(listen_, http_->port(), tls_ != nullptr);
    spdlog::info("serving /metrics, /healthz and the web page {} on {} (port {})", address, listen_, http_->port());
    bus_.publish_web_address(address);
  }

  /// An HTTP GET, on the server's thread. With a token, everything but
  /// /healthz asks for it.
  HttpResponse answer(const HttpRequest& request) {
    const std::string target = request.target.substr(0, request.target.find('?'));
    if (!token_.empty() && target != "/healthz" &&
        !service_shell::carries_token(request.target, request.authorization, token_)) {
      return {401, "text/plain; charset=utf-8",
              "this shmbusd asks for its token: send \"Authorization: Bearer TOKEN\", or open the page as "
              "/?token=TOKEN\n"};
    }
    constexpr const char* kJson = "application/json";
    if (target == "/" || target == "/index.html") return {200, "text/html; charset=utf-8", std::string{web_page()}};
    std::lock_guard lock(mutex_);
    if (target == "/metrics") {
      return {200, "text/plain; version=0.0.4; charset=utf-8", render_metrics(domain_, monitor_.statuses(), figures_)};
    }
    if (target == "/healthz") {
      const bool fresh = last_scan_ns_ != 0 && mono_now_ns() - last_scan_ns_ < 3 * config_.monitor.scan_period.count();
      return {fresh ? 200 : 503, "text/plain; charset=utf-8", fresh ? "ok\n" : "no recent scan\n"};
    }
    if (target == "/api/channels") return {200, kJson, channels_json()};
    if (target == "/api/alerts") return {200, kJson, dump(web_.alerts())};
    if (target == "/api/history") return {200, kJson, dump(web_.history())};
    if (target == "/api/graph") return {200, kJson, dump(WebState::graph(monitor_.statuses()))};
    if (target == "/api/events") {
      return {200, "application/json", channels_json(), true};
    }
    return {404, "text/plain; charset=utf-8",
            "not found: try / (the page), /metrics, /healthz or /api/channels, /api/alerts, /api/history, "
            "/api/graph, /api/events\n"};
  }

  /// What /api/channels answers; under the lock.
  [[nodiscard]] std::string channels_json() const {
    return web_.channels(domain_, monitor_.statuses(), mono_now_ns(), unix_now_ns());
  }

  /// The open pages' update: the channels as /api/channels gives them, one
  /// WebSocket message built once for all of them.
  void send_events(std::int64_t now) {
    if (!http_ || http_->streams() == 0 || now < next_event_ns_) return;
    next_event_ns_ = now + kEventPeriodNs;
    std::string event;
    {
      std::lock_guard lock(mutex_);
      event = channels_json();
    }
    http_->publish_event(std::move(event));
  }

  /// One scan, and the statistics window when it closes, under the lock.
  ScanFindings scan(std::int64_t now) {
    ScanFindings f;
    std::lock_guard lock(mutex_);
    f.transitions = monitor_.scan(now);
    web_.add_alerts(f.transitions, unix_now_ns());
    figures_.last_scan_seconds = static_cast<double>(mono_now_ns() - now) / 1e9;
    figures_.scans++;
    figures_.transitions += f.transitions.size();
    if (webhook_) figures_.webhook_failures = webhook_->failures();
    if (http_) {
      figures_.web_streams = static_cast<std::uint64_t>(http_->streams());
      figures_.web_events_skipped = http_->skipped_events();
    }
    last_scan_ns_ = now;
    f.truncated = monitor_.take_truncation_warnings();
    for (const std::string& name : monitor_.take_unreadable_warnings()) {
      f.unreadable.emplace_back(name, monitor_.unreadable().at(name));
    }
    if (now >= next_statistics_) {
      monitor_.refresh_statistics();
      f.statistics = monitor_.statuses();
      next_statistics_ += config_.monitor.statistics_period.count();
      if (next_statistics_ <= now) next_statistics_ = now + config_.monitor.statistics_period.count();
    }
    if (web_.sample_due(now)) web_.sample(f.statistics.empty() ? monitor_.statuses() : f.statistics, now);
    return f;
  }

  /// Logs, bus channels and the webhook, outside the lock.
  void emit(const ScanFindings& f, std::int64_t now) {
    for (const Transition& t : f.transitions) {
      log_transition(t);
      bus_.publish_alert(t);
      if (webhook_) webhook_->notify(t);
    }
    for (const std::string& name : f.truncated) {
      spdlog::warn(
          "channel {}: the time list wrapped inside the {} window: it is too small for the channel's rate; "
          "the frequency is computed from the stamps that are left (raise time_list_capacity)",
          name, format_duration(config_.config.channel(name).window));
    }
    for (const auto& [name, why] : f.unreadable) spdlog::error("channel {} is not watched: {}", name, why);
    for (const ChannelStatus& c : f.statistics) {
      if (is_bus_channel(c.name)) continue;  // not statistics of our own statistics
      bus_.publish_statistics(c, now - c.window_ns, now);
    }
    if (webhook_) webhook_->tick();
  }

  /// systemd: READY once, STATUS every second, the watchdog at half its period.
  void notify(std::int64_t now) {
    if (!ready_) {
      sd_notify(0, "READY=1");
      ready_ = true;
    }
    if (now >= next_status_) {
      std::lock_guard lock(mutex_);
      sd_notifyf(0, "STATUS=%zu channels in domain %s, %zu alerting", monitor_.channel_count(), domain_.c_str(),
                 monitor_.alerting_count());
      next_status_ = now + kStatusPeriodNs;
    }
    if (watchdog_ && now >= next_watchdog_) {
      sd_notify(0, "WATCHDOG=1");
      next_watchdog_ = now + static_cast<std::int64_t>(watchdog_usec_) * 1000 / 2;
    }
  }

  /// SIGHUP: thresholds, windows and debounce from the file again; the
  /// domain and the listen address stay until a restart.
  void reload() {
    sd_notify(0, "RELOADING=1");
    try {
      monitor::MonitorConfig fresh = load_config(options_);
      if (fresh.config.domain != domain_) {
        spdlog::warn("reload: the domain changed to \"{}\"; keeping \"{}\" (restart to switch)", fresh.config.domain,
                     domain_);
        fresh.config.domain = domain_;
      }
      if (fresh.monitor.metrics_listen != listen_) {
        spdlog::warn("reload: metrics_listen changed; it takes effect at restart");
      }
      if (service_shell::read_token(fresh.monitor.token_file, "token_file in [monitor]") != token_) {
        spdlog::warn("reload: the token changed; it takes effect at restart");
      }
      if (fresh.monitor.tls_cert != tls_cert_ || fresh.monitor.tls_key != tls_key_) {
        spdlog::warn("reload: tls_cert or tls_key changed; it takes effect at restart");
      }
      for (const std::string& w : monitor::config_warnings(fresh.config)) spdlog::warn("{}", w);
      {
        std::lock_guard lock(mutex_);
        monitor_.reload(fresh.config, fresh.monitor);
      }
      config_ = std::move(fresh);
      spdlog::info("reloaded {}", config_.config.source);
    } catch (const Error& e) {
      spdlog::error("reload refused, keeping the running configuration: {}", e.what());
    }
    sd_notify(0, "READY=1");
  }

  Options options_;
  monitor::MonitorConfig config_;
  const std::string domain_;
  const std::string listen_;
  const std::string token_;     ///< "" : none
  const std::string tls_cert_;  ///< "" : plain HTTP
  const std::string tls_key_;
  /// Made from the files once, before the bus: a bad file leaves nothing
  /// behind. Null: plain HTTP.
  const HttpTls tls_;
  std::mutex mutex_;  ///< monitor_, figures_, web_ and last_scan_ns_, between the loop and the HTTP thread
  monitor::Monitor monitor_;
  WebState web_;
  DaemonFigures figures_;
  std::int64_t last_scan_ns_ = 0;
  /// Before the bus outputs: their channels may be iceoryx channels.
  std::unique_ptr<RoudiSupervisor> roudi_;
  Context bus_context_;
  BusOutputs bus_;
  std::unique_ptr<AlertmanagerWebhook> webhook_;
  std::unique_ptr<HttpServer> http_;
  std::int64_t next_statistics_ = 0;
  std::int64_t next_status_ = 0;
  std::int64_t next_event_ns_ = 0;
  bool ready_ = false;
  bool watchdog_ = false;
  std::uint64_t watchdog_usec_ = 0;
  std::int64_t next_watchdog_ = 0;
};

}  // namespace

monitor::MonitorConfig load_config(const Options& options) {
  monitor::MonitorConfig c = monitor::load_monitor_config(options.source);
  if (options.metrics_listen) c.monitor.metrics_listen = *options.metrics_listen;
  if (options.token_file) c.monitor.token_file = *options.token_file;
  if (options.tls_cert) c.monitor.tls_cert = *options.tls_cert;
  if (options.tls_key) c.monitor.tls_key = *options.tls_key;
  if (c.monitor.metrics_listen != "off") (void)parse_host_port(c.monitor.metrics_listen, "metrics_listen");
  if (!c.monitor.webhook.empty()) (void)parse_http_url(c.monitor.webhook);
  return c;
}

void check_config_files(const monitor::MonitorConfig& c) {
  (void)service_shell::read_token(c.monitor.token_file, "token_file in [monitor], or --token-file");
  (void)service_shell::server_tls(c.monitor.tls_cert, c.monitor.tls_key, "monitor");
}

void block_loop_signals() {
  const sigset_t signals = loop_signals();
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int run(const Options& options, bool to_journal) {
  spdlog::set_default_logger(service_shell::make_logger("shmbusd", to_journal));
  Daemon daemon(options);
  return daemon.run();
}

}  // namespace shmbus::shmbusd
