// shmbus-bridge as a real process, reached by the clients people use
// (roslib and @foxglove/ws-protocol from npm, run by node) and by a raw
// WebSocket client that sends what a broken or hostile client sends.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bridge/bridge_harness.hpp"
#include "example_srvs/srv/add_two_ints.hpp"
#include "multiprocess/child_process.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/service.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Header.hpp"
#include "shmbus_msgs/String.hpp"
#include "std_msgs/String.hpp"
#include "support/certificate.hpp"
#include "support/channel_checks.hpp"
#include "support/test_domain.hpp"
#include "support/unit_file.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using shmbus::test::ChildProcess;
using shmbus::test::make_certificate;
using shmbus::test::rates_at_once;
using shmbus::test::take_strings;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using namespace shmbus::test::bridge;

TEST(BridgeTest, RoslibDiscoversSubscribesPublishesAndCallsAService) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  // The shmbus side of what roslib publishes: a subscriber that made /to_bus.
  shmbus::TypedSubscriber<shmbus_msgs::String> from_roslib("/to_bus", d.context());
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);

  const json r = run_node({kJs + "/bridge_roslib.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port), "/chatter",
                           "/to_bus", "/example/add", "10"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array());
  // getTopics: topics and their types; the service channels are not topics.
  EXPECT_EQ(r["topics"]["topics"], json({"/chatter", "/to_bus"}));
  EXPECT_EQ(r["topics"]["types"], json({"shmbus_msgs/String", "shmbus_msgs/String"}));
  EXPECT_EQ(r["topicType"], "shmbus_msgs/String");
  EXPECT_NE(std::find(r["services"].begin(), r["services"].end(), "/example/add"), r["services"].end());
  EXPECT_EQ(r["serviceType"], "example_srvs/AddTwoInts");
  EXPECT_EQ(r["typedefs"][0]["type"], "shmbus_msgs/String");
  EXPECT_EQ(r["typedefs"][0]["fieldnames"], json({"data"}));
  // The subscription (type given as std_msgs/msg/String) decodes the messages.
  ASSERT_EQ(r["received"].size(), 3U);
  for (const json& m : r["received"]) EXPECT_EQ(m, json({{"data", "hello"}}));
  ASSERT_EQ(r["receivedCbor"].size(), 2U);
  for (const json& m : r["receivedCbor"]) EXPECT_EQ(m, json({{"data", "hello"}}));
  ASSERT_EQ(r["receivedFragmented"].size(), 2U);
  for (const json& m : r["receivedFragmented"]) EXPECT_EQ(m, json({{"data", "hello"}}));
  // The wrong type: an error status naming both types, and no message.
  EXPECT_EQ(r["wrongType"]["level"], "error");
  EXPECT_NE(r["wrongType"]["msg"].get<std::string>().find("shmbus_msgs/Header"), std::string::npos);
  EXPECT_NE(r["wrongType"]["msg"].get<std::string>().find("shmbus_msgs/String"), std::string::npos);
  EXPECT_EQ(r["wrongType"]["messages"], 0);
  // A publish that does not fit the schema names the field.
  EXPECT_EQ(r["badPublish"]["level"], "error");
  EXPECT_NE(r["badPublish"]["msg"].get<std::string>().find("colour"), std::string::npos);
  // The service answered through the bus; a missing one fails with a reason.
  EXPECT_EQ(r["sum"], 42);
  EXPECT_NE(r["noService"].get<std::string>().find("no service /no/such/service"), std::string::npos);
  // Everything roslib published arrived, in order, and nothing else.
  const std::vector<std::string> got = take_strings(from_roslib, 11, 2s);
  ASSERT_EQ(got.size(), 10U);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], "from roslib " + std::to_string(i));
}

TEST(BridgeTest, FoxgloveClientGetsServerInfoChannelsWithJsonSchemaAndMessagesInJsonMode) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  shmbus::TypedSubscriber<shmbus_msgs::String> from_foxglove("/from_studio", d.context());
  BridgeProcess bridge(domain, {"--foxglove-encoding", "json"});
  ASSERT_NE(bridge.port, 0);

  const json r = run_node(
      {kJs + "/bridge_foxglove.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port), "/chatter", "/from_studio", "8"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array());  // includes every message checked against the JSON Schema (ajv)
  EXPECT_EQ(r["serverInfo"]["name"], "shmbus-bridge");
  EXPECT_EQ(r["serverInfo"]["metadata"]["domain"], domain);
  EXPECT_NE(std::find(r["serverInfo"]["capabilities"].begin(), r["serverInfo"]["capabilities"].end(), "clientPublish"),
            r["serverInfo"]["capabilities"].end());
  EXPECT_EQ(r["channel"], json({{"topic", "/chatter"},
                                {"encoding", "json"},
                                {"schemaName", "shmbus_msgs/String"},
                                {"schemaEncoding", "jsonschema"}}));
  ASSERT_EQ(r["received"].size(), 3U);
  const std::int64_t now = shmbus::wall_now_ns();
  for (const json& m : r["received"]) {
    EXPECT_EQ(m["msg"], json({{"data", "hello"}}));
    const std::int64_t stamp = std::stoll(m["timestamp"].get<std::string>());
    EXPECT_LT(std::llabs(now - stamp), 60'000'000'000LL) << "receive time in ns since the epoch";
  }
  ASSERT_TRUE(r["wrongType"].is_object()) << r.dump();
  EXPECT_EQ(r["wrongType"]["level"], 2);
  EXPECT_NE(r["wrongType"]["message"].get<std::string>().find("shmbus_msgs/Header"), std::string::npos);
  const std::vector<std::string> got = take_strings(from_foxglove, 9, 2s);
  ASSERT_EQ(got.size(), 8U);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], "from foxglove " + std::to_string(i));
}

TEST(BridgeTest, FoxgloveClientsAreToldWhenChannelsComeAndGo) {
  shmbus::test::TestDomain d;
  BridgeProcess bridge(d.context().domain());
  RawClient client(bridge.port, "foxglove.websocket.v1");
  ASSERT_TRUE(client.read_until("serverInfo"));
  std::optional<shmbus::TypedPublisher<shmbus_msgs::String>> late;
  late.emplace("/late/channel", d.context());
  const auto advertised = client.read_until("\"advertise\"");
  ASSERT_TRUE(advertised);
  EXPECT_EQ((*advertised)["channels"][0]["topic"], "/late/channel");
  const auto id = (*advertised)["channels"][0]["id"];
  late.reset();
  shmbus::introspect::clean_domain(d.context().domain(), false);
  const auto gone = client.read_until("\"unadvertise\"");
  ASSERT_TRUE(gone);
  EXPECT_EQ((*gone)["channelIds"], json::array({id}));
}

