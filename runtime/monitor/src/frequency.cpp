#include "shmbus/monitor/frequency.hpp"

#include <algorithm>

namespace shmbus::monitor {

WindowMeasure measure_window(std::span<const std::int64_t> stamps, std::int64_t now_ns, std::int64_t window_ns,
                             bool list_full) noexcept {
  WindowMeasure m;
  const std::int64_t start = now_ns - window_ns;
  // Stamps are ascending: binary search the window's edges.
  const auto first = std::upper_bound(stamps.begin(), stamps.end(), start);
  const auto last = std::upper_bound(first, stamps.end(), now_ns);
  m.n = static_cast<std::uint64_t>(last - first);
  // A full list whose oldest stamp is inside the window lost some of it.
  m.truncated = list_full && !stamps.empty() && stamps.front() > start;
  if (m.n == 0) return m;
  m.first_ns = *first;
  m.last_ns = *(last - 1);
  m.frequency_hz = frequency_hz(m.n, m.first_ns, m.last_ns);
  m.period = period_statistics(first, last);
  return m;
}

}  // namespace shmbus::monitor
