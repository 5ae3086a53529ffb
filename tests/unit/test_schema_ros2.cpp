// Definitions that use every feature of the ROS 2 interface language
// (tests/msg_ros2, laid out as ROS 2 installs an interface package), through
// every codec: JSON -> bytes -> CDR -> bytes -> JSON exactly, the CDR byte
// for byte what Foxglove's ROS 2 serializer (@foxglove/rosmsg2-
// serialization) writes for the same definition and message, and read back
// by it to the same message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ros2_test_msgs/Defaults.hpp"
#include "ros2_test_msgs/Outer.hpp"
#include "ros2_test_msgs/Primitives.hpp"
#include "ros2_test_msgs/Travel_Feedback.hpp"
#include "ros2_test_msgs/Travel_Goal.hpp"
#include "ros2_test_msgs/Travel_Result.hpp"
#include "ros2_test_msgs/srv/query.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "support/node_script.hpp"

using namespace shmbus::schema;

namespace {

/// The test definitions, after the shipped ones.
const TypeCatalog& ros2_catalog() {
  static const TypeCatalog c({SHMBUS_SOURCE_DIR "/tests/msg_ros2"}, false);
  return c;
}

std::string hex_of(std::span<const std::byte> b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const std::byte x : b) {
    out += kDigits[std::to_integer<unsigned>(x) >> 4];
    out += kDigits[std::to_integer<unsigned>(x) & 15];
  }
  return out;
}

std::span<const std::byte> view_of(const std::string& s) { return std::as_bytes(std::span{s}); }

/// One type and messages of it (partial: the rest from its defaults).
struct Case {
  std::string type;
  std::vector<Json> messages;
};

std::vector<Case> cases() {
  const Json inner = Json::parse(R"({"label": "hello", "values": [1.5, -2.25, 0.125], "small": [1, 2, 3, 4]})");
  const Json inner2 = Json::parse(R"({"label": "", "values": [], "small": [], "short_name": "12345678"})");
  Json covariance = Json(std::vector<double>(36, 0.0));
  covariance[0] = 0.5;
  covariance[35] = 2.5;
  const Json middle = {{"stamp", {{"sec", -5}, {"nanosec", 999999999}}},
                       {"inner", inner},
                       {"pair", Json::array({inner2, inner})},
                       {"inners", Json::array({inner, inner2, inner})},
                       {"names", Json::array({"a", "", "ccc"})},
                       {"two_names", Json::array({"x", "yz"})},
                       {"few", Json::array({-3})}};
  return {
      {"ros2_test_msgs/msg/Primitives",
       {Json::object(), Json::parse(R"({"flag": false, "i64": -1, "u64": 9007199254740993, "text": ""})")}},
      {"ros2_test_msgs/msg/Inner", {Json::object(), inner, inner2, Json{{"label", "héllo wörld"}, {"values", {0.5}}}}},
      {"ros2_test_msgs/msg/Middle", {Json::object(), middle}},
      {"ros2_test_msgs/msg/Outer",
       {Json::object(),
        {{"middles", Json::array({middle, Json::object(), middle})},
         {"one", middle},
         {"bounded", "eight..."},
         {"bits", Json::array({true, false, true})},
         {"timeout", {{"sec", 1}, {"nanosec", 2}}}}}},
      {"ros2_test_msgs/msg/Empty", {Json::object()}},
      {"ros2_test_msgs/srv/Query_Request", {Json::parse(R"({"question": "why?", "hints": [1, -1]})")}},
      {"ros2_test_msgs/srv/Query_Response",
       {Json::parse(R"({"ok": true, "answers": ["because", "so"], "detail": {"label": "d"}})")}},
      {"ros2_test_msgs/action/Travel_Goal", {Json::parse(R"({"destination": "dock", "waypoints": [0.5, 1.5]})")}},
      {"ros2_test_msgs/action/Travel_Result", {Json::parse(R"({"arrived": true, "note": "ok"})")}},
      {"ros2_test_msgs/action/Travel_Feedback", {Json::parse(R"({"progress": 0.25, "ticks": [{}, {}, {}]})")}},
      // Shipped under ROS 2's names, with ROS 2's fields.
      {"geometry_msgs/msg/PoseWithCovariance",
       {Json::object(), Json{{"pose", {{"position", {{"x", 1.5}}}}}, {"covariance", covariance}}}},
      {"geometry_msgs/msg/Polygon", {Json::parse(R"({"points": [{"x": 1, "y": 2, "z": 3}, {"x": -0.5}]})")}},
      {"geometry_msgs/msg/Inertia", {Json::parse(R"({"m": 2.5, "com": {"z": 0.25}, "izz": 0.125})")}},
      {"geometry_msgs/msg/Pose2D", {Json::parse(R"({"x": 1, "y": 2, "theta": 0.5})")}},
      {"std_msgs/msg/ColorRGBA", {Json::parse(R"({"r": 1, "g": 0.5, "b": 0.25, "a": 1})")}},
      {"std_msgs/msg/Char", {Json::parse(R"({"data": 65})")}},
      {"std_msgs/msg/Int64", {Json::parse(R"({"data": -9007199254740993})")}},
      {"builtin_interfaces/msg/Duration", {Json::parse(R"({"sec": -1, "nanosec": 500000000})")}},
  };
}

