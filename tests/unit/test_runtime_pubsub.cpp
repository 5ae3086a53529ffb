#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/roudi.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using shmbus::test::TestDomain;
using namespace std::chrono_literals;

namespace {

struct Pose {
  static constexpr const char* kTypeName = "test/Pose";
  static constexpr std::uint64_t kTypeHash = 0x1234;
  static constexpr const char* kSchema = "float64 x\nfloat64 y\n";
  double x;
  double y;
};

struct Gps {
  static constexpr const char* kTypeName = "test/Gps";
  static constexpr std::uint64_t kTypeHash = 0x9f00;
  double lat;
};

std::vector<std::byte> bytes_of(std::uint32_t v, std::size_t size = 4) {
  std::vector<std::byte> b(size);
  std::memcpy(b.data(), &v, sizeof(v));
  return b;
}

std::uint32_t value_of(const std::vector<std::byte>& b) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data(), sizeof(v));
  return v;
}

std::string fmt_transport(const std::string& what, Transport t) {
  return what + " \"" + std::string{to_string(t)} + "\"";
}

/// Ring slots align payloads to a cache line; iceoryx chunks as malloc does.
std::size_t payload_alignment(Transport t) { return t == Transport::kShm ? 64 : alignof(std::max_align_t); }

Config small_ring(Transport transport = Transport::kShm) {
  Config c;
  c.defaults.transport = transport;
  c.defaults.publisher_history = 8;  // iceoryx: history for late subscribers (the ring keeps it anyway)
  c.defaults.capacity = 8;
  c.defaults.max_message_size = 64;
  c.defaults.time_list_capacity = 16;
  return c;
}

/// Every test runs over both transports: the ring, and iceoryx chunks
/// (RouDi started for the program).
class PubSubTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (GetParam() == Transport::kIceoryx) {
      ASSERT_TRUE(test::Roudi::ensure()) << "iox-roudi did not start";
    }
  }
  TestDomain domain_{small_ring(GetParam()), "ps"};
  std::vector<std::byte> buf_ = std::vector<std::byte>(64);
};

}  // namespace

TEST_P(PubSubTest, PublishedMessageIsTakenOnceWithItsHeader) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  EXPECT_EQ(sub.take(buf_).status, TakeStatus::kNoData);
  ASSERT_EQ(pub.publish(bytes_of(42)), PublishResult::kOk);
  const TakeResult r = sub.take(buf_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(value_of(buf_), 42U);
  EXPECT_EQ(r.info.sequence, 0U);
  EXPECT_EQ(r.info.size, 4U);
  EXPECT_EQ(r.info.publisher_id, pub.id());
  EXPECT_EQ(r.info.lost_before, 0U);
  EXPECT_GT(r.info.publish_time_ns, 0);
  EXPECT_GT(r.info.publish_wall_ns, 1'600'000'000'000'000'000);  // after 2020
  EXPECT_EQ(sub.take(buf_).status, TakeStatus::kNoData);
  EXPECT_EQ(sub.received(), 1U);
  EXPECT_EQ(pub.published(), 1U);
}

TEST_P(PubSubTest, EverySubscriberReceivesEveryMessageInOrder) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber s1("/a", TypeInfo::bytes(), domain_.context());
  Subscriber s2("/a", TypeInfo::bytes(), domain_.context());
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
  for (Subscriber* s : {&s1, &s2}) {
    for (std::uint32_t i = 0; i < 5; ++i) {
      const TakeResult r = s->take(buf_);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(value_of(buf_), i);
      EXPECT_EQ(r.info.sequence, i);
    }
    EXPECT_EQ(s->take(buf_).status, TakeStatus::kNoData);
  }
}

TEST_P(PubSubTest, SlowSubscriberLosesOldestAndIsToldHowMany) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  for (std::uint32_t i = 0; i < 20; ++i) ASSERT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
  // capacity 8: messages 12..19 remain.
  const TakeResult first = sub.take(buf_);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.info.sequence, 12U);
  EXPECT_EQ(first.info.lost_before, 12U);
  EXPECT_EQ(value_of(buf_), 12U);
  for (std::uint32_t i = 13; i < 20; ++i) {
    const TakeResult r = sub.take(buf_);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.info.sequence, i);
    EXPECT_EQ(r.info.lost_before, 0U);
  }
  EXPECT_EQ(sub.lost(), 12U);
  EXPECT_EQ(sub.received(), 8U);
  introspect::ChannelReader reader(domain_.domain(), "/a");
  EXPECT_EQ(reader.view().lost, 12U);
}

// A publisher that stopped leaves no later message of its own to reveal
// that its last ones were lost: on iceoryx, where losses are gaps in each
// publisher's count, the subscriber settles them from the publisher's
// freed entry once its queue runs empty. Both transports count 17.
TEST_P(PubSubTest, LastMessagesOfAPublisherGoneAreCountedLost) {
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  std::uint32_t early_id = 0;
  {
    Publisher early("/a", TypeInfo::bytes(), domain_.context());
    early_id = early.id();
    for (std::uint32_t i = 0; i < 5; ++i) ASSERT_EQ(early.publish(bytes_of(i)), PublishResult::kOk);
  }
  Publisher late("/a", TypeInfo::bytes(), domain_.context());
  for (std::uint32_t i = 0; i < 20; ++i) ASSERT_EQ(late.publish(bytes_of(100 + i)), PublishResult::kOk);
  // capacity 8: the late publisher's last 8 remain; all 5 early ones and
  // 12 late ones were overwritten (ring) or discarded (iceoryx).
  std::uint32_t delivered = 0;
  for (TakeResult r = sub.take(buf_); r.ok(); r = sub.take(buf_)) {
    EXPECT_EQ(r.info.publisher_id, late.id());
    EXPECT_EQ(value_of(buf_), 112 + delivered);
    ++delivered;
  }
  EXPECT_NE(early_id, late.id());
  EXPECT_EQ(delivered, 8U);
  EXPECT_EQ(sub.lost(), 17U);
  EXPECT_EQ(sub.take(buf_).status, TakeStatus::kNoData);
  EXPECT_EQ(sub.lost(), 17U) << "settled once, never counted again";
}

