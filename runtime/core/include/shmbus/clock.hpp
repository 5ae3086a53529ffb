#pragma once
/// @file clock.hpp
/// The clocks of the bus: CLOCK_MONOTONIC stamps the time lists and
/// `MessageInfo::publish_time_ns` (so it is the "now" a monitor's window
/// ends at); CLOCK_REALTIME is the wall stamp in message headers. On the
/// message path CLOCK_MONOTONIC is read through the TSC (stamp_now_ns).

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmbus {

/// CLOCK_MONOTONIC in ns (vDSO, no system call).
inline std::int64_t mono_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Sleeps until mono_now_ns() reaches `deadline_ns` (an absolute
/// CLOCK_MONOTONIC sleep: no drift over many calls). False when SIGINT or
/// SIGTERM (shmbus/stop_signals.hpp) cut it short; a deadline passed
/// returns at once.
bool sleep_until(std::int64_t deadline_ns) noexcept;

/// A CLOCK_REALTIME time in ns as "2026-11-23 10:00:00.123 UTC".
[[nodiscard]] std::string wall_time_text(std::int64_t ns);

namespace detail {

__extension__ typedef unsigned __int128 Uint128;  // NOLINT(modernize-use-using): __extension__ needs a typedef

/// A thread's TSC-to-CLOCK_MONOTONIC conversion (see stamp_now_ns):
/// ns = anchor_ns + ((tsc - anchor_tsc) * mult) >> 32 while tsc - anchor_tsc
/// < period_ticks. All zero (the thread's start, or no usable TSC): every
/// read takes the slow path.
struct TscClock {
  /// The TSC at the last calibration sample (the rate is measured from it).
  std::uint64_t anchor_tsc = 0;
  std::int64_t anchor_ns = 0;      ///< the conversion's value there (slewed)
  std::uint64_t mult = 0;          ///< ns per tick, 32.32 fixed point
  std::uint64_t period_ticks = 0;  ///< 0: the fast path is off
  std::int64_t cal_ns = 0;         ///< clock_gettime at that sample (0: none yet)
};
inline thread_local TscClock tsc_clock{};

/// The slow path: calibrates, re-anchors (every 50 ms at most), or reads
/// CLOCK_MONOTONIC where the TSC is not used.
std::int64_t stamp_now_slow() noexcept;

/// Whether stamp_now_ns reads the TSC, given SHMBUS_CLOCK (`setting`:
/// null, "auto", "tsc" or "system"), whether the CPU's TSC is invariant,
/// and the kernel's clocksource; `error` is the line to print for a setting
/// that cannot be followed (empty: none).
struct ClockChoice {
  bool tsc;
  std::string_view error;
};
ClockChoice choose_stamp_clock(const char* setting, bool invariant_tsc, std::string_view clocksource) noexcept;

}  // namespace detail

/// CLOCK_MONOTONIC in ns, read on the message path (publish stamps, take
/// times, age samples). Where the kernel's clocksource is an invariant TSC
/// (x86-64; SHMBUS_CLOCK=system turns it off), it is the TSC scaled by a
/// per-thread rate that is re-measured against clock_gettime at most every
/// 50 ms and slewed, never stepped back: about 10 ns and no serializing
/// instruction, against 20-25 ns for the vDSO. It stays within a few
/// microseconds of mono_now_ns() (tests/unit/test_clock.cpp bounds it),
/// never goes back within a thread, and reads clock_gettime for the first
/// millisecond of a process while it calibrates (later threads start with
/// the process's rate).
inline std::int64_t stamp_now_ns() noexcept {
#if defined(__x86_64__)
  const detail::TscClock& c = detail::tsc_clock;
  const std::uint64_t d = __rdtsc() - c.anchor_tsc;
  if (d < c.period_ticks) {
    return c.anchor_ns + static_cast<std::int64_t>((static_cast<detail::Uint128>(d) * c.mult) >> 32);
  }
#endif
  return detail::stamp_now_slow();
}

/// Where stamp_now_ns reads from: the TSC, or clock_gettime (no invariant
/// TSC, a clocksource other than tsc, or SHMBUS_CLOCK=system).
[[nodiscard]] bool stamp_clock_uses_tsc() noexcept;

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
