// The solo publisher's handshakes, with the interleavings forced: a peer
// publisher stops itself (SHMBUS_TEST_PAUSE, SIGSTOP) inside a step of the
// grant, the registration or a solo publish, the test moves the other side
// through its step, and resumes it (SIGCONT). Real processes, real signals.
// Asserted: every message once and intact, no grant while two publishers
// are live, and every sleeper woken within its bound.
//
// What ordering alone decides (a load passing a store in the store buffer)
// cannot be forced by stopping a process, whose stores drain when it
// stops: tests/model/handshakes.py checks those orderings exhaustively.
// The one a stop can show is a wake check the CPU satisfied early
// (wake-early): the holder's load of the sleepers before its publish is
// visible, which is allowed on every CPU because that check has no fence.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "multiprocess/stopped_peer.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;
using shmbus::test::solo_expected;

namespace {

/// How long a sleeper waits: a missed wake shows as a wait this long.
constexpr auto kSleep = 30s;
/// A wake that came, on a loaded 2-core machine: well under kSleep.
constexpr auto kWokenWithin = 10s;

std::int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

/// A subscriber's wait of kSleep on a thread of its own: whether it
/// returned with a message pending, and when.
struct Sleeper {
  explicit Sleeper(Subscriber& sub)
      : thread([this, &sub] {
          pending = sub.wait(kSleep);
          woke = now_ns();
        }) {}
  void join() { thread.join(); }
  std::atomic<bool> pending{false};
  std::atomic<std::int64_t> woke{0};
  std::thread thread;
};

class HandshakeTest : public ::testing::Test {
 protected:
  void TearDown() override { introspect::clean_domain(domain_, false); }

  /// The channels are created by this process with a stall_timeout long
  /// enough that a revoker waits for a stopped holder instead of fencing
  /// it off (that path is ClaimTest's): the handshake under test is the
  /// one a live, running holder takes part in.
  static Config config(const std::string& domain) {
    Config c = test::peer_config(domain, "handshake_test");
    c.defaults.stall_timeout = std::chrono::seconds(60);
    return c;
  }

  std::unique_ptr<ChildProcess> stopped_peer(const std::string& channel, const std::string& point, int tag, int count,
                                             int pace_us) {
    return test::stopped_peer(domain_, channel, point, tag, count, 64, pace_us);
  }

  void race(const std::string& channel, const std::string& point);

  introspect::ChannelView view(const std::string& channel) const {
    return introspect::ChannelReader(domain_, channel).view();
  }

  std::string domain_ = test::unique_domain("handshake");
  Context ctx_{config(domain_)};
};

}  // namespace

// A revocation while a solo publish is in flight. The holder has passed its
// grant check and taken its fence-free wake check before anyone slept
// (wake-early). A second publisher registers: it revokes the grant and waits
// for the holder's publish to end. A subscriber then goes to sleep: it sees
// no grant (so it runs no membarrier) and no message. The holder commits,
// wakes nobody (its check saw no sleeper) and leaves. Its revoker must then
// wake the sleeper; before, nobody did, and the sleeper slept its whole
// timeout with the message there.
TEST_F(HandshakeTest, RevocationDuringASoloPublishWakesTheSleeper) {
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  const std::string channel = "/revoked";
  Subscriber sub(channel, TypeInfo::bytes(), ctx_);
  auto holder = stopped_peer(channel, "wake-early", 7, 1, 0);
  EXPECT_TRUE(view(channel).solo) << "alone, the peer publishes solo";
  std::atomic<bool> registered{false};
  std::thread revoker([&] {
    Publisher second(channel, TypeInfo::bytes(), ctx_);
    registered = true;
  });
  const bool revoked = test::wait_for_view(domain_, channel, [](const auto& v) { return !v.solo; });
  Sleeper sleeper(sub);
  const bool asleep = test::wait_for_view(domain_, channel, [](const auto& v) { return v.sleepers == 1; });
  EXPECT_FALSE(registered) << "the revoker waits for the holder's publish";
  const std::int64_t resumed = now_ns();
  holder->signal(SIGCONT);
  sleeper.join();
  revoker.join();
  ASSERT_TRUE(revoked) << "the second publisher revokes the grant";
  ASSERT_TRUE(asleep) << "the subscriber sleeps";
  EXPECT_TRUE(sleeper.pending);
  EXPECT_LT(sleeper.woke - resumed, std::chrono::nanoseconds(kWokenWithin).count())
      << "the sleeper was woken by its timeout, not by the publish";
  std::vector<std::byte> buf(4096);
  const TakeResult r = sub.take(buf);
  ASSERT_TRUE(r.ok());
  std::uint32_t tag = 0, counter = 0;
  EXPECT_TRUE(test::payload_intact(buf.data(), r.info.size, tag, counter));
  EXPECT_EQ(tag, 7U);
  EXPECT_EQ(r.info.sequence, 0U);
  EXPECT_EQ(r.info.lost_before, 0U);
  const int status = holder->wait(20s);
  ASSERT_TRUE(WIFEXITED(status)) << holder->output();
  EXPECT_EQ(holder->fields().at("published"), 1) << holder->output();
}

