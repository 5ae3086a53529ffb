// shmbus::record::StepReplay as a library, in-process: a module (a Node
// named "upper") recorded with its provenance, then stepped live in another
// domain, where a new version of it answers each frame; the replayed
// output holds the live answers under the recorded identities. And what
// cannot replay is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "record/record_test_support.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/node.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/step_replay.hpp"
#include "support/test_domain.hpp"

namespace shmbus::record {
namespace {

using StepReplayTest = RecordFolderTest;

constexpr int kFrames = 6;

/// The module: /in's text on /out, upper-cased, and `suffix` after it.
/// Spins on a thread of its own until destroyed.
class Upper {
 public:
  Upper(Context& context, std::string suffix)
      : node_("upper", context, NodeOptions{.handle_signals = false}),
        out_(node_.publisher<shmbus_msgs::String>("/out")) {
    SubscriptionOptions o;
    o.subscriber.wait_for_channel = true;
    node_.subscribe<shmbus_msgs::String>(
        "/in",
        [this, suffix](const shmbus_msgs::String& m, const MessageInfo&) {
          std::string s(m.data.view());
          for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          out_.publish(text(s + suffix));
        },
        o);
    thread_ = std::thread([this] { node_.spin(); });
  }
  ~Upper() {
    node_.stop();
    thread_.join();
  }
  Upper(const Upper&) = delete;
  Upper& operator=(const Upper&) = delete;

 private:
  Node node_;
  NodePublisher<TypedPublisher<shmbus_msgs::String>> out_;
  std::thread thread_;
};

/// Records kFrames texts through "upper" (recorded version: no suffix).
std::string record_module(const std::string& path) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  TypedPublisher<shmbus_msgs::String> in("/in", d.context());
  Upper upper(d.context(), "");
  RecorderOptions o;
  o.output = path;
  o.patterns = {"/in", "/out"};
  Recorder recorder(config, o);
  std::thread thread([&] { recorder.run(); });
  bool ok = recorder_received(config, "/in", 0) && recorder_received(config, "/out", 0);
  for (int i = 0; ok && i < kFrames; ++i) {
    in.publish(text("m" + std::to_string(i)));
    ok = recorder_received(config, "/out", static_cast<std::uint64_t>(i) + 1);  // one frame at a time
  }
  recorder.stop();
  thread.join();
  EXPECT_TRUE(ok);
  return path;
}

/// The texts on `channel` in `path` with their MCAP sequences.
std::vector<std::pair<std::string, std::uint32_t>> texts_of(const std::string& path, const std::string& channel) {
  mcap::Reader reader(path);
  std::uint16_t id = UINT16_MAX;
  for (const auto& c : reader.info().channels) {
    if (c.topic == channel) id = c.id;
  }
  std::vector<std::pair<std::string, std::uint32_t>> out;
  reader.read_messages([&](const mcap::MessageView& m) {
    if (m.channel_id != id) return true;
    shmbus_msgs::String s{};
    std::memcpy(&s, m.data.data(), std::min(m.data.size(), sizeof s));
    out.emplace_back(std::string(s.data.view()), m.sequence);
    return true;
  });
  return out;
}

TEST_F(StepReplayTest, ALiveModuleAnswersEveryFrameAndItsAnswersReplaceTheRecordedOnes) {
  const std::string recording = record_module(temp_path("run.mcap"));
  const auto recorded = texts_of(recording, "/out");
  ASSERT_EQ(recorded.size(), static_cast<std::size_t>(kFrames));

  test::TestDomain live(ring_config(), "step");
  Config config = ring_config();
  config.domain = live.domain();
  const Upper upper(live.context(), "!");  // the new version
  StepReplayOptions o;
  o.recording = recording;
  o.modules = {"upper"};
  o.output = temp_path("replayed.mcap");
  o.timeout_s = 10;
  std::vector<std::string> notes;
  o.on_note = [&](const std::string& line) { notes.push_back(line); };
  StepReplay replay(config, o);
  EXPECT_EQ(replay.frame_count(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(replay.live_modules(), std::vector<std::string>{"upper"});
  EXPECT_TRUE(replay.unframed().empty());
  const StepReplaySummary s = replay.run();
  EXPECT_EQ(s.frames, static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(s.failed, 0U);
  EXPECT_EQ(s.unmatched, 0U);
  EXPECT_FALSE(s.stopped);
  EXPECT_TRUE(notes.empty());

  // The fed inputs as recorded; each live answer under its recorded identity.
  EXPECT_EQ(texts_of(o.output, "/in"), texts_of(recording, "/in"));
  const auto replayed = texts_of(o.output, "/out");
  ASSERT_EQ(replayed.size(), recorded.size());
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    EXPECT_EQ(replayed[i].first, recorded[i].first + "!");
    EXPECT_EQ(replayed[i].second, recorded[i].second);
  }
}

TEST_F(StepReplayTest, RefusesAModuleNotRecordedOrNotRunningAndOptionsThatCannotReplay) {
  const std::string recording = record_module(temp_path("run.mcap"));
  test::TestDomain live(ring_config(), "step");
  Config config = ring_config();
  config.domain = live.domain();
  StepReplayOptions o;
  o.recording = recording;
  o.output = temp_path("replayed.mcap");
  o.timeout_s = 0.2;
  EXPECT_EQ(refusal([&] { StepReplay(config, o); }), Errc::kInvalidArgument);  // no module
  o.modules = {"nobody"};
  EXPECT_EQ(refusal([&] { StepReplay(config, o); }), Errc::kNotFound);
  o.modules = {"upper"};
  StepReplay replay(config, o);
  // "upper" is not running in this domain: named after the timeout.
  try {
    replay.await_modules();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kNotFound);
    EXPECT_NE(std::string(e.what()).find("module 'upper' does not read /in"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shmbus::record
