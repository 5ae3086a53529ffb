#pragma once
/// @file config_report.hpp
/// The configuration as the monitor and the tools load it (file, then
/// environment, then the command line), and what they say about it: the
/// effective settings and the warnings about a valid file.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/config.hpp"

namespace shmbus::monitor {

/// Where a program's configuration comes from.
struct ConfigSource {
  std::string path;                   ///< --config, else SHMBUS_CONFIG, else the embedded default
  std::optional<std::string> domain;  ///< --domain: overrides the file and SHMBUS_DOMAIN
};

/// Loads the configuration `source` names; SHMBUS_DOMAIN overrides a file's
/// domain, `source.domain` overrides both. Throws Error(kConfig).
Config load_config(const ConfigSource& source);

/// Warnings about a valid configuration ("file:line:column: warning: ...").
/// A window the time list can never cover: window * f3 > time_list_capacity.
std::vector<std::string> config_warnings(const Config& config);

/// The report of `shmbusd --check-config`: effective settings for
/// [defaults], every [[channel]] entry and [monitor].
std::string describe_config(const Config& config);

/// "f1=A f2=B f3=C Hz", or that there are none (measured, not alerted).
std::string thresholds_text(const std::optional<std::array<double, 3>>& thresholds);

}  // namespace shmbus::monitor
