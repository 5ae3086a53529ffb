#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"
#include "support/cpu_time.hpp"
#include "support/roudi.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::TestDomain;

namespace {

using shmbus::test::thread_cpu_seconds;

Config config_with_spin(std::chrono::nanoseconds spin, Transport transport) {
  Config c;
  c.defaults.transport = transport;
  // iceoryx: a subscriber that waited for its channel gets what was sent
  // before RouDi connected it from the publisher's history.
  c.defaults.publisher_history = 16;
  c.defaults.capacity = 16;
  c.defaults.max_message_size = 16;
  c.defaults.wait_spin = spin;
  return c;
}

/// Every test runs over both transports (iceoryx: RouDi started for the
/// program); sleeping and waking go through the channel's futex word either
/// way.
class WaitTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (GetParam() == Transport::kIceoryx) {
      ASSERT_TRUE(test::Roudi::ensure()) << "iox-roudi did not start";
    }
  }
};

}  // namespace

TEST_P(WaitTest, WaitTimesOutWithoutData) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(sub.wait(30ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
}

TEST_P(WaitTest, WaitReturnsAtOnceWhenDataIsThere) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  EXPECT_EQ(pub.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  EXPECT_TRUE(sub.wait(0ns));
  std::vector<std::byte> buf(16);
  EXPECT_TRUE(sub.take(buf).ok());
  EXPECT_FALSE(sub.wait(0ns));
}

TEST_P(WaitTest, SleepingSubscriberIsWokenByAPublishAndBurnsNoCpu) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  double cpu = 0;
  bool woke = false;
  std::thread waiter([&] {
    const double c0 = thread_cpu_seconds();
    woke = sub.wait(5s);
    cpu = thread_cpu_seconds() - c0;
  });
  std::this_thread::sleep_for(300ms);
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  EXPECT_EQ(pub.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  waiter.join();
  EXPECT_TRUE(woke);
  // 300 ms of waiting: a spinning wait would use ~0.3 s of CPU.
  EXPECT_LT(cpu, 0.05);
  std::vector<std::byte> buf(16);
  EXPECT_TRUE(sub.take(buf).ok());
}

TEST_P(WaitTest, WaitSetWakesForTheChannelThatReceived) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Subscriber a("/a", TypeInfo::bytes(), d.context());
  Subscriber b("/b", TypeInfo::bytes(), d.context());
  Subscriber c("/c", TypeInfo::bytes(), d.context());
  WaitSet ws;
  ws.attach(a);
  const std::size_t ib = ws.attach(b);
  ws.attach(c);
  std::vector<std::size_t> ready;
  EXPECT_EQ(ws.wait(20ms, ready), 0U);
  EXPECT_TRUE(ready.empty());
  double cpu = 0;
  std::size_t n = 0;
  std::thread waiter([&] {
    const double c0 = thread_cpu_seconds();
    n = ws.wait(5s, ready);
    cpu = thread_cpu_seconds() - c0;
  });
  std::this_thread::sleep_for(300ms);
  Publisher pb("/b", TypeInfo::bytes(), d.context());
  EXPECT_EQ(pb.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  waiter.join();
  EXPECT_EQ(n, 1U);
  EXPECT_EQ(ready, std::vector<std::size_t>{ib});
  EXPECT_LT(cpu, 0.05);
}

TEST_P(WaitTest, SpinningWaitCatchesAQuickMessage) {
  TestDomain d{config_with_spin(200ms, GetParam()), "w"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(pub.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  });
  EXPECT_TRUE(sub.wait(2s));
  t.join();
}

TEST_P(WaitTest, PublishersMakeTheWakeCallOnlyWhenSomeoneSleeps) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  introspect::ChannelReader reader(d.domain(), "/a");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(pub.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  EXPECT_EQ(reader.view().wakeups, 0U) << "no sleeper: no futex wake system call";
  std::vector<std::byte> buf(16);
  while (sub.take(buf).ok()) {
  }
  std::thread waiter([&] { EXPECT_TRUE(sub.wait(5s)); });
  while (reader.view().sleepers == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(pub.publish(std::vector<std::byte>(4)), PublishResult::kOk);
  waiter.join();
  EXPECT_EQ(reader.view().wakeups, 1U);
  EXPECT_EQ(reader.view().sleepers, 0U);
}

// Before: start + nanoseconds::max() overflowed into the past and the wait
// returned false at once. Now the deadline saturates: it waits for data.
TEST_P(WaitTest, WaitForeverWaitsForData) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  WaitSet set;
  Subscriber other("/b", TypeInfo::bytes(), d.context());
  set.attach(sub);
  set.attach(other);
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    Publisher pub("/a", TypeInfo::bytes(), d.context());
    EXPECT_EQ(pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(sub.wait(std::chrono::nanoseconds::max()));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 40ms) << "returned before the publish";
  std::vector<std::byte> buf(16);
  EXPECT_TRUE(sub.take(buf).ok());
  std::vector<std::size_t> ready;
  EXPECT_EQ(set.wait(std::chrono::nanoseconds::max(), ready), 1U);
  EXPECT_EQ(ready, std::vector<std::size_t>{0});
  late.join();
}

// Processes start in any order: a subscriber made before its channel exists
// attaches when the channel appears (before: Error kNotFound at once).
TEST_P(WaitTest, SubscriberWaitsForItsChannelToAppear) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  EXPECT_THROW(Subscriber("/later", std::nullopt, d.context()), Error);
  Subscriber sub("/later", std::nullopt, d.context(), SubscriberOptions{.wait_for_channel = true});
  EXPECT_FALSE(sub.attached());
  EXPECT_EQ(sub.channel(), "/later");
  std::vector<std::byte> buf(16);
  EXPECT_EQ(sub.take(buf).status, TakeStatus::kNoData);
  EXPECT_FALSE(sub.wait(20ms));
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    Publisher pub("/later", TypeInfo::bytes(), d.context());
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
  });
  EXPECT_TRUE(sub.wait(5s));
  EXPECT_TRUE(sub.attached());
  EXPECT_EQ(sub.type().name, TypeInfo::bytes().name);
  EXPECT_TRUE(sub.take(buf).ok());
  late.join();
}

