// The slot claim names its owner: publishers stopped (SIGSTOP) or killed
// (SIGKILL) at each step of claim, write, commit and stamp, through the
// runtime's SHMBUS_TEST_PAUSE hook, with real processes and real signals.
// Asserted: no torn delivery, no permanent stall, every skipped sequence
// counted, and no stamp lost or read twice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "multiprocess/stopped_peer.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/cpu_time.hpp"
#include "support/sanitizers.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;
using shmbus::test::solo_expected;

namespace {

/// stall_timeout (2 ms) plus room for a loaded 2-core machine's scheduler.
constexpr std::int64_t kMaxPublishNs = 100'000'000;

class ClaimTest : public ::testing::Test {
 protected:
  void TearDown() override { introspect::clean_domain(domain_, false); }

  /// A peer publisher that stops itself at `point` of its first publish.
  std::unique_ptr<ChildProcess> stopped_victim(const std::string& channel, const std::string& point) {
    return test::stopped_peer(domain_, channel, point, 9, 1, 4096);
  }

  /// Publishes `n` self-checking messages; returns how many were dropped
  /// and the longest publish. With `lockstep`, each publish waits until the
  /// channel's subscribers have caught up (wait_until_caught_up), so the
  /// losses they count are the ones under test and no overrun.
  std::pair<int, std::int64_t> publish_laps(Publisher& pub, int n, std::uint32_t first = 0, bool lockstep = false) {
    std::optional<introspect::ChannelReader> reader;
    if (lockstep) reader.emplace(domain_, pub.channel());
    std::vector<std::byte> msg(64);
    int dropped = 0;
    std::int64_t worst = 0;
    for (int i = 0; i < n; ++i) {
      test::fill_payload(msg.data(), msg.size(), 1, first + static_cast<std::uint32_t>(i));
      const auto t0 = std::chrono::steady_clock::now();
      if (pub.publish(msg) != PublishResult::kOk) ++dropped;
      worst = std::max<std::int64_t>(worst, (std::chrono::steady_clock::now() - t0).count());
      if (reader) {
        test::wait_until_caught_up(*reader);
      } else {
        std::this_thread::sleep_for(100us);
      }
    }
    return {dropped, worst};
  }

  static void expect_clean(ChildProcess& sub) {
    sub.signal(SIGTERM);
    const int status = sub.wait(60s);
    ASSERT_FALSE(sub.timed_out()) << sub.output();
    ASSERT_TRUE(WIFEXITED(status)) << sub.output();
    const auto f = sub.fields();
    EXPECT_EQ(f.at("torn"), 0) << sub.output();
    EXPECT_EQ(f.at("accounting"), 0) << sub.output();
    EXPECT_EQ(f.at("counter_lost"), f.at("lost")) << sub.output();
  }

  std::string domain_ = test::unique_domain("claim");
  Context ctx_{test::peer_config(domain_, "claim_test")};
};

}  // namespace

// Killed at each step: taken (the slot's claim word is the victim's, its
// state still the previous lap's), claimed (slot in writing state), written
// (payload in, not committed), committed (not stamped). The next laps go on
// at once.
TEST_F(ClaimTest, PublisherKilledAtEachStepStallsNobody) {
  for (const std::string point : {"taken", "claimed", "written", "committed"}) {
    SCOPED_TRACE(point);
    const std::string channel = "/kill_" + point;
    ChildProcess sub({kPeer, "sub", domain_, channel, "0", "60000"});
    test::wait_for_subscribers(domain_, channel, 1);
    auto victim = stopped_victim(channel, point);
    victim->signal(SIGKILL);
    victim->wait(10s);
    Publisher pub(channel, TypeInfo::bytes(), ctx_);
    const auto [dropped, worst] = publish_laps(pub, 100, 0, true);
    EXPECT_EQ(dropped, 0) << "the dead writer's slot is taken over, not waited on every lap";
    EXPECT_LT(worst, kMaxPublishNs);
    std::this_thread::sleep_for(50ms);
    expect_clean(sub);
    const auto f = sub.fields();
    EXPECT_EQ(f.at("lost"), point == "committed" ? 0 : 1) << sub.output();
    EXPECT_EQ(f.at("delivered"), point == "committed" ? 101 : 100) << sub.output();
  }
}

