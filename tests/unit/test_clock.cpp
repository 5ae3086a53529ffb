// stamp_now_ns: the message path's CLOCK_MONOTONIC, read through the TSC.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "shmbus/clock.hpp"

namespace shmbus {
namespace {

struct Drift {
  std::int64_t max_ahead = 0;   ///< stamp beyond the clock_gettime read after it
  std::int64_t max_behind = 0;  ///< stamp before the clock_gettime read before it
  std::uint64_t reads = 0;
  bool went_back = false;
};

/// Reads stamp_now_ns between two clock_gettime reads for `ns`, with short
/// sleeps between bursts so re-anchoring and idle gaps are both exercised.
Drift measure(std::int64_t ns) {
  Drift d;
  std::int64_t last = 0;
  const std::int64_t end = mono_now_ns() + ns;
  for (int burst = 0; mono_now_ns() < end; ++burst) {
    for (int i = 0; i < 2000; ++i) {
      const std::int64_t before = mono_now_ns();
      const std::int64_t stamp = stamp_now_ns();
      const std::int64_t after = mono_now_ns();
      d.went_back = d.went_back || stamp < last;
      last = stamp;
      d.max_ahead = std::max(d.max_ahead, stamp - after);
      d.max_behind = std::max(d.max_behind, before - stamp);
      ++d.reads;
    }
    if (burst % 8 == 7) std::this_thread::sleep_for(std::chrono::milliseconds(3 + burst % 50));
  }
  return d;
}

// The bound a stamp keeps to the system clock: the conversion's error
// (microseconds at most, after the first millisecond's calibration) plus a
// scheduler's preemption between the reads, generous for a loaded VM.
constexpr std::int64_t kBoundNs = 200'000;

TEST(StampClockTest, FollowsTheSystemClockAndNeverGoesBack) {
  const Drift d = measure(400'000'000);
  std::printf("stamp clock (%s): %llu reads, at most %lld ns ahead, %lld ns behind clock_gettime\n",
              stamp_clock_uses_tsc() ? "tsc" : "clock_gettime", static_cast<unsigned long long>(d.reads),
              static_cast<long long>(d.max_ahead), static_cast<long long>(d.max_behind));
  EXPECT_FALSE(d.went_back);
  EXPECT_LT(d.max_ahead, kBoundNs);
  EXPECT_LT(d.max_behind, kBoundNs);
  EXPECT_GT(d.reads, 10'000U);
}

TEST(StampClockTest, ThreadsStartedLaterFollowItToo) {
  std::vector<Drift> drifts(3);
  std::vector<std::thread> threads;
  for (auto& d : drifts) threads.emplace_back([&d] { d = measure(150'000'000); });
  for (auto& t : threads) t.join();
  for (const Drift& d : drifts) {
    EXPECT_FALSE(d.went_back);
    EXPECT_LT(d.max_ahead, kBoundNs);
    EXPECT_LT(d.max_behind, kBoundNs);
  }
}

TEST(StampClockTest, ReadsTheTscOnlyWhereTheKernelDoes) {
  using detail::choose_stamp_clock;
  EXPECT_TRUE(choose_stamp_clock(nullptr, true, "tsc").tsc);
  EXPECT_TRUE(choose_stamp_clock("auto", true, "tsc").tsc);
  EXPECT_FALSE(choose_stamp_clock(nullptr, true, "kvm-clock").tsc);
  EXPECT_FALSE(choose_stamp_clock(nullptr, true, "hpet").tsc);
  EXPECT_FALSE(choose_stamp_clock(nullptr, false, "tsc").tsc);
  EXPECT_FALSE(choose_stamp_clock(nullptr, true, "").tsc);  // clocksource unreadable
  // SHMBUS_CLOCK=system turns it off; =tsc turns it on over another
  // clocksource, but never without an invariant TSC.
  EXPECT_FALSE(choose_stamp_clock("system", true, "tsc").tsc);
  EXPECT_TRUE(choose_stamp_clock("tsc", true, "kvm-clock").tsc);
  const detail::ClockChoice no_invariant = choose_stamp_clock("tsc", false, "tsc");
  EXPECT_FALSE(no_invariant.tsc);
  EXPECT_NE(no_invariant.error.find("no invariant TSC"), std::string_view::npos);
  const detail::ClockChoice unknown = choose_stamp_clock("fast", true, "tsc");
  EXPECT_TRUE(unknown.tsc);
  EXPECT_NE(unknown.error.find("SHMBUS_CLOCK"), std::string_view::npos);
  EXPECT_TRUE(choose_stamp_clock(nullptr, true, "tsc").error.empty());
}

}  // namespace
}  // namespace shmbus
