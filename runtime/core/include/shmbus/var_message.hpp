#pragma once
/// @file var_message.hpp
/// Messages with strings and sequences in the slot: the one reader, budget
/// and writer of their layout. Generated views and builders
/// (shmbus-msggen), the schema codecs (JSON, CDR), the validator and
/// Python's messages (through the binding) all go through it. The layout
/// rule is schema.hpp's: a `string` or `T[]` is a VarRef {offset, count}
/// in the fixed part; its elements are a block at `offset` bytes from the
/// start of the message, after the root's fixed part, aligned as one
/// element.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/error.hpp"

namespace shmbus {

/// Bytes (or a JSON or CDR form of them) that do not hold a message of
/// their type: what() names the field ("header.frame_id") and what is
/// wrong. Errc::kInvalidArgument. schema::CodecError is this type.
class MessageError : public Error {
 public:
  explicit MessageError(const std::string& message) : Error(Errc::kInvalidArgument, message) {}
};

/// Where a sequence's or a string's elements are.
struct VarRef {
  std::uint32_t offset = 0;  ///< from the start of the message
  std::uint32_t count = 0;   ///< elements (a string: bytes)
};
inline constexpr std::uint32_t kVarRefSize = 8;
inline constexpr std::uint32_t kVarRefAlign = 4;
static_assert(sizeof(VarRef) == kVarRefSize && alignof(VarRef) == kVarRefAlign);

/// True when `r`'s `r.count` elements of `size` bytes, aligned to `align`,
/// lie in a message of `message_size` bytes after its `fixed_size`-byte
/// fixed part. A count of 0 is empty wherever it points.
constexpr bool block_fits(VarRef r, std::size_t message_size, std::uint32_t fixed_size, std::uint32_t size,
                          std::uint32_t align) noexcept {
  return r.count == 0 || (r.offset >= fixed_size && r.offset % align == 0 && r.offset <= message_size &&
                          std::uint64_t{r.count} * size <= message_size - r.offset);
}

namespace msg {

/// A message's bytes as a generated view reads them. `fixed`: the root's
/// fixed part, before which no block may start.
struct Bytes {
  const std::byte* data = nullptr;
  std::uint32_t size = 0;
  std::uint32_t fixed = 0;
};

/// The primitive at `p` (any alignment).
template <typename T>
T load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// The VarRef at `p`, read once. A view may be over a live slot, which a
/// publisher's next lap rewrites while it is read (the read is validated
/// after): a copy made with memcpy may be loaded again by the compiler
/// after the bounds check, so each word is an atomic load (relaxed), and the
/// check and the use both see that one value. An unaligned VarRef (not in
/// a message laid out by schema.hpp's rule) is copied through volatile.
inline VarRef load_ref(const std::byte* p) noexcept {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::uint32_t) == 0) {
    const auto* w = reinterpret_cast<const std::uint32_t*>(p);
    return {std::atomic_ref<const std::uint32_t>(w[0]).load(std::memory_order_relaxed),
            std::atomic_ref<const std::uint32_t>(w[1]).load(std::memory_order_relaxed)};
  }
  std::array<unsigned char, sizeof(VarRef)> b{};
  const auto* v = reinterpret_cast<const volatile unsigned char*>(p);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = v[i];
  VarRef r;
  std::memcpy(&r, b.data(), sizeof r);
  return r;
}

/// The bytes of a message of `type` (a View's constructor): at least its
/// fixed part, and 8-byte aligned so that every block is aligned for its
/// elements in memory too. Throws MessageError naming `type`.
inline Bytes message(std::span<const std::byte> bytes, std::uint32_t fixed, const char* type) {
  if (bytes.size() < fixed || bytes.size() > UINT32_MAX || reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0) {
    throw MessageError(std::string(type) + ": a message of " + std::to_string(bytes.size()) +
                       " bytes, 8-byte aligned, holding at least its " + std::to_string(fixed) +
                       "-byte fixed part, is needed to view it");
  }
  return {bytes.data(), static_cast<std::uint32_t>(bytes.size()), fixed};
}

/// Throws MessageError naming `what` when `count` elements pass a
/// sequence's `bound` (0: none): every reader and writer's bound check.
/// The refusals of check_bound and check, out of line: the checks stay a
/// few instructions where they are inlined (every VarRef a codec follows).
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_over_bound(std::uint64_t count, std::uint32_t bound,
                                                                    std::string_view what) {
  throw MessageError(std::string(what) + ": " + std::to_string(count) + " elements in a sequence of at most " +
                     std::to_string(bound));
}
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_outside(VarRef r, std::size_t message_size,
                                                                 std::uint32_t fixed, std::uint32_t size,
                                                                 std::uint32_t align, std::string_view what) {
  throw MessageError(std::string(what) + ": " + std::to_string(r.count) + " elements of " + std::to_string(size) +
                     " bytes at offset " + std::to_string(r.offset) + " are outside the message's " +
                     std::to_string(message_size) + " bytes (blocks start after its " + std::to_string(fixed) +
                     "-byte fixed part, aligned to " + std::to_string(align) + ")");
}

