#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include "shmbus/config.hpp"
#include "shmbus/error.hpp"

using namespace shmbus;
using namespace std::chrono_literals;

namespace {

std::string config_error(std::string_view text) {
  try {
    Config::parse(text, "test.toml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ConfigTest, EmptyTextGivesTheDocumentedDefaults) {
  const Config c = Config::parse("", "empty.toml");
  EXPECT_EQ(c.domain, "default");
  EXPECT_EQ(c.defaults.capacity, 64U);
  EXPECT_EQ(c.defaults.max_message_size, 4096U);
  EXPECT_EQ(c.defaults.time_list_capacity, 1024U);
  EXPECT_EQ(c.defaults.window, 1s);
  EXPECT_EQ(c.defaults.transport, Transport::kShm);
  EXPECT_EQ(c.defaults.overflow, Overflow::kOverwrite);
  EXPECT_FALSE(c.defaults.overflow_set);
  EXPECT_EQ(c.defaults.block_timeout, 1s);
  EXPECT_EQ(c.mode, 0660U);
  EXPECT_FALSE(c.channel("/x").thresholds_hz.has_value());
}

TEST(ConfigTest, DesignExampleParsesAndGlobsApplyKeyByKeyLastMatchWins) {
  const Config c = Config::parse(R"(
domain = "robot1"
node = "camera_driver"
mode = "0640"

[defaults]
transport = "shm"
capacity = 64
max_message_size = 4096
time_list_capacity = 1024
window = "1s"

[[channel]]
name = "/camera/*"
max_message_size = 6291456
thresholds_hz = [25.0, 35.0, 60.0]

[[channel]]
name = "/camera/front"
capacity = 8
window = "500ms"

[monitor]
scan_period = "100ms"
debounce_scans = 3
metrics_listen = "off"
statistics_period = "1s"
webhook = "http://127.0.0.1:9093/api/v2/alerts"
)",
                                 "design.toml");
  EXPECT_EQ(c.domain, "robot1");
  EXPECT_EQ(c.node, "camera_driver");
  EXPECT_EQ(c.mode, 0640U);
  const ChannelSettings front = c.channel("/camera/front");
  EXPECT_EQ(front.capacity, 8U);                // from the last entry
  EXPECT_EQ(front.max_message_size, 6291456U);  // from the glob, kept
  EXPECT_EQ(front.window, 500ms);
  ASSERT_TRUE(front.thresholds_hz.has_value());
  EXPECT_DOUBLE_EQ((*front.thresholds_hz)[1], 35.0);
  const ChannelSettings rear = c.channel("/camera/rear");
  EXPECT_EQ(rear.capacity, 64U);
  EXPECT_EQ(rear.max_message_size, 6291456U);
  const ChannelSettings imu = c.channel("/imu");
  EXPECT_EQ(imu.max_message_size, 4096U);
  EXPECT_FALSE(imu.thresholds_hz.has_value());
}

// A service client's own response channel (NAME/_response/<slot>) must fit
// every answer the server may send: it takes the service's response channel
// settings, then any rule naming it.
TEST(ConfigTest, AClientResponseChannelIsConfiguredAsItsServicesResponseChannel) {
  const Config c = Config::parse(R"(
[[channel]]
name = "/map/get/*"
thresholds_hz = [1.0, 2.0, 50.0]

[[channel]]
name = "/map/get/_response"
max_message_size = 1048576
capacity = 8

[[channel]]
name = "/map/get/_response/7"
capacity = 4

[[channel]]
name = "/map/get/_response/9"
thresholds_hz = [0.5, 1.0, 10.0]
)",
                                 "service.toml");
  // The service's rate thresholds are on its channels, not on one client's.
  ASSERT_TRUE(c.channel("/map/get/_request").thresholds_hz.has_value());
  ASSERT_TRUE(c.channel("/map/get/_response").thresholds_hz.has_value());
  EXPECT_FALSE(c.channel("/map/get/_response/3").thresholds_hz.has_value());
  ASSERT_TRUE(c.channel("/map/get/_response/9").thresholds_hz.has_value());  // named alone
  EXPECT_DOUBLE_EQ((*c.channel("/map/get/_response/9").thresholds_hz)[2], 10.0);
  const ChannelSettings one = c.channel("/map/get/_response/3");
  EXPECT_EQ(one.max_message_size, 1048576U);
  EXPECT_EQ(one.capacity, 8U);
  const ChannelSettings seven = c.channel("/map/get/_response/7");
  EXPECT_EQ(seven.max_message_size, 1048576U);
  EXPECT_EQ(seven.capacity, 4U);  // the rule that names it comes after
  // Not a client response channel: a third segment that is not a slot.
  EXPECT_EQ(c.channel("/map/get/_response/x").max_message_size, 4096U);
  EXPECT_EQ(c.channel("/map/get/_response/123").max_message_size, 4096U);
  EXPECT_EQ(c.channel("/map/get/3").max_message_size, 4096U);
}

TEST(ConfigTest, DurationsParseEveryUnitAndRefuseOthers) {
  EXPECT_EQ(parse_duration("40ns"), 40ns);
  EXPECT_EQ(parse_duration("250us"), 250us);
  EXPECT_EQ(parse_duration("100ms"), 100ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("2min"), 120s);
  EXPECT_FALSE(parse_duration("10").has_value());
  EXPECT_FALSE(parse_duration("ms").has_value());
  EXPECT_FALSE(parse_duration("5h").has_value());
  EXPECT_FALSE(parse_duration("-1s").has_value());
  EXPECT_EQ(format_duration(1500us), "1500us");
  EXPECT_EQ(format_duration(2s), "2s");
}

TEST(ConfigTest, OverflowAndBlockTimeoutApplyPerChannel) {
  const Config c = Config::parse(R"(
[defaults]
block_timeout = "250ms"

[[channel]]
name = "/log/*"
overflow = "block"

[[channel]]
name = "/log/debug"
overflow = "overwrite"
)",
                                 "t.toml");
  const ChannelSettings log = c.channel("/log/events");
  EXPECT_EQ(log.overflow, Overflow::kBlock);
  EXPECT_TRUE(log.overflow_set);
  EXPECT_EQ(log.block_timeout, 250ms);
  EXPECT_EQ(c.channel("/log/debug").overflow, Overflow::kOverwrite);
  EXPECT_TRUE(c.channel("/log/debug").overflow_set);
  EXPECT_EQ(c.channel("/camera").overflow, Overflow::kOverwrite);
  EXPECT_FALSE(c.channel("/camera").overflow_set);
}