/// Runs tests/js/ros2_cdr.mjs on `input`; its output (objects compared key
/// by key, in no order).
nlohmann::json foxglove(const Json& input) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("shmbus_ros2_cdr_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(file) << input.dump();
  nlohmann::json out = shmbus::test::run_node_script("ros2_cdr.mjs", file);
  std::filesystem::remove(file);
  return out;
}

}  // namespace

TEST(Ros2DefinitionsTest, EveryTypeRoundTripsJsonBytesCdrBytesJsonExactly) {
  for (const Case& c : cases()) {
    const Schema s = ros2_catalog().find(c.type);
    for (const Json& partial : c.messages) {
      const Json message = s.with_defaults(partial);
      const std::vector<std::byte> bytes = s.encode(message);
      EXPECT_EQ(s.decode(bytes), message) << c.type;
      std::string cdr;
      s.to_cdr(bytes, cdr);
      // The codecs lay blocks out in the same order: the same bytes.
      EXPECT_EQ(hex_of(s.from_cdr(view_of(cdr))), hex_of(bytes)) << c.type << " " << message;
    }
  }
}

TEST(Ros2DefinitionsTest, DefaultsAndConstantsAreTheDefinitions) {
  const Schema p = ros2_catalog().find("ros2_test_msgs/Primitives");
  const Json d = p.decode(p.encode(p.with_defaults(Json::object())), true);
  EXPECT_EQ(d["flag"], true);
  EXPECT_EQ(d["octet"], 255);
  EXPECT_EQ(d["letter"], 65);
  EXPECT_EQ(d["f32"], -1.5);
  EXPECT_EQ(d["i64"], "-9223372036854775808");
  EXPECT_EQ(d["u64"], "18446744073709551615");
  EXPECT_EQ(d["text"], "a \"quoted\" # default");
  const Schema m = ros2_catalog().find("ros2_test_msgs/Middle");
  EXPECT_EQ(m.with_defaults(Json::object())["few"], Json::array({1, 2}));
  EXPECT_EQ(m.with_defaults(Json::object())["inner"]["short_name"], "in") << "nested defaults";
  EXPECT_EQ(m.with_defaults(Json{{"inners", Json::array({Json::object()})}})["inners"][0]["short_name"], "in")
      << "each element of a sequence of messages from its defaults";
  ASSERT_EQ(m.root().constants.size(), 2U);
  EXPECT_EQ(m.root().constants[1].value, "middle");
  const Schema o = ros2_catalog().find("ros2_test_msgs/Outer");
  EXPECT_EQ(o.root().constants[0].value, "-9000000000");
  EXPECT_EQ(o.root().constants[1].literal(), "\"hi\"");
}

