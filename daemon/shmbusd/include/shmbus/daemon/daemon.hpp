#pragma once
// shmbusd as a library: options, the configuration it runs with, and the
// run loop. main.cpp only calls daemon_main(); the tests link this library.

#include <optional>
#include <string>

#include "shmbus/cli/config_source.hpp"
#include "shmbus/monitor/settings.hpp"

namespace shmbus::daemon {

struct Options {
  cli::ConfigSource source;                   ///< --config / --domain
  std::optional<std::string> metrics_listen;  ///< --metrics-listen, overrides the file
  std::optional<std::string> token_file;      ///< --token-file, overrides the file
  std::optional<std::string> tls_cert;        ///< --tls-cert, overrides the file
  std::optional<std::string> tls_key;         ///< --tls-key, overrides the file
  bool foreground = false;
  /// --roudi: run and supervise iceoryx's RouDi for the iceoryx channels.
  bool roudi = false;
};

/// The configuration the options name, with the overrides applied and the
/// daemon's own settings (metrics_listen, webhook) checked. Throws
/// Error(kConfig).
monitor::MonitorConfig load_config(const Options& options);

/// Runs the monitor loop until SIGTERM/SIGINT (SIGHUP reloads). The caller
/// must have blocked SIGHUP, SIGTERM and SIGINT in every thread. Logs to
/// the journal when `to_journal`, else to stderr. Returns the exit code.
int run(const Options& options, bool to_journal);

/// The whole program: arguments, signals, run. Returns the exit code.
int daemon_main(int argc, char** argv);

}  // namespace shmbus::daemon
