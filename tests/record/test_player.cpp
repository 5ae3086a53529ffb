// shmbus::record::Player as a library, in-process: a recording made by the
// Recorder played into another domain (every message, in order, byte for
// byte, never faster than its log times allow), paused and stepped by a
// control, and the refusals. The rings hold every message (1024 slots).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "record/record_test_support.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/player.hpp"
#include "shmbus/subscriber.hpp"
#include "support/test_domain.hpp"

namespace shmbus::record {
namespace {

using PlayerTest = RecordFolderTest;

/// Records `n` texts "m0".. on /chat in a domain of its own, `gap` apart.
std::string record_chat(const std::string& path, int n, std::chrono::milliseconds gap) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  TypedPublisher<shmbus_msgs::String> pub("/chat", d.context());
  RecorderOptions o;
  o.output = path;
  o.patterns = {"/chat"};
  Recorder recorder(config, o);
  std::thread thread([&] { recorder.run(); });
  const bool ready = recorder_received(config, "/chat", 0);
  for (int i = 0; ready && i < n; ++i) {
    pub.publish(text("m" + std::to_string(i)));
    std::this_thread::sleep_for(gap);
  }
  const bool all = ready && recorder_received(config, "/chat", static_cast<std::uint64_t>(n));
  recorder.stop();
  thread.join();
  EXPECT_TRUE(all);
  return path;
}

/// The domain the player plays into, with a subscriber on /chat made
/// before it plays.
struct Target {
  Target() : d(ring_config(), "play"), sub("/chat", d.context()) { config.domain = d.domain(); }
  /// Everything /chat has received.
  std::vector<std::string> texts() {
    std::vector<std::string> out;
    while (auto m = sub.take()) out.emplace_back(m->data.view());
    return out;
  }
  test::TestDomain d;
  Config config = ring_config();
  TypedSubscriber<shmbus_msgs::String> sub;
};

std::vector<std::string> expected_texts(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("m" + std::to_string(i));
  return out;
}

TEST_F(PlayerTest, PlaysEveryMessageInOrderNoFasterThanItsLogTimesAtTheRate) {
  const std::string file = record_chat(temp_path("chat.mcap"), 20, 5ms);
  const mcap::Statistics recorded = mcap::Reader(file).info().statistics;
  ASSERT_EQ(recorded.message_count, 20U);
  Target target;
  PlayerOptions o;
  o.files = {file};
  o.rate = 2.0;
  Player player(target.config, o);
  EXPECT_EQ(player.channel_count(), 1U);
  EXPECT_EQ(player.file_count(), 1U);
  const PlaySummary summary = player.run();
  EXPECT_EQ(summary.played, 20U);
  EXPECT_FALSE(summary.stopped);
  EXPECT_EQ(target.texts(), expected_texts(20));
  // The last message is due (last - first) / rate after the first: a lower
  // bound from the recorded stamps that no busy machine can break.
  const double span_s = static_cast<double>(recorded.message_end_time - recorded.message_start_time) / 1e9;
  EXPECT_GE(summary.took_s, span_s / 2.0 * 0.999) << "span " << span_s << " s";
}

/// Steps `steps` messages while paused (one per step: the next only once
/// the last has played), then resumes.
class Stepper final : public PlayControl {
 public:
  explicit Stepper(std::uint64_t steps) : steps_(steps) {}
  PlayCommand next(int /*timeout_ms*/) override {
    if (issued_ < steps_) {
      if (last_.played != issued_) return PlayCommand::kNone;
      ++issued_;
      return PlayCommand::kStep;
    }
    if (last_.paused && last_.played == steps_) {
      played_while_paused_.push_back(last_.played);
      if (played_while_paused_.size() == 5) return PlayCommand::kTogglePause;
    }
    return PlayCommand::kNone;
  }
  void status(const PlayStatus& s) override {
    if (statuses_ == 0) first_paused_ = s.paused;
    ++statuses_;
    last_ = s;
  }
  bool first_paused_ = false;
  std::vector<std::uint64_t> played_while_paused_;

 private:
  std::uint64_t steps_;
  std::uint64_t issued_ = 0;
  std::uint64_t statuses_ = 0;
  PlayStatus last_;
};

TEST_F(PlayerTest, AControlStepsOneMessageAtATimeWhilePausedAndResumes) {
  const std::string file = record_chat(temp_path("chat.mcap"), 12, 1ms);
  Target target;
  PlayerOptions o;
  o.files = {file};
  o.start_paused = true;
  o.rate = 1000;
  Stepper control(4);
  Player player(target.config, o, &control);
  const PlaySummary summary = player.run();
  EXPECT_TRUE(control.first_paused_);
  // After four steps nothing more plays while paused (five looks), then
  // resuming plays the rest.
  EXPECT_EQ(control.played_while_paused_, std::vector<std::uint64_t>(5, 4));
  EXPECT_EQ(summary.played, 12U);
  EXPECT_EQ(target.texts(), expected_texts(12));
}

TEST_F(PlayerTest, RemapsFiltersAndStopsWhenAsked) {
  const std::string file = record_chat(temp_path("chat.mcap"), 10, 1ms);
  Target target;
  TypedSubscriber<shmbus_msgs::String> replayed("/chat_replayed", target.d.context());
  PlayerOptions o;
  o.files = {file};
  o.rate = 1000;
  o.remap = {{"/chat", "/chat_replayed"}};
  Player player(target.config, o);
  EXPECT_EQ(player.run().played, 10U);
  EXPECT_TRUE(target.texts().empty());
  int n = 0;
  while (replayed.take()) ++n;
  EXPECT_EQ(n, 10);

  // A stop predicate ends it before the first message plays.
  o.remap.clear();
  o.loop = true;
  Player looping(target.config, o);
  const PlaySummary stopped = looping.run([] { return true; });
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.played, 0U);
}

TEST_F(PlayerTest, RefusesWhatCannotPlay) {
  const std::string file = record_chat(temp_path("chat.mcap"), 3, 1ms);
  Target target;
  PlayerOptions o;
  o.files = {file};
  o.channels = {"/nothing*"};
  EXPECT_EQ(refusal([&] { Player(target.config, o); }), Errc::kNotFound);
  o.channels.clear();
  o.begin_ns = UINT64_MAX - 1;
  EXPECT_EQ(refusal([&] { Player(target.config, o); }), Errc::kInvalidArgument);
  o.begin_ns.reset();
  o.start_paused = true;
  EXPECT_EQ(refusal([&] { Player(target.config, o); }), Errc::kInvalidArgument);
  o.start_paused = false;
  o.remap = {{"/chat", "/number"}};
  Publisher other("/number", TypeInfo::bytes(), target.d.context());
  EXPECT_EQ(refusal([&] { Player(target.config, o); }), Errc::kTypeMismatch);
  o.files = {temp_path("missing.mcap")};
  EXPECT_THROW(Player(target.config, o), std::exception);
}

}  // namespace
}  // namespace shmbus::record