TEST(Ros2DefinitionsTest, CdrIsByteForByteWhatFoxgloveWritesAndFoxgloveReadsIt) {
  Json input = {{"cases", Json::array()}};
  std::vector<std::vector<Json>> expected;
  for (const Case& c : cases()) {
    const Schema s = ros2_catalog().find(c.type);
    Json one = {{"definition", ros2msg_text(s.root())}, {"messages", Json::array()}, {"cdr", Json::array()}};
    std::vector<Json> exact;
    for (const Json& partial : c.messages) {
      const std::vector<std::byte> bytes = s.encode(s.with_defaults(partial));
      const Json message = s.decode(bytes, true);  // 64-bit integers as strings: exact in JavaScript
      std::string cdr;
      s.to_cdr(bytes, cdr);
      one["messages"].push_back(message);
      one["cdr"].push_back(hex_of(view_of(cdr)));
      exact.push_back(message);
    }
    input["cases"].push_back(one);
    expected.push_back(exact);
  }
  const nlohmann::json out = foxglove(input);
  ASSERT_EQ(out["cases"].size(), expected.size()) << out.dump();
  const std::vector<Case> all = cases();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    for (std::size_t k = 0; k < expected[i].size(); ++k) {
      // Foxglove's writer sizes a string by its UTF-16 length, not its
      // UTF-8 bytes, and so cuts a string that is not ASCII short (its
      // reader reads ours right): for those, only what it reads is compared.
      const std::string text = expected[i][k].dump();
      const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; });
      if (ascii) {
        EXPECT_EQ(out["cases"][i]["written"][k], input["cases"][i]["cdr"][k].get<std::string>())
            << all[i].type << " message " << k;
      }
      EXPECT_EQ(out["cases"][i]["read"][k], nlohmann::json::parse(text)) << all[i].type << " message " << k;
    }
  }
}

TEST(Ros2DefinitionsTest, BlocksOutsideTheMessageOrOverlappingAreRefusedNeverFollowed) {
  const Schema s = ros2_catalog().find("ros2_test_msgs/Inner");
  std::vector<std::byte> good = s.encode(s.with_defaults(Json::parse(R"({"label": "abc", "values": [1.0]})")));
  const auto refused = [&](std::uint32_t field_offset, VarRef r) -> std::string {
    std::vector<std::byte> b = good;
    std::memcpy(b.data() + field_offset, &r, sizeof r);
    try {
      (void)s.decode(b);
    } catch (const CodecError& e) {
      std::string cdr;
      EXPECT_THROW(s.to_cdr(b, cdr), CodecError);
      return e.what();
    }
    return "accepted";
  };
  const std::uint32_t label = s.root().fields[0].offset;
  const std::uint32_t values = s.root().fields[1].offset;
  const std::uint32_t small = s.root().fields[2].offset;
  const auto size = static_cast<std::uint32_t>(good.size());
  EXPECT_NE(refused(label, {size, 1}).find("outside the message"), std::string::npos);
  EXPECT_NE(refused(label, {0, 3}).find("outside the message"), std::string::npos) << "into the fixed part";
  EXPECT_NE(refused(values, {size - 2, 1}).find("outside the message"), std::string::npos) << "misaligned or past";
  EXPECT_NE(refused(values, {s.root().size, 0xffffffffU}).find("outside the message"), std::string::npos);
  EXPECT_NE(refused(small, {s.root().size, 5}).find("at most 4"), std::string::npos);
  EXPECT_EQ(refused(label, {size + 7, 0}), "accepted") << "an empty block's offset is not followed";
  // Two VarRefs at one block: the bytes the blocks reference add up to
  // more than the message holds (overlaps could make a small message
  // decode to a huge one).
  good = s.encode(s.with_defaults(Json{{"label", "abc"}, {"values", Json(std::vector<double>(100, 1.0))}}));
  VarRef v;
  std::memcpy(&v, good.data() + values, sizeof v);
  EXPECT_NE(refused(label, {v.offset, 400}).find("overlap"), std::string::npos);
}

