// shmbus-msggen: generates C++ headers from message definitions (.msg).
//
//   shmbus-msggen --out DIR [--include ROOT]... FILE.msg...
//
// FILE is .../<package>/<Name>.msg; its header goes to DIR/<package>/<Name>.hpp.
// A service .../<package>/<Name>.srv gives <Name>_Request.hpp,
// <Name>_Response.hpp and <Name>.hpp (the service: its Request and Response).
// An action .../<package>/<Name>.action gives <Name>_Goal.hpp,
// <Name>_Result.hpp and <Name>_Feedback.hpp. FILE may also be in ROS 2's
// share layout (.../<package>/msg/<Name>.msg). Messages it uses are looked
// up among the FILEs, the shipped definitions and under each ROOT
// (ROOT/<package>/<Name>.msg or ROOT/<package>/msg/<Name>.msg), read only
// as needed. Run from CMake by shmbus_generate_messages().
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
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

/// The trailing sequence a generated struct can hold: a variable message's
/// last field, a sequence of fixed-layout elements, when no other field is
/// variable. nullptr for a fixed message. Other variable messages are
/// refused (SchemaError, naming the field).
const Field* generated_tail(const MessageDef& m) {
  if (!m.variable) return nullptr;
  for (const Field& f : m.fields) {
    const bool tail = &f == &m.fields.back() && f.unbounded && !f.element_variable();
    if ((f.unbounded || f.element_variable()) && !tail) {
      throw SchemaError(fmt::format(
          "{}:{}: {}.{} ({}): shmbus-msggen generates C++ for fixed layouts and one trailing sequence of them; "
          "read and write this type through its JSON or CDR codec (shmtool pub/echo, the bridge, Python)",
          m.source, f.line, m.name, f.name, f.type()));
    }
  }
  return &m.fields.back();
}

/// The members that reach a generated struct's trailing sequence `t` (a
/// struct of `size` bytes named `type`).
std::string tail_accessors(const Field& t, std::uint32_t size, const std::string& type) {
  const std::string e = cpp_element(t);
  return fmt::format(
      "\n  static constexpr std::size_t kTailElementSize = {2};\n"
      "  /// Where resize_{0}() puts the elements: right after the struct.\n"
      "  static constexpr std::size_t kTailOffset = ({4} + alignof({1}) - 1) / alignof({1}) * alignof({1});\n"
      "  /// Bytes of a message with `count` elements of {0}.\n"
      "  static constexpr std::size_t wire_size(std::size_t count) noexcept {{\n"
      "    return kTailOffset + count * kTailElementSize;\n  }}\n"
      "  /// {0} holds `count` elements, right after the struct (a message of\n"
      "  /// wire_size(count) bytes).\n"
      "  void resize_{0}(std::uint32_t count) noexcept {{\n"
      "    {0}_offset = count == 0 ? 0 : static_cast<std::uint32_t>(kTailOffset);\n"
      "    {0}_count = count;\n  }}\n"
      "  /// True when {0}'s elements lie in a message of `size` bytes, after\n"
      "  /// the struct and aligned (check a message from elsewhere before {0}()).\n"
      "  [[nodiscard]] bool {0}_valid(std::size_t size) const noexcept {{\n"
      "    return {0}_count == 0 || ({0}_offset >= sizeof({3}) && {0}_offset % alignof({1}) == 0 &&\n"
      "                              {0}_offset <= size && ({0}_count <= (size - {0}_offset) / kTailElementSize));\n"
      "  }}\n"
      "  /// The {0}_count elements at {0}_offset in the message.\n"
      "  std::span<{1}> {0}() noexcept {{\n"
      "    return {{reinterpret_cast<{1}*>(reinterpret_cast<std::byte*>(this) + {0}_offset), {0}_count}};\n  }}\n"
      "  std::span<const {1}> {0}() const noexcept {{\n"
      "    return {{reinterpret_cast<const {1}*>(reinterpret_cast<const std::byte*>(this) + {0}_offset), "
      "{0}_count}};\n  }}\n",
      t.name, e, t.element_size, type, size);
}

