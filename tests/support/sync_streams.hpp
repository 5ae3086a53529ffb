#pragma once
// Randomised multi-sensor streams for the synchronizer's property tests and
// its policy benchmark: per channel a period, stamp jitter, a transport
// delay with jitter and a phase; arrivals merged in arrival order, so
// arrival order and timestamp order differ between channels. A channel's
// own messages arrive in order (a ring is FIFO). Same seed, same streams.

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "shmbus/sync.hpp"

namespace shmbus::test {

struct StreamSpec {
  std::int64_t period_ns = 10'000'000;
  std::int64_t stamp_jitter_ns = 0;  ///< uniform in [-j, j], below period / 2
  std::int64_t delay_ns = 0;         ///< transport delay
  std::int64_t delay_jitter_ns = 0;  ///< plus uniform in [0, j]
  std::int64_t phase_ns = 0;
  double loss = 0;  ///< probability that a message never arrives
};

struct Arrival {
  std::int64_t arrival_ns = 0;
  sync::Item item;
};

inline std::vector<Arrival> make_streams(const std::vector<StreamSpec>& specs, std::int64_t duration_ns,
                                         std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Arrival> all;
  for (std::size_t c = 0; c < specs.size(); ++c) {
    const StreamSpec& s = specs[c];
    std::uniform_int_distribution<std::int64_t> jitter(-s.stamp_jitter_ns, s.stamp_jitter_ns);
    std::uniform_int_distribution<std::int64_t> delay(0, s.delay_jitter_ns);
    std::bernoulli_distribution lost(s.loss);
    std::int64_t last_arrival = 0;
    std::uint64_t seq = 0;
    for (std::int64_t t = s.phase_ns; t < duration_ns; t += s.period_ns) {
      const std::int64_t stamp = t + jitter(rng);
      const std::int64_t arrival = std::max(last_arrival, stamp + s.delay_ns + delay(rng));
      const bool drop = lost(rng);
      if (drop) continue;
      last_arrival = arrival;
      all.push_back(Arrival{arrival, sync::Item{c, stamp, seq++, nullptr}});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Arrival& a, const Arrival& b) {
    return a.arrival_ns != b.arrival_ns ? a.arrival_ns < b.arrival_ns : a.item.channel < b.item.channel;
  });
  return all;
}

/// Random specs for property tests: 2-5 channels, periods 5-100 ms, jitter
/// up to a quarter period, delays up to 60 ms with jitter up to 40 ms.
inline std::vector<StreamSpec> random_specs(std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::vector<StreamSpec> specs(static_cast<std::size_t>(pick(2, 5)));
  for (StreamSpec& s : specs) {
    s.period_ns = pick(5, 100) * 1'000'000;
    s.stamp_jitter_ns = pick(0, s.period_ns / 4);
    s.delay_ns = pick(0, 60) * 1'000'000;
    s.delay_jitter_ns = pick(0, 40) * 1'000'000;
    s.phase_ns = pick(0, s.period_ns);
    s.loss = static_cast<double>(pick(0, 10)) / 100.0;
  }
  return specs;
}

}  // namespace shmbus::test
