// libFuzzer target: the bounded JSON and CBOR parsers every foreign frame,
// argument and metadata record goes through. Anything may be refused with
// a JsonInputError; what is accepted is never deeper than the limit, and
// dumps (valid UTF-8) as JSON that parses back as deep.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shmbus/schema/json_input.hpp"

using namespace shmbus::schema;

namespace {

std::size_t depth(const nlohmann::ordered_json& j) {
  // Iterative: the fuzzer's own check must not be what recurses.
  std::size_t deepest = 0;
  std::vector<std::pair<const nlohmann::ordered_json*, std::size_t>> todo{{&j, 0}};
  while (!todo.empty()) {
    const auto [v, d] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d + 1);
    for (const auto& child : *v) todo.emplace_back(&child, d + 1);
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const auto j = data[0] % 2 == 0 ? parse_json(input) : parse_cbor(input);
    if (depth(j) > kMaxJsonDepth) __builtin_trap();
    // Dumps (a string that is not UTF-8 would throw), and parses back to
    // a tree as deep.
    const std::string text = j.dump();
    if (depth(parse_json(text)) != depth(j)) __builtin_trap();
  } catch (const JsonInputError&) {
  }
  return 0;
}
