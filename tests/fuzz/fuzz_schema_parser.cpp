// libFuzzer target: message definitions and canonical schema texts.
// Anything may be refused with a SchemaError; nothing may crash, hang or
// read out of bounds, and an accepted schema must survive its canonical
// round trip with the same hash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shmbus/schema.hpp"

using namespace shmbus::schema;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto set = std::make_shared<MessageSet>();
    std::string root = "fuzz/Fuzz";
    if (text.rfind("MSG: ", 0) == 0) {
      root = set->add_canonical(text, "fuzz");
    } else {
      set->add("std_msgs", "Header", "uint64 stamp_ns\nuint32 seq\nstring<52> frame_id\n", "Header.msg");
      set->add("fuzz", "Fuzz", text, "Fuzz.msg");
    }
    set->resolve();
    const Schema schema = Schema::from_set(set, root);
    const Schema again = Schema::from_canonical(schema.text());
    if (again.hash() != schema.hash() || again.root().size != schema.root().size) __builtin_trap();
  } catch (const SchemaError&) {
  }
  return 0;
}
