#pragma once
/// @file service_shell.hpp
/// What every long-running shmbus program shares: its log (the journal
/// under systemd, stderr otherwise) and its life under systemd (READY,
/// STATUS, the watchdog, STOPPING) until SIGINT or SIGTERM.

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <string>

namespace shmbus::service_shell {

/// A logger named `program`: to the journal when `to_journal`, else to
/// stderr; info and above, flushed at each line.
std::shared_ptr<spdlog::logger> make_logger(const std::string& program, bool to_journal);

/// Whether stderr is the journal (systemd's JOURNAL_STREAM). Call before
/// any thread starts.
bool stderr_is_journal();

/// Tells systemd READY once, then `status()` as STATUS every second and
/// the watchdog at half its period, until a stop signal
/// (cli::install_stop_handlers); then STOPPING.
void run_until_stopped(const std::function<std::string()>& status);

}  // namespace shmbus::service_shell
