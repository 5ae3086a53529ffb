#pragma once
/// @file bus_channels.hpp
/// The channels shmbus's own programs publish on, in the domain they serve:
/// everything under /shmbus/. shmbusd publishes its findings (typed
/// shmbus_msgs/Alert and shmbus_msgs/Statistics); the recorder in snapshot
/// mode listens to the alerts; `shmtool play --clock` publishes the
/// recording's time (shmbus_msgs/Clock), which the bridge offers Foxglove
/// as its time. shmbusd publishes its web page's address on /shmbus/web
/// (shmbus_msgs/String, once at start) for `shmtool list` to print.

#include <string_view>

namespace shmbus {

inline constexpr const char* kAlertsChannel = "/shmbus/alerts";
inline constexpr const char* kStatisticsChannel = "/shmbus/statistics";
inline constexpr const char* kClockChannel = "/shmbus/clock";
inline constexpr const char* kWebChannel = "/shmbus/web";

/// The programs' own channels (and any other under /shmbus/).
constexpr bool is_bus_channel(std::string_view name) noexcept { return name.starts_with("/shmbus/"); }

}  // namespace shmbus