TEST_P(PubSubTest, ReadInPlaceSeesThePayloadWithoutCopyingAndConsumesIt) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  EXPECT_EQ(pub.publish(bytes_of(7)), PublishResult::kOk);
  EXPECT_EQ(pub.publish(bytes_of(8)), PublishResult::kOk);
  std::vector<std::uint32_t> seen;
  const void* where = nullptr;
  const TakeResult r = sub.read([&](std::span<const std::byte> p, const MessageInfo& info) {
    std::uint32_t v = 0;
    std::memcpy(&v, p.data(), 4);
    seen.push_back(v);
    where = p.data();
    EXPECT_EQ(info.size, 4U);
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(seen, std::vector<std::uint32_t>{7});
  // In place (SmallMessagesTravelInTheHeaderLine... shows where), and
  // aligned for any type of its size.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(where) % 16, 0U);
  ASSERT_TRUE(sub.take(buf_).ok());
  EXPECT_EQ(value_of(buf_), 8U);
  EXPECT_EQ(sub.read([](std::span<const std::byte>, const MessageInfo&) {}).status, TakeStatus::kNoData);
}

// reread: a message already taken, read again where it lies while it is
// in the ring (from another thread too), and refused once a publisher
// lapped it, before or during the read.
TEST_P(PubSubTest, RereadFindsATakenMessageUntilItIsOverwritten) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  EXPECT_EQ(sub.capacity(), 8U);
  EXPECT_EQ(sub.transport(), GetParam());
  EXPECT_EQ(pub.publish(bytes_of(7)), PublishResult::kOk);
  MessageInfo taken;
  ASSERT_TRUE(sub.read([&](std::span<const std::byte>, const MessageInfo& info) { taken = info; }).ok());
  if (GetParam() == Transport::kIceoryx) {
    // No ring: a chunk taken is released to iceoryx, and gone.
    EXPECT_FALSE(sub.reread(taken.sequence, [](std::span<const std::byte>, const RingCheck&) {}));
    return;
  }
  std::uint32_t again = 0;
  bool unchanged_inside = false;
  std::thread other([&] {
    EXPECT_TRUE(sub.reread(taken.sequence, [&](std::span<const std::byte> p, const RingCheck& check) {
      std::memcpy(&again, p.data(), 4);
      unchanged_inside = check.unchanged();
    }));
  });
  other.join();
  EXPECT_EQ(again, 7U);
  EXPECT_TRUE(unchanged_inside);
  EXPECT_FALSE(sub.reread(taken.sequence + 1, [](std::span<const std::byte>, const RingCheck&) {}))
      << "not published yet";

  // Overwritten during the read: the check inside says so, and reread too.
  bool inside = true;
  EXPECT_FALSE(sub.reread(taken.sequence, [&](std::span<const std::byte>, const RingCheck& check) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(pub.publish(bytes_of(100 + i)), PublishResult::kOk);  // laps the 8-slot ring
    inside = check.unchanged();
  }));
  EXPECT_FALSE(inside);
  // And overwritten before: never called.
  bool called = false;
  EXPECT_FALSE(sub.reread(taken.sequence, [&](std::span<const std::byte>, const RingCheck&) { called = true; }));
  EXPECT_FALSE(called);
  EXPECT_EQ(sub.lost(), 0U) << "reread counts nothing: the caller decides what the loss is";
}

// A message over the slots grows a ring channel (the subscriber follows,
// and a buffer of the old size is told the new size); iceoryx's chunks come
// from RouDi's pools, so an iceoryx channel refuses it and writes nothing.
TEST_P(PubSubTest, APublishOverTheSlotsGrowsARingAndIsRefusedOnIceoryx) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  ASSERT_EQ(pub.publish(bytes_of(1)), PublishResult::kOk);
  const PublishResult big = pub.publish(std::vector<std::byte>(65, std::byte{9}));
  ASSERT_TRUE(sub.take(buf_).ok());
  if (GetParam() == Transport::kIceoryx) {
    EXPECT_EQ(big, PublishResult::kTooLarge);
    EXPECT_EQ(sub.take(buf_).status, TakeStatus::kNoData);
    return;
  }
  ASSERT_EQ(big, PublishResult::kOk);
  const TakeResult small = sub.take(buf_);
  ASSERT_EQ(small.status, TakeStatus::kBufferTooSmall);
  EXPECT_EQ(small.info.size, 65U);
  EXPECT_EQ(sub.max_message_size(), 128U) << "the next generation's slots: 65 rounded up to a power of two";
  std::vector<std::byte> room(sub.max_message_size());
  const TakeResult r = sub.take(room);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.size, 65U);
  EXPECT_EQ(r.info.lost_before, 0U);
  EXPECT_EQ(room[64], std::byte{9});
}

// A message larger than the channel may carry is refused, and never
// silently: the publisher's first refusal is one line on stderr naming the
// size and the fix, whether it came through publish, a typed publish or a
// loan; later ones are the result's to say.
TEST_P(PubSubTest, AMessageTooLargeIsSaidOnceAndRefused) {
  PublisherOptions o;
  o.max_grow_size = 256;  // a ring grows to 256-byte slots at most
  o.max_message_size = 64;
  Publisher pub("/big", TypeInfo::bytes(), domain_.context(), o);
  const std::size_t over = 1000;
  testing::internal::CaptureStderr();
  EXPECT_EQ(pub.publish(std::vector<std::byte>(over)), PublishResult::kTooLarge);
  EXPECT_EQ(pub.publish(std::vector<std::byte>(over + 1)), PublishResult::kTooLarge);
  EXPECT_FALSE(pub.loan(over).valid());
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("a message of 1000 bytes does not fit channel /big"), std::string::npos) << said;
  EXPECT_NE(said.find(GetParam() == Transport::kShm ? "raise max_grow_size" : "max_message_size of at least"),
            std::string::npos)
      << said;
  EXPECT_EQ(pub.published(), 0U);
}