std::string generate(const MessageDef& m) {
  const std::string text = MessageSet::canonical_text(m);
  const Field* const tail = generated_tail(m);
  const auto slash = m.name.find('/');
  const std::string package = m.name.substr(0, slash);
  const std::string type = m.name.substr(slash + 1);
  std::string h;
  h += fmt::format("// Generated by shmbus-msggen from {}.msg. Do not edit.\n#pragma once\n\n", m.name);
  h += "#include <array>\n#include <bit>\n#include <cstddef>\n#include <cstdint>\n#include <span>\n"
       "#include <type_traits>\n\n#include \"shmbus/fixed_string.hpp\"\n";
  std::set<std::string> deps;
  for (const Field& f : m.fields) {
    if (f.kind == FieldKind::kMessage) deps.insert(f.message->name);
  }
  for (const auto& d : deps) h += fmt::format("#include \"{}.hpp\"\n", d);
  h += fmt::format("\nnamespace {} {{\n\n", package);
  h += fmt::format(
      "/// {} (schema hash {:016x}). Initialise it with `{} m{{}};`: its\n"
      "/// padding members are then zero, and fields have their defaults.{}\n",
      m.name, hash_text(text), type,
      tail != nullptr ? fmt::format(" Its `{0}` elements follow the struct in the message: publish\n/// "
                                    "wire_size(n) bytes through a loan, resize_{0}(n) and fill {0}().",
                                    tail->name)
                      : "");
  h += fmt::format("struct {} {{\n", type);
  h += fmt::format("  static constexpr const char* kTypeName = \"{}\";\n", m.name);
  h += fmt::format("  static constexpr std::uint64_t kTypeHash = 0x{:016x}ULL;\n", hash_text(text));
  h += fmt::format("  static constexpr const char* kSchema = R\"shmbus_schema({})shmbus_schema\";\n", text);
  for (const Constant& c : m.constants) {
    h += fmt::format("  static constexpr {} {} = {};\n", c.is_string ? "const char*" : cpp_primitive(c.primitive),
                     c.name, cpp_constant_value(c));
  }
  h += "\n";
  std::uint32_t at = 0;
  int pad = 0;
  const auto pad_to = [&](std::uint32_t offset) {
    if (offset > at) h += fmt::format("  std::uint8_t shmbus_pad{}[{}];\n", pad++, offset - at);
    at = offset;
  };
  for (const Field& f : m.fields) {
    pad_to(f.offset);
    if (f.unbounded) {
      h +=
          fmt::format("  std::uint32_t {0}_offset;  ///< where {0}'s elements are, from the message's start\n", f.name);
      h += fmt::format("  std::uint32_t {}_count;\n", f.name);
    } else if (f.array_length != 0) {
      h += fmt::format("  std::array<{}, {}> {}{};\n", cpp_element(f), f.array_length, f.name, cpp_default(f));
    } else {
      h += fmt::format("  {} {}{};\n", cpp_element(f), f.name, cpp_default(f));
    }
    at += f.fixed_size();
  }
  pad_to(m.size);
  if (tail != nullptr) h += tail_accessors(*tail, m.size, type);
  h += "};\n\n";
  h += "static_assert(std::endian::native == std::endian::little, \"shmbus messages are little-endian\");\n";
  h += "static_assert(sizeof(bool) == 1, \"the schema's bool is one byte\");\n";
  h += fmt::format("static_assert(std::is_trivially_copyable_v<{0}> && std::is_standard_layout_v<{0}>);\n", type);
  h += fmt::format("static_assert(sizeof({}) == {}, \"size must match the schema layout\");\n", type, m.size);
  h += fmt::format("static_assert(alignof({}) == {}, \"alignment must match the schema layout\");\n", type, m.align);
  for (const Field& f : m.fields) {
    const std::string member = f.unbounded ? f.name + "_offset" : f.name;
    h += fmt::format("static_assert(offsetof({}, {}) == {});\n", type, member, f.offset);
  }
  h += fmt::format("\n}}  // namespace {}\n", package);
  // ROS 2's C++ name of the type too: pkg::msg::Type.
  h += fmt::format("\nnamespace {0}::msg {{\nusing {1} = {0}::{1};\n}}  // namespace {0}::msg\n", package, type);
  return h;
}

