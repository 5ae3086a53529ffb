#pragma once
// A message of a shmbus schema written and read by Fast-CDR (Debian's
// libfastcdr 1.0, rmw_fastrtps's serializer), field by field as
// rosidl_typesupport_fastrtps_cpp's generated code calls it: a primitive
// with operator<<, a fixed array with serializeArray, an unbounded
// sequence as a std::vector, a bounded one as its uint32 count and then
// serializeArray, a message without fields as one uint8. Fast-CDR decides
// every pad; this file only chooses which of its calls to make. The
// message is JSON in the shape Schema::decode() gives (with `raw_floats`,
// float32 and float64 are their bit patterns, so that NaN payloads
// compare exactly). For the reference tests and the fuzz target.

#include <fastcdr/Cdr.h>
#include <fastcdr/FastBuffer.h>
#include <fastcdr/exceptions/Exception.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "shmbus/schema.hpp"

namespace shmbus::test {

namespace fastcdr_detail {

using eprosima::fastcdr::Cdr;
using schema::Field;
using schema::FieldKind;
using schema::Json;
using schema::MessageDef;
using schema::Primitive;

/// What a typesupport's own checks refuse (a bound passed).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
T bits_as(const Json& v, bool raw) {
  if constexpr (std::is_floating_point_v<T>) {
    if (raw) {
      using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const U u = v.get<U>();
      T t;
      std::memcpy(&t, &u, sizeof t);
      return t;
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    return v.get<bool>();
  } else {
    return v.get<T>();
  }
}

template <typename T>
Json json_of(T t, bool raw) {
  if constexpr (std::is_floating_point_v<T>) {
    if (raw) {
      using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      U u;
      std::memcpy(&u, &t, sizeof u);
      return u;
    }
    return static_cast<double>(t);
  } else {
    return t;
  }
}

/// Calls `f` with a value of `p`'s C++ type (the type chooses Fast-CDR's
/// overload).
template <typename F>
void with_type(Primitive p, F&& f) {
  switch (p) {
    case Primitive::kBool:
      f(bool{});
      return;
    case Primitive::kInt8:
      f(std::int8_t{});
      return;
    case Primitive::kUint8:
      f(std::uint8_t{});
      return;
    case Primitive::kInt16:
      f(std::int16_t{});
      return;
    case Primitive::kUint16:
      f(std::uint16_t{});
      return;
    case Primitive::kInt32:
      f(std::int32_t{});
      return;
    case Primitive::kUint32:
      f(std::uint32_t{});
      return;
    case Primitive::kInt64:
      f(std::int64_t{});
      return;
    case Primitive::kUint64:
      f(std::uint64_t{});
      return;
    case Primitive::kFloat32:
      f(float{});
      return;
    case Primitive::kFloat64:
      f(double{});
      return;
  }
}

class Writer {
 public:
  Writer(Cdr& cdr, bool raw) : cdr_(cdr), raw_(raw) {}

  void message(const MessageDef& m, const Json& v) {
    if (m.fields.empty()) cdr_ << std::uint8_t{0};  // structure_needs_at_least_one_member
    for (const Field& f : m.fields) field(f, v.at(f.name));
  }

 private:
  void field(const Field& f, const Json& v) {
    if (f.array_length == 0 && !f.unbounded) {
      element(f, v);
      return;
    }
    if (f.kind == FieldKind::kPrimitive) {
      with_type(f.primitive, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_same_v<T, bool>) {
          std::unique_ptr<bool[]> a(new bool[v.size() + 1]);
          for (std::size_t i = 0; i < v.size(); ++i) a[i] = v[i].get<bool>();
          if (f.unbounded) cdr_ << static_cast<std::uint32_t>(v.size());
          cdr_.serializeArray(a.get(), v.size());
        } else {
          std::vector<T> a;
          for (const Json& e : v) a.push_back(bits_as<T>(e, raw_));
          if (f.unbounded && f.sequence_bound == 0) {
            cdr_ << a;  // serializeSequence: the count, then serializeArray
          } else {
            if (f.unbounded) cdr_ << static_cast<std::uint32_t>(a.size());
            cdr_.serializeArray(a.data(), a.size());
          }
        }
      });
      return;
    }
    if (f.kind != FieldKind::kMessage) {
      std::vector<std::string> a;
      for (const Json& e : v) a.push_back(e.get<std::string>());
      if (f.unbounded) cdr_ << static_cast<std::uint32_t>(a.size());
      cdr_.serializeArray(a.data(), a.size());
      return;
    }
    if (f.unbounded) cdr_ << static_cast<std::uint32_t>(v.size());
    for (const Json& e : v) message(*f.message, e);
  }

  void element(const Field& f, const Json& v) {
    switch (f.kind) {
      case FieldKind::kPrimitive:
        with_type(f.primitive, [&](auto t) { cdr_ << bits_as<decltype(t)>(v, raw_); });
        return;
      case FieldKind::kString:
      case FieldKind::kUnboundedString:
        cdr_ << v.get<std::string>();
        return;
      case FieldKind::kMessage:
        message(*f.message, v);
        return;
    }
  }

