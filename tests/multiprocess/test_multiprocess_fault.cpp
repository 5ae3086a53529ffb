// Fault tests: publishers and subscribers killed with SIGKILL at random
// moments while others go on. Nothing may hang, no torn payload may be
// delivered, every loss must be counted, dead entries must be reclaimed.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "shmbus/error.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/roudi.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;

namespace {

/// Kill iterations of the random-kill test. Each spawns a publisher that
/// writes 4 KiB messages flat out and kills it 0-2 ms later.
constexpr int kKillIterations = 300;
/// The stall bound the tests hold the ring to: stall_timeout (2 ms) plus
/// generous room for a loaded 2-core CI machine's scheduler.
constexpr long long kMaxStallUs = 100'000;

void expect_clean_subscriber(ChildProcess& s) {
  const int status = s.wait(60s);
  ASSERT_FALSE(s.timed_out()) << "subscriber hung: " << s.output();
  ASSERT_TRUE(WIFEXITED(status)) << s.output();
  const auto f = s.fields();
  std::printf("subscriber: %s", s.output().c_str());
  EXPECT_EQ(f.at("torn"), 0) << s.output();
  EXPECT_EQ(f.at("order"), 0) << s.output();
  EXPECT_EQ(f.at("accounting"), 0) << s.output();
  EXPECT_EQ(f.at("counter_lost"), f.at("lost")) << "every loss counted in shared memory: " << s.output();
  EXPECT_GT(f.at("delivered"), 0) << s.output();
  EXPECT_LE(f.at("max_stall_us"), kMaxStallUs) << s.output();
}

/// Over both transports: the peers inherit SHMBUS_TEST_TRANSPORT. On
/// iceoryx, RouDi's monitoring frees a killed process's chunks; shmbus's
/// own entries are reclaimed as on the ring.
class FaultTest : public test::TransportDomainTest {
 protected:
  FaultTest() : TransportDomainTest("fault") {}
};

/// The files in /tmp of the iceoryx runtime of process `pid`
/// (shmbus.<comm>.<pid> and its .lock).
std::vector<std::string> runtime_files(pid_t pid) {
  std::vector<std::string> found;
  const std::string tail = "." + std::to_string(pid);
  for (const auto& f : std::filesystem::directory_iterator("/tmp")) {
    std::string name = f.path().filename().string();
    if (name.rfind("shmbus.", 0) != 0) continue;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) name.resize(name.size() - 5);
    if (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
      found.push_back(f.path().string());
    }
  }
  return found;
}

}  // namespace

