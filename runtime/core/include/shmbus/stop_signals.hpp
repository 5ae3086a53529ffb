#pragma once
/// @file stop_signals.hpp
/// SIGINT and SIGTERM as a stop request for the whole process: the one
/// owner of those two signals, for nodes (shmbus::Node, Executor) and for
/// the programs (shmbus::cli) alike. A program then leaves through its
/// destructors and unregisters its endpoints.

#include <csignal>
#include <initializer_list>

#include "shmbus/wait_set.hpp"

namespace shmbus {

/// Installs the process's handlers once (later calls do nothing), chained
/// to the handlers installed before. No SA_RESTART: a blocking system call
/// the signal interrupts returns EINTR, so a program blocked in one sees
/// the request.
void install_stop_signals();

/// True once SIGINT or SIGTERM arrived after install_stop_signals().
[[nodiscard]] bool stop_signalled() noexcept;

/// Triggered, and left triggered, by the first SIGINT or SIGTERM: attach
/// it to a WaitSet to wake on a stop request.
GuardCondition& stop_signal_guard() noexcept;

/// A signal set of `signals` (for sigprocmask, sigtimedwait).
inline sigset_t signal_set(std::initializer_list<int> signals) noexcept {
  sigset_t set;
  ::sigemptyset(&set);
  for (const int s : signals) ::sigaddset(&set, s);
  return set;
}

}  // namespace shmbus
