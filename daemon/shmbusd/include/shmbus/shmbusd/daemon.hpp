#pragma once
// shmbusd as a library: options, the configuration it runs with, and the
// run loop. The program (src/program.cpp) maps its command line onto
// Options; the tests link this library.

#include <optional>
#include <string>

#include "shmbus/config_source.hpp"
#include "shmbus/monitor/settings.hpp"

namespace shmbus::shmbusd {

struct Options {
  ConfigSource source;                        ///< --config / --domain
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
/// Error(kConfig). The files it names (token, TLS) are read where they are
/// used, once: by run(), or by check_config_files.
monitor::MonitorConfig load_config(const Options& options);

/// Reads the token and TLS files `config` names, as run() would: a missing
/// or unusable one throws Error(kConfig) naming it (--check-config).
void check_config_files(const monitor::MonitorConfig& config);

/// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread, for run() to
/// take them: call it before any thread starts, so every thread inherits
/// the mask.
void block_loop_signals();

/// Runs the monitor loop until SIGTERM/SIGINT (SIGHUP reloads). The caller
/// must have blocked SIGHUP, SIGTERM and SIGINT in every thread
/// (block_loop_signals). Logs to the journal when `to_journal`, else to
/// stderr. Returns the exit code.
int run(const Options& options, bool to_journal);

}  // namespace shmbus::shmbusd
