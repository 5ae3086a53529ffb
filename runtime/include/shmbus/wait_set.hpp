#pragma once
/// @file wait_set.hpp
/// Blocking on several subscribers at once.

#include <chrono>
#include <cstddef>
#include <vector>

#include "shmbus/subscriber.hpp"

namespace shmbus {

/// Waits until any attached subscriber has something to take. Sleeps in
/// one futex_waitv system call on all channels' futex words (Linux 5.16+),
/// so an idle wait set uses no CPU; on older kernels it polls every 1 ms.
/// Thread-safety: use from one thread; the subscribers must outlive it.
class WaitSet {
 public:
  /// Adds `subscriber`; returns its index in ready lists.
  std::size_t attach(Subscriber& subscriber);
  [[nodiscard]] std::size_t size() const noexcept { return subscribers_.size(); }

  /// Blocks until at least one subscriber is pending or `timeout` passes.
  /// Fills `ready` with the indices of pending subscribers; returns how many
  /// (0 on timeout).
  std::size_t wait(std::chrono::nanoseconds timeout, std::vector<std::size_t>& ready);

 private:
  std::vector<Subscriber::Impl*> subscribers_;
};

}  // namespace shmbus
