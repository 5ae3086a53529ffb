// Nodes and executors: callbacks in publish order, timers on absolute
// deadlines, stop from a callback, exceptions, in-place views, provenance,
// and the multi-threaded executor's callback groups (run under TSan).
#include <gtest/gtest.h>
#include <pthread.h>
#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/node.hpp"
#include "support/cpu_time.hpp"
#include "support/sanitizers.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::TestDomain;

namespace {

using shmbus::test::thread_cpu_seconds;

struct Num {
  static constexpr const char* kTypeName = "test/Num";
  static constexpr std::uint64_t kTypeHash = 0x6e756d5f74657374ULL;
  std::uint64_t value;
};

Config node_config(std::uint32_t capacity = 1024) {
  Config c;
  c.defaults.capacity = capacity;
  c.defaults.max_message_size = 64;
  c.defaults.wait_spin = 20us;
  // These tests are about dispatch, not crash bounds: a publisher thread
  // preempted between claim and commit (ThreadSanitizer under a loaded
  // CI machine) must not have its message judged stalled and counted lost,
  // which the default 2 ms bound did once (299 of 300 callbacks).
  c.defaults.stall_timeout = std::chrono::seconds(1);
  return c;
}

}  // namespace

TEST(NodeTest, CallbacksRunInPublishOrderPerChannel) {
  TestDomain d{node_config(), "n"};
  Node node("orderly", d.context());
  std::vector<std::uint64_t> a;
  std::vector<std::uint64_t> b;
  std::vector<std::uint64_t> a_seq;
  auto stop_when_done = [&] {
    if (a.size() == 300 && b.size() == 300) node.stop();
  };
  node.subscribe<Num>("/a", [&](const Num& m, const MessageInfo& info) {
    a.push_back(m.value);
    a_seq.push_back(info.sequence);
    stop_when_done();
  });
  node.subscribe<Num>("/b", [&](const Num& m, const MessageInfo&) {
    b.push_back(m.value);
    stop_when_done();
  });
  std::thread publisher([&] {
    TypedPublisher<Num> pa("/a", d.context());
    TypedPublisher<Num> pb("/b", d.context());
    for (std::uint64_t i = 0; i < 300; ++i) {
      EXPECT_EQ(pa.publish(Num{i}), PublishResult::kOk);
      EXPECT_EQ(pb.publish(Num{1000 + i}), PublishResult::kOk);
      if (i % 50 == 0) std::this_thread::sleep_for(1ms);
    }
  });
  node.after(20s, [&] { node.stop(); });  // bound: the test fails, never hangs
  node.spin();
  publisher.join();
  ASSERT_EQ(a.size(), 300U);
  ASSERT_EQ(b.size(), 300U);
  for (std::uint64_t i = 0; i < 300; ++i) {
    EXPECT_EQ(a[i], i);
    EXPECT_EQ(a_seq[i], i);
    EXPECT_EQ(b[i], 1000 + i);
  }
  EXPECT_EQ(node.calls(), 600U);
  EXPECT_EQ(node.errors(), 0U);
}

TEST(NodeTest, NodeNameIsTheEndpointsNode) {
  TestDomain d{node_config(), "n"};
  Node node("camera_driver", d.context());
  node.subscribe<Num>("/img", [](const Num&, const MessageInfo&) {});
  node.publisher<Num>("/img_out");
  const auto in = introspect::ChannelReader(d.domain(), "/img").view();
  const auto out = introspect::ChannelReader(d.domain(), "/img_out").view();
  ASSERT_EQ(in.subscribers.size(), 1U);
  ASSERT_EQ(out.publishers.size(), 1U);
  EXPECT_EQ(in.subscribers[0].node, "camera_driver");
  EXPECT_EQ(out.publishers[0].node, "camera_driver");
  EXPECT_THROW(Node("bad name!", d.context()), Error);
}

