// Bytes <-> JSON through a schema.

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "shmbus/schema.hpp"
#include "shmbus/schema/encoder.hpp"
#include "shmbus/utf8.hpp"

namespace shmbus::schema {

static_assert(std::endian::native == std::endian::little, "the schema layout is little-endian; so is this codec");

namespace {

using json = Json;

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

json float_to_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

json decode_primitive(Primitive p, const std::byte* b, bool int64_as_string) {
  switch (p) {
    case Primitive::kBool:
      return load<std::uint8_t>(b) != 0;
    case Primitive::kInt8:
      return load<std::int8_t>(b);
    case Primitive::kUint8:
      return load<std::uint8_t>(b);
    case Primitive::kInt16:
      return load<std::int16_t>(b);
    case Primitive::kUint16:
      return load<std::uint16_t>(b);
    case Primitive::kInt32:
      return load<std::int32_t>(b);
    case Primitive::kUint32:
      return load<std::uint32_t>(b);
    case Primitive::kInt64:
      if (int64_as_string) return std::to_string(load<std::int64_t>(b));
      return load<std::int64_t>(b);
    case Primitive::kUint64:
      if (int64_as_string) return std::to_string(load<std::uint64_t>(b));
      return load<std::uint64_t>(b);
    case Primitive::kFloat32:
      return float_to_json(load<float>(b));
    case Primitive::kFloat64:
      return float_to_json(load<double>(b));
  }
  return nullptr;
}

/// Bytes -> JSON. Recurses only as deep as the schema nests; every VarRef
/// is checked before it is followed (msg::Reader).
class Decoder {
 public:
  Decoder(std::span<const std::byte> bytes, const MessageDef& root, bool int64_as_string)
      : bytes_(bytes), blocks_(bytes, root.size), int64_as_string_(int64_as_string) {}

  json message(const MessageDef& m, std::size_t base) {
    json obj = json::object();
    for (const Field& f : m.fields) obj[f.name] = field(f, base + f.offset);
    return obj;
  }

 private:
  json element(const Field& f, std::size_t at) {
    switch (f.kind) {
      case FieldKind::kPrimitive:
        return decode_primitive(f.primitive, bytes_.data() + at, int64_as_string_);
      case FieldKind::kString: {
        const auto* p = reinterpret_cast<const char*>(bytes_.data() + at);
        const void* nul = std::memchr(p, 0, f.string_capacity);
        const std::size_t n = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - p) : f.string_capacity;
        return sanitize_utf8({p, n});
      }
      case FieldKind::kUnboundedString: {
        std::uint32_t n = 0;
        const std::size_t b = blocks_.block(at, 1, 1, 0, n, f.name);
        return sanitize_utf8({reinterpret_cast<const char*>(bytes_.data() + b), n});
      }
      default:
        return message(*f.message, at);
    }
  }

  json field(const Field& f, std::size_t at) {
    std::size_t n = f.array_length;
    if (f.unbounded) {
      std::uint32_t count = 0;
      at = blocks_.block(at, f.element_size, f.element_align, f.sequence_bound, count, f.name);
      n = count;
    } else if (n == 0) {
      return element(f, at);
    }
    json arr = json::array();
    for (std::size_t i = 0; i < n; ++i) arr.push_back(element(f, at + i * f.element_size));
    return arr;
  }

