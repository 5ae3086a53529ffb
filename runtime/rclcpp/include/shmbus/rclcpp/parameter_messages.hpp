#pragma once
/// @file parameter_messages.hpp
/// Parameters as rcl_interfaces carries them (the parameter services and
/// /parameter_events): ParameterValue to and from
/// rcl_interfaces::msg::ParameterValue. Target `shmbus::rclcpp`.

#include "rcl_interfaces/msg/parameter.hpp"
#include "rcl_interfaces/msg/parameter_value.hpp"
#include "shmbus/rclcpp/parameter.hpp"

namespace shmbus::rclcpp {

[[nodiscard]] rcl_interfaces::msg::ParameterValue to_message(const ParameterValue& value);
[[nodiscard]] rcl_interfaces::msg::Parameter to_message(const Parameter& parameter);
/// The value a message holds; a type it does not name is not set.
[[nodiscard]] ParameterValue from_message(const rcl_interfaces::msg::ParameterValue& message);

}  // namespace shmbus::rclcpp