namespace {

/// Two publishers on one channel, after a handshake was forced: each
/// publishes `n` checksummed messages (tags 1 and 2), and a subscriber
/// process takes them all. No grant while both are live; nothing torn,
/// duplicated or out of order per publisher; every sequence delivered or
/// counted lost.
void expect_two_publishers_share(const std::string& domain, const std::string& channel, Publisher& mine,
                                 ChildProcess& peer, ChildProcess& sub, int n) {
  // No grant kept while both are live. A publisher that asks for one (the
  // peer resumed in its constructor, and every kSoloRetryEvery shared
  // publishes) takes it and gives it back once it counts two
  // (keep_solo_grant): a view may catch that moment, so the check is that
  // the grant goes. One kept would stay, since nobody is left to revoke it.
  const auto no_grant_kept = [&] {
    return test::wait_for_view(domain, channel, [](const introspect::ChannelView& v) { return !v.solo; });
  };
  EXPECT_TRUE(no_grant_kept()) << "two publishers: no grant";
  std::vector<std::byte> msg(64);
  for (int i = 0; i < n; ++i) {
    test::fill_payload(msg.data(), msg.size(), 1, static_cast<std::uint32_t>(i));
    EXPECT_EQ(mine.publish(msg), PublishResult::kOk);
    if (i == n / 2) {
      EXPECT_TRUE(no_grant_kept()) << "two publishers: no grant";
    }
    std::this_thread::sleep_for(200us);
  }
  const int pub_status = peer.wait(60s);
  ASSERT_TRUE(WIFEXITED(pub_status)) << peer.output();
  EXPECT_EQ(peer.fields().at("published"), n) << peer.output();
  const int sub_status = sub.wait(60s);
  ASSERT_TRUE(WIFEXITED(sub_status) && WEXITSTATUS(sub_status) == 0) << sub.output();
  const auto f = sub.fields();
  EXPECT_EQ(f.at("torn"), 0) << sub.output();
  EXPECT_EQ(f.at("order"), 0) << "a message twice, or out of its publisher's order: " << sub.output();
  EXPECT_EQ(f.at("accounting"), 0) << sub.output();
  EXPECT_EQ(f.at("last_seq"), 2 * n - 1) << sub.output();
  EXPECT_EQ(f.at("delivered") + f.at("lost"), 2 * n) << sub.output();
}

}  // namespace

// Two publishers construct at once, the peer stopped at `point` of its
// construction, this process's publisher constructed meanwhile; then both
// publish on the shared path.
void HandshakeTest::race(const std::string& channel, const std::string& point) {
  constexpr int kMessages = 300;
  Subscriber keep_open(channel, TypeInfo::bytes(), ctx_);
  ChildProcess sub({kPeer, "sub", domain_, channel, std::to_string(2 * kMessages), "60000"});
  test::wait_for_subscribers(domain_, channel, 2);
  auto peer = stopped_peer(channel, point, 2, kMessages, 200);
  EXPECT_EQ(view(channel).solo, point == "granted") << "the peer holds the grant it took, and nobody else does";
  Publisher mine(channel, TypeInfo::bytes(), ctx_);
  EXPECT_FALSE(view(channel).solo) << "two entries: the grant is revoked or given back";
  peer->signal(SIGCONT);
  expect_two_publishers_share(domain_, channel, mine, *peer, sub, kMessages);
}

// The grant taken, the publishers not yet counted (granted): a second
// publisher registers now. It must see the grant and revoke it; the holder,
// resumed, counts two publishers and gives up. (Which of this and the next
// test happens in a race is what keep_solo_grant's and claim_entry's
// fences decide: tests/model/handshakes.py.)
TEST_F(HandshakeTest, RegistrationAfterAGrantRevokesIt) {
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  race("/granted", "granted");
}

// The registrant's entry claimed, the grant not yet looked at (registered):
// a publisher that asks for the grant now must count two publishers and
// give it back, and the registrant, resumed, finds no grant to revoke.
TEST_F(HandshakeTest, GrantAfterARegistrationIsGivenBack) {
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  race("/registered", "registered");
}

