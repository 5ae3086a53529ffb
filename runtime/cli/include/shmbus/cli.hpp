#pragma once
// What every program of the project does the same way: command-line
// parsing with the project's exit codes (--help prints and exits 0; a usage
// error prints one line naming the fix and exits 2; CLI11's own exit codes
// are 100+), errors turned into one stderr line and an exit code, and
// SIGINT/SIGTERM turned into a stop request.

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "shmbus/error.hpp"
#include "shmbus/stop_signals.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace shmbus::cli {

/// Parses; returns the exit code to leave with, or nullopt to go on.
/// Every program answers --version with the project's version. The caller
/// builds `app` with <CLI/CLI.hpp>, which only the programs' own sources
/// include (CLI11 compiles its validators into every source that does).
std::optional<int> parse(CLI::App& app, int argc, char** argv);

/// Runs a program's body: an Error becomes "PROGRAM: message" on stderr and
/// its exit code (2 config/usage, 3 not found, 1 otherwise); anything else
/// thrown exits 1.
template <typename Body>
int guarded(const char* program, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "%s: unexpected error\n", program);
    return 1;
  }
}

/// fork(); the child asks for `death_signal` when the parent ends, however
/// it ends (SIGKILL too), so nothing a program starts outlives it, and
/// leaves at once (exit 1) if the parent ended before it asked.
inline pid_t fork_child(int death_signal) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) ::_exit(1);
  }
  return pid;
}

/// SIGINT and SIGTERM request a stop (stop_requested()) instead of ending
/// the process (shmbus/stop_signals.hpp owns them, for nodes too).
inline void install_stop_handlers() { install_stop_signals(); }

/// True once SIGINT or SIGTERM arrived (after install_stop_handlers()).
inline bool stop_requested() noexcept { return stop_signalled(); }

}  // namespace shmbus::cli
