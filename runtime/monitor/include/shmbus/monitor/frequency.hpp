#pragma once
// The channel frequency (docs/architecture.md): over the window W ending now, take the
// stamps in (now - W, now]; n is their count, T1 the earliest, Tn the latest;
// f = (n - 1) / (Tn - T1) for n >= 2, else 0. Also the message period
// statistics over the same stamps.

#include <cstdint>
#include <span>

#include "shmbus/monitor/statistics.hpp"

namespace shmbus::monitor {

/// f = (n-1)/(Tn-T1) in Hz; 0 when n < 2 (no measurable rate).
constexpr double frequency_hz(std::uint64_t n, std::int64_t first_ns, std::int64_t last_ns) noexcept {
  return n >= 2 && last_ns > first_ns ? static_cast<double>(n - 1) / (static_cast<double>(last_ns - first_ns) / 1e9)
                                      : 0.0;
}

/// Period statistics (seconds between consecutive stamps) of ascending
/// stamps [first, last), with Welford's algorithm.
template <typename It>
Summary period_statistics(It first, const It& last) {
  Welford w;
  if (first != last) {
    for (It prev = first++; first != last; prev = first++) w.add(static_cast<double>(*first - *prev) / 1e9);
  }
  return w.summary();
}

/// What one window of a time list says.
struct WindowMeasure {
  double frequency_hz = 0;  ///< (n-1)/(Tn-T1), 0 when n < 2
  std::uint64_t n = 0;      ///< stamps in the window
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
  /// The list wrapped past stamps that were inside the window: f is computed
  /// from what is there, and the time list is too small for the window.
  bool truncated = false;
  Summary period;  ///< seconds between consecutive stamps in the window
};

/// Measures `stamps` (ascending CLOCK_MONOTONIC ns, a whole snapshot of a
/// time list) over (now - window, now]. `list_full`: the list has wrapped.
WindowMeasure measure_window(std::span<const std::int64_t> stamps, std::int64_t now_ns, std::int64_t window_ns,
                             bool list_full) noexcept;

}  // namespace shmbus::monitor
