// Bytes -> CDR through a schema: the message as ROS 2 serializes the type
// ros2msg_text() describes.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "shmbus/schema.hpp"

namespace shmbus::schema {

namespace {

/// Little-endian CDR (XCDR1, as ROS 2's rmw implementations write it):
/// each primitive aligned to its size, counted from after the 4-byte
/// encapsulation header.
class CdrWriter {
 public:
  explicit CdrWriter(std::string& out) : out_(out) {
    out_.append("\x00\x01\x00\x00", 4);  // CDR_LE, no options
    origin_ = out_.size();
  }

  void align(std::size_t n) {
    const std::size_t misalign = (out_.size() - origin_) % n;
    if (misalign != 0) out_.append(n - misalign, '\0');
  }
  void u32(std::uint32_t v) {
    align(4);
    raw(&v, 4);
  }
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }

 private:
  std::string& out_;
  std::size_t origin_ = 0;
};

/// Bytes -> CDR. Recurses only as deep as the schema nests; every VarRef
/// is checked before it is followed (msg::Reader).
class CdrEncoder {
 public:
  CdrEncoder(std::span<const std::byte> bytes, const MessageDef& root, std::string& out)
      : bytes_(bytes), blocks_(bytes, root.size), w_(out) {}

  void message(const MessageDef& m, std::size_t base) {
    // ROS 2 gives a message without fields one uint8 member.
    if (m.fields.empty()) w_.raw("", 1);
    for (const Field& f : m.fields) {
      if (f.unbounded) {
        std::uint32_t count = 0;
        const std::size_t b =
            blocks_.block(base + f.offset, f.element_size, f.element_align, f.sequence_bound, count, f.name);
        w_.u32(count);
        elements(f, b, count);
      } else if (f.array_length != 0) {
        elements(f, base + f.offset, f.array_length);  // a fixed array has no count
      } else {
        element(f, base + f.offset);
      }
    }
  }

 private:
  void elements(const Field& f, std::size_t at, std::size_t n) {
    if (f.kind == FieldKind::kPrimitive && f.primitive != Primitive::kBool) {
      // Back to back here as in CDR, both little-endian: one copy. Aligned
      // only before an element: an empty sequence of float64 has no pad
      // after its count (Fast-CDR's serializeArray writes nothing for 0).
      if (n == 0) return;
      w_.align(size_of(f.primitive));
      w_.raw(bytes_.data() + at, n * f.element_size);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) element(f, at + i * f.element_size);
  }

  void element(const Field& f, std::size_t at) {
    const std::byte* p = bytes_.data() + at;
    switch (f.kind) {
      case FieldKind::kPrimitive: {
        const std::uint32_t size = size_of(f.primitive);
        w_.align(size);
        if (f.primitive == Primitive::kBool) {
          const char b = *p != std::byte{0} ? 1 : 0;
          w_.raw(&b, 1);
        } else {
          w_.raw(p, size);
        }
        return;
      }
      case FieldKind::kString: {
        const void* nul = std::memchr(p, 0, f.string_capacity);
        const auto n = nul != nullptr ? static_cast<std::size_t>(static_cast<const std::byte*>(nul) - p)
                                      : std::size_t{f.string_capacity};
        write_string(p, n);
        return;
      }
      case FieldKind::kUnboundedString: {
        std::uint32_t n = 0;
        const std::size_t b = blocks_.block(at, 1, 1, 0, n, f.name);
        write_string(bytes_.data() + b, n);
        return;
      }
      case FieldKind::kMessage:
        message(*f.message, at);
        return;
    }
  }

  /// Length with the terminating NUL, the bytes, the NUL.
  void write_string(const std::byte* p, std::size_t n) {
    w_.u32(static_cast<std::uint32_t>(n + 1));
    w_.raw(p, n);
    w_.raw("", 1);
  }

  std::span<const std::byte> bytes_;
  msg::Reader blocks_;
  CdrWriter w_;
};

}  // namespace

void Schema::to_cdr(std::span<const std::byte> bytes, std::string& out) const {
  const MessageDef& m = *root_;
  if (bytes.size() < m.size) {
    throw CodecError(fmt::format("{}: buffer of {} bytes is shorter than the {} bytes the message needs", m.name,
                                 bytes.size(), m.size));
  }
  out.reserve(out.size() + 64 + bytes.size());
  CdrEncoder(bytes, m, out).message(m, 0);
}

