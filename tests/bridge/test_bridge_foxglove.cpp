// shmbus-bridge to Foxglove clients beyond JSON: channels in ROS 2 CDR
// decoded by Foxglove's own reader, exactly; raw channels; the encodings a
// bridge offers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bridge/bridge_harness.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/schema.hpp"
#include "shmbus_msgs/Clock.hpp"
#include "shmbus_msgs/Header.hpp"
#include "shmbus_msgs/Image.hpp"
#include "support/test_domain.hpp"
#include "test_msgs/AllKinds.hpp"
#include "test_msgs/WithTail.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using namespace shmbus::test::bridge;
using shmbus::test::ChildProcess;

template <typename T>
shmbus::TypeInfo type_of() {
  return shmbus::TypeInfo{T::kTypeName, T::kTypeHash, T::kSchema};
}

/// Every field kind at its extremes, numbered by `u32` and `header.seq`.
std::vector<std::byte> all_kinds(std::uint32_t i) {
  test_msgs::AllKinds m{};
  m.flag = (i % 2) == 1;
  m.i8 = -128;
  m.u8 = 255;
  m.i16 = -32768;
  m.u16 = 65535;
  m.i32 = std::numeric_limits<std::int32_t>::min();
  m.u32 = i;
  m.i64 = std::numeric_limits<std::int64_t>::min() + i;
  m.u64 = (std::uint64_t{1} << 53) + 1 + i;  // past what a JavaScript number holds exactly
  m.f32 = std::numeric_limits<float>::infinity();
  m.f64 = 0.1 * i;
  m.name.assign("exactly8");
  m.triple = {1, 2, static_cast<std::uint16_t>(i)};
  m.tags[0].assign("ab");
  m.tags[1].assign("wxyz");
  m.point = {1.5F, -2.5F};
  m.points[1] = {std::numeric_limits<float>::quiet_NaN(), 3.0F};
  m.header.stamp_ns = std::numeric_limits<std::uint64_t>::max() - i;
  m.header.seq = i;
  m.header.frame_id.assign("base_link");
  m.flags = {true, false, true};
  std::vector<std::byte> bytes(sizeof(m));
  std::memcpy(bytes.data(), &m, sizeof(m));
  return bytes;
}

/// A trailing array of messages, of i % 4 elements.
std::vector<std::byte> with_tail(std::uint32_t i) {
  test_msgs::WithTail m;
  m.kind = static_cast<std::uint8_t>(i);
  for (std::uint32_t k = 0; k < i % 4; ++k) m.points.push_back({static_cast<float>(k), -0.5F * static_cast<float>(i)});
  return shmbus::msg::to_bytes(m);
}

/// A 3x2 rgb8 image whose pixels count from i.
std::vector<std::byte> image(std::uint32_t i) {
  shmbus_msgs::Image m;
  m.header.seq = i;
  m.header.stamp_ns = 1'700'000'000'123'456'789ULL + i;
  m.header.frame_id.assign("camera");
  m.height = 2;
  m.width = 3;
  m.encoding.assign("rgb8");
  m.step = 9;
  for (std::uint32_t k = 0; k < 3 * 2 * 3; ++k) m.data.push_back(static_cast<std::uint8_t>(i + k));
  return shmbus::msg::to_bytes(m);
}

/// The message whose bytes `feeder` sent as number `i`, as shmbus's exact
/// JSON (64-bit integers as strings).
json expected(Feeder& feeder, const shmbus::schema::Schema* schema, std::size_t i) {
  const std::vector<std::byte> bytes = feeder.sent(i);
  if (schema != nullptr) return schema->decode(bytes, true);
  json data = json::array();
  for (const std::byte b : bytes) data.push_back(static_cast<unsigned>(b));
  return json{{"data", data}};
}

