// The synchronizer's policies on randomised streams (property tests), the
// case the pivot rule alone gets wrong, reproducibility from a seed, and
// the refusals of bad parameters.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include <cstring>

#include "ros2_test_msgs/PointCloud.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/sync.hpp"
#include "shmbus_msgs/Imu.hpp"
#include "support/sync_streams.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace shmbus::sync;
using namespace std::chrono_literals;
using shmbus::test::make_streams;
using shmbus::test::random_specs;
using shmbus::test::StreamSpec;

namespace {

struct Outcome {
  std::vector<Set> sets;
  std::vector<std::array<std::uint64_t, kDropReasons>> dropped;
  std::vector<std::uint64_t> pushed;
  std::size_t pending = 0;
  std::uint64_t drop_callbacks = 0;
};

Outcome run(const std::vector<StreamSpec>& specs, const Options& options, std::uint64_t seed) {
  Aligner a(specs.size(), options);
  Outcome o;
  o.pushed.resize(specs.size());
  a.on_drop([&](const Item&, DropReason) { ++o.drop_callbacks; });
  for (const auto& arrival : make_streams(specs, 20'000'000'000, seed)) {
    ++o.pushed[arrival.item.channel];
    a.push(arrival.item, o.sets);
  }
  o.dropped.resize(specs.size());
  for (std::size_t c = 0; c < specs.size(); ++c) {
    for (std::size_t r = 0; r < kDropReasons; ++r) o.dropped[c][r] = a.dropped(c, static_cast<DropReason>(r));
  }
  o.pending = a.pending();
  EXPECT_EQ(a.sets(), o.sets.size());
  return o;
}

/// One member per channel, in channel order; no message in two sets; each
/// channel's members strictly newer set after set (so sets are in time
/// order); the disparity is what the members say.
void expect_well_formed(const Outcome& o, std::size_t channels, bool reuse_allowed) {
  std::set<std::pair<std::size_t, std::uint64_t>> used;
  std::vector<std::int64_t> last(channels, INT64_MIN);
  for (const Set& s : o.sets) {
    ASSERT_EQ(s.members.size(), channels);
    std::int64_t lo = INT64_MAX;
    std::int64_t hi = INT64_MIN;
    for (std::size_t c = 0; c < channels; ++c) {
      const Item& m = s.members[c];
      ASSERT_EQ(m.channel, c);
      lo = std::min(lo, m.stamp_ns);
      hi = std::max(hi, m.stamp_ns);
      const bool fresh = used.insert({c, m.sequence}).second;
      if (reuse_allowed) {
        EXPECT_GE(m.stamp_ns, last[c]);
      } else {
        EXPECT_TRUE(fresh) << "message " << m.sequence << " of channel " << c << " used twice";
        EXPECT_GT(m.stamp_ns, last[c]) << "sets out of time order on channel " << c;
      }
      last[c] = m.stamp_ns;
    }
    EXPECT_EQ(s.disparity_ns, hi - lo);
  }
}

/// Every message pushed is in exactly one set, dropped once, or pending.
void expect_accounted(const Outcome& o, std::size_t channels) {
  std::uint64_t dropped_total = 0;
  for (std::size_t c = 0; c < channels; ++c) {
    std::uint64_t dropped = 0;
    for (auto n : o.dropped[c]) dropped += n;
    dropped_total += dropped;
    EXPECT_LE(o.sets.size() + dropped, o.pushed[c]);
  }
  std::uint64_t pushed = 0;
  for (auto n : o.pushed) pushed += n;
  EXPECT_EQ(o.sets.size() * channels + dropped_total + o.pending, pushed);
  EXPECT_EQ(o.drop_callbacks, dropped_total);
}

}  // namespace

TEST(SyncProperties, BoundedDisparityKeepsEverySetWithinTheThreshold) {
  int seeds_with_sets = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto specs = random_specs(seed);
    Options o;
    o.policy = Policy::kBoundedDisparity;
    o.threshold = std::chrono::milliseconds(1 + seed % 20);
    const Outcome out = run(specs, o, seed);
    seeds_with_sets += out.sets.empty() ? 0 : 1;
    for (const Set& s : out.sets) EXPECT_LE(s.disparity_ns, o.threshold.count());
    expect_well_formed(out, specs.size(), false);
    expect_accounted(out, specs.size());
  }
  // Some streams never line up within a 1 ms threshold; most do.
  EXPECT_GE(seeds_with_sets, 45);
}