TEST_P(PubSubTest, SmallBufferReportsSizeAndConsumesNothing) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  ASSERT_EQ(pub.publish(std::vector<std::byte>(40, std::byte{7})), PublishResult::kOk);
  std::vector<std::byte> small(10);
  const TakeResult r = sub.take(small);
  EXPECT_EQ(r.status, TakeStatus::kBufferTooSmall);
  EXPECT_EQ(r.info.size, 40U);
  const TakeResult again = sub.take(buf_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.info.size, 40U);
  EXPECT_EQ(buf_[39], std::byte{7});
}

TEST_P(PubSubTest, LoanWritesInPlaceAndCommitPublishes) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  Loan loan = pub.loan(16);
  ASSERT_TRUE(loan.valid());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(loan.data().data()) % payload_alignment(GetParam()), 0U);
  *loan.as<std::uint32_t>() = 77;
  EXPECT_EQ(sub.take(buf_).status, TakeStatus::kNoData) << "not visible before commit";
  ASSERT_EQ(pub.commit(loan, 4), PublishResult::kOk);
  EXPECT_FALSE(loan.valid());
  const TakeResult r = sub.take(buf_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.size, 4U);
  EXPECT_EQ(value_of(buf_), 77U);
  // Over the slots: a ring grows for the loan; iceoryx refuses it.
  EXPECT_EQ(pub.loan(65).valid(), GetParam() != Transport::kIceoryx);
}

TEST_P(PubSubTest, DroppedLoanIsSkippedWithoutCountingALoss) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  {
    Loan unused = pub.loan(8);
    ASSERT_TRUE(unused.valid());
  }
  ASSERT_EQ(pub.publish(bytes_of(5)), PublishResult::kOk);
  const TakeResult r = sub.take(buf_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.sequence, 1U);
  EXPECT_EQ(r.info.lost_before, 0U);
  EXPECT_EQ(sub.lost(), 0U);
}

// A slot a live publisher claimed and has not committed: a subscriber bound
// by the channel's stall_timeout (1 ms here) counts it lost and hands the
// loss over once (take_lost); one with a longer bound of its own keeps
// waiting, for longer than the first took to give up, and takes the message
// once it is committed.
TEST(SubscriberStallTest, AnOwnLongerStallTimeoutWaitsForALiveWritersSlotThatTheChannelsGivesUp) {
  Config c;
  c.defaults.stall_timeout = 1ms;
  TestDomain d{c, "stall"};
  Publisher pub("/s", TypeInfo::bytes(), d.context());
  Subscriber quick("/s", TypeInfo::bytes(), d.context());
  Subscriber patient("/s", TypeInfo::bytes(), d.context(), SubscriberOptions{.stall_timeout = 60s});
  std::vector<std::byte> buf(64);
  Loan loan = pub.loan(8);
  ASSERT_TRUE(loan.valid());
  const std::int64_t claimed = mono_now_ns();
  const auto poll_until = [&](auto&& done) {
    while (!done() && mono_now_ns() - claimed < 30'000'000'000) {
      EXPECT_FALSE(quick.take(buf).ok());
      EXPECT_FALSE(patient.take(buf).ok());
      std::this_thread::yield();
    }
  };
  poll_until([&] { return quick.lost() != 0; });
  const std::int64_t quick_gave_up_after = mono_now_ns() - claimed;
  ASSERT_EQ(quick.lost(), 1U);
  poll_until([&] { return mono_now_ns() - claimed >= 2 * quick_gave_up_after; });
  EXPECT_EQ(patient.lost(), 0U) << "waited " << (mono_now_ns() - claimed) << " ns";
  *loan.as<std::uint32_t>() = 9;
  ASSERT_EQ(pub.commit(loan, 4), PublishResult::kOk);
  const TakeResult r = patient.take(buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.sequence, 0U);
  EXPECT_EQ(value_of(buf), 9U);
  EXPECT_EQ(quick.take(buf).status, TakeStatus::kNoData) << "passed over";
  const LostRange lost = quick.take_lost();
  EXPECT_EQ(lost.first, 0U);
  EXPECT_EQ(lost.end, 1U);
  EXPECT_TRUE(quick.take_lost().empty()) << "handed over once";
  EXPECT_TRUE(patient.take_lost().empty());
}

TEST_P(PubSubTest, TypedPublishAndTakeRoundTrip) {
  TypedPublisher<Pose> pub("/pose", domain_.context());
  TypedSubscriber<Pose> sub("/pose", domain_.context());
  ASSERT_EQ(pub.publish(Pose{1.5, -2.0}), PublishResult::kOk);
  MessageInfo info;
  const auto p = sub.take(&info);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->x, 1.5);
  EXPECT_EQ(p->y, -2.0);
  EXPECT_EQ(info.size, sizeof(Pose));
  EXPECT_EQ(sub.untyped().type().schema, Pose::kSchema);
}

TEST_P(PubSubTest, OpeningWithAnotherTypeIsRefusedNamingBoth) {
  TypedPublisher<Pose> pub("/imu", domain_.context());
  try {
    TypedSubscriber<Gps> sub("/imu", domain_.context());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTypeMismatch);
    EXPECT_STREQ(e.what(),
                 "channel /imu has type test/Pose (hash 0000000000001234), you asked for test/Gps (hash "
                 "0000000000009f00)");
  }
  // Also from another context (another process's view).
  Context other{[&] {
    Config c;
    c.domain = domain_.domain();
    return c;
  }()};
  EXPECT_THROW(Publisher("/imu", TypeInfo::bytes(), other), Error);
}

TEST_P(PubSubTest, UntypedSubscriberNeedsAnExistingChannel) {
  try {
    Subscriber sub("/missing", std::nullopt, domain_.context());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kNotFound);
    EXPECT_EQ(e.exit_code(), 3);
  }
  TypedPublisher<Pose> pub("/pose", domain_.context());
  Subscriber any("/pose", std::nullopt, domain_.context());
  EXPECT_EQ(any.type().name, "test/Pose");
}

TEST_P(PubSubTest, InvalidChannelNameIsRefused) {
  EXPECT_THROW(Publisher("no_slash", TypeInfo::bytes(), domain_.context()), Error);
}

