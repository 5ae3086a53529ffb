// shmtool end to end: the real binary against real publisher and subscriber
// processes (shmtool's own pub and echo, and the test peer), real signals
// and a real pseudo-terminal for `top`.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/node.hpp"
#include "shmbus/publisher.hpp"
#include "support/test_domain.hpp"
#include "tools/shmtool_harness.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using shmbus::test::ChildProcess;
using namespace shmbus::test::tool;

namespace {
const std::string kPeer = SHMBUS_TEST_PEER;
}  // namespace

/// The JSON lines of an echo run whose stderr was merged in (its "waiting
/// for" line is not JSON).
std::vector<json> echoed(const std::string& output) {
  std::vector<json> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with('{')) out.push_back(json::parse(line));
  }
  return out;
}

/// The ticks `pub` said it skipped (0 when it kept up).
std::uint64_t skipped_ticks(const std::string& pub_output) {
  const auto at = pub_output.find(" ticks skipped");
  if (at == std::string::npos) return 0;
  const auto from = pub_output.rfind(' ', at - 1) + 1;
  return std::stoull(pub_output.substr(from, at - from));
}

// The acceptance test of `pub` and `hz`, against what really happened: an
// echo that subscribed first collects every message's own stamp. `hz` must
// report the rate, count and periods those stamps give, however the
// machine scheduled the publisher; `pub` keeps what it promises under any
// load: absolute deadlines, so never early, and a tick it fell more than a
// period behind on is skipped and counted.
TEST(ShmtoolTiming, HzReportsWhatThePublishedStampsSayAndPubIsNeverEarly) {
  DomainGuard d;
  constexpr std::uint64_t kCount = 300;
  constexpr double kPeriodNs = 5e6;  // 200 Hz
  auto echo = start_tool({"echo", "/rate", "--json", "-n", std::to_string(kCount)}, d.name, true);
  ASSERT_TRUE(echo->wait_for_output("waiting for /rate", 10s)) << echo->output();
  const ToolRun pub = shmtool(tool_args({"pub", "/rate", "--type", "shmbus_msgs/String", "--rate", "200", "--count",
                                         std::to_string(kCount), R"({"data": "tick"})"},
                                        d.name));
  ASSERT_EQ(pub.code, 0) << pub.err;
  ASSERT_TRUE(exited_zero(echo->wait(20s))) << echo->output();
  const std::vector<json> messages = echoed(echo->output());
  ASSERT_EQ(messages.size(), kCount);
  std::vector<std::int64_t> stamps;
  for (const json& m : messages) {
    ASSERT_EQ(m["sequence"].get<std::uint64_t>(), stamps.size());
    stamps.push_back(m["publish_time_ns"].get<std::int64_t>());
  }
  const auto span_ns = static_cast<double>(stamps.back() - stamps.front());
  double min_ns = 1e18;
  double max_ns = 0;
  for (std::size_t i = 1; i < stamps.size(); ++i) {
    min_ns = std::min(min_ns, static_cast<double>(stamps[i] - stamps[i - 1]));
    max_ns = std::max(max_ns, static_cast<double>(stamps[i] - stamps[i - 1]));
  }
  // pub: the last message's tick is (count - 1 + skipped) periods after the
  // first's, and no message goes before its tick. The first may itself be
  // late (by less than a period, or its tick would have been skipped).
  const std::uint64_t skipped = skipped_ticks(pub.out);
  EXPECT_GE(span_ns, (static_cast<double>(kCount - 2 + skipped)) * kPeriodNs) << pub.out;
  // hz over a window holding all of them: f = (n-1)/(Tn-T1) of those stamps.
  const ToolRun hz = shmtool(tool_args({"hz", "/rate", "--json", "-n", "1", "--window", "600"}, d.name));
  ASSERT_EQ(hz.code, 0) << hz.err;
  const json r = json::parse(hz.out);
  SCOPED_TRACE(r.dump());
  EXPECT_EQ(r["channel"], "/rate");
  EXPECT_EQ(r["window"].get<std::uint64_t>(), kCount);
  const double rate = static_cast<double>(kCount - 1) * 1e9 / span_ns;
  EXPECT_NEAR(r["rate_hz"].get<double>(), rate, rate * 1e-9);
  EXPECT_NEAR(r["min_s"].get<double>(), min_ns / 1e9, 1e-9);
  EXPECT_NEAR(r["max_s"].get<double>(), max_ns / 1e9, 1e-9);
  EXPECT_GE(r["std_dev_s"].get<double>(), 0.0);
  EXPECT_LE(r["std_dev_s"].get<double>(), (max_ns - min_ns) / 1e9);
}