TEST(ConfigTest, SyntaxErrorNamesFileLineAndColumn) {
  const std::string e = config_error("domain = \"a\"\ncapacity = = 3\n");
  EXPECT_EQ(e.rfind("test.toml:2:", 0), 0U) << e;
}

TEST(ConfigTest, BadValuesAreRefusedAtTheirPosition) {
  EXPECT_EQ(config_error("[defaults]\ncapacity = 100\n"),
            "test.toml:2:12: capacity = 100 must be a power of two from 2 to 1048576");
  EXPECT_EQ(config_error("[defaults]\nwindow = \"fast\"\n"),
            "test.toml:2:10: window = \"fast\" is not a positive duration; write a number and a unit (ns, us, "
            "ms, s, min), e.g. \"100ms\"");
  EXPECT_EQ(config_error("[[channel]]\nname = \"/a\"\nthresholds_hz = [30.0, 20.0, 60.0]\n"),
            "test.toml:3:17: thresholds_hz must satisfy f1 < f2 < f3");
  EXPECT_EQ(config_error("[defaults]\ntransport = \"udp\"\n"),
            "test.toml:2:13: transport = \"udp\" is unknown; use \"shm\" or \"iceoryx\"");
  EXPECT_EQ(config_error("[defaults]\noverflow = \"drop\"\n"),
            "test.toml:2:12: overflow = \"drop\" is unknown; use \"overwrite\" or \"block\"");
  EXPECT_EQ(config_error("[defaults]\nblock_timeout = \"0ms\"\n"),
            "test.toml:2:17: block_timeout = \"0ms\" is not a positive duration; write a number and a unit (ns, us, "
            "ms, s, min), e.g. \"100ms\"");
  EXPECT_EQ(config_error("colour = 1\n"), "test.toml:1:1: unknown key colour");
  EXPECT_EQ(config_error("[[channel]]\ncapacity = 4\n"),
            "test.toml:1:1: a [[channel]] entry needs name = \"/exact/name\" or a glob");
  EXPECT_EQ(config_error("domain = \"no spaces\"\n"),
            "test.toml:1:10: domain \"no spaces\" is not valid; use 1 to 32 letters, digits, '_' or '-'");
  // The programs' sections are theirs to read (tests/unit/test_config_sections.cpp).
  EXPECT_EQ(config_error("[monitor]\ndebounce_scans = 0\n"), "no error");
  EXPECT_EQ(config_error("[monitr]\ndebounce_scans = 3\n"), "test.toml:1:2: unknown key monitr");
}