inline void check_bound(std::uint64_t count, std::uint32_t bound, std::string_view what) {
  if (bound != 0 && count > bound) [[unlikely]] {
    throw_over_bound(count, bound, what);
  }
}

/// Throws MessageError naming `what` unless the block `r` points at, of
/// `r.count` elements of `size` bytes aligned to `align`, lies inside a
/// message of `message_size` bytes after its `fixed`-byte fixed part and
/// holds at most `bound` elements (0: any): the check every reader of the
/// layout makes before it follows a VarRef.
inline void check(VarRef r, std::size_t message_size, std::uint32_t fixed, std::uint32_t size, std::uint32_t align,
                  std::uint32_t bound, std::string_view what) {
  check_bound(r.count, bound, what);
  if (!block_fits(r, message_size, fixed, size, align)) [[unlikely]] {
    throw_outside(r, message_size, fixed, size, align, what);
  }
}

/// Follows the VarRef at `at` (read once, load_ref, so a writer changing it
/// meanwhile cannot move the block after the check): the block of `count`
/// elements of `size` bytes aligned to `align`, at most `bound` (0: any).
/// Throws MessageError naming `what` (check()).
inline const std::byte* block(const Bytes& m, std::uint32_t at, std::uint32_t size, std::uint32_t align,
                              std::uint32_t bound, std::uint32_t& count, std::string_view what) {
  const VarRef r = load_ref(m.data + at);
  check(r, m.size, m.fixed, size, align, bound, what);
  count = r.count;
  return r.count == 0 ? m.data : m.data + r.offset;
}

/// The string whose VarRef is at `at`.
inline std::string_view string(const Bytes& m, std::uint32_t at, std::string_view what) {
  std::uint32_t n = 0;
  const std::byte* b = block(m, at, 1, 1, 0, n, what);
  return {reinterpret_cast<const char*>(b), n};
}

/// The primitives of the sequence whose VarRef is at `at`.
template <typename T>
std::span<const T> sequence(const Bytes& m, std::uint32_t at, std::uint32_t bound, std::string_view what) {
  std::uint32_t n = 0;
  const std::byte* b = block(m, at, sizeof(T), alignof(T), bound, n, what);
  return {reinterpret_cast<const T*>(b), n};
}

/// Bytes a conversion to an owning type may still make from a message:
/// the message's size, less each block followed (an element counted as at
/// least one byte). Blocks that overlap could otherwise make a small
/// message convert to an exponentially large one.
class Budget {
 public:
  explicit Budget(std::uint64_t bytes) noexcept : left_(bytes) {}
  /// Charges `count` elements of `size` bytes; throws MessageError naming
  /// `what` past the message's bytes.
  void take(std::uint64_t count, std::uint32_t size, std::string_view what) {
    const std::uint64_t n = count * std::max<std::uint32_t>(size, 1);
    if (n > left_) [[unlikely]] {
      overlap(what);
    }
    left_ -= n;
  }
  [[nodiscard]] std::uint64_t left() const noexcept { return left_; }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] static void overlap(std::string_view what) {
    throw MessageError(std::string(what) + ": the message's blocks overlap (they reference more bytes than it holds)");
  }

  std::uint64_t left_;
};

/// Follows the VarRefs of one message for a conversion that reads every
/// block (a codec, the validator, an owning copy): each block is checked
/// (check()) and charged to the message's Budget before it is used.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, std::uint32_t fixed) noexcept
      : bytes_(bytes), fixed_(fixed), budget_(bytes.size()) {}

  /// Where the block of the VarRef at `at` starts (0 when it is empty),
  /// with `count` set to its elements. Throws MessageError naming `what`.
  std::size_t block(std::size_t at, std::uint32_t size, std::uint32_t align, std::uint32_t bound, std::uint32_t& count,
                    std::string_view what) {
    const VarRef r = load_ref(bytes_.data() + at);
    check(r, bytes_.size(), fixed_, size, align, bound, what);
    count = r.count;
    if (r.count == 0) return 0;
    budget_.take(r.count, size, what);
    return r.offset;
  }

 private:
  std::span<const std::byte> bytes_;
  std::uint32_t fixed_;
  Budget budget_;
};

