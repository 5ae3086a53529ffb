// shmbus-demo: the main job of a fresh checkout. Two publisher processes
// (a 100 Hz IMU-like stream and a 1 kHz one) and a subscriber process that
// blocks on both with a WaitSet, while this process watches the channels
// the way shmbusd will: from the registry and the time lists, with no code
// in the publishers.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "cli_parse.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/shmbus.hpp"

using namespace shmbus;
using namespace std::chrono;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Imu {
  static constexpr const char* kTypeName = "demo/Imu";
  static constexpr std::uint64_t kTypeHash = 0x1d3a5f0e2b7c9d41ULL;
  static constexpr const char* kSchema = "uint64 count\nfloat64[3] angular_velocity\nfloat64[3] linear_acceleration\n";
  std::uint64_t count;
  double angular_velocity[3];
  double linear_acceleration[3];
};

/// Publishes at `hz` with absolute deadlines until SIGTERM.
int publisher_process(const Config& config, const std::string& channel, double hz) {
  Context ctx{config};
  TypedPublisher<Imu> pub(channel, ctx);
  const auto period = duration_cast<steady_clock::duration>(duration<double>(1.0 / hz));
  auto next = steady_clock::now();
  for (std::uint64_t i = 0; !g_stop; ++i) {
    Imu m{i, {0.01 * static_cast<double>(i), 0, 0}, {0, 0, 9.81}};
    pub.publish(m);
    next += period;
    std::this_thread::sleep_until(next);
  }
  return 0;
}

/// Blocks on both channels with one WaitSet; reports what it received.
int subscriber_process(const Config& config, const std::vector<std::string>& channels) {
  Context ctx{config};
  std::vector<std::unique_ptr<TypedSubscriber<Imu>>> subs;
  WaitSet ws;
  for (const auto& c : channels) {
    subs.push_back(std::make_unique<TypedSubscriber<Imu>>(c, ctx));
    ws.attach(subs.back()->untyped());
  }
  std::vector<std::size_t> ready;
  std::vector<std::uint64_t> received(channels.size());
  while (!g_stop) {
    ws.wait(milliseconds(100), ready);
    for (std::size_t i : ready) {
      while (subs[i]->take()) ++received[i];
    }
  }
  for (std::size_t i = 0; i < channels.size(); ++i) {
    std::printf("subscriber (pid %d): %s received %llu, lost %llu\n", static_cast<int>(::getpid()), channels[i].c_str(),
                static_cast<unsigned long long>(received[i]),
                static_cast<unsigned long long>(subs[i]->untyped().lost()));
  }
  return 0;
}

/// f = (n-1)/(Tn-T1) over the stamps in (now - window, now].
double rate_from_time_list(const std::vector<std::int64_t>& stamps, std::int64_t now, std::int64_t window) {
  std::size_t n = 0;
  std::int64_t first = 0, last = 0;
  for (std::int64_t t : stamps) {
    if (t <= now - window || t > now) continue;
    if (n++ == 0) first = t;
    last = t;
  }
  return n >= 2 && last > first ? static_cast<double>(n - 1) / (static_cast<double>(last - first) / 1e9) : 0.0;
}

pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = body();
    } catch (const Error& e) {
      std::fprintf(stderr, "shmbus-demo: %s\n", e.what());
      rc = e.exit_code();
    }
    std::fflush(stdout);
    ::_exit(rc);
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"publishers and a subscriber in separate processes, watched through the time lists", "shmbus-demo"};
  double seconds = 3;
  std::string domain;
  app.add_option("-d,--duration", seconds, "how long to run, in seconds")->check(CLI::Range(0.5, 3600.0));
  app.add_option("--domain", domain, "domain to use (default: demo_<pid>)");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  try {
    Config config = Config::from_environment();
    config.domain = domain.empty() ? "demo_" + std::to_string(::getpid()) : domain;
    validate_domain_name(config.domain);
    config.node = "demo";
    const std::vector<std::string> channels{"/imu/fast", "/imu/slow"};
    std::vector<pid_t> children;
    children.push_back(spawn([&] { return subscriber_process(config, channels); }));
    // Let the subscriber create the channels and register before data flows.
    std::this_thread::sleep_for(milliseconds(200));
    children.push_back(spawn([&] { return publisher_process(config, "/imu/fast", 1000.0); }));
    children.push_back(spawn([&] { return publisher_process(config, "/imu/slow", 100.0); }));

    fmt::print("shmbus demo in domain \"{}\": 2 publisher processes, 1 subscriber process (pids {} {} {})\n",
               config.domain, children[1], children[2], children[0]);
    std::fflush(stdout);
    fmt::print("{:<11} {:<9} {:>4} {:>4} {:>9} {:>6} {:>11} {:>10}\n", "channel", "type", "pubs", "subs", "messages",
               "lost", "time list", "rate (Hz)");
    const auto end = steady_clock::now() + duration_cast<steady_clock::duration>(duration<double>(seconds));
    introspect::TimeListSnapshot snap;
    const auto start = steady_clock::now();
    while (!g_stop && steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(500));
      fmt::print("t={:.1f}s\n", duration<double>(steady_clock::now() - start).count());
      for (const auto& name : introspect::DomainView(config.domain).channel_names()) {
        introspect::ChannelReader reader(config.domain, name);
        const introspect::ChannelView v = reader.view();
        reader.snapshot(snap);
        const auto now = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
        fmt::print("{:<11} {:<9} {:>4} {:>4} {:>9} {:>6} {:>5}/{:<5} {:>10.1f}\n", name, v.type_name,
                   v.publishers.size(), v.subscribers.size(), v.messages, v.lost, snap.stamps.size(), snap.capacity,
                   rate_from_time_list(snap.stamps, now, v.window_ns));
      }
      std::fflush(stdout);
    }
    for (std::size_t i = children.size(); i-- > 0;) {
      ::kill(children[i], SIGTERM);
      int status = 0;
      ::waitpid(children[i], &status, 0);
    }
    const auto report = introspect::clean_domain(config.domain, false);
    fmt::print("done: removed {} shared-memory segments of domain \"{}\"\n", report.removed.size(), config.domain);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "shmbus-demo: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-demo: %s\n", e.what());
    return 1;
  }
}
