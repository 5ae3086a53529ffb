#include "futex.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>

namespace shmbus::detail {
namespace {

timespec to_timespec(std::int64_t ns) noexcept {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t deadline_ns) noexcept {
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a
  // retry after a spurious wake does not extend the wait.
  const timespec deadline = to_timespec(deadline_ns);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_BITSET, expected, &deadline, nullptr,
            FUTEX_BITSET_MATCH_ANY);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool futex_wait_any(std::span<const FutexWaitItem> items, std::int64_t deadline_ns) noexcept {
#ifdef SYS_futex_waitv
  // The kernel takes at most FUTEX_WAITV_MAX (128) words; no allocation on
  // the wait path.
  futex_waitv waiters[FUTEX_WAITV_MAX];
  if (items.size() > FUTEX_WAITV_MAX) return false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    waiters[i] = futex_waitv{};
    waiters[i].val = items[i].expected;
    waiters[i].uaddr = reinterpret_cast<std::uintptr_t>(items[i].word);
    waiters[i].flags = FUTEX_32;
  }
  const timespec deadline = to_timespec(deadline_ns);
  const long rc =
      ::syscall(SYS_futex_waitv, waiters, static_cast<unsigned>(items.size()), 0U, &deadline, CLOCK_MONOTONIC);
  return !(rc < 0 && errno == ENOSYS);
#else
  (void)items;
  (void)deadline_ns;
  return false;
#endif
}

namespace {

long membarrier(int cmd) noexcept { return ::syscall(SYS_membarrier, cmd, 0U, 0); }

bool register_solo_publishing() noexcept {
#ifdef SHMBUS_TSAN
  return false;
#endif
  // getenv is safe here: nothing in shmbus sets the environment.
  const char* setting = std::getenv("SHMBUS_SOLO");  // NOLINT(concurrency-mt-unsafe)
  if (setting != nullptr && std::string_view{setting} == "off") return false;
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 ||
      (cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0) {
    return false;
  }
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

}  // namespace

bool heavy_barrier() noexcept {
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) return true;
  if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return true;
  // No membarrier for this process (a seccomp filter): a fence of our own
  // does not order a solo holder's stores; the caller waits for the holder
  // instead (Channel::wait_for_holder).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return false;
}

bool membarrier_available() noexcept {
  static const bool available = [] {
    const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds > 0 && (cmds & (MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_GLOBAL)) != 0;
  }();
  return available;
}

bool solo_publishing_enabled() noexcept {
  static const bool enabled = register_solo_publishing();
  return enabled;
}

}  // namespace shmbus::detail