// The grant taken, the publishers not yet counted (granted), and a
// subscriber goes to sleep now, with no timeout to save it: it sees the
// grant and runs the membarrier. The holder, resumed, keeps the grant and
// publishes solo; its fence-free wake check must see the sleeper.
TEST_F(HandshakeTest, SleeperDuringAGrantIsWokenByTheFirstSoloPublish) {
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  const std::string channel = "/first";
  Subscriber sub(channel, TypeInfo::bytes(), ctx_);
  auto holder = stopped_peer(channel, "granted", 5, 20, 1000);
  Sleeper sleeper(sub);
  const bool asleep = test::wait_for_view(domain_, channel, [](const auto& v) { return v.sleepers == 1; });
  const std::int64_t resumed = now_ns();
  holder->signal(SIGCONT);
  sleeper.join();
  ASSERT_TRUE(asleep) << "the subscriber sleeps";
  EXPECT_TRUE(sleeper.pending);
  EXPECT_LT(sleeper.woke - resumed, std::chrono::nanoseconds(kWokenWithin).count())
      << "the sleeper was woken by its timeout, not by the publish";
  const int status = holder->wait(20s);
  ASSERT_TRUE(WIFEXITED(status)) << holder->output();
  EXPECT_TRUE(view(channel).messages == 20U);
  std::vector<std::byte> buf(4096);
  std::uint32_t expected = 0;
  for (TakeResult r = sub.take(buf); r.ok(); r = sub.take(buf)) {
    std::uint32_t tag = 0, counter = 0;
    EXPECT_TRUE(test::payload_intact(buf.data(), r.info.size, tag, counter));
    EXPECT_EQ(counter, expected + static_cast<std::uint32_t>(r.info.lost_before));
    expected = counter + 1;
  }
  EXPECT_EQ(expected, 20U) << "the last message arrived";
}

namespace {
/// Stops a checking subscriber peer; expects every message it took intact
/// and in order, every sequence delivered or counted lost. Its fields.
std::map<std::string, long long> stop_reader(ChildProcess& reader) {
  reader.signal(SIGTERM);
  reader.wait(60s);
  const auto f = reader.fields();
  EXPECT_EQ(f.at("torn"), 0) << reader.output();
  EXPECT_EQ(f.at("order"), 0) << reader.output();
  EXPECT_EQ(f.at("accounting"), 0) << reader.output();
  return f;
}
}  // namespace

// A process that cannot use membarrier (a seccomp filter) cannot fence a
// solo holder's plain stores when it revokes the grant, nor when it goes
// to sleep: the revocation would be a store-buffering pair that neither side
// orders, and two writers could claim one sequence. So it closes the channel
// to solo publishing for good before it registers: the grant held is
// revoked, and none is given again, even after that process has gone.
// Before, the holder kept its grant alongside, or took it back.
TEST_F(HandshakeTest, AProcessThatCannotUseMembarrierClosesTheChannelToSoloPublishingForGood) {
#ifndef SHMBUS_TEST_SECCOMP
  GTEST_SKIP() << "this build has no libseccomp to deny membarrier with";
#endif
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  const std::string channel = "/fenceless";
  ChildProcess reader({kPeer, "sub", domain_, channel, "0", "60000"});
  test::wait_for_subscribers(domain_, channel, 1);
  ChildProcess holder({kPeer, "pub", domain_, channel, "1", "30000", "64", "100"});
  ASSERT_TRUE(test::wait_for_view(domain_, channel, [](const auto& v) { return v.solo && v.messages > 100; }))
      << "alone, the holder publishes solo";
  ChildProcess fenceless({kPeer, "pub", domain_, channel, "2", "2000", "64", "100"}, false,
                         {"SHMBUS_TEST_DENY_MEMBARRIER=1"});
  const int status = fenceless.wait(60s);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << fenceless.output();
  // Alone again, the holder asks for the grant every 1024 publishes.
  const std::uint64_t then = view(channel).messages;
  int solo_seen = 0;
  while (view(channel).messages < then + 3000 && !holder.exited()) {
    solo_seen += view(channel).solo ? 1 : 0;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(solo_seen, 0) << "the grant came back after the process that cannot fence had gone";
  EXPECT_TRUE(view(channel).solo_closed);
  EXPECT_EQ(holder.wait(120s), 0) << holder.output();
  const auto f = stop_reader(reader);
  EXPECT_EQ(f.at("delivered") + f.at("lost"), 32000) << reader.output();
}

// The same for a subscriber: without membarrier it cannot be the heavy side
// of a solo holder's fence-free wake check, so it closes the channel too.
TEST_F(HandshakeTest, ASubscriberThatCannotUseMembarrierClosesTheChannelToo) {
#ifndef SHMBUS_TEST_SECCOMP
  GTEST_SKIP() << "this build has no libseccomp to deny membarrier with";
#endif
  if (!solo_expected()) GTEST_SKIP() << "no solo publishing in this build or on this kernel";
  const std::string channel = "/fenceless_reader";
  { Publisher create(channel, TypeInfo::bytes(), ctx_); }
  ChildProcess holder({kPeer, "pub", domain_, channel, "1", "20000", "64", "100"});
  ASSERT_TRUE(test::wait_for_view(domain_, channel, [](const auto& v) { return v.solo; }));
  ChildProcess reader({kPeer, "sub", domain_, channel, "0", "60000"}, false, {"SHMBUS_TEST_DENY_MEMBARRIER=1"});
  EXPECT_TRUE(test::wait_for_view(domain_, channel, [](const auto& v) { return v.solo_closed && !v.solo; }));
  EXPECT_EQ(holder.wait(120s), 0) << holder.output();
  stop_reader(reader);
}
