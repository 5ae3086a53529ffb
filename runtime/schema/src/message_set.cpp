// Parsing, resolution and layout of message definitions; canonical text.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "shipped_messages.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/types.hpp"

namespace shmbus::schema {

namespace {

constexpr std::uint64_t kMaxBound = 1U << 20;          // array length, string bytes
constexpr std::uint64_t kMaxMessageSize = 1ULL << 30;  // fixed part of one message

struct PrimitiveName {
  std::string_view name;
  Primitive primitive;
};
constexpr std::array<PrimitiveName, 11> kPrimitives{{{"bool", Primitive::kBool},
                                                     {"int8", Primitive::kInt8},
                                                     {"uint8", Primitive::kUint8},
                                                     {"int16", Primitive::kInt16},
                                                     {"uint16", Primitive::kUint16},
                                                     {"int32", Primitive::kInt32},
                                                     {"uint32", Primitive::kUint32},
                                                     {"int64", Primitive::kInt64},
                                                     {"uint64", Primitive::kUint64},
                                                     {"float32", Primitive::kFloat32},
                                                     {"float64", Primitive::kFloat64}}};

std::optional<Primitive> primitive_named(std::string_view s) {
  for (const auto& p : kPrimitives) {
    if (p.name == s) return p.primitive;
  }
  // ROS 2's names of an 8-bit unsigned integer (IDL octet and uint8).
  if (s == "byte" || s == "char") return Primitive::kUint8;
  return std::nullopt;
}

/// C++ keywords a generated struct member cannot be named.
constexpr std::array<std::string_view, 52> kCppKeywords{
    "alignas",  "alignof", "and",     "asm",       "auto",     "bool",     "break",     "case",      "catch",
    "char",     "class",   "const",   "constexpr", "continue", "decltype", "default",   "delete",    "do",
    "double",   "else",    "enum",    "explicit",  "export",   "extern",   "false",     "float",     "for",
    "friend",   "goto",    "if",      "inline",    "int",      "long",     "mutable",   "namespace", "new",
    "noexcept", "not",     "nullptr", "operator",  "or",       "private",  "protected", "public",    "register",
    "return",   "short",   "signed",  "sizeof",    "static",   "struct",   "switch"};
constexpr std::array<std::string_view, 14> kMoreCppKeywords{"template", "this",    "throw",    "true",  "try",
                                                            "typedef",  "typeid",  "typename", "union", "unsigned",
                                                            "using",    "virtual", "void",     "while"};

bool is_keyword(std::string_view s) {
  return std::find(kCppKeywords.begin(), kCppKeywords.end(), s) != kCppKeywords.end() ||
         std::find(kMoreCppKeywords.begin(), kMoreCppKeywords.end(), s) != kMoreCppKeywords.end();
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_package(std::string_view s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<std::uint64_t> parse_bound(std::string_view s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const std::uint64_t v = std::stoull(std::string{s});
  if (v == 0 || v > kMaxBound) return std::nullopt;
  return v;
}

/// One parsed line before type names are resolved.
struct RawField {
  int line = 0;
  std::string type;  ///< element type ("Header", "pkg/Type", "float64", "string<8>")
  std::string name;
  std::uint32_t array_length = 0;
  bool unbounded = false;            ///< a sequence
  std::uint32_t sequence_bound = 0;  ///< `T[<=N]`: N
  std::optional<std::string> value;  ///< set for a constant
  Json default_value;                ///< a field's default, or null
};

/// `line` without its comment: from a '#' that is not inside a quoted
/// value (a quote opens one after a space, '=', '[' or ',').
std::string_view strip_comment(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if ((c == '"' || c == '\'') && i > 0 &&
               std::string_view{" \t=[,"}.find(line[i - 1]) != std::string_view::npos) {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

/// A string value: quoted ('..' or "..", with \\, \" and \' escapes) or,
/// unquoted, the text itself. nullopt when a quote is not closed.
std::optional<std::string> string_value(std::string_view text) {
  if (text.empty() || (text[0] != '"' && text[0] != '\'')) return std::string{text};
  const char quote = text[0];
  std::string out;
  for (std::size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == quote) return i + 1 == text.size() ? std::optional{out} : std::nullopt;
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == '"' || text[i + 1] == '\'')) {
      out.push_back(text[++i]);
      continue;
    }
    out.push_back(c);
  }
  return std::nullopt;
}

/// A string as a definition writes it: double-quoted, `\` and `"` escaped.
std::string quote_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

/// The items of an array value "[a, 'b,c', 3]"; nullopt when it is not one.
std::optional<std::vector<std::string_view>> array_items(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<std::string_view> items;
  const std::string_view inner = text.substr(1, text.size() - 2);
  if (trim(inner).empty()) return items;
  std::size_t start = 0;
  char quote = 0;
  for (std::size_t i = 0; i <= inner.size(); ++i) {
    const char c = i < inner.size() ? inner[i] : ',';
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == ',') {
      items.push_back(trim(inner.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (quote != 0) return std::nullopt;
  return items;
}

struct RawDef {
  std::string package;
  std::string name;
  std::string source;
  std::vector<RawField> fields;
};

/// Canonical spelling of a constant's value; nullopt when out of range.
std::optional<std::string> canonical_value(Primitive p, std::string_view text) {
  const std::string s{text};
  if (p == Primitive::kBool) {
    if (s == "true" || s == "1") return "true";
    if (s == "false" || s == "0") return "false";
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  if (p == Primitive::kFloat32 || p == Primitive::kFloat64) {
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(d)) return std::nullopt;
    if (p == Primitive::kFloat32 && std::abs(d) > 3.4028234663852886e38) return std::nullopt;
    return fmt::format("{}", d);
  }
  const bool is_signed =
      p == Primitive::kInt8 || p == Primitive::kInt16 || p == Primitive::kInt32 || p == Primitive::kInt64;
  const unsigned bits = size_of(p) * 8;
  if (is_signed) {
    const long long v = std::strtoll(s.c_str(), &end, 0);
    if (s.empty() || *end != '\0' || errno != 0) return std::nullopt;
    if (bits < 64) {
      const long long lim = 1LL << (bits - 1);
      if (v < -lim || v >= lim) return std::nullopt;
    }
    return std::to_string(v);
  }
  if (!s.empty() && s[0] == '-') return std::nullopt;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno != 0) return std::nullopt;
  if (bits < 64 && v >= (1ULL << bits)) return std::nullopt;
  return std::to_string(v);
}

}  // namespace

std::string_view to_string(Primitive p) noexcept {
  for (const auto& n : kPrimitives) {
    if (n.primitive == p) return n.name;
  }
  return "?";
}

std::uint32_t size_of(Primitive p) noexcept {
  switch (p) {
    case Primitive::kBool:
    case Primitive::kInt8:
    case Primitive::kUint8:
      return 1;
    case Primitive::kInt16:
    case Primitive::kUint16:
      return 2;
    case Primitive::kInt32:
    case Primitive::kUint32:
    case Primitive::kFloat32:
      return 4;
    default:
      return 8;
  }
}

std::string Constant::type() const { return is_string ? "string" : std::string{to_string(primitive)}; }

std::string Constant::literal() const { return is_string ? quote_string(value) : value; }

std::string Field::element_type() const {
  switch (kind) {
    case FieldKind::kPrimitive:
      return std::string{to_string(primitive)};
    case FieldKind::kString:
      return fmt::format("string<{}>", string_capacity);
    case FieldKind::kUnboundedString:
      return "string";
    default:
      return message != nullptr ? message->name : "?";
  }
}

std::string Field::type() const {
  if (unbounded && sequence_bound != 0) return fmt::format("{}[<={}]", element_type(), sequence_bound);
  if (unbounded) return element_type() + "[]";
  if (array_length != 0) return fmt::format("{}[{}]", element_type(), array_length);
  return element_type();
}

std::uint32_t Field::fixed_size() const noexcept {
  if (unbounded) return kVarRefSize;
  return element_size * (array_length == 0 ? 1 : array_length);
}

bool Field::element_variable() const noexcept {
  return kind == FieldKind::kUnboundedString ||
         (kind == FieldKind::kMessage && message != nullptr && message->variable);
}

struct MessageSet::Impl {
  std::vector<RawDef> raw;
  std::set<std::string, std::less<>> raw_names;   // "pkg/Name" of each raw definition
  std::vector<std::unique_ptr<MessageDef>> defs;  // stable addresses
  std::map<std::string, std::size_t, std::less<>> index;
  bool resolved = false;

  [[noreturn]] static void fail(const std::string& source, int line, const std::string& what) {
    throw SchemaError(fmt::format("{}:{}: {}", source, line, what));
  }

  /// `text`'s first line is line `first_line + 1` of def.source.
  void parse(RawDef& def, std::string_view text, int first_line) {
    std::map<std::string, int> names;
    int line_no = first_line;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      const std::size_t eol = std::min(text.find('\n', pos), text.size());
      std::string_view line = text.substr(pos, eol - pos);
      pos = eol + 1;
      ++line_no;
      line = trim(strip_comment(line));
      if (line.empty()) continue;
      const auto space = line.find_first_of(" \t");
      if (space == std::string_view::npos) fail(def.source, line_no, fmt::format("'{}' needs a type and a name", line));
      RawField f;
      f.line = line_no;
      std::string_view type = line.substr(0, space);
      const std::string_view rest = trim(line.substr(space));
      // NAME, then `=VALUE` (a constant) or a default value.
      const std::string_view name = rest.substr(0, rest.find_first_of(" \t="));
      const std::string_view after = trim(rest.substr(name.size()));
      std::string_view default_text;
      if (!after.empty() && after[0] == '=') {
        f.value = std::string{trim(after.substr(1))};
      } else {
        default_text = after;
      }
      if (!is_identifier(name)) {
        fail(def.source, line_no,
             fmt::format("'{}' is not a valid name; use letters, digits and '_', starting with a letter", name));
      }
      if (is_keyword(name) || name.rfind("shmbus_", 0) == 0) {
        fail(def.source, line_no, fmt::format("'{}' is reserved (a C++ keyword or shmbus_ prefix)", name));
      }
      f.name = std::string{name};
      if (const auto [it, fresh] = names.emplace(f.name, line_no); !fresh) {
        fail(def.source, line_no, fmt::format("duplicate field '{}' (first on line {})", f.name, it->second));
      }
      if (type.size() > 1 && type.back() == ']') {
        const auto open = type.rfind('[');
        if (open == std::string_view::npos) fail(def.source, line_no, fmt::format("bad array type '{}'", type));
        const std::string_view bound = type.substr(open + 1, type.size() - open - 2);
        if (bound.empty()) {
          f.unbounded = true;
        } else if (const auto n = parse_bound(bound)) {
          f.array_length = static_cast<std::uint32_t>(*n);
        } else if (const auto max = bound.starts_with("<=") ? parse_bound(bound.substr(2)) : std::nullopt) {
          f.unbounded = true;
          f.sequence_bound = static_cast<std::uint32_t>(*max);
        } else {
          fail(def.source, line_no,
               fmt::format("bad array bound '{}' in '{}'; use [N] or [<=N] with N from 1 to {}, or [] for a "
                           "sequence of any length",
                           bound, type, kMaxBound));
        }
        type = type.substr(0, open);
      }
      f.type = type.find('/') != std::string_view::npos ? short_type_name(type) : std::string{type};
      if (f.value) {
        constant(def, f, line_no);
      } else {
        string_type(def, f, line_no);
        if (!default_text.empty()) {
          std::string why;
          auto v = default_json(f, default_text, why);
          if (!v) fail(def.source, line_no, fmt::format("default value '{}' of {}: {}", default_text, f.name, why));
          f.default_value = std::move(*v);
        }
      }
      def.fields.push_back(std::move(f));
    }
  }

  /// A string field's type, checked: `string<=N` is `string<N>`; wstrings
  /// are refused.
  static void string_type(const RawDef& def, RawField& f, int line_no) {
    if (f.type.starts_with("string<=")) f.type = "string<" + f.type.substr(8) + ">";
    if (f.type.starts_with("wstring")) {
      fail(def.source, line_no,
           fmt::format("'{}': wide strings are not carried (their CDR is implementation-defined, and Foxglove's "
                       "and rosbridge's clients refuse them too); use string (UTF-8)",
                       f.type));
    }
    if (f.type.rfind("string<", 0) == 0) {
      if (f.type.back() != '>' || !parse_bound(std::string_view{f.type}.substr(7, f.type.size() - 8))) {
        fail(def.source, line_no,
             fmt::format("bad string bound in '{}'; use string<=N with N from 1 to {}", f.type, kMaxBound));
      }
    }
  }

  /// A constant's type and value, checked; its value made canonical.
  static void constant(const RawDef& def, RawField& f, int line_no) {
    if (f.array_length != 0 || f.unbounded) {
      fail(def.source, line_no, fmt::format("constant {} must not be an array", f.name));
    }
    if (f.type == "string" || f.type.starts_with("string<")) {
      const auto v = string_value(*f.value);
      if (!v) fail(def.source, line_no, fmt::format("constant {}: the quote of {} is not closed", f.name, *f.value));
      f.type = "string";
      f.value = *v;
      return;
    }
    const auto p = primitive_named(f.type);
    if (!p) fail(def.source, line_no, fmt::format("constant {} must have a primitive or string type", f.name));
    const auto v = canonical_value(*p, *f.value);
    if (!v) fail(def.source, line_no, fmt::format("value '{}' is not a valid {}", *f.value, f.type));
    f.value = *v;
  }

  /// A field's default value as JSON (as decode() gives it); nullopt with
  /// `why` when the type takes none or the value does not fit it.
  static std::optional<Json> default_json(const RawField& f, std::string_view text, std::string& why) {
    const auto element = [&](std::string_view item) -> std::optional<Json> {
      if (f.type == "string") {
        const auto v = string_value(item);
        if (!v) why = "its quote is not closed";
        return v ? std::optional<Json>(Json(*v)) : std::nullopt;
      }
      if (f.type.starts_with("string<")) {
        const auto v = string_value(item);
        const auto capacity = *parse_bound(std::string_view{f.type}.substr(7, f.type.size() - 8));
        if (!v) {
          why = "its quote is not closed";
        } else if (v->size() > capacity) {
          why = fmt::format("{} bytes do not fit {}", v->size(), f.type);
        } else {
          return Json(*v);
        }
        return std::nullopt;
      }
      const auto p = primitive_named(f.type);
      if (!p) {
        why = "a message field takes no default";
        return std::nullopt;
      }
      const auto v = canonical_value(*p, item);
      if (!v) {
        why = fmt::format("'{}' is not a valid {}", item, f.type);
        return std::nullopt;
      }
      if (*p == Primitive::kBool) return Json(*v == "true");
      if (*p == Primitive::kFloat32 || *p == Primitive::kFloat64) return Json(std::strtod(v->c_str(), nullptr));
      if (v->front() == '-') return Json(std::stoll(*v));
      return Json(std::stoull(*v));
    };
    if (f.array_length == 0 && !f.unbounded) return element(text);
    const auto items = array_items(text);
    if (!items) {
      why = "an array's default is written [a, b, ...]";
      return std::nullopt;
    }
    if (f.array_length != 0 && items->size() != f.array_length) {
      why = fmt::format("{} values for an array of {}", items->size(), f.array_length);
      return std::nullopt;
    }
    if (f.sequence_bound != 0 && items->size() > f.sequence_bound) {
      why = fmt::format("{} values for a sequence of at most {}", items->size(), f.sequence_bound);
      return std::nullopt;
    }
    Json out = Json::array();
    for (const std::string_view item : *items) {
      auto v = element(item);
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
    }
    return out;
  }

  void add_raw(RawDef def, std::string_view text, int first_line) {
    const std::string full = def.package + "/" + def.name;
    if (raw.size() >= MessageSet::kMaxMessageTypes) {
      fail(def.source, first_line + 1,
           fmt::format("more than {} message types in one set; no real schema has that many",
                       MessageSet::kMaxMessageTypes));
    }
    if (index.count(full) != 0 || raw_names.count(full) != 0) {
      fail(def.source, first_line + 1, fmt::format("message {} is defined twice", full));
    }
    parse(def, text, first_line);
    raw_names.insert(full);
    raw.push_back(std::move(def));
    resolved = false;
  }

  /// Resolves one element type name as written in package `pkg`.
  std::optional<std::string> resolve_name(const std::string& pkg, const std::string& type) const {
    const auto known = [&](const std::string& n) { return raw_names.count(n) != 0; };
    if (type.find('/') != std::string::npos) return known(type) ? std::optional{type} : std::nullopt;
    if (known(pkg + "/" + type)) return pkg + "/" + type;
    if (type == "Header" && known("std_msgs/Header")) return "std_msgs/Header";
    return std::nullopt;
  }

  void build() {
    if (resolved) return;
    defs.clear();
    index.clear();
    for (const RawDef& r : raw) {
      auto def = std::make_unique<MessageDef>();
      def->name = r.package + "/" + r.name;
      def->source = r.source;
      index[def->name] = defs.size();
      defs.push_back(std::move(def));
    }
    // Fields and constants, with message references resolved.
    for (std::size_t d = 0; d < raw.size(); ++d) {
      const RawDef& r = raw[d];
      MessageDef& def = *defs[d];
      for (const RawField& rf : r.fields) {
        if (rf.value) {
          const bool is_string = rf.type == "string";
          def.constants.push_back(
              Constant{rf.name, is_string ? Primitive::kUint8 : *primitive_named(rf.type), is_string, *rf.value});
          continue;
        }
        Field f;
        f.name = rf.name;
        f.line = rf.line;
        f.default_value = rf.default_value;
        f.array_length = rf.array_length;
        f.unbounded = rf.unbounded;
        f.sequence_bound = rf.sequence_bound;
        if (const auto p = primitive_named(rf.type)) {
          f.kind = FieldKind::kPrimitive;
          f.primitive = *p;
        } else if (rf.type == "string") {
          f.kind = FieldKind::kUnboundedString;
        } else if (rf.type.rfind("string<", 0) == 0) {
          f.kind = FieldKind::kString;
          f.string_capacity = static_cast<std::uint32_t>(*parse_bound(rf.type.substr(7, rf.type.size() - 8)));
        } else {
          const bool well_formed = [&] {
            const auto slash = rf.type.find('/');
            if (slash == std::string::npos) return is_identifier(rf.type);
            return is_package(rf.type.substr(0, slash)) && is_identifier(rf.type.substr(slash + 1));
          }();
          const auto full = well_formed ? resolve_name(r.package, rf.type) : std::nullopt;
          if (!full) {
            fail(r.source, rf.line,
                 fmt::format("unknown type '{}': not a primitive, a string, or a message of package {}{}", rf.type,
                             r.package, rf.type == "Header" ? " or std_msgs" : ""));
          }
          f.kind = FieldKind::kMessage;
          f.message = defs[index.at(*full)].get();
        }
        def.fields.push_back(std::move(f));
      }
    }
    std::vector<int> state(defs.size(), 0);
    std::vector<Extent> extents(defs.size());
    for (std::size_t d = 0; d < defs.size(); ++d) layout(d, state, extents);
    resolved = true;
  }

  /// Computes the layout of defs[root] after the messages it contains, in
  /// a loop with its own stack (a foreign schema may nest as deep as it
  /// likes: refused past kMaxNesting); refuses recursive types and
  /// messages with more than kMaxExpandedFields fields counted through
  /// their nested messages (what a decoded message or its JSON Schema
  /// holds). state: 0 not laid out, 1 on the stack, 2 done.
  /// How far a laid-out message reaches: its fields counted through its
  /// nested messages, and the depth of its nesting (1: none).
  struct Extent {
    std::uint64_t leaves = 0;
    std::size_t depth = 0;
  };

  /// A message being laid out: the walk's explicit stack holds one per
  /// nesting level (no recursion on a definition's nesting).
  struct Frame {
    std::size_t def = 0;
    std::size_t field = 0;  ///< the next field to place
    std::uint64_t offset = 0;
    std::uint32_t align = 1;
    bool variable = false;  ///< a VarRef placed so far
    Extent extent;          ///< so far: the depth of the deepest nested message
  };

  static Frame frame_of(std::size_t def) {
    Frame f;
    f.def = def;
    return f;
  }

  void layout(std::size_t root, std::vector<int>& state, std::vector<Extent>& extents) {
    if (state[root] == 2) return;
    std::vector<Frame> stack{frame_of(root)};
    state[root] = 1;
    while (!stack.empty()) {
      Frame& top = stack.back();
      MessageDef& def = *defs[top.def];
      if (top.field == def.fields.size()) {
        finish(top, extents);
        state[top.def] = 2;
        stack.pop_back();
        continue;
      }
      Field& f = def.fields[top.field];
      if (f.kind == FieldKind::kMessage) {
        const std::size_t inner = index.at(f.message->name);
        if (state[inner] == 1) {
          std::string cycle;
          for (const Frame& p : stack) cycle += defs[p.def]->name + " -> ";
          fail(def.source, f.line, fmt::format("recursive type: {}{} (field '{}')", cycle, f.message->name, f.name));
        }
        if (state[inner] == 0) {
          if (stack.size() >= MessageSet::kMaxNesting) {
            fail(def.source, f.line,
                 fmt::format("{} nests messages more than {} deep at field '{}'; no real message does",
                             defs[root]->name, MessageSet::kMaxNesting, f.name));
          }
          state[inner] = 1;
          stack.push_back(frame_of(inner));  // `top` and `def` are stale now
          continue;
        }
        top.extent.leaves += extents[inner].leaves;
        top.extent.depth = std::max(top.extent.depth, extents[inner].depth);
      }
      place(top, def, f);
      ++top.field;
    }
  }

  /// A message whose fields are all placed: its size, alignment and extent.
  void finish(const Frame& top, std::vector<Extent>& extents) {
    MessageDef& def = *defs[top.def];
    def.align = top.align;
    // A message without fields takes one byte, as its C++ struct does (and
    // ROS 2's C struct, and its CDR): so each element of a sequence of
    // them has bytes of its own, which the readers' checks count.
    def.size = static_cast<std::uint32_t>(align_up(std::max<std::uint64_t>(top.offset, 1), top.align));
    def.variable = top.variable;
    // The depth counted through messages laid out before too (the stack
    // alone sees only this walk's part of the nesting).
    const std::size_t depth = top.extent.depth + 1;
    if (depth > MessageSet::kMaxNesting) {
      fail(def.source, 1,
           fmt::format("{} nests messages more than {} deep; no real message does", def.name, MessageSet::kMaxNesting));
    }
    extents[top.def] = Extent{top.extent.leaves, depth};
  }

  /// Field `f` of `def` at the end of what `top` has placed (a nested
  /// message's layout is done).
  static void place(Frame& top, const MessageDef& def, Field& f) {
    if (f.kind == FieldKind::kMessage) {
      f.element_size = f.message->size;
      f.element_align = f.message->align;
    } else if (f.kind == FieldKind::kString) {
      f.element_size = f.string_capacity;
      f.element_align = 1;
    } else if (f.kind == FieldKind::kUnboundedString) {
      f.element_size = kVarRefSize;
      f.element_align = kVarRefAlign;
    } else {
      f.element_size = size_of(f.primitive);
      f.element_align = f.element_size;
    }
    top.variable = top.variable || f.unbounded || f.element_variable();
    if (f.unbounded) {
      top.offset = align_up(top.offset, kVarRefAlign);
      f.offset = static_cast<std::uint32_t>(top.offset);
      top.offset += kVarRefSize;
      top.align = std::max(top.align, kVarRefAlign);
    } else {
      top.offset = align_up(top.offset, f.element_align);
      f.offset = static_cast<std::uint32_t>(top.offset);
      top.offset += std::uint64_t{f.element_size} * (f.array_length == 0 ? 1 : f.array_length);
      top.align = std::max(top.align, f.element_align);
    }
    if (f.kind != FieldKind::kMessage) ++top.extent.leaves;
    if (top.extent.leaves > MessageSet::kMaxExpandedFields) {
      fail(def.source, f.line,
           fmt::format("{} has more than {} fields counted through its nested messages at field '{}'", def.name,
                       MessageSet::kMaxExpandedFields, f.name));
    }
    if (top.offset > kMaxMessageSize) {
      fail(def.source, f.line,
           fmt::format("{} is larger than {} bytes at field '{}'", def.name, kMaxMessageSize, f.name));
    }
  }
};

MessageSet::MessageSet() : impl_(std::make_unique<Impl>()) {}
MessageSet::~MessageSet() = default;
MessageSet::MessageSet(MessageSet&&) noexcept = default;
MessageSet& MessageSet::operator=(MessageSet&&) noexcept = default;

void MessageSet::add(const std::string& package, const std::string& name, std::string_view text,
                     const std::string& source) {
  add_at(package, name, text, source, 0);
}

void MessageSet::add_at(const std::string& package, const std::string& name, std::string_view text,
                        const std::string& source, int first_line) {
  if (!is_package(package)) {
    Impl::fail(source, first_line + 1, fmt::format("package '{}' must be lower_case letters, digits and '_'", package));
  }
  if (!is_identifier(name) || !std::isupper(static_cast<unsigned char>(name[0]))) {
    Impl::fail(source, first_line + 1, fmt::format("message name '{}' must be CamelCase letters and digits", name));
  }
  impl_->add_raw(RawDef{package, name, source, {}}, text, first_line);
}

void MessageSet::add_file(const std::string& path) {
  const std::filesystem::path p(path);
  std::ifstream in(p, std::ios::binary);
  const std::string ext = p.extension().string();
  if (!in || (ext != ".msg" && ext != ".srv" && ext != ".action")) {
    throw SchemaError(
        fmt::format("{}:1: cannot read a message definition; expected a readable "
                    ".../package/Name.msg, Name.srv or Name.action (or .../package/msg/Name.msg ...)",
                    path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  // <pkg>/<Name>.msg, or ROS 2's share layout <pkg>/msg/<Name>.msg.
  std::filesystem::path folder = p.parent_path();
  const std::string kind = folder.filename().string();
  if (kind == "msg" || kind == "srv" || kind == "action") folder = folder.parent_path();
  add_text(folder.filename().string(), p.stem().string(), ext.substr(1), text.str(), path);
}

void MessageSet::add_text(const std::string& package, const std::string& stem, std::string_view kind,
                          std::string_view text, const std::string& source) {
  if (kind == "msg") {
    add(package, stem, text, source);
    return;
  }
  const std::vector<std::string> parts =
      kind == "srv" ? std::vector<std::string>{service_request_type(stem), service_response_type(stem)}
                    : std::vector<std::string>{stem + "_Goal", stem + "_Result", stem + "_Feedback"};
  add_parts(package, parts, text, source, 0);
  if (kind == "action") add_action_types(package, stem, source);
}

void MessageSet::add_action_types(const std::string& package, const std::string& action, const std::string& source) {
  // What rosidl derives from an `.action` (rosidl_parser's Action): the
  // send-goal and get-result services and the feedback message, goals
  // named by a UUID.
  const std::string send_goal = action + std::string{kActionSendGoalSuffix};
  const std::string get_result = action + std::string{kActionGetResultSuffix};
  const std::string goal_id = "unique_identifier_msgs/UUID goal_id\n";
  add_at(package, service_request_type(send_goal), fmt::format("{}{}_Goal goal\n", goal_id, action), source, 0);
  add_at(package, service_response_type(send_goal), "bool accepted\nbuiltin_interfaces/Time stamp\n", source, 0);
  add_at(package, service_request_type(get_result), goal_id, source, 0);
  add_at(package, service_response_type(get_result), fmt::format("int8 status\n{}_Result result\n", action), source, 0);
  add_at(package, action + std::string{kActionFeedbackMessageSuffix},
         fmt::format("{}{}_Feedback feedback\n", goal_id, action), source, 0);
  add_shipped_types({"unique_identifier_msgs/UUID", "builtin_interfaces/Time"});
}

void MessageSet::add_parts(const std::string& package, const std::vector<std::string>& parts, std::string_view body,
                           const std::string& source, int first_line) {
  // A service: request, a line "---", response. An action: goal, "---",
  // result, "---", feedback. Each part keeps its line numbers (it starts
  // at its line of the file).
  const bool service = parts.size() == 2;
  std::size_t part = 0;
  std::size_t part_start = 0;
  int part_line = first_line;
  std::size_t pos = 0;
  int line = first_line;
  while (pos <= body.size()) {
    const std::size_t eol = std::min(body.find('\n', pos), body.size());
    std::string_view l = body.substr(pos, eol - pos);
    ++line;
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
    const bool end = eol == body.size();
    if (l == "---" || end) {
      if (!end && part + 1 == parts.size()) {
        Impl::fail(source, line,
                   fmt::format("a {} has {} parts; this is line '---' number {}", service ? "service" : "action",
                               parts.size(), parts.size()));
      }
      if (end && part + 1 != parts.size()) {
        // The last line (not the empty one after its last newline).
        Impl::fail(source, std::max(first_line + 1, line - (body.ends_with('\n') ? 1 : 0)),
                   service ? "a service definition needs a line '---' between the request and the response fields"
                           : "an action definition needs the goal, result and feedback parts, separated by "
                             "lines '---'");
      }
      const std::size_t stop = end ? body.size() : pos;
      add_at(package, parts[part], body.substr(part_start, stop - part_start), source, part_line);
      ++part;
      part_start = std::min(eol + 1, body.size());
      part_line = line;
      if (end) return;
    }
    pos = eol + 1;
  }
}

void MessageSet::load_missing(const std::function<bool(const std::string& full_name)>& load) {
  // raw grows while we walk it: by index, and copies of what we read.
  for (std::size_t d = 0; d < impl_->raw.size(); ++d) {
    const std::string package = impl_->raw[d].package;
    std::vector<std::string> wanted;
    for (const RawField& f : impl_->raw[d].fields) {
      if (f.value || primitive_named(f.type) || f.type == "string" || f.type.starts_with("string<")) continue;
      wanted.push_back(f.type);
    }
    for (const std::string& type : wanted) {
      if (impl_->resolve_name(package, type)) continue;
      std::vector<std::string> candidates;
      if (type.find('/') != std::string::npos) {
        candidates.push_back(type);
      } else {
        candidates.push_back(fmt::format("{}/{}", package, type));
        if (type == "Header") candidates.emplace_back("std_msgs/Header");
      }
      for (const std::string& c : candidates) {
        if (load(c)) break;
      }
    }
  }
}

bool MessageSet::has(std::string_view full_name) const { return impl_->raw_names.count(full_name) != 0; }

namespace {

/// The suffix of a service event type (rosidl: `pkg/srv/Name_Event`).
constexpr std::string_view kEventTypeSuffix = "_Event";

/// A section's definition as compared with a later one of the same name:
/// each line without trailing white space, no blank lines at the end.
std::string section_text(std::string_view body) {
  std::string out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t eol = std::min(body.find('\n', pos), body.size());
    std::string_view line = body.substr(pos, eol - pos);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) line.remove_suffix(1);
    out.append(line);
    out.push_back('\n');
    pos = eol + 1;
  }
  while (out.ends_with("\n\n")) out.pop_back();
  return out;
}

/// rosbag2 writes a type once for each path that reaches it: a section
/// seen before is skipped when it says the same, refused when it differs.
class SectionsSeen {
 public:
  /// True when `name` was seen before with the same definition; throws
  /// SchemaError naming both lines when it differs.
  bool repeated(const std::string& name, std::string_view body, int line, const std::string& source) {
    const auto [seen, first] = seen_.try_emplace(name, section_text(body), line);
    if (first) return false;
    if (seen->second.first != section_text(body)) {
      throw SchemaError(fmt::format("{}:{}: message {} is defined twice, differently: at line {} and at line {}",
                                    source, line + 1, name, std::max(seen->second.second, 1), line));
    }
    return true;
  }

 private:
  std::map<std::string, std::pair<std::string, int>, std::less<>> seen_;  // name -> text, MSG line
};

/// True when `body` has a line `---` (a `.srv`'s).
bool has_separator_line(std::string_view body) {
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t eol = std::min(body.find('\n', pos), body.size());
    if (trim(body.substr(pos, eol - pos)) == "---") return true;
    pos = eol + 1;
  }
  return false;
}

}  // namespace

void MessageSet::add_directory(const std::string& root) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& pkg : std::filesystem::directory_iterator(root, ec)) {
    if (!pkg.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(pkg.path())) {
      if (f.path().extension() == ".msg" || f.path().extension() == ".srv") files.push_back(f.path().string());
    }
  }
  if (ec) throw SchemaError(fmt::format("{}:1: cannot list message packages: {}", root, ec.message()));
  std::sort(files.begin(), files.end());
  for (const auto& f : files) add_file(f);
}

std::string MessageSet::add_canonical(std::string_view text, const std::string& source) {
  return add_sections(text, source, "");
}

std::string MessageSet::add_ros2msg(std::string_view text, std::string_view type, const std::string& source) {
  return add_sections(text, source, short_type_name(type));
}

std::string MessageSet::add_sections(std::string_view text, const std::string& source, const std::string& root_name) {
  // "MSG: pkg/Name" starts each definition; the rest are definition lines.
  // A ros2msg text's root comes first, unnamed, and lines of '=' part it
  // from the rest.
  if (text.size() > kMaxCanonicalBytes) {
    Impl::fail(source, 1,
               fmt::format("a schema of {} bytes is over the limit of {}; no real message type needs that much text",
                           text.size(), kMaxCanonicalBytes));
  }
  const bool ros2msg = !root_name.empty();
  std::string root = root_name;
  std::size_t pos = 0;
  int line_no = 0;
  std::string current = root_name;
  std::string body;
  int body_first_line = 0;
  SectionsSeen sections;
  bool service_event = false;
  const auto flush = [&] {
    if (current.empty()) return;
    const auto slash = current.find('/');
    if (slash == std::string::npos) Impl::fail(source, body_first_line, fmt::format("bad MSG name '{}'", current));
    if (sections.repeated(current, body, body_first_line, source)) return;
    const std::string package = current.substr(0, slash);
    const std::string name = current.substr(slash + 1);
    // A service's events as rosbag2 records them (`pkg/srv/Name_Event`):
    // the schema's text is the `.srv` itself, request, `---`, response.
    if (ros2msg && current == root && name.ends_with(kEventTypeSuffix) && has_separator_line(body)) {
      add_service_event(package, name.substr(0, name.size() - kEventTypeSuffix.size()), body, source, body_first_line);
      service_event = true;
      return;
    }
    // Line numbers of errors point into `text`.
    add_at(package, name, body, source, body_first_line);
  };
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.rfind("MSG: ", 0) == 0) {
      flush();
      current = short_type_name(trim(line.substr(5)));
      if (root.empty()) root = current;
      body.clear();
      body_first_line = line_no;
      continue;
    }
    if (ros2msg && trim(line).size() >= 3 && trim(line).find_first_not_of('=') == std::string_view::npos) {
      body.push_back('\n');  // keeps the line numbers
      continue;
    }
    if (current.empty()) {
      if (trim(line).empty()) continue;
      Impl::fail(source, line_no, "a canonical schema starts with 'MSG: package/Name'");
    }
    body.append(line);
    body.push_back('\n');
  }
  flush();
  if (root.empty()) Impl::fail(source, 1, "empty schema: expected 'MSG: package/Name'");
  if (service_event) add_service_event_types();
  return root;
}

