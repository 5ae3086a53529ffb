// shmtool record, play and bag end to end: the real binary, real
// publisher processes, real signals (SIGINT, SIGKILL, SIGUSR1), a real
// shmbusd raising an alert, a pseudo-terminal for play's keys, and the
// reference readers from npm (@mcap/core, ajv) reading what was written.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "sensor_msgs/PointCloud2.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/node.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/schema.hpp"
#include "std_msgs/String.hpp"
#include "support/node_script.hpp"
#include "tools/shmtool_harness.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using namespace shmbus::test::tool;
namespace fs = std::filesystem;

namespace {

const std::string kDaemon = SHMBUSD_PATH;

/// Settings every shmtool of these tests loads (SHMBUS_CONFIG): the tests
/// count every message, and under ASan on two loaded vCPUs a publisher
/// preempted for more than the default 2 ms between claiming a slot and
/// committing it would be skipped as crashed (counted lost, correctly) and
/// a slow recorder could be lapped on a 64-slot ring. What is tested here
/// is the recorder and the player, so the stall bound and the rings are
/// wider; the crash bounds have their own tests.
constexpr const char* kTestDefaults = "[defaults]\ncapacity = 1024\nstall_timeout = \"200ms\"\n";

class RecordTestEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::ofstream(path_) << kTestDefaults;
    ::setenv("SHMBUS_CONFIG", path_.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): before any thread
  }
  void TearDown() override { fs::remove(path_); }

 private:
  std::string path_ =
      (fs::temp_directory_path() / ("shmtool_record_tests_" + std::to_string(::getpid()) + ".toml")).string();
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new RecordTestEnvironment);

/// A file path unique to this test process.
std::string temp_path(const std::string& stem) {
  return (fs::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ".mcap")).string();
}

/// Runs a script of tests/js with node; its stdout parsed as JSON.
json run_node(const std::string& script, const std::string& file) {
  return shmbus::test::run_node_script(script, file);
}

/// example_interfaces/srv/AddTwoInts_Event as rosbag2 records a service's
/// introspection: bounded sequences of its request and response.
std::string add_two_ints_event_text() {
  const std::string rule(80, '=');
  return "service_msgs/ServiceEventInfo info\nAddTwoInts_Request[<=1] request\nAddTwoInts_Response[<=1] response\n" +
         rule +
         "\nMSG: service_msgs/ServiceEventInfo\nuint8 REQUEST_SENT = 0\nuint8 REQUEST_RECEIVED = 1\n"
         "uint8 RESPONSE_SENT = 2\nuint8 RESPONSE_RECEIVED = 3\nuint8 event_type\nbuiltin_interfaces/Time stamp\n"
         "char[16] client_gid\nint64 sequence_number\n" +
         rule + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n" + rule +
         "\nMSG: example_interfaces/srv/AddTwoInts_Request\nint64 a\nint64 b\n" + rule +
         "\nMSG: example_interfaces/srv/AddTwoInts_Response\nint64 sum\n";
}

/// `bag info --json` of a file; fails the test when it is refused.
json bag_info(const std::string& file) {
  const ToolRun r = shmtool({"bag", "info", file, "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out) : json::object();
}

/// The message count of `channel` in a `bag info --json` result.
std::uint64_t count_of(const json& info, const std::string& channel) {
  for (const json& c : info["channels"]) {
    if (c["name"] == channel) return c["messages"].get<std::uint64_t>();
  }
  return 0;
}

/// The files of a numbered series (FILE_0.mcap, FILE_1.mcap, ...) in order.
std::vector<std::string> series(const std::string& file) {
  std::vector<std::string> out;
  const std::string stem = file.substr(0, file.size() - 5);
  for (int i = 0; fs::exists(stem + "_" + std::to_string(i) + ".mcap"); ++i) {
    out.push_back(stem + "_" + std::to_string(i) + ".mcap");
  }
  return out;
}

void remove_all(const std::vector<std::string>& files) {
  for (const auto& f : files) fs::remove(f);
}

/// The number in `out` after `prefix` ("played 100 messages in " -> s).
double number_after(const std::string& out, const std::string& prefix) {
  const auto at = out.find(prefix);
  return at == std::string::npos ? -1.0 : std::stod(out.substr(at + prefix.size()));
}

/// Records `pattern` in `domain` while `publish` runs; returns when the
/// recorder ended on SIGINT with exit 0.
template <typename F>
void record_while(const std::string& domain, std::vector<std::string> record_args, F publish) {
  record_args.insert(record_args.begin(), "record");
  auto recorder = start_tool(record_args, domain);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  publish();
  std::this_thread::sleep_for(300ms);  // the last messages reach the file
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(20s))) << recorder->output();
}

/// Waits until `channel` exists and has a subscriber (the recorder found it).
void wait_for_subscriber(const std::string& domain, const std::string& channel) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (!shmbus::introspect::ChannelReader(domain, channel).view().subscribers.empty()) return;
    } catch (const shmbus::Error&) {
      // not created yet
    }
    std::this_thread::sleep_for(5ms);
  }
  FAIL() << channel << " got no subscriber";
}

/// Publishes `count` shmbus_msgs/String on `channel` at `rate` Hz, to its end.
void publish_strings(const std::string& domain, const std::string& channel, int rate, int count) {
  const ToolRun r = shmtool(tool_args({"pub", channel, "--type", "shmbus_msgs/String", "--rate", std::to_string(rate),
                                       "--count", std::to_string(count), R"({"data": "x"})"},
                                      domain));
  ASSERT_EQ(r.code, 0) << r.err;
}

}  // namespace

// The recorder end to end: three channels of different types and rates,
// created after the recording started, each with a known count; Ctrl-C
// ends the recording with a complete file whose `bag info` counts and whose
// reading by @mcap/core (npm) equal what was published, with nothing lost.
TEST(ShmtoolRecord, RecordThreeChannelsAndBagInfoCountsEqualWhatWasPublished) {
  DomainGuard d;
  const std::string file = "/tmp/shmtool_record_" + std::to_string(::getpid()) + ".mcap";
  auto recorder = start_tool({"record", "-o", file, "/r/*", "--compression", "lz4", "--chunk-size", "4096"}, d.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  std::vector<std::unique_ptr<shmbus::test::ChildProcess>> pubs;
  pubs.push_back(start_tool(
      {"pub", "/r/a", "--type", "shmbus_msgs/String", "--rate", "200", "--count", "100", R"({"data": "abc"})"},
      d.name));
  pubs.push_back(
      start_tool({"pub", "/r/b", "--type", "shmbus_msgs/Imu", "--rate", "100", "--count", "50", "{}"}, d.name));
  pubs.push_back(start_tool({"pub", "/r/c", "--raw-size", "64", "--rate", "50", "--count", "25", "00ff"}, d.name));
  for (auto& p : pubs) ASSERT_TRUE(exited_zero(p->wait(20s))) << p->output();
  // The recorder shows as a subscriber of each channel, under its node name.
  const ToolRun info = shmtool(tool_args({"info", "/r/b", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  ASSERT_EQ(json::parse(info.out)["subscribers"].size(), 1U);
  EXPECT_EQ(json::parse(info.out)["subscribers"][0]["node"], "shmtool-record");
  std::this_thread::sleep_for(300ms);  // the last messages reach the file's queue
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(20s))) << recorder->output();
  EXPECT_NE(recorder->output().find("recorded 175 messages on 3 channels"), std::string::npos) << recorder->output();

  const ToolRun bag = shmtool({"bag", "info", file, "--json"});
  ASSERT_EQ(bag.code, 0) << bag.err;
  const json b = json::parse(bag.out);
  EXPECT_EQ(b["profile"], "shmbus");
  EXPECT_EQ(b["compression"], "lz4");
  EXPECT_EQ(b["messages"], 175);
  EXPECT_GT(b["end_ns"].get<std::uint64_t>(), b["start_ns"].get<std::uint64_t>());
  std::map<std::string, json> channels;
  for (const json& c : b["channels"]) channels[c["name"]] = c;
  ASSERT_EQ(channels.size(), 3U) << bag.out;
  EXPECT_EQ(channels["/r/a"]["messages"], 100);
  EXPECT_EQ(channels["/r/a"]["type"], "shmbus_msgs/String");
  EXPECT_EQ(channels["/r/b"]["messages"], 50);
  EXPECT_EQ(channels["/r/b"]["type"], "shmbus_msgs/Imu");
  EXPECT_EQ(channels["/r/c"]["messages"], 25);
  EXPECT_EQ(channels["/r/c"]["type"], "shmbus/Bytes");
  for (const auto& [name, c] : channels) EXPECT_EQ(c["lost"], 0) << name;
  const ToolRun text = shmtool({"bag", "info", file});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("shmbus_msgs/Imu"), std::string::npos) << text.out;

  // The reference reader sees the same.
  const std::string reader = std::string(SHMBUS_SOURCE_DIR) + "/tests/js/mcap_read.mjs";
  FILE* p = ::popen(("node " + reader + " " + file + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  const json j = json::parse(out);
  EXPECT_EQ(j["indexed"]["counts"]["/r/a"], 100);
  EXPECT_EQ(j["indexed"]["counts"]["/r/b"], 50);
  EXPECT_EQ(j["stream"]["counts"]["/r/c"], 25);
  // What `mcap info` shows, as bag info shows it.
  EXPECT_EQ(b["library"], j["library"]);
  EXPECT_EQ(b["bytes"], j["bytes"]);
  EXPECT_EQ(b["chunks"], j["chunks"]);
  EXPECT_EQ(b["chunk_compression"], j["chunk_compression"]);
  EXPECT_EQ(b["attachments"], j["attachments"]);
  EXPECT_EQ(b["metadata"], j["metadata_records"]);
  for (const json& c : j["channels"]) {
    EXPECT_EQ(channels[c["topic"]]["schema_encoding"], c["schema_encoding"]) << c.dump();
    EXPECT_EQ(channels[c["topic"]]["message_encoding"], c["message_encoding"]) << c.dump();
  }
  EXPECT_NE(text.out.find("lz4: "), std::string::npos) << text.out;
  EXPECT_EQ(j["indexed"]["last_sequence"]["/r/a"], 99) << "the channel sequence, from the first message on";
  std::filesystem::remove(file);
}

// A channel made while recording is read from its first message: a burst of
// 300 into a 64-slot ring before the recorder finds the channel leaves the
// recorder what the ring still holds, and the rest counted lost (before:
// it started at the oldest message in the ring and counted nothing).
TEST(ShmtoolRecord, AChannelMadeWhileRecordingIsRecordedOrCountedLostFromItsFirstMessage) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_burst");
  record_while(d.name, {"-o", file, "/burst"}, [&] { publish_strings(d.name, "/burst", 1'000'000, 300); });
  const json b = bag_info(file);
  ASSERT_EQ(b["channels"].size(), 1U) << b.dump();
  const json& c = b["channels"][0];
  EXPECT_EQ(c["messages"].get<std::uint64_t>() + c["lost"].get<std::uint64_t>(), 300U) << b.dump();
  remove_all({file});
}

TEST(ShmtoolRecord, BagInfoRefusesWhatIsNotAnMcapFileWithOneLine) {
  const std::string file = "/tmp/shmtool_not_mcap_" + std::to_string(::getpid()) + ".mcap";
  std::ofstream(file) << std::string(200, 'x');
  const ToolRun r = shmtool({"bag", "info", file});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(file + ": not a valid MCAP file at byte 0: no MCAP magic at the start"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove(file);
  const ToolRun missing = shmtool({"bag", "info", file});
  EXPECT_EQ(missing.code, 3) << missing.err;
}

// play: a recording published again in another domain, at its recorded
// spacing, remapped where asked, faster with --rate, and refused onto a
// channel of another type.
TEST(ShmtoolRecord, PlayPublishesARecordingAgainAtItsSpacing) {
  DomainGuard rec;
  const std::string file = "/tmp/shmtool_play_" + std::to_string(::getpid()) + ".mcap";
  auto recorder = start_tool({"record", "-o", file, "/p/*"}, rec.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  auto a = start_tool(
      {"pub", "/p/a", "--type", "shmbus_msgs/String", "--rate", "200", "--count", "100", R"({"data": "z"})"}, rec.name);
  auto b = start_tool({"pub", "/p/b", "--raw-size", "16", "--rate", "50", "--count", "25", "01"}, rec.name);
  ASSERT_TRUE(exited_zero(a->wait(20s))) << a->output();
  ASSERT_TRUE(exited_zero(b->wait(20s))) << b->output();
  std::this_thread::sleep_for(300ms);
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(20s))) << recorder->output();
  const json info = json::parse(shmtool({"bag", "info", file, "--json"}).out);
  const double span_s = info["duration_s"].get<double>();
  ASSERT_GT(span_s, 0.4);

  DomainGuard replay;
  auto echo_a = start_tool({"echo", "/p/a", "-n", "100", "--json"}, replay.name);
  auto echo_b = start_tool({"echo", "/x/b", "-n", "25", "--json"}, replay.name);
  const ToolRun played =
      shmtool(tool_args({"play", file, "--remap", "/p/b=/x/b", "--wait-for-subscribers"}, replay.name));
  ASSERT_EQ(played.code, 0) << played.err;
  EXPECT_NE(played.out.find("played 125 messages in "), std::string::npos) << played.out;
  const double took_s = std::stod(played.out.substr(played.out.find("played 125 messages in ") + 23));
  EXPECT_GT(took_s, 0.9 * span_s) << "the recorded spacing is kept, not burst";
  ASSERT_TRUE(exited_zero(echo_a->wait(20s))) << echo_a->output();
  ASSERT_TRUE(exited_zero(echo_b->wait(20s))) << echo_b->output();
  const auto lines_a = json_lines(echo_a->output());
  ASSERT_EQ(lines_a.size(), 100U);
  EXPECT_EQ(lines_a.front()["data"]["data"], "z");
  EXPECT_EQ(json_lines(echo_b->output()).size(), 25U);

  const ToolRun fast = shmtool(tool_args({"play", file, "--rate", "2", "--channels", "/p/a"}, replay.name));
  ASSERT_EQ(fast.code, 0) << fast.err;
  ASSERT_NE(fast.out.find("played 100 messages in "), std::string::npos) << fast.out;
  const double fast_s = std::stod(fast.out.substr(fast.out.find("played 100 messages in ") + 23));
  // /p/a (0.5 s) spans about the whole recording, so it plays in about half.
  EXPECT_LT(fast_s, 0.75 * span_s) << "--rate 2 plays twice as fast";
  EXPECT_GT(fast_s, 0.4 * span_s) << "--rate 2 plays twice as fast, not faster";

  DomainGuard other;
  ASSERT_EQ(shmtool(tool_args({"pub", "/p/a", "--type", "shmbus_msgs/Imu", "--once", "{}"}, other.name)).code, 0);
  const ToolRun refused = shmtool(tool_args({"play", file}, other.name));
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("shmbus_msgs/Imu"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("shmbus_msgs/String"), std::string::npos) << refused.err;
  std::filesystem::remove(file);
}

// A disk that fills up ends the recording with one line naming the file
// and the cause, exit 1 - not a crash of the writer thread.
TEST(ShmtoolRecord, RecordOntoAFullDiskFailsWithOneLine) {
  DomainGuard d;
  auto pub = start_tool({"pub", "/full", "--raw-size", "512", "--rate", "500", "00"}, d.name);
  wait_for_stamps(d.name, "/full", 1);
  const ToolRun r =
      shmtool(tool_args({"record", "-o", "/dev/full", "/full", "--chunk-size", "1024", "--duration", "10"}, d.name));
  pub->signal(SIGINT);
  EXPECT_TRUE(exited_zero(pub->wait(10s)));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("mcap file /dev/full: cannot write: No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// --split-size starts a new file at a chunk boundary once a file passes the
// size: several files, each complete, whose counts add up to what was
// published and which play as one recording.
TEST(ShmtoolRecord, SplitSizeWritesSeveralFilesThatPlayAsOne) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_split");
  record_while(d.name, {"-o", file, "/sp/*", "--split-size", "4096", "--chunk-size", "1024", "--compression", "none"},
               [&] { publish_strings(d.name, "/sp/a", 300, 300); });
  const std::vector<std::string> files = series(file);
  ASSERT_GE(files.size(), 3U);
  EXPECT_FALSE(fs::exists(file)) << "a split recording is only the numbered files";
  std::uint64_t total = 0;
  std::uint64_t bytes = 0;
  std::uint64_t chunks = 0;
  for (const auto& f : files) {
    const ToolRun one = shmtool({"bag", "info", f, "--json", "--one-file"});
    ASSERT_EQ(one.code, 0) << one.err;
    const json info = json::parse(one.out);
    bytes += info["bytes"].get<std::uint64_t>();
    chunks += info["chunks"].get<std::uint64_t>();
    // The split comes at the chunk boundary past the size: at most a chunk
    // (1 KiB of records, a little more framed) and the summary beyond it.
    EXPECT_LT(info["bytes"].get<std::uint64_t>(), 4096U + 4096U) << f;
    total += count_of(info, "/sp/a");
  }
  EXPECT_EQ(total, 300U);
  // The first file names the series: its figures merged.
  const json set = bag_info(files.front());
  EXPECT_EQ(set["files"], json(files));
  EXPECT_EQ(set["messages"], 300);
  EXPECT_EQ(count_of(set, "/sp/a"), 300U);
  EXPECT_EQ(set["bytes"], bytes);
  EXPECT_EQ(set["chunks"], chunks);
  EXPECT_EQ(set["chunk_compression"]["none"]["chunks"], chunks);
  EXPECT_EQ(bag_info(files[1])["files"].size(), 1U) << "only the first file names the series";

  DomainGuard replay;
  auto echo = start_tool({"echo", "/sp/a", "-n", "300", "--json"}, replay.name);
  std::vector<std::string> args{"play"};
  args.insert(args.end(), files.rbegin(), files.rend());  // in any order: they play by start time
  args.emplace_back("--wait-for-subscribers");
  const ToolRun played = shmtool(tool_args(args, replay.name));
  ASSERT_EQ(played.code, 0) << played.err;
  EXPECT_NE(played.out.find("played 300 messages"), std::string::npos) << played.out;
  ASSERT_TRUE(exited_zero(echo->wait(20s))) << echo->output();
  const auto lines = json_lines(echo->output());
  ASSERT_EQ(lines.size(), 300U);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    ASSERT_EQ(lines[i]["sequence"].get<std::uint64_t>(), lines[i - 1]["sequence"].get<std::uint64_t>() + 1)
        << "in order";
  }
  remove_all(files);
}

// Messages that fill a chunk by themselves (no compression) are written into
// the file from the ring, where the recorder's reader thread left them: every
// byte arrives, each in a chunk of its own.
TEST(ShmtoolRecord, LargeMessagesAreWrittenFromTheRingByteForByte) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_large");
  shmbus::Config c;
  c.domain = d.name;
  c.node = "test_large";
  c.defaults.capacity = 16;
  c.defaults.max_message_size = 64 * 1024;
  shmbus::Context ctx(c);
  shmbus::Publisher pub("/large", shmbus::TypeInfo::bytes(), ctx);
  constexpr std::uint32_t kCount = 200;
  std::uint32_t expected_crc = 0;
  record_while(d.name, {"-o", file, "/large", "--compression", "none", "--chunk-size", "4096"}, [&] {
    wait_for_subscriber(d.name, "/large");
    std::vector<std::byte> payload(c.defaults.max_message_size);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      for (std::size_t k = 0; k < payload.size(); ++k) payload[k] = static_cast<std::byte>((i * 131 + k * 7) & 0xff);
      pub.publish(payload);
      expected_crc = shmbus::mcap::crc32(payload, expected_crc);
      std::this_thread::sleep_for(2ms);  // 32 MB/s: the writer keeps up, nothing is lost
    }
  });
  shmbus::mcap::Reader r(file);
  EXPECT_GE(r.info().statistics.chunk_count, kCount) << "one chunk per message";
  std::uint32_t n = 0;
  std::uint32_t crc = 0;
  r.read_messages([&](const shmbus::mcap::MessageView& m) {
    EXPECT_EQ(m.sequence, n) << "in order, none missing";
    crc = shmbus::mcap::crc32(m.data, crc);
    ++n;
    return true;
  });
  EXPECT_EQ(n, kCount);
  EXPECT_EQ(crc, expected_crc) << "the bytes as published";
  fs::remove(file);
}