TEST_P(FaultTest, PublisherKilledMidWriteStallsNobodyAndLosesAtMostItsOwnMessage) {
  ChildProcess sub({kPeer, "sub", domain_, "/f", "0", "60000"});
  test::wait_for_subscribers(domain_, "/f", 1);
  {
    ChildProcess dying({kPeer, "die-mid-write", domain_, "/f", "9", "4096"});
    const int status = dying.wait(20s);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  // The dead publisher holds sequence 0 in writing state. A live publisher
  // now laps the 16-slot ring several times: it must take the dead slot over
  // and the subscriber must skip sequence 0 as lost.
  Context ctx{test::peer_config(domain_, "fault_test")};
  Publisher pub("/f", TypeInfo::bytes(), ctx);
  const introspect::ChannelReader reader(domain_, "/f");
  std::vector<std::byte> msg(64);
  std::int64_t worst_publish_ns = 0;
  for (std::uint32_t i = 0; i < 100; ++i) {
    test::fill_payload(msg.data(), msg.size(), 1, i);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(pub.publish(msg), PublishResult::kOk);
    worst_publish_ns = std::max<std::int64_t>(worst_publish_ns, (std::chrono::steady_clock::now() - t0).count());
    test::wait_until_caught_up(reader);  // exact loss counts: no overrun on a loaded machine
  }
  EXPECT_LT(worst_publish_ns, kMaxStallUs * 1000) << "publisher stalled behind the dead slot";
  std::this_thread::sleep_for(50ms);
  sub.signal(SIGTERM);
  expect_clean_subscriber(sub);
  const auto f = sub.fields();
  EXPECT_EQ(f.at("last_seq"), 100);
  if (GetParam() == Transport::kShm) {
    EXPECT_EQ(f.at("lost"), 1) << "the dead publisher's half-written message, and nothing else";
  } else {
    EXPECT_EQ(f.at("lost"), 0) << "an iceoryx chunk never sent is no message: RouDi takes it back";
  }
  EXPECT_EQ(f.at("delivered"), 100);
  // The dead publisher's entry is reclaimed at the next registration.
  const auto before = introspect::ChannelReader(domain_, "/f").view();
  Publisher another("/f", TypeInfo::bytes(), ctx);
  const auto after = introspect::ChannelReader(domain_, "/f").view();
  for (const auto& p : after.publishers) EXPECT_TRUE(p.alive) << "pid " << p.pid;
  EXPECT_EQ(after.publishers.size(), 2U);
  (void)before;
}

/// The ring only: iceoryx 2.0 cannot take this. A publisher killed inside
/// publish() leaves the inter-process mutex of its port's chunk distributor
/// locked, and RouDi deadlocks at its next discovery change on that port
/// (eclipse-iceoryx/iceoryx#779 and #1711, open upstream): a RouDi
/// under these kills hung within a few hundred of them here.
class RingFaultTest : public ::testing::Test {
 protected:
  void TearDown() override { introspect::clean_domain(domain_, false); }
  std::string domain_ = shmbus::test::unique_domain("fault");
};

TEST_F(RingFaultTest, PublishersKilledAtRandomMomentsNeverHangOrTearAndLossesAreCounted) {
  std::vector<std::unique_ptr<ChildProcess>> subs;
  for (int s = 0; s < 2; ++s) {
    subs.push_back(
        std::make_unique<ChildProcess>(std::vector<std::string>{kPeer, "sub", domain_, "/k", "0", "600000"}));
  }
  test::wait_for_subscribers(domain_, "/k", 2);
  std::vector<std::unique_ptr<ChildProcess>> steady;
  for (int p = 0; p < 2; ++p) {
    steady.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kPeer, "pub", domain_, "/k", std::to_string(p), "0", "256", "50"}));
  }
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> delay_us(0, 2000);
  int killed_while_publishing = 0;
  for (int i = 0; i < kKillIterations; ++i) {
    ChildProcess victim({kPeer, "pub", domain_, "/k", std::to_string(100 + i), "0", "4096", "0"});
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    victim.signal(SIGKILL);
    const int status = victim.wait(20s);
    ASSERT_FALSE(victim.timed_out());
    if (WIFSIGNALED(status)) ++killed_while_publishing;
  }
  EXPECT_GT(killed_while_publishing, kKillIterations / 2);
  std::printf("killed %d of %d victims by SIGKILL\n", killed_while_publishing, kKillIterations);
  for (auto& p : steady) {
    p->signal(SIGTERM);
    const int status = p->wait(30s);
    ASSERT_FALSE(p->timed_out()) << "a steady publisher hung";
    ASSERT_TRUE(WIFEXITED(status)) << p->output();
    EXPECT_LE(p->fields().at("max_publish_us"), kMaxStallUs) << p->output();
    std::printf("steady publisher: %s", p->output().c_str());
  }
  for (auto& s : subs) {
    s->signal(SIGTERM);
    expect_clean_subscriber(*s);
  }
  // Every victim's entry is recognised as dead and reclaimed.
  Context ctx{test::peer_config(domain_, "fault_test")};
  Publisher probe("/k", TypeInfo::bytes(), ctx);
  const auto v = introspect::ChannelReader(domain_, "/k").view();
  ASSERT_EQ(v.publishers.size(), 1U);
  EXPECT_EQ(v.publishers[0].pid, ::getpid());
}

