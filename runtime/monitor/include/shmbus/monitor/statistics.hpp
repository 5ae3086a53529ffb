#pragma once
// Running statistics in constant memory (Welford's algorithm), in the manner
// of ROS 2 topic statistics: mean, min, max, standard deviation and count;
// NaN where no sample was taken.

#include <cmath>
#include <cstdint>
#include <limits>

namespace shmbus::monitor {

/// The five statistics of a sample.
struct Summary {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double min = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  double stddev = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t count = 0;
};

/// Welford's online mean and variance. Thread-safety: a plain value.
class Welford {
 public:
  void add(double x) noexcept {
    ++count_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (x - mean_);
    min_ = count_ == 1 ? x : std::fmin(min_, x);
    max_ = count_ == 1 ? x : std::fmax(max_, x);
  }
  void reset() noexcept { *this = Welford{}; }
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }

  /// Population standard deviation, as ROS 2 topic statistics report it.
  [[nodiscard]] Summary summary() const noexcept {
    Summary s;
    s.count = count_;
    if (count_ == 0) return s;
    s.mean = mean_;
    s.min = min_;
    s.max = max_;
    s.stddev = std::sqrt(m2_ / static_cast<double>(count_));
    return s;
  }

 private:
  std::uint64_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;
  double min_ = 0;
  double max_ = 0;
};

}  // namespace shmbus::monitor