/// Waits until `channel` exists in `domain` (a client made it), up to 10 s.
bool channel_appears(const std::string& domain, const std::string& channel) {
  const std::int64_t deadline = shmbus::mono_now_ns() + 10'000'000'000;
  while (shmbus::mono_now_ns() < deadline) {
    try {
      shmbus::introspect::ChannelReader reader(domain, channel);
      return true;
    } catch (const shmbus::Error&) {
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

/// Waits until `channel` has `n` publishers, up to 10 s.
bool publishers_become(const std::string& domain, const std::string& channel, std::size_t n) {
  const std::int64_t deadline = shmbus::mono_now_ns() + 10'000'000'000;
  while (shmbus::mono_now_ns() < deadline) {
    try {
      if (shmbus::introspect::ChannelReader(domain, channel).view().publishers.size() == n) return true;
    } catch (const shmbus::Error&) {
      if (n == 0) return true;  // the channel went with its last publisher
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

/// Waits until the bridge's reader subscribes to `channel` (it attaches a
/// client's subscription on its own thread, after answering), up to 10 s.
bool bridge_reads(const std::string& domain, const std::string& channel) {
  const std::int64_t deadline = shmbus::mono_now_ns() + 10'000'000'000;
  while (shmbus::mono_now_ns() < deadline) {
    try {
      for (const auto& e : shmbus::introspect::ChannelReader(domain, channel).view().subscribers) {
        if (e.node == "shmbus-bridge") return true;
      }
    } catch (const shmbus::Error&) {
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TEST(BridgeTest, ClientsCreateChannelsOfShippedAndMsgPathTypesNoProcessCarries) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  // A user package under --msg-path; nothing in the domain carries any type.
  const auto root = std::filesystem::temp_directory_path() / ("bridge_msgs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "robot_msgs");
  std::ofstream(root / "robot_msgs" / "Battery.msg") << "float32 voltage\nuint8 percent\n";
  BridgeProcess bridge(domain, {"--msg-path", root.string()});
  ASSERT_NE(bridge.port, 0);

  // rosbridge: a shipped type, published 20 times, read by a shmbus process.
  RawClient ros(bridge.port);
  ros.send(R"({"op": "advertise", "topic": "/greeting", "type": "shmbus_msgs/String", "id": "g"})");
  ASSERT_TRUE(channel_appears(domain, "/greeting")) << bridge.process->poll_output();
  shmbus::TypedSubscriber<shmbus_msgs::String> greeting("/greeting", d.context());
  std::vector<std::string> sent;
  for (int i = 0; i < 20; ++i) {
    sent.push_back("hello " + std::to_string(i));
    ros.send(R"({"op": "publish", "topic": "/greeting", "msg": {"data": ")" + sent.back() + "\"}}");
  }
  EXPECT_EQ(take_strings(greeting, 20, 10s), sent);
  // ROS 2's unbounded string of 10,000 characters: over the 4096-byte slots
  // of the channel the bridge made, which grows.
  ros.send(R"({"op": "advertise", "topic": "/long", "type": "std_msgs/msg/String", "id": "l"})");
  ASSERT_TRUE(channel_appears(domain, "/long")) << bridge.process->poll_output();
  shmbus::Subscriber longs("/long", std::nullopt, d.context());
  const std::string long_text(10'000, 'x');
  ros.send(R"({"op": "publish", "topic": "/long", "msg": {"data": ")" + long_text + "\"}}");
  std::vector<std::byte> buf(64);
  shmbus::TakeResult got;
  for (const auto until = std::chrono::steady_clock::now() + 10s;
       !got.ok() && std::chrono::steady_clock::now() < until;) {
    got = longs.take(buf);
    if (got.status == shmbus::TakeStatus::kBufferTooSmall) buf.resize(got.info.size);
    if (got.status == shmbus::TakeStatus::kNoData) longs.wait(10ms);
  }
  ASSERT_TRUE(got.ok()) << bridge.process->poll_output();
  EXPECT_GT(got.info.size, 10'000U);
  EXPECT_NE(std::string(reinterpret_cast<const char*>(buf.data()), got.info.size).find(long_text), std::string::npos);
  EXPECT_GE(longs.max_message_size(), 16384U);

  // Each advertise id holds the topic: unadvertising "g" leaves "g2"'s; a
  // third id with another type is refused; the last id releases it.
  ros.send(R"({"op": "advertise", "topic": "/greeting", "type": "shmbus_msgs/String", "id": "g2"})");
  ros.send(R"({"op": "advertise", "topic": "/greeting", "type": "shmbus_msgs/Header", "id": "wrong"})");
  const auto mismatch = ros.read_until("\"wrong\"");
  ASSERT_TRUE(mismatch);
  EXPECT_NE((*mismatch)["msg"].get<std::string>().find("type mismatch on /greeting"), std::string::npos)
      << mismatch->dump();
  // What the client is told, the log says too, naming the client.
  EXPECT_TRUE(bridge.process->wait_for_output("type mismatch on /greeting", 5s)) << bridge.process->poll_output();
  EXPECT_NE(bridge.process->poll_output().find("client 127.0.0.1:"), std::string::npos)
      << bridge.process->poll_output();
  ros.send(R"({"op": "unadvertise", "topic": "/greeting", "id": "g"})");
  ros.send(R"({"op": "call_service", "service": "/rosapi/topics", "id": "sync"})");
  ASSERT_TRUE(ros.read_until("\"sync\""));
  EXPECT_TRUE(publishers_become(domain, "/greeting", 1));
  ros.send(R"({"op": "unadvertise", "topic": "/greeting", "id": "g2"})");
  EXPECT_TRUE(publishers_become(domain, "/greeting", 0));

  // A type found under --msg-path; an unknown one refused, naming the type
  // and where it was looked for.
  ros.send(R"({"op": "advertise", "topic": "/battery", "type": "robot_msgs/Battery"})");
  ros.send(R"({"op": "advertise", "topic": "/nope", "type": "nope_msgs/Nope", "id": "n"})");
  const auto refused = ros.read_until("nope_msgs/Nope");
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["id"], "n");
  const std::string why = (*refused)["msg"];
  EXPECT_NE(why.find("cannot create /nope: unknown message type 'nope_msgs/Nope'"), std::string::npos) << why;
  EXPECT_NE(why.find(root.string()), std::string::npos) << why;
  ros.send(R"({"op": "call_service", "service": "/rosapi/topic_type", "args": {"topic": "/battery"}, "id": "t"})");
  const auto type = ros.read_until("service_response");
  ASSERT_TRUE(type);
  EXPECT_EQ((*type)["values"]["type"], "robot_msgs/Battery") << type->dump();

  // Foxglove: clientAdvertise of a new topic, then message data.
  RawClient fox(bridge.port, "foxglove.websocket.v1");
  ASSERT_TRUE(fox.read_until("serverInfo"));
  fox.send(R"({"op": "advertise", "channels": [{"id": 3, "topic": "/fox/said", "encoding": "json",
              "schemaName": "shmbus_msgs/String"}]})");
  ASSERT_TRUE(channel_appears(domain, "/fox/said")) << bridge.process->poll_output();
  shmbus::TypedSubscriber<shmbus_msgs::String> said("/fox/said", d.context());
  fox.send_binary(std::string("\x01\x03\x00\x00\x00", 5) + R"({"data": "from foxglove"})");
  EXPECT_EQ(take_strings(said, 1, 10s), std::vector<std::string>{"from foxglove"});
  std::filesystem::remove_all(root);
}

/// A msg path in ROS 2's share layout with a PoseStamped whose header is
/// ROS 2's (under package names shmbus does not ship) and a string type;
/// and a configuration giving /ros2/* room for long strings. Removed when
/// destroyed.
struct Ros2MsgRoot {
  std::filesystem::path root = std::filesystem::temp_directory_path() / ("bridge_ros2_" + std::to_string(::getpid()));
  std::filesystem::path config = root / "bridge.toml";
  Ros2MsgRoot() {
    const auto geo = root / "geo_msgs" / "msg";
    std::filesystem::create_directories(geo);
    std::filesystem::create_directories(root / "text_msgs" / "msg");
    std::ofstream(geo / "Header.msg") << "builtin_interfaces/Time stamp\nstring frame_id\n";
    std::ofstream(geo / "Point.msg") << "float64 x\nfloat64 y\nfloat64 z\n";
    std::ofstream(geo / "Quaternion.msg") << "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
    std::ofstream(geo / "Pose.msg") << "Point position\nQuaternion orientation\n";
    std::ofstream(geo / "PoseStamped.msg") << "geo_msgs/msg/Header header\nPose pose\n";
    std::ofstream(root / "text_msgs" / "msg" / "Text.msg") << "string data\n";
    std::ofstream(config) << "[[channel]]\nname = \"/ros2/*\"\nmax_message_size = 65536\n";
  }
  ~Ros2MsgRoot() { std::filesystem::remove_all(root); }
  Ros2MsgRoot(const Ros2MsgRoot&) = delete;
  Ros2MsgRoot& operator=(const Ros2MsgRoot&) = delete;
  [[nodiscard]] std::vector<std::string> bridge_args() const {
    return {"--msg-path", root.string(), "--config", config.string()};
  }
};

/// What the PoseStamped published in part comes back as: its defaults filled.
json expected_ros2_pose() {
  return json::parse(R"({"header": {"stamp": {"sec": 7, "nanosec": 9}, "frame_id": "map"},
                         "pose": {"position": {"x": 1.5, "y": -2.0, "z": 0.25},
                                  "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}})");
}

// ROS 2 definitions as ROS 2 installs them (a share folder: Header with a
// builtin_interfaces/Time stamp and an unbounded frame_id, PoseStamped;
// a message of one unbounded string), known only through --msg-path: a
// rosbridge client publishes a PoseStamped it gives in part (the rest from
// the definitions' defaults) and a 10,000-character string; another
// client's subscriptions receive both, every field as sent.
TEST(BridgeTest, RosDefinitionsWithUnboundedFieldsTravelThroughTheBridge) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  const Ros2MsgRoot msgs;
  BridgeProcess bridge(domain, msgs.bridge_args());
  ASSERT_NE(bridge.port, 0);
  RawClient sub(bridge.port);
  sub.send(R"({"op": "subscribe", "topic": "/ros2/pose", "type": "geo_msgs/msg/PoseStamped"})");
  sub.send(R"({"op": "subscribe", "topic": "/ros2/text", "type": "text_msgs/msg/Text"})");
  RawClient pub(bridge.port);
  pub.send(R"({"op": "advertise", "topic": "/ros2/pose", "type": "geo_msgs/msg/PoseStamped"})");
  pub.send(R"({"op": "advertise", "topic": "/ros2/text", "type": "text_msgs/msg/Text"})");
  ASSERT_TRUE(channel_appears(domain, "/ros2/pose")) << bridge.process->poll_output();
  ASSERT_TRUE(channel_appears(domain, "/ros2/text")) << bridge.process->poll_output();
  ASSERT_TRUE(publishers_become(domain, "/ros2/text", 1));
  // The bridge attaches the subscriptions on its reader's thread: publish
  // once it reads both channels (a read that times out closes the client).
  ASSERT_TRUE(bridge_reads(domain, "/ros2/pose"));
  ASSERT_TRUE(bridge_reads(domain, "/ros2/text"));
  const std::string long_text(10000, 'r');
  // Publish until the subscriber has both (bounded).
  std::optional<json> pose;
  std::optional<json> text;
  for (int i = 0; i < 50 && !(pose && text); ++i) {
    pub.send(R"({"op": "publish", "topic": "/ros2/pose", "msg": {"header": {"stamp": {"sec": 7, "nanosec": 9},
             "frame_id": "map"}, "pose": {"position": {"x": 1.5, "y": -2, "z": 0.25}}}})");
    pub.send(json{{"op", "publish"}, {"topic", "/ros2/text"}, {"msg", {{"data", long_text}}}}.dump());
    for (int k = 0; k < 2; ++k) {
      const auto m = sub.read();
      if (!m) break;
      const json op = json::parse(*m);
      if (op.value("op", "") != "publish") continue;
      (op["topic"] == "/ros2/pose" ? pose : text) = op["msg"];
    }
  }
  ASSERT_TRUE(pose && text) << bridge.process->poll_output();
  EXPECT_EQ(*pose, expected_ros2_pose());
  EXPECT_EQ((*text)["data"], long_text);
}

shmbus_msgs::String text(const std::string& s) {
  shmbus_msgs::String m{};
  m.data.assign(s);
  return m;
}

/// The `data` of the next `publish` ops a client receives on `topic` (up
/// to `n`, each within 10 s).
std::vector<std::string> published_data(RawClient& c, const std::string& topic, std::size_t n) {
  std::vector<std::string> got;
  while (got.size() < n) {
    const auto m = c.read();
    if (!m) break;
    const json op = json::parse(*m);
    if (op.value("op", "") == "publish" && op.value("topic", "") == topic) got.push_back(op["msg"]["data"]);
  }
  return got;
}

TEST(BridgeTest, ASubscriptionMadeBeforeItsChannelWaitsAndDeliversFromTheFirstMessage) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  RawClient c(bridge.port);
  c.send(R"({"op": "set_level", "level": "info"})");
  c.send(R"({"op": "subscribe", "topic": "/later", "type": "shmbus_msgs/String", "id": "s"})");
  const auto waiting = c.read_until("waiting for it");
  ASSERT_TRUE(waiting);
  EXPECT_EQ((*waiting)["level"], "info");
  EXPECT_EQ((*waiting)["id"], "s");
  // Without a type it waits too, and takes the channel's; a type that
  // turns out different is refused when the channel appears.
  c.send(R"({"op": "subscribe", "topic": "/later/untyped"})");
  c.send(R"({"op": "subscribe", "topic": "/later/header", "type": "shmbus_msgs/Header", "id": "h"})");
  ASSERT_TRUE(c.read_until("/later/header"));

  // The channels appear with their first messages already published.
  shmbus::TypedPublisher<shmbus_msgs::String> later("/later", d.context());
  shmbus::TypedPublisher<shmbus_msgs::String> untyped("/later/untyped", d.context());
  shmbus::TypedPublisher<shmbus_msgs::String> header("/later/header", d.context());
  std::vector<std::string> sent;
  for (int i = 0; i < 50; ++i) {
    sent.push_back("m" + std::to_string(i));
    EXPECT_EQ(later.publish(text(sent.back())), shmbus::PublishResult::kOk);
  }
  EXPECT_EQ(untyped.publish(text("untyped")), shmbus::PublishResult::kOk);
  EXPECT_EQ(header.publish(text("not a header")), shmbus::PublishResult::kOk);
  // Everything this client hears now, in whatever order the channels'
  // messages and the refusal come.
  std::vector<std::string> later_data;
  bool refused = false;
  bool untyped_seen = false;
  while (later_data.size() < sent.size() || !refused || !untyped_seen) {
    const auto m = c.read();
    ASSERT_TRUE(m) << later_data.size() << " of /later, refused " << refused << ", untyped " << untyped_seen;
    const json op = json::parse(*m);
    const std::string kind = op.value("op", "");
    const std::string topic = op.value("topic", "");
    if (kind == "status" && op.value("id", "") == "h") {
      EXPECT_NE(op["msg"].get<std::string>().find(
                    "type mismatch on /later/header: the client says shmbus_msgs/Header, the channel carries "
                    "shmbus_msgs/String"),
                std::string::npos)
          << *m;
      refused = true;
    } else if (kind == "publish" && topic == "/later") {
      later_data.push_back(op["msg"]["data"]);
    } else if (kind == "publish" && topic == "/later/untyped") {
      EXPECT_EQ(op["msg"]["data"], "untyped");
      untyped_seen = true;
    }
    EXPECT_FALSE(kind == "publish" && topic == "/later/header") << *m;
  }
  EXPECT_EQ(later_data, sent);
}

TEST(BridgeTest, EachSubscribeIdIsItsOwnSubscription) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  shmbus::TypedPublisher<shmbus_msgs::String> pub("/two", d.context());
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  RawClient c(bridge.port);
  // Two widgets on one topic: "a" wants every message, "b" one a second.
  c.send(R"({"op": "subscribe", "topic": "/two", "id": "a"})");
  c.send(R"({"op": "subscribe", "topic": "/two", "id": "b", "throttle_rate": 1000})");
  ASSERT_TRUE(bridge_reads(domain, "/two"));
  // The topic goes at the most demanding of the two: every message.
  std::vector<std::string> sent;
  for (int i = 0; i < 20; ++i) {
    sent.push_back("all " + std::to_string(i));
    EXPECT_EQ(pub.publish(text(sent.back())), shmbus::PublishResult::kOk);
  }
  EXPECT_EQ(published_data(c, "/two", 20), sent);
  // "a" goes; "b" keeps receiving, at its own throttle: of messages
  // published over 2.5 s, what arrives is at most one a second (three).
  c.send(R"({"op": "unsubscribe", "topic": "/two", "id": "a"})");
  c.send(R"({"op": "call_service", "service": "/rosapi/topics", "id": "sync2"})");
  ASSERT_TRUE(c.read_until("\"sync2\""));
  const std::int64_t start = shmbus::mono_now_ns();
  int n = 0;
  while (shmbus::mono_now_ns() - start < 2'500'000'000) {
    EXPECT_EQ(pub.publish(text("throttled " + std::to_string(n++))), shmbus::PublishResult::kOk);
    std::this_thread::sleep_for(10ms);
  }
  std::vector<std::string> got;
  std::int64_t last_received = start;
  for (;;) {
    const auto m = c.read(1500ms);
    if (!m) break;
    const json op = json::parse(*m);
    if (op.value("op", "") != "publish") continue;
    got.push_back(op["msg"]["data"]);
    last_received = shmbus::mono_now_ns();
  }
  ASSERT_FALSE(got.empty()) << "b stopped receiving when a unsubscribed";
  // Every send fell between the first publish and the last receipt, at
  // least a second apart.
  const auto whole_seconds = static_cast<std::size_t>((last_received - start) / 1'000'000'000);
  EXPECT_LE(got.size(), whole_seconds + 1) << n << " published";
  EXPECT_GT(n, static_cast<int>(got.size()));
}

TEST(BridgeTest, SixtyFourBitIntegersGoAsStringsWhenAskedAndComeBackExact) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  shmbus::TypedPublisher<shmbus_msgs::Header> stamps("/stamps", d.context());
  shmbus::TypedPublisher<shmbus_msgs::Header> numbers("/numbers", d.context());
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  BridgeProcess bridge(domain, {"--json-int64", "string"});
  ASSERT_NE(bridge.port, 0);
  RawClient c(bridge.port);
  // The bridge's default (string), and a subscription that asks for numbers.
  c.send(R"({"op": "subscribe", "topic": "/stamps"})");
  c.send(R"({"op": "subscribe", "topic": "/numbers", "json_int64": "number"})");
  c.send(R"({"op": "call_service", "service": "/rosapi/topics", "id": "sync"})");
  ASSERT_TRUE(c.read_until("\"sync\""));
  // Published until both arrive: the bridge's reader attaches each
  // subscription on its own thread, after the answer above.
  shmbus_msgs::Header h{};
  h.stamp_ns = (std::uint64_t{1} << 53) + 1;  // a JavaScript number would round it
  auto bytes_of_h = [&h](std::uint32_t) {
    const auto* p = reinterpret_cast<const std::byte*>(&h);
    return std::vector<std::byte>(p, p + sizeof h);
  };
  Feeder stamps_feeder(stamps.untyped(), bytes_of_h);
  Feeder numbers_feeder(numbers.untyped(), bytes_of_h);
  std::map<std::string, json> got;  // by topic, in whichever order they come
  while (got.size() < 2) {
    const auto m = c.read();
    if (!m) break;
    const json op = json::parse(*m);
    if (op.value("op", "") == "publish") got[op["topic"]] = op["msg"];
  }
  stamps_feeder.stop();
  numbers_feeder.stop();
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got["/stamps"]["stamp_ns"], "9007199254740993");
  EXPECT_EQ(got["/stamps"]["seq"], 0) << "only 64-bit integers become strings";
  EXPECT_EQ(got["/numbers"]["stamp_ns"], std::uint64_t{9007199254740993ULL});
  // A client publishes the string form back; the bus gets the exact value.
  c.send(R"({"op": "advertise", "topic": "/back", "type": "shmbus_msgs/Header"})");
  ASSERT_TRUE(channel_appears(domain, "/back"));
  shmbus::TypedSubscriber<shmbus_msgs::Header> back("/back", d.context());
  c.send(R"({"op": "publish", "topic": "/back", "msg": {"stamp_ns": "18446744073709551615"}})");
  ASSERT_TRUE(back.wait(10s));
  const auto header = back.take();
  ASSERT_TRUE(header);
  EXPECT_EQ(header->stamp_ns, std::numeric_limits<std::uint64_t>::max());
  // A service's response too: the adder's int64 sum above 2^53, exact.
  c.send(R"({"op": "call_service", "service": "/example/add", "id": "add",
             "args": {"a": "9007199254740993", "b": "-4"}})");
  const auto added = c.read_until("\"add\"");
  ASSERT_TRUE(added);
  EXPECT_EQ((*added)["values"]["sum"], "9007199254740989") << added->dump();
}