void MessageSet::add_service_event_types() {
  // The types an event derived from a `.srv` uses, where the text leaves
  // them out (rosbag2 lists only the request's and response's).
  add_shipped_types({"service_msgs/ServiceEventInfo", "builtin_interfaces/Time"});
}

void MessageSet::add_shipped_types(std::initializer_list<std::string_view> types) {
  // The shipped definitions, ROS 2's.
  for (const std::string_view type : types) {
    if (has(type)) continue;
    for (const ShippedMessage& m : shipped_messages()) {
      if (type == fmt::format("{}/{}", m.package, m.name)) {
        add_at(m.package, m.name, m.text, fmt::format("<shipped>/{}.msg", type), 0);
      }
    }
  }
}

void MessageSet::add_service_event(const std::string& package, const std::string& service, std::string_view srv_text,
                                   const std::string& source, int first_line) {
  const std::string request = service_request_type(service);
  const std::string response = service_response_type(service);
  add_parts(package, {request, response}, srv_text, source, first_line);
  // What rosidl derives from a `.srv` for service introspection.
  add_at(package, service + std::string{kEventTypeSuffix},
         fmt::format("service_msgs/ServiceEventInfo info\n{}[<=1] request\n{}[<=1] response\n", request, response),
         source, first_line);
}

void MessageSet::resolve() { impl_->build(); }