TEST(SyncProperties, ExactTimeSetsHaveIdenticalStamps) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // A common 10 ms grid, different delays and losses: identical stamps
    // exist, arrival order differs.
    std::vector<StreamSpec> specs(3);
    for (std::size_t c = 0; c < specs.size(); ++c) {
      specs[c].period_ns = 10'000'000;
      specs[c].delay_ns = static_cast<std::int64_t>(c) * 7'000'000;
      specs[c].delay_jitter_ns = 15'000'000;
      specs[c].loss = 0.1;
    }
    Options o;
    o.policy = Policy::kExactTime;
    const Outcome out = run(specs, o, seed);
    EXPECT_GT(out.sets.size(), 1000U);  // ~73% of 2000 grid points survive three 10% losses
    for (const Set& s : out.sets) EXPECT_EQ(s.disparity_ns, 0);
    expect_well_formed(out, specs.size(), false);
    expect_accounted(out, specs.size());
  }
}

TEST(SyncProperties, ApproximateTimeUsesEachMessageOnceInTimeOrder) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto specs = random_specs(seed);
    Options o;
    o.policy = Policy::kApproximateTime;
    o.queue_size = 16;
    const Outcome out = run(specs, o, seed);
    EXPECT_FALSE(out.sets.empty());
    expect_well_formed(out, specs.size(), false);
    expect_accounted(out, specs.size());
  }
}

TEST(SyncProperties, AllLatestTriggersOnTheMaster) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto specs = random_specs(seed);
    Options o;
    o.policy = Policy::kAllLatest;
    o.master = seed % specs.size();
    const Outcome out = run(specs, o, seed);
    expect_well_formed(out, specs.size(), true);
    // Every master message made a set or was dropped for lack of partners.
    std::uint64_t master_dropped = 0;
    for (auto n : out.dropped[o.master]) master_dropped += n;
    EXPECT_EQ(out.sets.size() + master_dropped, out.pushed[o.master]);
    std::set<std::uint64_t> masters;
    for (const Set& s : out.sets) EXPECT_TRUE(masters.insert(s.members[o.master].sequence).second);
  }
}

TEST(SyncProperties, CountsAreReproducibleFromTheSeed) {
  for (Policy p : {Policy::kBoundedDisparity, Policy::kExactTime, Policy::kApproximateTime, Policy::kAllLatest}) {
    SCOPED_TRACE(std::string{to_string(p)});
    const auto specs = random_specs(42);
    Options o;
    o.policy = p;
    o.threshold = 5ms;
    const Outcome a = run(specs, o, 42);
    const Outcome b = run(specs, o, 42);
    ASSERT_EQ(a.sets.size(), b.sets.size());
    EXPECT_EQ(a.dropped, b.dropped);
    for (std::size_t i = 0; i < a.sets.size(); ++i) {
      for (std::size_t c = 0; c < specs.size(); ++c) {
        EXPECT_EQ(a.sets[i].members[c].sequence, b.sets[i].members[c].sequence);
      }
    }
    const Outcome other = run(specs, o, 43);
    EXPECT_TRUE(a.sets.size() != other.sets.size() || a.dropped != other.dropped);
  }
}

// The bounded policy finds at least as many sets within T as approximate
// time does on the same streams (the benchmark reports the same on its
// workloads).
TEST(SyncProperties, BoundedFindsAtLeastAsManySetsWithinTheThresholdAsApproximate) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto specs = random_specs(seed);
    Options o;
    o.threshold = 10ms;
    o.policy = Policy::kBoundedDisparity;
    const Outcome bounded = run(specs, o, seed);
    o.policy = Policy::kApproximateTime;
    const Outcome approximate = run(specs, o, seed);
    const auto within = [&](const Outcome& out) {
      return std::count_if(out.sets.begin(), out.sets.end(),
                           [&](const Set& s) { return s.disparity_ns <= o.threshold.count(); });
    };
    EXPECT_GE(within(bounded), within(approximate));
  }
}

