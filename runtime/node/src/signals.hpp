#pragma once
// SIGINT and SIGTERM as a stop request for every node of the process.

#include "shmbus/wait_set.hpp"

namespace shmbus::detail {

/// Installs the process's stop handlers once (chained to the handlers that
/// were installed before).
void install_stop_signals();

/// Triggered, and left triggered, by the first SIGINT or SIGTERM.
GuardCondition& stop_signal_guard() noexcept;

}  // namespace shmbus::detail