// Before: the slot kept the pid of its previous writer (the CAS happened,
// the pid store did not). That writer lived, so every later lap stalled
// stall_timeout on the slot and dropped its message, forever.
TEST_F(ClaimTest, WriterKilledRightAfterItsClaimWhileThePreviousWriterLivesIsTakenOver) {
  ChildProcess sub({kPeer, "sub", domain_, "/prev", "0", "60000"});
  test::wait_for_subscribers(domain_, "/prev", 1);
  Publisher pub("/prev", TypeInfo::bytes(), ctx_);
  publish_laps(pub, 16, 0, true);  // one lap: this process wrote every slot last
  auto victim = stopped_victim("/prev", "claimed");
  victim->signal(SIGKILL);
  victim->wait(10s);
  const auto [dropped, worst] = publish_laps(pub, 160, 16, true);
  EXPECT_EQ(dropped, 0) << "ten laps past the dead claim: none may be dropped";
  EXPECT_LT(worst, kMaxPublishNs);
  std::this_thread::sleep_for(50ms);
  expect_clean(sub);
  EXPECT_EQ(sub.fields().at("lost"), 1) << sub.output();
}

// A live writer stopped past stall_timeout keeps its slot (taking it over
// would put two writers in it); the others drop instead, each after one
// stall at most, and once it resumes its commit completes normally. Stopped
// with the claim taken but the state not yet written (taken), or with the
// payload written (written).
TEST_F(ClaimTest, LiveWriterStalledPastTheTimeoutIsNeverTakenOver) {
  for (const std::string point : {"taken", "written"}) {
    SCOPED_TRACE(point);
    const std::string channel = "/stall_" + point;
    ChildProcess sub({kPeer, "sub", domain_, channel, "0", "60000"});
    test::wait_for_subscribers(domain_, channel, 1);
    auto victim = stopped_victim(channel, point);
    // Alone, the victim publishes solo: it is stopped inside a solo publish,
    // and our registration must fence it off, not wait for it.
    EXPECT_EQ(introspect::ChannelReader(domain_, channel).view().solo, solo_expected());
    const auto t0 = std::chrono::steady_clock::now();
    Publisher pub(channel, TypeInfo::bytes(), ctx_);
    EXPECT_LT((std::chrono::steady_clock::now() - t0).count(), kMaxPublishNs)
        << "registration waits stall_timeout at most";
    EXPECT_FALSE(introspect::ChannelReader(domain_, channel).view().solo) << "two publishers: no grant";
    const auto [dropped, worst] = publish_laps(pub, 100);
    EXPECT_EQ(dropped, 6) << "one drop per lap over the stopped writer's slot";
    EXPECT_LT(worst, kMaxPublishNs);
    victim->signal(SIGCONT);
    const int status = victim->wait(20s);
    ASSERT_TRUE(WIFEXITED(status)) << victim->output();
    EXPECT_EQ(victim->fields().at("published"), 1) << "its commit, from its own claim, succeeded";
    publish_laps(pub, 20, 100);
    std::this_thread::sleep_for(50ms);
    expect_clean(sub);
  }
}

// The grant follows the publisher count: one publisher holds it, a second
// ends it (both then claim with CAS), and the one left asks again within
// 1024 publishes. Across the hand-overs every message arrives once, in
// sequence order, and the time list holds one stamp per message.
TEST_F(ClaimTest, SoloGrantFollowsThePublishers) {
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  Subscriber sub("/solo", TypeInfo::bytes(), ctx_);
  auto view = [&] { return introspect::ChannelReader(domain_, "/solo").view(); };
  std::uint64_t next = 0;
  int received = 0;
  std::vector<std::byte> msg(64);
  // Each publish is read at once (the ring has 16 slots).
  auto publish = [&](Publisher& p, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(p.publish(msg), PublishResult::kOk);
      ASSERT_TRUE(sub.read([&](std::span<const std::byte>, const MessageInfo& info) {
                       EXPECT_EQ(info.sequence, next) << "each sequence once, in order";
                       next = info.sequence + 1;
                     })
                      .ok());
      ++received;
    }
  };
  auto one = std::make_unique<Publisher>("/solo", TypeInfo::bytes(), ctx_);
  EXPECT_TRUE(view().solo);
  publish(*one, 100);
  {
    Publisher two("/solo", TypeInfo::bytes(), ctx_);
    EXPECT_FALSE(view().solo);
    for (int i = 0; i < 100; ++i) {
      publish(*one, 1);
      publish(two, 1);
    }
    EXPECT_FALSE(view().solo) << "no grant while two publish";
  }
  publish(*one, 1100);
  EXPECT_TRUE(view().solo) << "alone again: granted within 1024 publishes";
  publish(*one, 100);
  const auto v = view();
  EXPECT_EQ(received, 1500);
  EXPECT_EQ(v.messages, 1500U);
  EXPECT_EQ(v.stamps, 1500U) << "one stamp per message, none claimed twice";
  EXPECT_EQ(sub.lost(), 0U);
  one.reset();
  EXPECT_FALSE(view().solo) << "a closing holder gives the grant back";
}