TEST(BridgeTest, RosapiNamesNodesWithWhatEachPublishesSubscribesAndServesAndGivesRawTypes) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  shmbus::TypedPublisher<shmbus_msgs::Header> out("/graph/out", d.context());
  shmbus::TypedSubscriber<shmbus_msgs::String> in("/graph/in", d.context());
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  RawClient c(bridge.port);
  const auto call = [&](const std::string& service, const json& args) {
    c.send(json{{"op", "call_service"}, {"service", service}, {"args", args}, {"id", service}}.dump());
    const auto r = c.read_until("\"service_response\"");
    return r ? *r : json();
  };
  const std::string me = "/" + d.context().node();
  const json nodes = call("/rosapi/nodes", json::object());
  ASSERT_TRUE(nodes["result"].get<bool>()) << nodes.dump();
  const json& names = nodes["values"]["nodes"];
  EXPECT_NE(std::find(names.begin(), names.end(), me), names.end()) << names.dump();
  const json mine = call("/rosapi/node_details", {{"node", me}});
  ASSERT_TRUE(mine["result"].get<bool>()) << mine.dump();
  EXPECT_EQ(mine["values"]["publishing"], json::array({"/graph/out"}));
  EXPECT_EQ(mine["values"]["subscribing"], json::array({"/graph/in"}));
  EXPECT_EQ(mine["values"]["pids"], json::array({::getpid()}));
  // The adder serves /example/add: the node whose details say so is a
  // process other than this one.
  bool server_found = false;
  for (const json& name : names) {
    const json details = call("/rosapi/node_details", {{"node", name}});
    const json& services = details["values"]["services"];
    if (std::find(services.begin(), services.end(), "/example/add") == services.end()) continue;
    server_found = true;
    EXPECT_EQ(details["values"]["pids"], json::array({adder->pid()})) << details.dump();
  }
  EXPECT_TRUE(server_found) << names.dump();
  const json unknown = call("/rosapi/node_details", {{"node", "/nobody"}});
  EXPECT_FALSE(unknown["result"].get<bool>());
  EXPECT_NE(unknown["values"].get<std::string>().find("no node /nobody"), std::string::npos) << unknown.dump();

  const shmbus::Publisher raw_out("/graph/raw", shmbus::TypeInfo::bytes(), d.context());
  const json raw = call("/rosapi/topics_and_raw_types", json::object());
  ASSERT_TRUE(raw["result"].get<bool>()) << raw.dump();
  const json& topics = raw["values"]["topics"];
  const auto at = std::find(topics.begin(), topics.end(), "/graph/out");
  ASSERT_NE(at, topics.end());
  const auto i = static_cast<std::size_t>(at - topics.begin());
  EXPECT_EQ(raw["values"]["types"][i], "shmbus_msgs/Header");
  EXPECT_EQ(raw["values"]["typedefs_full_text"][i], "uint64 stamp_ns\nuint32 seq\nstring<=52 frame_id\n");
  // A raw channel: the uint8[] Foxglove's clients are told of.
  const auto at_raw = std::find(topics.begin(), topics.end(), "/graph/raw");
  ASSERT_NE(at_raw, topics.end()) << raw.dump();
  EXPECT_EQ(raw["values"]["typedefs_full_text"][static_cast<std::size_t>(at_raw - topics.begin())], "uint8[] data\n");

  // Services: those served now. A client alone (its channels, no server)
  // is not listed; a service whose server is gone leaves the list.
  const shmbus::TypedServiceClient<example_srvs::srv::AddTwoInts> nobody("/graph/nobody", d.context());
  const auto services = [&] { return call("/rosapi/services", json::object())["values"]["services"]; };
  const auto listed = [](const json& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  json now = services();
  EXPECT_TRUE(listed(now, "/example/add")) << now.dump();
  EXPECT_FALSE(listed(now, "/graph/nobody")) << now.dump();
  adder->signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(adder->wait(10s)));
  now = services();
  EXPECT_FALSE(listed(now, "/example/add")) << now.dump();
  EXPECT_TRUE(listed(now, "/rosapi/topics")) << now.dump();
}

