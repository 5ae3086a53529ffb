// What arrives from outside the process, bounded before it is walked:
// JSON and CBOR nested past the limit, CBOR text that is not UTF-8,
// schemas nested, wide or long past theirs (in time linear in their size),
// names from shared memory that a terminal would execute.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/json_input.hpp"

namespace {

using shmbus::schema::JsonInputError;
using shmbus::schema::kMaxJsonDepth;
using shmbus::schema::MessageSet;
using shmbus::schema::parse_cbor;
using shmbus::schema::parse_json;
using shmbus::schema::Schema;
using shmbus::schema::SchemaError;
using shmbus::schema::unsigned_value;

std::string arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

/// What `parse` (parse_json or parse_cbor) says of `input`, or "no error".
template <typename Parse>
std::string error_of(Parse parse, const std::string& input) {
  try {
    (void)parse(input, kMaxJsonDepth);
  } catch (const JsonInputError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of_json(const std::string& text) { return error_of(parse_json<>, text); }
std::string error_of_cbor(const std::string& bytes) { return error_of(parse_cbor<>, bytes); }

TEST(JsonInputTest, NestingUpToTheLimitParsesAndOneMoreLevelIsRefused) {
  EXPECT_EQ(parse_json(arrays(kMaxJsonDepth)).dump(), arrays(kMaxJsonDepth));
  EXPECT_NE(error_of_json(arrays(kMaxJsonDepth + 1)).find("nesting deeper than 64"), std::string::npos);
  // A frame of a few hundred KB that nlohmann's DOM parser takes, and whose
  // dump or copy then overflows the stack.
  EXPECT_NE(error_of_json(R"({"op":"x","id":)" + arrays(200'000) + "}").find("nesting deeper"), std::string::npos);
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += R"({"a":)";
  objects += "1" + std::string(100'000, '}');
  EXPECT_NE(error_of_json(objects).find("nesting deeper"), std::string::npos);
}

TEST(JsonInputTest, TheTreeIsTheOneNlohmannBuildsWithKeysInOrder) {
  const std::string text = R"({"z": 1, "a": [true, null, -2, 18446744073709551615, 1.5, "s\u00e9"], "m": {"k": {}}})";
  const auto ours = parse_json(text);
  EXPECT_EQ(ours, shmbus::schema::Json::parse(text));
  EXPECT_EQ(ours.begin().key(), "z");
  EXPECT_EQ(parse_json<nlohmann::json>(text), nlohmann::json::parse(text));
  // The same through CBOR.
  const std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(nlohmann::json::parse(text));
  EXPECT_EQ(parse_cbor<nlohmann::json>(std::string(cbor.begin(), cbor.end())), nlohmann::json::parse(text));
}

TEST(JsonInputTest, MalformedInputIsOneErrorWithNlohmannsWords) {
  EXPECT_NE(error_of_json("{not json").find("syntax error"), std::string::npos);
  EXPECT_NE(error_of_json(R"({"a": 1e400})").find("number overflow"), std::string::npos);
  EXPECT_NE(error_of_json("[1] [2]").find("syntax error"), std::string::npos);  // trailing data
  EXPECT_NE(error_of_json("").find("error"), std::string::npos);
}

TEST(JsonInputTest, CborNestedAMillionDeepOrNotUtf8IsRefused) {
  EXPECT_NE(error_of_cbor(std::string(1'000'000, '\x81')).find("nesting deeper than 64"), std::string::npos);
  // {"op": "x", "id": "\xff"}: a text string that is not UTF-8 (it could
  // not be dumped back as JSON).
  EXPECT_NE(error_of_cbor(std::string("\xa2\x62op\x61x\x62id\x61\xff", 11)).find("not valid UTF-8"), std::string::npos);
  // A byte string is the array of its bytes (uint8[] as rosbridge sends it).
  EXPECT_EQ(parse_cbor(std::string("\xa1\x64"
                                   "data"
                                   "\x43\x01\x02\xff",
                                   10))
                .dump(),
            R"({"data":[1,2,255]})");
  // An array claiming 2^32 elements in 9 bytes: nothing reserved, refused
  // at the end of the input.
  EXPECT_NE(error_of_cbor(std::string("\x9b\x00\x00\x00\x01\x00\x00\x00\x00", 9)), "no error");
}

TEST(JsonInputTest, IdsAreUnsignedIntegersInRangeNeverCastFloats) {
  const auto id = [](const std::string& text) -> std::string {
    try {
      return std::to_string(unsigned_value<std::uint32_t>(parse_json<nlohmann::json>(text), "id"));
    } catch (const JsonInputError& e) {
      return e.what();
    }
  };
  EXPECT_EQ(id("0"), "0");
  EXPECT_EQ(id("4294967295"), "4294967295");
  // Each of these was cast by get<std::uint32_t>(): 7e117 is undefined
  // behaviour, 4294967297 became 1, -1 became 4294967295.
  EXPECT_EQ(id("7e117"), "id must be an integer from 0 to 4294967295, not 7e+117");
  EXPECT_EQ(id("4294967297"), "id must be an integer from 0 to 4294967295, not 4294967297");
  EXPECT_EQ(id("-1"), "id must be an integer from 0 to 4294967295, not -1");
  EXPECT_EQ(id("1.0"), "id must be an integer from 0 to 4294967295, not 1.0");
  EXPECT_EQ(id(R"("7")"), "id must be an integer from 0 to 4294967295, not string");
}

/// A canonical schema: a chain of `n` types, each holding the next.
std::string chain(std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    text += "MSG: pkg/T" + std::to_string(i) + "\n";
    text += i + 1 < n ? "pkg/T" + std::to_string(i + 1) + " next\n" : "uint8 leaf\n";
  }
  return text;
}

std::string schema_error(const std::string& text) {
  try {
    (void)Schema::from_canonical(text);
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SchemaLimitsTest, NestingPastTheLimitIsRefusedWithoutRecursion) {
  EXPECT_EQ(Schema::from_canonical(chain(MessageSet::kMaxNesting)).root().size, 1U);
  EXPECT_NE(schema_error(chain(MessageSet::kMaxNesting + 1)).find("nests messages more than 32 deep"),
            std::string::npos);
  // Chains a replayed recording can make: before, the layout recursed once
  // per type (a crash past ~50,000) and parsing was quadratic (10 s at
  // 20,000). Now one is refused by its count of types, the other by size.
  EXPECT_NE(schema_error(chain(20'000)).find("message types"), std::string::npos);
  EXPECT_NE(schema_error(chain(50'000)).find("over the limit"), std::string::npos);
}

TEST(SchemaLimitsTest, NestingIsCountedWhateverOrderTheTypesAreLaidOutIn) {
  // T0 holds T1 ... holds T39, added from the middle: T20..T39 are laid
  // out first (20 deep), then T0..T19 reach them; the walk's own stack is
  // never deeper than 20, the nesting is 40.
  MessageSet set;
  const auto add = [&](int i) {
    set.add("deep", "T" + std::to_string(i), i < 39 ? "deep/T" + std::to_string(i + 1) + " next\n" : "uint8 leaf\n",
            "T" + std::to_string(i) + ".msg");
  };
  for (int i = 20; i < 40; ++i) add(i);
  for (int i = 0; i < 20; ++i) add(i);
  try {
    set.resolve();
    FAIL() << "40 levels of nesting must be refused";
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("nests messages more than 32 deep"), std::string::npos) << e.what();
  }
}

TEST(SchemaLimitsTest, ParsingIsLinearInTheTextsSize) {
  // 250,000 comment lines, then 4,000 small types: before, each type's
  // body was padded with the lines before it and parsed again (10^9 lines
  // in all), and every name looked up in a list.
  std::string text = "MSG: pkg/Root\nuint8 x\n";
  for (int i = 0; i < 250'000; ++i) text += "#\n";
  for (int i = 0; i < 4000; ++i) text += "MSG: pkg/U" + std::to_string(i) + "\nuint8 x\n";
  ASSERT_LT(text.size(), MessageSet::kMaxCanonicalBytes);
  MessageSet set;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(set.add_canonical(text, "<test>"), "pkg/Root");
  set.resolve();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Linear, this takes milliseconds; a loaded machine stays far under the
  // bound, which the quadratic parse passed by minutes.
  EXPECT_LT(seconds, 5.0);
  // Line numbers still point into the whole text.
  EXPECT_NE(schema_error("MSG: pkg/A\nuint8 x\n#\n#\nMSG: pkg/B\nbogus\n").find("<schema>:6:"), std::string::npos);
}

TEST(SchemaLimitsTest, WideTypesAndLongTextsAreRefused) {
  // Two fields of the previous type per level: 2^20 leaves from 21 types.
  std::string text;
  for (int i = 20; i >= 0; --i) {
    text += "MSG: pkg/W" + std::to_string(i) + "\n";
    text += i > 0 ? "pkg/W" + std::to_string(i - 1) + " a\npkg/W" + std::to_string(i - 1) + " b\n" : "uint8 leaf\n";
  }
  EXPECT_NE(schema_error(text).find("fields counted through its nested messages"), std::string::npos);
  EXPECT_NE(schema_error("MSG: pkg/Big\n" + std::string(MessageSet::kMaxCanonicalBytes, '#')).find("over the limit"),
            std::string::npos);
}

TEST(EscapeNameTest, PrintableNamesAreKeptOthersEscapedAndNeverValid) {
  EXPECT_EQ(shmbus::escape_name("/imu/fast"), "/imu/fast");
  EXPECT_EQ(shmbus::escape_name("caméra"), "caméra");
  EXPECT_EQ(shmbus::escape_name("a\\b"), "a\\x5cb");  // a backslash alone is escaped too: never ambiguous
  const std::string escaped = shmbus::escape_name("/a\x1b[31m\xff\\");
  EXPECT_EQ(escaped, "/a\\x1b[31m\\xff\\x5c");
  EXPECT_THROW(shmbus::validate_channel_name(escaped), shmbus::Error);
  EXPECT_EQ(shmbus::escape_name("x\xc2\x9by"), "x\\xc2\\x9by");  // a C1 control (CSI)
  // Always dumps as JSON.
  EXPECT_NO_THROW((void)nlohmann::json(shmbus::escape_name(std::string("\xc3\x28\x00\x80", 4))).dump());
}

}  // namespace