// --split-duration: a new file every DURATION of recorded time.
TEST(ShmtoolRecord, SplitDurationStartsAFileEveryPeriod) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_split_time");
  record_while(d.name, {"-o", file, "/sd/*", "--split-duration", "250ms"},
               [&] { publish_strings(d.name, "/sd/a", 200, 200); });  // 1 s
  const std::vector<std::string> files = series(file);
  ASSERT_GE(files.size(), 4U);
  ASSERT_LE(files.size(), 5U);
  std::uint64_t total = 0;
  std::uint64_t bytes = 0;
  std::uint64_t chunks = 0;
  for (const auto& f : files) {
    const ToolRun one = shmtool({"bag", "info", f, "--json", "--one-file"});
    ASSERT_EQ(one.code, 0) << one.err;
    const json info = json::parse(one.out);
    bytes += info["bytes"].get<std::uint64_t>();
    chunks += info["chunks"].get<std::uint64_t>();
    EXPECT_LT(info["duration_s"].get<double>(), 0.25) << f;
    total += count_of(info, "/sd/a");
  }
  EXPECT_EQ(total, 200U);
  remove_all(files);
}

// A recorder killed with SIGKILL leaves an unfinished file: bag info
// refuses it naming `bag recover`, which rebuilds an indexed file with
// every chunk that reached the disk (the recorder hands one over every
// second), read whole by @mcap/core. A file cut short mid-chunk recovers
// the chunks before the cut and says where the rest became unreadable.
TEST(ShmtoolRecord, BagRecoverRebuildsAKilledRecording) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_killed");
  const std::string fixed = temp_path("shmtool_recovered");
  auto recorder = start_tool({"record", "-o", file, "/k/*", "--chunk-size", "1024"}, d.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  publish_strings(d.name, "/k/a", 400, 200);
  std::this_thread::sleep_for(2500ms);  // past the writer's once-a-second hand-over
  recorder->signal(SIGKILL);
  recorder->wait(10s);

  const ToolRun refused = shmtool({"bag", "info", file});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("shmtool bag recover"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err_lines(), 1U) << refused.err;

  const ToolRun r = shmtool({"bag", "recover", file, "-o", fixed});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recovered 200 messages"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "") << "no progress line in a pipe";
  {
    // On a terminal: bytes read of the file's size, erased before the summary.
    ToolOnPty t({"bag", "recover", file, "-o", fixed}, d.name);
    EXPECT_TRUE(exited_zero(t.wait(20s))) << t.screen;
    EXPECT_NE(t.screen.find("recover: "), std::string::npos) << t.screen;
    EXPECT_NE(t.screen.find(" read ("), std::string::npos) << t.screen;
    EXPECT_NE(t.screen.find("\r\033[Krecovered 200 messages"), std::string::npos) << t.screen;
  }
  EXPECT_EQ(count_of(bag_info(fixed), "/k/a"), 200U);
  const json j = run_node("mcap_read.mjs", fixed);
  EXPECT_EQ(j["indexed"]["counts"]["/k/a"], 200);
  EXPECT_EQ(j["stream"]["counts"]["/k/a"], 200);
  EXPECT_EQ(j["indexed"]["last_sequence"]["/k/a"], 199);

  // Cut in the middle: the chunks before the cut come back, in order.
  const std::string cut = temp_path("shmtool_cut");
  const auto size = fs::file_size(file);
  fs::copy_file(file, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, size / 2);
  const ToolRun partial = shmtool({"bag", "recover", cut, "-o", fixed});
  ASSERT_EQ(partial.code, 0) << partial.err;
  EXPECT_NE(partial.out.find("is unreadable: the record at byte"), std::string::npos) << partial.out;
  const std::uint64_t kept = count_of(bag_info(fixed), "/k/a");
  EXPECT_GT(kept, 50U);
  EXPECT_LT(kept, 200U);
  EXPECT_EQ(run_node("mcap_read.mjs", fixed)["indexed"]["last_sequence"]["/k/a"], kept - 1);

  const ToolRun same = shmtool({"bag", "recover", file, "-o", file});
  EXPECT_EQ(same.code, 2) << same.err;
  remove_all({file, fixed, cut});
}

// A damaged file is refused with exit 2 and one line naming the offset and
// the fault: a flipped byte in the summary (its CRC) when opened, in a
// chunk (its CRC) when its messages are read.
TEST(ShmtoolRecord, CorruptFilesAreRefusedWithExitTwo) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_corrupt");
  record_while(d.name, {"-o", file, "/c/*", "--compression", "none"},
               [&] { publish_strings(d.name, "/c/a", 500, 50); });
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto flip = [&](std::size_t at, const std::string& path) {
    std::string copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ 0x55);
    std::ofstream(path, std::ios::binary) << copy;
  };
  const std::string bad = temp_path("shmtool_corrupt_copy");
  flip(bytes.size() - 8 - 29 - 20, bad);  // in the summary, before the footer
  const ToolRun summary = shmtool({"bag", "info", bad});
  EXPECT_EQ(summary.code, 2) << summary.err;
  EXPECT_NE(summary.err.find("CRC mismatch"), std::string::npos) << summary.err;
  EXPECT_EQ(summary.err_lines(), 1U);

  // The first chunk: past the header and the metadata records before it.
  std::size_t at = 8;
  while (at + 9 < bytes.size() && bytes[at] != 0x06) {
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at + 1, sizeof length);
    at += 9 + length;
  }
  ASSERT_LT(at + 9 + 40 + 16, bytes.size());
  flip(at + 9 + 40 + 16, bad);  // in its records, past the chunk's own fields
  DomainGuard replay;
  const ToolRun chunk = shmtool(tool_args({"play", bad}, replay.name));
  EXPECT_EQ(chunk.code, 2) << chunk.err;
  EXPECT_NE(chunk.err.find("chunk CRC mismatch"), std::string::npos) << chunk.err;
  EXPECT_NE(chunk.err.find("at byte "), std::string::npos) << chunk.err;
  EXPECT_EQ(chunk.err_lines(), 1U);
  remove_all({file, bad});
}

