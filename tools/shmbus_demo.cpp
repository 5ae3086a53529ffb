// shmbus-demo: the main job of a fresh checkout. Two publisher processes
// (a 100 Hz IMU-like stream and a 1 kHz one, each a node with a timer), a
// subscriber process (a node with a callback on each channel), and shmbusd
// watching every channel with no code in the applications. Halfway the
// slow publisher stops: shmbusd's alert arrives on /shmbus/alerts. This process prints what the registry
// and the time lists show.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "shmbus/bus_channels.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/daemon_info.hpp"
#include "shmbus/monitor/frequency.hpp"
#include "shmbus/monitor/levels.hpp"
#include "shmbus/node.hpp"
#include "shmbus/shmbus.hpp"
#include "shmbus_msgs/Alert.hpp"

using namespace shmbus;
using namespace std::chrono;

namespace {

struct Imu {
  static constexpr const char* kTypeName = "demo/Imu";
  static constexpr std::uint64_t kTypeHash = 0x1d3a5f0e2b7c9d41ULL;
  static constexpr const char* kSchema = "uint64 count\nfloat64[3] angular_velocity\nfloat64[3] linear_acceleration\n";
  std::uint64_t count;
  double angular_velocity[3];
  double linear_acceleration[3];
};

/// A node publishing at `hz` (a timer on absolute deadlines) until SIGTERM.
int publisher_process(const Config& config, const std::string& channel, double hz) {
  Context ctx{config};
  Node node("imu_driver", ctx);
  auto& pub = node.publisher<Imu>(channel);
  std::uint64_t i = 0;
  node.every(duration_cast<nanoseconds>(duration<double>(1.0 / hz)), [&] {
    static_cast<void>(pub.publish(Imu{i, {0.01 * static_cast<double>(i), 0, 0}, {0, 0, 9.81}}));
    ++i;
  });
  node.spin();
  return 0;
}

/// The span both sides of the demo's rate check measure: the last second
/// of the fast channel, ending at its newest publish stamp.
constexpr std::int64_t kCheckWindowNs = 1'000'000'000;

/// f = (n-1)/(Tn-T1) over the `kCheckWindowNs` ending at the newest stamp.
double last_window_hz(std::span<const std::int64_t> stamps) {
  if (stamps.empty()) return 0.0;
  return monitor::measure_window(stamps, stamps.back(), kCheckWindowNs, false).frequency_hz;
}

/// A node with a callback on each channel; reports what it received, and
/// for the first channel the rate its messages' own publish stamps give.
int subscriber_process(const Config& config, const std::vector<std::string>& channels) {
  Context ctx{config};
  Node node("imu_consumer", ctx);
  std::vector<Subscription*> subs;
  subs.reserve(channels.size());
  std::deque<std::int64_t> stamps;  // the first channel's, the last two windows
  subs.push_back(&node.subscribe<Imu>(channels.front(), [&](const Imu&, const MessageInfo& info) {
    stamps.push_back(info.publish_time_ns);
    while (stamps.back() - stamps.front() > 2 * kCheckWindowNs) stamps.pop_front();
  }));
  for (std::size_t i = 1; i < channels.size(); ++i) {
    subs.push_back(&node.subscribe<Imu>(channels[i], [](const Imu&, const MessageInfo&) {}));
  }
  node.spin();
  for (const Subscription* s : subs) {
    std::printf("subscriber (pid %d): %s received %llu, lost %llu\n", static_cast<int>(::getpid()),
                s->channel().c_str(), static_cast<unsigned long long>(s->calls()),
                static_cast<unsigned long long>(s->subscriber().lost()));
  }
  const std::vector<std::int64_t> last(stamps.begin(), stamps.end());
  std::printf("subscriber (pid %d): %s over its last second of publish stamps: %.3f Hz\n", static_cast<int>(::getpid()),
              channels.front().c_str(), last_window_hz(last));
  return 0;
}

/// shmbusd next to this program in the build tree, else on PATH.
std::string daemon_path() {
  if (::access(SHMBUSD_BUILD_PATH, X_OK) == 0) return SHMBUSD_BUILD_PATH;
  return "shmbusd";
}

/// The demo's configuration, shared by every process of the demo and by
/// shmbusd: thresholds for both channels, and a time list that holds a whole
/// window of the fast one even at its upper threshold.
constexpr const char* kDemoConfig = R"(
[[channel]]
name = "/imu/fast"
time_list_capacity = 2048
thresholds_hz = [900.0, 1100.0, 2000.0]

[[channel]]
name = "/imu/slow"
thresholds_hz = [90.0, 110.0, 200.0]

[monitor]
scan_period = "100ms"
debounce_scans = 2
# Its page and /metrics on a free loopback port (printed at the start).
metrics_listen = "127.0.0.1:0"
)";

