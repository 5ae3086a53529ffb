#pragma once
/// @file encoder.hpp
/// Values -> a message's bytes through its schema: the one writer of the
/// layout from values (Schema::encode from JSON, Python's messages through
/// the binding). The fixed part is written in place and each string's and
/// sequence's block appended as it is met (msg::append), so every value
/// source gets the same layout, the same checks and the same refusals
/// ("header.frame_id: must be a string, got number 3").
///
/// `Values` says how one kind of value is read (static members):
///   using Value;                                   a handle, cheap to copy
///   using Fields;                                  a message's fields
///   std::optional<Fields> fields(const Value&)     when the value is a message
///   template <class F> void each_key(const Fields&, F f)        f(std::string_view) per field given
///   std::optional<Value> find(const Fields&, std::string_view)  a field given
///   bool array(const Value&); std::size_t size(const Value&); Value at(const Value&, std::size_t)
///   std::optional<std::string_view> string(const Value&)        valid while the value lives
///   std::optional<bool> boolean(const Value&)
///   Number number(const Value&)                    see Number
///   template <class F> bool elements(const Value&, Primitive, F use)
///       when the value is a block of the primitive's elements as the
///       layout holds them (little-endian, packed): use(std::span<const
///       std::byte>) and true; false to read it element by element
///   std::string describe(const Value&)             "number 300", for a refusal
///   std::string text(const Value&)                 "300", for an out-of-range refusal
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shmbus/schema.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus::schema {

/// A number as a value source holds it.
struct Number {
  enum class Kind : std::uint8_t { kNone, kSigned, kUnsigned, kFloat, kTooLarge };
  Kind kind = Kind::kNone;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

template <typename Values>
class Encoder {
 public:
  using Value = typename Values::Value;

  Encoder(std::vector<std::byte>& out, std::size_t max_bytes) : out_(out), max_bytes_(max_bytes) {}

  /// Writes the message `v` of type `m` whose fixed part is at `base`.
  void message(const MessageDef& m, const Value& v, std::size_t base, const std::string& path) {
    const std::optional<typename Values::Fields> given = Values::fields(v);
    if (!given) fail(path.empty() ? m.name : path, "must be an object", v);
    Values::each_key(*given, [&](std::string_view key) {
      const bool known = std::any_of(m.fields.begin(), m.fields.end(), [&](const Field& f) { return f.name == key; });
      if (!known) {
        throw CodecError(fmt::format("{}: unknown field '{}' (message {} has: {})", path.empty() ? m.name : path, key,
                                     m.name, field_list(m)));
      }
    });
    for (const Field& f : m.fields) {
      const std::string p = path.empty() ? f.name : path + "." + f.name;
      const std::optional<Value> value = Values::find(*given, f.name);
      if (!value) throw CodecError(fmt::format("{}: missing (a {} field of {})", p, f.type(), m.name));
      field(f, *value, base + f.offset, p);
    }
  }

 private:
  void field(const Field& f, const Value& v, std::size_t at, const std::string& path) {
    if (!f.unbounded && f.array_length == 0) {
      element(f, v, at, path);
      return;
    }
    if (f.kind == FieldKind::kPrimitive && elements(f, v, at, path)) return;
    const std::string whole = fmt::format("must be an array of {} elements", f.array_length);
    if (!Values::array(v)) fail(path, f.unbounded ? "must be an array" : whole, v);
    const std::size_t n = Values::size(v);
    std::size_t b = at;
    if (f.unbounded) {
      msg::check_bound(n, f.sequence_bound, path);
      b = block(at, n, f.element_size, f.element_align, path);
    } else if (n != f.array_length) {
      fail(path, whole, v);
    }
    for (std::size_t i = 0; i < n; ++i) {
      element(f, Values::at(v, i), b + i * f.element_size, fmt::format("{}[{}]", path, i));
    }
  }

  /// A sequence or array of primitives given as one block of their bytes:
  /// copied at once. False when `v` is not such a block.
  bool elements(const Field& f, const Value& v, std::size_t at, const std::string& path) {
    return Values::elements(v, f.primitive, [&](std::span<const std::byte> bytes) {
      const std::size_t n = bytes.size() / f.element_size;
      if (bytes.size() % f.element_size != 0) {
        fail(path, fmt::format("must be whole {}-byte elements", f.element_size), v);
      }
      if (f.primitive == Primitive::kBool) {
        const bool all_bool = std::all_of(bytes.begin(), bytes.end(), [](std::byte x) { return x <= std::byte{1}; });
        if (!all_bool) fail(path, "must be true or false (bytes 0 or 1)", v);
      }
      if (f.unbounded) {
        msg::check_bound(n, f.sequence_bound, path);
        fits(n, f.element_size, f.element_align, path);
        msg::append_copy(out_, at, n, f.element_size, f.element_align, bytes, path);
        return;
      }
      if (n != f.array_length) fail(path, fmt::format("must be an array of {} elements", f.array_length), v);
      if (!bytes.empty()) std::memcpy(out_.data() + at, bytes.data(), bytes.size());
    });
  }

  void element(const Field& f, const Value& v, std::size_t at, const std::string& path) {
    switch (f.kind) {
      case FieldKind::kPrimitive:
        primitive(f.primitive, v, at, path);
        return;
      case FieldKind::kString: {
        const std::optional<std::string_view> s = Values::string(v);
        if (!s) fail(path, "must be a string", v);
        if (s->size() > f.string_capacity) {
          throw CodecError(
              fmt::format("{}: string of {} bytes is out of range for string<{}>", path, s->size(), f.string_capacity));
        }
        std::memcpy(out_.data() + at, s->data(), s->size());
        return;
      }
      case FieldKind::kUnboundedString: {
        const std::optional<std::string_view> s = Values::string(v);
        if (!s) fail(path, "must be a string", v);
        const std::size_t b = block(at, s->size(), 1, 1, path);
        if (!s->empty()) std::memcpy(out_.data() + b, s->data(), s->size());
        return;
      }
      default:
        message(*f.message, v, at, path);
    }
  }

  /// A new block, within max_bytes_.
  std::size_t block(std::size_t at, std::uint64_t count, std::uint32_t size, std::uint32_t align,
                    const std::string& path) {
    fits(count, size, align, path);
    return msg::append(out_, at, count, size, align, path);
  }

  /// Throws CodecError naming `path` when a block would take the message
  /// past max_bytes_.
  void fits(std::uint64_t count, std::uint32_t size, std::uint32_t align, const std::string& path) const {
    if (count * size > max_bytes_ || out_.size() + count * size + align > max_bytes_) {
      throw CodecError(fmt::format("{}: the message would pass {} bytes", path, max_bytes_));
    }
  }

  template <typename T>
  void store(std::size_t at, T v) {
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }

  void primitive(Primitive p, const Value& v, std::size_t at, const std::string& path) {
    switch (p) {
      case Primitive::kBool: {
        const std::optional<bool> b = Values::boolean(v);
        if (!b) fail(path, "must be true or false", v);
        store<std::uint8_t>(at, *b ? 1 : 0);
        return;
      }
      case Primitive::kFloat32:
        store<float>(at, static_cast<float>(floating(v, path, true)));
        return;
      case Primitive::kFloat64:
        store<double>(at, floating(v, path, false));
        return;
      case Primitive::kInt8:
        return store(at, integer<std::int8_t>(v, path));
      case Primitive::kUint8:
        return store(at, integer<std::uint8_t>(v, path));
      case Primitive::kInt16:
        return store(at, integer<std::int16_t>(v, path));
      case Primitive::kUint16:
        return store(at, integer<std::uint16_t>(v, path));
      case Primitive::kInt32:
        return store(at, integer<std::int32_t>(v, path));
      case Primitive::kUint32:
        return store(at, integer<std::uint32_t>(v, path));
      case Primitive::kInt64:
        return store(at, integer<std::int64_t>(v, path));
      case Primitive::kUint64:
        return store(at, integer<std::uint64_t>(v, path));
    }
  }

  template <typename T>
  static T integer(const Value& v, const std::string& path) {
    const auto out_of_range = [&] {
      throw CodecError(fmt::format("{}: {} is out of range for {} ({} to {})", path, Values::text(v), type_name<T>(),
                                   +std::numeric_limits<T>::min(), +std::numeric_limits<T>::max()));
    };
    const Number n = Values::number(v);
    switch (n.kind) {
      case Number::Kind::kUnsigned:
        if (n.u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) out_of_range();
        return static_cast<T>(n.u);
      case Number::Kind::kSigned:
        if constexpr (std::is_unsigned_v<T>) {
          if (n.i < 0 || static_cast<std::uint64_t>(n.i) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
            out_of_range();
          }
        } else if (n.i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                   n.i > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
          out_of_range();
        }
        return static_cast<T>(n.i);
      case Number::Kind::kTooLarge:
        out_of_range();
        break;
      default:
        break;
    }
    if constexpr (sizeof(T) == 8) {
      // 64-bit values also as decimal strings (exact where a JSON number
      // would not be: past 2^53 in JavaScript).
      if (const std::optional<std::string_view> s = Values::string(v)) {
        T parsed{};
        const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), parsed);
        if (ec == std::errc::result_out_of_range) out_of_range();
        if (ec == std::errc{} && end == s->data() + s->size() && !s->empty()) return parsed;
      }
    }
    fail(path, fmt::format("must be an integer ({})", type_name<T>()), v);
  }

  static double floating(const Value& v, const std::string& path, bool single) {
    const Number n = Values::number(v);
    if (n.kind != Number::Kind::kNone) {
      const double d = n.kind == Number::Kind::kFloat      ? n.d
                       : n.kind == Number::Kind::kSigned   ? static_cast<double>(n.i)
                       : n.kind == Number::Kind::kUnsigned ? static_cast<double>(n.u)
                                                           : std::numeric_limits<double>::infinity();
      if (single && std::isfinite(d) && std::abs(d) > std::numeric_limits<float>::max()) {
        throw CodecError(fmt::format("{}: {} is out of range for float32", path, Values::text(v)));
      }
      return d;
    }
    if (const std::optional<std::string_view> s = Values::string(v)) {
      if (*s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (*s == "Infinity") return std::numeric_limits<double>::infinity();
      if (*s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    fail(path, "must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")", v);
  }

  template <typename T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, std::int8_t>)
      return "int8";
    else if constexpr (std::is_same_v<T, std::uint8_t>)
      return "uint8";
    else if constexpr (std::is_same_v<T, std::int16_t>)
      return "int16";
    else if constexpr (std::is_same_v<T, std::uint16_t>)
      return "uint16";
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return "int32";
    else if constexpr (std::is_same_v<T, std::uint32_t>)
      return "uint32";
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return "int64";
    else
      return "uint64";
  }

  [[noreturn]] static void fail(const std::string& path, const std::string& what, const Value& got) {
    throw CodecError(fmt::format("{}: {}, got {}", path, what, Values::describe(got)));
  }

  static std::string field_list(const MessageDef& m) {
    std::string s;
    for (const Field& f : m.fields) s += (s.empty() ? "" : ", ") + f.name;
    return s;
  }

  std::vector<std::byte>& out_;
  std::size_t max_bytes_;
};

/// A message of the type `s` from the values `v` read by `Values`, at most
/// `max_bytes`, written into `out` (its capacity reused). Throws
/// CodecError naming the field.
template <typename Values>
void encode_values_into(const Schema& s, const typename Values::Value& v, std::size_t max_bytes,
                        std::vector<std::byte>& out) {
  const MessageDef& m = s.root();
  out.assign(m.size, std::byte{0});
  Encoder<Values>(out, max_bytes).message(m, v, 0, "");
}

/// The same, into a new vector.
template <typename Values>
std::vector<std::byte> encode_values(const Schema& s, const typename Values::Value& v, std::size_t max_bytes) {
  std::vector<std::byte> out;
  encode_values_into<Values>(s, v, max_bytes, out);
  return out;
}

}  // namespace shmbus::schema
