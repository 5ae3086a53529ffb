#pragma once
/// @file parameter.hpp
/// A node's parameters as rclcpp holds them: a name and a typed value
/// (bool, integer, double, string, bytes, and arrays of each). Target
/// `shmbus::rclcpp`.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "shmbus/error.hpp"

namespace shmbus::rclcpp {

/// rcl_interfaces/msg/ParameterType's values.
enum ParameterType : std::uint8_t {
  PARAMETER_NOT_SET = 0,
  PARAMETER_BOOL = 1,
  PARAMETER_INTEGER = 2,
  PARAMETER_DOUBLE = 3,
  PARAMETER_STRING = 4,
  PARAMETER_BYTE_ARRAY = 5,
  PARAMETER_BOOL_ARRAY = 6,
  PARAMETER_INTEGER_ARRAY = 7,
  PARAMETER_DOUBLE_ARRAY = 8,
  PARAMETER_STRING_ARRAY = 9,
};

/// rclcpp's name of a type ("integer", "string_array", ...).
[[nodiscard]] std::string to_string(ParameterType type);

/// One value of a ParameterType.
class ParameterValue {
 public:
  using Variant =
      std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<std::uint8_t>,
                   std::vector<bool>, std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>>;

  ParameterValue() = default;
  // NOLINTBEGIN(google-explicit-constructor): a value converts as rclcpp's does
  ParameterValue(bool v) : value_(v) {}
  ParameterValue(int v) : value_(std::int64_t{v}) {}
  ParameterValue(std::int64_t v) : value_(v) {}
  ParameterValue(float v) : value_(double{v}) {}
  ParameterValue(double v) : value_(v) {}
  ParameterValue(const char* v) : value_(std::string(v)) {}
  ParameterValue(std::string v) : value_(std::move(v)) {}
  ParameterValue(std::vector<std::uint8_t> v) : value_(std::move(v)) {}
  ParameterValue(std::vector<bool> v) : value_(std::move(v)) {}
  ParameterValue(const std::vector<int>& v) : value_(std::vector<std::int64_t>(v.begin(), v.end())) {}
  ParameterValue(std::vector<std::int64_t> v) : value_(std::move(v)) {}
  ParameterValue(std::vector<double> v) : value_(std::move(v)) {}
  ParameterValue(std::vector<std::string> v) : value_(std::move(v)) {}
  // NOLINTEND(google-explicit-constructor)

  [[nodiscard]] ParameterType get_type() const noexcept { return static_cast<ParameterType>(value_.index()); }
  [[nodiscard]] const Variant& variant() const noexcept { return value_; }

  /// The value as `T` (bool, an integer type, double or float, std::string
  /// and the vectors above). Throws Error(kTypeMismatch) naming both types
  /// when it holds another type.
  template <typename T>
  [[nodiscard]] T get() const {
    if constexpr (std::is_same_v<T, bool>) {
      return as<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(as<std::int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(as<double>());
    } else if constexpr (std::is_same_v<T, std::vector<int>>) {
      const auto& v = as<std::vector<std::int64_t>>();
      return std::vector<int>(v.begin(), v.end());
    } else {
      return as<T>();
    }
  }

  bool operator==(const ParameterValue&) const = default;

 private:
  template <typename T>
  [[nodiscard]] const T& as() const {
    if (const T* v = std::get_if<T>(&value_)) return *v;
    throw Error(Errc::kTypeMismatch, "parameter value is " + to_string(get_type()) + ", not " +
                                         to_string(static_cast<ParameterType>(Variant(T{}).index())));
  }
  Variant value_;
};

/// The value as rclcpp prints it (`true`, `3`, `1.5`, `[1, 2]`, text as is).
[[nodiscard]] std::string to_string(const ParameterValue& value);

/// A command line's value (`-p name:=value`) read as ROS 2 reads it (YAML
/// scalars and flow sequences): `true`/`false`, an integer, a double,
/// `[a, b]` of one of those or of strings; anything else is a string.
[[nodiscard]] ParameterValue parse_parameter_value(std::string_view text);

/// A named value (rclcpp::Parameter).
class Parameter {
 public:
  Parameter() = default;
  explicit Parameter(std::string name) : name_(std::move(name)) {}
  Parameter(std::string name, ParameterValue value) : name_(std::move(name)), value_(std::move(value)) {}

  [[nodiscard]] const std::string& get_name() const noexcept { return name_; }
  [[nodiscard]] ParameterType get_type() const noexcept { return value_.get_type(); }
  [[nodiscard]] std::string get_type_name() const { return to_string(get_type()); }
  [[nodiscard]] const ParameterValue& get_parameter_value() const noexcept { return value_; }
  template <typename T>
  [[nodiscard]] T get_value() const {
    return value_.get<T>();
  }
  [[nodiscard]] bool as_bool() const { return get_value<bool>(); }
  [[nodiscard]] std::int64_t as_int() const { return get_value<std::int64_t>(); }
  [[nodiscard]] double as_double() const { return get_value<double>(); }
  [[nodiscard]] std::string as_string() const { return get_value<std::string>(); }
  [[nodiscard]] std::vector<std::uint8_t> as_byte_array() const { return get_value<std::vector<std::uint8_t>>(); }
  [[nodiscard]] std::vector<bool> as_bool_array() const { return get_value<std::vector<bool>>(); }
  [[nodiscard]] std::vector<std::int64_t> as_integer_array() const { return get_value<std::vector<std::int64_t>>(); }
  [[nodiscard]] std::vector<double> as_double_array() const { return get_value<std::vector<double>>(); }
  [[nodiscard]] std::vector<std::string> as_string_array() const { return get_value<std::vector<std::string>>(); }
  [[nodiscard]] std::string value_to_string() const { return to_string(value_); }

  bool operator==(const Parameter&) const = default;

 private:
  std::string name_;
  ParameterValue value_;
};

/// What set_parameters answers for one parameter (rcl_interfaces'
/// SetParametersResult).
struct SetParametersResult {
  bool successful = false;
  std::string reason;
};

}  // namespace shmbus::rclcpp