// Both sides of a ping-pong publish solo and sleep in their waits (each
// pauses 0-49 us before it answers, longer than the peer's 20 us spin), so
// every wake goes through the solo publisher's unfenced check of the
// sleepers and the sleeper's membarrier. A wake missed would leave a wait
// to its 1 s timeout: none may.
TEST_F(ClaimTest, SoloPublishersWakeEverySleeper) {
  constexpr int kRounds = 2000;
  Subscriber pong("/pong", TypeInfo::bytes(), ctx_);
  Publisher ping("/ping", TypeInfo::bytes(), ctx_);
  ChildProcess echo({kPeer, "echo", domain_, "/ping", "/pong", std::to_string(kRounds)});
  ASSERT_TRUE(echo.wait_for_output("ready", 20s)) << echo.output();
  test::wait_for_subscribers(domain_, "/ping", 1);
  std::vector<std::byte> msg(64), buf(4096);
  int timeouts = 0;
  for (int i = 0; i < kRounds && timeouts < 5; ++i) {
    if (i == kRounds / 2) {
      EXPECT_EQ(introspect::ChannelReader(domain_, "/ping").view().solo, solo_expected());
      EXPECT_EQ(introspect::ChannelReader(domain_, "/pong").view().solo, solo_expected());
    }
    test::fill_payload(msg.data(), msg.size(), 1, static_cast<std::uint32_t>(i));
    ASSERT_EQ(ping.publish(msg), PublishResult::kOk);
    // A wait also returns for a claim not yet committed (Subscriber::wait):
    // then it waits again, within the same second.
    bool got = false;
    const auto until = std::chrono::steady_clock::now() + 1s;
    while (!got && pong.wait(until - std::chrono::steady_clock::now())) {
      const TakeResult r = pong.take(buf);
      if (!r.ok()) continue;
      got = true;
      std::uint32_t tag = 0, counter = 0;
      ASSERT_TRUE(test::payload_intact(buf.data(), r.info.size, tag, counter));
      EXPECT_EQ(counter, static_cast<std::uint32_t>(i)) << "the echo of this round";
    }
    if (!got) ++timeouts;
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7) % 50));
  }
  EXPECT_EQ(timeouts, 0) << "a wake missed by the test's subscriber";
  const int status = echo.wait(20s);
  ASSERT_TRUE(WIFEXITED(status)) << echo.output();
  EXPECT_EQ(echo.fields().at("echoed"), kRounds) << echo.output();
  EXPECT_EQ(echo.fields().at("timeouts"), 0) << "a wake missed by the echo's subscriber";
}

// A stamp claimed before a higher index but stored after it: the monitor's
// incremental read keeps it pending and reads it when it lands (before: it
// was skipped for good once later stamps were written).
TEST_F(ClaimTest, StampStoredAfterLaterOnesIsReadExactlyOnce) {
  Publisher pub("/stamp", TypeInfo::bytes(), ctx_);
  auto victim = stopped_victim("/stamp", "stamp");
  introspect::ChannelReader reader(domain_, "/stamp");
  introspect::TimeListCursor cursor;
  std::vector<std::int64_t> stamps;
  publish_laps(pub, 10);
  EXPECT_EQ(reader.read_stamps_since(cursor, stamps), 0U);
  EXPECT_EQ(stamps.size(), 10U);
  EXPECT_EQ(cursor.pending.size(), 1U) << "the victim's claimed index";
  victim->signal(SIGCONT);
  ASSERT_TRUE(WIFEXITED(victim->wait(20s)));
  EXPECT_EQ(reader.read_stamps_since(cursor, stamps), 0U);
  ASSERT_EQ(stamps.size(), 11U) << "the late stamp is read when it lands";
  EXPECT_TRUE(cursor.pending.empty());
  EXPECT_EQ(reader.read_stamps_since(cursor, stamps), 0U);
  EXPECT_EQ(stamps.size(), 11U) << "and never again";
  std::sort(stamps.begin(), stamps.end());
  EXPECT_EQ(std::adjacent_find(stamps.begin(), stamps.end()), stamps.end());
}