TEST(Ros2DefinitionsTest, ForeignCdrIsCheckedBeforeAnythingIsAllocated) {
  const Schema s = ros2_catalog().find("ros2_test_msgs/Middle");
  std::string cdr;
  s.to_cdr(s.encode(s.with_defaults(Json::object())), cdr);
  // Every cut of a valid message is refused, never read past.
  for (std::size_t n = 0; n < cdr.size(); ++n) {
    EXPECT_THROW((void)s.from_cdr(view_of(cdr.substr(0, n))), CodecError) << n;
  }
  // A sequence claiming more elements than bytes are left.
  const Schema inner = ros2_catalog().find("ros2_test_msgs/Inner");
  const std::string huge(
      "\x00\x01\x00\x00"
      "\x01\x00\x00\x00"
      "\x00\x00\x00\x00"
      "\xff\xff\xff\x7f",
      16);
  try {
    (void)inner.from_cdr(view_of(huge));
    FAIL();
  } catch (const CodecError& e) {
    EXPECT_STREQ(e.what(), "ros2_test_msgs/Inner.values: 2147483647 elements in 0 bytes of CDR");
  }
  // A message past the limit the caller sets.
  std::string big;
  inner.to_cdr(inner.encode(inner.with_defaults(Json{{"values", Json(std::vector<double>(1000, 1.0))}})), big);
  EXPECT_NO_THROW((void)inner.from_cdr(view_of(big)));
  EXPECT_THROW((void)inner.from_cdr(view_of(big), 1024), CodecError);
}

TEST(Ros2DefinitionsTest, AMessageWithoutFieldsIsOneByteSoManyOfThemAreNoOverlap) {
  const Schema empty = ros2_catalog().find("ros2_test_msgs/Empty");
  EXPECT_EQ(empty.root().size, 1U);
  const Schema feedback = ros2_catalog().find("ros2_test_msgs/Travel_Feedback");
  const Json many = {{"progress", 0.5}, {"ticks", Json(std::vector<Json>(1000, Json::object()))}};
  const std::vector<std::byte> bytes = feedback.encode(many);
  EXPECT_EQ(feedback.decode(bytes), many);
  std::string cdr;
  feedback.to_cdr(bytes, cdr);
  EXPECT_EQ(cdr.size(), 4U + 4 + 4 + 1000) << "ROS 2 gives each empty message one byte";
  // A count that claims more of them than the message has bytes is refused.
  std::vector<std::byte> lying = bytes;
  VarRef r;
  std::memcpy(&r, lying.data() + feedback.root().fields[1].offset, sizeof r);
  r.count = 100000;
  std::memcpy(lying.data() + feedback.root().fields[1].offset, &r, sizeof r);
  EXPECT_THROW((void)feedback.decode(lying), CodecError);
}

namespace {

/// Every case of `type` through the generated C++ of `T`: the codec's bytes
/// read by T's View into an owning T, which writes them again, byte for
/// byte, into a buffer of garbage of exactly its wire_size() through its
/// Builder. And T{} is the definition's defaults.
template <typename T>
void generated_round_trip(const std::string& type) {
  const Schema s = ros2_catalog().find(type);
  std::size_t checked = 0;
  for (const Case& c : cases()) {
    if (c.type != type) continue;
    for (const Json& partial : c.messages) {
      const std::vector<std::byte> bytes = s.encode(s.with_defaults(partial));
      const T owned = T::from(typename T::View(bytes));
      EXPECT_EQ(owned.wire_size(), bytes.size()) << type << " " << partial;
      std::vector<std::byte> out(bytes.size(), std::byte{0xab});  // exactly wire_size()
      shmbus::msg::Writer writer(out);
      owned.build(typename T::Builder(writer));
      ASSERT_EQ(writer.size(), bytes.size()) << type << " " << partial;
      out.resize(writer.size());
      EXPECT_EQ(hex_of(out), hex_of(bytes)) << type << " " << partial;
      ++checked;
    }
  }
  EXPECT_NE(checked, 0U) << type;
  EXPECT_EQ(s.decode(shmbus::msg::to_bytes(T{})), s.with_defaults(Json::object())) << type;
}

}  // namespace

