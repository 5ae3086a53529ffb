// Round trips and golden files for the schema codec, through headers that
// shmbus_generate_messages() generated from tests/msg and runtime/msg.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "geometry_msgs/Quaternion.hpp"
#include "shmbus/error.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Alert.hpp"
#include "shmbus_msgs/Header.hpp"
#include "shmbus_msgs/Image.hpp"
#include "shmbus_msgs/Imu.hpp"
#include "shmbus_msgs/Statistics.hpp"
#include "shmbus_msgs/String.hpp"
#include "support/test_domain.hpp"
#include "test_msgs/AllKinds.hpp"
#include "test_msgs/Ros2Syntax.hpp"
#include "test_msgs/WithTail.hpp"

using namespace shmbus;
using namespace shmbus::schema;
using json = shmbus::schema::Json;

namespace {

template <typename T>
std::span<const std::byte> bytes_of(const T& v) {
  return std::as_bytes(std::span{&v, 1});
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string hex(std::span<const std::byte> b) {
  std::string out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    out += fmt::format("{:02x}", static_cast<unsigned>(b[i]));
    out += (i % 16 == 15) ? "\n" : " ";
  }
  if (!out.empty() && out.back() == ' ') out.back() = '\n';
  return out;
}

/// The checked-in file tests/golden/NAME. With SHMBUS_UPDATE_GOLDEN=1 the
/// test writes `actual` there first (then review the diff before commit).
std::string golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string{SHMBUS_SOURCE_DIR} + "/tests/golden/" + name;
  if (const char* update = std::getenv("SHMBUS_UPDATE_GOLDEN"); update != nullptr && std::string{update} == "1") {
    std::ofstream(path) << actual;
  }
  return read_text(path);
}

test_msgs::AllKinds all_kinds_sample() {
  test_msgs::AllKinds m{};
  m.flag = true;
  m.i8 = std::numeric_limits<std::int8_t>::min();
  m.u8 = std::numeric_limits<std::uint8_t>::max();
  m.i16 = -12345;
  m.u16 = 65535;
  m.i32 = std::numeric_limits<std::int32_t>::min();
  m.u32 = 4000000000U;
  m.i64 = std::numeric_limits<std::int64_t>::min();
  m.u64 = std::numeric_limits<std::uint64_t>::max();
  m.f32 = std::numeric_limits<float>::infinity();
  m.f64 = -0.125;
  m.name.assign("exactly8");
  m.triple = {1, 2, 65000};
  m.tags[0].assign("ab");
  m.tags[1].assign("wxyz");
  m.point = {1.5F, -2.5F};
  m.points[0] = {0.0F, std::numeric_limits<float>::quiet_NaN()};
  m.points[1] = {3.0F, 4.0F};
  m.header.stamp_ns = 1'700'000'000'123'456'789ULL;
  m.header.seq = 42;
  m.header.frame_id.assign("base_link");
  m.flags = {true, false, true};
  return m;
}

Schema schema_of(const char* canonical) { return Schema::from_canonical(canonical); }

}  // namespace