// Arrival order differs from timestamp order: the head of the other queue
// is newer than the pivot by more than T. The pivot rule alone would pair
// them; the policy drops the pivot instead.
TEST(SyncBounded, AHeadNewerThanThePivotIsNotPairedBeyondTheThreshold) {
  Options o;
  o.threshold = 10ns;
  Aligner a(2, o);
  std::vector<Set> sets;
  std::vector<std::pair<std::size_t, DropReason>> drops;
  a.on_drop([&](const Item& i, DropReason r) { drops.emplace_back(i.channel, r); });
  a.push(Item{1, 200, 0, nullptr}, sets);  // B arrives first with a late stamp
  a.push(Item{0, 100, 0, nullptr}, sets);  // A: the pivot, 100 older than B's head
  EXPECT_TRUE(sets.empty());
  ASSERT_EQ(drops.size(), 1U);
  EXPECT_EQ(drops[0], std::make_pair(std::size_t{0}, DropReason::kTooOld));
  a.push(Item{0, 195, 1, nullptr}, sets);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_EQ(sets[0].disparity_ns, 5);
  EXPECT_EQ(sets[0].members[0].sequence, 1U);
  EXPECT_EQ(sets[0].members[1].sequence, 0U);
}

TEST(SyncBounded, HeadsOnBothSidesOfThePivotSpanningMoreThanTAreSplit) {
  Options o;
  o.threshold = 10ns;
  Aligner a(3, o);
  std::vector<Set> sets;
  a.push(Item{0, 91, 0, nullptr}, sets);   // within T below the pivot
  a.push(Item{1, 109, 0, nullptr}, sets);  // within T above the pivot
  a.push(Item{2, 100, 0, nullptr}, sets);  // pivot: 91..109 spans 18 > T
  EXPECT_TRUE(sets.empty());
  EXPECT_EQ(a.dropped(0, DropReason::kTooOld), 1U);
  a.push(Item{0, 101, 1, nullptr}, sets);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_EQ(sets[0].disparity_ns, 9);
}

TEST(SyncBounded, QueuesOverflowOldestFirstAndOutOfOrderIsDropped) {
  Options o;
  o.threshold = 10ns;
  o.queue_size = 2;
  Aligner a(2, o);
  std::vector<Set> sets;
  for (std::int64_t t : {10, 20, 30}) a.push(Item{0, t, static_cast<std::uint64_t>(t), nullptr}, sets);
  EXPECT_EQ(a.dropped(0, DropReason::kQueueFull), 1U);
  a.push(Item{0, 25, 99, nullptr}, sets);  // older than its channel's last
  EXPECT_EQ(a.dropped(0, DropReason::kOutOfOrder), 1U);
  a.push(Item{1, 28, 0, nullptr}, sets);  // pivot 28: the head 20 is within T
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_EQ(sets[0].members[0].stamp_ns, 20);
  EXPECT_EQ(sets[0].disparity_ns, 8);
  a.push(Item{1, 45, 1, nullptr}, sets);  // pivot 45: the head 30 is older than 45 - T and goes
  EXPECT_EQ(sets.size(), 1U);
  EXPECT_EQ(a.dropped(0, DropReason::kTooOld), 1U);
  EXPECT_EQ(a.pending(), 1U);
}

TEST(SyncApproximate, PicksTheMessageNearestThePivotOnceItIsKnown) {
  Options o;
  o.policy = Policy::kApproximateTime;
  Aligner a(2, o);
  std::vector<Set> sets;
  for (std::int64_t t : {0, 10, 20, 30}) a.push(Item{0, t, static_cast<std::uint64_t>(t), nullptr}, sets);
  a.push(Item{1, 22, 0, nullptr}, sets);  // pivot 22: nearest on channel 0 is 20, known since 30 arrived
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_EQ(sets[0].members[0].stamp_ns, 20);
  EXPECT_EQ(a.dropped(0, DropReason::kNoMatch), 2U);  // 0 and 10
  a.push(Item{1, 41, 1, nullptr}, sets);              // 30 is the head; 41 the pivot; is a nearer one coming?
  EXPECT_EQ(sets.size(), 1U);
  a.push(Item{0, 45, 45, nullptr}, sets);  // yes: 45 is nearer than 30
  ASSERT_EQ(sets.size(), 2U);
  EXPECT_EQ(sets[1].members[0].stamp_ns, 45);
}