TEST(Ros2GeneratedTest, ViewsBuildersAndOwningTypesWriteTheCodecsBytes) {
  generated_round_trip<ros2_test_msgs::msg::Primitives>("ros2_test_msgs/msg/Primitives");
  generated_round_trip<ros2_test_msgs::msg::Inner>("ros2_test_msgs/msg/Inner");
  generated_round_trip<ros2_test_msgs::msg::Middle>("ros2_test_msgs/msg/Middle");
  generated_round_trip<ros2_test_msgs::msg::Outer>("ros2_test_msgs/msg/Outer");
  generated_round_trip<ros2_test_msgs::Query_Request>("ros2_test_msgs/srv/Query_Request");
  generated_round_trip<ros2_test_msgs::Query_Response>("ros2_test_msgs/srv/Query_Response");
  generated_round_trip<ros2_test_msgs::Travel_Goal>("ros2_test_msgs/action/Travel_Goal");
  generated_round_trip<ros2_test_msgs::Travel_Result>("ros2_test_msgs/action/Travel_Result");
  generated_round_trip<ros2_test_msgs::Travel_Feedback>("ros2_test_msgs/action/Travel_Feedback");
}

TEST(Ros2GeneratedTest, AViewReadsEveryFieldWhereItLies) {
  const Schema s = ros2_catalog().find("ros2_test_msgs/Outer");
  const Case outer = cases()[3];
  ASSERT_EQ(outer.type, "ros2_test_msgs/msg/Outer");
  const Json j = s.with_defaults(outer.messages[1]);
  const std::vector<std::byte> bytes = s.encode(j);
  const ros2_test_msgs::Outer_View v(bytes);
  ASSERT_EQ(v.middles().size(), 3U);
  EXPECT_EQ(v.middles()[2].inners()[1].short_name(), "12345678");
  EXPECT_EQ(v.middles()[0].inner().values()[1], -2.25F);
  EXPECT_EQ(v.middles()[1].few().size(), 2U) << "its default";
  EXPECT_EQ(v.one().names()[2], "ccc");
  EXPECT_EQ(v.one().two_names()[1], "yz");
  EXPECT_EQ(v.one().pair()[1].label(), "hello");
  EXPECT_EQ(v.one().stamp().sec, -5);
  EXPECT_EQ(v.bounded(), "eight...");
  EXPECT_EQ(std::vector<std::uint8_t>(v.bits().begin(), v.bits().end()), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(v.fixed()[1], -7);
  EXPECT_EQ(v.timeout().nanosec, 2U);
  EXPECT_EQ(v.last(), 0.5);
  std::vector<std::string> labels;
  for (const auto& m : v.middles()) labels.emplace_back(m.inner().label());
  EXPECT_EQ(labels, (std::vector<std::string>{"hello", "", "hello"}));
  // Defaults and constants of the owning types are the definitions'.
  EXPECT_EQ(ros2_test_msgs::Outer::BIG, -9000000000LL);
  EXPECT_STREQ(ros2_test_msgs::Outer::GREETING, "hi");
  EXPECT_STREQ(ros2_test_msgs::msg::Middle::NAME, "middle");
  EXPECT_EQ(ros2_test_msgs::Outer{}.fixed, (std::array<std::int64_t, 2>{7, -7}));
  EXPECT_EQ(ros2_test_msgs::Middle{}.few, (std::vector<std::int16_t>{1, 2}));
  EXPECT_EQ(ros2_test_msgs::Inner{}.short_name.view(), "in");
  EXPECT_EQ(ros2_test_msgs::Primitives{}.text, "a \"quoted\" # default");
  EXPECT_EQ(ros2_test_msgs::Primitives{}.u64, std::numeric_limits<std::uint64_t>::max());
}

TEST(Ros2GeneratedTest, AViewRefusesBlocksOutsideItsMessageAndACopyRefusesOverlaps) {
  using ros2_test_msgs::Inner;
  using ros2_test_msgs::Middle;
  const auto what = [](const auto& f) -> std::string {
    try {
      f();
    } catch (const shmbus::Error& e) {
      return e.what();
    }
    return "accepted";
  };
  Inner in;
  in.label = "abc";
  in.values = {1.0F};
  std::vector<std::byte> bytes = shmbus::msg::to_bytes(in);
  const VarRef out{static_cast<std::uint32_t>(bytes.size()), 1};
  std::memcpy(bytes.data(), &out, sizeof out);  // label's VarRef, at offset 0
  EXPECT_NE(what([&] { (void)Inner::View(bytes).label(); }).find("ros2_test_msgs/Inner.label: 1 elements"),
            std::string::npos);
  EXPECT_NE(what([&] { (void)Inner::from(Inner::View(bytes)); }).find("outside the message"), std::string::npos);
  EXPECT_EQ(Inner::View(bytes).values()[0], 1.0F) << "the other fields still read";
  EXPECT_NE(what([&] { (void)Inner::View(std::span(bytes).first(8)); }).find("fixed part"), std::string::npos);
  // Fifty strings that all point at one 200-byte label: each is inside the
  // message, but a copy would be 10,000 bytes from a message of ~1,000.
  Middle m;
  m.inner.label = std::string(200, 'x');
  m.names.resize(50);
  bytes = shmbus::msg::to_bytes(m);
  const Middle::View v(bytes);
  const auto label = static_cast<std::uint32_t>(v.inner().label().data() - reinterpret_cast<const char*>(bytes.data()));
  VarRef names;
  std::memcpy(&names, bytes.data() + 112, sizeof names);  // Middle.names' VarRef
  for (std::uint32_t i = 0; i < 50; ++i) {
    const VarRef r{label, 200};
    std::memcpy(bytes.data() + names.offset + 8 * i, &r, sizeof r);
  }
  EXPECT_EQ(Middle::View(bytes).names()[49].size(), 200U);
  EXPECT_NE(what([&] { (void)Middle::from(Middle::View(bytes)); }).find("overlap"), std::string::npos);
  // A builder says in one line what does not fit its buffer, and bounds.
  std::vector<std::byte> small(64);
  shmbus::msg::Writer writer(small);
  Inner::Builder b(writer);
  EXPECT_EQ(what([&] { b.set_label(std::string(1000, 'y')); }),
            "ros2_test_msgs/Inner.label: the message needs at least 1032 bytes; its buffer (a loan, a channel's "
            "max_message_size) holds 64");
  EXPECT_NE(what([&] { (void)b.resize_small(5); }).find("5 elements in a sequence of at most 4"), std::string::npos);
  EXPECT_NE(what([&] { b.set_short_name("ninechars"); }).find("do not fit string<8>"), std::string::npos);
}

namespace {

std::string rosbag2_rule() { return std::string(80, '=') + "\n"; }

}  // namespace

TEST(SchemaRos2, ASectionRepeatedAsRosbag2WritesItIsReadOnceAndOneThatDiffersIsRefusedNamingBoth) {
  const std::string same = "a/B b\na/C c\n" + rosbag2_rule() + "MSG: a/B\na/C inner\n" + rosbag2_rule() +
                           "MSG: a/msg/C\nint32 x\n\n" + rosbag2_rule() + "MSG: a/C\nint32 x\n";
  MessageSet set;
  EXPECT_EQ(set.add_ros2msg(same, "a/msg/A", "same"), "a/A");
  set.resolve();
  ASSERT_NE(set.find("a/C"), nullptr);
  EXPECT_EQ(set.find("a/A")->fields.size(), 2U);

  const std::string differs =
      "a/C c\n" + rosbag2_rule() + "MSG: a/C\nint32 x\n" + rosbag2_rule() + "MSG: a/C\nint64 x\n";
  MessageSet other;
  try {
    (void)other.add_ros2msg(differs, "a/msg/A", "differs");
    FAIL() << "a section that differs was accepted";
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("message a/C is defined twice, differently: at line 3 and at line 6"),
              std::string::npos)
        << e.what();
  }
}

