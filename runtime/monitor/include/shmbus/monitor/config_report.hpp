#pragma once
/// @file config_report.hpp
/// What the monitor and the tools say about a configuration: the
/// effective settings and the warnings about a valid file.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/monitor/settings.hpp"

namespace shmbus::monitor {

/// Warnings about a valid configuration ("file:line:column: warning: ...").
/// A window the time list can never cover: window * f3 > time_list_capacity.
std::vector<std::string> config_warnings(const Config& config);

/// The report of `shmbusd --check-config`: effective settings for
/// [defaults], every [[channel]] entry and [monitor].
std::string describe_config(const MonitorConfig& config);

/// "f1=A f2=B f3=C Hz", or that there are none (measured, not alerted).
std::string thresholds_text(const std::optional<std::array<double, 3>>& thresholds);

}  // namespace shmbus::monitor
