// shmbus::record::Recorder as a library, in-process: a ring recorded into a
// file and read back, a channel made while recording, a snapshot on a
// trigger, options that select nothing. The rings hold every message the
// tests publish (1024 slots), so nothing may be lost however the threads
// are scheduled.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "record/record_test_support.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/record/recorder.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus_msgs/String.hpp"
#include "support/test_domain.hpp"

namespace shmbus::record {
namespace {

using RecorderTest = RecordFolderTest;

/// The texts recorded on `channel` in `path`, in log-time order, and the
/// file's lost count for it.
struct Read {
  std::vector<std::string> texts;
  std::vector<std::uint32_t> sequences;
  std::string lost;
  std::map<std::string, std::string> snapshot;
};

Read read_file(const std::string& path, const std::string& channel) {
  mcap::Reader reader(path);
  Read r;
  std::uint16_t id = UINT16_MAX;
  for (const auto& c : reader.info().channels) {
    if (c.topic == channel) id = c.id;
  }
  for (const auto& m : reader.info().metadata) {
    if (m.name == kLostMetadata) {
      for (const auto& [k, v] : m.values) {
        if (k == channel) r.lost = v;
      }
    }
    if (m.name == kSnapshotMetadata) r.snapshot.insert(m.values.begin(), m.values.end());
  }
  reader.read_messages([&](const mcap::MessageView& m) {
    if (m.channel_id != id) return true;
    shmbus_msgs::String s{};
    EXPECT_EQ(m.data.size(), sizeof s);
    std::memcpy(&s, m.data.data(), std::min(m.data.size(), sizeof s));
    r.texts.emplace_back(s.data.view());
    r.sequences.push_back(m.sequence);
    return true;
  });
  return r;
}

TEST_F(RecorderTest, RecordsEveryMessageOfARingIntoAFileInProcess) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  TypedPublisher<shmbus_msgs::String> pub("/chat", d.context());
  RecorderOptions o;
  o.output = temp_path("ring.mcap");
  o.patterns = {"/ch*"};
  o.compression = mcap::Compression::kLz4;
  Recorder recorder(config, o);
  EXPECT_EQ(recorder.first_file(), o.output);
  Running running(recorder);
  ASSERT_TRUE(recorder_received(config, "/chat", 0));
  for (int i = 0; i < 200; ++i) ASSERT_EQ(pub.publish(text("m" + std::to_string(i))), PublishResult::kOk);
  ASSERT_TRUE(recorder_received(config, "/chat", 200));
  const RecordSummary summary = running.finish();

  ASSERT_EQ(summary.channels.size(), 1U);
  EXPECT_EQ(summary.channels[0].name, "/chat");
  EXPECT_EQ(summary.messages(), 200U);
  EXPECT_EQ(summary.lost(), 0U);
  EXPECT_EQ(summary.files, std::vector<std::string>{o.output});
  EXPECT_EQ(summary.bytes, std::filesystem::file_size(o.output));
  const Read r = read_file(o.output, "/chat");
  ASSERT_EQ(r.texts.size(), 200U);
  for (std::size_t i = 0; i < r.texts.size(); ++i) {
    EXPECT_EQ(r.texts[i], "m" + std::to_string(i));
    if (i > 0) EXPECT_EQ(r.sequences[i], r.sequences[i - 1] + 1);
  }
  EXPECT_EQ(r.lost, "0");
  EXPECT_EQ(mcap::Reader(o.output).info().compression, "lz4");
}

TEST_F(RecorderTest, AChannelMadeWhileRecordingIsRecordedFromItsFirstMessage) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  RecorderOptions o;
  o.output = temp_path("late.mcap");
  o.all = true;
  // A channel there from the start: once the recorder reads it, its first
  // look at the domain is done, and /late is new to it.
  TypedPublisher<shmbus_msgs::String> early("/early", d.context());
  Recorder recorder(config, o);
  Running running(recorder);
  ASSERT_TRUE(recorder_received(config, "/early", 0));
  // Published at once, before the recorder can have found the channel.
  TypedPublisher<shmbus_msgs::String> pub("/late", d.context());
  for (int i = 0; i < 50; ++i) ASSERT_EQ(pub.publish(text("l" + std::to_string(i))), PublishResult::kOk);
  ASSERT_TRUE(recorder_received(config, "/late", 50));
  const RecordSummary summary = running.finish();
  const Read r = read_file(o.output, "/late");
  ASSERT_EQ(r.texts.size(), 50U);
  EXPECT_EQ(r.texts.front(), "l0");
  EXPECT_EQ(r.texts.back(), "l49");
  EXPECT_EQ(summary.lost(), 0U);
}

TEST_F(RecorderTest, ATriggerWritesTheSnapshotWindowWithItsReason) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  TypedPublisher<shmbus_msgs::String> pub("/snap", d.context());
  RecorderOptions o;
  o.output = temp_path("snap.mcap");
  o.patterns = {"/snap"};
  o.snapshot_s = 60;
  o.direct_trigger_reason = "a test's trigger";
  std::mutex mutex;
  std::vector<SnapshotWritten> written;
  std::atomic<int> snapshots{0};
  o.on_snapshot = [&](const SnapshotWritten& s) {
    const std::lock_guard lock(mutex);
    written.push_back(s);
    ++snapshots;
  };
  Recorder recorder(config, o);
  EXPECT_EQ(recorder.first_file(), numbered_path(o.output, 0));
  EXPECT_FALSE(std::filesystem::exists(recorder.first_file())) << "snapshot mode writes nothing before a trigger";
  Running running(recorder);
  ASSERT_TRUE(recorder_received(config, "/snap", 0));
  for (int i = 0; i < 30; ++i) ASSERT_EQ(pub.publish(text("s" + std::to_string(i))), PublishResult::kOk);
  ASSERT_TRUE(recorder_received(config, "/snap", 30));
  recorder.trigger_snapshot();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (snapshots.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  const RecordSummary summary = running.finish();

  ASSERT_EQ(written.size(), 1U);
  EXPECT_EQ(written[0].path, numbered_path(o.output, 0));
  EXPECT_EQ(written[0].messages, 30U);
  EXPECT_EQ(written[0].reason, "a test's trigger");
  EXPECT_EQ(summary.files, std::vector<std::string>{written[0].path});
  const Read r = read_file(written[0].path, "/snap");
  ASSERT_EQ(r.texts.size(), 30U);
  EXPECT_EQ(r.texts.front(), "s0");
  EXPECT_EQ(r.snapshot.at("reason"), "a test's trigger");
}

TEST_F(RecorderTest, OptionsThatSelectNothingOrWriteNowhereAreRefused) {
  test::TestDomain d(ring_config(), "rec");
  Config config = ring_config();
  config.domain = d.domain();
  RecorderOptions o;
  o.output = temp_path("none.mcap");
  try {
    Recorder r(config, o);
    FAIL() << "no channel selected, yet a recorder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
  }
  o.all = true;
  o.output = "/nonexistent-dir/x.mcap";
  EXPECT_THROW(Recorder(config, o), Error);
}

}  // namespace
}  // namespace shmbus::record
