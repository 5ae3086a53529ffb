#pragma once
// The blocks of a variable message (schema.hpp, the layout rule): where a
// VarRef points, checked before anything is read there, and room for a
// new block at the end of a message being written.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "shmbus/schema.hpp"

namespace shmbus::schema::detail {

/// Follows the VarRefs of one message. Every block is checked against the
/// message's bytes before use: aligned for its elements, after the root's
/// fixed part, inside the message, within its sequence's bound. And the
/// blocks followed, counted in bytes (an element at least one), may not add
/// up to more than the message holds: blocks that overlap could otherwise
/// make a small message decode to an exponentially large one.
class BlockReader {
 public:
  BlockReader(std::span<const std::byte> bytes, std::uint32_t fixed_size) noexcept
      : bytes_(bytes), fixed_size_(fixed_size), budget_(bytes.size()) {}

  /// The block of the VarRef at `at`: its elements of `size` bytes, aligned
  /// to `align`, at most `bound` of them (0: any number). Returns where the
  /// block starts and sets `count`. Throws CodecError naming `what`.
  std::size_t block(std::size_t at, std::uint32_t size, std::uint32_t align, std::uint32_t bound, std::uint32_t& count,
                    const std::string& what) {
    VarRef r;
    std::memcpy(&r, bytes_.data() + at, sizeof r);
    count = r.count;
    if (r.count == 0) return 0;
    if (bound != 0 && r.count > bound) {
      throw CodecError(fmt::format("{}: {} elements in a sequence of at most {}", what, r.count, bound));
    }
    const std::uint64_t length = std::uint64_t{r.count} * std::max<std::uint32_t>(size, 1);
    if (!block_fits(r, bytes_.size(), fixed_size_, size, align)) {
      throw CodecError(
          fmt::format("{}: {} elements of {} bytes at offset {} are outside the message's {} bytes "
                      "(blocks start after its {}-byte fixed part, aligned to {})",
                      what, r.count, size, r.offset, bytes_.size(), fixed_size_, align));
    }
    if (length > budget_) {
      throw CodecError(
          fmt::format("{}: its blocks overlap (they reference more bytes than the message's {})", what, bytes_.size()));
    }
    budget_ -= length;
    return r.offset;
  }

 private:
  std::span<const std::byte> bytes_;
  std::uint32_t fixed_size_;
  std::uint64_t budget_;
};

/// Appends a block for `count` elements of `size` bytes, aligned to
/// `align`, zeroed, at the end of `out` and points the VarRef at `at` to
/// it. Returns where the block starts. Throws CodecError naming `what`
/// when the message would pass 4 GiB (a VarRef's reach).
inline std::size_t add_block(std::vector<std::byte>& out, std::size_t at, std::uint64_t count, std::uint32_t size,
                             std::uint32_t align, const std::string& what) {
  const std::size_t start = (out.size() + align - 1) / align * align;
  const std::uint64_t end = start + count * size;
  if (count > UINT32_MAX || end > UINT32_MAX) {
    throw CodecError(fmt::format("{}: {} elements of {} bytes take the message past 4 GiB", what, count, size));
  }
  const VarRef r{count == 0 ? 0 : static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(count)};
  std::memcpy(out.data() + at, &r, sizeof r);
  if (count != 0) out.resize(static_cast<std::size_t>(end));
  return start;
}

}  // namespace shmbus::schema::detail
