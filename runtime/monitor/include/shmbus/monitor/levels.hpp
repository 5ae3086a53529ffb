#pragma once
// The three alert levels (docs/architecture.md) and the debounce that believes a change
// only after N consecutive scans agree.
//
//   level 1  f1 <= f <= f2   nominal
//   level 2  f2 <  f <= f3   degraded (too fast)
//   level 3  f < f1 or f > f3  critical (too slow, stalled, or flooding)
//   level 0  no thresholds: measured, not alerted

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace shmbus::monitor {

enum class Level : std::uint8_t { kUnmonitored = 0, kNominal = 1, kDegraded = 2, kCritical = 3 };

std::string_view to_string(Level l) noexcept;

/// The level of frequency `f` against `thresholds` (f1 < f2 < f3).
constexpr Level classify(double f, const std::optional<std::array<double, 3>>& thresholds) noexcept {
  if (!thresholds) return Level::kUnmonitored;
  const auto& [f1, f2, f3] = *thresholds;
  if (f < f1 || f > f3) return Level::kCritical;
  if (f > f2) return Level::kDegraded;
  return Level::kNominal;
}

/// Believes a new level after `scans` consecutive observations of it.
/// Starts from `initial` (nominal for a monitored channel): a channel that is
/// critical from the start raises its alert after `scans` scans too.
class Debouncer {
 public:
  explicit Debouncer(std::uint32_t scans = 3, Level initial = Level::kNominal)
      : scans_(scans == 0 ? 1 : scans), believed_(initial) {}

  /// Feeds one scan's level; returns the believed level after it.
  Level observe(Level l) noexcept {
    if (l == believed_) {
      candidate_count_ = 0;
      return believed_;
    }
    if (l != candidate_ || candidate_count_ == 0) {
      candidate_ = l;
      candidate_count_ = 0;
    }
    if (++candidate_count_ >= scans_) {
      believed_ = l;
      candidate_count_ = 0;
    }
    return believed_;
  }
  [[nodiscard]] Level believed() const noexcept { return believed_; }
  void set_scans(std::uint32_t scans) noexcept { scans_ = scans == 0 ? 1 : scans; }
  /// Forgets any pending change and believes `l` (a reload changed thresholds).
  void reset(Level l) noexcept {
    believed_ = l;
    candidate_count_ = 0;
  }

 private:
  std::uint32_t scans_;
  Level believed_;
  Level candidate_ = Level::kUnmonitored;
  std::uint32_t candidate_count_ = 0;
};

}  // namespace shmbus::monitor