TEST_P(PubSubTest, HistoryDeliversMessagesPublishedBeforeSubscribing) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  for (std::uint32_t i = 0; i < 5; ++i) EXPECT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
  Subscriber late("/a", TypeInfo::bytes(), domain_.context(), SubscriberOptions{.history = 3});
  for (std::uint32_t i = 2; i < 5; ++i) {
    ASSERT_TRUE(late.take(buf_).ok());
    EXPECT_EQ(value_of(buf_), i);
  }
  EXPECT_EQ(late.take(buf_).status, TakeStatus::kNoData);
}

TEST_P(PubSubTest, ProvenanceTravelsWithTheMessage) {
  Publisher pub("/out", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/out", TypeInfo::bytes(), domain_.context());
  const std::array<Provenance, 2> inputs{Provenance{3, 0, 100}, Provenance{4, 0, 200}};
  pub.set_provenance(inputs);
  EXPECT_EQ(pub.publish(bytes_of(1)), PublishResult::kOk);
  const TakeResult r = sub.take(buf_);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.info.input_count, 2U);
  EXPECT_EQ(r.info.provenance[1].channel_index, 4U);
  EXPECT_EQ(r.info.provenance[1].sequence, 200U);
  // Back to automatic: this thread's take of /out #0 is what it publishes from.
  pub.set_provenance({});
  EXPECT_EQ(pub.publish(bytes_of(2)), PublishResult::kOk);
  const TakeResult auto_r = sub.take(buf_);
  ASSERT_EQ(auto_r.info.input_count, 1U);
  EXPECT_EQ(auto_r.info.inputs()[0].channel_index, pub.channel_index());
  EXPECT_EQ(auto_r.info.inputs()[0].sequence, 0U);
}

// Up to two entries travel packed in the slot header's line (a 16-bit
// channel index, a 48-bit sequence, via 0); anything else in the provenance
// lines. Each case goes through the same slots in turn (a ring of 8), so a
// reader that used one form for a message written in the other, or a
// packing that cut a field, would show a wrong entry.
TEST_P(PubSubTest, ProvenanceComesBackWholeInTheHeaderLineAndBeyondIt) {
  Publisher pub("/out", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/out", TypeInfo::bytes(), domain_.context());
  constexpr std::uint64_t kSeqLimit = std::uint64_t{1} << 48;
  const std::vector<std::vector<Provenance>> cases{
      {Provenance{65535, 0, kSeqLimit - 1}, Provenance{0, 0, 0}},       // the largest that fit
      {Provenance{65536, 0, 5}},                                        // index too wide
      {Provenance{2, 0, kSeqLimit}, Provenance{3, 0, 1}},               // sequence too wide
      {Provenance{7, 0, 11}, Provenance{8, 1, 12}},                     // a via
      {Provenance{1, 0, 1}, Provenance{2, 0, 2}, Provenance{3, 0, 3}},  // three
      {Provenance{9, 0, 99}},
  };
  std::uint64_t seq = 0;
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (std::size_t c = 0; c < cases.size(); ++c, ++seq) {
      const std::vector<Provenance>& want = cases[c];
      pub.set_provenance(want);
      ASSERT_EQ(pub.publish(bytes_of(static_cast<std::uint32_t>(c))), PublishResult::kOk);
      const TakeResult r = sub.take(buf_);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r.info.input_count, want.size()) << "case " << c << " round " << round;
      ASSERT_EQ(r.info.entry_count, want.size()) << "case " << c;
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(r.info.provenance[i].channel_index, want[i].channel_index) << "case " << c << " entry " << i;
        EXPECT_EQ(r.info.provenance[i].via, want[i].via) << "case " << c << " entry " << i;
        EXPECT_EQ(r.info.provenance[i].sequence, want[i].sequence) << "case " << c << " entry " << i;
      }
    }
    // Automatic: a stage's output cites the input it took and that input's
    // own input, the chain that fits the header's line.
    pub.set_provenance({});
    ASSERT_EQ(pub.publish(bytes_of(0)), PublishResult::kOk);
    const TakeResult r = sub.take(buf_);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.info.input_count, 1U);
    ASSERT_EQ(r.info.entry_count, 2U);
    EXPECT_EQ(r.info.inputs()[0].channel_index, pub.channel_index());
    EXPECT_EQ(r.info.inputs()[0].sequence, seq - 1);
    EXPECT_EQ(r.info.second_level()[0].channel_index, 9U);
    EXPECT_EQ(r.info.second_level()[0].sequence, 99U);
    ++seq;
  }
}

