#pragma once
// UTF-8 checks shared by the codec (strings read from a message), the
// bounded JSON parsers (CBOR text strings from a client) and names read
// from shared memory (escape_name).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmbus {

/// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 where the
/// bytes there are not one: a stray continuation byte, a truncated
/// sequence, an overlong form, a surrogate or a code point past U+10FFFF.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  if (n == 1) return 1;
  std::uint32_t cp = c & (0x7FU >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3FU);
  const bool ok = (n == 2 && cp >= 0x80) || (n == 3 && cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) ||
                  (n == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
  return ok ? n : 0;
}

inline bool valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// `s` with every invalid UTF-8 sequence replaced by U+FFFD, so any byte
/// string decodes to a JSON string that can be printed.
inline std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = utf8_sequence(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

}  // namespace shmbus