TEST(NodeTest, StopFromACallbackEndsSpinBeforeTheNextCallback) {
  TestDomain d{node_config(), "n"};
  Node node("stopper", d.context());
  int calls = 0;
  node.subscribe<Num>("/s", [&](const Num&, const MessageInfo&) {
    if (++calls == 3) node.stop();
  });
  TypedPublisher<Num> pub("/s", d.context());
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);
  node.spin();
  EXPECT_EQ(calls, 3);
  // The stop was consumed: the next spins go on with the rest.
  for (int i = 0; i < 100 && calls < 10; ++i) node.spin_once(100ms);
  EXPECT_EQ(calls, 10);
}

TEST(NodeTest, TimersFireOnAbsoluteDeadlinesUnderLoad) {
  TestDomain d{node_config(), "n"};
  Node node("clock", d.context());
  std::atomic<bool> hog_stop{false};
  std::vector<std::thread> hogs;  // load: more runnable threads than cores
  for (int i = 0; i < 3; ++i) {
    hogs.emplace_back([&] {
      while (!hog_stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  constexpr std::int64_t kPeriod = 5'000'000;
  std::vector<std::int64_t> fired;
  const std::int64_t start = mono_now_ns();
  Timer* timer = nullptr;
  timer = &node.every(std::chrono::nanoseconds(kPeriod), [&] {
    fired.push_back(mono_now_ns());
    if (fired.size() == 60) node.stop();
  });
  int one_shots = 0;
  node.after(12ms, [&] { ++one_shots; });
  node.spin();
  hog_stop = true;
  for (auto& h : hogs) h.join();
  ASSERT_EQ(fired.size(), 60U);
  EXPECT_EQ(one_shots, 1);
  // Never early: tick k (of runs and skipped ticks) is at or after its
  // absolute deadline start + k * period; no drift: the last tick's
  // deadline is exactly runs + missed periods from the start.
  for (std::size_t k = 0; k < fired.size(); ++k) {
    EXPECT_GE(fired[k], start + static_cast<std::int64_t>(k + 1) * kPeriod) << "tick " << k;
  }
  const std::uint64_t ticks = timer->runs() + timer->missed();
  EXPECT_EQ(timer->runs(), 60U);
  EXPECT_GE(fired.back(), start + static_cast<std::int64_t>(ticks) * kPeriod);
  EXPECT_LT(fired.back(), start + static_cast<std::int64_t>(ticks + 1) * kPeriod + 2'000'000)
      << "a tick later than a whole period is skipped and counted, not bursted";
}

TEST(NodeTest, ExceptionsAreCountedAndTheNodeGoesOn) {
  TestDomain d{node_config(), "n"};
  Node node("thrower", d.context());
  int calls = 0;
  auto& sub = node.subscribe<Num>("/e", [&](const Num& m, const MessageInfo&) {
    ++calls;
    if (m.value % 2 == 1) throw std::runtime_error("odd value");
  });
  auto& timer = node.after(1ms, [] { throw 42; });
  TypedPublisher<Num> pub("/e", d.context());
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);
  for (int i = 0; i < 100 && calls < 10; ++i) node.spin_once(100ms);
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(sub.errors(), 5U);
  EXPECT_EQ(sub.calls(), 10U);
  for (int i = 0; i < 100 && timer.runs() == 0; ++i) node.spin_once(100ms);
  EXPECT_EQ(timer.errors(), 1U);
  EXPECT_EQ(node.errors(), 6U);
  // Visible to shmtool info: the subscriber entry counts them.
  const auto v = introspect::ChannelReader(d.domain(), "/e").view();
  ASSERT_EQ(v.subscribers.size(), 1U);
  EXPECT_EQ(v.subscribers[0].errors, 5U);
}

TEST(NodeTest, OnExceptionStopRethrowsFromSpin) {
  TestDomain d{node_config(), "n"};
  Node node("strict", d.context(), NodeOptions{.on_exception = OnException::kStop});
  int calls = 0;
  node.subscribe<Num>("/x", [&](const Num& m, const MessageInfo&) {
    ++calls;
    if (m.value == 2) throw std::logic_error("bad input 2");
  });
  TypedPublisher<Num> pub("/x", d.context());
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);
  try {
    node.spin();
    FAIL() << "spin must rethrow";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "bad input 2");
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(node.errors(), 1U);
}

TEST(NodeTest, InPlaceViewIsToldWhenItWasOverwritten) {
  TestDomain d{node_config(8), "n"};
  Node node("viewer", d.context());
  TypedPublisher<Num> pub("/big", d.context());
  std::vector<std::uint64_t> seen;
  std::vector<std::uint64_t> overwritten;
  SubscriptionOptions o;
  o.in_place = true;
  o.on_overwritten = [&](const MessageInfo& info) { overwritten.push_back(info.sequence); };
  auto& sub = node.subscribe<Num>(
      "/big",
      [&](const Num& m, const MessageInfo& info) {
        seen.push_back(m.value);
        // While the first message is viewed in place, publishers lap the
        // ring (8 slots): what the callback saw is overwritten.
        if (info.sequence == 0) {
          for (std::uint64_t i = 1; i <= 9; ++i) EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);
        }
        if (info.sequence == 9) node.stop();
      },
      o);
  EXPECT_EQ(pub.publish(Num{0}), PublishResult::kOk);
  node.after(10s, [&] { node.stop(); });
  node.spin();
  ASSERT_EQ(overwritten.size(), 1U);
  EXPECT_EQ(overwritten[0], 0U);
  EXPECT_EQ(sub.overwritten(), 1U);
  EXPECT_EQ(seen.front(), 0U);
  EXPECT_EQ(seen.back(), 9U);
  EXPECT_EQ(sub.calls(), seen.size() - 1) << "the torn view is not a delivered message";
  EXPECT_GE(sub.subscriber().lost(), 1U);
}

// A message lost with none after it (its publisher stalled between claim
// and commit beyond stall_timeout) is told through on_lost at once, with its
// sequences; the next message then does not count it again.
TEST(NodeTest, OnLostTellsOfALossThatNoMessageFollowsAndTheNextDoesNotCountItAgain) {
  Config c = node_config();
  c.defaults.stall_timeout = 1ms;
  TestDomain d{c, "n"};
  Node node("told", d.context());
  Publisher pub("/held", type_info_of<Num>(), d.context());
  std::vector<LostRange> told;
  std::vector<MessageInfo> got;
  SubscriptionOptions o;
  o.on_lost = [&](const LostRange& lost) { told.push_back(lost); };
  auto& sub = node.subscribe<Num>(
      "/held", [&](const Num&, const MessageInfo& info) { got.push_back(info); }, o);
  {
    Loan held = pub.loan(sizeof(Num));  // claimed, not committed: a stalled publisher
    ASSERT_TRUE(held.valid());
    const std::int64_t give_up = mono_now_ns() + 10'000'000'000;
    while (told.empty() && mono_now_ns() < give_up) node.spin_once(1ms);
    ASSERT_EQ(told.size(), 1U);
    EXPECT_EQ(told[0].first, 0U);
    EXPECT_EQ(told[0].end, 1U);
    EXPECT_EQ(sub.subscriber().lost(), 1U);
    *held.as<Num>() = Num{0};
    // Too late: passed over. The writer cannot tell; the reader counted it lost.
    EXPECT_EQ(pub.commit(held), PublishResult::kOk);
  }
  const Num next{1};
  ASSERT_EQ(pub.publish(&next, sizeof next), PublishResult::kOk);
  const std::int64_t give_up = mono_now_ns() + 10'000'000'000;
  while (got.empty() && mono_now_ns() < give_up) node.spin_once(1ms);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].sequence, 1U);
  EXPECT_EQ(got[0].lost_before, 0U);  // told already
  EXPECT_EQ(told.size(), 1U);
}