TEST(SchemaRos2, AServiceEventWhoseSchemaIsTheSrvTextIsTheEventTypeRos2DerivesFromIt) {
  // rosbag2's schema of example_interfaces/srv/AddTwoInts_Event: the .srv.
  MessageSet from_srv;
  const std::string root = from_srv.add_ros2msg("# request\nint64 a\nint64 b\n---\nint64 sum\n",
                                                "example_interfaces/srv/AddTwoInts_Event", "srv");
  EXPECT_EQ(root, "example_interfaces/AddTwoInts_Event");
  from_srv.resolve();
  // The same type written out in full.
  const std::string rule = rosbag2_rule();
  MessageSet full;
  full.add_ros2msg(
      "service_msgs/ServiceEventInfo info\nAddTwoInts_Request[<=1] request\n"
      "AddTwoInts_Response[<=1] response\n" +
          rule +
          "MSG: service_msgs/ServiceEventInfo\nuint8 REQUEST_SENT = 0\nuint8 REQUEST_RECEIVED = 1\n"
          "uint8 RESPONSE_SENT = 2\nuint8 RESPONSE_RECEIVED = 3\nuint8 event_type\n"
          "builtin_interfaces/Time stamp\nchar[16] client_gid\nint64 sequence_number\n" +
          rule + "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n" + rule +
          "MSG: example_interfaces/srv/AddTwoInts_Request\nint64 a\nint64 b\n" + rule +
          "MSG: example_interfaces/srv/AddTwoInts_Response\nint64 sum\n",
      "example_interfaces/srv/AddTwoInts_Event", "full");
  full.resolve();
  const MessageDef* a = from_srv.find(root);
  const MessageDef* b = full.find(root);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(MessageSet::canonical_text(*a), MessageSet::canonical_text(*b));
  EXPECT_EQ(a->fields.at(1).sequence_bound, 1U);
  // A request line that is broken is still named by its line.
  MessageSet broken;
  try {
    (void)broken.add_ros2msg("int64 a\nint64\n---\nint64 sum\n", "x/srv/S_Event", "broken");
    broken.resolve();
    FAIL() << "a broken request was accepted";
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("broken:2:"), std::string::npos) << e.what();
  }
}

// A copy into the owning type holds the message's sequences, not the
// definition's defaults followed by them (bool[], string[] and message
// sequences were appended to the defaults).
TEST(Ros2DefinitionsTest, AnOwningCopyHoldsTheMessagesSequencesNotTheDefaults) {
  using ros2_test_msgs::msg::Defaults;
  Defaults d;
  EXPECT_EQ(d.flags, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(d.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Defaults::from(Defaults::View(shmbus::msg::to_bytes(d))).names, d.names);
  d.flags = {false};
  d.names = {"x"};
  d.numbers = {7};
  d.inners.resize(1);
  d.inners[0].label = "in";
  const std::vector<std::byte> bytes = shmbus::msg::to_bytes(d);
  const Defaults back = Defaults::from(Defaults::View(bytes));
  EXPECT_EQ(back.flags, std::vector<bool>{false});
  EXPECT_EQ(back.names, std::vector<std::string>{"x"});
  EXPECT_EQ(back.numbers, std::vector<std::int32_t>{7});
  ASSERT_EQ(back.inners.size(), 1U);
  EXPECT_EQ(back.inners[0].label, "in");
  EXPECT_EQ(shmbus::msg::to_bytes(back), bytes);  // and it writes the same bytes again
}
