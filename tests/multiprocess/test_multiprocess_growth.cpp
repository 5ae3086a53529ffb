// Channels that grow (layout/channel_layout.hpp, "Generations"): publishers
// racing to grow one channel, a grower killed at each step of a growth, a
// subscriber left generations behind, the bounds of growing, and hostile
// generation headers. Peers are real processes, stopped and killed with
// real signals.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;

namespace {

/// Rings of 16 slots of 64 bytes at first.
Config small_config() {
  Config c;
  c.defaults.capacity = 16;
  c.defaults.max_message_size = 64;
  c.defaults.stall_timeout = 200ms;
  return c;
}

std::vector<std::byte> message(std::size_t size, std::uint32_t tag, std::uint32_t counter) {
  std::vector<std::byte> m(std::max(size, test::kPayloadHeader));
  test::fill_payload(m.data(), m.size(), tag, counter);
  return m;
}

/// The ring objects of `domain` in /dev/shm (ring_object_name).
std::vector<std::string> ring_objects(const std::string& domain) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = f.path().filename().string();
    if (!channel_of_ring_object(domain, name).empty()) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Everything a subscriber holds now: (counter, size) of each message, the
/// losses it counted, and whether every payload was intact.
struct Drained {
  std::vector<std::uint32_t> counters;
  std::uint64_t lost = 0;
  bool intact = true;
  bool in_sequence = true;
};

Drained drain(Subscriber& sub) {
  Drained d;
  std::vector<std::byte> buf(64);
  std::int64_t last_seq = -1;
  for (;;) {
    TakeResult r = sub.take(buf);
    if (r.status == TakeStatus::kBufferTooSmall) {
      buf.resize(r.info.size);
      r = sub.take(buf);
    }
    if (!r.ok()) break;
    std::uint32_t tag = 0, counter = 0;
    d.intact = d.intact && test::payload_intact(buf.data(), r.info.size, tag, counter);
    d.counters.push_back(counter);
    if (last_seq >= 0 &&
        static_cast<std::int64_t>(r.info.sequence) < last_seq + 1 + static_cast<std::int64_t>(r.info.lost_before)) {
      d.in_sequence = false;
    }
    last_seq = static_cast<std::int64_t>(r.info.sequence);
    d.lost += r.info.lost_before;
  }
  return d;
}

}  // namespace

// Two publisher processes grow one channel at the same moment, 100 times
// (a channel each): one generation each time, and both messages arrive.
TEST(GrowthTest, TwoPublishersGrowingAtOnceAgreeOnOneGenerationAndLoseNothing) {
  test::TestDomain d{small_config(), "race"};
  const std::vector<std::string> env_base{"SHMBUS_TEST_MAX_MESSAGE_SIZE=64", "SHMBUS_TEST_TRANSPORT=shm"};
  for (int round = 0; round < 100; ++round) {
    const std::string channel = "/race/c" + std::to_string(round);
    Subscriber sub(channel, TypeInfo::bytes(), d.context());
    std::vector<std::string> env = env_base;
    env.push_back("SHMBUS_TEST_START_NS=" +
                  std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     (std::chrono::steady_clock::now() + 100ms).time_since_epoch())
                                     .count()));
    ChildProcess a({kPeer, "grow-pub", d.domain(), channel, "1", "1", "0", "3000"}, false, env);
    ChildProcess b({kPeer, "grow-pub", d.domain(), channel, "2", "1", "0", "3000"}, false, env);
    ASSERT_TRUE(WIFEXITED(a.wait(30s))) << a.output();
    ASSERT_TRUE(WIFEXITED(b.wait(30s))) << b.output();
    EXPECT_EQ(a.fields().at("published") + b.fields().at("published"), 2) << a.output() << b.output();
    const introspect::ChannelView v = introspect::ChannelReader(d.domain(), channel).view();
    EXPECT_EQ(v.generation, 1U) << "round " << round;
    EXPECT_EQ(v.max_message_size, 4096U);
    const Drained got = drain(sub);
    EXPECT_EQ(got.counters.size(), 2U) << "round " << round;
    EXPECT_EQ(got.lost, 0U) << "round " << round;
    EXPECT_TRUE(got.intact && got.in_sequence) << "round " << round;
    if (::testing::Test::HasFailure()) break;
  }
}

