// shmtool and the recorder on a domain where some channels travel over
// iceoryx and others over the ring: the tools run with no configuration and
// follow each channel's transport; the time list is stamped either way.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "support/roudi.hpp"
#include "tools/shmtool_harness.hpp"

using namespace shmbus::test::tool;
using shmbus::Transport;
using shmbus::test::ChildProcess;

namespace {

/// /iox/* over iceoryx, the rest on the ring, as a [[channel]] entry sets it.
shmbus::Config mixed(const std::string& domain) {
  shmbus::Config c;
  c.domain = domain;
  c.node = "iox_test";
  shmbus::ChannelRule r;
  r.pattern = "/iox/*";
  r.transport = Transport::kIceoryx;
  c.channels.push_back(r);
  return c;
}

std::vector<std::byte> payload(std::uint32_t i) {
  std::vector<std::byte> b(24);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::byte>((i * 31 + k) & 0xff);
  return b;
}

}  // namespace

// First in the program: the next test starts RouDi for the rest of it.
TEST(ShmtoolIceoryx, WithoutRoudiAnIceoryxChannelFailsWithOneLineSayingHowToStartIt) {
  if (shmbus::iceoryx::roudi_running()) GTEST_SKIP() << "a RouDi runs on this machine";
  DomainGuard d;
  const std::string config =
      (std::filesystem::temp_directory_path() / ("iox_" + std::to_string(::getpid()) + ".toml")).string();
  std::ofstream(config) << "[[channel]]\nname = \"/iox/*\"\ntransport = \"iceoryx\"\n";
  ChildProcess pub({kTool, "pub", "/iox/cmd", "--raw-size", "4", "--once", "01", "--domain", d.name}, true,
                   {"SHMBUS_CONFIG=" + config});
  const int status = pub.wait(20s);
  ASSERT_TRUE(WIFEXITED(status)) << pub.output();
  EXPECT_EQ(WEXITSTATUS(status), 3) << "not found";
  const std::string err = pub.output();  // stdout and stderr: only the error line
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("/iox/cmd uses transport \"iceoryx\" and no iceoryx RouDi runs"), std::string::npos) << err;
  EXPECT_NE(err.find("shmbusd --roudi"), std::string::npos) << err;
  // Refused before anything was made: no channel segment, no registry.
  for (const auto& f : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_EQ(f.path().filename().string().find("shmbus." + d.name + "."), std::string::npos) << f.path();
  }
  std::filesystem::remove(config);
}

TEST(ShmtoolIceoryx, ListInfoEchoAndRecordFollowEachChannelsTransport) {
  ASSERT_TRUE(shmbus::test::Roudi::ensure()) << "iox-roudi did not start";
  DomainGuard d;
  shmbus::Context ctx{mixed(d.name)};
  shmbus::Publisher iox("/iox/imu", shmbus::TypeInfo::bytes(), ctx);
  shmbus::Publisher ring("/plain/odom", shmbus::TypeInfo::bytes(), ctx);

  const ToolRun list = shmtool(tool_args({"list", "--json"}, d.name));
  ASSERT_EQ(list.code, 0) << list.err;
  std::map<std::string, std::string> transports;
  for (const json& c : json::parse(list.out)) transports[c["name"]] = c["transport"];
  EXPECT_EQ(transports["/iox/imu"], "iceoryx");
  EXPECT_EQ(transports["/plain/odom"], "shm");
  const ToolRun info = shmtool(tool_args({"info", "/iox/imu", "--json"}, d.name));
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_EQ(json::parse(info.out)["transport"], "iceoryx");

  const std::string file =
      (std::filesystem::temp_directory_path() / ("iox_" + std::to_string(::getpid()) + ".mcap")).string();
  auto recorder = start_tool({"record", "--all", "-o", file}, d.name);
  ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
  auto echo = start_tool({"echo", "/iox/imu", "--json", "-n", "5"}, d.name);
  shmbus::test::wait_for_subscribers(d.name, "/iox/imu", 2);
  shmbus::test::wait_for_subscribers(d.name, "/plain/odom", 1);
  constexpr std::uint32_t kCount = 200;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(iox.publish(payload(i)), shmbus::PublishResult::kOk);
    ASSERT_EQ(ring.publish(payload(i)), shmbus::PublishResult::kOk);
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(exited_zero(echo->wait(20s))) << echo->output();
  const auto lines = json_lines(echo->output());
  ASSERT_EQ(lines.size(), 5U) << echo->output();
  EXPECT_EQ(lines[0]["size"], 24);

  // The notify hook stamped every iceoryx publish into the time list, which
  // shmbusd and `shmtool hz` read.
  EXPECT_EQ(shmbus::introspect::ChannelReader(d.name, "/iox/imu").view().stamps, kCount);
  std::this_thread::sleep_for(300ms);
  recorder->signal(SIGINT);
  ASSERT_TRUE(exited_zero(recorder->wait(30s))) << recorder->output();

  shmbus::mcap::Reader r(file);
  std::map<std::string, std::uint16_t> ids;
  for (const auto& c : r.info().channels) ids[c.topic] = c.id;
  std::map<std::uint16_t, std::uint32_t> seen;
  r.read_messages([&](const shmbus::mcap::MessageView& m) {
    const std::uint32_t i = seen[m.channel_id]++;
    EXPECT_EQ(m.sequence, i) << "in order, none missing";
    const auto expected = payload(i);
    EXPECT_TRUE(std::equal(m.data.begin(), m.data.end(), expected.begin(), expected.end())) << "message " << i;
    return true;
  });
  EXPECT_EQ(seen[ids.at("/iox/imu")], kCount);
  EXPECT_EQ(seen[ids.at("/plain/odom")], kCount);
  std::filesystem::remove(file);
}

