#pragma once
/// @file wait_set.hpp
/// Blocking on several subscribers (and guard conditions) at once.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "shmbus/subscriber.hpp"

namespace shmbus {

/// Wakes a WaitSet from another thread or from a signal handler (stop
/// requests, new work). It stays triggered until reset(): a trigger that
/// comes before the wait is not lost. Thread-safety: trigger() from any
/// thread and is async-signal-safe; reset() by the waiting side.
class GuardCondition {
 public:
  GuardCondition() = default;
  GuardCondition(const GuardCondition&) = delete;
  GuardCondition& operator=(const GuardCondition&) = delete;

  /// Marks the condition triggered and wakes every WaitSet sleeping on it.
  void trigger() noexcept;
  [[nodiscard]] bool triggered() const noexcept { return triggered_.load(std::memory_order_acquire); }
  /// Clears the condition; returns whether it was triggered.
  bool reset() noexcept { return triggered_.exchange(false, std::memory_order_acq_rel); }

  /// Internal: the futex word a wait sleeps on (bumped by every trigger).
  [[nodiscard]] std::atomic<std::uint32_t>& word() noexcept { return word_; }

 private:
  std::atomic<bool> triggered_{false};
  std::atomic<std::uint32_t> word_{0};
};

/// Waits until any attached subscriber has something to take or an attached
/// guard condition is triggered. Sleeps in one futex_waitv system call on
/// all channels' futex words and the guards' words (Linux 5.16+), so an
/// idle wait set uses no CPU; on older kernels, or with more than 128
/// words, it polls every 1 ms.
/// Thread-safety: use from one thread; what is attached must outlive it.
class WaitSet {
 public:
  /// Adds `subscriber`; returns its index in ready lists.
  std::size_t attach(Subscriber& subscriber);
  /// Adds `guard`: a wait returns once it is triggered.
  void attach(GuardCondition& guard);
  /// Removes everything attached.
  void clear() noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return subscribers_.size(); }

  /// Blocks until at least one subscriber is pending, a guard is triggered
  /// or `timeout` passes. Fills `ready` with the indices of pending
  /// subscribers; returns how many (0 on timeout or for a guard alone: the
  /// caller checks its guards).
  std::size_t wait(std::chrono::nanoseconds timeout, std::vector<std::size_t>& ready);

 private:
  std::vector<Subscriber::Impl*> subscribers_;
  std::vector<GuardCondition*> guards_;
};

}  // namespace shmbus
