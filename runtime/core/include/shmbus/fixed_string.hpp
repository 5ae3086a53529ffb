#pragma once
/// @file fixed_string.hpp
/// The C++ form of a schema's `string<N>`: N bytes of UTF-8, NUL-padded
/// when shorter (no terminator when exactly N long).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace shmbus {

/// A bounded string in a fixed-layout message. Trivially copyable, no
/// padding, alignment 1. Thread-safety: a plain value.
template <std::size_t N>
struct FixedString {
  static_assert(N > 0);
  char data[N];

  /// Stores `s`; returns false (and stores the first N bytes) when longer.
  bool assign(std::string_view s) noexcept {
    const std::size_t n = std::min(s.size(), N);
    std::memcpy(data, s.data(), n);
    std::memset(data + n, 0, N - n);
    return s.size() <= N;
  }
  /// The text up to the first NUL (or all N bytes).
  [[nodiscard]] std::string_view view() const noexcept {
    const void* nul = std::memchr(data, 0, N);
    return {data, nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - data) : N};
  }
  [[nodiscard]] std::string str() const { return std::string{view()}; }
  [[nodiscard]] static constexpr std::size_t capacity() noexcept { return N; }
};

}  // namespace shmbus
