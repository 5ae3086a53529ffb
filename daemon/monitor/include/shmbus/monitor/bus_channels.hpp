#pragma once
/// @file bus_channels.hpp
/// The channels the monitor publishes its findings on, in the domain it
/// watches (typed shmbus_msgs/Alert and shmbus_msgs/Statistics).

#include <string_view>

namespace shmbus::monitor {

inline constexpr const char* kAlertsChannel = "/shmbus/alerts";
inline constexpr const char* kStatisticsChannel = "/shmbus/statistics";

/// The monitor's own channels (and any other under /shmbus/).
constexpr bool is_bus_channel(std::string_view name) noexcept { return name.starts_with("/shmbus/"); }

}  // namespace shmbus::monitor