// A grower stopped at each step of a growth and killed there: readers go on,
// and the next publisher's growth repairs the channel (the lock of the dead
// grower taken over, its unannounced ring replaced, its announced
// generation settled). Nothing is lost.
TEST(GrowthTest, AGrowerKilledAtEachStepLeavesAChannelTheNextPublisherRepairs) {
  for (const std::string point : {"grow-locked", "grow-created", "grow-announced"}) {
    SCOPED_TRACE(point);
    test::TestDomain d{small_config(), "killgrow"};
    Subscriber sub("/k", TypeInfo::bytes(), d.context());
    Publisher small("/k", TypeInfo::bytes(), d.context());
    for (std::uint32_t i = 0; i < 3; ++i) ASSERT_EQ(small.publish(message(32, 1, i)), PublishResult::kOk);
    ChildProcess grower({kPeer, "grow-pub", d.domain(), "/k", "2", "1", "0", "3000"}, false,
                        {"SHMBUS_TEST_PAUSE=" + point, "SHMBUS_TEST_MAX_MESSAGE_SIZE=64", "SHMBUS_TEST_TRANSPORT=shm"});
    ASSERT_TRUE(grower.wait_stopped(20s)) << grower.output();
    grower.signal(SIGKILL);
    const int status = grower.wait(20s);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    // Readers go on meanwhile.
    ASSERT_EQ(small.publish(message(32, 1, 3)), PublishResult::kOk);
    // The next growth.
    ASSERT_EQ(small.publish(message(3000, 1, 4)), PublishResult::kOk) << small.too_large(3000);
    ASSERT_EQ(small.publish(message(40, 1, 5)), PublishResult::kOk);
    const Drained got = drain(sub);
    EXPECT_EQ(got.counters, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(got.lost, 0U);
    EXPECT_TRUE(got.intact && got.in_sequence);
    const introspect::ChannelView v = introspect::ChannelReader(d.domain(), "/k").view();
    EXPECT_EQ(v.generation, 1U) << "one generation: the dead grower's, or one made anew";
    EXPECT_EQ(v.max_message_size, 4096U);
  }
}

// A subscriber that takes nothing while the channel grows twice: it reads
// generation 0 to its end, what generation 1's 16 slots still hold (the
// rest counted lost), and generation 2; the rings it no longer needs are
// removed when it moves on or leaves.
TEST(GrowthTest, ASlowSubscriberReadsWhatItCanOfEachGenerationAndCountsTheRest) {
  test::TestDomain d{small_config(), "slow"};
  auto slow = std::make_unique<Subscriber>("/s", TypeInfo::bytes(), d.context());
  Publisher pub("/s", TypeInfo::bytes(), d.context());
  std::uint32_t n = 0;
  for (int i = 0; i < 10; ++i) ASSERT_EQ(pub.publish(message(40, 3, n++)), PublishResult::kOk);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(pub.publish(message(100, 3, n++)), PublishResult::kOk);  // generation 1
  for (int i = 0; i < 10; ++i) ASSERT_EQ(pub.publish(message(300, 3, n++)), PublishResult::kOk);  // generation 2
  EXPECT_EQ(ring_objects(d.domain()).size(), 2U) << "the slow subscriber still needs generation 1";
  const Drained got = drain(*slow);
  std::vector<std::uint32_t> want;
  for (std::uint32_t i = 0; i < 10; ++i) want.push_back(i);
  for (std::uint32_t i = 34; i < 60; ++i) want.push_back(i);  // generation 1 keeps its last 16
  EXPECT_EQ(got.counters, want);
  EXPECT_EQ(got.lost, 24U);
  EXPECT_EQ(slow->lost(), 24U);
  EXPECT_TRUE(got.intact && got.in_sequence);
  EXPECT_EQ(ring_objects(d.domain()), std::vector<std::string>{ring_object_name(d.domain(), "/s", 2)})
      << "generation 1 removed once its last reader moved on";
  slow.reset();
  EXPECT_EQ(ring_objects(d.domain()).size(), 1U) << "the current generation stays with the channel";
}

// The bounds: max_grow_size, the domain's grow_budget and grow = false
// refuse in one line, and the channel keeps working at its size.
TEST(GrowthTest, GrowingPastItsBoundsIsRefusedInOneLineAndTheChannelGoesOn) {
  {
    Config c = small_config();
    c.defaults.max_grow_size = 1024;
    test::TestDomain d{c, "ceiling"};
    Subscriber sub("/b", TypeInfo::bytes(), d.context());
    Publisher pub("/b", TypeInfo::bytes(), d.context());
    EXPECT_EQ(pub.size_ceiling(), 1024U);
    EXPECT_EQ(pub.publish(message(2000, 1, 0)), PublishResult::kTooLarge);
    const std::string why = pub.too_large(2000);
    EXPECT_NE(why.find("a message of 2000 bytes does not fit channel /b"), std::string::npos) << why;
    EXPECT_NE(why.find("it grows up to max_grow_size 1024 (from the built-in defaults of"), std::string::npos) << why;
    ASSERT_EQ(pub.publish(message(1000, 1, 1)), PublishResult::kOk);
    ASSERT_EQ(pub.publish(message(20, 1, 2)), PublishResult::kOk);
    EXPECT_EQ(drain(sub).counters, (std::vector<std::uint32_t>{1, 2}));
  }
  {
    Config c = small_config();
    c.grow_budget = 64 << 10;
    test::TestDomain d{c, "budget"};
    Subscriber sub("/b", TypeInfo::bytes(), d.context());
    Publisher pub("/b", TypeInfo::bytes(), d.context());
    EXPECT_EQ(pub.publish(message(100'000, 1, 0)), PublishResult::kTooLarge);
    const std::string why = pub.too_large(100'000);
    EXPECT_NE(why.find("grow_budget of 0.1 MiB"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    ASSERT_EQ(pub.publish(message(60, 1, 1)), PublishResult::kOk);
    ASSERT_EQ(pub.publish(message(1000, 1, 2)), PublishResult::kOk) << "a growth within the budget";
    EXPECT_EQ(drain(sub).counters, (std::vector<std::uint32_t>{1, 2}));
    EXPECT_EQ(introspect::ChannelReader(d.domain(), "/b").view().grows_refused, 1U);
  }
  {
    Config c = small_config();
    c.defaults.grow = false;
    test::TestDomain d{c, "fixed"};
    Publisher pub("/b", TypeInfo::bytes(), d.context());
    EXPECT_EQ(pub.publish(message(100, 1, 0)), PublishResult::kTooLarge);
    EXPECT_NE(pub.too_large(100).find("max_message_size is 64"), std::string::npos) << pub.too_large(100);
    EXPECT_EQ(introspect::ChannelReader(d.domain(), "/b").view().max_grow_size, 0U);
  }
}

// A ring segment whose header lies (its slot count, its generation) is
// refused by a process that maps it, in one line; one mapped before goes on.
// A generation word past the table is bounded.
TEST(GrowthTest, AHostileGenerationHeaderIsRefusedAndNothingCrashes) {
  test::TestDomain d{small_config(), "hostile"};
  Subscriber sub("/h", TypeInfo::bytes(), d.context());
  Publisher pub("/h", TypeInfo::bytes(), d.context());
  ASSERT_EQ(pub.publish(message(500, 1, 0)), PublishResult::kOk);
  const std::string ring = "/dev/shm/" + ring_object_name(d.domain(), "/h", 1);
  for (const std::uint32_t capacity : {3U, 1U << 30, 0U}) {
    SCOPED_TRACE(capacity);
    const int fd = ::open(ring.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    // RingHeader: the segment header (64), the channel name (128), then
    // generation and capacity.
    const off_t at = 64 + 128 + 4;
    std::uint32_t old = 0;
    ASSERT_EQ(::pread(fd, &old, 4, at), 4);
    ASSERT_EQ(::pwrite(fd, &capacity, 4, at), 4);
    {
      Context other(d.context().config());
      try {
        Subscriber late("/h", TypeInfo::bytes(), other);
        ADD_FAILURE() << "a subscriber mapped a ring of " << capacity << " slots";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::kLayoutMismatch) << e.what();
      }
    }
    ASSERT_EQ(::pwrite(fd, &old, 4, at), 4);
    ::close(fd);
  }
  // The endpoints that mapped it before go on.
  ASSERT_EQ(pub.publish(message(400, 1, 1)), PublishResult::kOk);
  EXPECT_EQ(drain(sub).counters, (std::vector<std::uint32_t>{0, 1}));
}

// A subscriber process killed while it reads generation 0 pins nothing:
// once the channel has grown twice, only the newest ring is left.
TEST(GrowthTest, ASubscriberOfADeadProcessPinsNoGeneration) {
  test::TestDomain d{small_config(), "deadsub"};
  Publisher pub("/d", TypeInfo::bytes(), d.context());
  ChildProcess sub({kPeer, "sub", d.domain(), "/d", "0", "60000"}, false,
                   {"SHMBUS_TEST_MAX_MESSAGE_SIZE=64", "SHMBUS_TEST_TRANSPORT=shm"});
  test::wait_for_subscribers(d.domain(), "/d", 1);
  ASSERT_EQ(pub.publish(message(500, 1, 0)), PublishResult::kOk);  // generation 1
  sub.signal(SIGKILL);
  (void)sub.wait(20s);
  ASSERT_EQ(pub.publish(message(3000, 1, 1)), PublishResult::kOk);  // generation 2
  EXPECT_EQ(ring_objects(d.domain()), std::vector<std::string>{ring_object_name(d.domain(), "/d", 2)});
}
