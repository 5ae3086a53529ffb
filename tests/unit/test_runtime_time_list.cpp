#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using shmbus::test::TestDomain;

namespace {
Config tiny_time_list() {
  Config c;
  c.defaults.capacity = 16;
  c.defaults.max_message_size = 8;
  c.defaults.time_list_capacity = 8;
  return c;
}
}  // namespace

TEST(TimeListTest, EveryPublishIsStampedWithItsPublishTime) {
  TestDomain d{tiny_time_list(), "tl"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  std::vector<std::int64_t> published;
  std::vector<std::byte> buf(8);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(pub.publish(buf), PublishResult::kOk);
    published.push_back(sub.take(buf).info.publish_time_ns);
  }
  introspect::ChannelReader reader(d.domain(), "/a");
  introspect::TimeListSnapshot snap;
  reader.snapshot(snap);
  EXPECT_EQ(snap.total, 5U);
  EXPECT_EQ(snap.capacity, 8U);
  ASSERT_EQ(snap.stamps.size(), 5U);
  for (std::size_t i = 0; i < 5; ++i) {
    // Stamps keep full ns resolution (the lap tag sits above the low 56 bits).
    EXPECT_EQ(snap.stamps[i], published[i]);
  }
  EXPECT_TRUE(std::is_sorted(snap.stamps.begin(), snap.stamps.end()));
}

TEST(TimeListTest, FullListOverwritesTheOldest) {
  TestDomain d{tiny_time_list(), "tl"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context(), SubscriberOptions{.history = 16});
  std::vector<std::byte> buf(8);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(pub.publish(buf), PublishResult::kOk);
  std::vector<std::int64_t> times;
  while (true) {
    const TakeResult r = sub.take(buf);
    if (!r.ok()) break;
    times.push_back(r.info.publish_time_ns);
  }
  ASSERT_EQ(times.size(), 13U);
  introspect::ChannelReader reader(d.domain(), "/a");
  introspect::TimeListSnapshot snap;
  reader.snapshot(snap);
  EXPECT_EQ(snap.total, 13U);
  ASSERT_EQ(snap.stamps.size(), 8U);
  EXPECT_EQ(snap.stamps.front(), times[5]);
  EXPECT_EQ(snap.stamps.back(), times[12]);
}

TEST(TimeListTest, HookCanBeTurnedOffForBenchmarks) {
  TestDomain d{tiny_time_list(), "tl"};
  Publisher pub("/a", TypeInfo::bytes(), d.context(), PublisherOptions{.notify_hook = false});
  EXPECT_EQ(pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
  introspect::ChannelReader reader(d.domain(), "/a");
  introspect::TimeListSnapshot snap;
  reader.snapshot(snap);
  EXPECT_EQ(snap.total, 0U);
  EXPECT_TRUE(snap.stamps.empty());
}

TEST(TimeListTest, ConcurrentSnapshotsNeverReturnAStampTwiceOrOutOfItsLap) {
  TestDomain d{tiny_time_list(), "tl"};
  introspect::TimeListSnapshot snap;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    Publisher pub("/a", TypeInfo::bytes(), d.context());
    std::vector<std::byte> buf(8);
    while (!stop.load()) EXPECT_EQ(pub.publish(buf), PublishResult::kOk);
  });
  while (true) {
    try {
      introspect::ChannelReader probe(d.domain(), "/a");
      break;
    } catch (const std::exception&) {
      std::this_thread::yield();
    }
  }
  introspect::ChannelReader reader(d.domain(), "/a");
  for (int i = 0; i < 20000; ++i) {
    reader.snapshot(snap);
    ASSERT_LE(snap.stamps.size(), 8U);
    // One writer: stamps in index order are non-decreasing; an entry of a
    // stale lap would break that.
    ASSERT_TRUE(std::is_sorted(snap.stamps.begin(), snap.stamps.end())) << "iteration " << i;
  }
  stop = true;
  writer.join();
}
