#pragma once
// 64-bit FNV-1a, the one hash of names and schema texts in shared memory.

#include <cstdint>
#include <string_view>

namespace shmbus::detail {

constexpr std::uint64_t fnv1a64(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace shmbus::detail
