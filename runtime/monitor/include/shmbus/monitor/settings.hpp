#pragma once
/// @file settings.hpp
/// shmbusd's own section of the configuration file, `[monitor]`, and the
/// configuration shmbusd and the tools load: the transport's settings and
/// this section, from one file (shmbus/config_file.hpp).

#include <chrono>
#include <cstdint>
#include <string>

#include "shmbus/config.hpp"
#include "shmbus/config_source.hpp"

namespace shmbus::monitor {

/// [monitor]: how shmbusd scans and where it reports.
struct MonitorSettings {
  std::chrono::nanoseconds scan_period = std::chrono::milliseconds(100);
  std::uint32_t debounce_scans = 3;
  std::string metrics_listen = "127.0.0.1:9464";
  std::chrono::nanoseconds statistics_period = std::chrono::seconds(1);
  std::string webhook;     ///< empty: none
  std::string token_file;  ///< a file holding the token HTTP clients must present; empty: none
  std::string tls_cert;    ///< PEM certificate chain: the listener serves https:// and wss:// only
  std::string tls_key;     ///< its PEM private key
};

/// The [monitor] section of `file` (its defaults when it has none). Throws
/// Error(kConfig) "file:line:column: what" for a bad or unknown key.
MonitorSettings read_monitor_settings(const ConfigFile& file);

/// What a monitor runs with.
struct MonitorConfig {
  Config config;            ///< the transport's settings: domain, [defaults], [[channel]]
  MonitorSettings monitor;  ///< [monitor]
};

/// Loads `source` (ConfigFile::load) with its [monitor] section.
MonitorConfig load_monitor_config(const ConfigSource& source);

}  // namespace shmbus::monitor