TEST_P(FaultTest, SubscriberKilledLeavesPublishersUnaffectedAndItsEntryIsReclaimed) {
  ChildProcess victim({kPeer, "sub", domain_, "/s", "0", "60000"});
  ChildProcess survivor({kPeer, "sub", domain_, "/s", "0", "60000"});
  test::wait_for_subscribers(domain_, "/s", 2);
  ChildProcess pub({kPeer, "pub", domain_, "/s", "1", "0", "128", "100"});
  std::this_thread::sleep_for(200ms);
  victim.signal(SIGKILL);
  victim.wait(10s);
  const auto published_at_kill = introspect::ChannelReader(domain_, "/s").view().messages;
  std::this_thread::sleep_for(300ms);
  const auto view = introspect::ChannelReader(domain_, "/s").view();
  EXPECT_GT(view.messages, published_at_kill + 100) << "the publisher kept publishing";
  std::size_t dead = 0;
  for (const auto& s : view.subscribers) dead += s.alive ? 0 : 1;
  EXPECT_EQ(dead, 1U) << "the killed subscriber is recognised as dead";
  // A new registration reclaims it.
  Context ctx{test::peer_config(domain_, "fault_test")};
  Subscriber fresh("/s", TypeInfo::bytes(), ctx);
  const auto after = introspect::ChannelReader(domain_, "/s").view();
  EXPECT_EQ(after.subscribers.size(), 2U);
  for (const auto& s : after.subscribers) EXPECT_TRUE(s.alive);
  pub.signal(SIGTERM);
  ASSERT_TRUE(WIFEXITED(pub.wait(20s)));
  EXPECT_EQ(pub.fields().at("dropped"), 0);
  survivor.signal(SIGTERM);
  expect_clean_subscriber(survivor);
}

// What a publisher sent before SIGKILL stays readable, intact: on the ring
// in its slots, on iceoryx in chunks the subscriber's queue still holds
// (RouDi frees only what the dead process itself held).
TEST_P(FaultTest, MessagesOfAKilledPublisherStayReadableAndIntact) {
  Context ctx{test::peer_config(domain_, "fault_test")};
  Subscriber sub("/gone", TypeInfo::bytes(), ctx);
  pid_t pub_pid = 0;
  {
    // Killed between publishes (see RingFaultTest for a kill inside one).
    ChildProcess pub({kPeer, "pub-hold", domain_, "/gone", "3", "12", "512"});
    ASSERT_TRUE(pub.wait_for_output("sent", 20s)) << pub.output();
    pub_pid = pub.pid();
    pub.signal(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(pub.wait(10s)));
  }
  if (GetParam() == Transport::kIceoryx) {
    // iceoryx left the killed process's runtime files in /tmp; they go,
    // this live process's stay.
    ASSERT_EQ(runtime_files(pub_pid).size(), 2U) << "its socket and lock file";
    EXPECT_GE(iceoryx::remove_stale_runtime_files(), 1U);
    EXPECT_TRUE(runtime_files(pub_pid).empty());
    EXPECT_EQ(runtime_files(::getpid()).size(), 2U);
  }
  std::this_thread::sleep_for(2s);  // past RouDi's keep-alive timeout (1.5 s): the dead process is cleaned up
  const std::uint64_t sent = introspect::ChannelReader(domain_, "/gone").view().stamps;
  std::vector<std::byte> buf(4096);
  std::uint64_t delivered = 0;
  std::uint64_t lost = 0;
  for (TakeResult r = sub.take(buf); r.ok(); r = sub.take(buf)) {
    std::uint32_t tag = 0;
    std::uint32_t counter = 0;
    ASSERT_TRUE(test::payload_intact(buf.data(), r.info.size, tag, counter)) << "message " << r.info.sequence;
    EXPECT_EQ(tag, 3U);
    lost += r.info.lost_before;
    ++delivered;
  }
  EXPECT_EQ(sent, 12U);
  EXPECT_EQ(delivered, 12U) << "the queue (16) holds them all";
  EXPECT_EQ(delivered + lost, sent) << "every message sent is read or counted lost";
  EXPECT_EQ(lost, sub.lost());
}

INSTANTIATE_TEST_SUITE_P(Transports, FaultTest, ::testing::Values(Transport::kShm, Transport::kIceoryx),
                         test::transport_name);
