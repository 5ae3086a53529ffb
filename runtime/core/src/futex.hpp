#pragma once
// Futex wait and wake on words in shared memory (not FUTEX_PRIVATE: the
// sleeper and the waker are in different processes).

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <span>

// SHMBUS_TSAN: a ThreadSanitizer build (GCC or clang).
#if defined(__SANITIZE_THREAD__)
#define SHMBUS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMBUS_TSAN 1
#endif
#endif

namespace shmbus::detail {

/// Sleeps while `*word == expected`, until woken or `deadline_ns`
/// (CLOCK_MONOTONIC) passes. Spurious returns are allowed.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t deadline_ns) noexcept;

/// Wakes every sleeper on `word`.
void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept;

/// One word of a vectored wait.
struct FutexWaitItem {
  std::atomic<std::uint32_t>* word;
  std::uint32_t expected;
};

/// Sleeps until any word differs from its expected value, a wake, or the
/// deadline (futex_waitv, Linux 5.16+). Returns false when the kernel lacks
/// futex_waitv, so the caller can fall back to a timed poll.
bool futex_wait_any(std::span<const FutexWaitItem> items, std::int64_t deadline_ns) noexcept;

/// The heavy side of an asymmetric fence: membarrier(GLOBAL_EXPEDITED)
/// makes every running thread of each registered process (solo publishers,
/// register_solo_publishing) execute a full barrier, so a store it made
/// before its light side (a compiler barrier) is visible afterwards, or its
/// load after the light side sees our stores before this call. Falls back
/// to MEMBARRIER_CMD_GLOBAL (slower, no registration needed). False when
/// this process cannot use membarrier (a seccomp filter): nothing was
/// fenced but this thread.
bool heavy_barrier() noexcept;

/// Whether this process can use membarrier at all (GLOBAL_EXPEDITED or
/// GLOBAL), asked once. A process that cannot never lets a channel it
/// uses have a solo grant (Channel::end_solo).
bool membarrier_available() noexcept;

/// Whether this process may publish solo: membarrier's GLOBAL_EXPEDITED is
/// available and this process registered for it (once), not disabled by
/// SHMBUS_SOLO=off, and not a ThreadSanitizer build (which cannot see
/// membarrier's ordering).
bool solo_publishing_enabled() noexcept;

/// Spin-loop hint.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// After this much spinning a wait yields its CPU every 64 spins: when more
/// processes spin and run than there are CPUs, the one a spinner waits for
/// gets the CPU (a yield with nothing else runnable returns at once).
inline constexpr std::int64_t kYieldingSpinNs = 5'000;

/// Round `round` of a spin that has lasted `spun_ns`: a pause, or every
/// 64th round from kYieldingSpinNs on, a yield.
inline void spin_round(std::uint32_t round, std::int64_t spun_ns) noexcept {
  if ((round & 63U) == 0 && spun_ns >= kYieldingSpinNs) {
    ::sched_yield();
  } else {
    cpu_relax();
  }
}

}  // namespace shmbus::detail
