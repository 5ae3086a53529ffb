// libFuzzer target: differential CDR decoding, shmbus against Fast-CDR
// (rmw_fastrtps's serializer, Debian's libfastcdr) on the same bytes. A
// selector byte picks a type (every alignment case of sequences, nested
// and bounded ones, strings); the rest, after a CDR_LE header, is the
// message. Both must accept the same inputs, and what they accept must be
// the same fields: each side's reading written again by itself gives the
// same bytes (floats as bit patterns, so NaN payloads count; a string with
// a NUL inside written as Fast-CDR writes a std::string, up to that NUL).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shmbus/schema.hpp"
#include "support/fastcdr_walk.hpp"

using namespace shmbus::schema;

namespace {

std::vector<Schema> make_schemas() {
  auto set = std::make_shared<MessageSet>();
  set->add("f", "Empty", "", "fuzz");
  set->add("f", "Inner", "uint8 a\nstring s\nfloat64[] d\nEmpty e\n", "fuzz");
  set->add("f", "Seqs",
           "uint8 lead\nfloat64[] d\nint16[] h\nbool[] b\nuint32[<=2] w\nfloat32[3] f\nstring[] names\n"
           "string<=4 small\nstring<=3[<=2] smalls\nInner[] inner\nInner[<=1] one\nint64 tail\n",
           "fuzz");
  set->add("f", "Odd", "bool flag\nuint64[] q\nint8[2] pair\nuint16 h\nInner in\nuint64 last\n", "fuzz");
  set->resolve();
  std::vector<Schema> out;
  for (const char* n : {"f/Seqs", "f/Odd", "f/Inner", "f/Empty"}) out.push_back(Schema::from_set(set, n));
  return out;
}

std::string bytes_of(const std::vector<char>& v) { return {v.begin(), v.end()}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<Schema> schemas = make_schemas();
  if (size == 0) return 0;
  const Schema& s = schemas[data[0] % schemas.size()];
  std::vector<char> cdr{0, 1, 0, 0};
  cdr.insert(cdr.end(), data + 1, data + size);

  std::string ours;
  bool we_accept = true;
  try {
    const std::vector<std::byte> bytes = s.from_cdr(std::as_bytes(std::span{cdr}));
    s.to_cdr(bytes, ours);
  } catch (const CodecError&) {
    we_accept = false;
  }
  std::string theirs;
  bool they_accept = true;
  try {
    std::vector<char> copy = cdr;
    const Json v = shmbus::test::fastcdr_read(s.root(), copy, true);
    theirs = bytes_of(shmbus::test::fastcdr_write(s.root(), v, true));
  } catch (const eprosima::fastcdr::exception::Exception&) {
    they_accept = false;
  } catch (const shmbus::test::fastcdr_detail::Refused&) {
    they_accept = false;
  }
  if (we_accept != they_accept) __builtin_trap();
  if (we_accept && ours != theirs) __builtin_trap();
  return 0;
}