/// The header of a service `package/Name`: a struct naming its Request and
/// Response messages (what TypedServiceServer/TypedServiceClient take).
std::string generate_service(const std::string& full) {
  const auto slash = full.find('/');
  const std::string package = full.substr(0, slash);
  const std::string type = full.substr(slash + 1);
  const std::string request = shmbus::service_request_type(type);
  const std::string response = shmbus::service_response_type(type);
  std::string h;
  h += fmt::format("// Generated by shmbus-msggen from {}.srv. Do not edit.\n#pragma once\n\n", full);
  h += fmt::format("#include \"{0}/{1}.hpp\"\n#include \"{0}/{2}.hpp\"\n\n", package, request, response);
  h += fmt::format("namespace {} {{\n\n/// The service {}: a {} answered by a {}.\n", package, full, request, response);
  h += fmt::format("struct {} {{\n  static constexpr const char* kServiceType = \"{}\";\n", type, full);
  h += fmt::format("  using Request = {};\n  using Response = {};\n}};\n", request, response);
  h += fmt::format("\n}}  // namespace {}\n", package);
  // ROS 2's C++ name of the service too: pkg::srv::Type.
  h += fmt::format("\nnamespace {0}::srv {{\nusing {1} = {0}::{1};\n}}  // namespace {0}::srv\n", package, type);
  return h;
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

int run(int argc, char** argv) {
  CLI::App app{"generate C++ headers from shmbus message definitions", "shmbus-msggen"};
  std::string out_dir;
  std::vector<std::string> includes;
  std::vector<std::string> files;
  app.add_option("--out", out_dir, "directory for <package>/<Name>.hpp")->required();
  app.add_option("--include", includes,
                 "a directory of <package>/<Name>.msg or <package>/msg/<Name>.msg files to resolve types from "
                 "(repeatable)")
      ->allow_extra_args(false);
  app.add_option("files", files, ".../<package>/<Name>.msg, .srv and .action files to generate")
      ->required()
      ->check(CLI::ExistingFile);
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  {
    MessageSet set;
    for (const auto& f : files) set.add_file(f);
    // The types they use, read from the roots only as needed.
    const TypeCatalog catalog(includes, false);
    set.load_missing([&](const std::string& name) { return catalog.load(set, name); });
    set.resolve();
    for (const auto& f : files) {
      const fs::path p(f);
      // <pkg>/<Name>.msg, or ROS 2's share layout <pkg>/msg/<Name>.msg.
      fs::path folder = p.parent_path();
      if (const auto kind = folder.filename(); kind == "msg" || kind == "srv" || kind == "action") {
        folder = folder.parent_path();
      }
      const std::string package = folder.filename().string();
      const fs::path dir = fs::path(out_dir) / package;
      const std::string full = package + "/" + p.stem().string();
      if (p.extension() == ".msg") {
        write_if_changed(dir / (p.stem().string() + ".hpp"), generate(*set.find(full)));
        continue;
      }
      const std::vector<std::string> parts =
          p.extension() == ".srv"
              ? std::vector<std::string>{shmbus::service_request_type(full), shmbus::service_response_type(full)}
              : std::vector<std::string>{full + "_Goal", full + "_Result", full + "_Feedback"};
      for (const std::string& m : parts) {
        write_if_changed(dir / (m.substr(m.find('/') + 1) + ".hpp"), generate(*set.find(m)));
      }
      if (p.extension() == ".srv") write_if_changed(dir / (p.stem().string() + ".hpp"), generate_service(full));
    }
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A bad definition (SchemaError) exits 2, like every usage error.
  return shmbus::cli::guarded("shmbus-msggen", [&] { return run(argc, argv); });
}