// The synchronizer over iceoryx channels: three shmtool publishers and the
// stage configured as a deployment would, every channel (inputs and the
// fused output) over iceoryx.
TEST(ShmtoolIceoryx, SyncFusesSetsFromIceoryxChannels) {
  ASSERT_TRUE(shmbus::test::Roudi::ensure()) << "iox-roudi did not start";
  DomainGuard d;
  const std::filesystem::path config = std::filesystem::temp_directory_path() / (d.name + "_iox_sync.toml");
  std::ofstream(config) << "[[channel]]\nname = \"/s/*\"\ntransport = \"iceoryx\"\n\n"
                           "[[sync]]\nname = \"imu_fusion\"\ninputs = [\"/s/a\", \"/s/b\", \"/s/c\"]\n"
                           "output = \"/s/fused\"\npolicy = \"bounded\"\nthreshold = \"10ms\"\n"
                           "stamp_field = \"header.stamp_ns\"\n";
  std::vector<std::unique_ptr<ChildProcess>> pubs;
  for (const char* c : {"/s/a", "/s/b", "/s/c"}) {
    pubs.push_back(start_tool(
        {"--config", config.string(), "pub", c, "--type", "shmbus_msgs/Imu", "--rate", "100", "--stamp"}, d.name));
  }
  for (const char* c : {"/s/a", "/s/b", "/s/c"}) wait_for_stamps(d.name, c, 1);
  auto sync = start_tool({"--config", config.string(), "sync", "imu_fusion"}, d.name);
  wait_for_stamps(d.name, "/s/fused", 1);
  EXPECT_EQ(shmbus::introspect::ChannelReader(d.name, "/s/a").view().transport, Transport::kIceoryx);
  EXPECT_EQ(shmbus::introspect::ChannelReader(d.name, "/s/fused").view().transport, Transport::kIceoryx);
  const ToolRun echo = shmtool(tool_args({"echo", "/s/fused", "-n", "3", "--json"}, d.name));
  ASSERT_EQ(echo.code, 0) << echo.err;
  const std::vector<json> sets = json_lines(echo.out);
  ASSERT_EQ(sets.size(), 3U) << echo.out;
  for (const json& s : sets) {
    SCOPED_TRACE(s.dump());
    ASSERT_EQ(s["data"]["count"], 3);
    EXPECT_LE(s["data"]["disparity_ns"].get<std::int64_t>(), 10'000'000);
  }
  sync->signal(SIGINT);
  EXPECT_TRUE(exited_zero(sync->wait(10s))) << sync->output();
  for (auto& p : pubs) p->signal(SIGINT);
  for (auto& p : pubs) EXPECT_TRUE(exited_zero(p->wait(10s)));
  std::filesystem::remove(config);
}