const MessageDef* MessageSet::find(std::string_view full_name) const {
  const auto it = impl_->index.find(full_name);
  return impl_->resolved && it != impl_->index.end() ? impl_->defs[it->second].get() : nullptr;
}

std::vector<const MessageDef*> MessageSet::messages() const {
  std::vector<const MessageDef*> out;
  for (const auto& d : impl_->defs) out.push_back(d.get());
  return out;
}

namespace {

/// `m` and every message it uses, depth first, each once.
std::vector<const MessageDef*> with_dependencies(const MessageDef& m) {
  std::vector<const MessageDef*> order{&m};
  std::set<const MessageDef*> seen{&m};
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const Field& f : order[i]->fields) {
      if (f.kind == FieldKind::kMessage && seen.insert(f.message).second) order.push_back(f.message);
    }
  }
  return order;
}

/// " VALUE" for a field with a default, as a definition line writes it.
std::string default_suffix(const Field& f) {
  if (f.default_value.is_null()) return {};
  const auto one = [](const Json& v) {
    return v.is_string() ? quote_string(v.get_ref<const std::string&>()) : v.dump();
  };
  if (!f.default_value.is_array()) return " " + one(f.default_value);
  std::string out = " [";
  for (std::size_t i = 0; i < f.default_value.size(); ++i) out += (i == 0 ? "" : ", ") + one(f.default_value[i]);
  return out + "]";
}