// A callback that throws on a message overwritten while it read it in place
// (as a generated view throws on a length that points nowhere in torn
// bytes) is not a failed callback: the message was never delivered.
TEST(NodeTest, AnExceptionFromATornInPlaceReadIsNotAnError) {
  TestDomain d{node_config(8), "n"};
  Node node("viewer", d.context());
  TypedPublisher<Num> pub("/torn", d.context());
  std::vector<std::uint64_t> delivered;
  SubscriptionOptions o;
  o.in_place = true;
  auto& sub = node.subscribe<Num>(
      "/torn",
      [&](const Num& m, const MessageInfo& info) {
        if (info.sequence == 0) {
          for (std::uint64_t i = 1; i <= 9; ++i)
            EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);  // lap the 8-slot ring
          throw std::runtime_error("read garbage");
        }
        delivered.push_back(m.value);
        if (info.sequence == 9) node.stop();
      },
      o);
  EXPECT_EQ(pub.publish(Num{0}), PublishResult::kOk);
  node.after(10s, [&] { node.stop(); });
  node.spin();
  EXPECT_EQ(sub.overwritten(), 1U);
  EXPECT_EQ(node.errors(), 0U) << "the torn read's exception is not the callback's failure";
  EXPECT_EQ(sub.subscriber().errors(), 0U);
  ASSERT_FALSE(delivered.empty());
  EXPECT_EQ(delivered.back(), 9U);
}

