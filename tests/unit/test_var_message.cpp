// The layout runtime (shmbus/var_message.hpp): the one reader, budget and
// writer of variable messages. The generated views, the JSON and CDR
// codecs and Python's messages (through the binding) all call it, so a
// hostile VarRef is refused by each of them in the same words.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ros2_test_msgs/Inner.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/var_message.hpp"

namespace {

using shmbus::MessageError;
using shmbus::VarRef;
namespace msg = shmbus::msg;

template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const MessageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(LayoutRuntimeTest, ACheckRefusesABlockOutsideTheMessageOrPastItsBoundInOneLine) {
  // A message of 64 bytes with a 16-byte fixed part.
  EXPECT_NO_THROW(msg::check({16, 12}, 64, 16, 4, 4, 0, "f"));
  EXPECT_NO_THROW(msg::check({0, 0}, 64, 16, 4, 4, 0, "f")) << "empty points anywhere";
  EXPECT_EQ(refusal([] {
              msg::check({8, 1}, 64, 16, 1, 1, 0, "t.f");
            }),
            "t.f: 1 elements of 1 bytes at offset 8 are outside the message's 64 bytes (blocks start after its "
            "16-byte fixed part, aligned to 1)");
  EXPECT_NE(refusal([] { msg::check({18, 1}, 64, 16, 4, 4, 0, "f"); }), "accepted") << "misaligned";
  EXPECT_NE(refusal([] { msg::check({16, 13}, 64, 16, 4, 4, 0, "f"); }), "accepted") << "one element past the end";
  EXPECT_NE(refusal([] { msg::check({16, 0x40000001}, 64, 16, 4, 4, 0, "f"); }), "accepted") << "count * size wraps";
  EXPECT_EQ(refusal([] { msg::check({16, 5}, 64, 16, 1, 1, 4, "f"); }), "f: 5 elements in a sequence of at most 4");
}

TEST(LayoutRuntimeTest, AReaderChargesEveryBlockToTheMessagesBytes) {
  std::vector<std::byte> m(48);
  const VarRef r{16, 32};  // the 32 bytes after the fixed part
  std::memcpy(m.data(), &r, sizeof r);
  std::memcpy(m.data() + 8, &r, sizeof r);  // the same block again
  msg::Reader reader(m, 16);
  std::uint32_t n = 0;
  EXPECT_EQ(reader.block(0, 1, 1, 0, n, "a"), 16U);
  EXPECT_EQ(n, 32U);
  // 32 bytes read of 48: the second reference to the same 32 overlaps.
  EXPECT_EQ(refusal([&] { (void)reader.block(8, 1, 1, 0, n, "b"); }),
            "b: the message's blocks overlap (they reference more bytes than it holds)");
  msg::Budget budget(10);
  budget.take(0, 0, "x");
  budget.take(3, 0, "x");  // an element counts at least one byte
  EXPECT_EQ(budget.left(), 7U);
}

TEST(LayoutRuntimeTest, AWriterAndAGrowingMessagePlaceBlocksAlikeAndStopAtAVarRefsReach) {
  // The same blocks through a loan's Writer and a decoder's append().
  std::vector<std::byte> loan(64);
  msg::Writer w(loan);
  w.start(17, "t");
  EXPECT_EQ(w.add(0, 3, 4, 4, true, "a"), 20U);
  EXPECT_EQ(w.add(8, 0, 8, 8, true, "b"), 0U);
  EXPECT_EQ(w.size(), 32U);
  std::vector<std::byte> grown(17);
  EXPECT_EQ(msg::append(grown, 0, 3, 4, 4, "a"), 20U);
  EXPECT_EQ(msg::append(grown, 8, 0, 8, 8, "b"), 0U);
  ASSERT_EQ(grown.size(), 32U);
  EXPECT_EQ(std::memcmp(loan.data(), grown.data(), 32), 0) << "the same VarRefs, padding and blocks";
  EXPECT_EQ(msg::grow(17, 3, 4, 4), 32U) << "an owning type's wire_size() agrees";
  EXPECT_EQ(refusal([] { (void)msg::place(8, 0x80000000ULL, 2, 2, "big"); }),
            "big: 2147483648 elements of 2 bytes take the message past 4 GiB");
  EXPECT_EQ(refusal([&] { (void)w.add(16, 64, 1, 1, false, "c"); }),
            "c: the message needs at least 96 bytes; its buffer (a loan, a channel's max_message_size) holds 64");
}

TEST(LayoutRuntimeTest, TheViewsTheCodecsAndTheBuildersRefuseAHostileMessageInTheSameWords) {
  using ros2_test_msgs::Inner;
  Inner in;
  in.label = "abc";
  in.values = {1.0F, 2.0F};
  std::vector<std::byte> bytes = msg::to_bytes(in);
  const VarRef past{static_cast<std::uint32_t>(bytes.size()), 1};
  std::memcpy(bytes.data(), &past, sizeof past);  // label's VarRef, at offset 0
  const shmbus::schema::Schema s = shmbus::schema::Schema::from_canonical(Inner::kSchema);
  const std::string view = refusal([&] { (void)Inner::View(bytes).label(); });
  const std::string json = refusal([&] { (void)s.decode(bytes); });
  const std::string cdr = refusal([&] {
    std::string out;
    s.to_cdr(bytes, out);
  });
  EXPECT_NE(view.find("outside the message"), std::string::npos) << view;
  // The view names the field by its type, the codecs by its path: the rest
  // is the one check's.
  EXPECT_EQ(view.substr(view.find(": ")), json.substr(json.find(": ")));
  EXPECT_EQ(json, cdr);
  // A builder and the JSON encoder refuse a bound alike.
  std::vector<std::byte> loan(256);
  msg::Writer writer(loan);
  Inner::Builder b(writer);
  const std::string built = refusal([&] { (void)b.resize_small(5); });
  const std::string encoded =
      refusal([&] { (void)s.encode(s.with_defaults(shmbus::schema::Json::parse(R"({"small": [1,2,3,4,5]})"))); });
  EXPECT_EQ(built.substr(built.find(": ")), encoded.substr(encoded.find(": ")));
}

}  // namespace