// bag export --encoding json: every message decodes to JSON that ajv (npm)
// validates against its channel's jsonschema, read by @mcap/core, and the
// schemas refuse what does not fit.
TEST(ShmtoolRecord, ExportJsonValidatesAgainstItsJsonSchemas) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_export_in");
  const std::string out = temp_path("shmtool_export_out");
  record_while(d.name, {"-o", file, "/e/*"}, [&] {
    std::vector<std::unique_ptr<shmbus::test::ChildProcess>> pubs;
    pubs.push_back(start_tool({"pub", "/e/a", "--type", "shmbus_msgs/String", "--rate", "200", "--count", "40",
                               R"({"data": "\u00e9t\u00e9"})"},
                              d.name));
    pubs.push_back(start_tool({"pub", "/e/b", "--type", "shmbus_msgs/Imu", "--rate", "100", "--count", "20",
                               R"({"linear_acceleration": [0, 0, 9.81]})"},
                              d.name));
    pubs.push_back(start_tool({"pub", "/e/c", "--raw-size", "8", "--rate", "100", "--count", "10", "0102"}, d.name));
    for (auto& p : pubs) ASSERT_TRUE(exited_zero(p->wait(20s))) << p->output();
  });
  const ToolRun r = shmtool({"bag", "export", file, "-o", out, "--encoding", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("exported 70 messages on 3 channels"), std::string::npos) << r.out;
  const json j = run_node("mcap_json_validate.mjs", out);
  EXPECT_EQ(j["counts"]["/e/a"], 40);
  EXPECT_EQ(j["counts"]["/e/b"], 20);
  EXPECT_EQ(j["counts"]["/e/c"], 10);
  EXPECT_TRUE(j["invalid"].empty()) << j.dump();
  for (const char* c : {"/e/a", "/e/b", "/e/c"}) {
    EXPECT_EQ(j["encodings"][c], "json/jsonschema") << c;
    EXPECT_EQ(j["rejected_tampered"][c], true) << c;
  }
  EXPECT_EQ(j["first"]["/e/a"]["data"], "\u00e9t\u00e9");
  EXPECT_DOUBLE_EQ(j["first"]["/e/b"]["linear_acceleration"][2].get<double>(), 9.81);
  EXPECT_EQ(j["first"]["/e/c"]["data"], "AQIAAAAAAAA=");  // base64 of 01 02 00 .. 00
  const ToolRun wrong = shmtool({"bag", "export", file, "-o", out, "--encoding", "cbor"});
  EXPECT_EQ(wrong.code, 2) << wrong.err;
  remove_all({file, out});
}

// bag export --encoding cdr: the ros2 profile with ros2msg schemas and CDR
// messages, which Foxglove's own reader (@foxglove/rosmsg2-serialization)
// decodes field for field as shmbus's schema decodes the recorded bytes,
// 64-bit integers exact.
TEST(ShmtoolRecord, ExportCdrDecodesWithFoxglovesReaderExactly) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_export_cdr_in");
  const std::string out = temp_path("shmtool_export_cdr_out");
  record_while(d.name, {"-o", file, "/x/*"}, [&] {
    std::vector<std::unique_ptr<shmbus::test::ChildProcess>> pubs;
    pubs.push_back(start_tool({"pub", "/x/header", "--type", "shmbus_msgs/Header", "--rate", "200", "--count", "30",
                               R"({"stamp_ns": 18446744073709551615, "seq": 7, "frame_id": "map"})"},
                              d.name));
    pubs.push_back(start_tool({"pub", "/x/imu", "--type", "shmbus_msgs/Imu", "--rate", "100", "--count", "20",
                               R"({"header": {"stamp_ns": 9007199254740993}, "linear_acceleration": [0, 0, 9.81]})"},
                              d.name));
    pubs.push_back(start_tool({"pub", "/x/raw", "--raw-size", "8", "--rate", "100", "--count", "10", "0102"}, d.name));
    for (auto& p : pubs) ASSERT_TRUE(exited_zero(p->wait(20s))) << p->output();
  });
  const ToolRun r = shmtool({"bag", "export", file, "-o", out, "--encoding", "cdr"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("exported 60 messages on 3 channels"), std::string::npos) << r.out;
  const json j = run_node("mcap_cdr_read.mjs", out);
  EXPECT_EQ(j["profile"], "ros2");
  EXPECT_EQ(j["channels"]["/x/imu"],
            json({{"messageEncoding", "cdr"}, {"schemaEncoding", "ros2msg"}, {"schemaName", "shmbus_msgs/msg/Imu"}}));
  EXPECT_EQ(j["channels"]["/x/raw"]["schemaName"], "shmbus/msg/Bytes");

  // What the recording holds, decoded by shmbus with 64-bit integers as
  // strings, topic by topic in log-time order.
  shmbus::mcap::Reader recorded(file);
  std::map<std::uint16_t, std::optional<shmbus::schema::Schema>> schemas;
  for (const auto& ch : recorded.info().channels) {
    const auto* sc = recorded.info().schema(ch.schema_id);
    if (sc != nullptr && !sc->data.empty()) schemas[ch.id] = shmbus::schema::Schema::from_canonical(sc->data);
  }
  std::map<std::string, json> want;
  recorded.read_messages([&](const shmbus::mcap::MessageView& m) {
    const std::string topic = recorded.info().channel(m.channel_id)->topic;
    const auto& schema = schemas[m.channel_id];
    json value;
    if (schema) {
      value = schema->decode(m.data, true);
    } else {
      value = json{{"data", json::array()}};
      for (const std::byte b : m.data) value["data"].push_back(static_cast<unsigned>(b));
    }
    want[topic].push_back(std::move(value));
    return true;
  });
  for (const char* topic : {"/x/header", "/x/imu", "/x/raw"}) {
    ASSERT_FALSE(want[topic].empty()) << topic;
    EXPECT_EQ(j["messages"][topic], want[topic]) << topic;
  }
  EXPECT_EQ(j["messages"]["/x/header"][0]["stamp_ns"], "18446744073709551615");
  EXPECT_EQ(j["messages"]["/x/imu"][0]["header"]["stamp_ns"], "9007199254740993");

  // bag import takes the ROS 2 file back: every message byte for byte as
  // recorded (bag cat of both the same), and play replays it.
  const std::string back = temp_path("shmtool_import_back");
  const ToolRun imported = shmtool({"bag", "import", out, "-o", back});
  ASSERT_EQ(imported.code, 0) << imported.err;
  EXPECT_NE(imported.out.find("wrote 60 messages on 3 channels"), std::string::npos) << imported.out;
  const ToolRun cat_recorded = shmtool({"bag", "cat", file, "--json"});
  const ToolRun cat_back = shmtool({"bag", "cat", back, "--json"});
  ASSERT_EQ(cat_back.code, 0) << cat_back.err;
  EXPECT_EQ(cat_back.out, cat_recorded.out);
  std::map<std::uint64_t, std::vector<std::byte>> recorded_bytes;
  shmbus::mcap::Reader(file).read_messages([&](const shmbus::mcap::MessageView& m) {
    recorded_bytes[m.log_time].assign(m.data.begin(), m.data.end());
    return true;
  });
  std::size_t same = 0;
  shmbus::mcap::Reader(back).read_messages([&](const shmbus::mcap::MessageView& m) {
    same += recorded_bytes[m.log_time] == std::vector<std::byte>(m.data.begin(), m.data.end()) ? 1 : 0;
    return true;
  });
  EXPECT_EQ(same, 60U) << "byte for byte";
  DomainGuard replay;
  const ToolRun played = shmtool(tool_args({"play", back, "--rate", "10"}, replay.name));
  EXPECT_EQ(played.code, 0) << played.err;
  EXPECT_NE(played.out.find("played 60 messages"), std::string::npos) << played.out;

  // A file whose std_msgs/msg/Header is not ROS 2's (shmbus's old fixed
  // layout under that name) disagrees with the shipped one: refused naming
  // the channel, the type and the field, nothing written.
  const std::string ros2 = temp_path("shmtool_import_ros2");
  {
    shmbus::mcap::WriterOptions w;
    w.profile = "ros2";
    shmbus::mcap::Writer writer(ros2, w);
    const auto sid =
        writer.add_schema("std_msgs/msg/Header", "ros2msg", "uint64 stamp_ns\nuint32 seq\nstring frame_id\n");
    writer.add_channel(sid, "/ros/header", "cdr", {});
    writer.close();
  }
  const std::string refused_out = temp_path("shmtool_import_refused");
  // Without --strict the channel is kept raw and said; with it, refused.
  const ToolRun kept = shmtool({"bag", "import", ros2, "-o", refused_out});
  EXPECT_EQ(kept.code, 1) << kept.err;
  EXPECT_NE(kept.err.find("bag import: /ros/header (std_msgs/msg/Header): 0 message(s) kept raw, undecoded: "
                          "bag import: channel /ros/header: the file's std_msgs/msg/Header differs"),
            std::string::npos)
      << kept.err;
  std::filesystem::remove(refused_out);
  const ToolRun refused = shmtool({"bag", "import", ros2, "-o", refused_out, "--strict"});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("channel /ros/header: the file's std_msgs/msg/Header differs from "
                             "<shipped>/std_msgs/Header.msg on the msg path in std_msgs/Header: the file has "
                             "'uint64 stamp_ns', the msg path 'builtin_interfaces/Time stamp'"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.err_lines(), 1U) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(refused_out));
  remove_all({file, out, back, ros2});
}

// A ROS 2 recording of types no msg path defines: imported through the
// definitions the file carries (unbounded strings and sequences, a nested
// builtin_interfaces/Time; a service event as rosbag2 records a service's
// introspection, with bounded sequences of its request and response), and
// bag cat decodes every field.
TEST(ShmtoolRecord, ImportTakesATypeTheMsgPathLacksFromTheFilesOwnDefinition) {
  const std::string rule = "================================================================================\n";
  const std::string scan_text =
      "# a scan\nbuiltin_interfaces/Time stamp\nstring frame_id\nfloat32[] ranges\n"
      "string[] tags\n" +
      rule + "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";
  const std::string event_text = add_two_ints_event_text();
  const auto schema_of_text = [](const std::string& text, const std::string& name) {
    auto set = std::make_shared<shmbus::schema::MessageSet>();
    const std::string root = set->add_ros2msg(text, name, "the test");
    set->resolve();
    return shmbus::schema::Schema::from_set(set, root);
  };
  const auto scan = schema_of_text(scan_text, "scan_msgs/msg/Scan");
  const auto event = schema_of_text(event_text, "example_interfaces/srv/AddTwoInts_Event");
  const std::string ros2 = temp_path("shmtool_import_scan");
  std::vector<json> sent;
  {
    shmbus::mcap::WriterOptions w;
    w.profile = "ros2";
    shmbus::mcap::Writer writer(ros2, w);
    const auto scan_id =
        writer.add_channel(writer.add_schema("scan_msgs/msg/Scan", "ros2msg", scan_text), "/scan", "cdr", {});
    const auto event_id =
        writer.add_channel(writer.add_schema("example_interfaces/srv/AddTwoInts_Event", "ros2msg", event_text),
                           "/add/_service_event", "cdr", {});
    const auto write = [&](const shmbus::schema::Schema& s, std::uint16_t channel, std::uint32_t i, const json& m) {
      std::string cdr;
      s.to_cdr(s.encode(s.with_defaults(m)), cdr);
      writer.write({channel, i, 1000 + i, 1000 + i, std::as_bytes(std::span{cdr})});
      sent.push_back(s.with_defaults(m));
    };
    for (std::uint32_t i = 0; i < 3; ++i) {
      write(scan, scan_id, i,
            {{"stamp", {{"sec", i}, {"nanosec", 5}}},
             {"frame_id", "laser_" + std::string(i * 40, 'x')},
             {"ranges", json(std::vector<double>(i * 2, 0.5))},
             {"tags", json::array({"a", std::to_string(i)})}});
    }
    std::vector<int> gid(16, 7);
    write(event, event_id, 3,
          {{"info", {{"event_type", 0}, {"client_gid", gid}, {"sequence_number", 1}}},
           {"request", json::array({{{"a", 2}, {"b", 40}}})}});
    write(event, event_id, 4,
          {{"info", {{"event_type", 2}, {"client_gid", gid}, {"sequence_number", 1}}},
           {"response", json::array({{{"sum", 42}}})}});
    writer.close();
  }
  const std::string out = temp_path("shmtool_import_scan_out");
  const ToolRun imported = shmtool({"bag", "import", ros2, "-o", out});
  ASSERT_EQ(imported.code, 0) << imported.err;
  EXPECT_NE(imported.out.find("wrote 5 messages on 2 channels"), std::string::npos) << imported.out;
  const ToolRun cat = shmtool({"bag", "cat", out, "--json"});
  ASSERT_EQ(cat.code, 0) << cat.err;
  std::vector<json> got;
  std::istringstream lines(cat.out);
  for (std::string line; std::getline(lines, line);) got.push_back(json::parse(line));
  ASSERT_EQ(got.size(), 5U) << cat.out;
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i]["topic"], i < 3 ? "/scan" : "/add/_service_event");
    EXPECT_EQ(got[i]["data"], json::parse(sent[i].dump())) << got[i];
  }
  EXPECT_EQ(got[4]["data"]["response"][0]["sum"], 42);
  EXPECT_TRUE(got[4]["data"]["request"].empty());
  // bag cat reads the ROS 2 file itself through its own definitions: the
  // same lines.
  const ToolRun cat_ros2 = shmtool({"bag", "cat", ros2, "--json"});
  ASSERT_EQ(cat_ros2.code, 0) << cat_ros2.err;
  EXPECT_EQ(cat_ros2.out, cat.out);
  // bag export --encoding json of the ROS 2 file: each message its fields.
  const std::string exported = temp_path("shmtool_import_scan_json");
  const ToolRun ex = shmtool({"bag", "export", ros2, "-o", exported, "--encoding", "json"});
  ASSERT_EQ(ex.code, 0) << ex.err;
  std::size_t k = 0;
  shmbus::mcap::Reader(exported).read_messages([&](const shmbus::mcap::MessageView& m) {
    EXPECT_EQ(json::parse(std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size())),
              json::parse(sent.at(k++).dump()));
    return true;
  });
  EXPECT_EQ(k, 5U);
  remove_all({ros2, out, exported});
}