/// Elements of a sequence (or fixed array) whose elements are read by
/// `Read::get(bytes, at, what)` (a string, a view of a variable message):
/// a random-access range of values made as they are reached.
template <typename Read>
class Sequence {
 public:
  using value_type = decltype(Read::get(Bytes{}, 0, ""));

  Sequence() = default;
  Sequence(const Bytes& m, std::uint32_t at, std::uint32_t count, std::uint32_t stride, const char* what) noexcept
      : m_(m), at_(at), count_(count), stride_(stride), what_(what) {}

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  value_type operator[](std::size_t i) const {
    return Read::get(m_, at_ + static_cast<std::uint32_t>(i) * stride_, what_);
  }
  /// Like operator[], checked: Error(kInvalidArgument) past the end.
  value_type at(std::size_t i) const {
    if (i >= count_) throw MessageError(std::string(what_) + ": index out of range");
    return (*this)[i];
  }

  /// An input iterator over the elements (a range-for, std::ranges).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Sequence::value_type;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const Sequence* s, std::size_t i) noexcept : s_(s), i_(i) {}
    value_type operator*() const { return (*s_)[i_]; }
    Iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    Iterator operator++(int) noexcept {
      Iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iterator& o) const noexcept { return i_ == o.i_; }

   private:
    const Sequence* s_ = nullptr;
    std::size_t i_ = 0;
  };
  [[nodiscard]] Iterator begin() const noexcept { return {this, 0}; }
  [[nodiscard]] Iterator end() const noexcept { return {this, count_}; }

 private:
  Bytes m_;
  std::uint32_t at_ = 0;
  std::uint32_t count_ = 0;
  std::uint32_t stride_ = 0;
  const char* what_ = "";
};

/// Reads a string element (a `string[]`'s, a `string[3]`'s).
struct StringElement {
  static std::string_view get(const Bytes& m, std::uint32_t at, const char* what) { return string(m, at, what); }
};

/// The elements of the sequence whose VarRef is at `at`, each
/// `stride` bytes and aligned to `align`, read by `Read`.
template <typename Read>
Sequence<Read> sequence_of(const Bytes& m, std::uint32_t at, std::uint32_t stride, std::uint32_t align,
                           std::uint32_t bound, const char* what) {
  std::uint32_t n = 0;
  const std::byte* b = block(m, at, stride, align, bound, n, what);
  return {m, static_cast<std::uint32_t>(b - m.data), n, stride, what};
}

/// The VarRef of a block of `count` elements of `size` bytes aligned to
/// `align` appended to a message of `used` bytes ({0, 0} when empty).
/// Throws MessageError naming `what` when the block would end past 4 GiB,
/// a VarRef's reach.
inline VarRef place(std::uint64_t used, std::uint64_t count, std::uint32_t size, std::uint32_t align,
                    std::string_view what) {
  if (count == 0) return {};
  const std::uint64_t start = (used + align - 1) / align * align;
  if (count > UINT32_MAX || start + count * size > UINT32_MAX) {
    throw MessageError(std::string(what) + ": " + std::to_string(count) + " elements of " + std::to_string(size) +
                       " bytes take the message past 4 GiB");
  }
  return {static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(count)};
}

/// Appends a zeroed block (place()) to the message growing in `out` and
/// points the VarRef at `at` to it: a decoder's writer, where the message
/// grows as it is read. Returns where the block starts (0 when empty).
inline std::size_t append(std::vector<std::byte>& out, std::size_t at, std::uint64_t count, std::uint32_t size,
                          std::uint32_t align, std::string_view what) {
  const VarRef r = place(out.size(), count, size, align, what);
  std::memcpy(out.data() + at, &r, sizeof r);
  if (count != 0) out.resize(r.offset + static_cast<std::size_t>(count * size));
  return r.offset;
}

