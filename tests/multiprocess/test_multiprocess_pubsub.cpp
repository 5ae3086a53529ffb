// Several publishers and subscribers in separate processes: every payload
// is checked, every sequence is delivered once or counted lost.
#include <gtest/gtest.h>

#include <thread>

#include "multiprocess/child_process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;

namespace {

const std::string kPeer = SHMBUS_TEST_PEER;

class MultiProcessTest : public ::testing::Test {
 protected:
  void TearDown() override { introspect::clean_domain(domain_, false); }
  std::string domain_ = shmbus::test::unique_domain("mp");
};

}  // namespace

TEST_F(MultiProcessTest, ThreePublishersTwoSubscribersEveryMessageDeliveredOnceOrCountedLost) {
  constexpr int kPublishers = 3;
  constexpr std::uint64_t kPerPublisher = 20000;
  constexpr std::uint64_t kTotal = kPublishers * kPerPublisher;
  // The first subscriber creates the channel (capacity 16, typed as bytes).
  std::vector<std::unique_ptr<ChildProcess>> subs;
  for (int s = 0; s < 2; ++s) {
    subs.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kPeer, "sub", domain_, "/mp", std::to_string(kTotal), "120000"}));
  }
  test::wait_for_subscribers(domain_, "/mp", 2);
  std::vector<std::unique_ptr<ChildProcess>> pubs;
  for (int p = 0; p < kPublishers; ++p) {
    // Sizes differ per publisher, 64 B to 4 KiB; a light pace keeps
    // most messages deliverable while laps still happen.
    const std::size_t size = p == 0 ? 64 : (p == 1 ? 1000 : 4096);
    pubs.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        kPeer, "pub", domain_, "/mp", std::to_string(p), std::to_string(kPerPublisher), std::to_string(size), "5"}));
  }
  std::uint64_t dropped = 0;
  for (auto& p : pubs) {
    const int status = p->wait(120s);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << p->output();
    dropped += static_cast<std::uint64_t>(p->fields().at("dropped"));
  }
  for (auto& s : subs) {
    const int status = s->wait(120s);
    ASSERT_FALSE(s->timed_out()) << "subscriber hung: " << s->output();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << s->output();
    const auto f = s->fields();
    EXPECT_EQ(f.at("torn"), 0) << s->output();
    EXPECT_EQ(f.at("order"), 0) << s->output();
    EXPECT_EQ(f.at("accounting"), 0) << s->output();
    EXPECT_EQ(static_cast<std::uint64_t>(f.at("delivered") + f.at("lost")), kTotal) << s->output();
    EXPECT_EQ(f.at("counter_lost"), f.at("lost")) << s->output();
    EXPECT_GT(f.at("delivered"), static_cast<long long>(kTotal / 2)) << s->output();
  }
  introspect::ChannelReader reader(domain_, "/mp");
  const introspect::ChannelView v = reader.view();
  EXPECT_EQ(v.messages, kTotal);
  EXPECT_EQ(v.publish_dropped, dropped);
  EXPECT_EQ(v.stamps, kTotal - dropped) << "one time-list stamp per committed message";
}
