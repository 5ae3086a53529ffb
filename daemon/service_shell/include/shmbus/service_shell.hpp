#pragma once
/// @file service_shell.hpp
/// What every long-running shmbus program shares: its log (the journal
/// under systemd, stderr otherwise) and its life under systemd (READY,
/// STATUS, the watchdog, STOPPING) until SIGINT or SIGTERM; and the token
/// their HTTP listeners ask for.

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace shmbus::service_shell {

/// A logger named `program`: to the journal when `to_journal`, else to
/// stderr; info and above, flushed at each line.
std::shared_ptr<spdlog::logger> make_logger(const std::string& program, bool to_journal);

/// Whether stderr is the journal (systemd's JOURNAL_STREAM). Call before
/// any thread starts.
bool stderr_is_journal();

/// Tells systemd READY once, then `status()` as STATUS every second and
/// the watchdog at half its period, until a stop signal
/// (install_stop_signals, shmbus/stop_signals.hpp); then STOPPING.
void run_until_stopped(const std::function<std::string()>& status);

/// The token in the file at `path` (trailing white space dropped); "" for
/// an empty path (no token). Throws Error(kConfig) naming the file and
/// `option` when it cannot be read or is empty.
std::string read_token(const std::string& path, std::string_view option = "--token-file");

/// Whether a client's token is the configured one, in constant time (the
/// time taken does not tell how much matched).
bool same_token(std::string_view a, std::string_view b) noexcept;

/// Whether an HTTP request carries `token`: "Authorization: Bearer TOKEN",
/// or a token=TOKEN pair (percent-encoded) in the query of its `target`
/// (a browser's address, an EventSource, a WebSocket client that cannot
/// set headers). Compared in constant time. shmbusd's listener and the
/// bridge's ask it alike.
bool carries_token(std::string_view target, std::string_view authorization, std::string_view token);

}  // namespace shmbus::service_shell