/// Appends a block holding `bytes` (`count` elements of `size` bytes,
/// aligned to `align`) to the message growing in `out` and points the
/// VarRef at `at` to it: copied once, not zeroed first (an encoder's
/// sequence of numbers given as one block). Returns where it starts.
inline std::size_t append_copy(std::vector<std::byte>& out, std::size_t at, std::uint64_t count, std::uint32_t size,
                               std::uint32_t align, std::span<const std::byte> bytes, std::string_view what) {
  const VarRef r = place(out.size(), count, size, align, what);
  std::memcpy(out.data() + at, &r, sizeof r);
  if (count != 0) {
    out.resize(r.offset);  // the alignment's padding, zeroed
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return r.offset;
}

/// Writes a message with strings and sequences into a buffer (a loan): the
/// root's fixed part first, zeroed, then each block appended where the
/// message ends so far. size() is what to publish (commit). A block that
/// does not fit throws Error(kInvalidArgument) in one line naming the
/// field and the size needed.
class Writer {
 public:
  explicit Writer(std::span<std::byte> buffer) noexcept : buffer_(buffer) {}

  /// Starts a message of `type` whose fixed part is `fixed` bytes.
  void start(std::uint32_t fixed, const char* type) {
    need(fixed, type);
    std::memset(buffer_.data(), 0, fixed);
    used_ = fixed;
  }

  /// Appends a block of `count` elements of `size` bytes aligned to
  /// `align` (its padding zeroed; the block too when `zero`), and points
  /// the VarRef at `at` to it. Returns the block's offset.
  std::uint32_t add(std::uint32_t at, std::uint64_t count, std::uint32_t size, std::uint32_t align, bool zero,
                    std::string_view what) {
    const VarRef r = place(used_, count, size, align, what);
    if (count == 0) {  // empty: no block, and no room asked for its alignment
      std::memset(buffer_.data() + at, 0, sizeof(VarRef));
      return 0;
    }
    const std::uint64_t end = std::uint64_t{r.offset} + count * size;
    need(end, what);
    std::memset(buffer_.data() + used_, 0, static_cast<std::size_t>((zero ? end : r.offset) - used_));
    std::memcpy(buffer_.data() + at, &r, sizeof r);
    used_ = static_cast<std::size_t>(end);
    return r.offset;
  }

  /// A string's block, filled.
  void string(std::uint32_t at, std::string_view s, std::string_view what) {
    const std::uint32_t b = add(at, s.size(), 1, 1, false, what);
    if (!s.empty()) std::memcpy(buffer_.data() + b, s.data(), s.size());
  }

  /// A sequence's block of trivially copyable elements, for the caller to
  /// fill (zeroed first when `zero`).
  template <typename T>
  std::span<T> sequence(std::uint32_t at, std::size_t count, std::uint32_t bound, bool zero, std::string_view what) {
    check_bound(count, bound, what);
    const std::uint32_t b = add(at, count, sizeof(T), alignof(T), zero, what);
    return {reinterpret_cast<T*>(buffer_.data() + b), count};
  }

  /// Where element `i` of `count` elements of `stride` bytes from `first`
  /// is. Throws Error(kInvalidArgument) naming `what` past the end.
  static std::uint32_t item(std::uint32_t first, std::size_t i, std::size_t count, std::uint32_t stride,
                            std::string_view what) {
    if (i >= count) {
      throw MessageError(std::string(what) + ": element " + std::to_string(i) + " of " + std::to_string(count) +
                         " (size the sequence first)");
    }
    return first + static_cast<std::uint32_t>(i) * stride;
  }

  /// Element `i` of the sequence whose VarRef (set by add()) is at `at`.
  [[nodiscard]] std::uint32_t element(std::uint32_t at, std::size_t i, std::uint32_t stride,
                                      std::string_view what) const {
    const auto r = load<VarRef>(buffer_.data() + at);
    return item(r.offset, i, r.count, stride, what);
  }

  /// msg::check_bound, for generated builders.
  static void check_bound(std::size_t count, std::uint32_t bound, std::string_view what) {
    msg::check_bound(count, bound, what);
  }

  [[nodiscard]] std::byte* data() const noexcept { return buffer_.data(); }
  /// Bytes written: the message's size so far.
  [[nodiscard]] std::size_t size() const noexcept { return used_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return buffer_.size(); }

 private:
  void need(std::uint64_t end, std::string_view what) const {
    if (end > buffer_.size()) {
      throw MessageError(std::string(what) + ": the message needs at least " + std::to_string(end) +
                         " bytes; its buffer (a loan, a channel's max_message_size) holds " +
                         std::to_string(buffer_.size()));
    }
  }

  std::span<std::byte> buffer_;
  std::size_t used_ = 0;
};

/// Where a block of `count` elements of `size` bytes aligned to `align`
/// ends, appended to a message of `end` bytes (Writer::add's arithmetic,
/// for an owning type's wire_size()).
constexpr std::size_t grow(std::size_t end, std::size_t count, std::uint32_t size, std::uint32_t align) noexcept {
  return count == 0 ? end : (end + align - 1) / align * align + count * size;
}

/// The bytes of `message`, an owning type of a message with strings or
/// sequences (its wire_size(), written through its Builder): what a
/// publisher sends for it.
template <typename T>
std::vector<std::byte> to_bytes(const T& message) {
  std::vector<std::byte> out(message.wire_size());
  Writer writer(out);
  message.build(typename T::Builder(writer));
  out.resize(writer.size());
  return out;
}

}  // namespace msg
}  // namespace shmbus
