// stamp_now_ns's slow path: when the TSC is used, and how a thread's
// conversion is calibrated, re-anchored and slewed.

#include "shmbus/clock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "shmbus/stop_signals.hpp"

namespace shmbus {
namespace detail {

namespace {

/// The first rate is measured over this long (the thread reads
/// clock_gettime meanwhile); each later one over the period before it.
constexpr std::int64_t kFirstIntervalNs = 1'000'000;
/// The longest a conversion runs before it is measured again.
constexpr std::int64_t kMaxPeriodNs = 50'000'000;
/// A conversion this far behind the system clock steps forward to it;
/// closer (or ahead) it is slewed over the next period, never stepped back.
constexpr std::int64_t kStepNs = 1'000'000;

bool invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000U, nullptr)) < 0x80000007U) return false;
  __cpuid(0x80000007U, a, b, c, d);
  return (d & (1U << 8)) != 0;  // CPUID.80000007H:EDX[8], invariant TSC
#else
  return false;
#endif
}

/// The kernel's current clocksource ("tsc", "kvm-clock", ...), or empty.
std::string_view current_clocksource(char (&buf)[64]) noexcept {
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return {};
  std::string_view s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

bool detect_tsc() noexcept {
  // getenv is safe here: nothing in shmbus sets the environment.
  const char* setting = std::getenv("SHMBUS_CLOCK");  // NOLINT(concurrency-mt-unsafe)
  char buf[64];
  const ClockChoice choice = choose_stamp_clock(setting, invariant_tsc(), current_clocksource(buf));
  if (!choice.error.empty())
    std::fprintf(stderr, "shmbus: %.*s\n", static_cast<int>(choice.error.size()), choice.error.data());
  return choice.tsc;
}

#if defined(__x86_64__)
struct Sample {
  std::uint64_t tsc;
  std::int64_t ns;
};

/// clock_gettime between two TSC reads, paired with their midpoint; a read
/// that took long (an interrupt, a preemption) is taken again, up to 4 times.
Sample sample() noexcept {
  Sample best{0, 0};
  std::uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 4 && best_width > 1000; ++i) {
    const std::uint64_t t1 = __rdtsc();
    const std::int64_t ns = mono_now_ns();
    _mm_lfence();
    const std::uint64_t t2 = __rdtsc();
    if (t2 - t1 < best_width) {
      best_width = t2 - t1;
      best = Sample{t1 + (t2 - t1) / 2, ns};
    }
  }
  return best;
}

std::int64_t scale(std::uint64_t ticks, std::uint64_t mult) noexcept {
  return static_cast<std::int64_t>((static_cast<Uint128>(ticks) * mult) >> 32);
}
#endif

}  // namespace

ClockChoice choose_stamp_clock(const char* setting, bool invariant, std::string_view clocksource) noexcept {
  const std::string_view s = setting != nullptr ? std::string_view(setting) : std::string_view();
  if (s == "system") return {false, {}};
  if (s == "tsc")
    return {invariant,
            invariant ? std::string_view() : "SHMBUS_CLOCK=tsc: this CPU has no invariant TSC; using clock_gettime"};
  const bool tsc = invariant && clocksource == "tsc";
  if (s.empty() || s == "auto") return {tsc, {}};
  return {tsc, "SHMBUS_CLOCK has an unknown value; use auto, tsc or system (using auto)"};
}

namespace {
bool tsc_in_use() noexcept {
  static const bool use = detect_tsc();
  return use;
}

/// The rate (ns per tick, 32.32) a thread of this process measured last:
/// a thread's first read starts converting with it at once, instead of
/// reading clock_gettime for a millisecond. Relaxed: any recent value does
/// (the TSC is invariant, one rate for every CPU), and the thread measures
/// its own over its first period.
std::atomic<std::uint64_t> process_mult{0};
}  // namespace

std::int64_t stamp_now_slow() noexcept {
#if defined(__x86_64__)
  if (tsc_in_use()) {
    TscClock& c = tsc_clock;
    const bool running = c.period_ticks != 0;
    if (!running && c.cal_ns != 0) {
      // Calibrating: the system clock alone until the interval is long
      // enough to measure a rate over.
      const std::int64_t ns = mono_now_ns();
      if (ns - c.cal_ns < kFirstIntervalNs) return ns;
    }
    const Sample s = sample();
    if (c.cal_ns == 0 || s.tsc <= c.anchor_tsc) {
      // This thread's first read (or a TSC that went back): it converts
      // with the process's rate for a first period, or, the process's
      // first, reads the system clock until it has measured one.
      c = TscClock{};
      c.anchor_tsc = s.tsc;
      c.cal_ns = s.ns;
      if (const std::uint64_t known = process_mult.load(std::memory_order_relaxed); known != 0) {
        c.mult = known;
        c.anchor_ns = s.ns;
        c.period_ticks = static_cast<std::uint64_t>((static_cast<Uint128>(kFirstIntervalNs) << 32) / known);
      }
      return s.ns;
    }
    // Where the running conversion puts this moment (while calibrating:
    // the system clock), and how far that is off.
    const std::int64_t here = running ? c.anchor_ns + scale(s.tsc - c.anchor_tsc, c.mult) : s.ns;
    const std::int64_t measured_ns = s.ns - c.cal_ns;
    const std::uint64_t ticks = s.tsc - c.anchor_tsc;
    if (measured_ns < kFirstIntervalNs) return here;  // too short to measure a rate over
    std::int64_t error = s.ns - here;                 // > 0: behind the system clock
    const std::int64_t period_ns = std::clamp<std::int64_t>(2 * measured_ns, kFirstIntervalNs, kMaxPeriodNs);
    std::int64_t anchor_ns = here;
    if (error > kStepNs) {
      anchor_ns = s.ns;  // far behind (a long idle thread): step forward
      error = 0;
    }
    error = std::max(error, -period_ns / 2);
    // ns per tick over the last interval, corrected so the conversion
    // meets the system clock at the end of the next period.
    const Uint128 num = (static_cast<Uint128>(static_cast<std::uint64_t>(period_ns + error)) << 32) *
                        static_cast<std::uint64_t>(measured_ns);
    const Uint128 den = static_cast<Uint128>(static_cast<std::uint64_t>(period_ns)) * ticks;
    c.mult = static_cast<std::uint64_t>(num / den);
    process_mult.store(
        static_cast<std::uint64_t>((static_cast<Uint128>(static_cast<std::uint64_t>(measured_ns)) << 32) / ticks),
        std::memory_order_relaxed);
    c.period_ticks = static_cast<std::uint64_t>(static_cast<Uint128>(static_cast<std::uint64_t>(period_ns)) * ticks /
                                                static_cast<std::uint64_t>(measured_ns));
    c.anchor_tsc = s.tsc;
    c.anchor_ns = anchor_ns;
    c.cal_ns = s.ns;
    return anchor_ns;
  }
#endif
  return mono_now_ns();
}

}  // namespace detail

bool stamp_clock_uses_tsc() noexcept { return detail::tsc_in_use(); }

bool sleep_until(std::int64_t deadline_ns) noexcept {
  const timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (!stop_signalled()) {
    const int rc = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (rc != EINTR) return true;
  }
  return false;
}

std::string wall_time_text(std::int64_t ns) {
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d} UTC", text, static_cast<int>((ns / 1'000'000) % 1000));
}

}  // namespace shmbus