// A message of at most 24 bytes that cites nothing travels in the slot
// header's line (its reader reads one line); one that cites, or is larger,
// in the payload area. Every size and form goes through the same reused
// slots, so each finds the other forms' leftovers; taken, read in place
// and reread, each comes back whole, with no provenance or processing time
// read from where its bytes lie.
TEST_P(PubSubTest, SmallMessagesTravelInTheHeaderLineAndComeBackWhole) {
  Publisher in("/in", TypeInfo::bytes(), domain_.context());
  Subscriber in_sub("/in", TypeInfo::bytes(), domain_.context());
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  Subscriber sub("/a", TypeInfo::bytes(), domain_.context());
  const bool ring = GetParam() == Transport::kShm;
  // /a is taken on another thread: a take on this one would be cited by
  // the next publish on /a.
  const auto elsewhere = [](const auto& f) { std::thread(f).join(); };
  std::uint32_t n = 0;
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (const std::uint32_t size : {0U, 1U, 4U, 16U, 17U, 24U, 25U, 64U}) {
      for (const bool cites : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "round " << round << " size " << size << " cites " << cites);
        ++n;
        std::vector<std::byte> msg(size);
        for (std::uint32_t i = 0; i < size; ++i) msg[i] = static_cast<std::byte>((n * 31 + i) | 1U);
        if (cites) {
          ASSERT_EQ(in.publish(bytes_of(n)), PublishResult::kOk);
          ASSERT_TRUE(in_sub.take(buf_).ok());
        }
        ASSERT_EQ(pub.publish(msg), PublishResult::kOk);
        std::vector<std::byte> got;
        std::uintptr_t where = 0;
        TakeResult r;
        if (round == 1) {
          // An empty message fits an empty buffer (whose data() is null).
          elsewhere([&] { r = sub.take(size == 0 ? std::span<std::byte>{} : std::span<std::byte>{buf_}); });
          got.assign(buf_.begin(), buf_.begin() + std::min<std::size_t>(r.info.size, buf_.size()));
        } else {
          elsewhere([&] {
            r = sub.read([&](std::span<const std::byte> p, const MessageInfo&) {
              got.assign(p.begin(), p.end());
              where = reinterpret_cast<std::uintptr_t>(p.data());
            });
          });
        }
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r.info.size, size);
        EXPECT_EQ(got, msg);
        ASSERT_EQ(r.info.input_count, cites ? 1U : 0U);
        if (cites) {
          EXPECT_EQ(r.info.inputs()[0].channel_index, in.channel_index());
        } else {
          EXPECT_EQ(r.info.processing_ns, 0);
        }
        if (where != 0 && ring) {
          // The slot is 64-aligned: its header's line ends at 64, the
          // payload area starts on a line.
          const std::uintptr_t expected = cites || size > 24 ? 0 : size <= 16 ? 48 : 40;
          EXPECT_EQ(where % 64, expected);
        } else if (where != 0) {
          EXPECT_EQ(where % 16, 0U);
        }
        if (ring) {
          std::vector<std::byte> again;
          EXPECT_TRUE(sub.reread(r.info.sequence, [&](std::span<const std::byte> p, const RingCheck&) {
            again.assign(p.begin(), p.end());
          }));
          EXPECT_EQ(again, msg);
        }
      }
    }
  }
}

TEST_P(PubSubTest, PlainThreadCitesWhatItTookSinceItsLastPublishOnThatChannel) {
  Publisher pa("/pa", TypeInfo::bytes(), domain_.context());
  Publisher pb("/pb", TypeInfo::bytes(), domain_.context());
  Subscriber sa("/pa", TypeInfo::bytes(), domain_.context());
  Subscriber sb("/pb", TypeInfo::bytes(), domain_.context());
  Publisher out("/out", TypeInfo::bytes(), domain_.context());
  Publisher other("/other", TypeInfo::bytes(), domain_.context());
  Subscriber sout("/out", TypeInfo::bytes(), domain_.context());
  Subscriber sother("/other", TypeInfo::bytes(), domain_.context());
  // Outputs are taken on another thread, so only the inputs below are this
  // thread's takes.
  std::vector<std::byte> out_buf(64);
  const auto take_elsewhere = [&out_buf](Subscriber& s) {
    TakeResult r;
    std::thread([&] { r = s.take(out_buf); }).join();
    return r;
  };
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(pa.publish(bytes_of(i)), PublishResult::kOk);
  EXPECT_EQ(pb.publish(bytes_of(7)), PublishResult::kOk);
  ASSERT_TRUE(sa.take(buf_).ok());  // /pa #0
  ASSERT_TRUE(sb.take(buf_).ok());  // /pb #0
  EXPECT_EQ(out.publish(bytes_of(1)), PublishResult::kOk);
  TakeResult r = take_elsewhere(sout);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.info.input_count, 2U);
  EXPECT_EQ(r.info.inputs()[0].channel_index, pa.channel_index());
  EXPECT_EQ(r.info.inputs()[0].sequence, 0U);
  EXPECT_EQ(r.info.inputs()[1].channel_index, pb.channel_index());
  EXPECT_GT(r.info.processing_ns, 0);
  // Nothing taken since: the next publish on /out cites nothing...
  EXPECT_EQ(out.publish(bytes_of(2)), PublishResult::kOk);
  r = take_elsewhere(sout);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.input_count, 0U);
  EXPECT_EQ(r.info.processing_ns, 0);
  // ...while another channel's first publish cites what the thread took
  // since its previous publish: /pa #1 only.
  ASSERT_TRUE(sa.take(buf_).ok());  // /pa #1
  EXPECT_EQ(other.publish(bytes_of(3)), PublishResult::kOk);
  r = take_elsewhere(sother);
  ASSERT_EQ(r.info.input_count, 1U);
  EXPECT_EQ(r.info.inputs()[0].channel_index, pa.channel_index());
  EXPECT_EQ(r.info.inputs()[0].sequence, 1U);
  // /out's next publish cites /pa #1 as well: taken since /out's last one.
  EXPECT_EQ(out.publish(bytes_of(4)), PublishResult::kOk);
  r = take_elsewhere(sout);
  ASSERT_EQ(r.info.input_count, 1U);
  EXPECT_EQ(r.info.inputs()[0].sequence, 1U);
}

TEST_P(PubSubTest, SecondLevelShowsTheInputsOfEachInput) {
  Publisher p1("/l1", TypeInfo::bytes(), domain_.context());
  Subscriber s1("/l1", TypeInfo::bytes(), domain_.context());
  Publisher p2("/l2", TypeInfo::bytes(), domain_.context());
  Subscriber s2("/l2", TypeInfo::bytes(), domain_.context());
  Publisher p3("/l3", TypeInfo::bytes(), domain_.context());
  Subscriber s3("/l3", TypeInfo::bytes(), domain_.context());
  EXPECT_EQ(p1.publish(bytes_of(1)), PublishResult::kOk);
  EXPECT_EQ(p1.publish(bytes_of(2)), PublishResult::kOk);
  ASSERT_TRUE(s1.take(buf_).ok());
  ASSERT_TRUE(s1.take(buf_).ok());
  EXPECT_EQ(p2.publish(bytes_of(3)), PublishResult::kOk);  // cites /l1 #0, #1
  ASSERT_TRUE(s2.take(buf_).ok());
  EXPECT_EQ(p3.publish(bytes_of(4)), PublishResult::kOk);  // cites /l2 #0, and through it /l1 #0, #1
  const TakeResult r = s3.take(buf_);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.info.input_count, 1U);
  EXPECT_EQ(r.info.inputs()[0].channel_index, p2.channel_index());
  ASSERT_EQ(r.info.second_level().size(), 2U);
  EXPECT_EQ(r.info.second_level()[1].channel_index, p1.channel_index());
  EXPECT_EQ(r.info.second_level()[1].sequence, 1U);
  EXPECT_EQ(r.info.second_level()[1].via, 0U);
  EXPECT_EQ(r.info.second_level_cut, 0U);
}

