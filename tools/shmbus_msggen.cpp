// shmbus-msggen: generates C++ headers from message definitions (.msg).
//
//   shmbus-msggen --out DIR [--include ROOT]... [--keep-going] FILE...
//
// Headers go where rosidl puts them: a message .../<pkg>/<Name>.msg gives
// DIR/<pkg>/msg/<name>.hpp (<name>: Name in rosidl's lower_case_underscore,
// rosidl_pycommon's rule), with DIR/<pkg>/<Name>.hpp kept as an alias. A
// service <Name>.srv gives DIR/<pkg>/srv/<name>.hpp (pkg::srv::Name) over
// <Name>_Request.hpp and <Name>_Response.hpp; an action <Name>.action gives
// DIR/<pkg>/action/<name>.hpp over <Name>_Goal.hpp, <Name>_Result.hpp,
// <Name>_Feedback.hpp and the types ROS 2 derives (<Name>_SendGoal_Request
// and the like). FILE may be flat (.../<pkg>/<Name>.msg) or in ROS 2's
// share layout (.../<pkg>/msg/<Name>.msg). The types a FILE uses are looked
// up as every program looks them up (schema::TypeCatalog): among the FILEs,
// the shipped definitions, each ROOT, SHMBUS_MSG_PATH and AMENT_PREFIX_PATH;
// those not shipped (shmbus::messages holds those) are generated too. Each
// FILE is generated on its own: one that cannot be read fails only itself
// and the FILEs that use it, said in one line each (exit 2 at the end, or 0
// with --keep-going). Run from CMake by shmbus_generate_messages().
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "shmbus/cli.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/type_catalog.hpp"

namespace fs = std::filesystem;
using namespace shmbus::schema;