  std::span<const std::byte> bytes_;
  msg::Reader blocks_;
  bool int64_as_string_ = false;
};

/// How the Encoder reads JSON (encoder.hpp).
struct JsonValues {
  using Value = const json*;
  using Fields = const json*;
  static std::optional<Fields> fields(Value v) {
    if (!v->is_object()) return std::nullopt;
    return v;
  }
  template <typename F>
  static void each_key(Fields v, F f) {
    for (const auto& item : v->items()) f(std::string_view(item.key()));
  }
  static std::optional<Value> find(Fields v, std::string_view name) {
    const auto it = v->find(name);
    if (it == v->end()) return std::nullopt;
    return &*it;
  }
  static bool array(Value v) { return v->is_array(); }
  static std::size_t size(Value v) { return v->size(); }
  static Value at(Value v, std::size_t i) { return &(*v)[i]; }
  static std::optional<std::string_view> string(Value v) {
    if (!v->is_string()) return std::nullopt;
    return std::string_view(v->get_ref<const std::string&>());
  }
  static std::optional<bool> boolean(Value v) {
    if (!v->is_boolean()) return std::nullopt;
    return v->get<bool>();
  }
  static Number number(Value v) {
    if (v->is_number_unsigned()) return {Number::Kind::kUnsigned, 0, v->get<std::uint64_t>(), 0};
    if (v->is_number_integer()) return {Number::Kind::kSigned, v->get<std::int64_t>(), 0, 0};
    if (v->is_number()) return {Number::Kind::kFloat, 0, 0, v->get<double>()};
    return {};
  }
  template <typename F>
  static bool elements(Value /*v*/, Primitive /*p*/, F&& /*use*/) {
    return false;  // JSON holds numbers one by one
  }
  static std::string text(Value v) { return v->dump(); }
  static std::string describe(Value v) {
    std::string text = v->dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("{} {}", v->type_name(), text);
  }
};

}  // namespace

Schema Schema::from_canonical(std::string_view canonical_text) {
  auto set = std::make_shared<MessageSet>();
  const std::string root = set->add_canonical(canonical_text, "<schema>");
  set->resolve();
  return from_set(std::move(set), root);
}

Schema Schema::from_set(std::shared_ptr<const MessageSet> set, std::string_view full_name) {
  Schema s;
  s.root_ = set->find(full_name);
  if (s.root_ == nullptr) throw SchemaError(fmt::format("<schema>:1: no message {} in the set", full_name));
  s.set_ = std::move(set);
  s.text_ = MessageSet::canonical_text(*s.root_);
  s.hash_ = hash_text(s.text_);
  return s;
}

namespace {

template <typename T>
json integer_schema() {
  return json{
      {"type", "integer"}, {"minimum", std::numeric_limits<T>::min()}, {"maximum", std::numeric_limits<T>::max()}};
}

json primitive_schema(Primitive p) {
  switch (p) {
    case Primitive::kBool:
      return json{{"type", "boolean"}};
    case Primitive::kInt8:
      return integer_schema<std::int8_t>();
    case Primitive::kUint8:
      return integer_schema<std::uint8_t>();
    case Primitive::kInt16:
      return integer_schema<std::int16_t>();
    case Primitive::kUint16:
      return integer_schema<std::uint16_t>();
    case Primitive::kInt32:
      return integer_schema<std::int32_t>();
    case Primitive::kUint32:
      return integer_schema<std::uint32_t>();
    case Primitive::kInt64:
      return integer_schema<std::int64_t>();
    case Primitive::kUint64:
      return integer_schema<std::uint64_t>();
    case Primitive::kFloat32:
    case Primitive::kFloat64:
      // As decode() writes them: a number, or the text of a non-finite one.
      return json{{"anyOf", json::array({json{{"type", "number"}},
                                         json{{"enum", json::array({"NaN", "Infinity", "-Infinity"})}}})}};
  }
  return json::object();
}

json message_schema(const MessageDef& m);

json element_schema(const Field& f) {
  switch (f.kind) {
    case FieldKind::kPrimitive:
      return primitive_schema(f.primitive);
    case FieldKind::kString:
      // At most the capacity in bytes, so at most as many characters.
      return json{{"type", "string"}, {"maxLength", f.string_capacity}};
    case FieldKind::kUnboundedString:
      return json{{"type", "string"}};
    default:
      return message_schema(*f.message);
  }
}

json field_schema(const Field& f) {
  if (f.unbounded && f.sequence_bound != 0) {
    return json{{"type", "array"}, {"items", element_schema(f)}, {"maxItems", f.sequence_bound}};
  }
  if (f.unbounded) return json{{"type", "array"}, {"items", element_schema(f)}};
  if (f.array_length == 0) return element_schema(f);
  return json{
      {"type", "array"}, {"items", element_schema(f)}, {"minItems", f.array_length}, {"maxItems", f.array_length}};
}

json message_schema(const MessageDef& m) {
  json properties = json::object();
  json required = json::array();
  for (const Field& f : m.fields) {
    properties[f.name] = field_schema(f);
    required.push_back(f.name);
  }
  return json{{"title", m.name},
              {"type", "object"},
              {"properties", std::move(properties)},
              {"required", std::move(required)},
              {"additionalProperties", false}};
}

}  // namespace