TEST_P(PubSubTest, ALoanCitesWhatTheThreadTookBeforeAndWhileItWasOpen) {
  Publisher in("/in", TypeInfo::bytes(), domain_.context());
  Subscriber sin("/in", TypeInfo::bytes(), domain_.context());
  Publisher out("/out", TypeInfo::bytes(), domain_.context());
  Subscriber sout("/out", TypeInfo::bytes(), domain_.context());
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(in.publish(bytes_of(i)), PublishResult::kOk);
  ASSERT_TRUE(sin.take(buf_).ok());  // /in #0, before the loan
  Loan loan = out.loan(4);
  ASSERT_TRUE(loan.valid());
  ASSERT_TRUE(sin.take(buf_).ok());  // /in #1 and #2, while it is open
  ASSERT_TRUE(sin.take(buf_).ok());
  *loan.as<std::uint32_t>() = 5;
  ASSERT_EQ(out.commit(loan), PublishResult::kOk);
  std::vector<std::byte> out_buf(64);
  TakeResult r;
  std::thread([&] { r = sout.take(out_buf); }).join();  // not this thread's input
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.info.input_count, 3U);
  EXPECT_EQ(r.info.inputs()[0].sequence, 0U);
  EXPECT_EQ(r.info.inputs()[2].sequence, 2U);
  EXPECT_EQ(r.info.provenance_cut, 0U);
}

TEST_P(PubSubTest, InputsBeyondTheLimitAreCutAndCounted) {
  Config config = small_ring(GetParam());
  config.defaults.capacity = 64;
  TestDomain big{config, "cut"};
  Publisher in("/many", TypeInfo::bytes(), big.context());
  Subscriber sin("/many", TypeInfo::bytes(), big.context());
  Publisher mid("/mid", TypeInfo::bytes(), big.context());
  Subscriber smid("/mid", TypeInfo::bytes(), big.context());
  Publisher out("/fused", TypeInfo::bytes(), big.context());
  Subscriber sout("/fused", TypeInfo::bytes(), big.context());
  for (std::uint32_t i = 0; i < 40; ++i) EXPECT_EQ(in.publish(bytes_of(i)), PublishResult::kOk);
  // A plain thread keeps the latest 16 of its 20 takes, twice.
  for (std::uint32_t i = 0; i < 20; ++i) ASSERT_TRUE(sin.take(buf_).ok());
  EXPECT_EQ(mid.publish(bytes_of(0)), PublishResult::kOk);
  for (std::uint32_t i = 0; i < 20; ++i) ASSERT_TRUE(sin.take(buf_).ok());
  EXPECT_EQ(mid.publish(bytes_of(1)), PublishResult::kOk);
  TakeResult r = smid.take(buf_);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.info.input_count, kMaxProvenance);
  EXPECT_EQ(r.info.inputs()[0].sequence, 4U);
  EXPECT_EQ(r.info.inputs()[15].sequence, 19U);
  EXPECT_EQ(r.info.provenance_cut, 4U);
  ASSERT_TRUE(smid.take(buf_).ok());
  // Two inputs of 16 inputs each: the second level has room for 14 of 32.
  EXPECT_EQ(out.publish(bytes_of(2)), PublishResult::kOk);
  r = sout.take(buf_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.info.input_count, 2U);
  ASSERT_EQ(r.info.second_level().size(), kMaxProvenance - 2);
  EXPECT_EQ(r.info.second_level()[0].sequence, 4U);
  EXPECT_EQ(r.info.second_level().back().via, 0U);
  EXPECT_EQ(r.info.second_level_cut, 2 * kMaxProvenance - (kMaxProvenance - 2));
  // Explicit provenance beyond the limit is cut too; all of it is counted
  // per publisher where shmtool info shows it.
  std::vector<Provenance> many(20, Provenance{1, 0, 1});
  out.set_provenance(many);
  EXPECT_EQ(out.publish(bytes_of(3)), PublishResult::kOk);
  r = sout.take(buf_);
  EXPECT_EQ(r.info.input_count, kMaxProvenance);
  EXPECT_EQ(r.info.provenance_cut, 4U);
  std::uint64_t mid_cut = 0;
  std::uint64_t out_cut = 0;
  for (const auto& ep : introspect::ChannelReader(big.domain(), "/mid").view().publishers) mid_cut += ep.provenance_cut;
  for (const auto& ep : introspect::ChannelReader(big.domain(), "/fused").view().publishers)
    out_cut += ep.provenance_cut;
  EXPECT_EQ(mid_cut, 8U);
  EXPECT_EQ(out_cut, 4U);
}

TEST_P(PubSubTest, RegistryListsChannelAndIntrospectionShowsEndpoints) {
  TypedPublisher<Pose> pub("/pose", domain_.context());
  Subscriber sub("/pose", std::nullopt, domain_.context());
  EXPECT_EQ(pub.publish(Pose{}), PublishResult::kOk);
  introspect::DomainView dv(domain_.domain());
  EXPECT_EQ(dv.channel_names(), std::vector<std::string>{"/pose"});
  introspect::ChannelReader reader(domain_.domain(), "/pose");
  const introspect::ChannelView v = reader.view();
  EXPECT_EQ(v.type_name, "test/Pose");
  EXPECT_EQ(v.type_hash, 0x1234U);
  EXPECT_EQ(v.schema, Pose::kSchema);
  EXPECT_EQ(v.capacity, 8U);
  EXPECT_EQ(v.max_message_size, 64U);
  EXPECT_EQ(v.messages, 1U);
  ASSERT_EQ(v.publishers.size(), 1U);
  ASSERT_EQ(v.subscribers.size(), 1U);
  EXPECT_EQ(v.publishers[0].pid, ::getpid());
  EXPECT_EQ(v.publishers[0].node, "test");
  EXPECT_EQ(v.publishers[0].messages, 1U);
  EXPECT_TRUE(v.subscribers[0].alive);
  EXPECT_EQ(dv.channel_name(v.registry_index), "/pose");
}