TEST(NodeTest, WhatACallbackPublishesCitesItsTrigger) {
  TestDomain d{node_config(), "n"};
  Node node("relay", d.context());
  auto& out = node.publisher<Num>("/out");
  Subscriber side("/side", TypeInfo::bytes(), d.context());
  Publisher side_pub("/side", TypeInfo::bytes(), d.context());
  node.subscribe<Num>("/in", [&](const Num& m, const MessageInfo&) {
    std::byte buf[8];
    (void)side.take(buf);  // anything else the callback takes is cited too
    EXPECT_EQ(out.publish(Num{m.value * 10}), PublishResult::kOk);
    node.stop();
  });
  TypedSubscriber<Num> reader("/out", d.context());
  TypedPublisher<Num> in("/in", d.context());
  EXPECT_EQ(in.publish(Num{0}), PublishResult::kOk);
  EXPECT_EQ(in.publish(Num{7}), PublishResult::kOk);
  const std::uint64_t x = 1;
  EXPECT_EQ(side_pub.publish(&x, sizeof x), PublishResult::kOk);
  node.after(10s, [&] { node.stop(); });
  node.spin();
  MessageInfo info;
  const auto m = reader.take(&info);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->value, 0U);
  ASSERT_EQ(info.input_count, 2U);
  EXPECT_EQ(info.provenance[0].channel_index, introspect::ChannelReader(d.domain(), "/in").view().registry_index);
  EXPECT_EQ(info.provenance[0].sequence, 0U);
  EXPECT_EQ(info.provenance[1].channel_index, introspect::ChannelReader(d.domain(), "/side").view().registry_index);
  EXPECT_EQ(info.provenance[1].sequence, 0U);
}

// rclcpp's spelling: `auto pub = node.publisher<T>(...)` copies a handle
// that shares the node's publisher (before: a deleted copy constructor).
TEST(NodeTest, PublishersAreHandlesThatCopyAndShareOnePublisher) {
  TestDomain d{node_config(), "n"};
  Node node("handles", d.context());
  auto pub = node.publisher<Num>("/handle");
  auto& same = node.publisher<Num>("/handle2");
  const auto copy = pub;
  TypedPublisher<Num>& typed = pub;  // where a function takes the publisher
  TypedSubscriber<Num> reader("/handle", d.context());
  EXPECT_EQ(pub.publish(Num{1}), PublishResult::kOk);
  EXPECT_EQ(copy.publish(Num{2}), PublishResult::kOk);
  EXPECT_EQ(typed.publish(Num{3}), PublishResult::kOk);
  auto loan = copy.loan();
  ASSERT_TRUE(loan);
  loan.as<Num>()->value = 4;
  EXPECT_EQ(copy.commit(loan), PublishResult::kOk);
  for (std::uint64_t v = 1; v <= 4; ++v) {
    const auto m = reader.take();
    ASSERT_TRUE(m.has_value()) << v;
    EXPECT_EQ(m->value, v);
  }
  // One publisher behind all of them: one endpoint, four messages.
  const auto view = introspect::ChannelReader(d.domain(), "/handle").view();
  EXPECT_EQ(view.publishers.size(), 1U);
  EXPECT_EQ(view.messages, 4U);
  EXPECT_EQ(&pub->untyped(), &copy->untyped());
  EXPECT_EQ(same.publish(Num{5}), PublishResult::kOk);
  // The untyped form is a handle too.
  auto raw = node.publisher("/handle_raw", TypeInfo::bytes());
  const std::uint64_t x = 6;
  EXPECT_EQ(raw.publish(&x, sizeof x), PublishResult::kOk);
  EXPECT_EQ(introspect::ChannelReader(d.domain(), "/handle_raw").view().publishers.at(0).node, "handles");
}

