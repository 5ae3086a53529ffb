// overflow = "block" across processes, with real signals: a slow subscriber
// loses nothing, a stopped one holds publishers up for block_timeout once
// and is then overtaken (counted on both sides), a killed one never holds
// anybody up. The peers read SHMBUS_TEST_OVERFLOW=block and
// SHMBUS_TEST_BLOCK_TIMEOUT_MS (peer_protocol.hpp); channels have 16 slots.
#include <gtest/gtest.h>

#include <thread>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "shmbus/introspect.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;

namespace {

class OverflowTest : public ::testing::Test {
 protected:
  std::string domain_ = test::unique_domain("overflow");
  void TearDown() override { introspect::clean_domain(domain_, false); }

  static std::vector<std::string> block_env(long timeout_ms) {
    return {"SHMBUS_TEST_OVERFLOW=block", "SHMBUS_TEST_BLOCK_TIMEOUT_MS=" + std::to_string(timeout_ms),
            "SHMBUS_TEST_TRANSPORT=shm"};
  }

  /// The subscriber's exit and its one line: delivered= lost= torn= ...
  static std::map<std::string, long long> finished(ChildProcess& sub) {
    const int status = sub.wait(60s);
    EXPECT_FALSE(sub.timed_out()) << "subscriber hung: " << sub.output();
    EXPECT_TRUE(WIFEXITED(status)) << sub.output();
    auto f = sub.fields();
    EXPECT_EQ(f["torn"], 0) << sub.output();
    EXPECT_EQ(f["accounting"], 0) << sub.output();
    EXPECT_EQ(f["counter_lost"], f["lost"]) << "every loss counted in shared memory: " << sub.output();
    return f;
  }
};

}  // namespace

// The subscriber sleeps 100 us after each message; the publisher could go
// 100 times faster. With block it waits: all 2000 arrive.
TEST_F(OverflowTest, ASlowSubscriberLosesNothingBecauseThePublisherWaits) {
  const auto env = block_env(10'000);
  ChildProcess sub({kPeer, "sub", domain_, "/b", "2000", "60000", "100"}, false, env);
  test::wait_for_subscribers(domain_, "/b", 1);
  ChildProcess pub({kPeer, "pub", domain_, "/b", "1", "2000", "256", "0"}, false, env);
  ASSERT_TRUE(WIFEXITED(pub.wait(60s))) << pub.output();
  const auto p = pub.fields();
  EXPECT_EQ(p.at("published"), 2000) << pub.output();
  EXPECT_EQ(p.at("dropped"), 0) << pub.output();
  EXPECT_EQ(p.at("block_timeouts"), 0) << pub.output();
  EXPECT_GT(p.at("blocked_us"), 0) << "it waited for the subscriber: " << pub.output();
  auto s = finished(sub);
  EXPECT_EQ(s["delivered"], 2000) << sub.output();
  EXPECT_EQ(s["lost"], 0) << sub.output();
}

// The control: the same run on an overwrite channel loses messages (so the
// test above fails when publishers do not wait).
TEST_F(OverflowTest, TheSameSlowSubscriberLosesMessagesWhenPublishersOverwrite) {
  ChildProcess sub({kPeer, "sub", domain_, "/b", "2000", "60000", "100"}, false, {"SHMBUS_TEST_TRANSPORT=shm"});
  test::wait_for_subscribers(domain_, "/b", 1);
  ChildProcess pub({kPeer, "pub", domain_, "/b", "1", "2000", "256", "0"}, false, {"SHMBUS_TEST_TRANSPORT=shm"});
  ASSERT_TRUE(WIFEXITED(pub.wait(60s))) << pub.output();
  EXPECT_EQ(pub.fields().at("blocked_us"), 0) << pub.output();
  auto s = finished(sub);
  EXPECT_GT(s["lost"], 0) << sub.output();
  EXPECT_EQ(s["delivered"] + s["lost"], 2000) << sub.output();
}

// A SIGSTOPped subscriber holds the publisher for one block_timeout (300
// ms), then is overtaken: one timeout, not one per message or per lap. The
// live subscriber loses nothing; the stopped one, resumed, counts what it
// lost.
TEST_F(OverflowTest, AStoppedSubscriberHoldsThePublisherOneBlockTimeoutThenIsOvertaken) {
  const auto env = block_env(300);
  ChildProcess stopped({kPeer, "sub", domain_, "/b", "0", "60000"}, false, env);
  ChildProcess live({kPeer, "sub", domain_, "/b", "200", "60000"}, false, env);
  test::wait_for_subscribers(domain_, "/b", 2);
  stopped.signal(SIGSTOP);
  ChildProcess pub({kPeer, "pub", domain_, "/b", "1", "200", "64", "0"}, false, env);
  ASSERT_TRUE(WIFEXITED(pub.wait(60s))) << pub.output();
  const auto p = pub.fields();
  EXPECT_EQ(p.at("published"), 200) << pub.output();
  EXPECT_EQ(p.at("dropped"), 0) << pub.output();
  EXPECT_EQ(p.at("block_timeouts"), 1) << pub.output();
  EXPECT_GE(p.at("max_publish_us"), 300'000) << "the publish that found the ring full waited block_timeout";
  EXPECT_LT(p.at("max_publish_us"), 5'000'000) << pub.output();
  EXPECT_GE(p.at("blocked_us"), 300'000) << pub.output();
  auto l = finished(live);
  EXPECT_EQ(l["delivered"], 200) << live.output();
  EXPECT_EQ(l["lost"], 0) << live.output();
  stopped.signal(SIGCONT);
  stopped.signal(SIGTERM);
  auto s = finished(stopped);
  EXPECT_GT(s["lost"], 0) << "overtaken: it lost what was overwritten, and counts it: " << stopped.output();
}

// A SIGKILLed subscriber's cursor stops for good. With a 60 s block_timeout
// the publisher would stall for a minute if it waited for the dead; it
// reclaims the entry instead, within milliseconds.
TEST_F(OverflowTest, AKilledSubscriberNeverHoldsThePublisher) {
  const auto env = block_env(60'000);
  ChildProcess victim({kPeer, "sub", domain_, "/b", "0", "60000"}, false, env);
  ChildProcess survivor({kPeer, "sub", domain_, "/b", "2000", "60000"}, false, env);
  test::wait_for_subscribers(domain_, "/b", 2);
  ChildProcess pub({kPeer, "pub", domain_, "/b", "1", "2000", "64", "200"}, false, env);
  std::this_thread::sleep_for(100ms);
  victim.signal(SIGKILL);
  victim.wait(10s);
  ASSERT_TRUE(WIFEXITED(pub.wait(60s))) << pub.output();
  const auto p = pub.fields();
  EXPECT_EQ(p.at("published"), 2000) << pub.output();
  EXPECT_EQ(p.at("block_timeouts"), 0) << pub.output();
  EXPECT_LT(p.at("max_publish_us"), 1'000'000) << "the dead subscriber was reclaimed, not waited for";
  auto s = finished(survivor);
  EXPECT_EQ(s["delivered"], 2000) << survivor.output();
  EXPECT_EQ(s["lost"], 0) << survivor.output();
  const auto view = introspect::ChannelReader(domain_, "/b").view();
  EXPECT_EQ(view.subscribers.size(), 0U) << "the killed subscriber's entry was reclaimed, the survivor has left";
}