TEST_P(PubSubTest, EndpointEntriesAreFreedWhenDestroyed) {
  { Publisher pub("/a", TypeInfo::bytes(), domain_.context()); }
  Subscriber keep("/a", TypeInfo::bytes(), domain_.context());
  introspect::ChannelReader reader(domain_.domain(), "/a");
  EXPECT_EQ(reader.view().publishers.size(), 0U);
  EXPECT_EQ(reader.view().subscribers.size(), 1U);
}

TEST_P(PubSubTest, SegmentsAreCreatedWithTheConfiguredMode) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm/" + channel_object_name(domain_.domain(), "/a")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660U);
  Config c = small_ring(GetParam());
  c.mode = 0600;
  TestDomain private_domain{c, "mode"};
  Publisher pub2("/b", TypeInfo::bytes(), private_domain.context());
  ASSERT_EQ(::stat(("/dev/shm/" + channel_object_name(private_domain.domain(), "/b")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
}

TEST_P(PubSubTest, OpeningWithTheOtherTransportIsRefusedNamingBoth) {
  Publisher pub("/a", TypeInfo::bytes(), domain_.context());
  const Transport other = GetParam() == Transport::kShm ? Transport::kIceoryx : Transport::kShm;
  Config c = small_ring(other);
  c.defaults.transport_set = true;  // as `transport = "..."` in [defaults]
  c.domain = domain_.domain();
  Context ctx{c};
  try {
    Subscriber sub("/a", TypeInfo::bytes(), ctx);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_EQ(e.exit_code(), 2);
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt_transport("created with transport", GetParam())), std::string::npos) << what;
    EXPECT_NE(what.find(fmt_transport("configuration gives it", other)), std::string::npos) << what;
  }
  // A process whose configuration names no transport follows the channel's
  // (tools, the recorder).
  Config plain = small_ring();
  plain.domain = domain_.domain();
  Context follower{plain};
  Subscriber sub("/a", std::nullopt, follower);
  EXPECT_EQ(sub.transport(), GetParam());
  ASSERT_EQ(pub.publish(bytes_of(9)), PublishResult::kOk);
  ASSERT_TRUE(sub.take(buf_).ok());
  EXPECT_EQ(value_of(buf_), 9U);
}

// overflow is the creator's, like the transport: a process configured with
// the other one is refused, naming both; one that names none follows.
TEST(OverflowConfigTest, OpeningWithTheOtherOverflowIsRefusedNamingBoth) {
  Config c = small_ring();
  c.defaults.overflow = Overflow::kBlock;
  c.defaults.overflow_set = true;
  TestDomain d{c, "ovf"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Config other = small_ring();
  other.defaults.overflow_set = true;  // overflow = "overwrite"
  other.domain = d.domain();
  Context ctx{other};
  try {
    Subscriber sub("/a", TypeInfo::bytes(), ctx);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string{e.what()}.find("created with overflow \"block\", and this process's configuration gives it "
                                         "\"overwrite\""),
              std::string::npos)
        << e.what();
  }
  Config plain = small_ring();
  plain.domain = d.domain();
  Context follower{plain};
  Subscriber sub("/a", TypeInfo::bytes(), follower);
  EXPECT_EQ(introspect::ChannelReader(d.domain(), "/a").view().overflow, Overflow::kBlock);
}

TEST(OverflowConfigTest, BlockOnIceoryxIsRefusedBeforeAnythingIsCreated) {
  Config c = small_ring(Transport::kIceoryx);
  c.defaults.overflow = Overflow::kBlock;
  TestDomain d{c, "ovfi"};
  try {
    Publisher pub("/a", TypeInfo::bytes(), d.context());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string{e.what()}.find("overflow = \"block\" and transport = \"iceoryx\""), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(introspect::ChannelReader(d.domain(), "/a"), Error) << "no segment was left behind";
}

// In one process: a subscriber that never takes holds a block channel's
// publisher for block_timeout once; then it is overtaken, and it counts
// what it lost when it takes again.
TEST(OverflowConfigTest, ASubscriberThatDoesNotTakeIsOvertakenAfterBlockTimeoutOnce) {
  Config c = small_ring();
  c.defaults.overflow = Overflow::kBlock;
  c.defaults.block_timeout = 50ms;
  TestDomain d{c, "ovft"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber idle("/a", TypeInfo::bytes(), d.context());
  std::vector<std::byte> buf(64);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < 8; ++i) ASSERT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
  EXPECT_EQ(pub.blocked().count(), 0) << "8 slots: room for 8 without waiting";
  for (std::uint32_t i = 8; i < 40; ++i) ASSERT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms) << "the 9th publish waited block_timeout";
  EXPECT_EQ(pub.block_timeouts(), 1U) << "once overtaken, the idle subscriber holds nobody up again";
  EXPECT_GE(pub.blocked(), 50ms);
  ASSERT_TRUE(idle.take(buf).ok());
  EXPECT_EQ(value_of(buf), 32U) << "it resumes at the oldest message the ring holds";
  EXPECT_EQ(idle.lost(), 32U);
  // It takes again, so it holds the publisher again: the ring has 1 slot
  // of room (it has read up to 33, the ring holds 33..40).
  ASSERT_EQ(pub.publish(bytes_of(40)), PublishResult::kOk);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(pub.publish(bytes_of(41)), PublishResult::kOk);
  EXPECT_GE(std::chrono::steady_clock::now() - t1, 50ms);
  EXPECT_EQ(pub.block_timeouts(), 2U);
}