TEST(BridgeFoxgloveTest, TypedAndRawChannelsInCdrDecodeExactlyWithFoxglovesReader) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  shmbus::Publisher kinds_pub("/kinds", type_of<test_msgs::AllKinds>(), d.context());
  shmbus::Publisher tail_pub("/tail", type_of<test_msgs::WithTail>(), d.context());
  shmbus::Publisher image_pub("/camera/image", type_of<shmbus_msgs::Image>(), d.context());
  shmbus::Publisher raw_pub("/camera/raw", shmbus::TypeInfo::bytes(), d.context());
  BridgeProcess bridge(domain);  // cdr is the default
  ASSERT_NE(bridge.port, 0);

  Feeder kinds(kinds_pub, all_kinds);
  Feeder tail(tail_pub, with_tail);
  Feeder images(image_pub, image);
  Feeder raw(raw_pub, [](std::uint32_t i) {
    std::vector<std::byte> b(5 + i % 7);
    for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::byte>(i * 7 + k);
    return b;
  });
  const json r = run_node({kJs + "/bridge_foxglove_cdr.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port), "12",
                           "/kinds", "/tail", "/camera/image", "/camera/raw"});
  kinds.stop();
  tail.stop();
  images.stop();
  raw.stop();
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array()) << r.dump();

  // One channel per topic, CDR with its ROS 2 .msg text; bytes without a
  // schema as a message of one uint8[].
  std::map<std::string, json> channels;
  for (const json& c : r["channels"]) channels[c["topic"]] = c;
  ASSERT_EQ(channels.size(), 4U) << r["channels"].dump();
  EXPECT_EQ(channels["/camera/image"]["schemaName"], "shmbus_msgs/msg/Image");
  EXPECT_EQ(channels["/camera/image"]["schemaEncoding"], "ros2msg");
  const std::string image_schema = channels["/camera/image"]["schema"];
  EXPECT_NE(image_schema.find("string<=16 encoding\n"), std::string::npos) << image_schema;
  EXPECT_NE(image_schema.find("\nMSG: shmbus_msgs/Header\n"), std::string::npos) << image_schema;
  EXPECT_EQ(channels["/camera/raw"]["schemaName"], "shmbus/msg/Bytes");
  EXPECT_EQ(channels["/camera/raw"]["schema"], "uint8[] data\n");

  const auto kinds_schema = shmbus::schema::Schema::from_canonical(test_msgs::AllKinds::kSchema);
  const auto tail_schema = shmbus::schema::Schema::from_canonical(test_msgs::WithTail::kSchema);
  const auto img_schema = shmbus::schema::Schema::from_canonical(shmbus_msgs::Image::kSchema);
  // Each message as Foxglove decoded it equals the one published with its
  // number, field for field.
  std::size_t checked = 0;
  for (const json& m : r["messages"]["/kinds"]) {
    const std::size_t i = m["u32"];
    EXPECT_EQ(m, expected(kinds, &kinds_schema, i)) << i;
    EXPECT_EQ(m["u64"], std::to_string((std::uint64_t{1} << 53) + 1 + i));
    ++checked;
  }
  for (const json& m : r["messages"]["/camera/image"]) {
    const std::size_t i = m["header"]["seq"];
    EXPECT_EQ(m, expected(images, &img_schema, i)) << i;
    ++checked;
  }
  std::size_t tails_seen = 0;
  for (const json& m : r["messages"]["/tail"]) {
    // `kind` is the number mod 256.
    bool found = false;
    for (std::size_t i = m["kind"]; !found && i < 65536; i += 256) found = m == expected(tail, &tail_schema, i);
    EXPECT_TRUE(found) << m.dump();
    tails_seen += m["points"].size();
    ++checked;
  }
  EXPECT_GT(tails_seen, 0U) << "every trailing array was empty";
  std::size_t raw_seen = 0;
  for (const json& m : r["messages"]["/camera/raw"]) {
    bool found = false;
    for (std::size_t i = 0; !found && i < 65536; ++i) found = m == expected(raw, nullptr, i);
    EXPECT_TRUE(found) << m.dump();
    ++raw_seen;
  }
  EXPECT_EQ(checked, 36U);
  EXPECT_EQ(raw_seen, 12U);
}

TEST(BridgeFoxgloveTest, BothEncodingsOfferEachChannelTwiceAndJsonAloneKeepsTheJsonSchema) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  shmbus::Publisher image_pub("/camera/image", type_of<shmbus_msgs::Image>(), d.context());
  shmbus::Publisher raw_pub("/camera/raw", shmbus::TypeInfo::bytes(), d.context());
  for (const auto& [mode, encodings] : std::vector<std::pair<std::string, std::multiset<std::string>>>{
           {"both", {"cdr", "cdr", "json", "json"}}, {"json", {"json", "json"}}}) {
    BridgeProcess bridge(domain, {"--foxglove-encoding", mode});
    RawClient c(bridge.port, "foxglove.websocket.v1");
    std::multiset<std::string> got;
    std::set<std::uint32_t> ids;
    while (got.size() < encodings.size()) {
      const auto advertised = c.read_until("\"advertise\"");
      ASSERT_TRUE(advertised) << mode;
      for (const json& ch : (*advertised)["channels"]) {
        got.insert(ch["encoding"].get<std::string>());
        ids.insert(ch["id"].get<std::uint32_t>());
        if (ch["encoding"] == "json" && ch["topic"] == "/camera/raw") {
          EXPECT_EQ(ch["schemaName"], "shmbus/Bytes");
          EXPECT_EQ(json::parse(ch["schema"].get<std::string>())["properties"]["data"]["type"], "array");
        }
      }
    }
    EXPECT_EQ(got, encodings) << mode;
    EXPECT_EQ(ids.size(), encodings.size()) << mode << ": channel ids are unique";
  }
}