// A waiting subscriber starts at the channel's first message: three sent
// before it looked are delivered from sequence 0; of a burst larger than
// the ring, what was overwritten is its first message's lost_before.
// Nothing is skipped without being counted.
TEST_P(WaitTest, AWaitingSubscriberStartsAtTheChannelsFirstMessageAndCountsTheRest) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  for (const std::uint64_t count : {std::uint64_t{3}, std::uint64_t{200}}) {
    SCOPED_TRACE(count);
    const std::string name = "/first" + std::to_string(count);
    Subscriber sub(name, std::nullopt, d.context(), SubscriberOptions{.wait_for_channel = true});
    Publisher pub(name, TypeInfo::bytes(), d.context());
    for (std::uint64_t i = 0; i < count; ++i) ASSERT_EQ(pub.publish(&i, sizeof i), PublishResult::kOk);
    ASSERT_TRUE(sub.attach());
    std::uint64_t delivered = 0;
    std::uint64_t lost = 0;
    std::uint64_t expected = 0;
    std::vector<std::byte> buf(16);
    for (TakeResult r = sub.take(buf); r.ok(); r = sub.take(buf)) {
      EXPECT_EQ(r.info.sequence, expected + r.info.lost_before);
      std::uint64_t value = 0;
      std::memcpy(&value, buf.data(), sizeof value);
      EXPECT_EQ(value, r.info.sequence);
      lost += r.info.lost_before;
      expected = r.info.sequence + 1;
      ++delivered;
    }
    // iceoryx keeps no history by default: what went before the port
    // existed is lost, and counted (by the publisher's count, when a take
    // finds nothing more).
    EXPECT_EQ(delivered + sub.lost(), count);
    if (GetParam() == Transport::kShm) {
      EXPECT_EQ(sub.lost(), lost);
      if (count <= sub.capacity()) {
        EXPECT_EQ(lost, 0U);
      }
    }
  }
}

TEST_P(WaitTest, WaitSetWaitsForAbsentChannelsBesidePresentOnes) {
  TestDomain d{config_with_spin(0us, GetParam()), "w"};
  Publisher present_pub("/present", TypeInfo::bytes(), d.context());
  Subscriber present("/present", std::nullopt, d.context());
  Subscriber absent("/absent", std::nullopt, d.context(), SubscriberOptions{.wait_for_channel = true});
  WaitSet set;
  set.attach(absent);
  set.attach(present);
  std::vector<std::size_t> ready;
  EXPECT_EQ(set.wait(20ms, ready), 0U);
  std::thread late([&] {
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(present_pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
    std::this_thread::sleep_for(50ms);
    Publisher pub("/absent", TypeInfo::bytes(), d.context());
    EXPECT_EQ(pub.publish(std::vector<std::byte>(8)), PublishResult::kOk);
  });
  // Woken (one ready, not a timeout) by the present channel alone.
  ASSERT_EQ(set.wait(5s, ready), 1U);
  EXPECT_EQ(ready, std::vector<std::size_t>{1}) << "the present channel wakes the set while the other is absent";
  std::vector<std::byte> buf(16);
  EXPECT_TRUE(present.take(buf).ok());
  ASSERT_EQ(set.wait(5s, ready), 1U);
  EXPECT_EQ(ready, std::vector<std::size_t>{0});
  EXPECT_TRUE(absent.attached());
  EXPECT_TRUE(absent.take(buf).ok());
  late.join();
}

INSTANTIATE_TEST_SUITE_P(Transports, WaitTest, ::testing::Values(Transport::kShm, Transport::kIceoryx),
                         test::transport_name);