namespace {

std::string cpp_primitive(Primitive p) {
  switch (p) {
    case Primitive::kBool:
      return "bool";
    case Primitive::kInt8:
      return "std::int8_t";
    case Primitive::kUint8:
      return "std::uint8_t";
    case Primitive::kInt16:
      return "std::int16_t";
    case Primitive::kUint16:
      return "std::uint16_t";
    case Primitive::kInt32:
      return "std::int32_t";
    case Primitive::kUint32:
      return "std::uint32_t";
    case Primitive::kInt64:
      return "std::int64_t";
    case Primitive::kUint64:
      return "std::uint64_t";
    case Primitive::kFloat32:
      return "float";
    case Primitive::kFloat64:
      return "double";
  }
  return "?";
}

std::string cpp_name(const std::string& full) {
  const auto slash = full.find('/');
  return full.substr(0, slash) + "::" + full.substr(slash + 1);
}

std::string cpp_element(const Field& f) {
  switch (f.kind) {
    case FieldKind::kPrimitive:
      return cpp_primitive(f.primitive);
    case FieldKind::kString:
      return fmt::format("shmbus::FixedString<{}>", f.string_capacity);
    case FieldKind::kUnboundedString:
      return "std::string";
    default:
      return cpp_name(f.message->name);
  }
}

/// `s` as a C++ string literal: quotes, backslashes and bytes that are not
/// printable ASCII escaped (octal).
std::string cpp_string_literal(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\{:03o}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// A number or bool as a C++ literal of primitive `p` (`text`: its
/// canonical spelling).
std::string cpp_literal(Primitive p, const std::string& text) {
  if (p == Primitive::kUint64) return text + "ULL";
  if (p == Primitive::kInt64) {
    if (text == "-9223372036854775808") return "(-9223372036854775807LL - 1)";
    return text + "LL";
  }
  const bool floating = p == Primitive::kFloat32 || p == Primitive::kFloat64;
  const std::string f = floating && text.find_first_of(".en") == std::string::npos ? text + ".0" : text;
  return p == Primitive::kFloat32 ? f + "f" : f;
}

std::string cpp_constant_value(const Constant& c) {
  if (c.is_string) return cpp_string_literal(c.value);
  return cpp_literal(c.primitive, c.value);
}

/// A field's default value as a C++ member initializer (" = 1.0",
/// "{1, 2}", "{{'a', 'b'}}"), or "" when it has none.
std::string cpp_default(const Field& f) {
  if (f.default_value.is_null()) return {};
  const auto one = [&](const Json& v) -> std::string {
    if (f.kind == FieldKind::kString) {
      std::string chars;
      for (const char c : v.get<std::string>()) {
        chars += fmt::format("{}'\\x{:02x}'", chars.empty() ? "" : ", ", static_cast<unsigned char>(c));
      }
      return "{{" + chars + "}}";
    }
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    return cpp_literal(f.primitive, v.is_number_float() ? fmt::format("{}", v.get<double>()) : v.dump());
  };
  if (!f.default_value.is_array())
    return f.kind == FieldKind::kString ? one(f.default_value) : " = " + one(f.default_value);
  // std::array<T, N>{{a, b}}: the outer braces are the std::array's, the
  // inner its member array's (so an element that is itself braced, a
  // string's characters, is not taken for the member array).
  std::string items;
  for (const Json& v : f.default_value) items += (items.empty() ? "" : ", ") + one(v);
  return "{{" + items + "}}";
}

// ---- Types with strings and sequences: a view, a builder and an owning type.

enum class Elem { kPrimitive, kBool, kFixedString, kString, kFixedMessage, kVariableMessage };

Elem elem_of(const Field& f) {
  switch (f.kind) {
    case FieldKind::kPrimitive:
      return f.primitive == Primitive::kBool ? Elem::kBool : Elem::kPrimitive;
    case FieldKind::kString:
      return Elem::kFixedString;
    case FieldKind::kUnboundedString:
      return Elem::kString;
    default:
      return f.message->variable ? Elem::kVariableMessage : Elem::kFixedMessage;
  }
}

/// The code one field contributes to each of the three types.
struct FieldCode {
  std::string view;     ///< View's accessor
  std::string builder;  ///< Builder's setters
  std::string member;   ///< the owning type's member
  std::string grow;     ///< wire_size(): the blocks it appends
  std::string build;    ///< build(): writing it
  std::string from;     ///< from(): reading it
};

/// `"pkg/Type.field"`: what an error about the field names.
std::string what_of(const MessageDef& m, const Field& f) { return cpp_string_literal(m.name + "." + f.name); }

/// The element a view gives of a fixed array or sequence: a bool as its
/// byte (any byte from a writer is a value; `!= 0` is true).
std::string view_element(const Field& f) { return elem_of(f) == Elem::kBool ? "std::uint8_t" : cpp_element(f); }

/// A string literal's default, or a default list of strings, as the owning
/// type's initializer.
std::string owning_default(const Field& f) {
  if (f.default_value.is_null()) return "{}";
  if (elem_of(f) != Elem::kString) {
    std::string d = cpp_default(f);
    if (d.starts_with(" = ")) return "{" + d.substr(3) + "}";
    if (f.unbounded && d.starts_with("{{")) return d.substr(1, d.size() - 2);  // std::vector{a, b}
    return d;
  }
  if (!f.default_value.is_array()) return "{" + cpp_string_literal(f.default_value.get<std::string>()) + "}";
  std::string items;
  for (const Json& v : f.default_value) items += (items.empty() ? "" : ", ") + cpp_string_literal(v.get<std::string>());
  return f.unbounded ? "{" + items + "}" : "{{" + items + "}}";
}

FieldCode code_one(const MessageDef& m, const Field& f) {
  const std::string at = fmt::format("at_ + {}", f.offset);
  const std::string what = what_of(m, f);
  const std::string e = cpp_element(f);
  FieldCode c;
  c.member = fmt::format("  {} {}{};\n", cpp_element(f), f.name, owning_default(f));
  switch (elem_of(f)) {
    case Elem::kPrimitive:
      c.view =
          fmt::format("  [[nodiscard]] {0} {1}() const noexcept {{ return shmbus::msg::load<{0}>(m_.data + {2}); }}\n",
                      e, f.name, at);
      c.builder = fmt::format("  void set_{1}({0} v) noexcept {{ std::memcpy(w_->data() + {2}, &v, sizeof v); }}\n", e,
                              f.name, at);
      break;
    case Elem::kBool:
      c.view = fmt::format(
          "  [[nodiscard]] bool {0}() const noexcept {{ return shmbus::msg::load<std::uint8_t>(m_.data + {1}) != 0; "
          "}}\n",
          f.name, at);
      c.builder = fmt::format(
          "  void set_{0}(bool v) noexcept {{ *reinterpret_cast<std::uint8_t*>(w_->data() + {1}) = v ? 1 : 0; }}\n",
          f.name, at);
      break;
    case Elem::kFixedString:
      c.view = fmt::format(
          "  [[nodiscard]] std::string_view {0}() const noexcept {{\n"
          "    return reinterpret_cast<const {1}*>(m_.data + {2})->view();\n  }}\n",
          f.name, e, at);
      c.builder = fmt::format(
          "  void set_{0}(std::string_view s) {{\n"
          "    if (!reinterpret_cast<{1}*>(w_->data() + {2})->assign(s)) {{\n"
          "      throw shmbus::Error(shmbus::Errc::kInvalidArgument, std::string({3}) + \": \" + "
          "std::to_string(s.size()) + \" bytes do not fit string<{4}>\");\n    }}\n  }}\n",
          f.name, e, at, what, f.string_capacity);
      break;
    case Elem::kString:
      c.view =
          fmt::format("  [[nodiscard]] std::string_view {0}() const {{ return shmbus::msg::string(m_, {1}, {2}); }}\n",
                      f.name, at, what);
      c.builder = fmt::format("  void set_{0}(std::string_view s) {{ w_->string({1}, s, {2}); }}\n", f.name, at, what);
      c.grow = fmt::format("    end = shmbus::msg::grow(end, {}.size(), 1, 1);\n", f.name);
      break;
    case Elem::kFixedMessage:
      c.view = fmt::format(
          "  [[nodiscard]] const {0}& {1}() const noexcept {{\n"
          "    return *reinterpret_cast<const {0}*>(m_.data + {2});\n  }}\n",
          e, f.name, at);
      c.builder =
          fmt::format("  [[nodiscard]] {0}& {1}() noexcept {{ return *reinterpret_cast<{0}*>(w_->data() + {2}); }}\n",
                      e, f.name, at);
      break;
    case Elem::kVariableMessage:
      c.view = fmt::format("  [[nodiscard]] {0}_View {1}() const noexcept {{ return {{m_, {2}}}; }}\n", e, f.name, at);
      c.builder = fmt::format("  [[nodiscard]] {0}_Builder {1}() noexcept {{ return {{*w_, {2}}}; }}\n", e, f.name, at);
      c.grow = fmt::format("    end = {}.grow(end);\n", f.name);
      c.build = fmt::format("    {0}.build(b.{0}());\n", f.name);
      c.from = fmt::format("    out.{0} = {1}::from(v.{0}(), budget);\n", f.name, e);
      return c;
  }
  switch (elem_of(f)) {
    case Elem::kFixedString:
      c.build = fmt::format("    b.set_{0}({0}.view());\n", f.name);
      c.from = fmt::format("    out.{0}.assign(v.{0}());\n", f.name);
      break;
    case Elem::kFixedMessage:
      c.build = fmt::format("    b.{0}() = {0};\n", f.name);
      c.from = fmt::format("    out.{0} = v.{0}();\n", f.name);
      break;
    case Elem::kString:
      c.build = fmt::format("    b.set_{0}({0});\n", f.name);
      c.from = fmt::format(
          "    {{\n      const std::string_view s = v.{0}();\n      budget.take(s.size(), 1, {1});\n"
          "      out.{0}.assign(s);\n    }}\n",
          f.name, what);
      break;
    default:
      c.build = fmt::format("    b.set_{0}({0});\n", f.name);
      c.from = fmt::format("    out.{0} = v.{0}();\n", f.name);
  }
  return c;
}

/// Elements that are a string or a variable message: read one at a time.
bool read_one_by_one(const Field& f) { return elem_of(f) == Elem::kString || elem_of(f) == Elem::kVariableMessage; }

/// The Sequence<Read> type of a field whose elements are read one by one.
std::string sequence_type(const Field& f) {
  return elem_of(f) == Elem::kString ? "shmbus::msg::Sequence<shmbus::msg::StringElement>"
                                     : fmt::format("shmbus::msg::Sequence<{}_View>", cpp_element(f));
}

/// A fixed array `T name[N]`.
FieldCode code_array(const MessageDef& m, const Field& f) {
  const std::string at = fmt::format("at_ + {}", f.offset);
  const std::string what = what_of(m, f);
  const std::string e = cpp_element(f);
  const std::uint32_t n = f.array_length;
  FieldCode c;
  c.member = fmt::format("  std::array<{}, {}> {}{};\n", cpp_element(f), n, f.name, owning_default(f));
  if (!read_one_by_one(f)) {
    const std::string ve = view_element(f);
    c.view = fmt::format(
        "  [[nodiscard]] std::span<const {0}, {1}> {2}() const noexcept {{\n"
        "    return std::span<const {0}, {1}>(reinterpret_cast<const {0}*>(m_.data + {3}), {1});\n  }}\n",
        ve, n, f.name, at);
    c.builder = fmt::format(
        "  [[nodiscard]] std::span<{0}, {1}> {2}() noexcept {{\n"
        "    return std::span<{0}, {1}>(reinterpret_cast<{0}*>(w_->data() + {3}), {1});\n  }}\n",
        e, n, f.name, at);
    c.build = fmt::format("    std::copy({0}.begin(), {0}.end(), b.{0}().begin());\n", f.name);
    c.from = elem_of(f) == Elem::kBool
                 ? fmt::format(
                       "    std::transform(v.{0}().begin(), v.{0}().end(), out.{0}.begin(), "
                       "[](std::uint8_t x) {{ return x != 0; }});\n",
                       f.name)
                 : fmt::format("    std::copy(v.{0}().begin(), v.{0}().end(), out.{0}.begin());\n", f.name);
    return c;
  }
  const bool str = elem_of(f) == Elem::kString;
  c.view = fmt::format("  [[nodiscard]] {0} {1}() const noexcept {{ return {{m_, {2}, {3}, {4}, {5}}}; }}\n",
                       sequence_type(f), f.name, at, n, f.element_size, what);
  const std::string element = fmt::format("shmbus::msg::Writer::item({}, i, {}, {}, {})", at, n, f.element_size, what);
  c.builder = str ? fmt::format("  void set_{0}(std::size_t i, std::string_view s) {{ w_->string({1}, s, {2}); }}\n",
                                f.name, element, what)
                  : fmt::format("  [[nodiscard]] {0}_Builder {1}(std::size_t i) {{ return {{*w_, {2}}}; }}\n", e,
                                f.name, element);
  c.grow = str ? fmt::format("    for (const auto& s : {}) end = shmbus::msg::grow(end, s.size(), 1, 1);\n", f.name)
               : fmt::format("    for (const auto& x : {}) end = x.grow(end);\n", f.name);
  c.build = str ? fmt::format("    for (std::size_t i = 0; i < {1}; ++i) b.set_{0}(i, {0}[i]);\n", f.name, n)
                : fmt::format("    for (std::size_t i = 0; i < {1}; ++i) {0}[i].build(b.{0}(i));\n", f.name, n);
  c.from = str ? fmt::format(
                     "    for (std::size_t i = 0; i < {1}; ++i) {{\n      const std::string_view s = v.{0}()[i];\n"
                     "      budget.take(s.size(), 1, {2});\n      out.{0}[i].assign(s);\n    }}\n",
                     f.name, n, what)
               : fmt::format("    for (std::size_t i = 0; i < {1}; ++i) out.{0}[i] = {2}::from(v.{0}()[i], budget);\n",
                             f.name, n, e);
  return c;
}

/// A sequence `T name[]` or `T name[<=N]`.
FieldCode code_sequence(const MessageDef& m, const Field& f) {
  const std::string at = fmt::format("at_ + {}", f.offset);
  const std::string what = what_of(m, f);
  const std::string e = cpp_element(f);
  const std::uint32_t bound = f.sequence_bound;
  FieldCode c;
  c.member = fmt::format("  std::vector<{}> {}{};\n", cpp_element(f), f.name, owning_default(f));
  c.grow =
      fmt::format("    end = shmbus::msg::grow(end, {}.size(), {}, {});\n", f.name, f.element_size, f.element_align);
  if (!read_one_by_one(f)) {
    const std::string ve = view_element(f);
    // Fixed strings and messages: a zeroed block (their padding); numbers:
    // left for the caller to fill (a large sequence costs no second pass).
    const bool zero = elem_of(f) == Elem::kFixedString || elem_of(f) == Elem::kFixedMessage;
    c.view = fmt::format(
        "  [[nodiscard]] std::span<const {0}> {1}() const {{\n"
        "    return shmbus::msg::sequence<{0}>(m_, {2}, {3}, {4});\n  }}\n",
        ve, f.name, at, bound, what);
    c.builder = fmt::format(
        "  /// {1} of `n` elements{5}: fill them in the span.\n"
        "  [[nodiscard]] std::span<{0}> resize_{1}(std::size_t n) {{\n"
        "    return w_->sequence<{0}>({2}, n, {3}, {6}, {4});\n  }}\n",
        e, f.name, at, bound, what, zero ? " (zeroed)" : "", zero ? "true" : "false");
    c.build = fmt::format(
        "    {{\n      const auto s = b.resize_{0}({0}.size());\n"
        "      std::copy({0}.begin(), {0}.end(), s.begin());\n    }}\n",
        f.name);
    const std::string assign = elem_of(f) == Elem::kBool
                                   ? fmt::format(
                                         "      out.{0}.clear();  // the message's, not the defaults\n"
                                         "      out.{0}.reserve(s.size());\n      for (const std::uint8_t x : s) "
                                         "out.{0}.push_back(x != 0);\n",
                                         f.name)
                                   : fmt::format("      out.{0}.assign(s.begin(), s.end());\n", f.name);
    c.from = fmt::format("    {{\n      const auto s = v.{0}();\n      budget.take(s.size(), {1}, {2});\n{3}    }}\n",
                         f.name, f.element_size, what, assign);
    return c;
  }
  const bool str = elem_of(f) == Elem::kString;
  c.view = fmt::format(
      "  [[nodiscard]] {0} {1}() const {{\n"
      "    return shmbus::msg::sequence_of<{2}>(m_, {3}, {4}, {5}, {6}, {7});\n  }}\n",
      sequence_type(f), f.name, str ? "shmbus::msg::StringElement" : e + "_View", at, f.element_size, f.element_align,
      bound, what);
  const std::string element = fmt::format("w_->element({}, i, {}, {})", at, f.element_size, what);
  c.builder = fmt::format(
      "  /// {0} of `n` elements, each then set by index.\n"
      "  void resize_{0}(std::size_t n) {{\n"
      "    shmbus::msg::Writer::check_bound(n, {1}, {2});\n"
      "    w_->add({3}, n, {4}, {5}, true, {2});\n  }}\n",
      f.name, bound, what, at, f.element_size, f.element_align);
  c.builder += str ? fmt::format("  void set_{0}(std::size_t i, std::string_view s) {{ w_->string({1}, s, {2}); }}\n",
                                 f.name, element, what)
                   : fmt::format("  [[nodiscard]] {0}_Builder {1}(std::size_t i) {{ return {{*w_, {2}}}; }}\n", e,
                                 f.name, element);
  c.grow += str ? fmt::format("    for (const auto& s : {}) end = shmbus::msg::grow(end, s.size(), 1, 1);\n", f.name)
                : fmt::format("    for (const auto& x : {}) end = x.grow(end);\n", f.name);
  c.build = fmt::format("    b.resize_{0}({0}.size());\n", f.name) +
            (str ? fmt::format("    for (std::size_t i = 0; i < {0}.size(); ++i) b.set_{0}(i, {0}[i]);\n", f.name)
                 : fmt::format("    for (std::size_t i = 0; i < {0}.size(); ++i) {0}[i].build(b.{0}(i));\n", f.name));
  c.from = fmt::format(
               "    {{\n      const auto s = v.{0}();\n      budget.take(s.size(), {1}, {2});\n"
               "      out.{0}.clear();  // the message's, not the defaults\n"
               "      out.{0}.reserve(s.size());\n",
               f.name, f.element_size, what) +
           (str ? fmt::format("      for (const std::string_view x : s) {{\n        budget.take(x.size(), 1, {1});\n"
                              "        out.{0}.emplace_back(x);\n      }}\n",
                              f.name, what)
                : fmt::format("      for (const auto& x : s) out.{0}.push_back({1}::from(x, budget));\n", f.name, e)) +
           "    }\n";
  return c;
}

FieldCode code_field(const MessageDef& m, const Field& f) {
  if (f.unbounded) return code_sequence(m, f);
  if (f.array_length != 0) return code_array(m, f);
  return code_one(m, f);
}

// ---- Where a type's header goes, as rosidl lays them out.

/// rosidl's file name of a type (rosidl_pycommon's
/// convert_camel_case_to_lower_case_underscore): "_" before an upper-case
/// letter that starts a lower-case run (the run then consumed), then
/// between a lower-case letter or digit and an upper-case one; lower-cased.
/// "ColorRGBA" is "color_rgba", "PointCloud2" "point_cloud2".
std::string snake_case(std::string_view name) {
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  std::string first;
  for (std::size_t i = 0; i < name.size();) {
    first += name[i];
    if (i + 2 < name.size() && upper(name[i + 1]) && lower(name[i + 2])) {
      first += '_';
      std::size_t j = i + 2;
      while (j < name.size() && lower(name[j])) ++j;
      first.append(name.substr(i + 1, j - i - 1));
      i = j;
    } else {
      ++i;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const char c = first[i];
    out += upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
    if ((lower(c) || (c >= '0' && c <= '9')) && i + 1 < first.size() && upper(first[i + 1])) {
      out += '_';
      out += static_cast<char>(first[++i] - 'A' + 'a');
    }
  }
  return out;
}

/// What defines a type, as ROS 2 names its C++ namespace: "msg", or "srv"
/// and "action" for the parts of a service or an action.
std::string kind_of(const MessageDef& m) {
  const std::string ext = fs::path(m.source).extension().string();
  if (ext == ".srv") return "srv";
  if (ext == ".action") return "action";
  return "msg";
}

/// The header that holds type `m`: `pkg/msg/<name>.hpp` for a message,
/// `pkg/<Name>_Request.hpp` (and the like) for a part of a service or an
/// action (whose own header is `pkg/srv/<name>.hpp`, `pkg/action/<name>.hpp`).
std::string header_of(const MessageDef& m) {
  const auto slash = m.name.find('/');
  const std::string package = m.name.substr(0, slash);
  const std::string type = m.name.substr(slash + 1);
  return kind_of(m) == "msg" ? fmt::format("{}/msg/{}.hpp", package, snake_case(type)) : m.name + ".hpp";
}

/// `#include` of the header of each message type `m`'s fields use.
std::string dependency_includes(const MessageDef& m) {
  std::set<std::string> deps;
  for (const Field& f : m.fields) {
    if (f.kind == FieldKind::kMessage) deps.insert(header_of(*f.message));
  }
  std::string h;
  for (const auto& d : deps) h += fmt::format("#include \"{}\"\n", d);
  return h;
}

/// A header's guard: the type and its schema hash, so that two targets
/// that each generated a type they use (the same definition) can be
/// included together, and two different definitions of one name cannot.
std::string guard_of(const MessageDef& m, std::uint64_t hash) {
  std::string g = "SHMBUS_GENERATED_";
  for (const char c : m.name) g += c == '/' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return g + fmt::format("_{:016X}", hash);
}

/// Header `body` of message `m` with its guard, includes and namespaces:
/// the type is `pkg::Name`, also named `pkg::msg::Name` (and
/// `pkg::srv::Name` or `pkg::action::Name` for a part of one), as rosidl
/// names it. `aliases`: the `using` lines for one namespace.
std::string header_text(const MessageDef& m, const std::string& includes, const std::string& body,
                        const std::string& aliases) {
  const std::string text = MessageSet::canonical_text(m);
  const std::string guard = guard_of(m, hash_text(text));
  const std::string package = m.name.substr(0, m.name.find('/'));
  std::string h = fmt::format("// Generated by shmbus-msggen from {}. Do not edit.\n#ifndef {}\n#define {}\n\n",
                              fs::path(m.source).filename().string(), guard, guard);
  h += includes + dependency_includes(m);
  h += fmt::format("\nnamespace {} {{\n\n{}\n}}  // namespace {}\n", package, body, package);
  std::vector<std::string> spaces{"msg"};
  if (kind_of(m) != "msg") spaces.push_back(kind_of(m));
  for (const std::string& ns : spaces) {
    h += fmt::format("\nnamespace {0}::{1} {{\n{2}}}  // namespace {0}::{1}\n", package, ns, aliases);
  }
  return h + fmt::format("\n#endif  // {}\n", guard);
}

/// `part` of every field's code, in field order.
std::string all_of(const std::vector<FieldCode>& codes, std::string FieldCode::*part) {
  std::string out;
  for (const FieldCode& c : codes) out += c.*part;
  return out;
}

std::string view_class(const MessageDef& m, const std::string& type, const std::vector<FieldCode>& codes) {
  return fmt::format(
      "/// {0} read where it lies (a slot, a buffer): every string and sequence\n"
      "/// is checked against the message's bytes when it is reached (Error\n"
      "/// kInvalidArgument naming the field when it points outside them).\n"
      "class {1}_View {{\n public:\n"
      "  static constexpr std::uint32_t kFixedSize = {2};\n  static constexpr std::uint32_t kAlign = {3};\n\n"
      "  /// A whole message's bytes (8-byte aligned, at least kFixedSize).\n"
      "  explicit {1}_View(std::span<const std::byte> message)\n"
      "      : m_(shmbus::msg::message(message, kFixedSize, \"{0}\")) {{}}\n"
      "  /// The {0} at `at` in message `m` (a nested or sequence element).\n"
      "  {1}_View(const shmbus::msg::Bytes& m, std::uint32_t at) noexcept : m_(m), at_(at) {{}}\n"
      "  static {1}_View get(const shmbus::msg::Bytes& m, std::uint32_t at, const char* /*what*/) noexcept {{\n"
      "    return {{m, at}};\n  }}\n\n{4}\n"
      "  /// The whole message's size in bytes.\n"
      "  [[nodiscard]] std::size_t message_size() const noexcept {{ return m_.size; }}\n\n"
      " private:\n  shmbus::msg::Bytes m_;\n  std::uint32_t at_ = 0;\n}};\n\n",
      m.name, type, m.size, m.align, all_of(codes, &FieldCode::view));
}

std::string builder_class(const MessageDef& m, const std::string& type, const std::vector<FieldCode>& codes) {
  return fmt::format(
      "/// Writes a {0} into a buffer (a loan) through a shmbus::msg::Writer:\n"
      "/// the fixed part starts zeroed; each string or sequence is appended\n"
      "/// when set, and the writer's size() is then the message's. A buffer too\n"
      "/// small throws Error(kInvalidArgument) naming the field and the size.\n"
      "class {1}_Builder {{\n public:\n"
      "  /// The root of a message in `w`'s buffer.\n"
      "  explicit {1}_Builder(shmbus::msg::Writer& w) : w_(&w) {{ w.start({2}, \"{0}\"); }}\n"
      "  /// The {0} at `at` in the message `w` writes.\n"
      "  {1}_Builder(shmbus::msg::Writer& w, std::uint32_t at) noexcept : w_(&w), at_(at) {{}}\n\n{3}\n"
      " private:\n  shmbus::msg::Writer* w_;\n  std::uint32_t at_ = 0;\n}};\n\n",
      m.name, type, m.size, all_of(codes, &FieldCode::builder));
}

/// rosidl's pointer names of a type: `T::SharedPtr`, `ConstSharedPtr`,
/// `UniquePtr` (what rclcpp callbacks take).
std::string pointer_aliases(const std::string& type) {
  return fmt::format(
      "  using SharedPtr = std::shared_ptr<{0}>;\n  using ConstSharedPtr = std::shared_ptr<const {0}>;\n"
      "  using UniquePtr = std::unique_ptr<{0}>;\n",
      type);
}

std::string owning_struct(const MessageDef& m, const std::string& type, const std::vector<FieldCode>& codes) {
  const std::string text = MessageSet::canonical_text(m);
  std::string h = fmt::format(
      "/// {0} (schema hash {1:016x}) as an owning value, with its defaults:\n"
      "/// publish it (its wire_size() bytes are written through build()), or\n"
      "/// make one from a view with from().\n"
      "struct {2} {{\n"
      "  static constexpr const char* kTypeName = \"{0}\";\n"
      "  static constexpr std::uint64_t kTypeHash = 0x{1:016x}ULL;\n"
      "  static constexpr const char* kSchema = R\"shmbus_schema({3})shmbus_schema\";\n",
      m.name, hash_text(text), type, text);
  for (const Constant& c : m.constants) {
    h += fmt::format("  static constexpr {} {} = {};\n", c.is_string ? "const char*" : cpp_primitive(c.primitive),
                     c.name, cpp_constant_value(c));
  }
  h += fmt::format("  using View = {0}_View;\n  using Builder = {0}_Builder;\n{2}\n{1}\n", type,
                   all_of(codes, &FieldCode::member), pointer_aliases(type));
  h += fmt::format(
      "  /// The bytes build() writes.\n"
      "  [[nodiscard]] std::size_t wire_size() const noexcept {{ return grow(View::kFixedSize); }}\n"
      "  /// Where a message of `end` bytes ends once this one's blocks follow.\n"
      "  [[nodiscard]] std::size_t grow(std::size_t end) const noexcept {{\n{0}    return end;\n  }}\n"
      "  /// Writes this message through `b` (the codecs' order: fields in turn,\n"
      "  /// a sequence's block before its elements' own).\n"
      "  void build(Builder b) const {{\n{1}  }}\n"
      "  /// A copy of the message `v` views (Error kInvalidArgument when it\n"
      "  /// points outside its bytes, or its blocks overlap).\n"
      "  static {2} from(const View& v) {{\n"
      "    shmbus::msg::Budget budget(v.message_size());\n    return from(v, budget);\n  }}\n"
      "  static {2} from(const View& v, shmbus::msg::Budget& budget) {{\n    {2} out;\n{3}"
      "    static_cast<void>(budget);\n    return out;\n  }}\n"
      "  /// Every field equal (rosidl's operator==).\n  bool operator==(const {2}&) const = default;\n}};\n",
      all_of(codes, &FieldCode::grow), all_of(codes, &FieldCode::build), type, all_of(codes, &FieldCode::from));
  return h;
}

/// The header of a type with strings or sequences: `Type_View` (read in
/// place), `Type_Builder` (write into a loan) and `Type` (owning, with
/// std::string and std::vector, its defaults and constants).
std::string generate_variable(const MessageDef& m) {
  const std::string type = m.name.substr(m.name.find('/') + 1);
  std::vector<FieldCode> codes;
  codes.reserve(m.fields.size());
  for (const Field& f : m.fields) codes.push_back(code_field(m, f));
  const std::string includes =
      "#include <algorithm>\n#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <cstring>\n"
      "#include <memory>\n#include <span>\n#include <string>\n#include <string_view>\n#include <vector>\n\n"
      "#include \"shmbus/error.hpp\"\n#include \"shmbus/fixed_string.hpp\"\n#include \"shmbus/var_message.hpp\"\n";
  return header_text(
      m, includes, view_class(m, type, codes) + builder_class(m, type, codes) + owning_struct(m, type, codes),
      fmt::format("using {0} = {1}::{0};\nusing {0}_View = {1}::{0}_View;\nusing {0}_Builder = {1}::{0}_Builder;\n",
                  type, m.name.substr(0, m.name.find('/'))));
}

/// The struct of a fixed-layout message: every field and padding byte
/// initialised (a field to its default, or zero), as rosidl's constructors
/// do; `==` compares the fields.
std::string fixed_struct(const MessageDef& m, const std::string& type) {
  const std::string text = MessageSet::canonical_text(m);
  std::string h = fmt::format(
      "/// {} (schema hash {:016x}): every field starts at its default (or zero),\n"
      "/// and padding members at zero.\n",
      m.name, hash_text(text));
  h += fmt::format("struct {} {{\n", type);
  h += fmt::format("  static constexpr const char* kTypeName = \"{}\";\n", m.name);
  h += fmt::format("  static constexpr std::uint64_t kTypeHash = 0x{:016x}ULL;\n", hash_text(text));
  h += fmt::format("  static constexpr const char* kSchema = R\"shmbus_schema({})shmbus_schema\";\n", text);
  for (const Constant& c : m.constants) {
    h += fmt::format("  static constexpr {} {} = {};\n", c.is_string ? "const char*" : cpp_primitive(c.primitive),
                     c.name, cpp_constant_value(c));
  }
  h += pointer_aliases(type) + "\n";
  std::uint32_t at = 0;
  int pad = 0;
  const auto pad_to = [&](std::uint32_t offset) {
    if (offset > at) h += fmt::format("  std::uint8_t shmbus_pad{}[{}]{{}};\n", pad++, offset - at);
    at = offset;
  };
  std::string equal;
  for (const Field& f : m.fields) {
    pad_to(f.offset);
    const std::string init = f.default_value.is_null() ? "{}" : cpp_default(f);
    if (f.array_length != 0) {
      h += fmt::format("  std::array<{}, {}> {}{};\n", cpp_element(f), f.array_length, f.name, init);
    } else {
      h += fmt::format("  {} {}{};\n", cpp_element(f), f.name, init);
    }
    equal += fmt::format("{}lhs_.{} == rhs_.{}", equal.empty() ? "" : " && ", f.name, f.name);
    at += f.fixed_size();
  }
  pad_to(m.size);
  // lhs_ and rhs_: a ROS 2 field name never ends with '_', so no field is shadowed.
  h += fmt::format(
      "\n  /// The fields equal (padding aside).\n  friend bool operator==(const {0}& lhs_, const {0}& rhs_) noexcept "
      "{{\n"
      "    {1}return {2};\n  }}\n}};\n\n",
      type, m.fields.empty() ? "static_cast<void>(lhs_);\n    static_cast<void>(rhs_);\n    " : "",
      equal.empty() ? "true" : equal);
  h += "static_assert(std::endian::native == std::endian::little, \"shmbus messages are little-endian\");\n";
  h += "static_assert(sizeof(bool) == 1, \"the schema's bool is one byte\");\n";
  h += fmt::format("static_assert(std::is_trivially_copyable_v<{0}> && std::is_standard_layout_v<{0}>);\n", type);
  h += fmt::format("static_assert(sizeof({}) == {}, \"size must match the schema layout\");\n", type, m.size);
  h += fmt::format("static_assert(alignof({}) == {}, \"alignment must match the schema layout\");\n", type, m.align);
  for (const Field& f : m.fields) h += fmt::format("static_assert(offsetof({}, {}) == {});\n", type, f.name, f.offset);
  return h;
}

/// The header of message `m`: a struct for a fixed layout, or a view, a
/// builder and an owning type for one with strings or sequences.
std::string generate(const MessageDef& m) {
  if (m.variable) return generate_variable(m);
  const std::string type = m.name.substr(m.name.find('/') + 1);
  const std::string includes =
      "#include <array>\n#include <bit>\n#include <cstddef>\n#include <cstdint>\n#include <memory>\n#include <span>\n"
      "#include <type_traits>\n\n#include \"shmbus/fixed_string.hpp\"\n";
  return header_text(m, includes, fixed_struct(m, type),
                     fmt::format("using {0} = {1}::{0};\n", type, m.name.substr(0, m.name.find('/'))));
}

/// `struct NAME` of service type `full` (`pkg/NAME`): kServiceType, Request
/// and Response, what TypedServiceServer and TypedServiceClient take.
std::string service_struct(const std::string& package, const std::string& name, const std::string& full) {
  return fmt::format(
      "struct {0} {{\n  static constexpr const char* kServiceType = \"{1}\";\n  using Request = {2}::{3};\n"
      "  using Response = {2}::{4};\n}};\n",
      name, full, package, shmbus::service_request_type(name), shmbus::service_response_type(name));
}

/// The header of a service or an action `package/Name` (`kind` "srv" or
/// "action"): `pkg::srv::Name` naming its Request and Response (what
/// TypedServiceServer and TypedServiceClient take), or `pkg::action::Name`
/// naming its Goal, Result and Feedback, and in `Impl` the services and
/// messages ROS 2 derives from them (as rosidl's C++ does), with
/// `pkg::action::Name_SendGoal` and `Name_GetResult`.
std::string generate_family(const std::string& full, const std::string& kind) {
  const auto slash = full.find('/');
  const std::string package = full.substr(0, slash);
  const std::string type = full.substr(slash + 1);
  std::string h = fmt::format("// Generated by shmbus-msggen from {}.{}. Do not edit.\n#pragma once\n\n", type, kind);
  if (kind == "srv") {
    h += fmt::format("#include \"{0}/{1}.hpp\"\n#include \"{0}/{2}.hpp\"\n", package,
                     shmbus::service_request_type(type), shmbus::service_response_type(type));
    h +=
        fmt::format("\nnamespace {}::srv {{\n\n/// The service {}: a Request answered by a Response.\n", package, full);
    return h + service_struct(package, type, full) + fmt::format("\n}}  // namespace {}::srv\n", package);
  }
  const std::string send_goal = type + std::string{shmbus::kActionSendGoalSuffix};
  const std::string get_result = type + std::string{shmbus::kActionGetResultSuffix};
  const std::string feedback_message = type + std::string{shmbus::kActionFeedbackMessageSuffix};
  for (const std::string& part :
       {type + "_Goal", type + "_Result", type + "_Feedback", shmbus::service_request_type(send_goal),
        shmbus::service_response_type(send_goal), shmbus::service_request_type(get_result),
        shmbus::service_response_type(get_result), feedback_message}) {
    h += fmt::format("#include \"{}/{}.hpp\"\n", package, part);
  }
  h += "#include \"action_msgs/msg/goal_status_array.hpp\"\n#include \"action_msgs/srv/cancel_goal.hpp\"\n";
  h += fmt::format("\nnamespace {}::action {{\n\n", package);
  h += service_struct(package, send_goal, full + std::string{shmbus::kActionSendGoalSuffix});
  h += service_struct(package, get_result, full + std::string{shmbus::kActionGetResultSuffix});
  h += fmt::format(
      "\n/// The action {0}: a Goal pursued with Feedback to a Result.\nstruct {1} {{\n"
      "  static constexpr const char* kActionType = \"{0}\";\n  using Goal = {2}::{1}_Goal;\n"
      "  using Result = {2}::{1}_Result;\n  using Feedback = {2}::{1}_Feedback;\n"
      "  /// What ROS 2 derives: the services and messages on the action's channels.\n  struct Impl {{\n"
      "    using SendGoalService = {3};\n    using GetResultService = {4};\n"
      "    using FeedbackMessage = {2}::{5};\n    using CancelGoalService = action_msgs::srv::CancelGoal;\n"
      "    using GoalStatusMessage = action_msgs::msg::GoalStatusArray;\n  }};\n}};\n",
      full, type, package, send_goal, get_result, feedback_message);
  return h + fmt::format("\n}}  // namespace {}::action\n", package);
}

/// Writes `text` unless the file already holds it (keeps build times down).
void write_if_changed(const fs::path& path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in && old == text) return;
  }
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// A FILE given: its package, name, kind ("msg", "srv", "action") and the
/// message types it defines.
struct Definition {
  std::string file;
  std::string package;
  std::string name;
  std::string kind;
  std::vector<std::string> types;
};

Definition definition_of(const std::string& file) {
  const fs::path p(file);
  // <pkg>/<Name>.msg, or ROS 2's share layout <pkg>/msg/<Name>.msg.
  fs::path folder = p.parent_path();
  if (const auto kind = folder.filename(); kind == "msg" || kind == "srv" || kind == "action") {
    folder = folder.parent_path();
  }
  Definition d{file, folder.filename().string(), p.stem().string(), p.extension().string().substr(1), {}};
  const std::string full = d.package + "/" + d.name;
  if (d.kind == "srv") {
    d.types = {shmbus::service_request_type(full), shmbus::service_response_type(full)};
  } else if (d.kind == "action") {
    const std::string send_goal = full + std::string{shmbus::kActionSendGoalSuffix};
    const std::string get_result = full + std::string{shmbus::kActionGetResultSuffix};
    d.types = {full + "_Goal",
               full + "_Result",
               full + "_Feedback",
               shmbus::service_request_type(send_goal),
               shmbus::service_response_type(send_goal),
               shmbus::service_request_type(get_result),
               shmbus::service_response_type(get_result),
               full + std::string{shmbus::kActionFeedbackMessageSuffix}};
  } else {
    d.types = {full};
  }
  return d;
}

/// Writes the headers of the FILEs, one at a time, and of the types they
/// use that are not shipped.
class Generator {
 public:
  Generator(std::string out, const std::vector<std::string>& roots, const std::vector<Definition>& given)
      : out_(std::move(out)), catalog_(roots, true) {
    for (const Definition& d : given) {
      for (const std::string& t : d.types) given_[t] = d.file;
    }
  }

  /// Generates `d`'s headers and its dependencies'. Throws SchemaError or
  /// Error when `d`, or a type it uses, cannot be read or found.
  void generate_file(const Definition& d) {
    MessageSet set;
    set.add_file(d.file);
    bool unknown = false;
    set.load_missing([&](const std::string& name) {
      if (const auto it = given_.find(name); it != given_.end()) {
        set.add_file(it->second);
        return set.has(name);
      }
      const bool found = catalog_.load(set, name);
      unknown = unknown || !found;
      return found;
    });
    try {
      set.resolve();
    } catch (const SchemaError& e) {
      if (!unknown) throw;
      throw SchemaError(
          fmt::format("{} (types are looked for among the files given, the shipped definitions{}{}; "
                      "add a folder of definitions with --include (INCLUDE_DIRS of "
                      "shmbus_generate_messages), SHMBUS_MSG_PATH or AMENT_PREFIX_PATH)",
                      e.what(), catalog_.roots().empty() ? "" : " and ", fmt::join(catalog_.roots(), ", ")));
    }
    for (const MessageDef* m : set.messages()) {
      const bool own = std::find(d.types.begin(), d.types.end(), m->name) != d.types.end();
      // Another FILE's types are its own to write; the shipped ones are
      // shmbus::messages'.
      if (!own && (given_.contains(m->name) || catalog_.locate(m->name).starts_with("<shipped>"))) continue;
      if (!written_.insert(m->name).second) continue;
      write(header_of(*m), generate(*m));
      if (kind_of(*m) == "msg") {
        write(m->name + ".hpp",
              fmt::format("// Generated by shmbus-msggen: {0}'s header by its earlier path.\n#pragma once\n"
                          "#include \"{1}\"\n",
                          m->name, header_of(*m)));
      }
    }
    if (d.kind != "msg") {
      write(fmt::format("{}/{}/{}.hpp", d.package, d.kind, snake_case(d.name)),
            generate_family(d.package + "/" + d.name, d.kind));
    }
  }

 private:
  void write(const std::string& relative, const std::string& text) const {
    write_if_changed(fs::path(out_) / relative, text);
  }

  std::string out_;
  TypeCatalog catalog_;
  std::map<std::string, std::string> given_;  ///< type -> the FILE that defines it
  std::set<std::string> written_;
};

int run(int argc, char** argv) {
  CLI::App app{"generate C++ headers from shmbus message definitions", "shmbus-msggen"};
  std::string out_dir;
  std::vector<std::string> includes;
  std::vector<std::string> files;
  bool keep_going = false;
  app.add_option("--out", out_dir, "directory for <package>/msg/<name>.hpp (and srv/, action/)")->required();
  app.add_option("--include", includes,
                 "a directory of <package>/<Name>.msg or <package>/msg/<Name>.msg files to resolve types from "
                 "(repeatable; then SHMBUS_MSG_PATH and AMENT_PREFIX_PATH)")
      ->allow_extra_args(false);
  app.add_flag("--keep-going", keep_going,
               "a file that cannot be generated is said in one line and skipped: exit 0 (without: exit 2 after the "
               "rest are written)");
  app.add_option("files", files, ".../<package>/<Name>.msg, .srv and .action files to generate")
      ->required()
      ->check(CLI::ExistingFile);
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  std::vector<Definition> given;
  for (const std::string& f : files) {
    Definition d = definition_of(f);
    if (d.kind != "msg" && d.kind != "srv" && d.kind != "action") {
      fmt::print(stderr, "shmbus-msggen: {}: not a .msg, .srv or .action file\n", f);
      return 2;
    }
    given.push_back(std::move(d));
  }
  Generator generator(out_dir, includes, given);
  int failed = 0;
  for (const Definition& d : given) {
    try {
      generator.generate_file(d);
    } catch (const shmbus::Error& e) {
      // One line per file: the rest are still generated.
      fmt::print(stderr, "shmbus-msggen: {}{}\n", e.what(),
                 keep_going ? fmt::format("; {}/{} is not generated", d.package, d.name) : "");
      ++failed;
    }
  }
  return failed != 0 && !keep_going ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A bad definition (SchemaError) exits 2, like every usage error.
  return shmbus::cli::guarded("shmbus-msggen", [&] { return run(argc, argv); });
}