TEST(ConfigTest, MissingFileIsAConfigErrorNamingThePath) {
  try {
    Config::load_file("/nonexistent/shmbus.toml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_NE(std::string{e.what()}.find("/nonexistent/shmbus.toml:1:1: cannot read"), std::string::npos);
  }
}

TEST(ConfigTest, ADirectoryOrAnOversizedFileIsAConfigErrorNamingThePath) {
  // A directory opens as an empty stream: before, an empty configuration.
  const auto error_of_file = [](const std::string& path) {
    try {
      Config::load_file(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  const std::string dir = ::testing::TempDir();
  EXPECT_NE(error_of_file(dir).find(dir + ":1:1: not a regular file (a directory)"), std::string::npos);
  EXPECT_NE(error_of_file("/dev/zero").find("not a regular file (a special file)"), std::string::npos);
  const std::string big = dir + "/shmbus_big_" + std::to_string(::getpid()) + ".toml";
  std::ofstream(big) << std::string(Config::kMaxConfigBytes + 1, '#');
  EXPECT_NE(error_of_file(big).find("larger than 1 MiB"), std::string::npos);
  std::remove(big.c_str());
}

TEST(ConfigTest, EnvironmentSelectsFileAndDomainOverridesIt) {
  const std::string path = ::testing::TempDir() + "/shmbus_env_test.toml";
  std::ofstream(path) << "domain = \"fromfile\"\nnode = \"n1\"\n";
  ::setenv("SHMBUS_CONFIG", path.c_str(), 1);
  ::unsetenv("SHMBUS_DOMAIN");
  EXPECT_EQ(Config::from_environment().domain, "fromfile");
  ::setenv("SHMBUS_DOMAIN", "fromenv", 1);
  const Config c = Config::from_environment();
  EXPECT_EQ(c.domain, "fromenv");
  EXPECT_EQ(c.node, "n1");
  ::setenv("SHMBUS_DOMAIN", "bad domain", 1);
  EXPECT_THROW(Config::from_environment(), Error);
  ::unsetenv("SHMBUS_DOMAIN");
  ::unsetenv("SHMBUS_CONFIG");
}

TEST(ConfigTest, ShippedExampleFileIsValid) {
  const Config c = Config::load_file(SHMBUS_SOURCE_DIR "/config/shmbus.toml");
  EXPECT_EQ(c.node, "camera_driver");
  EXPECT_EQ(c.channel("/camera/front").capacity, 8U);
  EXPECT_EQ(c.channel("/imu").capacity, 256U);
  EXPECT_EQ(c.defaults.stall_timeout, std::chrono::milliseconds(2));
}

TEST(ConfigTest, GroupMustBeAGroupOfThisSystem) {
  const Config c = Config::parse("group = \"root\"\nmode = \"0640\"\n", "g.toml");
  EXPECT_EQ(c.access().group, "root");
  EXPECT_EQ(c.access().mode, 0640U);
  try {
    (void)Config::parse("group = \"no_such_group_xyz\"\n", "g.toml");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_NE(std::string{e.what()}.find("g.toml:1:9: group = \"no_such_group_xyz\" is not a group of this system"),
              std::string::npos)
        << e.what();
  }
}