/// Starts shmbusd on the demo's domain with the demo's configuration file.
pid_t start_daemon(const std::string& domain, const std::string& config_path) {
  const std::string path = daemon_path();
  const pid_t pid = cli::fork_child(SIGTERM);
  if (pid == 0) {
    ::execlp(path.c_str(), "shmbusd", "--foreground", "--config", config_path.c_str(), "--domain", domain.c_str(),
             nullptr);
    std::fprintf(stderr, "shmbus-demo: cannot run shmbusd (%s); the demo goes on without it\n", path.c_str());
    ::_exit(127);
  }
  return pid;
}

/// The address of shmbusd's live page, once it serves it (up to 3 s).
void print_page_address(const Config& config) {
  for (int i = 0; i < 60; ++i) {
    if (const auto d = monitor::find_daemon(config); d && !d->web.empty()) {
      fmt::print("shmbusd's live page of this bus: {} (open it while the demo runs)\n", d->web);
      return;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = cli::fork_child(SIGTERM);
  if (pid == 0) {
    const int rc = cli::guarded("shmbus-demo", body);
    std::fflush(stdout);
    ::_exit(rc);
  }
  return pid;
}

/// One configuration file for all processes, as SHMBUS_CONFIG would be.
std::string write_config() {
  std::string path = "/tmp/shmbus-demo-" + std::to_string(::getpid()) + ".toml";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw Error(Errc::kResource, "cannot write " + path);
  std::fputs(kDemoConfig, f);
  std::fclose(f);
  return path;
}

/// Prints the alerts shmbusd published, waiting up to half a second.
void print_alerts(TypedSubscriber<shmbus_msgs::Alert>& alerts) {
  if (!alerts.wait(milliseconds(500)) || cli::stop_requested()) return;
  while (auto a = alerts.take()) {
    fmt::print("alert from shmbusd: {} {} -> {} at {:.1f} Hz (thresholds {} {} {} Hz)\n", a->channel.view(),
               monitor::to_string(static_cast<monitor::Level>(a->old_level)),
               monitor::to_string(static_cast<monitor::Level>(a->new_level)), a->frequency_hz, a->thresholds_hz[0],
               a->thresholds_hz[1], a->thresholds_hz[2]);
  }
}

/// One row per channel: what the registry and the time lists show.
void print_channels(const Config& config, introspect::TimeListSnapshot& snap) {
  for (const auto& name : introspect::DomainView(config.domain, config.access()).channel_names()) {
    introspect::ChannelReader reader(config.domain, name);
    const introspect::ChannelView v = reader.view();
    reader.snapshot(snap);
    const auto m = monitor::measure_window(snap.stamps, mono_now_ns(), v.window_ns, snap.total > snap.capacity);
    fmt::print("{:<18} {:<22} {:>4} {:>4} {:>9} {:>6} {:>5}/{:<5} {:>10.1f}\n", name, v.type_name, v.publishers.size(),
               v.subscribers.size(), v.messages, v.lost, snap.stamps.size(), snap.capacity, m.frequency_hz);
  }
}

void stop_process(pid_t pid) {
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

/// After its publisher stopped: waits (up to 2 s) until the subscribers
/// have taken everything, then prints the rate over the channel's last
/// second in the time list, which the subscriber's count must match.
void print_final_rate(const Config& config, const std::string& name) {
  introspect::ChannelReader reader(config.domain, name);
  const auto deadline = steady_clock::now() + seconds(2);
  for (auto v = reader.view(); v.received + v.lost < v.messages && steady_clock::now() < deadline; v = reader.view()) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  introspect::TimeListSnapshot snap;
  reader.snapshot(snap);
  fmt::print("{} over its last second in the time list: {:.3f} Hz\n", name, last_window_hz(snap.stamps));
}

int run(int argc, char** argv) {
  CLI::App app{"publishers and a subscriber in separate processes, watched through the time lists", "shmbus-demo"};
  double seconds = 4;
  std::string domain;
  app.add_option("-d,--duration", seconds, "how long to run, in seconds (the slow publisher stops at 40%)")
      ->check(CLI::Range(0.5, 3600.0));
  app.add_option("--domain", domain, "domain to use (default: demo_<pid>)");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;

  cli::install_stop_handlers();
  const std::string daemon_config = write_config();
  Config config = Config::load_file(daemon_config);
  config.domain = domain.empty() ? "demo_" + std::to_string(::getpid()) : domain;
  validate_domain_name(config.domain);
  config.node = "demo";
  const std::vector<std::string> channels{"/imu/fast", "/imu/slow"};
  const pid_t subscriber = spawn([&] { return subscriber_process(config, channels); });
  // Let the subscriber create the channels and register before data flows.
  std::this_thread::sleep_for(milliseconds(200));
  const pid_t fast = spawn([&] { return publisher_process(config, "/imu/fast", 1000.0); });
  const pid_t slow = spawn([&] { return publisher_process(config, "/imu/slow", 100.0); });
  const pid_t shmbusd = start_daemon(config.domain, daemon_config);
  Context context{config};
  std::optional<TypedSubscriber<shmbus_msgs::Alert>> alerts;
  alerts.emplace(kAlertsChannel, context);
  fmt::print(
      "shmbus demo in domain \"{}\": 2 publisher processes, 1 subscriber process (pids {} {} {}), "
      "shmbusd (pid {})\n",
      config.domain, fast, slow, subscriber, shmbusd);
  print_page_address(config);
  fmt::print("{:<18} {:<22} {:>4} {:>4} {:>9} {:>6} {:>11} {:>10}\n", "channel", "type", "pubs", "subs", "messages",
             "lost", "time list", "rate (Hz)");
  std::fflush(stdout);

  const auto start = steady_clock::now();
  const auto end = start + duration_cast<steady_clock::duration>(duration<double>(seconds));
  const auto stop_slow = start + duration_cast<steady_clock::duration>(duration<double>(seconds * 0.4));
  bool slow_stopped = false;
  introspect::TimeListSnapshot snap;
  while (!cli::stop_requested() && steady_clock::now() < end) {
    print_alerts(*alerts);
    if (!slow_stopped && steady_clock::now() >= stop_slow) {
      stop_process(slow);
      slow_stopped = true;
      fmt::print("stopped the /imu/slow publisher: watch shmbusd notice\n");
    }
    fmt::print("t={:.1f}s\n", duration<double>(steady_clock::now() - start).count());
    print_channels(config, snap);
    std::fflush(stdout);
  }
  if (!slow_stopped) stop_process(slow);
  stop_process(fast);
  print_final_rate(config, channels.front());
  std::fflush(stdout);
  for (const pid_t pid : {subscriber, shmbusd}) stop_process(pid);
  ::unlink(daemon_config.c_str());
  alerts.reset();  // our own subscription, so clean can remove everything
  const auto report = introspect::clean_domain(config.domain, false, config.access());
  fmt::print("done: removed {} shared-memory segments of domain \"{}\"\n", report.removed.size(), config.domain);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbus-demo", [&] { return run(argc, argv); });
}
