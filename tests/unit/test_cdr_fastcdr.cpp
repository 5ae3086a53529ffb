// shmbus's CDR against Fast-CDR (Debian's libfastcdr, the serializer of ROS
// 2's default middleware rmw_fastrtps), in both directions. The reference
// side walks the shmbus schema and calls Fast-CDR for each field as
// rosidl_typesupport_fastrtps_cpp's generated code does, so Fast-CDR, not
// this file, decides every pad. For every type: random messages (empty,
// one-element and bound-length sequences) whose CDR from shmbus must equal
// Fast-CDR's byte for byte, and each side must read the other's bytes back
// to the same fields. The same types and messages go through Foxglove's
// serializer (@foxglove/rosmsg2-serialization, tests/js/ros2_cdr.mjs) in
// both directions too.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <fastcdr/exceptions/Exception.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "support/fastcdr_walk.hpp"
#include "support/node_script.hpp"
#include "support/random_message.hpp"

using namespace shmbus::schema;
using shmbus::test::random_message;
namespace fs = std::filesystem;

namespace {

std::string hex(std::span<const std::byte> b) {
  std::string out;
  for (const std::byte x : b) out += fmt::format("{:02x}", std::to_integer<unsigned>(x));
  return out;
}

/// `messages` random messages of `s`'s root through both serializers.
void check_type(const Schema& s, int messages, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < messages; ++i) {
    const Json value = random_message(s.root(), rng, 0);
    std::string ours;
    s.to_cdr(s.encode(value), ours);
    const std::vector<char> theirs = shmbus::test::fastcdr_write(s.root(), value);
    const std::span<const std::byte> their_bytes = std::as_bytes(std::span{theirs});
    ASSERT_EQ(hex(std::as_bytes(std::span{ours})), hex(their_bytes))
        << s.root().name << " message " << i << ": " << value.dump();
    // Each reads the other's bytes to the same fields.
    ASSERT_EQ(s.decode(s.from_cdr(their_bytes)), value) << s.root().name << " message " << i;
    std::vector<char> copy(ours.begin(), ours.end());
    ASSERT_EQ(shmbus::test::fastcdr_read(s.root(), copy), value) << s.root().name << " message " << i;
  }
}

constexpr int kMessagesPerType = 1000;