// An echo started before its channel exists shows everything published
// since: sequence 0 first, and each gap is the loss it reports. 50 runs at
// 20 Hz (the first message goes out as the channel appears) and 50 at
// 1 kHz (before: sequence 0 missing and `lost 0` reported). The channel's
// stall_timeout is 10 s: with the default 2 ms, a publisher preempted
// between its claim and its commit (a busy machine) has that message
// counted lost by design, which is tested where stalls are.
TEST(Shmtool, EchoStartedBeforeItsChannelShowsEveryMessageFromTheFirst) {
  for (const auto& [rate, count] : {std::pair{"20", 3}, std::pair{"1000", 200}}) {
    for (int run = 0; run < 50; ++run) {
      SCOPED_TRACE(std::string(rate) + " Hz, run " + std::to_string(run));
      DomainGuard d;
      const std::filesystem::path config = std::filesystem::temp_directory_path() / (d.name + ".toml");
      std::ofstream(config) << "[[channel]]\nname = \"/first\"\nstall_timeout = \"10s\"\n";
      auto echo = start_tool({"--config", config.string(), "echo", "/first", "--json"}, d.name, true);
      ASSERT_TRUE(echo->wait_for_output("waiting for /first", 10s)) << echo->output();
      const ToolRun pub =
          shmtool(tool_args({"--config", config.string(), "pub", "/first", "--type", "shmbus_msgs/String", "--rate",
                             rate, "--count", std::to_string(count), R"({"data": "x"})"},
                            d.name));
      std::filesystem::remove(config);
      ASSERT_EQ(pub.code, 0) << pub.err;
      // The last message is never overwritten: once it is shown, all are.
      ASSERT_TRUE(echo->wait_for_output("\"sequence\":" + std::to_string(count - 1) + ",", 20s)) << echo->output();
      echo->signal(SIGINT);
      ASSERT_TRUE(exited_zero(echo->wait(10s))) << echo->output();
      const std::vector<json> messages = echoed(echo->output());
      ASSERT_FALSE(messages.empty());
      EXPECT_EQ(messages.front()["sequence"], 0) << "the first message published was skipped";
      std::uint64_t expected = 0;
      std::uint64_t lost = 0;
      for (const json& m : messages) {
        // Delivered in order; what is missing before a message is its lost_before.
        EXPECT_EQ(m["sequence"].get<std::uint64_t>(), expected + m["lost_before"].get<std::uint64_t>());
        lost += m["lost_before"].get<std::uint64_t>();
        expected = m["sequence"].get<std::uint64_t>() + 1;
      }
      EXPECT_EQ(messages.size() + lost, static_cast<std::size_t>(count));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// A developer's exported SHMBUS_DOMAIN must not redirect the programs the
// tests start: an entry the test gives replaces the inherited one (a
// program reads the first of two).
TEST(TestHarness, EnvironmentEntriesOfAChildReplaceInheritedOnes) {
  ASSERT_EQ(::setenv("SHMBUS_DOMAIN", "a_developers_own", 1), 0);
  ChildProcess child({"/bin/sh", "-c", "echo $SHMBUS_DOMAIN; env | grep -c '^SHMBUS_DOMAIN='"}, false,
                     {"SHMBUS_DOMAIN=the_tests"});
  EXPECT_TRUE(exited_zero(child.wait(10s)));
  ::unsetenv("SHMBUS_DOMAIN");
  EXPECT_EQ(child.output(), "the_tests\n1\n");
}

TEST(Shmtool, EchoDecodesWhatPubSent) {
  DomainGuard d;
  auto pub = start_tool({"pub", "/imu", "--type", "shmbus_msgs/Imu", "--rate", "100", "--stamp",
                         R"({"header": {"frame_id": "imu_link"}, "angular_velocity": [0.5, -1.25, 3]})"},
                        d.name);
  wait_for_stamps(d.name, "/imu", 1);
  const ToolRun echo = shmtool(tool_args({"echo", "/imu", "-n", "3", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const std::vector<json> messages = json_lines(echo.out);
  ASSERT_EQ(messages.size(), 3U) << echo.out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    SCOPED_TRACE(m.dump());
    EXPECT_EQ(m["channel"], "/imu");
    EXPECT_EQ(m["size"], 360);
    EXPECT_EQ(m["data"]["header"]["frame_id"], "imu_link");
    EXPECT_EQ(m["data"]["angular_velocity"], json::array({0.5, -1.25, 3.0}));
    EXPECT_EQ(m["data"]["linear_acceleration"], json::array({0.0, 0.0, 0.0}));
    // --stamp: header.seq counts the publishes, stamp_ns is the wall clock.
    EXPECT_EQ(m["data"]["header"]["seq"].get<std::uint64_t>(), m["sequence"].get<std::uint64_t>());
    EXPECT_NEAR(static_cast<double>(m["data"]["header"]["stamp_ns"].get<std::uint64_t>()),
                static_cast<double>(m["publish_wall_ns"].get<std::int64_t>()), 1e8);
    if (i > 0) {
      EXPECT_EQ(m["sequence"].get<std::uint64_t>(), messages[i - 1]["sequence"].get<std::uint64_t>() + 1);
    }
  }
  // --no-header: just the message; the human form is YAML-like.
  const ToolRun bare = shmtool(tool_args({"echo", "/imu", "-n", "1", "--json", "--no-header"}, d.name));
  ASSERT_EQ(bare.code, 0) << bare.err;
  EXPECT_EQ(json::parse(bare.out)["header"]["frame_id"], "imu_link");
  const ToolRun human = shmtool(tool_args({"echo", "/imu", "-n", "1"}, d.name));
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("--- /imu  seq "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("  frame_id: \"imu_link\"\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("angular_velocity: [0.5, -1.25, 3.0]\n"), std::string::npos) << human.out;
  pub->signal(SIGTERM);
  EXPECT_TRUE(exited_zero(pub->wait(10s)));
}

// ROS 2's sensor_msgs/Imu as shipped: pub starts from the definition's
// defaults (an identity orientation), --stamp fills header.stamp with the
// wall clock, and echo prints the fields as ROS 2 names them.
TEST(Shmtool, PubStampsAndEchoDecodesRos2sImu) {
  DomainGuard d;
  auto pub = start_tool({"pub", "/ros2/imu", "--type", "sensor_msgs/msg/Imu", "--rate", "100", "--stamp",
                         R"({"header": {"frame_id": "imu_link"}, "angular_velocity": {"z": 0.25}})"},
                        d.name);
  wait_for_stamps(d.name, "/ros2/imu", 1);
  const ToolRun echo = shmtool(tool_args({"echo", "/ros2/imu", "-n", "2", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const std::vector<json> messages = json_lines(echo.out);
  ASSERT_EQ(messages.size(), 2U) << echo.out;
  for (const json& m : messages) {
    SCOPED_TRACE(m.dump());
    const json& data = m["data"];
    EXPECT_EQ(data["header"]["frame_id"], "imu_link");
    EXPECT_EQ(data["orientation"], json({{"x", 0.0}, {"y", 0.0}, {"z", 0.0}, {"w", 1.0}}));
    EXPECT_EQ(data["angular_velocity"], json({{"x", 0.0}, {"y", 0.0}, {"z", 0.25}}));
    const auto stamp_ns = data["header"]["stamp"]["sec"].get<std::int64_t>() * 1'000'000'000 +
                          data["header"]["stamp"]["nanosec"].get<std::int64_t>();
    EXPECT_LT(data["header"]["stamp"]["nanosec"].get<std::int64_t>(), 1'000'000'000);
    // The wall clock of the publish that stamped the time list.
    EXPECT_NEAR(static_cast<double>(stamp_ns), static_cast<double>(m["publish_wall_ns"].get<std::int64_t>()), 1e8);
  }
  pub->signal(SIGTERM);
  EXPECT_TRUE(exited_zero(pub->wait(10s)));
}

// bw reads messages in place and reports their sizes and bytes per second;
// find lists the channels of a type, in either spelling.
TEST(Shmtool, BwMeasuresMessageSizesAndFindListsChannelsOfAType) {
  DomainGuard d;
  auto imu = start_tool({"pub", "/imu", "--type", "shmbus_msgs/Imu", "--rate", "100", "{}"}, d.name);
  auto text = start_tool({"pub", "/text", "--type", "shmbus_msgs/String", "--rate", "10", R"({"data": "x"})"}, d.name);
  wait_for_stamps(d.name, "/imu", 1);
  wait_for_stamps(d.name, "/text", 1);
  const ToolRun bw =
      shmtool(tool_args({"bw", "/imu", "--json", "-n", "2", "--window", "20", "--interval", "0.5"}, d.name));
  ASSERT_EQ(bw.code, 0) << bw.err;
  const std::vector<json> reports = json_lines(bw.out);
  ASSERT_EQ(reports.size(), 2U) << bw.out;
  const json& r = reports.back();
  EXPECT_EQ(r["channel"], "/imu");
  ASSERT_GE(r["messages"].get<int>(), 2) << r.dump();
  EXPECT_LE(r["messages"].get<int>(), 20) << "the window";
  EXPECT_EQ(r["min_bytes"], 360);
  EXPECT_EQ(r["max_bytes"], 360);
  EXPECT_EQ(r["mean_bytes"], 360.0);
  EXPECT_GT(r["bytes_per_s"].get<double>(), 0.0);
  EXPECT_EQ(r["lost"], 0);
  const ToolRun none = shmtool(tool_args({"bw", "/nothing", "--no-wait"}, d.name));
  EXPECT_EQ(none.code, 3) << none.err;

  auto found = [&](const std::string& type) {
    const ToolRun f = shmtool(tool_args({"find", type, "--json"}, d.name));
    EXPECT_EQ(f.code, 0) << f.err;
    return f.code == 0 ? json::parse(f.out) : json();
  };
  EXPECT_EQ(found("shmbus_msgs/Imu"), json::array({"/imu"}));
  EXPECT_EQ(found("shmbus_msgs/msg/Imu"), json::array({"/imu"}));
  EXPECT_EQ(found("shmbus_msgs/String"), json::array({"/text"}));
  EXPECT_EQ(found("nothing/Here"), json::array());
  const ToolRun plain = shmtool(tool_args({"find", "shmbus_msgs/String"}, d.name));
  EXPECT_EQ(plain.out, "/text\n");
  for (auto* p : {imu.get(), text.get()}) {
    p->signal(SIGTERM);
    EXPECT_TRUE(exited_zero(p->wait(10s)));
  }
}

TEST(Shmtool, EchoPrintsRawChannelsInHex) {
  DomainGuard d;
  const ToolRun pub = shmtool(tool_args({"pub", "/raw", "--raw-size", "6", "--once", "c0ffee"}, d.name));
  ASSERT_EQ(pub.code, 0) << pub.err;
  const ToolRun echo = shmtool(tool_args({"echo", "/raw", "--history", "1", "-n", "1", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const json m = json::parse(echo.out);
  EXPECT_EQ(m["data"], "c0ffee000000");
  EXPECT_EQ(m["sequence"], 0);
  const ToolRun dump = shmtool(tool_args({"echo", "/raw", "--history", "1", "-n", "1", "--no-header"}, d.name));
  EXPECT_EQ(dump.out, "00000000  c0 ff ee 00 00 00                                ......\n");
}

TEST(Shmtool, ListAndInfoShowPublishersAndSubscribers) {
  DomainGuard d;
  // Two raw publishers and one subscriber on /a (the test peer), shmtool's
  // own publisher on /b.
  ChildProcess pub1({kPeer, "pub", d.name, "/a", "1", "0", "64", "2000"});
  ChildProcess pub2({kPeer, "pub", d.name, "/a", "2", "0", "64", "2000"});
  ChildProcess sub({kPeer, "sub", d.name, "/a", "0", "60000"});
  auto pub_b = start_tool({"pub", "/b", "--type", "shmbus_msgs/String", "--rate", "20", R"({"data": "b"})"}, d.name);
  shmbus::test::wait_for_subscribers(d.name, "/a", 1);
  wait_for_stamps(d.name, "/a", 100);
  wait_for_stamps(d.name, "/b", 5);
  // Both publishers registered (each stamps as it publishes).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (shmbus::introspect::ChannelReader(d.name, "/a").view().publishers.size() < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }

  const ToolRun list = shmtool(tool_args({"list", "--json"}, d.name));
  const double b_rate = stamped_rate(d.name, "/b");  // what /b really carried, a moment after
  ASSERT_EQ(list.code, 0) << list.err;
  const json channels = json::parse(list.out);
  ASSERT_EQ(channels.size(), 2U) << list.out;
  const json& a = channels[0];
  const json& b = channels[1];
  EXPECT_EQ(a["name"], "/a");
  EXPECT_EQ(a["type"], "shmbus/Bytes");
  EXPECT_EQ(a["transport"], "shm");
  EXPECT_EQ(a["publishers"], 2);
  EXPECT_EQ(a["subscribers"], 1);
  EXPECT_GT(a["rate_hz"].get<double>(), 10.0);
  EXPECT_GE(a["messages"].get<std::uint64_t>(), 100U);
  EXPECT_EQ(a["level"], "unmonitored");
  EXPECT_TRUE(a.contains("lost"));
  EXPECT_EQ(b["name"], "/b");
  EXPECT_EQ(b["type"], "shmbus_msgs/String");
  EXPECT_EQ(b["publishers"], 1);
  EXPECT_EQ(b["subscribers"], 0);
  EXPECT_GT(b_rate, 0.0);
  EXPECT_NEAR(b["rate_hz"].get<double>(), b_rate, 0.1 * b_rate);

  const ToolRun info = shmtool(tool_args({"info", "/a", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  const json i = json::parse(info.out);
  std::vector<int> pub_pids;
  for (const json& p : i["publishers"]) {
    pub_pids.push_back(p["pid"]);
    EXPECT_EQ(p["node"], "peer");
    EXPECT_TRUE(p["alive"].get<bool>());
    EXPECT_GT(p["published"].get<std::uint64_t>(), 0U);
  }
  std::sort(pub_pids.begin(), pub_pids.end());
  std::vector<int> expected{pub1.pid(), pub2.pid()};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(pub_pids, expected);
  ASSERT_EQ(i["subscribers"].size(), 1U);
  EXPECT_EQ(i["subscribers"][0]["pid"], sub.pid());
  EXPECT_EQ(i["capacity"], 16);
  EXPECT_EQ(i["max_message_size"], 4096);
  EXPECT_EQ(i["time_list_capacity"], 1024);
  EXPECT_EQ(i["type_hash"], "0000000000000000");

  // The human form names the same processes.
  const ToolRun human = shmtool(tool_args({"info", "/b"}, d.name));
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("publishers (1):"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(std::to_string(pub_b->pid()) + "  shmtool  alive"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("subscribers (0):"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("  string<256> data\n"), std::string::npos) << human.out;

  // stats: period statistics of /b (50 ms) and the subscriber of /a.
  const ToolRun stats = shmtool(tool_args({"stats", "--json"}, d.name));
  const double b_period = 1.0 / stamped_rate(d.name, "/b");
  ASSERT_EQ(stats.code, 0) << stats.err;
  const json st = json::parse(stats.out);
  ASSERT_EQ(st.size(), 2U);
  EXPECT_NEAR(st[1]["period"]["mean_s"].get<double>(), b_period, 0.1 * b_period);
  EXPECT_GE(st[1]["period"]["count"].get<std::uint64_t>(), 4U);
  ASSERT_EQ(st[0]["subscribers"].size(), 1U);
  EXPECT_EQ(st[0]["subscribers"][0]["pid"], sub.pid());
  EXPECT_GT(st[0]["subscribers"][0]["received"].get<std::uint64_t>(), 0U);

  pub_b->signal(SIGINT);
  EXPECT_TRUE(exited_zero(pub_b->wait(10s)));
  sub.signal(SIGTERM);
  pub1.signal(SIGTERM);
  pub2.signal(SIGTERM);
  sub.wait(10s);
  pub1.wait(10s);
  pub2.wait(10s);
}

// Ctrl-C ends echo, hz, pub and top cleanly: exit 0 and no endpoint left.
TEST(Shmtool, CtrlCLeavesNoEndpointBehind) {
  DomainGuard d;
  auto pub = start_tool({"pub", "/c", "--type", "shmbus_msgs/String", "--rate", "50"}, d.name);
  wait_for_stamps(d.name, "/c", 1);
  auto echo = start_tool({"echo", "/c"}, d.name);
  auto hz = start_tool({"hz", "/c"}, d.name);
  auto top = start_tool({"top", "--interval", "0.2"}, d.name);
  shmbus::test::wait_for_subscribers(d.name, "/c", 1);
  ASSERT_TRUE(echo->wait_for_output("--- /c", 10s));
  ASSERT_TRUE(hz->wait_for_output("/c: ", 10s));
  ASSERT_TRUE(top->wait_for_output("/c ", 10s));
  for (auto* p : {echo.get(), hz.get(), top.get(), pub.get()}) p->signal(SIGINT);
  for (auto* p : {echo.get(), hz.get(), top.get(), pub.get()}) EXPECT_TRUE(exited_zero(p->wait(10s)));
  const shmbus::introspect::ChannelView v = shmbus::introspect::ChannelReader(d.name, "/c").view();
  EXPECT_TRUE(v.publishers.empty());
  EXPECT_TRUE(v.subscribers.empty());
  EXPECT_GT(v.received, 0U);
}

// `top` on a real terminal: a full-screen table, and `q` quits.
TEST(Shmtool, TopRefreshesOnATerminalAndQuitsOnQ) {
  DomainGuard d;
  const ToolRun pub = shmtool(tool_args({"pub", "/t", "--type", "shmbus_msgs/String", "--once"}, d.name));
  ASSERT_EQ(pub.code, 0) << pub.err;
  ToolOnPty top({"top", "--interval", "0.2"}, d.name);
  EXPECT_TRUE(top.read_until("(r rate, l level, n name, q quit)")) << top.screen;
  EXPECT_TRUE(top.read_until("/t ")) << top.screen;
  EXPECT_NE(top.screen.find("\033[H\033[2J"), std::string::npos);  // redraws in place
  ASSERT_TRUE(top.key("l"));
  EXPECT_TRUE(top.read_until("sorted by level")) << top.screen;
  ASSERT_TRUE(top.key("q"));
  EXPECT_TRUE(exited_zero(top.wait(5s))) << top.screen;
}

TEST(Shmtool, AlertsUseTheConfiguredThresholds) {
  DomainGuard d;
  const std::filesystem::path config = std::filesystem::temp_directory_path() / (d.name + ".toml");
  std::ofstream(config) << "[[channel]]\nname = \"/mon/*\"\nthresholds_hz = [90.0, 110.0, 400.0]\n";
  auto slow = start_tool(
      {"--config", config.string(), "pub", "/mon/slow", "--type", "shmbus_msgs/String", "--rate", "40"}, d.name);
  auto ok = start_tool({"--config", config.string(), "pub", "/mon/ok", "--type", "shmbus_msgs/String", "--rate", "100"},
                       d.name);
  auto other = start_tool({"pub", "/other", "--type", "shmbus_msgs/String", "--rate", "10"}, d.name);
  wait_for_stamps(d.name, "/mon/ok", 1);
  wait_for_stamps(d.name, "/mon/slow", 1);
  wait_for_stamps(d.name, "/other", 1);
  std::this_thread::sleep_for(1200ms);
  const ToolRun alerts = shmtool(tool_args({"--config", config.string(), "alerts", "--json"}, d.name));
  const double slow_rate = stamped_rate(d.name, "/mon/slow");
  ASSERT_EQ(alerts.code, 0) << alerts.err;
  const json a = json::parse(alerts.out);
  ASSERT_EQ(a.size(), 2U) << a.dump();      // /other has no thresholds
  EXPECT_EQ(a[0]["channel"], "/mon/slow");  // worst first
  EXPECT_EQ(a[0]["level"], "critical");
  EXPECT_NEAR(a[0]["rate_hz"].get<double>(), slow_rate, 0.1 * slow_rate);
  EXPECT_EQ(a[0]["thresholds_hz"], json::array({90.0, 110.0, 400.0}));
  EXPECT_EQ(a[0]["window_s"], 1.0);
  EXPECT_EQ(a[1]["channel"], "/mon/ok");
  EXPECT_EQ(a[1]["level"], "nominal");
  const ToolRun human = shmtool(tool_args({"--config", config.string(), "alerts"}, d.name));
  EXPECT_NE(human.out.find("shmbusd is not running"), std::string::npos) << human.out;
  const ToolRun list = shmtool(tool_args({"--config", config.string(), "list", "--json"}, d.name));
  const json l = json::parse(list.out);
  ASSERT_EQ(l.size(), 3U);
  EXPECT_EQ(l[0]["name"], "/mon/ok");
  EXPECT_EQ(l[0]["level"], "nominal");
  EXPECT_EQ(l[1]["level"], "critical");
  EXPECT_EQ(l[2]["level"], "unmonitored");
  for (auto* p : {slow.get(), ok.get(), other.get()}) p->signal(SIGINT);
  for (auto* p : {slow.get(), ok.get(), other.get()}) EXPECT_TRUE(exited_zero(p->wait(10s)));
  std::filesystem::remove(config);
}

TEST(Shmtool, CleanRemovesADeadDomainAndNothingOfALiveOne) {
  DomainGuard dead;
  DomainGuard live;
  {
    ChildProcess doomed({kPeer, "pub", dead.name, "/gone", "1", "0", "64", "1000"});
    wait_for_stamps(dead.name, "/gone", 10);
    doomed.signal(SIGKILL);
    doomed.wait(10s);
  }
  ChildProcess running({kPeer, "pub", live.name, "/alive", "1", "0", "64", "1000"});
  wait_for_stamps(live.name, "/alive", 10);
  const auto exists = [](const std::string& object) { return std::filesystem::exists("/dev/shm/" + object); };
  const std::string gone = "shmbus." + dead.name + ".c.gone";
  const std::string gone_registry = "shmbus." + dead.name + ".registry";
  const std::string alive = "shmbus." + live.name + ".c.alive";
  ASSERT_TRUE(exists(gone) && exists(gone_registry));

  const ToolRun dry = shmtool(tool_args({"clean", "--dry-run"}, dead.name));
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would remove /dev/shm/" + gone + "\n"), std::string::npos) << dry.out;
  EXPECT_TRUE(exists(gone) && exists(gone_registry));

  const ToolRun clean = shmtool(tool_args({"clean", "--json"}, dead.name));
  ASSERT_EQ(clean.code, 0) << clean.err;
  const json r = json::parse(clean.out);
  EXPECT_EQ(r["removed"].size(), 2U) << r.dump();
  EXPECT_TRUE(r["kept"].empty());
  EXPECT_FALSE(exists(gone));
  EXPECT_FALSE(exists(gone_registry));

  const ToolRun keep = shmtool(tool_args({"clean"}, live.name));
  ASSERT_EQ(keep.code, 0) << keep.err;
  EXPECT_NE(keep.out.find("kept /dev/shm/" + alive + " (in use by a live process)"), std::string::npos) << keep.out;
  EXPECT_NE(keep.out.find("kept /dev/shm/shmbus." + live.name +
                          ".registry (the registry: 1 channel of the domain "
                          "remains)"),
            std::string::npos)
      << keep.out;
  EXPECT_NE(keep.out.find("nothing to remove"), std::string::npos) << keep.out;
  EXPECT_TRUE(exists(alive));
  EXPECT_TRUE(exists("shmbus." + live.name + ".registry"));
  running.signal(SIGTERM);
  running.wait(10s);
}

namespace {

/// `shmtool list` and `shmtool list --json` of a domain: its text and its
/// rows (both must exit 0).
struct Listing {
  std::string text;
  json rows;
};
Listing list_domain(const std::string& domain) {
  const ToolRun text = shmtool(tool_args({"list"}, domain));
  EXPECT_EQ(text.code, 0) << text.err;
  const ToolRun rows = shmtool(tool_args({"list", "--json"}, domain));
  EXPECT_EQ(rows.code, 0) << rows.err;
  return {text.out, rows.code == 0 ? json::parse(rows.out) : json::array()};
}

}  // namespace

// A registry whose names were overwritten with a terminal escape and bytes
// that are not UTF-8. Before: list printed them raw (the terminal ran the
// escape) and list --json failed. Now: escaped, flagged as unreadable.
TEST(Shmtool, NamesFromSharedMemoryAreEscapedNeverPrintedRaw) {
  DomainGuard d;
  ChildProcess healthy({kPeer, "pub", d.name, "/ok", "1", "0", "64", "1000"});
  ChildProcess victim({kPeer, "pub", d.name, "/victim", "1", "0", "64", "1000"});
  wait_for_stamps(d.name, "/ok", 10);
  wait_for_stamps(d.name, "/victim", 10);
  {
    const std::string object = "/dev/shm/shmbus." + d.name + ".registry";
    std::ifstream in(object, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = bytes.find("/victim");
    ASSERT_NE(at, std::string::npos);
    const int fd = ::open(object.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const std::string evil("\x1b[2J\xff\xfe\n", 7);
    ASSERT_EQ(::pwrite(fd, evil.data(), evil.size(), static_cast<off_t>(at)), 7);
    ::close(fd);
  }
  const auto [list, rows] = list_domain(d.name);
  EXPECT_EQ(list.find('\x1b'), std::string::npos) << list;
  EXPECT_EQ(list.find('\xff'), std::string::npos) << list;
  EXPECT_NE(list.find("\\x1b[2J\\xff\\xfe\\x0a"), std::string::npos) << list;
  EXPECT_NE(list.find("UNREADABLE"), std::string::npos) << list;
  EXPECT_NE(list.find("/ok"), std::string::npos) << list;
  ASSERT_EQ(rows.size(), 2U) << rows.dump();
  EXPECT_EQ(rows[1]["name"], "\\x1b[2J\\xff\\xfe\\x0a");
  EXPECT_TRUE(rows[1].contains("error"));
  healthy.signal(SIGTERM);
  victim.signal(SIGTERM);
  healthy.wait(10s);
  victim.wait(10s);
}

// A channel whose stored schema nests 40 types deep (a replayed recording
// can carry any schema). Before: echo crashed in the layout's recursion
// (at ~50,000 types) and list said nothing. Now: list flags it, echo
// refuses it with one line.
TEST(Shmtool, AChannelWithARefusedSchemaIsFlaggedAndRefused) {
  DomainGuard d;
  shmbus::Config config;
  config.domain = d.name;
  shmbus::Context context(config);
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "MSG: deep/T" + std::to_string(i) + "\n";
    text += i + 1 < 40 ? "deep/T" + std::to_string(i + 1) + " next\n" : "uint8 leaf\n";
  }
  shmbus::Publisher deep("/deep", shmbus::TypeInfo{"deep/T0", 0x1234, text}, context);
  const std::vector<std::byte> payload(1, std::byte{1});
  ASSERT_EQ(deep.publish(payload), shmbus::PublishResult::kOk);
  const auto [list, rows] = list_domain(d.name);
  EXPECT_NE(list.find("warning: /deep: its stored schema is refused: "), std::string::npos) << list;
  EXPECT_NE(list.find("nests messages more than 32 deep"), std::string::npos) << list;
  ASSERT_EQ(rows.size(), 1U) << rows.dump();
  EXPECT_NE(rows[0]["schema_error"].get<std::string>().find("more than 32 deep"), std::string::npos);
  const ToolRun echo = shmtool(tool_args({"echo", "/deep", "--count", "1"}, d.name));
  EXPECT_EQ(echo.code, 2) << echo.err;
  EXPECT_EQ(std::count(echo.err.begin(), echo.err.end(), '\n'), 1) << echo.err;
  EXPECT_NE(echo.err.find("more than 32 deep"), std::string::npos) << echo.err;
}

// A corrupt channel segment (max_message_size of all ones, which the
// stride computation used to truncate) next to a healthy one. Before: list,
// info and pub died with SIGSEGV. Now: list shows it as a row with a
// warning, info and pub refuse it with one line and exit 1, and the healthy
// channel is still listed and measured.
TEST(Shmtool, CorruptChannelIsShownAndRefusedNeverFollowed) {
  DomainGuard d;
  ChildProcess healthy({kPeer, "pub", d.name, "/ok", "1", "0", "64", "1000"});
  ChildProcess victim({kPeer, "pub", d.name, "/bad", "1", "0", "64", "1000"});
  wait_for_stamps(d.name, "/ok", 10);
  wait_for_stamps(d.name, "/bad", 10);
  victim.signal(SIGKILL);
  victim.wait(10s);
  {
    const std::string object = "/dev/shm/shmbus." + d.name + ".c.bad";
    const int fd = ::open(object.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    const std::uint32_t huge = 0xFFFFFFFFU;
    ASSERT_EQ(::pwrite(fd, &huge, sizeof(huge), 300), 4);  // ChannelHeader::max_message_size
    ::close(fd);
  }
  const auto [list, rows] = list_domain(d.name);
  EXPECT_NE(list.find("/ok"), std::string::npos) << list;
  EXPECT_NE(list.find("UNREADABLE"), std::string::npos) << list;
  EXPECT_NE(list.find("warning: /bad: shared-memory segment"), std::string::npos) << list;
  EXPECT_NE(list.find("has max_message_size 4294967295"), std::string::npos) << list;
  ASSERT_EQ(rows.size(), 2U) << rows.dump();
  EXPECT_EQ(rows[0]["name"], "/ok");
  EXPECT_EQ(rows[1]["name"], "/bad");
  EXPECT_TRUE(rows[1].contains("error"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"info", "/bad"},
        std::vector<std::string>{"pub", "/bad", "--raw-size", "1", "--once", "00"}}) {
    const ToolRun r = shmtool(tool_args(args, d.name));
    EXPECT_EQ(r.code, 1) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("has max_message_size 4294967295"), std::string::npos) << r.err;
  }
  healthy.signal(SIGTERM);
  healthy.wait(10s);
}

// Processes start in any order: echo, hz and sync started before their
// channels wait for them, saying so once, then work as usual (before: exit 3,
// so a sync stage started before its sensors died).
TEST(Shmtool, EchoHzAndSyncStartedBeforeTheirChannelsWaitForThem) {
  DomainGuard d;
  auto echo = start_tool({"echo", "/late", "-n", "2", "--json"}, d.name, true);
  auto hz = start_tool({"hz", "/late", "-n", "1", "--interval", "0.3", "--json"}, d.name, true);
  auto sync = start_tool({"sync", "--inputs", "/late,/late2", "--threshold", "50ms", "--output", "/fused", "-n", "1"},
                         d.name, true);
  for (auto* tool : {echo.get(), hz.get(), sync.get()}) {
    EXPECT_TRUE(tool->wait_for_output("waiting for /late to appear in domain \"" + d.name + "\"", 20s))
        << tool->poll_output();
  }
  std::this_thread::sleep_for(200ms);
  ChildProcess late({kPeer, "pub", d.name, "/late", "1", "0", "64", "2000"});
  ChildProcess late2({kPeer, "pub", d.name, "/late2", "2", "0", "64", "2000"});
  for (auto* tool : {echo.get(), hz.get(), sync.get()}) {
    const int status = tool->wait(30s);
    EXPECT_FALSE(tool->timed_out()) << tool->output();
    EXPECT_TRUE(exited_zero(status)) << tool->output();
  }
  const std::string& echoed = echo->output();
  EXPECT_EQ(std::count(echoed.begin(), echoed.end(), '{'), 2) << echoed;
  EXPECT_EQ(echoed.find("waiting for"), echoed.rfind("waiting for")) << "said once: " << echoed;
  EXPECT_NE(hz->output().find("rate_hz"), std::string::npos) << hz->output();
  EXPECT_NE(sync->output().find("aligning /late, /late2"), std::string::npos) << sync->output();
  late.signal(SIGTERM);
  late2.signal(SIGTERM);
  late.wait(10s);
  late2.wait(10s);
}

// Bad input: one line on stderr that names the thing, and the exit code.
TEST(Shmtool, BadInputExitCodesAndOneLineErrors) {
  DomainGuard d;
  const ToolRun made = shmtool(tool_args({"pub", "/known", "--type", "shmbus_msgs/Imu", "--once"}, d.name));
  ASSERT_EQ(made.code, 0) << made.err;
  const std::vector<Refusal> cases{
      {{"info", "/missing"}, 3, "channel /missing not found"},
      {{"echo", "/missing", "--no-wait"}, 3, "channel /missing not found"},
      {{"hz", "/missing", "--no-wait"}, 3, "channel /missing not found"},
      {{"stats", "/missing"}, 3, "channel /missing not found"},
      {{"pub", "/known", R"({"angular_velocity": [1, "fast", 3]})"}, 2, "angular_velocity[1]"},
      {{"pub", "/known", R"({"header": {"sequence": 1}})"}, 2, "header: unknown field 'sequence'"},
      {{"pub", "/known", "{not json"}, 2, "DATA is not JSON"},
      {{"pub", "/known", "--rate", "0"}, 2, "--rate 0 is not a rate"},
      {{"pub", "/known", "--rate", "-5"}, 2, "--rate -5 is not a rate"},
      {{"pub", "/known", "--type", "shmbus_msgs/String", "--once"}, 2, "you asked for shmbus_msgs/String"},
      {{"pub", "/new", "--once"}, 2, "give its type with --type"},
      {{"pub", "/new", "--type", "no_pkg/Nothing", "--once"}, 2, "unknown message type 'no_pkg/Nothing'"},
      {{"pub", "/text", "--stamp", "--type", "shmbus_msgs/String"},
       2,
       "--stamp needs a field 'header' of std_msgs/Header or shmbus_msgs/Header"},
      {{"pub", "/known", "--raw-size", "8", "--once"}, 2, "has type shmbus_msgs/Imu"},
      {{"pub", "/r", "--raw-size", "2", "0a0b0c", "--once"}, 2, "DATA has 3 bytes, more than --raw-size 2"},
      {{"pub", "/known", "--type", "shmbus_msgs/Imu", "--raw-size", "8"}, 2, "excludes"},
      {{"echo", "/known", "--json", "--hex"}, 2, "excludes"},
      {{"hz", "/known", "--window", "0"}, 2, "--window: must be a number of seconds > 0"},
      {{"info", "bad name"}, 2, "channel name \"bad name\""},
      {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {{"info"}, 2, "CHANNEL is required"},
      {{"--config", "/nonexistent/shmbus.toml", "list"}, 2, "/nonexistent/shmbus.toml"},
  };
  expect_refused(cases, d.name);
  // Nothing was published by the refused runs.
  EXPECT_EQ(shmbus::introspect::ChannelReader(d.name, "/known").view().messages, 1U);
}

// The synchronizer stage end to end: three publisher processes, `shmtool
// sync` aligning them, fused sets arriving on the output channel.
TEST(Shmtool, SyncPublishesFusedSetsFromRealPublishers) {
  DomainGuard d;
  std::vector<std::unique_ptr<ChildProcess>> pubs;
  for (const char* c : {"/s/a", "/s/b", "/s/c"}) {
    pubs.push_back(start_tool({"pub", c, "--type", "shmbus_msgs/Imu", "--rate", "100", "--stamp"}, d.name));
  }
  for (const char* c : {"/s/a", "/s/b", "/s/c"}) wait_for_stamps(d.name, c, 1);
  // Publishers at 100 Hz with unrelated phases: any three latest stamps lie
  // within one period, so a 10 ms bound always finds sets.
  // The stage comes from the configuration ([[sync]]), as it would in a deployment.
  const std::filesystem::path config = std::filesystem::temp_directory_path() / (d.name + "_sync.toml");
  std::ofstream(config) << "[[sync]]\nname = \"imu_fusion\"\ninputs = [\"/s/a\", \"/s/b\", \"/s/c\"]\n"
                           "output = \"/s/fused\"\npolicy = \"bounded\"\nthreshold = \"10ms\"\n"
                           "stamp_field = \"header.stamp_ns\"\n";
  auto sync = start_tool({"--config", config.string(), "sync", "imu_fusion"}, d.name);
  wait_for_stamps(d.name, "/s/fused", 1);
  const ToolRun echo = shmtool(tool_args({"echo", "/s/fused", "-n", "3", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const std::vector<json> sets = json_lines(echo.out);
  ASSERT_EQ(sets.size(), 3U) << echo.out;
  std::map<std::string, std::uint64_t> last_sequence;
  for (const json& s : sets) {
    SCOPED_TRACE(s.dump());
    const json& m = s["data"];
    EXPECT_EQ(m["policy"], "bounded");
    EXPECT_EQ(m["threshold_ns"], 10'000'000);
    ASSERT_EQ(m["count"], 3);
    std::int64_t lo = INT64_MAX;
    std::int64_t hi = INT64_MIN;
    for (std::size_t i = 0; i < 3; ++i) {
      const json& member = m["members"][i];
      EXPECT_EQ(member["channel"], std::vector<std::string>({"/s/a", "/s/b", "/s/c"})[i]);
      const auto seq = member["sequence"].get<std::uint64_t>();
      const std::string channel = member["channel"];
      if (last_sequence.count(channel)) {
        EXPECT_GT(seq, last_sequence[channel]);
      }
      last_sequence[channel] = seq;
      lo = std::min(lo, member["stamp_ns"].get<std::int64_t>());
      hi = std::max(hi, member["stamp_ns"].get<std::int64_t>());
    }
    EXPECT_EQ(m["disparity_ns"].get<std::int64_t>(), hi - lo);
    EXPECT_LE(hi - lo, 10'000'000);
  }
  // The stage shows up as each input's subscriber, with its discards.
  const ToolRun info = shmtool(tool_args({"info", "/s/b", "--json"}, d.name));
  const json i = json::parse(info.out);
  ASSERT_EQ(i["subscribers"].size(), 1U);
  EXPECT_EQ(i["subscribers"][0]["node"], "shmtool-sync");
  EXPECT_EQ(i["subscribers"][0]["pid"], sync->pid());
  EXPECT_TRUE(i["subscribers"][0].contains("discarded"));
  sync->signal(SIGINT);
  ASSERT_TRUE(exited_zero(sync->wait(10s))) << sync->output();
  EXPECT_NE(sync->output().find("published "), std::string::npos) << sync->output();
  EXPECT_TRUE(shmbus::introspect::ChannelReader(d.name, "/s/a").view().subscribers.empty());
  for (auto& p : pubs) p->signal(SIGINT);
  for (auto& p : pubs) EXPECT_TRUE(exited_zero(p->wait(10s)));
  std::filesystem::remove(config);
}

TEST(Shmtool, SyncRefusesBadParametersWithOneLine) {
  DomainGuard d;
  for (const char* c : {"/x", "/y"}) {
    const ToolRun made = shmtool(tool_args({"pub", c, "--type", "shmbus_msgs/String", "--once"}, d.name));
    ASSERT_EQ(made.code, 0) << made.err;
  }
  const std::vector<Refusal> cases{
      {{"sync", "--inputs", "/x,/y", "--threshold", "0ms", "--output", "/f"},
       2,
       "--threshold 0ms is not a duration > 0"},
      {{"sync", "--inputs", "/x,/y", "--threshold", "-3ms", "--output", "/f"}, 2, "--threshold -3ms"},
      {{"sync", "--inputs", "/x,/y", "--output", "/f"}, 2, "the bounded policy needs --threshold"},
      {{"sync", "--inputs", "/x", "--threshold", "5ms", "--output", "/f"}, 2, "at least 2 input channels, got 1"},
      {{"sync", "--inputs", "/x,/y", "--threshold", "5ms", "--output", "/f", "--stamp-field", "header.stamp_ns"},
       2,
       "input /x has type shmbus_msgs/String, which has no field 'header.stamp_ns'"},
      {{"sync", "--inputs", "/x,/y", "--threshold", "5ms", "--output", "/f", "--policy", "fastest"},
       2,
       "--policy fastest is unknown"},
      {{"sync", "--inputs", "/x,/missing", "--threshold", "5ms", "--output", "/f", "--no-wait"},
       3,
       "channel /missing not found"},
      {{"sync", "--inputs", "/x,/y", "--threshold", "5ms", "--output", "/x"}, 2, "--output /x is also an input"},
  };
  // A [[sync]] entry: its values are used (the stamp field is checked), an
  // unknown name and a bad entry are refused.
  const std::filesystem::path good = std::filesystem::temp_directory_path() / (d.name + "_good.toml");
  std::ofstream(good) << "[[sync]]\nname = \"xy\"\ninputs = [\"/x\", \"/y\"]\noutput = \"/f\"\n"
                         "threshold = \"5ms\"\nstamp_field = \"header.stamp_ns\"\n";
  const std::filesystem::path bad = std::filesystem::temp_directory_path() / (d.name + "_bad.toml");
  std::ofstream(bad) << "[[sync]]\nname = \"one\"\ninputs = [\"/x\"]\noutput = \"/f\"\n";
  std::vector<Refusal> all = cases;
  all.push_back(
      {{"--config", good.string(), "sync", "xy"}, 2, "input /x has type shmbus_msgs/String, which has no field"});
  all.push_back({{"--config", good.string(), "sync", "nope"}, 2, "no [[sync]] entry named nope"});
  all.push_back({{"--config", bad.string(), "sync", "one"}, 2, ":1:1: sync one needs inputs"});
  all.push_back({{"sync", "--threshold", "5ms"}, 2, "give --inputs and --output, or the name of a [[sync]] entry"});
  expect_refused(all, d.name);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
  // No stage stayed subscribed after a refusal.
  EXPECT_TRUE(shmbus::introspect::ChannelReader(d.name, "/x").view().subscribers.empty());
}

// A node's callback exceptions are counted on its subscription's entry and
// shown by `shmtool info` beside received and lost, under the node's name.
TEST(Shmtool, InfoShowsANodesCallbackErrors) {
  DomainGuard d;
  shmbus::Config config;
  config.domain = d.name;
  shmbus::Context ctx{config};
  shmbus::Node node("flaky_node", ctx, shmbus::NodeOptions{.handle_signals = false});
  int calls = 0;
  node.subscribe_raw("/flaky", shmbus::TypeInfo::bytes(), [&](std::span<const std::byte>, const shmbus::MessageInfo&) {
    if (++calls <= 3) throw std::runtime_error("cannot parse");
  });
  shmbus::Publisher pub("/flaky", shmbus::TypeInfo::bytes(), ctx);
  const std::uint64_t x = 7;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(pub.publish(&x, sizeof x), shmbus::PublishResult::kOk);
  for (int i = 0; i < 100 && calls < 5; ++i) node.spin_once(100ms);
  ASSERT_EQ(calls, 5);
  const ToolRun info = shmtool(tool_args({"info", "/flaky", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  const json i = json::parse(info.out);
  ASSERT_EQ(i["subscribers"].size(), 1U);
  EXPECT_EQ(i["subscribers"][0]["node"], "flaky_node");
  EXPECT_EQ(i["subscribers"][0]["received"], 5);
  EXPECT_EQ(i["subscribers"][0]["errors"], 3);
  const ToolRun text = shmtool(tool_args({"info", "/flaky"}, d.name));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("ERRORS"), std::string::npos) << text.out;
}

// overflow = block: info names the policy and its bound, each publisher's
// waits and timeouts, each subscriber's unread messages.
TEST(Shmtool, InfoShowsABlockChannelsWaitsTimeoutsAndUnread) {
  DomainGuard d;
  shmbus::Config config;
  config.domain = d.name;
  config.defaults.capacity = 4;
  config.defaults.overflow = shmbus::Overflow::kBlock;
  config.defaults.block_timeout = 30ms;
  shmbus::Context ctx{config};
  shmbus::Publisher pub("/log", shmbus::TypeInfo::bytes(), ctx);
  shmbus::Subscriber idle("/log", shmbus::TypeInfo::bytes(), ctx);
  const std::uint64_t x = 7;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pub.publish(&x, sizeof x), shmbus::PublishResult::kOk);
  const ToolRun before = shmtool(tool_args({"info", "/log", "--json"}, d.name));
  ASSERT_EQ(before.code, 0) << before.err;
  const json b = json::parse(before.out);
  EXPECT_EQ(b["overflow"], "block");
  EXPECT_DOUBLE_EQ(b["block_timeout_s"].get<double>(), 0.03);
  EXPECT_EQ(b["subscribers"][0]["unread"], 3);
  EXPECT_EQ(b["publishers"][0]["block_timeouts"], 0);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(pub.publish(&x, sizeof x), shmbus::PublishResult::kOk);  // the 5th waits 30 ms, then overtakes
  const ToolRun after = shmtool(tool_args({"info", "/log", "--json"}, d.name));
  const json a = json::parse(after.out);
  EXPECT_EQ(a["publishers"][0]["block_timeouts"], 1);
  EXPECT_GE(a["publishers"][0]["blocked_s"].get<double>(), 0.03);
  EXPECT_EQ(a["subscribers"][0]["unread"], 6);
  const ToolRun text = shmtool(tool_args({"info", "/log"}, d.name));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("block (publishers wait up to 30ms for the slowest subscriber)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("TIMEOUTS"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("UNREAD"), std::string::npos) << text.out;
}

// Provenance end to end: a plain thread makes /mid from /src, a Node
// callback makes /out from /mid; echo names the node, both levels of
// inputs and the processing time, info the modules on each side.
TEST(Shmtool, EchoShowsProvenanceAndInfoTheModules) {
  DomainGuard d;
  shmbus::Config config;
  config.domain = d.name;
  config.node = "sensor";
  shmbus::Context ctx{config};
  shmbus::Publisher src("/src", shmbus::TypeInfo::bytes(), ctx);
  shmbus::Subscriber src_in("/src", shmbus::TypeInfo::bytes(), ctx);
  shmbus::Publisher mid("/mid", shmbus::TypeInfo::bytes(), ctx, shmbus::PublisherOptions{.node = "filter"});
  shmbus::Node node("fuser", ctx, shmbus::NodeOptions{.handle_signals = false});
  shmbus::Publisher out("/out", shmbus::TypeInfo::bytes(), ctx, shmbus::PublisherOptions{.node = "fuser"});
  int calls = 0;
  node.subscribe_raw("/mid", shmbus::TypeInfo::bytes(), [&](std::span<const std::byte> p, const shmbus::MessageInfo&) {
    EXPECT_EQ(out.publish(p), shmbus::PublishResult::kOk);
    ++calls;
  });
  const std::uint64_t x = 7;
  EXPECT_EQ(src.publish(&x, sizeof x), shmbus::PublishResult::kOk);
  EXPECT_EQ(src.publish(&x, sizeof x), shmbus::PublishResult::kOk);
  std::vector<std::byte> buf(64);
  ASSERT_TRUE(src_in.take(buf).ok());
  ASSERT_TRUE(src_in.take(buf).ok());
  EXPECT_EQ(mid.publish(&x, sizeof x), shmbus::PublishResult::kOk);  // cites /src #0 and #1
  for (int i = 0; i < 100 && calls < 1; ++i) node.spin_once(100ms);
  ASSERT_EQ(calls, 1);

  const ToolRun echo = shmtool(tool_args({"echo", "/out", "--history", "1", "-n", "1", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const json m = json::parse(echo.out);
  EXPECT_EQ(m["node"], "fuser");
  ASSERT_EQ(m["inputs"].size(), 1U) << m.dump();
  EXPECT_EQ(m["inputs"][0]["channel"], "/mid");
  EXPECT_EQ(m["inputs"][0]["sequence"], 0);
  ASSERT_EQ(m["inputs"][0]["inputs"].size(), 2U) << m.dump();
  EXPECT_EQ(m["inputs"][0]["inputs"][1]["channel"], "/src");
  EXPECT_EQ(m["inputs"][0]["inputs"][1]["sequence"], 1);
  EXPECT_GT(m["processing_ns"].get<std::int64_t>(), 0);
  EXPECT_EQ(m["inputs_cut"], 0);
  const ToolRun human = shmtool(tool_args({"echo", "/out", "--history", "1", "-n", "1"}, d.name));
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find(" (fuser)\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("inputs: /mid#0 (/src#0, /src#1)  processing "), std::string::npos) << human.out;

  const ToolRun info = shmtool(tool_args({"info", "/mid", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  const json i = json::parse(info.out);
  EXPECT_EQ(i["writer_modules"], json::array({"filter"}));
  EXPECT_EQ(i["reader_modules"], json::array({"fuser"}));
  EXPECT_EQ(i["publishers"][0]["inputs_cut"], 0);
  const ToolRun text = shmtool(tool_args({"info", "/mid"}, d.name));
  EXPECT_NE(text.out.find("written by     filter"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("INPUTS CUT"), std::string::npos) << text.out;
}