// A ROS 2 recording written without shmbus, as rosbag2 writes one
// (tests/js/ros2_bag_write.mjs: @mcap/core, zstd chunks, each definition
// the .msg files concatenated, CDR by @foxglove/rosmsg2-serialization):
// std_msgs/String (one of 10,000 characters), sensor_msgs/PointCloud2
// (strings in its header and in a sequence of messages, then the points)
// and a service event type no msg path defines. Imported, decoded by bag
// cat, then played to a Node of the shipped types' generated C++: every
// message arrives, every field as written.
TEST(ShmtoolRecord, ARosbag2RecordingImportsDecodesAndPlaysToANodeOfTheShippedTypes) {
  using Cloud = sensor_msgs::msg::PointCloud2;
  using Text = std_msgs::msg::String;
  const auto cloud_schema = shmbus::schema::Schema::from_canonical(Cloud::kSchema);
  const auto text_schema = shmbus::schema::Schema::from_canonical(Text::kSchema);
  std::vector<Cloud> clouds(3);
  std::vector<Text> texts(3);
  std::vector<json> sent;  // in log-time order, as bag cat prints them
  json chatter = json::array();
  json points = json::array();
  json events = json::array();
  for (std::uint32_t i = 0; i < 3; ++i) {
    texts[i].data = i == 1 ? std::string(10000, 'y') : "hello " + std::to_string(i);
    Cloud& m = clouds[i];
    m.header.stamp = {static_cast<std::int32_t>(i), 5};
    m.header.frame_id = "lidar_" + std::to_string(i);
    m.fields.resize(i + 1);
    for (std::uint32_t k = 0; k <= i; ++k) {
      m.fields[k].name = std::string(k + 1, static_cast<char>('x' + k));
      m.fields[k].offset = 4 * k;
      m.fields[k].datatype = sensor_msgs::msg::PointField::FLOAT32;
      m.fields[k].count = 1;
    }
    m.height = 1;
    m.width = 8 * i;
    m.point_step = 16;
    m.row_step = 16 * m.width;
    m.data.resize(m.row_step);
    for (std::size_t k = 0; k < m.data.size(); ++k) m.data[k] = static_cast<std::uint8_t>(k * 3 + i);
    m.is_dense = i % 2 == 0;
    const std::uint64_t t = 1'000'000'000ULL + i * 100'000'000ULL;
    chatter.push_back({{"log_time", std::to_string(t)}, {"data", text_schema.decode(shmbus::msg::to_bytes(texts[i]))}});
    points.push_back(
        {{"log_time", std::to_string(t + 1)}, {"data", cloud_schema.decode(shmbus::msg::to_bytes(clouds[i]))}});
    sent.push_back(chatter.back()["data"]);
    sent.push_back(points.back()["data"]);
  }
  const auto event_schema = [] {
    auto set = std::make_shared<shmbus::schema::MessageSet>();
    const std::string root =
        set->add_ros2msg(add_two_ints_event_text(), "example_interfaces/srv/AddTwoInts_Event", "the test");
    set->resolve();
    return shmbus::schema::Schema::from_set(set, root);
  }();
  const json gid(std::vector<int>(16, 7));
  for (const json& e : {json{{"info", {{"event_type", 0}, {"client_gid", gid}, {"sequence_number", 1}}},
                             {"request", json::array({{{"a", 2}, {"b", 40}}})}},
                        json{{"info", {{"event_type", 2}, {"client_gid", gid}, {"sequence_number", 1}}},
                             {"response", json::array({{{"sum", 42}}})}}}) {
    events.push_back({{"log_time", std::to_string(2'000'000'000ULL + events.size())},
                      {"data", event_schema.decode(event_schema.encode(event_schema.with_defaults(e)))}});
    sent.push_back(events.back()["data"]);
  }
  const std::string ros2 = temp_path("shmtool_rosbag2");
  const std::string spec_file = temp_path("shmtool_rosbag2_spec") + ".json";
  std::ofstream(spec_file) << json{
      {"out", ros2},
      {"msg_roots", json::array({std::string(SHMBUS_SOURCE_DIR) + "/runtime/msg"})},
      {"topics", json::array({{{"topic", "/chatter"}, {"type", "std_msgs/msg/String"}, {"messages", chatter}},
                              {{"topic", "/points"}, {"type", "sensor_msgs/msg/PointCloud2"}, {"messages", points}},
                              {{"topic", "/add/_service_event"},
                               {"type", "example_interfaces/srv/AddTwoInts_Event"},
                               {"definition", add_two_ints_event_text()},
                               {"messages", events}}})}};
  const json written = run_node("ros2_bag_write.mjs", spec_file);
  ASSERT_EQ(written["messages"], 8) << written.dump();
  EXPECT_GT(written["chunks"].get<int>(), 1) << "zstd chunks of 4 KiB";

  const std::string out = temp_path("shmtool_rosbag2_out");
  const ToolRun imported = shmtool({"bag", "import", ros2, "-o", out});
  ASSERT_EQ(imported.code, 0) << imported.err;
  EXPECT_NE(imported.out.find("wrote 8 messages on 3 channels"), std::string::npos) << imported.out;
  // bag cat decodes the ROS 2 file through its own definitions, and the
  // imported one through shmbus's: the same lines, every field as sent.
  const ToolRun cat = shmtool({"bag", "cat", out, "--json"});
  ASSERT_EQ(cat.code, 0) << cat.err;
  const ToolRun cat_ros2 = shmtool({"bag", "cat", ros2, "--json"});
  ASSERT_EQ(cat_ros2.code, 0) << cat_ros2.err;
  EXPECT_EQ(cat_ros2.out, cat.out);
  std::istringstream lines(cat.out);
  std::size_t k = 0;
  for (std::string line; std::getline(lines, line); ++k) {
    ASSERT_LT(k, sent.size()) << cat.out;
    EXPECT_EQ(json::parse(line)["data"], sent[k]) << k;
  }
  EXPECT_EQ(k, sent.size());

  // Played where /chatter starts at the configuration's 4096 B: the channel
  // grows for the long string, and every message is published.
  DomainGuard small;
  const ToolRun cut = shmtool(tool_args({"play", out, "--channels", "/chatter"}, small.name));
  EXPECT_EQ(cut.code, 0) << cut.err;
  EXPECT_NE(cut.out.find("played 3 messages"), std::string::npos) << cut.out;
  EXPECT_EQ(cut.err.find("not published"), std::string::npos) << cut.err;

  DomainGuard replay;
  shmbus::Config config;
  config.domain = replay.name;
  config.channels.push_back(shmbus::ChannelRule{.pattern = "/chatter", .max_message_size = 16384});
  shmbus::Context context(config);
  shmbus::Node node("cloud_viewer", context);
  std::vector<Cloud> got_clouds;
  std::vector<Text> got_texts;
  std::vector<json> got_events;
  const auto done = [&] {
    if (got_clouds.size() == 3 && got_texts.size() == 3 && got_events.size() == 2) node.stop();
  };
  shmbus::SubscriptionOptions any_type;
  any_type.subscriber.wait_for_channel = true;
  node.subscribe_raw(
      "/add/_service_event", std::nullopt,
      [&](std::span<const std::byte> m, const shmbus::MessageInfo&) {
        got_events.push_back(event_schema.decode(m));
        done();
      },
      any_type);
  node.subscribe<Cloud>("/points", [&](const Cloud& m, const shmbus::MessageInfo&) {
    got_clouds.push_back(m);
    done();
  });
  node.subscribe<Text>("/chatter", [&](const Text& m, const shmbus::MessageInfo&) {
    got_texts.push_back(m);
    done();
  });
  // The event's subscription attaches while the node spins, once play has
  // made the channel: play runs beside the spinning node.
  auto play = start_tool({"play", out, "--wait-for-subscribers", "--rate", "10"}, replay.name);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (node.ok() && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
  EXPECT_TRUE(exited_zero(play->wait(20s))) << play->output();
  ASSERT_EQ(got_clouds.size(), 3U);
  ASSERT_EQ(got_texts.size(), 3U);
  ASSERT_EQ(got_events.size(), 2U);
  EXPECT_EQ(got_events[0], sent[6]);
  EXPECT_EQ(got_events[1], sent[7]);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(shmbus::msg::to_bytes(got_clouds[i]), shmbus::msg::to_bytes(clouds[i])) << i;
    EXPECT_EQ(got_clouds[i].header.frame_id, clouds[i].header.frame_id);
    EXPECT_EQ(got_clouds[i].fields.back().name, clouds[i].fields.back().name);
    EXPECT_EQ(got_clouds[i].data, clouds[i].data);
    EXPECT_EQ(got_texts[i].data, texts[i].data);
  }
  remove_all({ros2, out, spec_file});
}

// A shipped type recorded with ROS 2's own text of it (short names, its
// comments, defaults written "0", `pkg/msg/` sections): the same type,
// imported as the shipped one; a field that differs is refused naming it.
/// The CDR messages of `topic` in an MCAP file, in log-time order.
std::vector<std::string> cdr_of(const std::string& file, const std::string& topic) {
  shmbus::mcap::Reader r(file);
  std::vector<std::string> out;
  r.read_messages([&](const shmbus::mcap::MessageView& m) {
    if (r.info().channel(m.channel_id)->topic == topic) {
      out.emplace_back(reinterpret_cast<const char*>(m.data.data()), m.data.size());
    }
    return true;
  });
  return out;
}

/// sensor_msgs/msg/JointState's definition as rosbag2 writes it.
std::string joint_state_definition() {
  const std::string rule(80, '=');
  return "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n" + rule +
         "\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n" + rule +
         "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";
}

/// Two sensor_msgs/JointState messages at log times `t1` and `t2`, with
/// empty sequences of 8-byte elements (no pad after their counts).
json joint_state_messages(const std::string& t1, const std::string& t2) {
  return json::array({{{"log_time", t1},
                       {"data",
                        {{"header", {{"stamp", {{"sec", 1}, {"nanosec", 2}}}, {"frame_id", "base"}}},
                         {"name", {"j1", "j2"}},
                         {"position", {0.5, -1.25}},
                         {"velocity", json::array()},
                         {"effort", json::array()}}}},
                      {{"log_time", t2},
                       {"data",
                        {{"header", {{"stamp", {{"sec", 3}, {"nanosec", 4}}}, {"frame_id", "b"}}},
                         {"name", json::array()},
                         {"position", json::array()},
                         {"velocity", {7.0}},
                         {"effort", json::array()}}}}});
}

TEST(ShmtoolRecord, ARecordingAsRosbag2WritesItImportsCatsAndExportsPastAChannelThatDoesNotDecode) {
  const std::string rule(80, '=');
  const std::string time_text = "int32 sec\nuint32 nanosec\n";
  // sensor_msgs/JointState, with empty velocity and effort: the count of
  // an empty float64[] is not followed by a pad.
  const std::string joint_state = joint_state_definition();
  // rcl_interfaces/ParameterEvent as rosbag2 writes it: a section once per
  // path that reaches it (Parameter and ParameterValue twice).
  const std::string value =
      "uint8 type\nbool bool_value\nint64 integer_value\nfloat64 double_value\n"
      "string string_value\nbyte[] byte_array_value\nbool[] bool_array_value\n"
      "int64[] integer_array_value\nfloat64[] double_array_value\nstring[] string_array_value\n";
  const std::string parameter = "string name\nParameterValue value\n";
  const std::string parameter_event =
      "builtin_interfaces/Time stamp\nstring node\nParameter[] new_parameters\nParameter[] changed_parameters\n"
      "Parameter[] deleted_parameters\n" +
      rule + "\nMSG: builtin_interfaces/Time\n" + time_text + rule + "\nMSG: rcl_interfaces/Parameter\n" + parameter +
      rule + "\nMSG: rcl_interfaces/ParameterValue\n" + value + rule + "\nMSG: rcl_interfaces/Parameter\n" + parameter +
      rule + "\nMSG: rcl_interfaces/ParameterValue\n" + value;
  const json joints = joint_state_messages("1000", "2000");
  const json param_value = {{"type", 2},
                            {"bool_value", false},
                            {"integer_value", "42"},
                            {"double_value", 0.0},
                            {"string_value", ""},
                            {"byte_array_value", json::array()},
                            {"bool_array_value", json::array()},
                            {"integer_array_value", json::array()},
                            {"double_array_value", json::array()},
                            {"string_array_value", json::array()}};
  const json params = json::array({{{"log_time", "1500"},
                                    {"data",
                                     {{"stamp", {{"sec", 5}, {"nanosec", 6}}},
                                      {"node", "/talker"},
                                      {"new_parameters", json::array({{{"name", "rate"}, {"value", param_value}}})},
                                      {"changed_parameters", json::array()},
                                      {"deleted_parameters", json::array()}}}}});
  const json gid(std::vector<int>(16, 7));
  const json events = json::array(
      {{{"log_time", "1700"},
        {"data",
         {{"info",
           {{"event_type", 0}, {"stamp", {{"sec", 0}, {"nanosec", 0}}}, {"client_gid", gid}, {"sequence_number", "1"}}},
          {"request", json::array({{{"a", "2"}, {"b", "40"}}})},
          {"response", json::array()}}}}});
  // A channel shmbus cannot read (wstring), its bytes written as they are.
  const json wide = json::array({{{"log_time", "1200"}, {"cdr", "0001000003000000610062000000"}, {"data", nullptr}},
                                 {{"log_time", "1800"}, {"cdr", "00010000010000000000"}, {"data", nullptr}}});
  const std::string ros2 = temp_path("shmtool_rosbag2_mixed");
  const std::string spec_file = temp_path("shmtool_rosbag2_mixed_spec") + ".json";
  std::ofstream(spec_file) << json{{"out", ros2},
                                   {"topics", json::array({{{"topic", "/joint_states"},
                                                            {"type", "sensor_msgs/msg/JointState"},
                                                            {"definition", joint_state},
                                                            {"messages", joints}},
                                                           {{"topic", "/parameter_events"},
                                                            {"type", "rcl_interfaces/msg/ParameterEvent"},
                                                            {"definition", parameter_event},
                                                            {"messages", params}},
                                                           {{"topic", "/add/_service_event"},
                                                            {"type", "example_interfaces/srv/AddTwoInts_Event"},
                                                            {"definition", add_two_ints_event_text()},
                                                            {"schema_text", "int64 a\nint64 b\n---\nint64 sum\n"},
                                                            {"messages", events}},
                                                           {{"topic", "/wide"},
                                                            {"type", "test_msgs/msg/WStrings"},
                                                            {"definition", "string w\n"},
                                                            {"schema_text", "wstring w\n"},
                                                            {"messages", wide}}})}};
  const json written = run_node("ros2_bag_write.mjs", spec_file);
  ASSERT_EQ(written["messages"], 6) << written.dump();

  // cat: every good message exact, the wstring channel skipped with one line.
  const ToolRun cat = shmtool({"bag", "cat", ros2, "--json"});
  EXPECT_EQ(cat.code, 1) << cat.err;
  EXPECT_NE(cat.err.find("bag cat: /wide (test_msgs/msg/WStrings): 2 message(s) skipped"), std::string::npos)
      << cat.err;
  std::map<std::string, std::vector<json>> got;
  std::istringstream lines(cat.out);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line);
    got[j["topic"]].push_back(j["data"]);
  }
  ASSERT_EQ(got["/joint_states"].size(), 2U) << cat.out;
  EXPECT_EQ(got["/joint_states"][1]["velocity"], json::array({7.0}));
  EXPECT_EQ(got["/joint_states"][0]["effort"], json::array());
  EXPECT_EQ(got["/joint_states"][0]["position"], json::array({0.5, -1.25}));
  ASSERT_EQ(got["/parameter_events"].size(), 1U);
  EXPECT_EQ(got["/parameter_events"][0]["new_parameters"][0]["value"]["integer_value"], 42);
  ASSERT_EQ(got["/add/_service_event"].size(), 1U);
  EXPECT_EQ(got["/add/_service_event"][0]["request"][0]["b"], 40);
  EXPECT_EQ(got.count("/wide"), 0U);
  EXPECT_EQ(shmtool({"bag", "cat", ros2, "--strict"}).code, 2);

  // export --encoding cdr: the good channels' CDR byte for byte what
  // Foxglove's serializer wrote; the unreadable one left out, said.
  const std::string exported = temp_path("shmtool_rosbag2_mixed_cdr");
  const ToolRun exp = shmtool({"bag", "export", ros2, "-o", exported, "--encoding", "cdr"});
  EXPECT_EQ(exp.code, 1) << exp.err;
  EXPECT_NE(exp.err.find("bag export: /wide"), std::string::npos) << exp.err;
  for (const char* topic : {"/joint_states", "/parameter_events", "/add/_service_event"}) {
    EXPECT_EQ(cdr_of(exported, topic), cdr_of(ros2, topic)) << topic;
  }
  EXPECT_TRUE(cdr_of(exported, "/wide").empty());

  // import: all or nothing on disk with --strict; else the bad channel
  // kept raw with its schema name and text, its bytes as they were.
  const std::string out = temp_path("shmtool_rosbag2_mixed_out");
  std::ofstream(out) << "an older file";
  const ToolRun strict = shmtool({"bag", "import", ros2, "-o", out, "--strict"});
  EXPECT_EQ(strict.code, 2) << strict.err;
  EXPECT_NE(strict.err.find("/wide"), std::string::npos) << strict.err;
  std::stringstream kept;
  kept << std::ifstream(out).rdbuf();
  EXPECT_EQ(kept.str(), "an older file") << "a refused import replaced the file";
  const ToolRun imported = shmtool({"bag", "import", ros2, "-o", out});
  EXPECT_EQ(imported.code, 1) << imported.err;
  EXPECT_NE(imported.err.find("bag import: /wide (test_msgs/msg/WStrings): 2 message(s) kept raw, undecoded"),
            std::string::npos)
      << imported.err;
  for (const auto& f : fs::directory_iterator(fs::path(out).parent_path())) {
    EXPECT_EQ(f.path().string().find(fs::path(out).filename().string() + ".importing"), std::string::npos) << f.path();
  }
  EXPECT_EQ(cdr_of(out, "/wide"), cdr_of(ros2, "/wide"));
  {
    shmbus::mcap::Reader r(out);
    for (const auto& ch : r.info().channels) {
      if (ch.topic != "/wide") continue;
      const shmbus::mcap::Schema* sc = r.info().schema(ch.schema_id);
      ASSERT_NE(sc, nullptr);
      EXPECT_EQ(sc->name, "test_msgs/msg/WStrings");
      EXPECT_EQ(sc->data, "wstring w\n");
    }
  }
  const ToolRun cat_imported = shmtool({"bag", "cat", out, "--json", "--exclude", "/wide"});
  EXPECT_EQ(cat_imported.code, 0) << cat_imported.err;
  std::istringstream imported_lines(cat_imported.out);
  std::size_t n = 0;
  for (std::string line; std::getline(imported_lines, line); ++n) {
    const json j = json::parse(line);
    const std::string topic = j["topic"];
    if (topic == "/joint_states") EXPECT_EQ(j["data"]["velocity"].size(), j["log_time"] == 2000 ? 1U : 0U);
    if (topic == "/parameter_events") EXPECT_EQ(j["data"], got["/parameter_events"][0]);
    if (topic == "/add/_service_event") EXPECT_EQ(j["data"], got["/add/_service_event"][0]);
  }
  EXPECT_EQ(n, 4U) << cat_imported.out;

  // play: the ROS 2 file imported on the way, each good channel published
  // with its type, the unreadable one as its bytes, said, exit 1.
  DomainGuard replay;
  shmbus::Config config;
  config.domain = replay.name;
  shmbus::Context context(config);
  shmbus::Node node("listener", context);
  std::map<std::string, std::vector<std::string>> played;
  const std::vector<std::string> topics{"/joint_states", "/parameter_events", "/add/_service_event", "/wide"};
  shmbus::SubscriptionOptions any_type;
  any_type.subscriber.wait_for_channel = true;
  for (const std::string& topic : topics) {
    node.subscribe_raw(
        topic, std::nullopt,
        [&, topic](std::span<const std::byte> m, const shmbus::MessageInfo&) {
          played[topic].emplace_back(reinterpret_cast<const char*>(m.data()), m.size());
          if (played["/joint_states"].size() == 2 && played["/parameter_events"].size() == 1 &&
              played["/add/_service_event"].size() == 1 && played["/wide"].size() == 2) {
            node.stop();
          }
        },
        any_type);
  }
  auto play = start_tool({"play", ros2, "--wait-for-subscribers", "--rate", "10"}, replay.name, true);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (node.ok() && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
  const int status = play->wait(20s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << play->output();
  EXPECT_NE(play->output().find("play: /wide (test_msgs/msg/WStrings): 2 message(s) kept raw, undecoded"),
            std::string::npos)
      << play->output();
  EXPECT_EQ(played["/wide"], cdr_of(ros2, "/wide")) << "an undecoded channel plays its bytes as recorded";
  EXPECT_EQ(played["/joint_states"].size(), 2U);
  EXPECT_EQ(played["/parameter_events"].size(), 1U);
  EXPECT_EQ(played["/add/_service_event"].size(), 1U);
  for (const std::string& topic : {"/joint_states", "/parameter_events"}) {
    const ToolRun info = shmtool(tool_args({"info", topic, "--json"}, replay.name));
    EXPECT_EQ(json::parse(info.out)["type"],
              topic == "/joint_states" ? "sensor_msgs/JointState" : "rcl_interfaces/ParameterEvent")
        << info.out;
  }
  for (const std::string& f : {ros2, spec_file, exported, out}) fs::remove(f);
}

/// A rosbag2 sqlite3 bag folder `out` written as rosbag2 writes one
/// (tests/tools/rosbag2_sqlite_write.py, Python's sqlite3 and zstandard)
/// of `topics` as ros2_bag_write.mjs reports them. Returns its report.
json write_sqlite_bag(const json& topics, const std::string& out, const std::string& distro, int files,
                      const std::string& compression) {
  const std::string spec = out + ".json";
  std::ofstream(spec) << json{
      {"out", out}, {"topics", topics}, {"distro", distro}, {"files", files}, {"compression", compression}};
  json r = shmbus::test::run_json_command("/usr/bin/python3 " + std::string(SHMBUS_SOURCE_DIR) +
                                          "/tests/tools/rosbag2_sqlite_write.py " + spec);
  fs::remove(spec);
  return r;
}

// rosbag2's sqlite3 storage (ROS 2's default until Iron): bag folders of
// Humble's tables (no definitions: the types from the msg path) and
// Jazzy's (a message_definitions table), split over files that number
// their topics differently, compressed per message and per file. Each is
// read as the MCAP file Foxglove's writer made of the same messages:
// every message exact, in log-time order.
TEST(ShmtoolRecord, Rosbag2Sqlite3BagsReadAsTheSameRecordingInMcap) {
  const std::string ros2 = temp_path("shmtool_sqlite_reference");
  const std::string spec_file = ros2 + ".json";
  const json joints = joint_state_messages("2000", "4000");
  json chatter = json::array();
  for (int i = 0; i < 5; ++i) {
    chatter.push_back(
        {{"log_time", std::to_string(1000 + 1000 * i + 500)}, {"data", {{"data", "hello " + std::to_string(i)}}}});
  }
  std::ofstream(spec_file) << json{
      {"out", ros2},
      {"msg_roots", {std::string(SHMBUS_SOURCE_DIR) + "/runtime/msg"}},
      {"topics", json::array({{{"topic", "/chatter"}, {"type", "std_msgs/msg/String"}, {"messages", chatter}},
                              {{"topic", "/joint_states"},
                               {"type", "sensor_msgs/msg/JointState"},
                               {"definition", joint_state_definition()},
                               {"messages", joints}}})}};
  const json written = run_node("ros2_bag_write.mjs", spec_file);
  ASSERT_EQ(written["messages"], 7) << written.dump();
  const ToolRun reference = shmtool({"bag", "cat", ros2, "--json"});
  ASSERT_EQ(reference.code, 0) << reference.err;
  ASSERT_EQ(json_lines(reference.out).size(), 7U) << reference.out;

  // JointState on a msg path as ROS 2 installs it (share/<pkg>/msg/).
  const fs::path share = fs::temp_directory_path() / ("shmtool_sqlite_share_" + std::to_string(::getpid()));
  fs::create_directories(share / "sensor_msgs" / "msg");
  std::ofstream(share / "sensor_msgs" / "msg" / "JointState.msg")
      << "# as sensor_msgs installs it\nstd_msgs/Header header\n\nstring[] name\nfloat64[] position\n"
         "float64[] velocity\nfloat64[] effort\n";
  struct Variant {
    std::string distro;
    int files;
    std::string compression;
  };
  for (const Variant& v : {Variant{"jazzy", 1, ""}, Variant{"jazzy", 2, "message"}, Variant{"humble", 2, "file"},
                           Variant{"humble", 3, ""}}) {
    const std::string bag = temp_path("shmtool_sqlite_" + v.distro + "_" + v.compression);
    const json report = write_sqlite_bag(written["topics"], bag, v.distro, v.files, v.compression);
    ASSERT_EQ(report["files"].size(), static_cast<std::size_t>(v.files)) << report.dump();
    const std::string what = v.distro + " in " + std::to_string(v.files) + " file(s), compression " + v.compression;
    std::vector<std::string> msg_path;
    if (v.distro == "humble") msg_path = {"--msg-path", share.string()};
    const auto with_msg_path = [&](std::vector<std::string> args) {
      args.insert(args.end(), msg_path.begin(), msg_path.end());
      return shmtool(args);
    };
    const ToolRun cat = with_msg_path({"bag", "cat", bag, "--json"});
    EXPECT_EQ(cat.code, 0) << what << ": " << cat.err;
    EXPECT_EQ(cat.out, reference.out) << what;
    const ToolRun info = with_msg_path({"bag", "info", bag, "--json"});
    ASSERT_EQ(info.code, 0) << what << ": " << info.err;
    const json i = json::parse(info.out);
    EXPECT_EQ(i["messages"], 7) << what;
    EXPECT_EQ(i["files"], report["files"]) << what;
    EXPECT_EQ(i["profile"], "ros2") << what;
    EXPECT_EQ(i["library"], "rosbag2 sqlite3" + std::string(v.compression == "message" ? ", zstd per message"
                                                            : v.compression == "file"  ? ", zstd per file"
                                                                                       : ""))
        << what;
    EXPECT_EQ(i["chunks"], 0) << what << ": the copy's chunks are not the bag's";
    // The imported recording holds the same messages under shmbus's types.
    const std::string imported = bag + ".imported.mcap";
    const ToolRun import = with_msg_path({"bag", "import", bag, "-o", imported});
    ASSERT_EQ(import.code, 0) << what << ": " << import.err;
    const ToolRun cat_imported = shmtool({"bag", "cat", imported, "--json"});
    ASSERT_EQ(cat_imported.code, 0) << cat_imported.err;
    const std::vector<json> got = json_lines(cat_imported.out);
    const std::vector<json> want = json_lines(reference.out);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k]["topic"], want[k]["topic"]) << what << " " << k;
      EXPECT_EQ(got[k]["log_time"], want[k]["log_time"]) << what << " " << k;
      EXPECT_EQ(got[k]["data"], want[k]["data"]) << what << " " << k;
    }
    // bag filter (and merge, compress): the bag rewritten as MCAP.
    const std::string filtered = bag + ".filtered.mcap";
    const ToolRun filter = with_msg_path({"bag", "filter", bag, "-o", filtered, "--channels", "/chatter"});
    ASSERT_EQ(filter.code, 0) << what << ": " << filter.err;
    std::vector<json> chatter_lines;
    for (const json& j : want) {
      if (j["topic"] == "/chatter") chatter_lines.push_back(j);
    }
    EXPECT_EQ(json_lines(shmtool({"bag", "cat", filtered, "--json"}).out), chatter_lines) << what;
    fs::remove(filtered);
    // One split file alone: its own messages, in order.
    if (v.files > 1) {
      const ToolRun first = with_msg_path({"bag", "cat", report["files"][0].get<std::string>(), "--json"});
      EXPECT_EQ(first.code, 0) << what << ": " << first.err;
      const std::vector<json> part = json_lines(first.out);
      ASSERT_FALSE(part.empty()) << what;
      EXPECT_LT(part.size(), want.size()) << what;
      for (std::size_t k = 0; k < part.size(); ++k) EXPECT_EQ(part[k], want[k]) << what << " " << k;
    }
    fs::remove(imported);
    fs::remove_all(bag);
  }

  // Humble's tables without the msg path's JointState: one line naming the
  // type, its messages skipped, every other one exact.
  const std::string humble = temp_path("shmtool_sqlite_humble_plain");
  write_sqlite_bag(written["topics"], humble, "humble", 2, "");
  const ToolRun cat = shmtool({"bag", "cat", humble, "--json"});
  EXPECT_EQ(cat.code, 1) << cat.err;
  EXPECT_NE(cat.err.find("bag cat: /joint_states (sensor_msgs/msg/JointState): 2 message(s) skipped: channel "
                         "/joint_states: neither the file nor the msg path defines sensor_msgs/msg/JointState; give "
                         "its .msg with --msg-path"),
            std::string::npos)
      << cat.err;
  std::vector<json> chatter_only;
  for (const json& j : json_lines(reference.out)) {
    if (j["topic"] == "/chatter") chatter_only.push_back(j);
  }
  EXPECT_EQ(json_lines(cat.out), chatter_only);
  const ToolRun info = shmtool({"bag", "info", humble});
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.err.find("bag info: /joint_states (sensor_msgs/msg/JointState): neither the bag nor the msg path "
                          "defines its type"),
            std::string::npos)
      << info.err;

  // play: each channel published with its type, as rosbag2 play does.
  const std::string jazzy = temp_path("shmtool_sqlite_play");
  write_sqlite_bag(written["topics"], jazzy, "jazzy", 2, "message");
  DomainGuard replay;
  shmbus::Config config;
  config.domain = replay.name;
  shmbus::Context context(config);
  shmbus::Node node("listener", context);
  std::vector<std::string> texts;
  std::size_t joint_states = 0;
  const auto done = [&] {
    if (texts.size() == 5 && joint_states == 2) node.stop();
  };
  node.subscribe<std_msgs::msg::String>("/chatter", [&](const std_msgs::msg::String& m, const shmbus::MessageInfo&) {
    texts.push_back(m.data);
    done();
  });
  shmbus::SubscriptionOptions any_type;
  any_type.subscriber.wait_for_channel = true;
  node.subscribe_raw(
      "/joint_states", std::nullopt,
      [&](std::span<const std::byte>, const shmbus::MessageInfo&) {
        ++joint_states;
        done();
      },
      any_type);
  auto play = start_tool({"play", jazzy, "--wait-for-subscribers", "--rate", "10"}, replay.name);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (node.ok() && std::chrono::steady_clock::now() < deadline) node.spin_once(100ms);
  EXPECT_TRUE(exited_zero(play->wait(20s))) << play->output();
  EXPECT_EQ(texts, (std::vector<std::string>{"hello 0", "hello 1", "hello 2", "hello 3", "hello 4"}));
  EXPECT_EQ(joint_states, 2U);
  const auto types = shmtool(tool_args({"info", "/joint_states", "--json"}, replay.name));
  EXPECT_NE(types.out.find("sensor_msgs/JointState"), std::string::npos) << types.out << types.err;

  // A bag folder of MCAP files (rosbag2's default since Iron), split in
  // two: read as one recording, in the order metadata.yaml gives.
  const fs::path folder = fs::temp_directory_path() / ("shmtool_mcap_bag_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  fs::copy_file(ros2, folder / "run_0.mcap");
  json later = json::parse(std::ifstream(spec_file));
  later["out"] = (folder / "run_1.mcap").string();
  for (json& t : later["topics"]) {
    for (json& m : t["messages"]) m["log_time"] = std::to_string(std::stoll(m["log_time"].get<std::string>()) + 10000);
  }
  std::ofstream(spec_file) << later.dump();
  ASSERT_EQ(run_node("ros2_bag_write.mjs", spec_file)["messages"], 7);
  std::ofstream(folder / "metadata.yaml") << "rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n"
                                             "  relative_file_paths:\n    - run_0.mcap\n    - run_1.mcap\n"
                                             "  compression_format: \"\"\n  compression_mode: \"\"\n";
  const ToolRun both = shmtool({"bag", "cat", folder.string(), "--json"});
  ASSERT_EQ(both.code, 0) << both.err;
  const std::vector<json> lines = json_lines(both.out);
  ASSERT_EQ(lines.size(), 14U) << both.out;
  for (std::size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(lines[k], json_lines(reference.out)[k]) << k;
    EXPECT_EQ(lines[k + 7]["data"], lines[k]["data"]) << k;
    EXPECT_EQ(lines[k + 7]["log_time"].get<std::uint64_t>(), lines[k]["log_time"].get<std::uint64_t>() + 10000) << k;
  }
  const json folder_info = json::parse(shmtool({"bag", "info", folder.string(), "--json"}).out);
  EXPECT_EQ(folder_info["messages"], 14);
  EXPECT_EQ(folder_info["library"], "shmbus tests: @mcap/core") << "the files' own figures";

  fs::remove_all(folder);
  fs::remove_all(humble);
  fs::remove_all(jazzy);
  fs::remove_all(share);
  remove_all({ros2, spec_file});
}