json Schema::json_schema() const {
  json s = message_schema(*root_);
  s["$schema"] = "http://json-schema.org/draft-07/schema#";
  return s;
}

json Schema::decode(std::span<const std::byte> bytes, bool int64_as_string) const {
  const MessageDef& m = *root_;
  if (bytes.size() < m.size) {
    throw CodecError(fmt::format("{}: buffer of {} bytes is shorter than the {} bytes the message needs", m.name,
                                 bytes.size(), m.size));
  }
  return Decoder(bytes, m, int64_as_string).message(m, 0);
}

namespace {

/// The definitions' default values written over a decoded all-zero
/// message `obj` of type `m`, in nested messages too (no deeper than the
/// schema nests).
void apply_defaults(const MessageDef& m, json& obj) {
  for (const Field& f : m.fields) {
    json& v = obj[f.name];
    if (!f.default_value.is_null()) {
      v = f.default_value;
    } else if (f.kind == FieldKind::kMessage && f.array_length == 0 && !f.unbounded) {
      apply_defaults(*f.message, v);
    } else if (f.kind == FieldKind::kMessage && f.array_length != 0) {
      for (json& e : v) apply_defaults(*f.message, e);
    }
  }
}

/// `partial` over the default message of type `m`: each field it gives
/// replaces the default, except that a nested message (alone or as an
/// element of an array or a sequence) is itself filled from its defaults.
/// What does not fit (not an object, unknown fields) is kept for encode()
/// to refuse, naming the field.
json filled(const MessageDef& m, const json& partial) {
  if (!partial.is_object()) return partial;
  const std::vector<std::byte> zeros(m.size);
  json out = Decoder(zeros, m, false).message(m, 0);
  apply_defaults(m, out);
  for (const auto& item : partial.items()) {
    const auto f = std::find_if(m.fields.begin(), m.fields.end(), [&](const Field& g) { return g.name == item.key(); });
    const json& v = item.value();
    const bool message = f != m.fields.end() && f->kind == FieldKind::kMessage;
    const bool single = message && f->array_length == 0 && !f->unbounded;
    if (single) {
      out[item.key()] = filled(*f->message, v);
      continue;
    }
    json& slot = out[item.key()] = v;
    if (message && v.is_array()) {
      for (json& e : slot) e = filled(*f->message, e);
    }
  }
  return out;
}

}  // namespace

json Schema::with_defaults(const json& partial) const {
  if (!partial.is_object()) {
    throw CodecError(
        fmt::format("a {} message must be a JSON object of its fields, not {}", root_->name, partial.type_name()));
  }
  return filled(*root_, partial);
}

std::vector<std::byte> Schema::encode(const json& value, std::size_t max_bytes) const {
  return encode_values<JsonValues>(*this, &value, max_bytes);
}

Json bytes_to_json(std::span<const std::byte> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? std::to_integer<std::uint32_t>(bytes[i + k]) : 0U);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63U] : '=';
  }
  return Json{{"data", std::move(out)}};
}

Json bytes_json_schema() {
  return Json{{"$schema", "http://json-schema.org/draft-07/schema#"},
              {"title", "shmbus/Bytes"},
              {"type", "object"},
              {"properties", {{"data", {{"type", "string"}, {"contentEncoding", "base64"}}}}},
              {"required", {"data"}},
              {"additionalProperties", false}};
}

}  // namespace shmbus::schema