// A subscriber killed while asleep in a blocking wait: reclaiming its entry
// removes its sleep, so publishers stop making futex calls for it (before:
// `waiters` stayed incremented and every publish made a system call).
TEST_F(ClaimTest, SubscriberKilledAsleepLeavesNoSleeperBehind) {
  Publisher pub("/sleep", TypeInfo::bytes(), ctx_);
  ChildProcess sub({kPeer, "sub", domain_, "/sleep", "0", "60000"});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (introspect::ChannelReader(domain_, "/sleep").view().sleepers != 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(introspect::ChannelReader(domain_, "/sleep").view().sleepers, 1U);
  sub.signal(SIGKILL);
  sub.wait(10s);
  Subscriber fresh("/sleep", TypeInfo::bytes(), ctx_);  // registration reclaims the dead entry
  const auto v = introspect::ChannelReader(domain_, "/sleep").view();
  EXPECT_EQ(v.sleepers, 0U);
  publish_laps(pub, 10);
  EXPECT_EQ(introspect::ChannelReader(domain_, "/sleep").view().wakeups, v.wakeups)
      << "nobody sleeps: no publish may wake";
}

// Four publishing processes at different rates for 30 s (SHMBUS_TIME_LIST_SOAK_S
// overrides), read incrementally like shmbusd reads them: the stamps read
// are exactly the publish times a lossless subscriber received (none
// skipped, none read twice, none from a stale lap).
TEST_F(ClaimTest, TimeListReadIsExactWithFourPublishersAtDifferentRates) {
  const char* env = std::getenv("SHMBUS_TIME_LIST_SOAK_S");  // NOLINT(concurrency-mt-unsafe)
  const auto duration = std::chrono::seconds(env != nullptr ? std::atoi(env) : 30);
  // A ring and a time list deep enough (65536 entries: ~3.8 s of the
  // ~17 kHz total, so a reader descheduled on a loaded sanitizer machine
  // still catches up), and a stall_timeout long enough (a publisher preempted
  // mid-write is waited for, not skipped), that neither the subscriber nor
  // the time-list reader loses one: the comparison below is exact.
  Config deep = test::peer_config(domain_, "claim_test");
  deep.defaults.capacity = 65536;
  deep.defaults.time_list_capacity = 65536;
  deep.defaults.max_message_size = 64;
  deep.defaults.stall_timeout = std::chrono::seconds(2);
  Context deep_ctx{deep};
  Subscriber sub("/soak", TypeInfo::bytes(), deep_ctx);
  std::atomic<bool> stop{false};
  std::vector<std::int64_t> received;
  std::thread taker([&] {
    std::vector<std::byte> buf(64);
    while (true) {
      const bool stopping = stop.load();
      const TakeResult r = sub.take(buf);
      if (r.ok()) {
        received.push_back(r.info.publish_time_ns);
      } else if (stopping && !sub.pending()) {
        break;
      } else {
        sub.wait(5ms);
      }
    }
  });
  introspect::ChannelReader reader(domain_, "/soak");
  std::vector<std::unique_ptr<ChildProcess>> pubs;
  for (const char* pace_us : {"100", "230", "500", "1000"}) {
    pubs.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kPeer, "pub", domain_, "/soak", pace_us, "0", "64", pace_us}));
  }
  introspect::TimeListCursor cursor;
  std::vector<std::int64_t> stamps;
  std::uint64_t overwritten = 0;
  const auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < duration) {
    overwritten += reader.read_stamps_since(cursor, stamps);
    std::this_thread::sleep_for(5ms);
  }
  std::uint64_t published = 0;
  for (auto& p : pubs) {
    p->signal(SIGTERM);
    ASSERT_TRUE(WIFEXITED(p->wait(30s))) << p->output();
    published += static_cast<std::uint64_t>(p->fields().at("published"));
  }
  overwritten += reader.read_stamps_since(cursor, stamps);
  stop = true;
  taker.join();
  EXPECT_EQ(sub.lost(), 0U) << "the subscriber must be lossless for the comparison";
  EXPECT_EQ(overwritten, 0U) << "the reader keeps up: nothing may be lost to overwriting";
  EXPECT_TRUE(cursor.pending.empty());
  EXPECT_EQ(stamps.size(), published) << "every stamp read once";
  EXPECT_EQ(reader.view().stamps, published);
  std::sort(stamps.begin(), stamps.end());
  std::sort(received.begin(), received.end());
  EXPECT_TRUE(stamps == received) << "the stamps read are the publish times, one for one";
  std::printf("published %llu, stamps read %zu, received %zu\n", static_cast<unsigned long long>(published),
              stamps.size(), received.size());
}