TEST(SyncAllLatest, EachMasterMessageTakesTheLatestOfTheOthers) {
  Options o;
  o.policy = Policy::kAllLatest;
  o.master = 0;
  Aligner a(3, o);
  std::vector<Set> sets;
  a.push(Item{0, 5, 0, nullptr}, sets);  // no partners yet
  EXPECT_EQ(a.dropped(0, DropReason::kNoMatch), 1U);
  a.push(Item{1, 8, 0, nullptr}, sets);
  a.push(Item{1, 9, 1, nullptr}, sets);  // replaces 8 unused
  EXPECT_EQ(a.dropped(1, DropReason::kSuperseded), 1U);
  a.push(Item{2, 7, 0, nullptr}, sets);
  a.push(Item{0, 10, 1, nullptr}, sets);
  a.push(Item{0, 20, 2, nullptr}, sets);  // the same partners serve again
  ASSERT_EQ(sets.size(), 2U);
  EXPECT_EQ(sets[0].members[1].sequence, 1U);
  EXPECT_EQ(sets[0].disparity_ns, 3);
  EXPECT_EQ(sets[1].members[2].sequence, 0U);
  EXPECT_EQ(sets[1].disparity_ns, 13);
}

TEST(SyncOptions, BadParametersAreRefusedWithTheFix) {
  const auto message = [](std::size_t channels, Options o) {
    try {
      Aligner a(channels, o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument);
      return std::string{e.what()};
    }
    return std::string{"accepted"};
  };
  Options o;
  o.threshold = 0ns;
  EXPECT_NE(message(3, o).find("threshold must be > 0"), std::string::npos);
  o.threshold = -5ms;
  EXPECT_NE(message(3, o).find("threshold must be > 0"), std::string::npos);
  o.threshold = 5ms;
  EXPECT_NE(message(1, o).find("at least 2 input channels"), std::string::npos);
  o.queue_size = 0;
  EXPECT_NE(message(2, o).find("queue size"), std::string::npos);
  o = Options{};
  o.policy = Policy::kAllLatest;
  o.master = 2;
  EXPECT_NE(message(2, o).find("master channel index 2"), std::string::npos);
  EXPECT_EQ(parse_policy("approximate"), Policy::kApproximateTime);
  EXPECT_FALSE(parse_policy("fastest"));
}

// The Synchronizer on real channels in one process: subscribers handed
// over, stamps from a schema field, payloads delivered, discards counted in
// the subscriber's entry.
TEST(Synchronizer, AlignsSubscribersItIsGivenByAStampField) {
  shmbus::test::TestDomain d;
  TypedPublisher<shmbus_msgs::Imu> left("/left", d.context());
  TypedPublisher<shmbus_msgs::Imu> right("/right", d.context());
  std::vector<Subscriber> subs;
  subs.emplace_back("/left", std::nullopt, d.context());
  subs.emplace_back("/right", std::nullopt, d.context());
  SynchronizerOptions o;
  o.threshold = 5ns;
  o.stamp_field = "header.stamp_ns";
  Synchronizer s(std::move(subs), o);
  std::vector<std::string> drops;
  s.on_drop(
      [&](const std::string& channel, DropReason r) { drops.push_back(channel + ":" + std::string{to_string(r)}); });
  const auto imu = [](std::uint64_t stamp, double x) {
    shmbus_msgs::Imu m{};
    m.header.stamp_ns = stamp;
    m.angular_velocity = {x, 0, 0};
    return m;
  };
  EXPECT_EQ(left.publish(imu(100, 1.0)), PublishResult::kOk);
  EXPECT_EQ(left.publish(imu(200, 2.0)), PublishResult::kOk);  // its partner comes: 203
  EXPECT_EQ(right.publish(imu(203, 3.0)), PublishResult::kOk);
  const auto set = s.next(std::chrono::seconds(2));
  ASSERT_TRUE(set);
  ASSERT_EQ(set->members.size(), 2U);
  EXPECT_EQ(set->members[0].channel, "/left");
  EXPECT_EQ(set->members[0].stamp_ns, 200);
  EXPECT_EQ(set->members[1].stamp_ns, 203);
  EXPECT_EQ(set->disparity_ns, 3);
  shmbus_msgs::Imu got{};
  ASSERT_EQ(set->members[1].payload().size(), sizeof(got));
  std::memcpy(&got, set->members[1].payload().data(), sizeof(got));
  EXPECT_EQ(got.angular_velocity[0], 3.0);
  EXPECT_EQ(drops, std::vector<std::string>{"/left:too_old"});
  EXPECT_EQ(s.aligner().dropped(0, DropReason::kTooOld), 1U);
  const auto view = shmbus::introspect::ChannelReader(d.domain(), "/left").view();
  ASSERT_EQ(view.subscribers.size(), 1U);
  EXPECT_EQ(view.subscribers[0].discarded, 1U);
  EXPECT_FALSE(s.next(std::chrono::milliseconds(20)));
}