// create = false opens a channel that exists and never makes one: the
// error is the one every opener of a missing channel gets, and nothing is
// left behind.
TEST(OpenOnlyTest, APublisherThatMayNotCreateOpensOnlyWhatExists) {
  TestDomain d{small_ring(), "open"};
  PublisherOptions only_open;
  only_open.create = false;
  try {
    Publisher absent("/absent", TypeInfo::bytes(), d.context(), only_open);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kNotFound);
    EXPECT_EQ(std::string{e.what()}, "channel /absent does not exist in domain \"" + d.domain() + "\"");
  }
  EXPECT_THROW(introspect::ChannelReader(d.domain(), "/absent"), Error) << "nothing was created";
  Subscriber sub("/there", TypeInfo::bytes(), d.context());
  Config other = small_ring();
  other.domain = d.domain();
  Context elsewhere{other};  // its own mapping: the open path, not the process's cache
  Publisher there("/there", TypeInfo::bytes(), elsewhere, only_open);
  ASSERT_EQ(there.publish(bytes_of(7)), PublishResult::kOk);
  std::vector<std::byte> buf(64);
  ASSERT_TRUE(sub.take(buf).ok());
  EXPECT_EQ(value_of(buf), 7U);
}

// A channel's name is resolved to its shared-memory object once per
// endpoint, with its name (ChannelName): nothing below resolves it again,
// whether the channel is created, found in the process's mapping, opened
// only, or missing.
TEST(OpenOnlyTest, AChannelNameIsResolvedToItsObjectOncePerEndpoint) {
  TestDomain d{small_ring(), "once"};
  const auto calls = [] { return detail::channel_object_name_calls(); };
  std::uint64_t before = calls();
  Publisher first("/once", TypeInfo::bytes(), d.context());
  EXPECT_EQ(calls() - before, 1U) << "a new channel";
  before = calls();
  Publisher second("/once", TypeInfo::bytes(), d.context());
  Subscriber sub("/once", TypeInfo::bytes(), d.context());
  EXPECT_EQ(calls() - before, 2U) << "two endpoints of the process's mapping, one resolution each";
  Config other = small_ring();
  other.domain = d.domain();
  Context elsewhere{other};
  PublisherOptions only_open;
  only_open.create = false;
  before = calls();
  Publisher opened("/once", TypeInfo::bytes(), elsewhere, only_open);
  EXPECT_EQ(calls() - before, 1U) << "an existing channel, opened only";
  before = calls();
  EXPECT_THROW(Publisher("/none", TypeInfo::bytes(), elsewhere, only_open), Error);
  EXPECT_EQ(calls() - before, 1U) << "a missing one";
}

// A wait for room that its interrupt ends publishes nothing: the publish is
// counted as dropped, no sequence is used (the subscriber then reads on
// without a gap), and the interrupt is asked only while the publish waits.
// Solo (one publisher) and shared (two) claims alike.
TEST(OverflowConfigTest, AnInterruptedWaitForRoomPublishesNothing) {
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared" : "solo");
    Config c = small_ring();
    c.defaults.overflow = Overflow::kBlock;
    c.defaults.block_timeout = 60s;  // only the interrupt ends these waits
    TestDomain d{c, shared ? "ovfis" : "ovfi1"};
    Publisher pub("/a", TypeInfo::bytes(), d.context());
    std::optional<Publisher> other;
    if (shared) other.emplace("/a", TypeInfo::bytes(), d.context());
    Subscriber sub("/a", TypeInfo::bytes(), d.context());
    int asked = 0;
    pub.set_interrupt([&] { return ++asked >= 3; });
    for (std::uint32_t i = 0; i < 8; ++i) ASSERT_EQ(pub.publish(bytes_of(i)), PublishResult::kOk);
    EXPECT_EQ(asked, 0) << "room without waiting: never asked";
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(pub.publish(bytes_of(8)), PublishResult::kDropped);
    EXPECT_EQ(asked, 3);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 40ms) << "asked every 20 ms";
    EXPECT_FALSE(pub.loan(4).valid()) << "a loan's wait ends alike";
    EXPECT_EQ(asked, 4);
    EXPECT_EQ(pub.dropped(), 2U);
    EXPECT_EQ(pub.published(), 8U);
    EXPECT_EQ(pub.block_timeouts(), 0U);
    std::vector<std::byte> buf(64);
    ASSERT_TRUE(sub.take(buf).ok());
    EXPECT_EQ(value_of(buf), 0U);
    ASSERT_EQ(pub.publish(bytes_of(8)), PublishResult::kOk) << "a slot was freed: no wait";
    for (std::uint32_t i = 1; i <= 8; ++i) {
      ASSERT_TRUE(sub.take(buf).ok());
      EXPECT_EQ(value_of(buf), i);
    }
    EXPECT_EQ(sub.lost(), 0U);
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, PubSubTest, ::testing::Values(Transport::kShm, Transport::kIceoryx),
                         test::transport_name);

TEST(AgeStatisticsTest, SubscriberRecordsMessageAgeEveryNthTake) {
  Config c = small_ring();
  c.defaults.age_sample_every = 4;
  shmbus::test::TestDomain d{c, "age"};
  Publisher pub("/a", TypeInfo::bytes(), d.context());
  Subscriber sub("/a", TypeInfo::bytes(), d.context());
  std::vector<std::byte> buf(64);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(pub.publish(bytes_of(static_cast<std::uint32_t>(i))), PublishResult::kOk);
    ASSERT_TRUE(sub.take(buf).ok());
  }
  introspect::ChannelReader reader(d.domain(), "/a", true);
  auto v = reader.view();
  ASSERT_EQ(v.subscribers.size(), 1U);
  const auto& s = v.subscribers[0];
  EXPECT_EQ(s.messages, 8U);
  EXPECT_EQ(s.age_samples, 2U) << "the 1st and the 5th take";
  EXPECT_GT(s.age_sum_ns, 0U);
  EXPECT_LE(s.age_min_ns, s.age_max_ns);
  EXPECT_GT(s.age_sum_sq_s2, 0.0);
  reader.reset_age_extremes();
  v = reader.view();
  EXPECT_EQ(v.subscribers[0].age_min_ns, UINT64_MAX);
  EXPECT_EQ(v.subscribers[0].age_max_ns, 0U);
  EXPECT_EQ(v.subscribers[0].age_samples, 2U) << "sums are cumulative";
}