TEST(ShmtoolRecord, ImportComparesDefinitionsByMeaningNotSpelling) {
  const std::string rule = "================================================================================\n";
  const std::string pose = "# A representation of pose in free space\nPoint position\nQuaternion orientation\n" + rule +
                           "MSG: geometry_msgs/msg/Point\n# position\nfloat64 x\nfloat64 y\nfloat64 z\n" + rule +
                           "MSG: geometry_msgs/msg/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
  const auto write = [&](const std::string& file, const std::string& text) {
    shmbus::mcap::WriterOptions w;
    w.profile = "ros2";
    shmbus::mcap::Writer writer(file, w);
    const auto id =
        writer.add_channel(writer.add_schema("geometry_msgs/msg/Pose", "ros2msg", text), "/pose", "cdr", {});
    // Pose{position (1, 2, 3), orientation identity} in ROS 2's CDR.
    std::string cdr("\x00\x01\x00\x00", 4);
    for (const double v : {1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0}) cdr.append(reinterpret_cast<const char*>(&v), 8);
    writer.write({id, 0, 1000, 1000, std::as_bytes(std::span{cdr})});
    writer.close();
  };
  const std::string ros2 = temp_path("shmtool_import_pose");
  const std::string out = temp_path("shmtool_import_pose_out");
  write(ros2, pose);
  const ToolRun imported = shmtool({"bag", "import", ros2, "-o", out});
  ASSERT_EQ(imported.code, 0) << imported.err;
  const ToolRun cat = shmtool({"bag", "cat", out, "--json"});
  ASSERT_EQ(cat.code, 0) << cat.err;
  EXPECT_EQ(json::parse(cat.out)["data"], json::parse(R"({"position": {"x": 1.0, "y": 2.0, "z": 3.0},
                            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}})"));
  const std::string other = temp_path("shmtool_import_pose_other");
  std::string changed = pose;
  changed.replace(changed.find("float64 z\n"), 10, "float32 z\n");
  write(other, changed);
  const ToolRun refused = shmtool({"bag", "import", other, "-o", temp_path("shmtool_import_pose_refused"), "--strict"});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("in geometry_msgs/Point: the file has 'float32 z', the msg path 'float64 z'"),
            std::string::npos)
      << refused.err;
  remove_all({ros2, out, other});
}

