#pragma once
/// @file clock.hpp
/// The clocks of the bus: CLOCK_MONOTONIC stamps the time lists and
/// `MessageInfo::publish_time_ns` (so it is the "now" a monitor's window
/// ends at); CLOCK_REALTIME is the wall stamp in message headers.

#include <time.h>

#include <cstdint>

namespace shmbus {

/// CLOCK_MONOTONIC in ns (vDSO, no system call).
inline std::int64_t mono_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// CLOCK_REALTIME in ns.
inline std::int64_t wall_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace shmbus