/// A field's type in ROS 2 `.msg` syntax: `string<=N`, `pkg/Type`, `[N]`, `[]`.
std::string ros2_type(const Field& f) {
  std::string t;
  switch (f.kind) {
    case FieldKind::kPrimitive:
      t = to_string(f.primitive);
      break;
    case FieldKind::kString:
      t = fmt::format("string<={}", f.string_capacity);
      break;
    case FieldKind::kUnboundedString:
      t = "string";
      break;
    case FieldKind::kMessage:
      t = f.message->name;
      break;
  }
  if (f.unbounded && f.sequence_bound != 0) return fmt::format("{}[<={}]", t, f.sequence_bound);
  if (f.unbounded) return t + "[]";
  if (f.array_length != 0) return fmt::format("{}[{}]", t, f.array_length);
  return t;
}

}  // namespace

std::string MessageSet::canonical_text(const MessageDef& m) {
  std::string out;
  for (const MessageDef* d : with_dependencies(m)) {
    out += "MSG: " + d->name + "\n";
    for (const Constant& c : d->constants) out += fmt::format("{} {}={}\n", c.type(), c.name, c.literal());
    for (const Field& f : d->fields) out += f.type() + " " + f.name + default_suffix(f) + "\n";
  }
  return out;
}

std::string ros2_type_name(std::string_view type) {
  const auto slash = type.find('/');
  if (slash == std::string_view::npos || type.find('/', slash + 1) != std::string_view::npos) return std::string{type};
  return fmt::format("{}/msg{}", type.substr(0, slash), type.substr(slash));
}

std::string ros2msg_text(const MessageDef& m) {
  std::string out;
  for (const MessageDef* d : with_dependencies(m)) {
    if (d != &m) out += std::string(80, '=') + "\nMSG: " + d->name + "\n";
    for (const Constant& c : d->constants) out += fmt::format("{} {}={}\n", c.type(), c.name, c.literal());
    for (const Field& f : d->fields) out += ros2_type(f) + " " + f.name + default_suffix(f) + "\n";
  }
  return out;
}

}  // namespace shmbus::schema