TEST(NodeTest, SubscriptionsAddedFromACallbackAreServed) {
  TestDomain d{node_config(), "n"};
  Node node("grower", d.context());
  TypedPublisher<Num> late_pub("/late", d.context());
  int late_calls = 0;
  node.after(1ms, [&] {
    node.subscribe<Num>("/late", [&](const Num&, const MessageInfo&) {
      if (++late_calls == 1) node.stop();
    });
    node.after(5ms, [&] { EXPECT_EQ(late_pub.publish(Num{1}), PublishResult::kOk); });
  });
  node.after(10s, [&] { node.stop(); });
  node.spin();
  EXPECT_EQ(late_calls, 1);
}

TEST(NodeTest, IdleNodeWithAHundredSubscriptionsUsesNoCpu) {
  if (const char* e = test::emulated()) GTEST_SKIP() << "CPU time under " << e << " is the emulator's";
  TestDomain d{node_config(16), "n"};
  Node node("idle", d.context());
  for (int i = 0; i < 100; ++i) {
    node.subscribe<Num>("/idle" + std::to_string(i), [](const Num&, const MessageInfo&) {});
  }
  std::thread spinner([&] { node.spin(); });
  std::this_thread::sleep_for(100ms);  // past the spin phase, asleep in futex_waitv
  const double before = thread_cpu_seconds(spinner.native_handle());
  std::this_thread::sleep_for(500ms);
  const double used = thread_cpu_seconds(spinner.native_handle()) - before;
  // A wake still works: a message on the 100th channel is dispatched.
  std::atomic<int> woke{0};
  node.subscribe<Num>("/wake", [&](const Num&, const MessageInfo&) {
    woke = 1;
    node.stop();
  });
  EXPECT_EQ(TypedPublisher<Num>("/wake", d.context()).publish(Num{1}), PublishResult::kOk);
  spinner.join();
  EXPECT_LT(used, 0.005) << "an idle node sleeps: " << used * 1e3 << " ms of CPU in 500 ms";
  EXPECT_EQ(woke.load(), 1);
}