// --start-offset, --begin/--end (ns and ISO 8601), --loop and --clock.
TEST(ShmtoolRecord, PlaySelectsPartsLoopsAndPublishesTheClock) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_parts");
  record_while(d.name, {"-o", file, "/w/*"}, [&] { publish_strings(d.name, "/w/a", 100, 100); });  // ~1 s
  const json info = bag_info(file);
  ASSERT_EQ(count_of(info, "/w/a"), 100U);
  const auto start = info["start_ns"].get<std::uint64_t>();
  const auto end = info["end_ns"].get<std::uint64_t>();
  DomainGuard replay;
  const auto played = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"play", file, "--rate", "5"});
    const ToolRun r = shmtool(tool_args(args, replay.name));
    EXPECT_EQ(r.code, 0) << r.err;
    return number_after(r.out, "played ");
  };
  const double half = played({"--start-offset", "500ms"});
  EXPECT_GE(half, 45);
  EXPECT_LE(half, 55);
  const double window =
      played({"--begin", std::to_string(start + 200'000'000), "--end", std::to_string(start + 400'000'000)});
  EXPECT_GE(window, 17);
  EXPECT_LE(window, 23);
  EXPECT_EQ(played({"--begin", "2000-01-01T00:00:00Z"}), 100);
  EXPECT_EQ(played({"--end", std::to_string(end)}), 100);
  const ToolRun past = shmtool(tool_args({"play", file, "--begin", std::to_string(end + 1'000'000'000)}, replay.name));
  EXPECT_EQ(past.code, 2) << past.err;
  EXPECT_NE(past.err.find("nothing to play"), std::string::npos) << past.err;
  const ToolRun garbled = shmtool(tool_args({"play", file, "--begin", "yesterday"}, replay.name));
  EXPECT_EQ(garbled.code, 2) << garbled.err;
  EXPECT_NE(garbled.err.find("--begin 'yesterday' is not a wall time"), std::string::npos) << garbled.err;

  // --loop plays it again and again: 250 messages need three passes.
  auto echo = start_tool({"echo", "/w/a", "-n", "250", "--json"}, replay.name);
  auto loop = start_tool({"play", file, "--loop", "--rate", "10", "--wait-for-subscribers"}, replay.name);
  ASSERT_TRUE(exited_zero(echo->wait(30s))) << echo->output();
  loop->signal(SIGINT);
  ASSERT_TRUE(exited_zero(loop->wait(10s))) << loop->output();
  EXPECT_GE(number_after(loop->output(), "played "), 250) << loop->output();

  // --clock: the recording's time on /shmbus/clock, within its span, in order.
  auto clock = start_tool({"echo", "/shmbus/clock", "-n", "20", "--history", "100", "--json"}, replay.name);
  const ToolRun with_clock = shmtool(tool_args({"play", file, "--clock"}, replay.name));
  ASSERT_EQ(with_clock.code, 0) << with_clock.err;
  ASSERT_TRUE(exited_zero(clock->wait(20s))) << clock->output();
  std::uint64_t previous = 0;
  for (const json& line : json_lines(clock->output())) {
    const auto t = line["data"]["clock_ns"].get<std::uint64_t>();
    EXPECT_GE(t, start);
    EXPECT_LE(t, end);
    EXPECT_GT(t, previous);
    previous = t;
  }
  fs::remove(file);
}

// On a terminal, play --paused holds every message until a key: `s` steps
// one, space resumes the rest.
TEST(ShmtoolRecord, PlayPausedStepsAndResumesOnATerminal) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_paused");
  record_while(d.name, {"-o", file, "/tty/*"}, [&] { publish_strings(d.name, "/tty/a", 200, 40); });
  DomainGuard replay;
  ToolOnPty play({"play", file, "--paused"}, replay.name);
  const auto stamps = [&] { return shmbus::introspect::ChannelReader(replay.name, "/tty/a").view().stamps; };
  ASSERT_TRUE(play.read_until("[paused ]")) << play.screen;
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(stamps(), 0U) << "paused: nothing published";
  ASSERT_TRUE(play.key("s"));
  ASSERT_TRUE(play.read_until(" 1 messages")) << play.screen;
  EXPECT_EQ(stamps(), 1U) << "s steps one message";
  ASSERT_TRUE(play.key(" "));
  ASSERT_TRUE(play.read_until("played 40 messages")) << play.screen;
  EXPECT_TRUE(exited_zero(play.wait(10s))) << play.screen;
  EXPECT_EQ(stamps(), 40U);
  const ToolRun no_tty = shmtool(tool_args({"play", file, "--paused"}, replay.name));
  EXPECT_EQ(no_tty.code, 2) << no_tty.err;
  EXPECT_NE(no_tty.err.find("--paused needs a terminal"), std::string::npos) << no_tty.err;
  fs::remove(file);
}

// The flight recorder: --snapshot keeps the last DUR in memory and writes
// it on SIGUSR1, on `shmtool record --trigger`, and when shmbusd raises an
// alert on a recorded channel - with the messages from before the fault.
TEST(ShmtoolRecord, SnapshotIsWrittenOnSigusr1TriggerAndShmbusdAlert) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_snapshot");
  const std::string config = fs::temp_directory_path() / ("shmtool_snapshot_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config)
      << kTestDefaults
      << "\n[[channel]]\nname = \"/n/b\"\nthresholds_hz = [50.0, 150.0, 200.0]\nwindow = \"500ms\"\n\n"
         "[monitor]\nscan_period = \"50ms\"\ndebounce_scans = 2\nmetrics_listen = \"127.0.0.1:0\"\n";
  const ToolRun none = shmtool(tool_args({"record", "--trigger"}, d.name));
  EXPECT_EQ(none.code, 3) << none.err;
  EXPECT_NE(none.err.find("no recorder listens"), std::string::npos) << none.err;

  auto recorder = start_tool({"record", "-o", file, "/n/*", "--snapshot", "3s", "--config", config}, d.name);
  ASSERT_TRUE(recorder->wait_for_output("in memory", 20s)) << recorder->output();
  publish_strings(d.name, "/n/a", 200, 100);  // 0.5 s
  wait_for_subscriber(d.name, "/n/a");        // the recorder has all of it
  recorder->signal(SIGUSR1);
  ASSERT_TRUE(recorder->wait_for_output("(SIGUSR1)", 10s)) << recorder->output();
  EXPECT_NE(recorder->output().find("_0.mcap: 100 messages"), std::string::npos) << recorder->output();
  EXPECT_EQ(count_of(bag_info(series(file).at(0)), "/n/a"), 100U);

  publish_strings(d.name, "/n/a", 200, 20);
  const ToolRun trigger = shmtool(tool_args({"record", "--trigger", "--reason", "operator saw a glitch"}, d.name));
  ASSERT_EQ(trigger.code, 0) << trigger.err;
  ASSERT_TRUE(recorder->wait_for_output("(operator saw a glitch)", 10s)) << recorder->output();
  EXPECT_NE(recorder->output().find("_1.mcap: 20 messages"), std::string::npos) << recorder->output();

  // /n/b nominal at 100 Hz under shmbusd, then its publisher stops: the
  // alert (nominal -> critical) writes the seconds before it.
  auto pub = start_tool({"pub", "/n/b", "--type", "shmbus_msgs/String", "--rate", "100", R"({"data": "b"})"}, d.name);
  wait_for_stamps(d.name, "/n/b", 1);
  auto shmbusd = std::make_unique<shmbus::test::ChildProcess>(
      std::vector<std::string>{kDaemon, "--foreground", "--config", config, "--domain", d.name}, true);
  std::this_thread::sleep_for(1500ms);  // nominal for a while, and the recorder found /shmbus/alerts
  pub->signal(SIGINT);
  ASSERT_TRUE(exited_zero(pub->wait(10s)));
  ASSERT_TRUE(recorder->wait_for_output("shmbusd alert: /n/b critical", 15s))
      << recorder->output() << shmbusd->poll_output();
  const std::vector<std::string> files = series(file);
  ASSERT_EQ(files.size(), 3U) << recorder->output();
  EXPECT_GE(count_of(bag_info(files[2]), "/n/b"), 100U) << "the seconds before the fault";
  shmbusd->signal(SIGTERM);
  shmbusd->wait(10s);
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(20s))) << recorder->output();
  remove_all(files);
  fs::remove(config);
}

