// The configuration as programs load it (ConfigFile: the file, then
// SHMBUS_DOMAIN, then --domain) and each program's own section, read by
// its library: [monitor], [bridge], [[gateway]], [[sync]].
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "shmbus/bridge/bridge.hpp"
#include "shmbus/config_file.hpp"
#include "shmbus/error.hpp"
#include "shmbus/gateway/gateway.hpp"
#include "shmbus/monitor/settings.hpp"
#include "shmbus/sync/stage_settings.hpp"

using namespace shmbus;
using namespace std::chrono_literals;

namespace {

ConfigFile file_of(std::string_view text) { return ConfigFile::parse(text, "test.toml"); }

/// The one line a section's reader refuses `text` with.
template <typename Read>
std::string error_of(std::string_view text, Read read) {
  try {
    (void)read(file_of(text));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ConfigFileTest, TheFileThenShmbusDomainThenTheDomainOption) {
  const std::string path = ::testing::TempDir() + "/shmbus_config_file_" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path) << "domain = \"fromfile\"\n[monitor]\nscan_period = \"50ms\"\n";
  ::unsetenv("SHMBUS_DOMAIN");
  ::setenv("SHMBUS_CONFIG", path.c_str(), 1);
  EXPECT_EQ(ConfigFile::load({}).config().domain, "fromfile");
  EXPECT_EQ(monitor::load_monitor_config({}).monitor.scan_period, 50ms);  // the same file's section
  ::setenv("SHMBUS_DOMAIN", "fromenv", 1);
  EXPECT_EQ(ConfigFile::load({}).config().domain, "fromenv");
  EXPECT_EQ(ConfigFile::load({.path = "", .domain = "fromoption"}).config().domain, "fromoption");
  ::unsetenv("SHMBUS_CONFIG");
  EXPECT_EQ(ConfigFile::load({.path = path, .domain = std::nullopt}).config().domain, "fromenv");
  EXPECT_EQ(ConfigFile::load({}).section("monitor"), nullptr);  // the embedded default has none
  ::setenv("SHMBUS_DOMAIN", "bad domain", 1);
  EXPECT_THROW((void)ConfigFile::load({}), Error);
  ::unsetenv("SHMBUS_DOMAIN");
  try {
    (void)ConfigFile::load({.path = "", .domain = "bad domain"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()).rfind("--domain: ", 0), 0U) << e.what();
  }
  std::remove(path.c_str());
}

TEST(ConfigSectionTest, MonitorSectionAndItsDefaults) {
  const monitor::MonitorSettings d = monitor::read_monitor_settings(file_of(""));
  EXPECT_EQ(d.scan_period, 100ms);
  EXPECT_EQ(d.debounce_scans, 3U);
  EXPECT_EQ(d.metrics_listen, "127.0.0.1:9464");
  const monitor::MonitorSettings m = monitor::read_monitor_settings(file_of(R"(
[monitor]
scan_period = "50ms"
debounce_scans = 5
metrics_listen = "off"
statistics_period = "2s"
webhook = "http://127.0.0.1:9093/api/v2/alerts"
)"));
  EXPECT_EQ(m.scan_period, 50ms);
  EXPECT_EQ(m.debounce_scans, 5U);
  EXPECT_EQ(m.metrics_listen, "off");
  EXPECT_EQ(m.statistics_period, 2s);
  EXPECT_EQ(m.webhook, "http://127.0.0.1:9093/api/v2/alerts");
  const auto read = [](const ConfigFile& f) { return monitor::read_monitor_settings(f); };
  EXPECT_EQ(error_of("[monitor]\ndebounce_scans = 0\n", read),
            "test.toml:2:18: debounce_scans = 0 must be from 1 to 1000");
  EXPECT_EQ(error_of("[monitor]\nscan = 1\n", read), "test.toml:2:1: unknown key monitor.scan");
  EXPECT_EQ(error_of("monitor = 1\n", read), "test.toml:1:11: monitor must be a table ([monitor])");
}

TEST(ConfigSectionTest, BridgeTableSetsTheBridgeAndRefusesWhatItCannotUse) {
  const bridge::BridgeSettings d = bridge::read_bridge_settings(file_of(""));
  EXPECT_EQ(d.listen, "127.0.0.1:9090");  // loopback unless told otherwise
  EXPECT_EQ(d.send_queue, 1024U);
  const bridge::BridgeSettings b = bridge::read_bridge_settings(file_of(R"(
[bridge]
listen = "0.0.0.0:9091"
allow = ["/robot/*", "/cmd"]
deny = ["/robot/secret"]
token_file = "/etc/shmbus/token"
tls_cert = "/etc/shmbus/bridge.crt"
tls_key = "/etc/shmbus/bridge.key"
max_clients = 4
max_frame_bytes = 65536
send_queue = 16
max_ops_per_second = 100
service_timeout = "250ms"
)"));
  EXPECT_EQ(b.listen, "0.0.0.0:9091");
  EXPECT_EQ(b.allow, (std::vector<std::string>{"/robot/*", "/cmd"}));
  EXPECT_EQ(b.deny, std::vector<std::string>{"/robot/secret"});
  EXPECT_EQ(b.token_file, "/etc/shmbus/token");
  EXPECT_EQ(b.tls_cert, "/etc/shmbus/bridge.crt");
  EXPECT_EQ(b.tls_key, "/etc/shmbus/bridge.key");
  EXPECT_EQ(b.max_clients, 4U);
  EXPECT_EQ(b.max_frame_bytes, 65536U);
  EXPECT_EQ(b.send_queue, 16U);
  EXPECT_EQ(b.max_ops_per_second, 100U);
  EXPECT_EQ(b.service_timeout, 250ms);
  const auto read = [](const ConfigFile& f) { return bridge::read_bridge_settings(f); };
  EXPECT_EQ(error_of("[bridge]\nmax_clients = 0\n", read), "test.toml:2:15: max_clients = 0 must be from 1 to 100000");
  EXPECT_EQ(error_of("[bridge]\nallow = \"/a\"\n", read), "test.toml:2:9: allow must be an array of strings");
  EXPECT_EQ(error_of("[bridge]\nport = 1\n", read), "test.toml:2:1: unknown key bridge.port");
}

TEST(ConfigSectionTest, GatewayEntriesKeepTheirOrderAndQosAndRefuseWhatTheyCannotUse) {
  EXPECT_TRUE(gateway::read_gateway_rules(file_of("")).empty());
  const std::vector<gateway::GatewayRule> g = gateway::read_gateway_rules(ConfigFile::parse(R"(
[[gateway]]
export = ["/robot/*"]
import = ["/base/*", "/cmd"]

[[gateway]]
export = ["/camera/*"]
reliability = "best_effort"
history_depth = 2
partition = "fleet"
)",
                                                                                            "gw.toml"));
  ASSERT_EQ(g.size(), 2U);
  EXPECT_EQ(g[0].exports, std::vector<std::string>{"/robot/*"});
  EXPECT_EQ(g[0].imports, (std::vector<std::string>{"/base/*", "/cmd"}));
  EXPECT_EQ(g[0].reliability, gateway::GatewayRule::Reliability::kReliable);  // the default
  EXPECT_EQ(g[0].history_depth, 16U);
  EXPECT_EQ(g[0].where, "gw.toml:2:1");
  EXPECT_EQ(g[1].reliability, gateway::GatewayRule::Reliability::kBestEffort);
  EXPECT_EQ(g[1].history_depth, 2U);
  EXPECT_EQ(g[1].partition, "fleet");
  const auto read = [](const ConfigFile& f) { return gateway::read_gateway_rules(f); };
  EXPECT_EQ(error_of("[[gateway]]\nexport = [\"/a\"]\nreliability = \"sure\"\n", read),
            "test.toml:3:15: reliability = \"sure\" must be \"reliable\" or \"best_effort\"");
  EXPECT_EQ(error_of("[[gateway]]\nreliability = \"reliable\"\n", read),
            "test.toml:1:1: a [[gateway]] entry carries nothing: give export = [\"/glob\"] and/or import = "
            "[\"/glob\"]");
  EXPECT_EQ(error_of("[[gateway]]\nexport = [\"/a\"]\nqos = 1\n", read), "test.toml:3:1: unknown key gateway.qos");
  EXPECT_EQ(error_of("[gateway]\nexport = [\"/a\"]\n", read),
            "test.toml:1:1: gateway must be an array of tables ([[gateway]])");
}

TEST(ConfigSectionTest, SyncStagesAreReadInOrderAndRefusedWithTheirPosition) {
  const auto read = [](const ConfigFile& f) { return sync::read_stage_settings(f.reader(), f.section("sync")); };
  EXPECT_TRUE(read(file_of("")).empty());
  const std::vector<sync::StageSettings> s = read(file_of(R"(
[[sync]]
name = "fuse"
inputs = ["/a", "/b"]
output = "/ab"
policy = "approximate"
threshold = "5ms"
queue_size = 8
)"));
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].name, "fuse");
  EXPECT_EQ(s[0].inputs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(s[0].output, "/ab");
  EXPECT_EQ(s[0].policy, "approximate");
  EXPECT_EQ(s[0].threshold, 5ms);
  EXPECT_EQ(s[0].queue_size, 8U);
  EXPECT_EQ(s[0].where, "test.toml:2:1");
  EXPECT_EQ(error_of("[[sync]]\nname = \"x\"\ninputs = [\"/a\"]\noutput = \"/o\"\n", read),
            "test.toml:1:1: sync x needs inputs = [\"/a\", \"/b\", ...], at least 2");
  EXPECT_EQ(error_of("[[sync]]\nname = \"x\"\npolicy = \"best\"\n", read),
            "test.toml:3:10: policy = \"best\" is unknown; use bounded, exact, approximate or latest");
  EXPECT_EQ(error_of("[[sync]]\nname = \"x\"\ninputs = [\"/a\", \"/b\"]\noutput = \"/o\"\n[[sync]]\nname = \"x\"\n"
                     "inputs = [\"/a\", \"/b\"]\noutput = \"/o\"\n",
                     read),
            "test.toml:5:1: sync x is defined twice (first at test.toml:1:1)");
}