void bytes_to_cdr(std::span<const std::byte> bytes, std::string& out) {
  if (bytes.size() > UINT32_MAX) throw CodecError(fmt::format("{} bytes do not fit a CDR uint8[]", bytes.size()));
  out.reserve(out.size() + 8 + bytes.size());
  CdrWriter w(out);
  w.u32(static_cast<std::uint32_t>(bytes.size()));
  w.raw(bytes.data(), bytes.size());
}

namespace {

/// What a CodecError names: a field of a message ("pkg/Type.field"), a
/// message, or a fixed text. Made into text only when an error is thrown:
/// decoding names no field on its way.
struct Where {
  const std::string* message = nullptr;
  const std::string* field = nullptr;
  const char* text = nullptr;
  [[nodiscard]] std::string str() const {
    if (text != nullptr) return text;
    return field == nullptr ? *message : *message + "." + *field;
  }
};

/// Reads little-endian CDR (XCDR1) after its encapsulation header, every
/// read checked against what is left.
class CdrReader {
 public:
  explicit CdrReader(std::span<const std::byte> cdr) : in_(cdr) {
    if (cdr.size() < 4) throw CodecError(fmt::format("CDR of {} bytes has no encapsulation header", cdr.size()));
    if (cdr[0] != std::byte{0} || (cdr[1] != std::byte{1} && cdr[1] != std::byte{3})) {
      throw CodecError("CDR that is not little-endian (encapsulation " + std::to_string(std::to_integer<int>(cdr[1])) +
                       "); only CDR_LE is read");
    }
    at_ = 4;
  }
  void align(std::size_t n) {
    const std::size_t misalign = (at_ - 4) % n;
    if (misalign != 0) skip(n - misalign);
  }
  const std::byte* take(std::size_t n, const Where& what) {
    if (n > in_.size() - at_) {
      throw CodecError(fmt::format("{}: CDR cut short ({} bytes wanted, {} left)", what.str(), n, in_.size() - at_));
    }
    const std::byte* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::uint32_t u32(const Where& what) {
    align(4);
    std::uint32_t v = 0;
    std::memcpy(&v, take(4, what), 4);
    return v;
  }
  [[nodiscard]] std::size_t left() const noexcept { return in_.size() - at_; }

 private:
  void skip(std::size_t n) { (void)take(n, Where{.text = "padding"}); }
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

/// CDR -> bytes: the fixed part in place, each sequence's and string's
/// block appended as it is met (msg::append).
class CdrDecoder {
 public:
  CdrDecoder(std::span<const std::byte> cdr, std::vector<std::byte>& out, std::size_t max_bytes, CdrNotes* notes)
      : r_(cdr), out_(out), max_bytes_(max_bytes), notes_(notes) {}

  void message(const MessageDef& m, std::size_t base) {
    if (m.fields.empty()) (void)r_.take(1, Where{.message = &m.name});
    for (const Field& f : m.fields) {
      const Where what{.message = &m.name, .field = &f.name};
      if (f.unbounded) {
        const std::uint32_t count = r_.u32(what);
        // Each element takes at least one byte of CDR: a count beyond what
        // is left is refused before anything is allocated.
        if (count > r_.left()) {
          throw CodecError(fmt::format("{}: {} elements in {} bytes of CDR", what.str(), count, r_.left()));
        }
        if (f.sequence_bound != 0 && count > f.sequence_bound) msg::check_bound(count, f.sequence_bound, what.str());
        elements(f, block(base + f.offset, count, f.element_size, f.element_align, what), count, what);
      } else if (f.array_length != 0) {
        elements(f, base + f.offset, f.array_length, what);
      } else {
        element(f, base + f.offset, what);
      }
    }
  }

 private:
  void elements(const Field& f, std::size_t at, std::size_t n, const Where& what) {
    if (f.kind == FieldKind::kPrimitive && f.primitive != Primitive::kBool) {
      if (n == 0) return;  // no pad without an element, as the writer
      r_.align(size_of(f.primitive));
      std::memcpy(out_.data() + at, r_.take(n * f.element_size, what), n * f.element_size);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) element(f, at + i * f.element_size, what);
  }

  void element(const Field& f, std::size_t at, const Where& what) {
    switch (f.kind) {
      case FieldKind::kPrimitive: {
        const std::uint32_t size = size_of(f.primitive);
        r_.align(size);
        const std::byte* p = r_.take(size, what);
        if (f.primitive == Primitive::kBool && std::to_integer<int>(*p) > 1) {
          throw CodecError(fmt::format("{}: bool {} is neither 0 nor 1", what.str(), std::to_integer<int>(*p)));
        }
        std::memcpy(out_.data() + at, p, size);
        return;
      }
      case FieldKind::kString: {
        const std::uint32_t length = read_string(what);
        // The bound is on what the CDR holds before its terminating NUL,
        // bytes after a NUL inside included (rosidl's check of the
        // std::string Fast-CDR reads), not on what is kept.
        if (string_size_ > f.string_capacity) {
          throw CodecError(fmt::format("{}: a string of {} bytes does not fit string<{}>", what.str(), string_size_,
                                       f.string_capacity));
        }
        std::memcpy(out_.data() + at, string_bytes_, length);
        return;
      }
      case FieldKind::kUnboundedString: {
        const std::uint32_t length = read_string(what);
        const std::byte* p = string_bytes_;                   // in the CDR, which block() does not move
        const std::size_t b = block(at, length, 1, 1, what);  // before out_.data(): it may move the bytes
        std::memcpy(out_.data() + b, p, length);
        return;
      }
      case FieldKind::kMessage:
        message(*f.message, at);
        return;
    }
  }

  /// A CDR string: its length (without the NUL the CDR length counts);
  /// its bytes are at string_bytes_. The value is what rmw_fastrtps makes
  /// of it: Fast-CDR takes the bytes before the terminating NUL, or all of
  /// them when the last is not NUL (counted in
  /// CdrNotes::strings_without_nul), and a ROS 2 string ends at its first
  /// NUL (rosidl's C strings; Fast-CDR writes a std::string's c_str()), so
  /// bytes after a NUL inside are dropped and counted
  /// (CdrNotes::strings_cut_at_nul).
  std::uint32_t read_string(const Where& what) {
    const std::uint32_t n = r_.u32(what);  // with the terminating NUL
    string_bytes_ = r_.take(n, what);
    string_size_ = n != 0 && string_bytes_[n - 1] == std::byte{0} ? n - 1 : n;
    const void* nul = n == 0 ? nullptr : std::memchr(string_bytes_, 0, n);
    if (nul == nullptr) {
      if (notes_ != nullptr) ++notes_->strings_without_nul;
      return n;
    }
    const auto length = static_cast<std::uint32_t>(static_cast<const std::byte*>(nul) - string_bytes_);
    if (length + 1 != n && notes_ != nullptr) ++notes_->strings_cut_at_nul;
    return length;
  }

  /// A new block, within max_bytes_.
  std::size_t block(std::size_t at, std::uint64_t count, std::uint32_t size, std::uint32_t align, const Where& what) {
    // Within a VarRef's reach too, so msg::append() has nothing to refuse.
    const std::uint64_t limit = std::min<std::uint64_t>(max_bytes_, UINT32_MAX);
    if (count * size > limit || out_.size() + count * size + align > limit) {
      throw CodecError(fmt::format("{}: the message would pass {} bytes", what.str(), limit));
    }
    return msg::append(out_, at, count, size, align, {});
  }

  CdrReader r_;
  std::vector<std::byte>& out_;
  std::size_t max_bytes_;
  CdrNotes* notes_;
  const std::byte* string_bytes_ = nullptr;
  std::uint32_t string_size_ = 0;  ///< the last string's bytes before its terminating NUL
};

}  // namespace

std::vector<std::byte> Schema::from_cdr(std::span<const std::byte> cdr, std::size_t max_bytes, CdrNotes* notes) const {
  std::vector<std::byte> out(root_->size);
  // The blocks take about what the CDR takes: one allocation, not one per
  // block that grows the message.
  out.reserve(std::min<std::size_t>(root_->size + 2 * cdr.size(), max_bytes));
  CdrDecoder(cdr, out, max_bytes, notes).message(*root_, 0);
  return out;
}

std::vector<std::byte> bytes_from_cdr(std::span<const std::byte> cdr) {
  CdrReader r(cdr);
  const Where data{.text = "shmbus/msg/Bytes.data"};
  const std::uint32_t n = r.u32(data);
  const std::byte* p = r.take(n, data);
  return {p, p + n};
}

}  // namespace shmbus::schema
