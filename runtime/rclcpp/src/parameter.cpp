#include "shmbus/rclcpp/parameter.hpp"

#include "shmbus/rclcpp/parameter_messages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace shmbus::rclcpp {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<bool> as_bool(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

std::optional<std::int64_t> as_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string t(s);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> as_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

/// A YAML scalar as text: quotes taken off.
std::string unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    return std::string(s.substr(1, s.size() - 2));
  }
  return std::string(s);
}

/// `[a, b]` split at its commas (no nesting: ROS 2 parameters are flat).
std::vector<std::string_view> items(std::string_view list) {
  std::vector<std::string_view> out;
  list = trim(list.substr(1, list.size() - 2));
  if (list.empty()) return out;
  while (true) {
    const auto comma = list.find(',');
    out.push_back(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    list = list.substr(comma + 1);
  }
  return out;
}

template <typename T, typename F>
std::optional<std::vector<T>> all(const std::vector<std::string_view>& xs, F convert) {
  std::vector<T> out;
  for (const std::string_view x : xs) {
    auto v = convert(x);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace

std::string to_string(ParameterType type) {
  switch (type) {
    case PARAMETER_NOT_SET:
      return "not set";
    case PARAMETER_BOOL:
      return "bool";
    case PARAMETER_INTEGER:
      return "integer";
    case PARAMETER_DOUBLE:
      return "double";
    case PARAMETER_STRING:
      return "string";
    case PARAMETER_BYTE_ARRAY:
      return "byte_array";
    case PARAMETER_BOOL_ARRAY:
      return "bool_array";
    case PARAMETER_INTEGER_ARRAY:
      return "integer_array";
    case PARAMETER_DOUBLE_ARRAY:
      return "double_array";
    case PARAMETER_STRING_ARRAY:
      return "string_array";
  }
  return "unknown";
}

std::string to_string(const ParameterValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return "not set";
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<V, std::vector<bool>>) {
          std::vector<std::string> words;
          words.reserve(v.size());
          for (const bool b : v) words.emplace_back(b ? "true" : "false");
          return fmt::format("[{}]", fmt::join(words, ", "));
        } else if constexpr (std::is_arithmetic_v<V>) {
          return fmt::format("{}", v);
        } else {
          return fmt::format("[{}]", fmt::join(v, ", "));
        }
      },
      value.variant());
}

ParameterValue parse_parameter_value(std::string_view text) {
  const std::string_view t = trim(text);
  if (auto b = as_bool(t)) return *b;
  if (auto i = as_int(t)) return *i;
  if (auto d = as_double(t)) return *d;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    const std::vector<std::string_view> xs = items(t);
    if (xs.empty()) return std::vector<std::string>{};
    if (auto b = all<bool>(xs, as_bool)) return *b;
    if (auto i = all<std::int64_t>(xs, as_int)) return *i;
    if (auto d = all<double>(xs, as_double)) return *d;
    std::vector<std::string> s;
    s.reserve(xs.size());
    for (const std::string_view x : xs) s.push_back(unquote(x));
    return s;
  }
  return unquote(t);
}

rcl_interfaces::msg::ParameterValue to_message(const ParameterValue& value) {
  rcl_interfaces::msg::ParameterValue m;
  m.type = value.get_type();
  std::visit(
      [&m](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) {
          m.bool_value = v;
        } else if constexpr (std::is_same_v<V, std::int64_t>) {
          m.integer_value = v;
        } else if constexpr (std::is_same_v<V, double>) {
          m.double_value = v;
        } else if constexpr (std::is_same_v<V, std::string>) {
          m.string_value = v;
        } else if constexpr (std::is_same_v<V, std::vector<std::uint8_t>>) {
          m.byte_array_value = v;
        } else if constexpr (std::is_same_v<V, std::vector<bool>>) {
          m.bool_array_value = v;
        } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
          m.integer_array_value = v;
        } else if constexpr (std::is_same_v<V, std::vector<double>>) {
          m.double_array_value = v;
        } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          m.string_array_value = v;
        }
      },
      value.variant());
  return m;
}

/// The value a message holds; a type it does not name is not set.
ParameterValue from_message(const rcl_interfaces::msg::ParameterValue& m) {
  switch (m.type) {
    case PARAMETER_BOOL:
      return m.bool_value;
    case PARAMETER_INTEGER:
      return m.integer_value;
    case PARAMETER_DOUBLE:
      return m.double_value;
    case PARAMETER_STRING:
      return m.string_value;
    case PARAMETER_BYTE_ARRAY:
      return m.byte_array_value;
    case PARAMETER_BOOL_ARRAY:
      return m.bool_array_value;
    case PARAMETER_INTEGER_ARRAY:
      return m.integer_array_value;
    case PARAMETER_DOUBLE_ARRAY:
      return m.double_array_value;
    case PARAMETER_STRING_ARRAY:
      return m.string_array_value;
    default:
      return {};
  }
}

rcl_interfaces::msg::Parameter to_message(const Parameter& p) {
  rcl_interfaces::msg::Parameter m;
  m.name = p.get_name();
  m.value = to_message(p.get_parameter_value());
  return m;
}

}  // namespace shmbus::rclcpp