TEST(SchemaCodecTest, EveryFieldKindRoundTripsStructBytesJsonBytesStruct) {
  const test_msgs::AllKinds original = all_kinds_sample();
  const Schema s = schema_of(test_msgs::AllKinds::kSchema);
  EXPECT_EQ(s.hash(), test_msgs::AllKinds::kTypeHash);
  EXPECT_EQ(s.root().size, sizeof(test_msgs::AllKinds));
  const json j = s.decode(bytes_of(original));
  EXPECT_EQ(j["i64"], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(j["u64"], std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(j["f32"], "Infinity");
  EXPECT_EQ(j["points"][0]["y"], "NaN");
  EXPECT_EQ(j["name"], "exactly8");
  EXPECT_EQ(j["tags"][1], "wxyz");
  EXPECT_EQ(j["header"]["frame_id"], "base_link");
  // Through text and back, as a tool would.
  const std::vector<std::byte> encoded = s.encode(json::parse(j.dump()));
  ASSERT_EQ(encoded.size(), sizeof(test_msgs::AllKinds));
  test_msgs::AllKinds back{};
  std::memcpy(&back, encoded.data(), encoded.size());
  EXPECT_EQ(std::memcmp(&back, &original, sizeof(original)), 0) << hex(encoded) << "\nvs\n" << hex(bytes_of(original));
}

TEST(SchemaCodecTest, TrailingArrayRoundTripsWithItsCount) {
  test_msgs::WithTail m;
  m.kind = 7;
  for (std::uint32_t i = 0; i < 3; ++i) m.points.push_back({static_cast<float>(i), -static_cast<float>(i)});
  const std::vector<std::byte> buf = shmbus::msg::to_bytes(m);
  const Schema s = schema_of(test_msgs::WithTail::kSchema);
  const json j = s.decode(buf);
  ASSERT_EQ(j["points"].size(), 3U);
  EXPECT_EQ(j["points"][2]["y"], -2.0);
  const std::vector<std::byte> encoded = s.encode(j);
  EXPECT_EQ(encoded, buf);
}

TEST(SchemaCodecTest, SixtyFourBitIntegersAsStringsRoundTripExactly) {
  const Schema s = schema_of(test_msgs::AllKinds::kSchema);
  test_msgs::AllKinds m{};
  m.i64 = std::numeric_limits<std::int64_t>::min();
  m.u64 = (std::uint64_t{1} << 53) + 1;
  m.header.stamp_ns = std::numeric_limits<std::uint64_t>::max();
  const json j = s.decode(bytes_of(m), true);
  EXPECT_EQ(j["i64"], "-9223372036854775808");
  EXPECT_EQ(j["u64"], "9007199254740993");
  EXPECT_EQ(j["header"]["stamp_ns"], "18446744073709551615");
  EXPECT_EQ(j["i32"], 0) << "only 64-bit integers become strings";
  const std::vector<std::byte> back = s.encode(j);
  EXPECT_EQ(std::memcmp(back.data(), &m, sizeof(m)), 0);
  json bad = j;
  bad["u64"] = "18446744073709551616";
  EXPECT_THROW((void)s.encode(bad), CodecError);
  bad["u64"] = "12abc";
  EXPECT_THROW((void)s.encode(bad), CodecError);
  bad["u64"] = 5;
  bad["i32"] = "5";
  EXPECT_THROW((void)s.encode(bad), CodecError) << "a 32-bit integer is a number";
}

TEST(SchemaCodecTest, CdrIsWhatRos2WritesAndItsSchemaTheRos2MsgText) {
  const Schema s = schema_of(shmbus_msgs::Header::kSchema);
  shmbus_msgs::Header h{};
  h.stamp_ns = 0x0102030405060708ULL;
  h.seq = 9;
  h.frame_id.assign("map");
  std::string cdr;
  s.to_cdr(bytes_of(h), cdr);
  // Encapsulation CDR_LE; uint64 at 0; uint32 at 8; the string's length
  // with its NUL at 12, then its bytes and the NUL.
  const std::string want(
      "\x00\x01\x00\x00"
      "\x08\x07\x06\x05\x04\x03\x02\x01"
      "\x09\x00\x00\x00"
      "\x04\x00\x00\x00map\x00",
      24);
  EXPECT_EQ(cdr, want);
  EXPECT_EQ(ros2msg_text(s.root()), "uint64 stamp_ns\nuint32 seq\nstring<=52 frame_id\n");
  const Schema img = schema_of(shmbus_msgs::Image::kSchema);
  EXPECT_EQ(ros2msg_text(img.root()),
            "shmbus_msgs/Header header\nuint32 height\nuint32 width\nstring<=16 encoding\nuint8 is_bigendian\n"
            "uint32 step\nuint8[] data\n" +
                std::string(80, '=') + "\nMSG: shmbus_msgs/Header\nuint64 stamp_ns\nuint32 seq\nstring<=52 frame_id\n");
  // A buffer that lies about its trailing array is refused as decode() refuses it.
  constexpr std::uint32_t kImageFixed = shmbus_msgs::Image::View::kFixedSize;
  std::vector<std::byte> lying(kImageFixed + 2);
  const VarRef three{kImageFixed, 3};
  std::memcpy(lying.data() + img.root().fields.back().offset, &three, 8);
  EXPECT_THROW(img.to_cdr(lying, cdr), CodecError);
}

namespace {
std::string refused_by(const Schema& s, const std::string& cdr) {
  try {
    (void)s.from_cdr(std::as_bytes(std::span{cdr}));
  } catch (const CodecError& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

// from_cdr, the reverse (bag import): what to_cdr wrote comes back byte for
// byte; foreign CDR that cannot be held is refused naming the field.
TEST(SchemaCodecTest, CdrDecodesBackAndForeignCdrIsCheckedFieldByField) {
  const Schema s = schema_of(shmbus_msgs::Header::kSchema);
  shmbus_msgs::Header h{};
  h.stamp_ns = 0xfffffffffffffffeULL;
  h.seq = 7;
  h.frame_id.assign("base_link");
  std::string cdr;
  s.to_cdr(bytes_of(h), cdr);
  const std::vector<std::byte> back = s.from_cdr(std::as_bytes(std::span{cdr}));
  ASSERT_EQ(back.size(), sizeof h);
  EXPECT_EQ(std::memcmp(back.data(), &h, sizeof h), 0);
  auto refused = [&](std::string bad) {
    try {
      (void)s.from_cdr(std::as_bytes(std::span{bad}));
    } catch (const CodecError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused(cdr.substr(0, 10)).find("shmbus_msgs/Header.stamp_ns: CDR cut short"), std::string::npos);
  std::string big_endian = cdr;
  big_endian[1] = '\x00';
  EXPECT_NE(refused(big_endian).find("not little-endian"), std::string::npos);
  std::string long_name(4, '\0');
  long_name += std::string(8, 'x') + std::string(4, 'x');  // stamp_ns, seq
  const std::uint32_t n = 60;                              // 59 bytes and the NUL: more than string<52>
  long_name.append(reinterpret_cast<const char*>(&n), 4);
  long_name += std::string(59, 'y') + '\0';
  long_name[1] = '\x01';
  EXPECT_NE(refused(long_name).find("shmbus_msgs/Header.frame_id: a string of 59 bytes does not fit string<52>"),
            std::string::npos)
      << refused(long_name);
  // A trailing array's count beyond the bytes left: refused before any allocation.
  const Schema img = schema_of(shmbus_msgs::Image::kSchema);
  std::string image_cdr;
  img.to_cdr(shmbus::msg::to_bytes(shmbus_msgs::Image{}), image_cdr);
  const std::uint32_t huge = 0xffffffffU;
  std::memcpy(image_cdr.data() + image_cdr.size() - 4, &huge, 4);
  EXPECT_NE(refused_by(img, image_cdr).find("shmbus_msgs/Image.data: 4294967295 elements in 0 bytes"),
            std::string::npos);
  const std::string raw(
      "\x00\x01\x00\x00\x02\x00\x00\x00"
      "ab",
      10);
  EXPECT_EQ(bytes_from_cdr(std::as_bytes(std::span{raw})), (std::vector<std::byte>{std::byte{'a'}, std::byte{'b'}}));
}

TEST(SchemaCodecTest, ShortBufferIsAnErrorNeverAnOverread) {
  const Schema s = schema_of(shmbus_msgs::Imu::kSchema);
  // Exactly as long as claimed, on the heap, so ASan sees any read past it.
  std::vector<std::byte> short_buf(sizeof(shmbus_msgs::Imu) - 1);
  try {
    (void)s.decode(short_buf);
    FAIL() << "no error";
  } catch (const CodecError& e) {
    EXPECT_STREQ(e.what(), "shmbus_msgs/Imu: buffer of 359 bytes is shorter than the 360 bytes the message needs");
  }
  const Schema img = schema_of(shmbus_msgs::Image::kSchema);
  std::vector<std::byte> lying(shmbus_msgs::Image::View::kFixedSize + 10);
  const VarRef eleven{shmbus_msgs::Image::View::kFixedSize, 11};
  std::memcpy(lying.data() + img.root().fields.back().offset, &eleven, 8);
  try {
    (void)img.decode(lying);
    FAIL() << "no error";
  } catch (const CodecError& e) {
    EXPECT_STREQ(e.what(),
                 "data: 11 elements of 1 bytes at offset 104 are outside the message's 114 bytes (blocks start after "
                 "its 104-byte fixed part, aligned to 1)");
  }
}

TEST(SchemaCodecTest, BadJsonIsRefusedNamingTheField) {
  const Schema s = schema_of(test_msgs::AllKinds::kSchema);
  json good = s.decode(bytes_of(all_kinds_sample()));
  const auto error_with = [&](auto&& mutate) {
    json j = good;
    mutate(j);
    try {
      (void)s.encode(j);
    } catch (const CodecError& e) {
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  EXPECT_EQ(error_with([](json& j) { j["header"].erase("seq"); }),
            "header.seq: missing (a uint32 field of shmbus_msgs/Header)");
  EXPECT_EQ(error_with([](json& j) { j["u8"] = 256; }), "u8: 256 is out of range for uint8 (0 to 255)");
  EXPECT_EQ(error_with([](json& j) { j["i16"] = -40000; }), "i16: -40000 is out of range for int16 (-32768 to 32767)");
  EXPECT_EQ(error_with([](json& j) { j["u32"] = -1; }), "u32: -1 is out of range for uint32 (0 to 4294967295)");
  EXPECT_EQ(error_with([](json& j) { j["i32"] = 1.5; }), "i32: must be an integer (int32), got number 1.5");
  EXPECT_EQ(error_with([](json& j) { j["f64"] = "fast"; }),
            "f64: must be a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got string \"fast\"");
  EXPECT_EQ(error_with([](json& j) { j["name"] = "ninechars"; }),
            "name: string of 9 bytes is out of range for string<8>");
  EXPECT_EQ(error_with([](json& j) {
              j["triple"] = json::array({1, 2});
            }),
            "triple: must be an array of 3 elements, got array [1,2]");
  EXPECT_EQ(error_with([](json& j) { j["points"][1]["x"] = true; }),
            "points[1].x: must be a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got boolean true");
  EXPECT_EQ(error_with([](json& j) { j["flag"] = 1; }), "flag: must be true or false, got number 1");
  EXPECT_EQ(error_with([](json& j) { j["extra"] = 1; }).rfind("test_msgs/AllKinds: unknown field 'extra'", 0), 0U);
  EXPECT_EQ(error_with([](json& j) { j = json::array(); }), "test_msgs/AllKinds: must be an object, got array []");
}

TEST(SchemaCodecTest, InvalidUtf8DecodesToReplacementCharacters) {
  const Schema s = schema_of(shmbus_msgs::String::kSchema);
  shmbus_msgs::String m{};
  std::memcpy(m.data.data, "ok\xff\xc3(", 5);
  const json j = s.decode(bytes_of(m));
  EXPECT_EQ(j["data"], "ok\xEF\xBF\xBD\xEF\xBF\xBD(");
  EXPECT_NO_THROW((void)j.dump());
}

TEST(SchemaGoldenTest, ShippedMessagesHaveTheDocumentedLayout) {
  EXPECT_EQ(sizeof(shmbus_msgs::Header), 64U);
  EXPECT_EQ(offsetof(shmbus_msgs::Header, seq), 8U);
  EXPECT_EQ(offsetof(shmbus_msgs::Header, frame_id), 12U);
  EXPECT_EQ(sizeof(shmbus_msgs::String), 256U);
  EXPECT_EQ(sizeof(shmbus_msgs::Imu), 360U);
  EXPECT_EQ(offsetof(shmbus_msgs::Imu, angular_velocity), 168U);
  EXPECT_EQ(offsetof(shmbus_msgs::Imu, linear_acceleration_covariance), 288U);
  const Schema img = schema_of(shmbus_msgs::Image::kSchema);
  EXPECT_EQ(shmbus_msgs::Image::View::kFixedSize, 104U);
  EXPECT_EQ(img.root().fields[5].offset, 92U);  // step
  EXPECT_EQ(img.root().fields[6].offset, 96U);  // data's VarRef
  EXPECT_EQ(sizeof(shmbus_msgs::StatisticSummary), 40U);
  EXPECT_EQ(sizeof(shmbus_msgs::Statistics), 344U);
  EXPECT_EQ(offsetof(shmbus_msgs::Statistics, period), 216U);
  EXPECT_EQ(offsetof(shmbus_msgs::Statistics, transit), 296U);  // after age
  EXPECT_EQ(offsetof(shmbus_msgs::Statistics, upstream_lost), 336U);
  EXPECT_EQ(sizeof(shmbus_msgs::Alert), 216U);
  EXPECT_EQ(offsetof(shmbus_msgs::Alert, frequency_hz), 176U);
  EXPECT_EQ(shmbus_msgs::Alert::LEVEL_CRITICAL, 3);
}

TEST(SchemaGoldenTest, ImuBytesAndJsonMatchTheCheckedInFiles) {
  shmbus_msgs::Imu m{};
  m.header.stamp_ns = 1'700'000'000'000'000'000ULL;
  m.header.seq = 7;
  m.header.frame_id.assign("imu_link");
  m.orientation = {0.0, 0.0, 0.7071067811865476, 0.7071067811865476};
  m.orientation_covariance[0] = -1.0;
  m.angular_velocity = {0.01, -0.02, 0.5};
  m.linear_acceleration = {0.1, 0.2, 9.81};
  m.linear_acceleration_covariance = {0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.04};
  EXPECT_EQ(hex(bytes_of(m)), golden("sensor_msgs_Imu.hex", hex(bytes_of(m))));
  const json decoded = schema_of(shmbus_msgs::Imu::kSchema).decode(bytes_of(m));
  EXPECT_EQ(decoded, json::parse(golden("sensor_msgs_Imu.json", decoded.dump(2) + "\n"))) << decoded.dump(2);
}

TEST(SchemaGoldenTest, AlertJsonMatchesTheCheckedInFile) {
  shmbus_msgs::Alert a{};
  a.header.stamp_ns = 1'700'000'000'500'000'000ULL;
  a.header.seq = 3;
  a.channel.assign("/camera/front");
  a.old_level = shmbus_msgs::Alert::LEVEL_NOMINAL;
  a.new_level = shmbus_msgs::Alert::LEVEL_CRITICAL;
  a.frequency_hz = 12.5;
  a.thresholds_hz = {25.0, 35.0, 60.0};
  a.window_ns = 1'000'000'000;
  const json decoded = schema_of(shmbus_msgs::Alert::kSchema).decode(bytes_of(a));
  EXPECT_EQ(decoded, json::parse(golden("shmbus_msgs_Alert.json", decoded.dump(2) + "\n"))) << decoded.dump(2);
}

TEST(SchemaChannelTest, ChannelStoresTheSchemaAndRefusesAnotherDefinitionOfTheSameName) {
  shmbus::test::TestDomain d{Config{}, "schema"};
  TypedPublisher<shmbus_msgs::Imu> pub("/imu", d.context());
  Subscriber any("/imu", std::nullopt, d.context());
  EXPECT_EQ(any.type().schema, shmbus_msgs::Imu::kSchema);
  const Schema from_channel = Schema::from_canonical(any.type().schema);
  EXPECT_EQ(from_channel.hash(), shmbus_msgs::Imu::kTypeHash);
  // Same type name, another schema: refused with both hashes and the first
  // differing line.
  std::string text = shmbus_msgs::Imu::kSchema;
  text.replace(text.find("float64[4] orientation"), 22, "float32[4] orientation");
  const TypeInfo other{"shmbus_msgs/Imu", hash_text(text), text};
  try {
    Publisher wrong("/imu", other, d.context());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTypeMismatch);
    EXPECT_EQ(std::string{e.what()},
              fmt::format("channel /imu has type shmbus_msgs/Imu (hash {:016x}), you asked for shmbus_msgs/Imu (hash "
                          "{:016x}); in shmbus_msgs/Imu, line 2 differs: 'float64[4] orientation' here, 'float32[4] "
                          "orientation' there (here = the channel, there = yours)",
                          shmbus_msgs::Imu::kTypeHash, hash_text(text)));
  }
}

// Generated structs start from the definitions' defaults and answer to ROS
// 2's C++ names (pkg::msg::Type); their bytes decode to the defaults the
// codec gives.
TEST(SchemaCodecTest, GeneratedStructsHoldTheirDefaultsUnderRos2Names) {
  const geometry_msgs::msg::Quaternion q{};
  EXPECT_EQ(q.w, 1.0) << "the identity, as rclcpp's default";
  EXPECT_EQ(q.x, 0.0);
  const test_msgs::msg::Ros2Syntax m{};
  EXPECT_EQ(m.flags, 7U);
  EXPECT_EQ(m.letter, 66U);
  EXPECT_TRUE(m.on);
  EXPECT_EQ(m.triple, (std::array<std::int32_t, 3>{1, -2, 3}));
  EXPECT_EQ(m.name.view(), "robot \"one\"");
  EXPECT_EQ(m.other.view(), "x#y");
  EXPECT_EQ(m.pair[1], -1000.0);
  EXPECT_STREQ(test_msgs::Ros2Syntax::GREETING, "hello # not a comment");
  const Schema s = schema_of(test_msgs::Ros2Syntax::kSchema);
  EXPECT_EQ(s.decode(std::as_bytes(std::span{&m, 1})), s.with_defaults(json::object()));
}
