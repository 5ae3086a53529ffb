#pragma once
// Random messages of a schema, as JSON: each field a random value of its
// type; a sequence empty, of one element, of its bound (or 5) or anything
// up to it, so that every alignment after a count is met. For tests that
// compare two writers or readers of the same messages.
#include <cstdint>
#include <random>
#include <string>

#include "shmbus/schema.hpp"

namespace shmbus::test {

using schema::Field;
using schema::FieldKind;
using schema::Json;
using schema::MessageDef;
using schema::Primitive;

/// A random value of `f`'s element type.
inline Json random_element(const Field& f, std::mt19937_64& rng, int depth);

inline Json random_message(const MessageDef& m, std::mt19937_64& rng, int depth) {
  Json out = Json::object();
  for (const Field& f : m.fields) {
    if (f.array_length == 0 && !f.unbounded) {
      out[f.name] = random_element(f, rng, depth);
      continue;
    }
    std::size_t n = f.array_length;
    if (f.unbounded) {
      // Empty, one, the bound (or a few), or anything up to it: each case
      // of an alignment after the count.
      const std::size_t most = f.sequence_bound != 0 ? f.sequence_bound : 5;
      switch (rng() % 4) {
        case 0:
          n = 0;
          break;
        case 1:
          n = 1;
          break;
        case 2:
          n = most;
          break;
        default:
          n = rng() % (most + 1);
          break;
      }
    }
    Json a = Json::array();
    for (std::size_t i = 0; i < n; ++i) a.push_back(random_element(f, rng, depth));
    out[f.name] = std::move(a);
  }
  return out;
}

inline std::string random_text(std::size_t most, std::mt19937_64& rng) {
  std::string s(rng() % (most + 1), 'a');
  for (char& c : s) c = static_cast<char>(' ' + rng() % 95);
  return s;
}

inline Json random_element(const Field& f, std::mt19937_64& rng, int depth) {
  switch (f.kind) {
    case FieldKind::kString:
      return random_text(f.string_capacity, rng);
    case FieldKind::kUnboundedString:
      return random_text(12, rng);
    case FieldKind::kMessage:
      return random_message(*f.message, rng, depth + 1);
    case FieldKind::kPrimitive:
      break;
  }
  const std::uint64_t r = rng();
  switch (f.primitive) {
    case Primitive::kBool:
      return (r & 1) != 0;
    case Primitive::kInt8:
      return static_cast<std::int8_t>(r);
    case Primitive::kUint8:
      return static_cast<std::uint8_t>(r);
    case Primitive::kInt16:
      return static_cast<std::int16_t>(r);
    case Primitive::kUint16:
      return static_cast<std::uint16_t>(r);
    case Primitive::kInt32:
      return static_cast<std::int32_t>(r);
    case Primitive::kUint32:
      return static_cast<std::uint32_t>(r);
    case Primitive::kInt64:
      return static_cast<std::int64_t>(r);
    case Primitive::kUint64:
      return r;
    case Primitive::kFloat32:
      return static_cast<double>(static_cast<float>(static_cast<std::int32_t>(r)) / 64.0F);
    case Primitive::kFloat64:
      return static_cast<double>(static_cast<std::int64_t>(r)) / 1024.0;
  }
  return nullptr;
}

}  // namespace shmbus::test