/// Every `.msg` under `root/<package>/` (or `root/<package>/msg/`), as
/// `package/Name`.
std::vector<std::string> types_under(const std::string& root, const std::string& only_package = "") {
  std::vector<std::string> out;
  for (const auto& pkg : fs::directory_iterator(root)) {
    if (!pkg.is_directory() || (!only_package.empty() && pkg.path().filename() != only_package)) continue;
    for (const fs::path& dir : {pkg.path(), pkg.path() / "msg"}) {
      if (!fs::is_directory(dir)) continue;
      for (const auto& f : fs::directory_iterator(dir)) {
        if (f.path().extension() == ".msg") {
          out.push_back(pkg.path().filename().string() + "/" + f.path().stem().string());
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CdrAgainstFastCdr, EmptySequenceOfEightByteElementsHasNoPadAfterItsCount) {
  // uint32 a, uint32 b, float64[] d (empty), uint32 c = 7: Fast-CDR writes
  // 00010000 01000000 02000000 00000000 07000000.
  auto set = std::make_shared<MessageSet>();
  set->add("t", "Pad", "uint32 a\nuint32 b\nfloat64[] d\nuint32 c\n", "pad");
  set->resolve();
  const Schema s = Schema::from_set(set, "t/Pad");
  const Json v = Json::parse(R"({"a": 1, "b": 2, "d": [], "c": 7})");
  std::string ours;
  s.to_cdr(s.encode(v), ours);
  EXPECT_EQ(hex(std::as_bytes(std::span{ours})), "0001000001000000020000000000000007000000");
  const std::vector<char> theirs = shmbus::test::fastcdr_write(s.root(), v);
  EXPECT_EQ(hex(std::as_bytes(std::span{theirs})), hex(std::as_bytes(std::span{ours})));
  EXPECT_EQ(s.decode(s.from_cdr(std::as_bytes(std::span{ours}))), v);
}

TEST(CdrAgainstFastCdr, StringsWithoutTheirNulReadAsFastCdrReadsThemAndAreCounted) {
  auto set = std::make_shared<MessageSet>();
  set->add("t", "S", "string s\nstring<=8 b\n", "s");
  set->resolve();
  const Schema s = Schema::from_set(set, "t/S");
  // "abcd" with length 4 (no NUL), then "xy" with its NUL.
  std::vector<char> cdr{0, 1, 0, 0, 4, 0, 0, 0, 'a', 'b', 'c', 'd', 3, 0, 0, 0, 'x', 'y', 0};
  const Json theirs = shmbus::test::fastcdr_read(s.root(), cdr);
  CdrNotes notes;
  const Json ours = s.decode(s.from_cdr(std::as_bytes(std::span{cdr}), Schema::kMaxDecodedBytes, &notes));
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(ours["s"], "abcd");
  EXPECT_EQ(notes.strings_without_nul, 1U);
  EXPECT_EQ(notes.strings_cut_at_nul, 0U);
  // A NUL inside: the string ends there, as a ROS 2 string does (Fast-CDR
  // writes a std::string's c_str()), and the cut is counted.
  std::vector<char> inner{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 'x', 0, 'y', 0};
  CdrNotes cut;
  const Json read = s.decode(s.from_cdr(std::as_bytes(std::span{inner}), Schema::kMaxDecodedBytes, &cut));
  EXPECT_EQ(read["b"], "x");
  EXPECT_EQ(cut.strings_cut_at_nul, 1U);
  std::string ours_again;
  s.to_cdr(s.encode(read), ours_again);
  const std::vector<char> theirs_again =
      shmbus::test::fastcdr_write(s.root(), shmbus::test::fastcdr_read(s.root(), inner));
  EXPECT_EQ(hex(std::as_bytes(std::span{ours_again})), hex(std::as_bytes(std::span{theirs_again})));
}

TEST(CdrAgainstFastCdr, ABoolThatIsNeitherZeroNorOneIsRefusedAloneAndInASequence) {
  auto set = std::make_shared<MessageSet>();
  set->add("t", "B", "bool one\nbool[] many\n", "b");
  set->resolve();
  const Schema s = Schema::from_set(set, "t/B");
  for (std::vector<char> cdr : {std::vector<char>{0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0},
                                std::vector<char>{0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 2}}) {
    EXPECT_THROW((void)s.from_cdr(std::as_bytes(std::span{cdr})), CodecError);
    std::vector<char> copy = cdr;
    EXPECT_ANY_THROW((void)shmbus::test::fastcdr_read(s.root(), copy));
  }
}

/// Types whose fields end at each offset mod 8, then a sequence (unbounded
/// and bounded) and a fixed array of each element size, then fields of
/// each size after them.
std::vector<Schema> alignment_types() {
  const std::vector<std::string> elements{"bool",  "uint8",   "int16",  "uint32",    "float32",
                                          "int64", "float64", "string", "string<=3", "t/Small"};
  auto set = std::make_shared<MessageSet>();
  set->add("t", "Small", "uint8 a\nfloat64 b\n", "small");
  std::vector<std::string> names;
  for (int lead = 0; lead < 8; ++lead) {
    for (std::size_t e = 0; e < elements.size(); ++e) {
      const std::string& t = elements[e];
      std::string text = lead == 0 ? "" : fmt::format("uint8[{}] lead\n", lead);
      text += fmt::format("{}[] seq\nuint8 one\n{}[<=3] bounded\nuint16 two\n{}[2] fixed\nfloat64 eight\n{}[] last\n",
                          t, t, t, t);
      const std::string name = fmt::format("Align{}x{}", lead, e);
      set->add("t", name, text, name);
      names.push_back("t/" + name);
    }
  }
  set->resolve();
  std::vector<Schema> out;
  for (const std::string& n : names) out.push_back(Schema::from_set(set, n));
  return out;
}

/// Every shipped ROS 2 type (not shmbus_msgs, shmbus's own).
std::vector<Schema> shipped_types() {
  const TypeCatalog catalog({}, false);
  std::vector<Schema> out;
  for (const std::string& t : types_under(SHMBUS_SOURCE_DIR "/runtime/msg")) {
    if (!t.starts_with("shmbus_msgs/")) out.push_back(catalog.find(t));
  }
  return out;
}

/// Debian's ros2-test-interface-files: ROS 2's own test definitions.
constexpr const char* kTestInterfaceRoot = "/usr/share";

TEST(CdrAgainstFastCdr, EveryAlignmentCaseOfEverySequenceElementType) {
  std::uint64_t seed = 1;
  for (const Schema& s : alignment_types()) check_type(s, kMessagesPerType, seed++);
}

TEST(CdrAgainstFastCdr, EveryShippedRos2Type) {
  std::uint64_t seed = 100;
  const std::vector<Schema> types = shipped_types();
  for (const Schema& s : types) check_type(s, kMessagesPerType, seed++);
  EXPECT_GT(types.size(), 30U);
}

TEST(CdrAgainstFastCdr, EveryMessageOfRos2TestInterfaceFiles) {
  const std::string root = kTestInterfaceRoot;
  ASSERT_TRUE(fs::is_directory(root + "/test_interface_files/msg")) << "install ros2-test-interface-files";
  const TypeCatalog catalog({root}, false);
  std::uint64_t seed = 1000;
  std::vector<std::string> checked;
  for (const std::string& t : types_under(root, "test_interface_files")) {
    // wstring (UTF-16) has no place in shmbus's layout: bag commands carry
    // such a channel undecoded (docs/messages.md).
    if (t.ends_with("/WStrings")) {
      EXPECT_THROW((void)catalog.find(t), shmbus::Error);
      continue;
    }
    SCOPED_TRACE(t);
    check_type(catalog.find(t), kMessagesPerType, seed++);
    checked.push_back(t);
  }
  EXPECT_GE(checked.size(), 11U) << fmt::format("{}", fmt::join(checked, ", "));
}

/// The same random messages of each of `types` (seeds from `seed`) through
/// Foxglove's serializer: its CDR must be shmbus's byte for byte, and it
/// must read shmbus's CDR to the same fields.
void check_against_foxglove(const std::vector<Schema>& types, std::uint64_t seed) {
  Json input{{"cases", Json::array()}};
  std::vector<std::vector<Json>> sent;
  for (const Schema& s : types) {
    std::mt19937_64 rng(seed++);
    Json c{{"definition", ros2msg_text(s.root())}, {"messages", Json::array()}, {"cdr", Json::array()}};
    sent.emplace_back();
    for (int i = 0; i < kMessagesPerType; ++i) {
      const std::vector<std::byte> bytes = s.encode(random_message(s.root(), rng, 0));
      std::string cdr;
      s.to_cdr(bytes, cdr);
      // 64-bit integers as decimal strings: JSON numbers past 2^53 are not
      // exact in JavaScript.
      sent.back().push_back(s.decode(bytes, true));
      c["messages"].push_back(sent.back().back());
      c["cdr"].push_back(hex(std::as_bytes(std::span{cdr})));
    }
    input["cases"].push_back(std::move(c));
  }
  const std::string file =
      (fs::temp_directory_path() / ("shmbus_cdr_foxglove_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(file) << input.dump();
  const nlohmann::json out = shmbus::test::run_node_script("ros2_cdr.mjs", file);
  fs::remove(file);
  ASSERT_EQ(out["cases"].size(), types.size()) << out.dump().substr(0, 2000);
  for (std::size_t t = 0; t < types.size(); ++t) {
    const nlohmann::json& c = out["cases"][t];
    for (std::size_t i = 0; i < sent[t].size(); ++i) {
      ASSERT_EQ(c["written"][i].get<std::string>(), input["cases"][t]["cdr"][i].get<std::string>())
          << types[t].root().name << " message " << i << ": " << sent[t][i].dump();
      ASSERT_EQ(c["read"][i], nlohmann::json::parse(sent[t][i].dump())) << types[t].root().name << " message " << i;
    }
  }
}

TEST(CdrAgainstFoxglove, EveryAlignmentCaseOfEverySequenceElementType) { check_against_foxglove(alignment_types(), 1); }

TEST(CdrAgainstFoxglove, EveryShippedRos2Type) {
  // Foxglove's parser refuses a definition without fields
  // (rcl_interfaces/ParameterType, constants only; Fast-CDR's test above
  // checks its one dummy byte).
  std::vector<Schema> types;
  for (Schema& s : shipped_types()) {
    if (!s.root().fields.empty()) types.push_back(std::move(s));
  }
  check_against_foxglove(types, 100);
}

TEST(CdrAgainstFoxglove, EveryMessageOfRos2TestInterfaceFiles) {
  const TypeCatalog catalog({kTestInterfaceRoot}, false);
  std::vector<Schema> tests;
  for (const std::string& t : types_under(kTestInterfaceRoot, "test_interface_files")) {
    // Foxglove's parser refuses a definition without fields (Empty; ROS
    // 2 writes its one dummy byte, as Fast-CDR's test above checks).
    if (t.ends_with("/WStrings")) continue;
    Schema s = catalog.find(t);
    if (!s.root().fields.empty()) tests.push_back(std::move(s));
  }
  EXPECT_GE(tests.size(), 9U);
  check_against_foxglove(tests, 1000);
}

}  // namespace