// The multi-threaded executor: a mutually exclusive group never runs two of
// its callbacks at once, a reentrant group does, and no subscription's
// callbacks overlap each other (publish order per channel).
TEST(NodeTest, MultiThreadedExecutorHonoursCallbackGroups) {
  TestDomain d{node_config(), "n"};
  Node node("parallel", d.context());
  auto& exclusive = node.create_callback_group(CallbackGroupKind::kMutuallyExclusive);
  auto& reentrant = node.create_callback_group(CallbackGroupKind::kReentrant);
  std::atomic<int> in_exclusive{0};
  std::atomic<int> max_exclusive{0};
  std::atomic<int> met{0};  // the two reentrant callbacks meet inside
  std::atomic<bool> met_ok{false};
  std::atomic<int> done{0};
  std::vector<std::uint64_t> order_a;
  std::vector<std::uint64_t> order_b;
  auto exclusive_cb = [&](std::vector<std::uint64_t>& order) {
    return [&](const Num& m, const MessageInfo&) {
      const int now = ++in_exclusive;
      int prev = max_exclusive.load();
      while (now > prev && !max_exclusive.compare_exchange_weak(prev, now)) {
      }
      order.push_back(m.value);
      std::this_thread::sleep_for(50us);
      --in_exclusive;
      ++done;
    };
  };
  SubscriptionOptions ex;
  ex.group = &exclusive;
  node.subscribe<Num>("/ex_a", exclusive_cb(order_a), ex);
  node.subscribe<Num>("/ex_b", exclusive_cb(order_b), ex);
  SubscriptionOptions re;
  re.group = &reentrant;
  auto meet = [&](const Num&, const MessageInfo&) {
    ++met;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (met.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (met.load() >= 2) met_ok = true;
    ++done;
  };
  node.subscribe<Num>("/re_a", meet, re);
  node.subscribe<Num>("/re_b", meet, re);
  Executor executor(4);
  executor.add(node);
  std::thread spinner([&] { executor.spin(); });
  {
    TypedPublisher<Num> a("/ex_a", d.context());
    TypedPublisher<Num> b("/ex_b", d.context());
    TypedPublisher<Num> ra("/re_a", d.context());
    TypedPublisher<Num> rb("/re_b", d.context());
    EXPECT_EQ(ra.publish(Num{0}), PublishResult::kOk);
    EXPECT_EQ(rb.publish(Num{0}), PublishResult::kOk);
    for (std::uint64_t i = 0; i < 200; ++i) {
      EXPECT_EQ(a.publish(Num{i}), PublishResult::kOk);
      EXPECT_EQ(b.publish(Num{i}), PublishResult::kOk);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (done.load() < 402 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  executor.stop();
  spinner.join();
  EXPECT_EQ(done.load(), 402);
  EXPECT_EQ(max_exclusive.load(), 1) << "a mutually exclusive group ran two callbacks at once";
  EXPECT_TRUE(met_ok.load()) << "the reentrant group's callbacks never ran in parallel";
  ASSERT_EQ(order_a.size(), 200U);
  for (std::uint64_t i = 0; i < 200; ++i) EXPECT_EQ(order_a[i], i);
}

TEST(NodeTest, CancelledSubscriptionGetsNoCallbacksAndDoesNotWakeTheExecutor) {
  TestDomain d{node_config(), "n"};
  Node node("canceller", d.context());
  int calls = 0;
  auto& sub = node.subscribe<Num>("/c", [&](const Num&, const MessageInfo&) { ++calls; });
  TypedPublisher<Num> pub("/c", d.context());
  EXPECT_EQ(pub.publish(Num{1}), PublishResult::kOk);
  for (int i = 0; i < 100 && calls == 0; ++i) node.spin_once(100ms);
  ASSERT_EQ(calls, 1);
  sub.cancel();
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(pub.publish(Num{i}), PublishResult::kOk);  // pending, never taken
  std::thread spinner([&] { node.spin(); });
  std::this_thread::sleep_for(50ms);
  const double before = thread_cpu_seconds(spinner.native_handle());
  std::this_thread::sleep_for(300ms);
  const double used = thread_cpu_seconds(spinner.native_handle()) - before;
  node.stop();
  spinner.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(sub.calls(), 1U);
  EXPECT_LT(used, 0.03) << "pending messages of a cancelled subscription kept the executor awake";
}

TEST(NodeTest, OnExceptionStopRethrowsFromSpinOnce) {
  TestDomain d{node_config(), "n"};
  Node node("strict_once", d.context(), NodeOptions{.on_exception = OnException::kStop});
  node.subscribe<Num>("/y", [&](const Num&, const MessageInfo&) { throw std::runtime_error("no"); });
  EXPECT_EQ(TypedPublisher<Num>("/y", d.context()).publish(Num{1}), PublishResult::kOk);
  bool thrown = false;
  for (int i = 0; i < 100 && !thrown; ++i) {
    try {
      node.spin_once(100ms);
    } catch (const std::runtime_error&) {
      thrown = true;
    }
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(node.spin_once(10ms), 0U) << "after the rethrow the node spins again";
}

// A fixed-layout T is delivered only from a message of exactly sizeof(T)
// bytes. A peer may publish another size under T's type name (a raw or
// Python publisher): a shorter message was delivered as a whole T (the rest
// provenance or an older lap's bytes, or past the mapping on the ring's last
// slot), and a longer one stopped a copying subscription for good
// (kBufferTooSmall, never consumed). Each is now counted and skipped.
namespace {
struct Wide {
  static constexpr const char* kTypeName = "test/Wide";
  static constexpr std::uint64_t kTypeHash = 0x776964655f747374ULL;
  std::uint64_t words[4];
};

void publish_wrong_sizes_then_one_wide(Publisher& raw) {
  const std::array<std::byte, 40> bytes{};
  ASSERT_EQ(raw.publish(std::span{bytes}.first(8)), PublishResult::kOk);   // shorter
  ASSERT_EQ(raw.publish(std::span{bytes}.first(40)), PublishResult::kOk);  // longer
  Wide w{{1, 2, 3, 4}};
  ASSERT_EQ(raw.publish(std::as_bytes(std::span{&w, 1})), PublishResult::kOk);
}
}  // namespace

TEST(NodeTest, AFixedTypeIsDeliveredOnlyFromAMessageOfItsSizeInPlaceOrCopied) {
  for (const bool in_place : {true, false}) {
    TestDomain d{node_config(8), "n"};
    Node node("sized", d.context());
    Publisher raw("/wide", type_info_of<Wide>(), d.context());
    std::vector<std::uint64_t> seen;
    SubscriptionOptions o;
    o.in_place = in_place;
    auto& sub = node.subscribe<Wide>(
        "/wide", [&](const Wide& w, const MessageInfo&) { seen.push_back(w.words[3]); }, o);
    publish_wrong_sizes_then_one_wide(raw);
    for (int i = 0; i < 50 && seen.empty(); ++i) node.spin_once(10ms);
    EXPECT_EQ(seen, std::vector<std::uint64_t>{4}) << (in_place ? "in place" : "copied");
    EXPECT_EQ(sub.subscriber().discarded(), 2U) << (in_place ? "in place" : "copied");
  }
}

TEST(NodeTest, ATypedSubscriberTakesOnlyMessagesOfItsSize) {
  TestDomain d{node_config(8), "n"};
  Publisher raw("/wide", type_info_of<Wide>(), d.context());
  TypedSubscriber<Wide> sub("/wide", d.context());
  publish_wrong_sizes_then_one_wide(raw);
  const std::optional<Wide> w = sub.take();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->words[3], 4U);
  EXPECT_EQ(sub.untyped().discarded(), 2U);
}

TEST(NodeTest, AFixedTypeLargerThanTheChannelsSlotIsRefusedWhenSubscribed) {
  {
    // A channel that grows takes it: its publisher grows it for the first.
    TestDomain d{node_config(8), "g"};
    PublisherOptions small;
    small.max_message_size = 16;
    TypedPublisher<Wide> pub("/narrow", d.context(), small);
    Node node("narrow", d.context());
    int got = 0;
    node.subscribe<Wide>("/narrow", [&](const Wide&, const MessageInfo&) { ++got; });
    ASSERT_EQ(pub.publish(Wide{}), PublishResult::kOk);
    for (int i = 0; i < 100 && got == 0; ++i) node.spin_once(std::chrono::milliseconds(10));
    EXPECT_EQ(got, 1);
  }
  Config fixed = node_config(8);
  fixed.defaults.grow = false;
  TestDomain d{fixed, "n"};
  PublisherOptions small;
  small.max_message_size = 16;
  Publisher raw("/narrow", type_info_of<Wide>(), d.context(), small);
  Node node("narrow", d.context());
  for (const bool in_place : {true, false}) {
    SubscriptionOptions o;
    o.in_place = in_place;
    try {
      node.subscribe<Wide>(
          "/narrow", [](const Wide&, const MessageInfo&) {}, o);
      ADD_FAILURE() << "subscribed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kTypeMismatch);
      EXPECT_NE(std::string(e.what()).find("test/Wide is 32 bytes"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(TypedSubscriber<Wide>("/narrow", d.context()), Error);
}