  Cdr& cdr_;
  bool raw_;
};

class Reader {
 public:
  Reader(Cdr& cdr, std::size_t size, bool raw) : cdr_(cdr), size_(size), raw_(raw) {}

  Json message(const MessageDef& m) {
    Json out = Json::object();
    if (m.fields.empty()) {
      std::uint8_t placeholder = 0;
      cdr_ >> placeholder;
    }
    for (const Field& f : m.fields) out[f.name] = field(f);
    return out;
  }

 private:
  /// A sequence's count, with the checks the typesupport and Fast-CDR's
  /// vector make: within its bound, and no more elements than bytes left.
  std::uint32_t count(const Field& f) {
    std::uint32_t n = 0;
    cdr_ >> n;
    if (f.sequence_bound != 0 && n > f.sequence_bound) throw Refused("sequence size exceeds upper bound");
    if (n > size_ - cdr_.getSerializedDataLength()) throw Refused("sequence longer than what is left");
    return n;
  }

  Json field(const Field& f) {
    if (f.array_length == 0 && !f.unbounded) return element(f);
    Json out = Json::array();
    if (f.kind == FieldKind::kPrimitive) {
      with_type(f.primitive, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_same_v<T, bool>) {
          // Fast-CDR 1.0's deserializeArray(bool*) leaves an element whose
          // byte is neither 0 nor 1 unwritten (its value undefined) and
          // throws nothing. The same bytes are read here as uint8 and such
          // a byte refused, as Fast-CDR's read of one bool refuses it.
          const std::size_t n = f.unbounded ? count(f) : f.array_length;
          std::vector<std::uint8_t> a(n);
          cdr_.deserializeArray(a.data(), n);
          for (const std::uint8_t b : a) {
            if (b > 1) throw Refused("a bool neither 0 nor 1");
            out.push_back(b == 1);
          }
        } else {
          std::vector<T> a;
          if (f.unbounded && f.sequence_bound == 0) {
            cdr_ >> a;  // deserializeSequence: the count, checked, then deserializeArray
          } else {
            a.resize(f.unbounded ? count(f) : f.array_length);
            cdr_.deserializeArray(a.data(), a.size());
          }
          for (const T& e : a) out.push_back(json_of(e, raw_));
        }
      });
      return out;
    }
    const std::size_t n = f.unbounded ? count(f) : f.array_length;
    for (std::size_t i = 0; i < n; ++i) out.push_back(element(f));
    return out;
  }

  Json element(const Field& f) {
    switch (f.kind) {
      case FieldKind::kPrimitive: {
        Json out;
        with_type(f.primitive, [&](auto t) {
          cdr_ >> t;
          out = json_of(t, raw_);
        });
        return out;
      }
      case FieldKind::kString:
      case FieldKind::kUnboundedString: {
        std::string s;
        cdr_ >> s;
        if (f.kind == FieldKind::kString && s.size() > f.string_capacity) {
          throw Refused("string length exceeds upper bound");
        }
        return s;
      }
      case FieldKind::kMessage:
        return message(*f.message);
    }
    return nullptr;
  }

  Cdr& cdr_;
  std::size_t size_;
  bool raw_;
};

}  // namespace fastcdr_detail

/// `value` (a message of `m`) as Fast-CDR writes it: the encapsulation
/// header (CDR_LE) and the message.
inline std::vector<char> fastcdr_write(const schema::MessageDef& m, const schema::Json& value,
                                       bool raw_floats = false) {
  std::vector<char> buffer(1024);
  for (;;) {
    eprosima::fastcdr::FastBuffer fb(buffer.data(), buffer.size());
    eprosima::fastcdr::Cdr cdr(fb, eprosima::fastcdr::Cdr::LITTLE_ENDIANNESS, eprosima::fastcdr::Cdr::DDS_CDR);
    try {
      cdr.serialize_encapsulation();
      fastcdr_detail::Writer(cdr, raw_floats).message(m, value);
      buffer.resize(cdr.getSerializedDataLength());
      return buffer;
    } catch (const eprosima::fastcdr::exception::Exception&) {
      buffer.assign(buffer.size() * 4, 0);  // a buffer too small: again, larger
    }
  }
}

/// The message of `m` that Fast-CDR reads from `cdr` (with its
/// encapsulation header). Throws what Fast-CDR throws
/// (eprosima::fastcdr::exception::Exception) and fastcdr_detail::Refused.
inline schema::Json fastcdr_read(const schema::MessageDef& m, std::vector<char>& cdr, bool raw_floats = false) {
  eprosima::fastcdr::FastBuffer fb(cdr.data(), cdr.size());
  eprosima::fastcdr::Cdr reader(fb, eprosima::fastcdr::Cdr::DEFAULT_ENDIAN, eprosima::fastcdr::Cdr::DDS_CDR);
  reader.read_encapsulation();
  return fastcdr_detail::Reader(reader, cdr.size(), raw_floats).message(m);
}

}  // namespace shmbus::test
