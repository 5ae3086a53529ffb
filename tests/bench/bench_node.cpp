// shmbus-bench-node: what the Node executor costs besides dispatch (which
// `shmbus-bench peers` measures against raw takes): how late a 1 kHz timer
// fires, whether its deadlines drift, and the CPU an idle node with 100
// subscriptions uses.
//   shmbus-bench-node [--periods N] [--rate HZ] [--idle-seconds S] [--smoke] [--json]
#include <fmt/format.h>
#include <pthread.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/node.hpp"
#include "support/cpu_time.hpp"

using namespace shmbus;

namespace {

using shmbus::test::thread_cpu_seconds;

struct Options {
  std::uint64_t periods = 10'000;
  double rate_hz = 1000;
  double idle_seconds = 5;
  std::uint32_t idle_subscriptions = 100;
  bool json = false;
};

struct TimerResult {
  double p50_us = 0, p99_us = 0, max_us = 0;
  std::uint64_t runs = 0, missed = 0;
  std::int64_t drift_ns = 0;  ///< last deadline - first - (ticks - 1) * period
};

Config bench_config(const std::string& domain) {
  Config c;
  c.domain = domain;
  c.node = "bench_node";
  c.defaults.capacity = 16;
  c.defaults.max_message_size = 64;
  return c;
}

/// Percentiles of `lateness` (ns), in us.
void fill_percentiles(std::vector<std::int64_t>& lateness, TimerResult& r) {
  std::sort(lateness.begin(), lateness.end());
  const auto pct = [&](double p) {
    return static_cast<double>(lateness[std::min(lateness.size() - 1,
                                                 static_cast<std::size_t>(p * static_cast<double>(lateness.size())))]) /
           1e3;
  };
  r.p50_us = pct(0.50);
  r.p99_us = pct(0.99);
  r.max_us = static_cast<double>(lateness.back()) / 1e3;
}

/// The floor: a thread sleeping to the same absolute deadlines with
/// clock_nanosleep(TIMER_ABSTIME), no executor at all.
TimerResult measure_sleep_floor(const Options& o) {
  const auto period = static_cast<std::int64_t>(1e9 / o.rate_hz);
  std::vector<std::int64_t> lateness;
  lateness.reserve(o.periods);
  std::int64_t deadline = mono_now_ns();
  for (std::uint64_t i = 0; i < o.periods; ++i) {
    deadline += period;
    const timespec ts{static_cast<time_t>(deadline / 1'000'000'000), static_cast<long>(deadline % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
    lateness.push_back(mono_now_ns() - deadline);
  }
  TimerResult r;
  fill_percentiles(lateness, r);
  r.runs = o.periods;
  return r;
}

TimerResult measure_timer(const Options& o, Context& ctx) {
  Node node("timer_bench", ctx, NodeOptions{.handle_signals = false});
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / o.rate_hz));
  std::vector<std::int64_t> lateness;
  lateness.reserve(o.periods);
  std::int64_t first_deadline = 0;
  std::int64_t last_deadline = 0;
  Timer* timer = nullptr;
  timer = &node.every(period, [&] {
    const std::int64_t now = mono_now_ns();
    last_deadline = timer->deadline_ns();
    if (first_deadline == 0) first_deadline = last_deadline;
    lateness.push_back(now - last_deadline);
    if (lateness.size() == o.periods) node.stop();
  });
  node.spin();
  TimerResult r;
  fill_percentiles(lateness, r);
  r.runs = timer->runs();
  r.missed = timer->missed();
  r.drift_ns = (last_deadline - first_deadline) - static_cast<std::int64_t>(r.runs + r.missed - 1) * period.count();
  return r;
}

/// CPU percent of the spinning thread of a node with `n` idle subscriptions.
double measure_idle(const Options& o, Context& ctx) {
  Node node("idle_bench", ctx, NodeOptions{.handle_signals = false});
  for (std::uint32_t i = 0; i < o.idle_subscriptions; ++i) {
    node.subscribe_raw("/idle" + std::to_string(i), TypeInfo::bytes(),
                       [](std::span<const std::byte>, const MessageInfo&) {});
  }
  std::thread spinner([&] { node.spin(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cpu0 = thread_cpu_seconds(spinner.native_handle());
  const std::int64_t t0 = mono_now_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
  const double cpu = thread_cpu_seconds(spinner.native_handle()) - cpu0;
  const double wall = static_cast<double>(mono_now_ns() - t0) / 1e9;
  node.stop();
  spinner.join();
  return 100.0 * cpu / wall;
}

int run(int argc, char** argv) {
  CLI::App app{"timer accuracy and idle CPU of the Node executor", "shmbus-bench-node"};
  Options o;
  bool smoke = false;
  app.add_option("--periods", o.periods, "timer periods to measure")->check(CLI::Range(10, 100'000'000));
  app.add_option("--rate", o.rate_hz, "timer rate in Hz")->check(CLI::Range(1.0, 100'000.0));
  app.add_option("--idle-seconds", o.idle_seconds, "how long to watch the idle node")->check(CLI::Range(0.1, 3600.0));
  app.add_flag("--json", o.json, "print one JSON object");
  app.add_flag("--smoke", smoke, "tiny runs (CI)");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (smoke) {
    o.periods = 300;
    o.idle_seconds = 0.3;
  }
  const std::string domain = "bench_node_" + std::to_string(::getpid());
  Context ctx{bench_config(domain)};
  const TimerResult floor = measure_sleep_floor(o);
  const TimerResult t = measure_timer(o, ctx);
  const double idle = measure_idle(o, ctx);
  introspect::clean_domain(domain, false);
  if (o.json) {
    nlohmann::json j{{"timer_rate_hz", o.rate_hz},
                     {"timer_periods", o.periods},
                     {"lateness_p50_us", t.p50_us},
                     {"lateness_p99_us", t.p99_us},
                     {"lateness_max_us", t.max_us},
                     {"runs", t.runs},
                     {"missed", t.missed},
                     {"drift_ns", t.drift_ns},
                     {"idle_subscriptions", o.idle_subscriptions},
                     {"idle_cpu_percent", idle},
                     {"sleep_floor_p50_us", floor.p50_us},
                     {"sleep_floor_p99_us", floor.p99_us}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print(
      "timer at {:.0f} Hz over {} periods: lateness p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us; "
      "{} runs, {} skipped; deadline drift {} ns\n",
      o.rate_hz, o.periods, t.p50_us, t.p99_us, t.max_us, t.runs, t.missed, t.drift_ns);
  fmt::print(
      "floor (clock_nanosleep to the same absolute deadlines): lateness p50 {:.1f} us, p99 {:.1f} us, "
      "max {:.1f} us\n",
      floor.p50_us, floor.p99_us, floor.max_us);
  fmt::print("idle node with {} subscriptions: {:.3f}% CPU over {:.1f} s\n", o.idle_subscriptions, idle,
             o.idle_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cli::guarded("shmbus-bench-node", [&] { return run(argc, argv); });
}
