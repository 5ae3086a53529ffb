#pragma once
/// @file fixed_string.hpp
/// The C++ form of a schema's `string<N>`: N bytes of UTF-8, NUL-padded
/// when shorter (no terminator when exactly N long).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "shmbus/error.hpp"

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
  /// Stores `s` (`name = "text";`, as rosidl's bounded strings take one).
  /// Throws Error(kInvalidArgument) naming both sizes, and stores nothing,
  /// when `s` is longer than N.
  FixedString& operator=(std::string_view s) {
    if (s.size() > N) {
      throw Error(Errc::kInvalidArgument,
                  "a string of " + std::to_string(s.size()) + " bytes does not fit string<=" + std::to_string(N));
    }
    assign(s);
    return *this;
  }
  /// Equal texts (what follows a NUL is not text).
  friend bool operator==(const FixedString& a, const FixedString& b) noexcept { return a.view() == b.view(); }
  friend bool operator==(const FixedString& a, std::string_view b) noexcept { return a.view() == b; }
  /// The text up to the first NUL (or all N bytes).
  [[nodiscard]] std::string_view view() const noexcept {
    const void* nul = std::memchr(data, 0, N);
    return {data, nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - data) : N};
  }
  [[nodiscard]] std::string str() const { return std::string{view()}; }
  [[nodiscard]] static constexpr std::size_t capacity() noexcept { return N; }
};

}  // namespace shmbus