TEST(BridgeFoxgloveTest, ClientsCallServicesFollowTheGraphAndTheReplaysClock) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  shmbus::Publisher topic("/graph/topic", type_of<shmbus_msgs::Header>(), d.context());
  // A replay's clock, as `shmtool play --clock` publishes it.
  std::optional<shmbus::Publisher> clock_pub;
  clock_pub.emplace("/shmbus/clock", type_of<shmbus_msgs::Clock>(), d.context());
  constexpr std::uint64_t kStart = 1'700'000'000'000'000'007ULL;
  Feeder clock(*clock_pub, [](std::uint32_t i) {
    shmbus_msgs::Clock c{};
    c.clock_ns = kStart + std::uint64_t{i} * 1'000'000;
    std::vector<std::byte> b(sizeof(c));
    std::memcpy(b.data(), &c, sizeof(c));
    return b;
  });
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  const json r = run_node({kJs + "/bridge_foxglove_cdr.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port), "0",
                           R"(--call=/example/add={"a": 2, "b": 40})", "--graph=/graph/topic", "--time=3"});
  clock.stop();
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array()) << r.dump();
  const json& caps = r["serverInfo"]["capabilities"];
  for (const char* cap : {"clientPublish", "services", "connectionGraph", "time"}) {
    EXPECT_NE(std::find(caps.begin(), caps.end(), cap), caps.end()) << cap << " in " << caps.dump();
  }
  // The shmbus adder, called from Foxglove with a JSON request.
  ASSERT_EQ(r["services"].size(), 1U) << r["services"].dump();
  EXPECT_EQ(r["services"][0]["name"], "/example/add");
  EXPECT_EQ(r["services"][0]["type"], "example_srvs/AddTwoInts");
  EXPECT_EQ(r["services"][0]["request"]["schemaEncoding"], "jsonschema");
  EXPECT_EQ(r["response"]["callId"], 7);
  EXPECT_EQ(r["response"]["encoding"], "json");
  EXPECT_EQ(r["response"]["data"]["sum"], 42);
  // The graph names this process's node as the topic's publisher, and a
  // provider of the service.
  EXPECT_EQ(r["graph"]["published"]["/graph/topic"], json::array({d.context().node()})) << r["graph"].dump();
  EXPECT_EQ(r["graph"]["services"]["/example/add"].size(), 1U) << r["graph"].dump();
  // Time: clock values that were published, in order.
  ASSERT_EQ(r["times"].size(), 3U);
  std::uint64_t last = 0;
  for (const json& t : r["times"]) {
    const std::uint64_t ns = std::stoull(t.get<std::string>());
    EXPECT_EQ((ns - kStart) % 1'000'000, 0U) << ns;
    EXPECT_GT(ns, last);
    last = ns;
  }
  // The replay ends: a client that connects now is not offered time; the
  // next replay's clock brings it back.
  const auto offers_time = [&] {
    const json info =
        run_node({kJs + "/bridge_foxglove_cdr.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port), "0", "--info"});
    const json& offered = info["serverInfo"]["capabilities"];
    EXPECT_TRUE(offered.is_array()) << info.dump();
    return std::find(offered.begin(), offered.end(), "time") != offered.end();
  };
  clock_pub.reset();
  EXPECT_FALSE(offers_time());
  clock_pub.emplace("/shmbus/clock", type_of<shmbus_msgs::Clock>(), d.context());
  EXPECT_TRUE(offers_time());
}

TEST(BridgeFoxgloveTest, AnUnknownEncodingIsBadUsage) {
  ChildProcess bad({kBridge, "--foxglove-encoding", "protobuf"}, true);
  const int status = bad.wait(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << bad.output();
  EXPECT_NE(bad.output().find("--foxglove-encoding"), std::string::npos) << bad.output();
}

}  // namespace
