#pragma once
// shmbusd as a library: options, the check-config report and the run loop.
// main.cpp only calls daemon_main(); the tests link this library.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/config.hpp"

namespace shmbus::daemon {

struct Options {
  std::string config_path;                    ///< --config, else SHMBUS_CONFIG, else embedded
  std::optional<std::string> domain;          ///< --domain, overrides the file and SHMBUS_DOMAIN
  std::optional<std::string> metrics_listen;  ///< --metrics-listen, overrides the file
  bool foreground = false;
};

/// Loads the configuration the options name, with the overrides applied.
/// Throws Error(kConfig).
Config load_config(const Options& options);

/// Warnings about a valid configuration ("file:line:column: warning: ...").
/// A window the time list can never cover: window * f3 > time_list_capacity.
std::vector<std::string> config_warnings(const Config& config);

/// The report of `shmbusd --check-config`: effective settings for
/// [defaults], every [[channel]] entry and [monitor].
std::string describe_config(const Config& config);

/// Runs the monitor loop until SIGTERM/SIGINT (SIGHUP reloads). The caller
/// must have blocked SIGHUP, SIGTERM and SIGINT in every thread. Returns the
/// exit code.
int run(const Options& options);

/// The whole program: arguments, signals, run. Returns the exit code.
int daemon_main(int argc, char** argv);

}  // namespace shmbus::daemon