// ROS 2's header: its stamp is a builtin_interfaces/Time (sec, nanosec),
// read where it lies in a message with strings and sequences.
TEST(Synchronizer, AlignsRos2MessagesByTheirHeadersStamp) {
  using Cloud = ros2_test_msgs::msg::PointCloud;
  shmbus::test::TestDomain d;
  TypedPublisher<Cloud> left("/left", d.context());
  TypedPublisher<Cloud> right("/right", d.context());
  SynchronizerOptions o;
  o.threshold = 5ns;
  o.stamp_field = "header.stamp";
  Synchronizer s({"/left", "/right"}, o, d.context());
  const auto cloud = [](std::int32_t sec, std::uint32_t nanosec, const char* frame) {
    Cloud m;
    m.header.stamp = {sec, nanosec};
    m.header.frame_id = frame;
    m.data = {1, 2, 3};
    return m;
  };
  ASSERT_EQ(left.publish(cloud(7, 999'999'990, "left_a")), PublishResult::kOk);
  ASSERT_EQ(left.publish(cloud(8, 1, "left_b")), PublishResult::kOk);  // its partner comes: 8 s + 3 ns
  ASSERT_EQ(right.publish(cloud(8, 3, "right")), PublishResult::kOk);
  const auto set = s.next(std::chrono::seconds(2));
  ASSERT_TRUE(set);
  ASSERT_EQ(set->members.size(), 2U);
  EXPECT_EQ(set->members[0].stamp_ns, 8'000'000'001);
  EXPECT_EQ(set->members[1].stamp_ns, 8'000'000'003);
  EXPECT_EQ(set->disparity_ns, 2);
  EXPECT_EQ(Cloud::View(set->members[0].payload()).header().frame_id(), "left_b");
}

TEST(Synchronizer, RefusesAStampFieldAnInputDoesNotHave) {
  shmbus::test::TestDomain d;
  TypedPublisher<shmbus_msgs::Imu> a("/a", d.context());
  Publisher b("/b", TypeInfo::bytes(), d.context());
  SynchronizerOptions o;
  o.threshold = 5ms;
  o.stamp_field = "header.stamp_ns";
  try {
    Synchronizer s({"/a", "/b"}, o, d.context());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
    EXPECT_NE(std::string{e.what()}.find("input /b has type shmbus/Bytes, which has no schema"), std::string::npos)
        << e.what();
  }
  o.stamp_field = "header.frame_id";
  try {
    Synchronizer s({"/a", "/a"}, o, d.context());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string{e.what()}.find("named twice"), std::string::npos) << e.what();
  }
  std::vector<Subscriber> subs;
  subs.emplace_back("/a", std::nullopt, d.context());
  subs.emplace_back("/b", std::nullopt, d.context());
  o.stamp_field = "header.frame_id";
  try {
    Synchronizer s(std::move(subs), o);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string{e.what()}.find("'header.frame_id' is string<52>, not an int64 or uint64"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(shmbus::introspect::ChannelReader(d.domain(), "/a").view().subscribers.empty());
}

// Before: now + nanoseconds::max() overflowed and next() gave up at once.
TEST(Synchronizer, NextWithoutATimeoutWaitsForASet) {
  shmbus::test::TestDomain d;
  TypedPublisher<shmbus_msgs::Imu> left("/left", d.context());
  TypedPublisher<shmbus_msgs::Imu> right("/right", d.context());
  SynchronizerOptions o;
  o.threshold = std::chrono::seconds(1);
  Synchronizer s(std::vector<std::string>{"/left", "/right"}, o, d.context());
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(left.publish(shmbus_msgs::Imu{}), PublishResult::kOk);
    EXPECT_EQ(right.publish(shmbus_msgs::Imu{}), PublishResult::kOk);
  });
  const auto set = s.next(std::chrono::nanoseconds::max());
  late.join();
  ASSERT_TRUE(set);
  EXPECT_EQ(set->members.size(), 2U);
}