// Liveness says "alive" unless it knows: a subscriber in another pid
// namespace (a container sharing /dev/shm) registers as pid 1 of its
// namespace. Before: its pid was judged in ours (our pid 1 has another start
// time), so it was "dead" and its entry was reclaimed under it.
TEST_F(ClaimTest, EndpointInAnotherPidNamespaceIsNeverJudgedDead) {
  if (::geteuid() != 0) GTEST_SKIP() << "a pid namespace needs root";
  ChildProcess ns_sub({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM", kPeer, "sub",
                       domain_, "/ns", "0", "60000"});
  test::wait_for_subscribers(domain_, "/ns", 1);
  auto v = introspect::ChannelReader(domain_, "/ns").view();
  ASSERT_EQ(v.subscribers.size(), 1U);
  EXPECT_EQ(v.subscribers[0].pid, 1) << "pid 1 of its own namespace";
  EXPECT_TRUE(v.subscribers[0].alive);
  Subscriber fresh("/ns", TypeInfo::bytes(), ctx_);  // registration reclaims what it judges dead
  v = introspect::ChannelReader(domain_, "/ns").view();
  EXPECT_EQ(v.subscribers.size(), 2U) << "the other namespace's subscriber keeps its entry";
  Publisher pub("/ns", TypeInfo::bytes(), ctx_);
  publish_laps(pub, 20);
  // unshare --fork leaves SIGTERM to its child: send it to the subscriber
  // itself (its pid here is unshare's only child).
  std::ifstream children("/proc/" + std::to_string(ns_sub.pid()) + "/task/" + std::to_string(ns_sub.pid()) +
                         "/children");
  pid_t inner = 0;
  ASSERT_TRUE(children >> inner);
  ::kill(inner, SIGTERM);
  const int status = ns_sub.wait(20s);
  EXPECT_FALSE(ns_sub.timed_out());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ns_sub.output();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (introspect::ChannelReader(domain_, "/ns").view().subscribers.size() != 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(introspect::ChannelReader(domain_, "/ns").view().subscribers.size(), 1U)
      << "it unregistered itself when it ended";
}

// A reader waiting on a sequence whose writer stopped between its claim and
// its commit sleeps on the futex: the commit wakes it, and it looks again
// only when the stall is to be judged (a dead writer after 100 us, any
// writer at its stall_timeout). wait() used to return at once (the write
// cursor is past the sequence) while take() found nothing, so a wait loop
// spun through the whole stall_timeout, on the core the writer needs.
TEST_F(ClaimTest, AReaderWaitingOnAStoppedWritersSlotSleepsUntilTheCommitWakesIt) {
  SubscriberOptions options;
  options.stall_timeout = 10s;  // the writer is stopped well within it
  Subscriber sub("/asleep", TypeInfo::bytes(), ctx_, options);
  auto victim = stopped_victim("/asleep", "written");
  std::vector<std::byte> buffer(4096);
  const double cpu_before = test::thread_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + 500ms;
  int takes = 0;
  for (auto now = start; now < until; now = std::chrono::steady_clock::now()) {
    sub.wait(until - now);
    EXPECT_EQ(sub.take(buffer).status, TakeStatus::kNoData);
    ++takes;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = test::thread_cpu_seconds() - cpu_before;
  EXPECT_LT(cpu, 0.05 * wall) << takes << " takes in " << wall << " s";
  // Resumed, the writer commits and its wake ends the wait.
  victim->signal(SIGCONT);
  const auto resumed = std::chrono::steady_clock::now();
  TakeResult r;
  while (!r.ok() && std::chrono::steady_clock::now() - resumed < 20s) {
    sub.wait(20s);
    r = sub.take(buffer);
  }
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.sequence, 0U);
  EXPECT_EQ(sub.lost(), 0U);
  victim->wait(10s);
}
