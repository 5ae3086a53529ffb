#pragma once
// Counters of the calling thread (perf_event_open), for the cache-miss
// view of shmbus-bench peers --counters: cycles, L1D read misses (each line
// a core pulls from another core's cache is one) and last-level cache
// misses, counted in user space only. The software kind (task clock,
// context switches, page faults) runs the same view where there is no PMU.

#include <array>
#include <cstdint>
#include <string>

namespace shmbus::bench {

class PmuCounters {
 public:
  static constexpr std::size_t kCount = 3;
  enum class Kind { kHardware, kSoftware };
  /// Column names, in the order of values().
  [[nodiscard]] static std::array<const char*, kCount> names(Kind kind) noexcept;

  /// Opens the group for the calling thread, stopped. On failure, ok() is
  /// false and error() says why and what to do (one line).
  explicit PmuCounters(Kind kind = Kind::kHardware);
  ~PmuCounters();
  PmuCounters(const PmuCounters&) = delete;
  PmuCounters& operator=(const PmuCounters&) = delete;

  [[nodiscard]] bool ok() const noexcept { return fds_[0] >= 0; }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  void start() noexcept;
  void stop() noexcept;
  /// The counts between start() and stop(), scaled when the kernel had to
  /// multiplex the group (it runs alone here, so it should not).
  [[nodiscard]] std::array<std::uint64_t, kCount> values() const noexcept;

 private:
  std::array<int, kCount> fds_{-1, -1, -1};
  std::string error_;
};

}  // namespace shmbus::bench