// The replayed rate is the recorded rate: a recording played into another
// domain and recorded there again has the same rate within 1%.
TEST(ShmtoolRecordTiming, ReplayKeepsTheRecordedRateWithinOnePercent) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_rate_in");
  const std::string again = temp_path("shmtool_rate_out");
  record_while(d.name, {"-o", file, "/rt/*"}, [&] { publish_strings(d.name, "/rt/a", 200, 400); });  // 2 s
  DomainGuard replay;
  auto recorder = start_tool({"record", "-o", again, "/rt/*"}, replay.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  // The recorder finds /rt/a once play has made it: play starts when it
  // has (else a loaded machine may publish the first message first).
  const ToolRun played = shmtool(tool_args({"play", "--wait-for-subscribers", file}, replay.name));
  ASSERT_EQ(played.code, 0) << played.err;
  std::this_thread::sleep_for(300ms);
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(20s))) << recorder->output();
  const json a = bag_info(file);
  const json b = bag_info(again);
  ASSERT_EQ(count_of(b, "/rt/a"), 400U);
  const double rate_a = a["channels"][0]["rate_hz"].get<double>();
  const double rate_b = b["channels"][0]["rate_hz"].get<double>();
  EXPECT_NEAR(rate_b, rate_a, 0.01 * rate_a);
  remove_all({file, again});
}

// bag filter, compress, decompress and cat on a recording of two channels,
// each result read by @mcap/core's indexed and stream readers: the kept
// channels' messages byte for byte (their CRCs equal the original's), the
// time range cut where asked, the chunks compressed as asked; cat prints
// one line per message, decoded.
TEST(ShmtoolRecord, BagFilterCompressDecompressAndCatAgreeWithTheReferenceReader) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_ops");
  record_while(d.name, {"-o", file, "/ops/*", "--chunk-size", "2048"}, [&] {
    auto a = start_tool(
        {"pub", "/ops/a", "--type", "shmbus_msgs/String", "--rate", "200", "--count", "100", R"({"data": "a"})"},
        d.name);
    publish_strings(d.name, "/ops/b", 200, 60);
    ASSERT_TRUE(exited_zero(a->wait(20s))) << a->output();
  });
  const json original = run_node("mcap_read.mjs", file);
  ASSERT_EQ(original["indexed"]["counts"]["/ops/a"], 100);
  ASSERT_EQ(original["indexed"]["counts"]["/ops/b"], 60);

  // filter by channel: /ops/a alone, byte for byte.
  const std::string only_a = temp_path("shmtool_ops_a");
  const ToolRun f = shmtool({"bag", "filter", file, "-o", only_a, "--channels", "/ops/a"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.err, "") << "no progress line when stderr is not a terminal";
  const json a = run_node("mcap_read.mjs", only_a);
  EXPECT_EQ(a["indexed"]["counts"], json({{"/ops/a", 100}}));
  EXPECT_EQ(a["stream"]["counts"], json({{"/ops/a", 100}}));
  EXPECT_EQ(a["indexed"]["crc"]["/ops/a"], original["indexed"]["crc"]["/ops/a"]);
  EXPECT_EQ(a["indexed"]["in_order"], true);
  EXPECT_EQ(a["metadata"].size(), original["metadata"].size()) << "the recording's facts go along";

  // filter by time: the messages logged in [begin, end), as the reader
  // counts them in the original.
  std::vector<std::uint64_t> times;
  shmbus::mcap::Reader(file).read_messages([&](const shmbus::mcap::MessageView& m) {
    times.push_back(m.log_time);
    return true;
  });
  ASSERT_EQ(times.size(), 160U);
  const std::uint64_t begin = times[40];
  const std::uint64_t end = times[120];
  const auto in_range = static_cast<std::uint64_t>(
      std::count_if(times.begin(), times.end(), [&](std::uint64_t t) { return t >= begin && t < end; }));
  const std::string middle = temp_path("shmtool_ops_mid");
  ASSERT_EQ(shmtool({"bag", "filter", file, "-o", middle, "--begin", std::to_string(begin), "--end",
                     std::to_string(end), "--exclude", "/nothing"})
                .code,
            0);
  EXPECT_EQ(bag_info(middle)["messages"], in_range);

  // compress (lz4), then decompress: the same messages, the chunks as asked.
  const std::string lz4 = temp_path("shmtool_ops_lz4");
  const std::string plain = temp_path("shmtool_ops_plain");
  ASSERT_EQ(shmtool({"bag", "compress", file, "-o", lz4, "--compression", "lz4"}).code, 0);
  ASSERT_EQ(shmtool({"bag", "decompress", lz4, "-o", plain, "--chunk-size", "4096"}).code, 0);
  for (const auto& [path, compression] : {std::pair{lz4, "lz4"}, std::pair{plain, ""}}) {
    const json j = run_node("mcap_read.mjs", path);
    EXPECT_EQ(j["compression"], json::array({compression})) << path;
    EXPECT_EQ(j["indexed"]["crc"], original["indexed"]["crc"]) << path;
    EXPECT_EQ(j["stream"]["counts"], original["indexed"]["counts"]) << path;
  }
  EXPECT_GT(run_node("mcap_read.mjs", plain)["chunks"].get<int>(), 1) << "4 KiB chunks";

  // cat: one line per message in log-time order, decoded.
  const ToolRun cat = shmtool({"bag", "cat", file, "--channels", "/ops/b", "--json"});
  ASSERT_EQ(cat.code, 0) << cat.err;
  const auto lines = json_lines(cat.out);
  ASSERT_EQ(lines.size(), 60U);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["topic"], "/ops/b");
    EXPECT_EQ(lines[i]["data"], json({{"data", "x"}}));
    if (i > 0) EXPECT_GE(lines[i]["log_time"].get<std::uint64_t>(), lines[i - 1]["log_time"].get<std::uint64_t>());
  }
  const ToolRun text = shmtool({"bag", "cat", file, "--channels", "/ops/a"});
  EXPECT_EQ(std::count(text.out.begin(), text.out.end(), '\n'), 100) << text.out;
  EXPECT_NE(text.out.find(" /ops/a [shmbus_msgs/String] {\"data\":\"a\"}\n"), std::string::npos) << text.out;

  // On a terminal (script(1) gives it one), a progress line on stderr,
  // erased before the summary; none with --quiet.
  const std::string pty_out = temp_path("shmtool_ops_pty");
  auto on_pty = [&](bool quiet) {
    std::vector<std::string> args{"bag", "filter", file, "-o", pty_out};
    if (quiet) args.emplace_back("--quiet");
    ToolOnPty t(args, d.name);
    EXPECT_TRUE(exited_zero(t.wait(20s))) << t.screen;
    return t.screen;
  };
  const std::string shown = on_pty(false);
  EXPECT_NE(shown.find("filter: 160/160 messages (100%)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\r\033[Kfilter: wrote 160 messages"), std::string::npos) << "erased before the summary";
  const std::string quiet = on_pty(true);
  EXPECT_EQ(quiet.find("160/160"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("filter: wrote 160 messages"), std::string::npos) << quiet;
  const ToolRun same = shmtool({"bag", "filter", file, "-o", file});
  EXPECT_EQ(same.code, 2) << "the output may not be an input";
  remove_all({file, only_a, middle, lz4, plain, pty_out});
}

namespace {

template <typename T>
T load_at(const std::string& bytes, std::uint64_t at) {
  T v{};
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}
template <typename T>
void store_at(std::string& bytes, std::uint64_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

/// The offsets of the records of `op` in [from, to).
std::vector<std::uint64_t> records_of(const std::string& bytes, std::uint64_t from, std::uint64_t to, std::uint8_t op) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t at = from; at + 9 <= to;) {
    if (static_cast<std::uint8_t>(bytes[at]) == op) out.push_back(at);
    at += 9 + load_at<std::uint64_t>(bytes, at + 1);
  }
  return out;
}

}  // namespace

