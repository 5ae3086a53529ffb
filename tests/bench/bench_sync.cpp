// The synchronizer's policies on the same recorded streams: sets emitted,
// how many lie within the threshold, messages dropped, CPU time per input
// message. Streams are simulated (periods, jitter, transport delays,
// out-of-order arrival between channels, losses) and replayed through each
// policy in arrival order.
//
//   shmbus_bench_sync [--seconds S] [--seed N] [--json]
//
// Exits 1 when the bounded-disparity policy finds fewer sets within the
// threshold than approximate time on a workload, or costs more than 1 us
// per input message with 4 channels.
#include <time.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shmbus/cli.hpp"
#include "shmbus/sync.hpp"
#include "support/sync_streams.hpp"

using namespace shmbus;
using namespace shmbus::sync;
using shmbus::test::StreamSpec;

namespace {

struct Workload {
  std::string name;
  std::vector<StreamSpec> streams;
  std::int64_t threshold_ns;
};

constexpr std::int64_t ms(std::int64_t v) { return v * 1'000'000; }

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  // Four cameras at 30 Hz, triggered alike, with different pipelines.
  w.push_back({"4 x 30 Hz, 2 ms jitter, delays 0-30 ms",
               {{ms(33), ms(2), ms(0), ms(10), 0, 0.02},
                {ms(33), ms(2), ms(5), ms(10), ms(1), 0.02},
                {ms(33), ms(2), ms(10), ms(10), ms(2), 0.02},
                {ms(33), ms(2), ms(20), ms(10), ms(1), 0.02}},
               ms(5)});
  // A robot's sensor set: IMU 200 Hz, camera 30 Hz, lidar 10 Hz, radar 20 Hz.
  w.push_back({"IMU 200 + camera 30 + lidar 10 + radar 20 Hz",
               {{ms(5), ms(0) + 200'000, ms(1), ms(1), 0, 0.0},
                {ms(33), ms(1), ms(15), ms(5), ms(3), 0.01},
                {ms(100), ms(1), ms(40), ms(20), ms(7), 0.01},
                {ms(50), ms(1), ms(25), ms(10), ms(11), 0.01}},
               ms(10)});
  // Heavy reordering between channels: delay jitter beyond the period.
  w.push_back({"4 x 50 Hz, delays 0-100 ms (out of order)",
               {{ms(20), ms(3), ms(0), ms(40), 0, 0.05},
                {ms(20), ms(3), ms(30), ms(40), ms(2), 0.05},
                {ms(20), ms(3), ms(10), ms(40), ms(4), 0.05},
                {ms(20), ms(3), ms(60), ms(40), ms(6), 0.05}},
               ms(4)});
  // Eight channels, 100 Hz, small jitter.
  std::vector<StreamSpec> eight;
  for (int i = 0; i < 8; ++i) eight.push_back({ms(10), 500'000, ms(i), ms(3), 300'000 * i, 0.01});
  w.push_back({"8 x 100 Hz, 0.5 ms jitter", eight, ms(2)});
  return w;
}

std::int64_t cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Result {
  std::uint64_t sets = 0;
  std::uint64_t within = 0;
  std::uint64_t dropped = 0;
  double ns_per_message = 0;
};

Result replay(const std::vector<shmbus::test::Arrival>& arrivals, std::size_t channels, const Options& options) {
  Result r;
  // Repeat until a tenth of a CPU second has passed, for a stable figure.
  std::int64_t spent = 0;
  std::uint64_t messages = 0;
  std::vector<Set> sets;
  while (spent < 100'000'000 || messages == 0) {
    Aligner a(channels, options);
    sets.clear();
    sets.reserve(arrivals.size());
    const std::int64_t t0 = cpu_ns();
    for (const auto& arrival : arrivals) a.push(arrival.item, sets);
    spent += cpu_ns() - t0;
    messages += arrivals.size();
    r.sets = a.sets();
    r.dropped = 0;
    for (std::size_t c = 0; c < channels; ++c) r.dropped += a.dropped(c);
  }
  for (const Set& s : sets) r.within += s.disparity_ns <= options.threshold.count() ? 1 : 0;
  r.ns_per_message = static_cast<double>(spent) / static_cast<double>(messages);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replays simulated sensor streams through every synchronizer policy", "shmbus_bench_sync"};
  double seconds = 600;
  std::uint64_t seed = 1;
  bool json = false;
  app.add_option("--seconds", seconds, "Simulated seconds per workload")->check(CLI::Range(1.0, 86400.0));
  app.add_option("--seed", seed, "Seed of the streams");
  app.add_flag("--json", json, "One JSON object instead of the table");
  if (const auto code = shmbus::cli::parse(app, argc, argv)) return *code;

  bool ok = true;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Workload& w : workloads()) {
    const auto arrivals = shmbus::test::make_streams(w.streams, static_cast<std::int64_t>(seconds * 1e9), seed);
    if (!json) {
      std::printf("%s: %zu messages on %zu channels, T = %g ms\n", w.name.c_str(), arrivals.size(), w.streams.size(),
                  static_cast<double>(w.threshold_ns) / 1e6);
      std::printf("  %-12s %9s %15s %9s %11s\n", "policy", "sets", "within T", "dropped", "CPU/msg");
    }
    std::uint64_t bounded_within = 0;
    for (Policy p : {Policy::kBoundedDisparity, Policy::kApproximateTime, Policy::kExactTime, Policy::kAllLatest}) {
      Options o;
      o.policy = p;
      o.threshold = std::chrono::nanoseconds(w.threshold_ns);
      o.queue_size = 32;
      const Result r = replay(arrivals, w.streams.size(), o);
      const double fraction = r.sets ? static_cast<double>(r.within) / static_cast<double>(r.sets) : 0.0;
      if (p == Policy::kBoundedDisparity) {
        bounded_within = r.within;
        if (w.streams.size() == 4 && r.ns_per_message > 1000) {
          std::fprintf(stderr, "bench_sync: %s: bounded costs %.0f ns per message, above 1 us\n", w.name.c_str(),
                       r.ns_per_message);
          ok = false;
        }
      }
      if (p == Policy::kApproximateTime && r.within > bounded_within) {
        std::fprintf(stderr, "bench_sync: %s: approximate has %llu sets within T, bounded only %llu\n", w.name.c_str(),
                     static_cast<unsigned long long>(r.within), static_cast<unsigned long long>(bounded_within));
        ok = false;
      }
      if (json) {
        out.push_back({{"workload", w.name},
                       {"messages", arrivals.size()},
                       {"threshold_ns", w.threshold_ns},
                       {"policy", std::string{to_string(p)}},
                       {"sets", r.sets},
                       {"within", r.within},
                       {"within_fraction", fraction},
                       {"dropped", r.dropped},
                       {"cpu_ns_per_message", r.ns_per_message}});
      } else {
        std::printf("  %-12s %9llu %7llu %6.1f%% %9llu %8.0f ns\n", std::string{to_string(p)}.c_str(),
                    static_cast<unsigned long long>(r.sets), static_cast<unsigned long long>(r.within),
                    100.0 * fraction, static_cast<unsigned long long>(r.dropped), r.ns_per_message);
      }
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return ok ? 0 : 1;
}
