#pragma once
/// @file clock.hpp
/// The clocks of the bus: CLOCK_MONOTONIC stamps the time lists and
/// `MessageInfo::publish_time_ns` (so it is the "now" a monitor's window
/// ends at); CLOCK_REALTIME is the wall stamp in message headers.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace shmbus {

/// CLOCK_MONOTONIC in ns (vDSO, no system call).
inline std::int64_t mono_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// `start + timeout`, saturated: a timeout of nanoseconds::max() (or any
/// that would overflow) waits forever instead of wrapping into the past.
inline std::int64_t saturating_deadline(std::int64_t start, std::chrono::nanoseconds timeout) noexcept {
  const std::int64_t t = timeout.count() > 0 ? timeout.count() : 0;
  std::int64_t deadline = 0;
  if (__builtin_add_overflow(start, t, &deadline)) return INT64_MAX;
  return deadline;
}

/// CLOCK_REALTIME in ns.
inline std::int64_t wall_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace shmbus