TEST(BridgeTest, BadInputGetsItsAnswerAndTheBridgeServesOthers) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter", "200");
  BridgeProcess bridge(domain, {"--max-frame-bytes", "65536", "--max-ops-per-second", "50"});
  ASSERT_NE(bridge.port, 0);
  {
    RawClient c(bridge.port);
    c.send("{not json");
    auto s = c.read_until("malformed JSON");
    ASSERT_TRUE(s);
    EXPECT_EQ((*s)["level"], "error");
    c.send(R"({"op": "dance"})");
    s = c.read_until("unknown op");
    ASSERT_TRUE(s);
    EXPECT_NE((*s)["msg"].get<std::string>().find("\"dance\""), std::string::npos);
    c.send(R"({"no_op": 1})");
    EXPECT_TRUE(c.read_until("not a rosbridge operation"));
    // A topic no process has: the subscription waits, and says so at info.
    c.send(R"({"op": "set_level", "level": "info"})");
    c.send(R"({"op": "subscribe", "topic": "/nowhere", "id": "s1"})");
    s = c.read_until("/nowhere");
    ASSERT_TRUE(s);
    EXPECT_EQ((*s)["id"], "s1");
    EXPECT_EQ((*s)["level"], "info");
    EXPECT_NE((*s)["msg"].get<std::string>().find("waiting for it"), std::string::npos) << s->dump();
  }
  {
    // A frame over max_frame_bytes: the connection is closed with 1009.
    RawClient c(bridge.port);
    c.send(std::string(100'000, ' '));
    EXPECT_FALSE(c.read_until("never"));
    EXPECT_EQ(c.code, 1009);
  }
  {
    // One far larger than the sockets' buffers: the bridge reads and drops
    // the rest while the client still writes it, so the client's write
    // completes and it reads the 1009 (no reset).
    RawClient c(bridge.port);
    EXPECT_NO_THROW(c.send(std::string(8'000'000, ' ')));
    EXPECT_FALSE(c.read_until("never"));
    EXPECT_EQ(c.code, 1009);
  }
  {
    // A flood: over 50 operations per second, the rest are refused, said once.
    RawClient c(bridge.port);
    for (int i = 0; i < 400; ++i) c.send(R"({"op": "set_level", "level": "warning"})");
    const auto s = c.read_until("rate limit");
    ASSERT_TRUE(s);
    EXPECT_EQ((*s)["level"], "warning");
    // The client stays connected until the bridge has read all 400.
    const std::int64_t deadline = shmbus::mono_now_ns() + 10'000'000'000;
    while (metric(bridge.port, "shmbus_bridge_ops_refused_total") < 300 && shmbus::mono_now_ns() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_GE(metric(bridge.port, "shmbus_bridge_ops_refused_total"), 300);
  }
  {
    // fragment_size under the least the bridge serves (1024): said, and
    // raised (the fragments themselves: BridgeHostileTest).
    RawClient c(bridge.port);
    c.send(R"({"op": "set_level", "level": "warning"})");
    c.send(R"({"op": "subscribe", "topic": "/chatter", "fragment_size": 16, "id": "f"})");
    const auto f = c.read_until("fragment_size 16 is under");
    ASSERT_TRUE(f);
    EXPECT_EQ((*f)["level"], "warning");
    EXPECT_EQ((*f)["id"], "f");
  }
  // After all of it, a new client is served.
  RawClient c(bridge.port);
  c.send(R"({"op": "call_service", "service": "/rosapi/topics", "id": "t"})");
  const auto topics = c.read_until("service_response");
  ASSERT_TRUE(topics);
  EXPECT_EQ((*topics)["values"]["topics"], json::array({"/chatter"}));
}

TEST(BridgeTest, AClientThatNeverReadsLosesMessagesCountedAndOthersAreServed) {
  shmbus::Config config;
  config.defaults.max_message_size = 65536;
  shmbus::test::TestDomain d(config);
  const std::string domain = d.context().domain();
  shmbus::Publisher big("/big", shmbus::TypeInfo::bytes(), d.context());
  auto small = start_publisher(domain, "/chatter", "200");
  BridgeProcess bridge(domain, {"--send-queue", "8"});
  ASSERT_NE(bridge.port, 0);

  // The stuck client: subscribes to 64 KiB messages (~200 KB of JSON each)
  // and never reads again.
  RawClient stuck(bridge.port);
  stuck.send(R"({"op": "subscribe", "topic": "/big"})");
  RawClient healthy(bridge.port);
  healthy.send(R"({"op": "subscribe", "topic": "/chatter", "type": "shmbus_msgs/String"})");
  ASSERT_TRUE(healthy.read_until("hello"));
  const std::vector<std::byte> payload(60'000, std::byte{7});
  const std::int64_t deadline = shmbus::mono_now_ns() + 20'000'000'000;
  while (metric(bridge.port, "shmbus_bridge_messages_dropped_total") < 50 && shmbus::mono_now_ns() < deadline) {
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(big.publish(payload), shmbus::PublishResult::kOk);
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_GE(metric(bridge.port, "shmbus_bridge_messages_dropped_total"), 50);
  // The publisher was never slowed (it overwrites), and the healthy client
  // still gets its messages (the bound is for sanitizer builds, where
  // encoding the 60 kB messages that were already taken is slow).
  int fresh = 0;
  for (int i = 0; i < 400 && fresh < 20; ++i) {
    const auto m = healthy.read(15s);
    ASSERT_TRUE(m) << "the healthy client stopped receiving";
    if (m->find("hello") != std::string::npos) ++fresh;
  }
  EXPECT_EQ(fresh, 20);
}

TEST(BridgeTest, RoslibInAHeadlessBrowserSubscribesBeforeThePublisherCreatesAChannelAndCallsTheAdder) {
  if (!std::filesystem::exists("/usr/bin/chromium"))
    GTEST_FAIL() << "no /usr/bin/chromium: run scripts/install-deps.sh";
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  const std::string screenshot = std::string(SHMBUS_TEST_LOG_DIR) + "/roslib_browser.png";
  std::filesystem::create_directories(SHMBUS_TEST_LOG_DIR);
  std::filesystem::remove(screenshot);
  constexpr int kCount = 20;
  ChildProcess browser(
      {"/usr/bin/env", "node", kJs + "/bridge_roslib_browser.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port),
       "/browser/in", "/browser/out", "/example/add", std::to_string(kCount), screenshot},
      false);
  // The page subscribed to /browser/in, which nothing carries yet: the
  // publisher starts now and the page must get every message from the first.
  ASSERT_TRUE(browser.wait_for_output("browser ready", 60s)) << browser.output();
  // Both channels carry ROS 2's std_msgs/String, as a roslib page expects.
  shmbus::TypedPublisher<std_msgs::msg::String> in("/browser/in", d.context());
  std::vector<std::string> sent;
  for (int i = 0; i < kCount; ++i) {
    sent.push_back("to the browser " + std::to_string(i));
    EXPECT_EQ(in.publish(std_msgs::msg::String{.data = sent.back()}), shmbus::PublishResult::kOk);
  }
  // What the page published made /browser/out; read from its first message.
  ASSERT_TRUE(channel_appears(domain, "/browser/out")) << bridge.process->poll_output();
  shmbus::TypedSubscriber<std_msgs::msg::String> out("/browser/out", d.context(),
                                                     shmbus::SubscriberOptions{.from_first = true});
  std::vector<std::string> expected_out;
  for (int i = 0; i < kCount; ++i) expected_out.push_back("from the browser " + std::to_string(i));
  EXPECT_EQ(take_strings(out, kCount, 10s), expected_out);

  const int status = browser.wait(60s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << browser.output();
  const std::string& output = browser.output();
  const auto last = output.rfind('{');
  ASSERT_NE(last, std::string::npos) << output;
  const json r = json::parse(output.substr(output.rfind("\n{") + 1));
  EXPECT_EQ(r["errors"], json::array()) << output;
  EXPECT_EQ(r["received"], json(sent));
  EXPECT_EQ(r["sum"], 42);
  EXPECT_TRUE(std::filesystem::file_size(screenshot) > 1000) << screenshot;
}

// The same ROS 2 types from roslib in a browser: a PoseStamped given in
// part and a 10,000-character shmbus_msgs/String-like message, known to the
// bridge only through --msg-path, published by the page and received back
// by its own subscriptions, every field as sent.
TEST(BridgeTest, RoslibInAHeadlessBrowserPublishesRos2TypesKnownOnlyThroughTheMsgPath) {
  if (!std::filesystem::exists("/usr/bin/chromium"))
    GTEST_FAIL() << "no /usr/bin/chromium: run scripts/install-deps.sh";
  shmbus::test::TestDomain d;
  const Ros2MsgRoot msgs;
  BridgeProcess bridge(d.context().domain(), msgs.bridge_args());
  ASSERT_NE(bridge.port, 0);
  const std::string screenshot = std::string(SHMBUS_TEST_LOG_DIR) + "/roslib_ros2.png";
  std::filesystem::create_directories(SHMBUS_TEST_LOG_DIR);
  std::filesystem::remove(screenshot);
  ChildProcess browser(
      {"/usr/bin/env", "node", kJs + "/bridge_roslib_ros2.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port),
       "geo_msgs/msg/PoseStamped", "text_msgs/msg/Text", "10000", screenshot},
      false);
  const int status = browser.wait(60s);
  const std::string& output = browser.output();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output << bridge.process->poll_output();
  ASSERT_NE(output.rfind("\n{"), std::string::npos) << output;
  const json r = json::parse(output.substr(output.rfind("\n{") + 1));
  EXPECT_EQ(r["errors"], json::array()) << output;
  EXPECT_EQ(r["pose"], expected_ros2_pose());
  EXPECT_EQ(r["text"], std::string(10000, 'r'));
}

// roslib's parameters (Ros.getParams, Param) through rosapi's get_param_names,
// get_param and set_param: the bridge reaches ROS 2's minimal publisher
// (ported, examples/rclcpp) through its rcl_interfaces services; the set
// reaches the node, a value of another type is refused with the node's
// reason, and a parameter not set is said so.
TEST(BridgeTest, RoslibListsGetsAndSetsANodesParameters) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  ChildProcess node({SHMBUS_EXAMPLE_MINIMAL_PUBLISHER, "--ros-args", "-p", "period_ms:=50"}, true,
                    {"SHMBUS_DOMAIN=" + domain});
  ASSERT_TRUE(node.wait_for_output("Publishing: ", 10s)) << node.poll_output();  // its services are up
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  const json r = run_node({kJs + "/bridge_roslib_params.mjs", "ws://127.0.0.1:" + std::to_string(bridge.port),
                           "/minimal_publisher:period_ms", "20"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array());
  EXPECT_EQ(r["names"], json({"/minimal_publisher:period_ms"}));
  EXPECT_EQ(r["before"], 50);
  EXPECT_EQ(r["after"], 20);
  ASSERT_EQ(r["refused"].size(), 1U) << r;
  EXPECT_EQ(r["refused"][0],
            "set_param /minimal_publisher:period_ms: refused: parameter 'period_ms' is integer, not string");
  EXPECT_EQ(r["missing"], json({"parameter not set"}));
  node.signal(SIGINT);
  EXPECT_EQ(node.wait(5s), 0) << node.poll_output();
}

TEST(BridgeTest, ARoslibClientServesAServiceThatShmbusProcessesCall) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  // The adder makes example_srvs/AddTwoInts known in the domain.
  const auto adder = start_adder(domain);
  ASSERT_TRUE(adder);
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  ASSERT_TRUE(std::filesystem::exists(kJs + "/node_modules/roslib")) << "run scripts/install-deps.sh";
  ChildProcess js({"/usr/bin/env", "node", kJs + "/bridge_roslib_serve.mjs",
                   "ws://127.0.0.1:" + std::to_string(bridge.port), "/js/add", "3"},
                  false);
  ASSERT_TRUE(js.wait_for_output("advertised", 20s)) << js.output();
  shmbus::TypedServiceClient<example_srvs::srv::AddTwoInts> client("/js/add", d.context());
  ASSERT_TRUE(client.wait_for_server(5s)) << bridge.process->output();
  for (std::int64_t i = 0; i < 3; ++i) {
    example_srvs::srv::AddTwoInts::Request request{};
    request.a = 20 + i;
    request.b = 22;
    example_srvs::srv::AddTwoInts::Response response{};
    const shmbus::CallResult r = client.call(request, response, 5s);
    ASSERT_TRUE(r.ok()) << shmbus::to_string(r.status);
    EXPECT_EQ(response.sum, 42 + i);
  }
  EXPECT_EQ(js.wait(10s), 0) << js.output();
  const auto at = js.output().rfind("{\"errors\"");
  ASSERT_NE(at, std::string::npos) << js.output();
  const json report = json::parse(js.output().substr(at));
  EXPECT_EQ(report["requests"].size(), 3U);
  EXPECT_EQ(report["requests"][0], json({{"a", 20}, {"b", 22}}));
  // The client is gone: so is the server (the bridge withdraws it when the
  // connection ends), and a call then says there is none. Waited for, not
  // timed: a busy machine may take a while to close the connection.
  const std::int64_t deadline = shmbus::mono_now_ns() + 20'000'000'000;
  while (client.untyped().server_ready() && shmbus::mono_now_ns() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_FALSE(client.untyped().server_ready()) << "the bridge kept the service of a client that left";
  example_srvs::srv::AddTwoInts::Request request{};
  example_srvs::srv::AddTwoInts::Response response{};
  const shmbus::CallResult r = client.call(request, response, 2s);
  EXPECT_EQ(r.status, shmbus::CallStatus::kNoServer) << shmbus::to_string(r.status);
}

TEST(BridgeTest, WithATokenClientsMustPresentIt) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  const TempFile token("bridge_token", "s3cret\n");
  BridgeProcess bridge(domain, {"--token-file", token.path});
  ASSERT_NE(bridge.port, 0);
  {
    // An operation before auth: refused, and the connection closed.
    RawClient c(bridge.port);
    c.send(R"({"op": "subscribe", "topic": "/chatter"})");
    const auto s = c.read_until("before auth");
    ASSERT_TRUE(s);
    EXPECT_FALSE(c.read_until("hello"));
    EXPECT_EQ(c.code, 1008);  // policy violation
  }
  {
    RawClient c(bridge.port);
    c.send(R"({"op": "auth", "mac": "wrong"})");
    EXPECT_TRUE(c.read_until("wrong token"));
  }
  {
    RawClient c(bridge.port);
    c.send(R"({"op": "auth", "mac": "s3cret"})");
    c.send(R"({"op": "subscribe", "topic": "/chatter"})");
    EXPECT_TRUE(c.read_until("hello"));
  }
  // Foxglove clients show it in the upgrade request.
  EXPECT_THROW(RawClient(bridge.port, "foxglove.websocket.v1"), boost::system::system_error);
  RawClient fox(bridge.port, "foxglove.websocket.v1", "/?token=s3cret");
  EXPECT_TRUE(fox.read_until("serverInfo"));
  // With a token, /metrics needs it too (-1: no such counter in the 401).
  EXPECT_EQ(metric(bridge.port, "shmbus_bridge_connections_refused_total"), -1);
  EXPECT_GE(metric(bridge.port, "shmbus_bridge_connections_refused_total", "s3cret"), 3);
}

/// Two domains joined by `shmbus-bridge connect` (domain A) to a
/// `shmbus-bridge` server (domain B): /a_out exported A -> B, /b_out
/// imported B -> A, /clash of different types on the two sides.
struct LinkedDomains {
  LinkedDomains()
      : a_domain(a.context().domain()),
        b_domain(b.context().domain()),
        a_in(std::in_place, "/b_out", a.context()),
        b_in(std::in_place, "/a_out", b.context()),
        clash_a("/clash", a.context()),
        clash_b("/clash", b.context()) {
    pub_a = start_publisher(a_domain, "/a_out", "200");
    pub_b = start_publisher(b_domain, "/b_out", "200");
    server = std::make_unique<BridgeProcess>(b_domain);
    port = server->port;
    uplink = std::make_unique<ChildProcess>(
        std::vector<std::string>{kBridge, "connect", "ws://127.0.0.1:" + std::to_string(port), "--export",
                                 "/a_out,/clash", "--import", "/b_out"},
        true, std::vector<std::string>{"SHMBUS_DOMAIN=" + a_domain});
  }
  ~LinkedDomains() {
    uplink->signal(SIGTERM);
    const int status = uplink->wait(10s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << uplink->output();
  }
  shmbus::test::TestDomain a, b;
  std::string a_domain, b_domain;
  std::optional<shmbus::TypedSubscriber<shmbus_msgs::String>> a_in, b_in;
  shmbus::TypedPublisher<shmbus_msgs::String> clash_a;
  shmbus::TypedPublisher<shmbus_msgs::Header> clash_b;
  std::unique_ptr<ChildProcess> pub_a, pub_b;
  std::unique_ptr<BridgeProcess> server;
  int port = 0;
  std::unique_ptr<ChildProcess> uplink;
};

TEST(BridgeConnectTest, TwoDomainsExchangeBothWaysRefuseAMismatchAndResumeAfterTheServerRestarts) {
  LinkedDomains l;
  ASSERT_NE(l.port, 0);
  ASSERT_TRUE(l.uplink->wait_for_output("export /a_out (shmbus_msgs/String): flowing", 10s)) << l.uplink->output();
  ASSERT_TRUE(l.uplink->wait_for_output("import /b_out (shmbus_msgs/String): flowing", 10s)) << l.uplink->output();
  // The mismatch refuses that topic only, naming both types.
  ASSERT_TRUE(l.uplink->wait_for_output("export /clash: refused: type mismatch", 10s)) << l.uplink->output();
  EXPECT_NE(l.uplink->output().find("the remote side says shmbus_msgs/Header, the channel carries shmbus_msgs/String"),
            std::string::npos);
  // Both ways, decoded equal.
  auto got = take_strings(*l.b_in, 5, 5s);
  ASSERT_EQ(got.size(), 5U);
  for (const auto& m : got) EXPECT_EQ(m, "hello");
  got = take_strings(*l.a_in, 5, 5s);
  ASSERT_EQ(got.size(), 5U);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(l.clash_a.publish(shmbus_msgs::String{}), shmbus::PublishResult::kOk);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(shmbus::introspect::ChannelReader(l.b_domain, "/clash").view().messages, 0U)
      << "nothing of A's /clash reached B's";

  // The server dies; the link notices, retries, and resumes when it is back.
  l.server->process->signal(SIGKILL);
  l.server->process->wait(5s);
  ASSERT_TRUE(l.uplink->wait_for_output("is down; reconnecting", 10s)) << l.uplink->output();
  std::this_thread::sleep_for(500ms);
  l.server =
      std::make_unique<BridgeProcess>(l.b_domain, std::vector<std::string>{}, "127.0.0.1:" + std::to_string(l.port));
  ASSERT_EQ(l.server->port, l.port) << l.server->process->output();
  ASSERT_TRUE(l.uplink->wait_for_output("were published while the link was down", 15s)) << l.uplink->output();
  // Fresh messages flow again (the subscriber skips what it holds).
  while (l.b_in->take()) {
  }
  got = take_strings(*l.b_in, 5, 5s);
  EXPECT_EQ(got.size(), 5U);
  got = take_strings(*l.a_in, 5, 5s);
  EXPECT_EQ(got.size(), 5U);
}

TEST(BridgeConnectTiming, ExportsAndImportsKeepTheirRateWithinOnePercent) {
  LinkedDomains l;
  ASSERT_TRUE(l.uplink->wait_for_output("import /b_out (shmbus_msgs/String): flowing", 10s)) << l.uplink->output();
  std::this_thread::sleep_for(2500ms);  // a full window of bridged messages
  // hz on each side at once: the bridged copy against what its source
  // really carried in the same window.
  for (const auto& [from, to, channel] :
       {std::tuple{l.a_domain, l.b_domain, "/a_out"}, std::tuple{l.b_domain, l.a_domain, "/b_out"}}) {
    const auto [source, copy] = rates_at_once(kShmtool, {from, channel}, {to, channel});
    EXPECT_GT(source, 0.0) << channel;
    EXPECT_NEAR(copy, source, 0.01 * source) << channel;
  }
}

TEST(BridgeTest, BadSettingsExitTwoWithOneLine) {
  const auto run_bridge = [](std::vector<std::string> args) {
    args.insert(args.begin(), kBridge);
    ChildProcess p(args, true, std::vector<std::string>{"SHMBUS_DOMAIN=tbridge_bad"});
    const int status = p.wait(10s);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, p.output());
  };
  auto [code, out] = run_bridge({"--listen", "localhost"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out, "shmbus-bridge: listen address \"localhost\" is not ADDRESS:PORT (e.g. 127.0.0.1:9090)\n");
  std::tie(code, out) = run_bridge({"--listen", "127.0.0.1:0", "--token-file", "/nonexistent/token"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out, "shmbus-bridge: token file /nonexistent/token cannot be read; give a readable file (--token-file)\n");
  std::tie(code, out) = run_bridge({"--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/cert.pem"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out,
            "shmbus-bridge: TLS needs a certificate and its key: give both --tls-cert FILE and --tls-key FILE "
            "(bridge.tls_cert and bridge.tls_key)\n");
  std::tie(code, out) = run_bridge(
      {"--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out,
            "shmbus-bridge: TLS certificate /nonexistent/cert.pem does not exist or is not a file; give a PEM file "
            "(--tls-cert)\n");
  std::tie(code, out) = run_bridge({"connect", "http://127.0.0.1:9090", "--import", "/x"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out,
            "shmbus-bridge: \"http://127.0.0.1:9090\" is not ws://HOST[:PORT][/PATH] or wss://... (e.g. "
            "ws://127.0.0.1:9090)\n");
  std::tie(code, out) = run_bridge({"--bogus"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--bogus"), std::string::npos);
}

TEST(BridgeTlsTest, ClientsSpeakWssAndHttpsPlainOnesAreRefusedAndTheUplinkVerifiesTheServer) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("bridge_tls_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(make_certificate(dir));
  const std::string cert = (dir / "cert.pem").string();
  shmbus::test::TestDomain server_side, client_side;
  const std::string domain = server_side.context().domain();
  auto pub = start_publisher(domain, "/tls_chatter");
  BridgeProcess bridge(domain, {"--tls-cert", cert, "--tls-key", (dir / "key.pem").string()});
  ASSERT_NE(bridge.port, 0);
  EXPECT_NE(bridge.process->output().find("listening on wss://"), std::string::npos);
  const std::string host_port = "127.0.0.1:" + std::to_string(bridge.port);

  // roslib over wss:// (the certificate trusted through Node's own
  // mechanism), https:// /metrics, and a plain ws:// client refused.
  const json r = run_node({kJs + "/bridge_tls.mjs", host_port, "/tls_chatter"}, {"NODE_EXTRA_CA_CERTS=" + cert});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array()) << r.dump();
  EXPECT_NE(r.value("plain", std::string{}).rfind("error: ", 0), std::string::npos) << r.dump();
  EXPECT_NE(r["topics"]["topics"].dump().find("/tls_chatter"), std::string::npos) << r.dump();
  EXPECT_EQ(r["topicType"], "shmbus_msgs/String");
  ASSERT_EQ(r["received"].size(), 3U) << r.dump();
  for (const auto& m : r["received"]) EXPECT_EQ(m["data"], "hello");
  EXPECT_EQ(r["metricsStatus"], 200);
  EXPECT_GE(r.value("connectionsRefused", 0), 1) << "the plain client counts as refused";
  EXPECT_EQ(r["clients"], 1) << "the wss:// client was connected";
  EXPECT_TRUE(bridge.process->wait_for_output("TLS handshake failed", 5s)) << bridge.process->output();

  // The uplink checks the server's certificate: unknown authority -> no
  // link, said with the fix; with --tls-ca -> the import flows.
  const std::vector<std::string> env{"SHMBUS_DOMAIN=" + client_side.context().domain()};
  {
    ChildProcess untrusting(
        {kBridge, "connect", "wss://localhost:" + std::to_string(bridge.port), "--import", "/tls_chatter"}, true, env);
    EXPECT_TRUE(untrusting.wait_for_output("TLS handshake failed: certificate verify failed", 10s))
        << untrusting.output();
    EXPECT_NE(untrusting.output().find("trust it with --tls-ca FILE"), std::string::npos);
    EXPECT_EQ(untrusting.output().find("flowing"), std::string::npos);
    untrusting.signal(SIGTERM);
    const int status = untrusting.wait(10s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << untrusting.output();
  }
  shmbus::TypedSubscriber<shmbus_msgs::String> imported("/tls_chatter", client_side.context());
  ChildProcess uplink({kBridge, "connect", "wss://localhost:" + std::to_string(bridge.port), "--tls-ca", cert,
                       "--import", "/tls_chatter"},
                      true, env);
  ASSERT_TRUE(uplink.wait_for_output("import /tls_chatter (shmbus_msgs/String): flowing", 10s)) << uplink.output();
  const auto got = take_strings(imported, 5, 5s);
  ASSERT_EQ(got.size(), 5U) << uplink.output();
  for (const auto& m : got) EXPECT_EQ(m, "hello");
  uplink.signal(SIGTERM);
  const int status = uplink.wait(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << uplink.output();
  fs::remove_all(dir);
}

TEST(BridgeTest, UnitFilePassesSystemdAnalyzeVerify) {
  EXPECT_EQ(shmbus::test::verify_unit("shmbus-bridge.service", "/usr/bin/shmbus-bridge", kBridge), "");
}

}  // namespace
