// Accuracy: publishers paced with absolute-deadline sleeps at known rates
// are measured by the daemon library within 1% of the rate their own
// publish times give in the daemon's window (what really happened: a
// busy machine may run a publisher late, and the rate then is lower).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <thread>
#include <vector>

#include "shmbus/monitor/monitor.hpp"
#include "shmbus/publisher.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace shmbus::monitor;
using namespace std::chrono;

namespace {

std::int64_t mono_now() { return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count(); }

struct Rate {
  double hz;
  const char* channel;
};
constexpr Rate kRates[] = {
    {1, "/rate/r1"}, {10, "/rate/r10"}, {100, "/rate/r100"}, {1000, "/rate/r1000"}, {5000, "/rate/r5000"}};

}  // namespace

TEST(AccuracyTest, KnownRatesAreMeasuredWithinOnePercent) {
  Config c = Config::parse(R"(
[defaults]
max_message_size = 64
time_list_capacity = 8192

[[channel]]
name = "/rate/r1"
window = "5s"        # a 1 Hz channel needs more than one period in its window
)",
                           "accuracy.toml");
  shmbus::test::TestDomain d{c, "acc"};
  Config monitor_config = c;
  monitor_config.domain = d.domain();
  std::atomic<bool> stop{false};
  std::vector<std::thread> publishers;
  // Each publisher's publish times (just after each publish returned: its
  // stamp was taken inside, microseconds before).
  std::vector<std::vector<std::int64_t>> published(std::size(kRates));
  for (std::size_t i = 0; i < std::size(kRates); ++i) {
    published[i].reserve(40'000);
    publishers.emplace_back([&, i, r = kRates[i]] {
      Publisher pub(r.channel, TypeInfo::bytes(), d.context());
      const auto period = duration_cast<steady_clock::duration>(duration<double>(1.0 / r.hz));
      auto next = steady_clock::now();
      std::byte payload[8]{};
      while (!stop.load(std::memory_order_relaxed)) {
        EXPECT_EQ(pub.publish(payload, sizeof(payload)), PublishResult::kOk);
        published[i].push_back(mono_now());
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
  }
  Monitor monitor(monitor_config);
  const auto end = steady_clock::now() + milliseconds(5600);
  auto next_scan = steady_clock::now();
  while (steady_clock::now() < end) {
    monitor.scan(mono_now());
    next_scan += milliseconds(100);
    std::this_thread::sleep_until(next_scan);
  }
  const std::int64_t last_scan = mono_now();
  monitor.scan(last_scan);
  stop = true;
  for (auto& t : publishers) t.join();
  const auto statuses = monitor.statuses();
  for (std::size_t i = 0; i < std::size(kRates); ++i) {
    const Rate& r = kRates[i];
    const auto it =
        std::find_if(statuses.begin(), statuses.end(), [&](const ChannelStatus& s) { return s.name == r.channel; });
    ASSERT_NE(it, statuses.end()) << r.channel;
    // The publishes in the last scan's window: f = (n-1)/(Tn-T1) of them.
    const std::int64_t window = r.hz < 10 ? 5'000'000'000 : 1'000'000'000;
    std::vector<std::int64_t> in_window;
    for (const std::int64_t t : published[i]) {
      if (t > last_scan - window && t <= last_scan) in_window.push_back(t);
    }
    ASSERT_GE(in_window.size(), 2U) << r.channel;
    const double truth =
        static_cast<double>(in_window.size() - 1) * 1e9 / static_cast<double>(in_window.back() - in_window.front());
    const double f = it->measure.frequency_hz;
    std::printf("%-12s published %9.3f Hz (asked %7.1f), measured %9.3f Hz (n=%llu, error %.3f%%)\n", r.channel, truth,
                r.hz, f, static_cast<unsigned long long>(it->measure.n), 100.0 * std::abs(f - truth) / truth);
    EXPECT_NEAR(f, truth, truth * 0.01) << r.channel;
    EXPECT_NEAR(static_cast<double>(it->measure.n), static_cast<double>(in_window.size()), 1.0) << r.channel;
    EXPECT_FALSE(it->measure.truncated) << r.channel;
  }
}

TEST(AccuracyTest, SmallTimeListIsReportedTruncatedAndStillMeasured) {
  Config c;
  c.defaults.time_list_capacity = 64;  // 1 kHz fills it in 64 ms, the window is 1 s
  shmbus::test::TestDomain d{c, "trunc"};
  Config monitor_config = c;
  monitor_config.domain = d.domain();
  Publisher pub("/fast", TypeInfo::bytes(), d.context());
  Monitor monitor(monitor_config);
  auto next = steady_clock::now();
  std::byte payload[8]{};
  for (int i = 0; i < 1500; ++i) {
    EXPECT_EQ(pub.publish(payload, sizeof(payload)), PublishResult::kOk);
    next += milliseconds(1);
    std::this_thread::sleep_until(next);
    if (i % 100 == 0) monitor.scan(mono_now());
  }
  monitor.scan(mono_now());
  const auto s = monitor.statuses().at(0);
  EXPECT_TRUE(s.measure.truncated);
  EXPECT_EQ(monitor.take_truncation_warnings(), std::vector<std::string>{"/fast"});
  // Every 100 ms the scan finds ~100 new stamps of which the list kept 64:
  // the window holds what was read, and its rate is still that of the
  // stamps (1 kHz between consecutive kept stamps, at most ~36% low overall
  // because of the holes): "computed from what is there".
  EXPECT_GT(s.measure.n, 500U);
  EXPECT_GT(s.measure.frequency_hz, 500.0);
}