// bag doctor passes a sound recording and finds each of 20 corruptions
// made to copies of it (truncations, flipped bytes under a CRC, wrong
// index offsets and counts with the CRC over them zeroed, as a writer that
// computes none leaves it): exit 1 and a line naming the record at fault,
// at its byte offset where the corruption has one.
TEST(ShmtoolRecord, BagDoctorFindsEachOfTwentyCorruptions) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_doctor");
  record_while(d.name, {"-o", file, "/doc/*", "--chunk-size", "2048"}, [&] {
    auto a = start_tool({"pub", "/doc/a", "--type", "shmbus_msgs/String", "--rate", "500", "--count", "300",
                         R"({"data": "some text to fill the chunks"})"},
                        d.name);
    publish_strings(d.name, "/doc/b", 500, 200);
    ASSERT_TRUE(exited_zero(a->wait(20s))) << a->output();
  });
  const ToolRun clean = shmtool({"bag", "doctor", file});
  ASSERT_EQ(clean.code, 0) << clean.out << clean.err;

  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::vector<shmbus::mcap::ChunkIndex> chunks = shmbus::mcap::Reader(file).info().chunks;
  ASSERT_GE(chunks.size(), 4U) << "2 KiB chunks";
  const std::uint64_t size = bytes.size();
  const std::uint64_t footer = size - 8 - 29;
  const auto summary = load_at<std::uint64_t>(bytes, footer + 9);
  const auto summary_crc_at = footer + 9 + 16;
  const auto data_end = records_of(bytes, 8, summary, 0x0F);
  ASSERT_EQ(data_end.size(), 1U);
  const auto chunk_indexes = records_of(bytes, summary, footer, 0x08);
  const auto statistics = records_of(bytes, summary, footer, 0x0B);
  ASSERT_GE(chunk_indexes.size(), 3U);
  ASSERT_EQ(statistics.size(), 1U);

  struct Corruption {
    std::string name;
    std::string text;                   // the corrupted file
    std::string record;                 // the record a line must name
    std::optional<std::uint64_t> byte;  // and the offset, where known
  };
  std::vector<Corruption> cases;
  auto truncated = [&](std::uint64_t n) { return bytes.substr(0, n); };
  auto flipped = [&](std::uint64_t at) {
    std::string b = bytes;
    b[at] = static_cast<char>(b[at] ^ 0x5a);
    return b;
  };
  // Truncations: the end magic, the footer, the summary, a chunk, the header.
  for (const std::uint64_t n : {size - 1, size - 8, size - 20, summary + 3}) {
    cases.push_back({"truncated to " + std::to_string(n), truncated(n), "footer", std::nullopt});
  }
  cases.push_back({"truncated in a chunk", truncated(chunks[1].offset + 40), "chunk", chunks[1].offset});
  cases.push_back({"truncated in the header", truncated(30), "header", 8});
  // A byte flipped in four chunks' compressed bodies, in the summary, and
  // in the data section's CRC.
  for (std::size_t i = 0; i < 4; ++i) {
    cases.push_back({"chunk " + std::to_string(i) + " flipped", flipped(chunks[i].offset + chunks[i].length - 3),
                     "chunk", chunks[i].offset});
  }
  cases.push_back({"summary flipped", flipped(summary + 12), "footer", std::nullopt});
  cases.push_back({"data CRC flipped", flipped(data_end[0] + 9), "data end", data_end[0]});
  // Index offsets wrong, the summary CRC zeroed: a chunk index naming no
  // chunk (3), a chunk index naming no message index (2).
  for (std::size_t i = 0; i < 3; ++i) {
    std::string b = bytes;
    const std::uint64_t field = chunk_indexes[i] + 9 + 16;  // start, end, then the chunk's offset
    store_at(b, field, load_at<std::uint64_t>(b, field) + 1);
    store_at<std::uint32_t>(b, summary_crc_at, 0);
    cases.push_back({"chunk index " + std::to_string(i) + " offset", b, "chunk index", std::nullopt});
  }
  for (std::size_t i = 0; i < 2; ++i) {
    std::string b = bytes;
    const std::uint64_t field = chunk_indexes[i] + 9 + 36 + 2;  // the first message index offset
    store_at(b, field, load_at<std::uint64_t>(b, field) + 1);
    store_at<std::uint32_t>(b, summary_crc_at, 0);
    cases.push_back({"chunk index " + std::to_string(i) + " message index offset", b, "chunk index", std::nullopt});
  }
  // A message index entry naming no message (the data CRC zeroed), twice.
  for (std::size_t i = 0; i < 2; ++i) {
    std::string b = bytes;
    const std::uint64_t index = chunks[i].message_index_offsets.at(0).second;
    const std::uint64_t entry = index + 9 + 2 + 4;
    store_at(b, entry + 8, load_at<std::uint64_t>(b, entry + 8) + 1);
    store_at<std::uint32_t>(b, data_end[0] + 9, 0);
    cases.push_back({"message index " + std::to_string(i) + " offset", b, "message index", entry});
  }
  // The statistics' message count off by one (summary CRC zeroed).
  {
    std::string b = bytes;
    store_at(b, statistics[0] + 9, load_at<std::uint64_t>(b, statistics[0] + 9) + 1);
    store_at<std::uint32_t>(b, summary_crc_at, 0);
    cases.push_back({"statistics count", b, "statistics", std::nullopt});
  }
  ASSERT_EQ(cases.size(), 20U);

  const std::string copy = temp_path("shmtool_doctor_copy");
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.name);
    {
      std::ofstream out(copy, std::ios::binary | std::ios::trunc);
      out.write(c.text.data(), static_cast<std::streamsize>(c.text.size()));
    }
    const ToolRun r = shmtool({"bag", "doctor", copy});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    const std::string want =
        c.byte ? ": byte " + std::to_string(*c.byte) + ": " + c.record + ": " : ": " + c.record + ": ";
    EXPECT_NE(r.out.find(want), std::string::npos) << "wanted '" << want << "' in:\n" << r.out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind(copy + ": byte ", 0), 0U) << line;
  }
  remove_all({file, copy});
}

// record on a terminal: a live status line (messages, bytes, lost, rate),
// Enter prints each channel's figures, Ctrl-C ends it with the summary; in
// a pipe (the other tests) there is no status line.
TEST(ShmtoolRecord, RecordShowsALiveStatusLineOnATerminal) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_record_status");
  auto pub = start_tool({"pub", "/st/a", "--type", "shmbus_msgs/String", "--rate", "200", R"({"data": "s"})"}, d.name);
  wait_for_stamps(d.name, "/st/a", 1);
  ToolOnPty rec({"record", "-o", file, "/st/*"}, d.name);
  ASSERT_TRUE(rec.read_until("recording: ")) << rec.screen;
  ASSERT_TRUE(rec.read_until(" messages, ")) << rec.screen;
  ASSERT_TRUE(rec.read_until("msg/s  (Enter: per channel)")) << rec.screen;
  ASSERT_TRUE(rec.key("\n"));
  ASSERT_TRUE(rec.read_until("CHANNEL")) << rec.screen;
  ASSERT_TRUE(rec.read_until("/st/a")) << rec.screen;
  ASSERT_TRUE(rec.key("\x03"));  // Ctrl-C
  EXPECT_TRUE(exited_zero(rec.wait(20s))) << rec.screen;
  EXPECT_NE(rec.screen.find("\r\033[K  /st/a: "), std::string::npos) << "the status line erased before the summary";
  EXPECT_NE(rec.screen.find("recorded "), std::string::npos) << rec.screen;
  pub->signal(SIGTERM);
  EXPECT_TRUE(exited_zero(pub->wait(10s)));
  remove_all({file});
}

// A channel made by its subscribers at 64-byte slots, and a publisher at up
// to 1 kHz whose messages rise from 64 B to 16 MiB: the channel grows ten
// times. Lossless (overflow = block), so every message must reach each of
// two subscriber processes and the recorder once and in order (the peers
// check payloads, order and sequence accounting), the time list holds a
// stamp of every publish, and the rings left behind are removed once no
// reader needs them.
TEST(ShmtoolRecord, AChannelThatGrowsTenTimesReachesEveryReaderAndTheRecordingWhole) {
  DomainGuard d;
  const std::string file = temp_path("shmtool_grow");
  // A 16 MiB message takes longer to write than the default stall bound.
  const std::vector<std::string> env{"SHMBUS_TEST_OVERFLOW=block", "SHMBUS_TEST_BLOCK_TIMEOUT_MS=30000",
                                     "SHMBUS_TEST_MAX_MESSAGE_SIZE=64", "SHMBUS_TEST_STALL_TIMEOUT_MS=1000"};
  const std::string sizes = "64,128,512,2048,8192,32768,131072,524288,2097152,8388608,16777216";
  constexpr int kEach = 5;
  const std::string total = std::to_string(11 * kEach);
  const std::string peer = SHMBUS_TEST_PEER;
  shmbus::test::ChildProcess sub1({peer, "sub", d.name, "/grow", total, "120000"}, false, env);
  shmbus::test::ChildProcess sub2({peer, "sub", d.name, "/grow", total, "120000"}, false, env);
  auto recorder = start_tool({"record", "-o", file, "/grow"}, d.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (shmbus::introspect::ChannelReader(d.name, "/grow").view().subscribers.size() == 3) break;
    } catch (const shmbus::Error&) {
      // not created yet
    }
    std::this_thread::sleep_for(5ms);
  }
  shmbus::test::ChildProcess pub({peer, "grow-pub", d.name, "/grow", "7", std::to_string(kEach), "1000", sizes}, false,
                                 env);
  ASSERT_TRUE(exited_zero(pub.wait(120s))) << pub.output();
  const auto p = pub.fields();
  EXPECT_EQ(p.at("published"), 11 * kEach) << pub.output();
  EXPECT_EQ(p.at("dropped") + p.at("refused"), 0) << pub.output();
  EXPECT_EQ(p.at("max_message_size"), 16 << 20) << pub.output();
  for (auto* s : {&sub1, &sub2}) {
    ASSERT_TRUE(exited_zero(s->wait(120s))) << s->output();
    const auto f = s->fields();
    EXPECT_EQ(f.at("delivered"), 11 * kEach) << s->output();
    EXPECT_EQ(f.at("lost") + f.at("torn") + f.at("order") + f.at("accounting"), 0) << s->output();
  }
  {
    const shmbus::introspect::ChannelReader reader(d.name, "/grow");
    const auto v = reader.view();
    EXPECT_EQ(v.generation, 10U);
    EXPECT_EQ(v.max_message_size, 16U << 20);
    EXPECT_EQ(v.messages, static_cast<std::uint64_t>(11 * kEach)) << "sequences run on across the generations";
    shmbus::introspect::TimeListSnapshot stamps;
    reader.snapshot(stamps);
    EXPECT_EQ(stamps.total, static_cast<std::uint64_t>(11 * kEach)) << "one stamp per publish, in one time list";
    EXPECT_EQ(stamps.stamps.size(), static_cast<std::size_t>(11 * kEach));
  }
  std::this_thread::sleep_for(300ms);  // the last messages reach the file
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(60s))) << recorder->output();
  const json info = bag_info(file);
  EXPECT_EQ(count_of(info, "/grow"), static_cast<std::uint64_t>(11 * kEach)) << info.dump();
  for (const json& c : info["channels"]) EXPECT_EQ(c["lost"], 0) << c.dump();
  // The readers gone, only the newest ring is left (the channel's own
  // segment holds generation 0's).
  std::vector<std::string> rings;
  for (const auto& f : fs::directory_iterator("/dev/shm")) {
    if (!shmbus::channel_of_ring_object(d.name, f.path().filename().string()).empty()) {
      rings.push_back(f.path().filename().string());
    }
  }
  EXPECT_EQ(rings, std::vector<std::string>{shmbus::ring_object_name(d.name, "/grow", 10)});
  fs::remove(file);
}

// `shmtool pub --raw-size` on a channel it creates at the default 4096-byte
// slots: the channel grows for its first message, and every one is sent.
TEST(ShmtoolRecord, PubOfALargeRawMessageGrowsTheChannelItCreates) {
  DomainGuard d;
  // Started before the channel exists: it shows every message from the first.
  auto sub = start_tool({"echo", "/camera/image", "-n", "3", "--hex"}, d.name);
  const ToolRun pub = shmtool(
      tool_args({"pub", "/camera/image", "--raw-size", "100000", "--rate", "100", "--count", "3", "00ff"}, d.name));
  EXPECT_EQ(pub.code, 0) << pub.err;
  EXPECT_NE(pub.out.find("published 3 messages"), std::string::npos) << pub.out;
  ASSERT_TRUE(exited_zero(sub->wait(20s))) << sub->output();
  const ToolRun info = shmtool(tool_args({"info", "/camera/image", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  const json j = json::parse(info.out);
  EXPECT_EQ(j["max_message_size"], 131072) << "100,000 bytes rounded up to a power of two";
  EXPECT_EQ(j["generation"], 1);
  EXPECT_EQ(j["messages"], 3);
}
