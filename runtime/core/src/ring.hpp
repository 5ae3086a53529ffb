#pragma once
// The parts of the ring protocol shared by publisher, subscriber and wait
// set. See layout/channel_layout.hpp for the slot state word.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "channel.hpp"
#include "futex.hpp"

#ifdef SHMBUS_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace shmbus::detail {

/// A slot stuck in writing state is checked for a dead writer once it has
/// been stuck this long: rarely enough that a writer merely preempted is not
/// asked about on every poll, and soon enough that a crash stalls readers
/// and publishers well under the stall_timeout bound.
inline constexpr std::int64_t kDeadWriterCheckNs = 100'000;

/// Waiting for a writer that holds what we need: it is judged (alive or
/// dead) once after kDeadWriterCheckNs, and again once `timeout` has passed,
/// after which a live one is given up on.
struct WriterWait {
  std::int64_t since = 0;  ///< the wait began (0: not yet)
  bool dead_checked = false;
  /// At `now`: whether to judge the writer now; `timed_out` tells whether
  /// the bound has passed.
  bool judge(std::int64_t now, std::int64_t timeout, bool& timed_out) noexcept {
    if (since == 0) since = now;
    timed_out = now - since > timeout;
    if (!timed_out && (dead_checked || now - since < kDeadWriterCheckNs)) return false;
    dead_checked = true;
    return true;
  }
};

/// Asks for the cache line at `p` in a writable state (x86: PREFETCHW, a
/// no-op on CPUs without it), without waiting for it.
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

/// Brackets a seqlock reader's optimistic copy. The copy may race with a
/// writer of the next lap by design; the state re-check after it discards a
/// torn copy. ThreadSanitizer is told to ignore these reads (and only these)
/// because they are plain loads and memcpy, a data race by the C++ rules:
/// kept so, since relaxed atomic word loads would cost the copy of larger
/// messages its vector width (docs/architecture.md, "The seqlock reads").
/// Used around the slot header's plain fields in take (subscriber_impl.hpp)
/// and the payload's memcpy in take and take_exact (subscriber.cpp),
/// nowhere else: a caller's in-place reader (read, reread, a Node's
/// in-place callback) runs outside it and is checked.
struct SeqlockReadScope {
#ifdef SHMBUS_TSAN
  SeqlockReadScope() noexcept { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
  ~SeqlockReadScope() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#endif
  SeqlockReadScope(const SeqlockReadScope&) = delete;
  SeqlockReadScope& operator=(const SeqlockReadScope&) = delete;
#ifndef SHMBUS_TSAN
  SeqlockReadScope() noexcept = default;
#endif
};

/// True when the slot state lets a reader expecting `next` act: the message
/// is committed, or the slot already holds a later one (we were lapped).
inline bool slot_settled(std::uint64_t state, std::uint64_t next) noexcept {
  if (state == 0) return false;
  const std::uint64_t seq = layout::state_sequence(state);
  return seq > next || (seq == next && !layout::is_writing(state));
}

/// The cheap check for spinning: only the slot's state line, which the
/// publisher writes anyway. A poll loop that also read the write cursor
/// would pull that line away from publishers on every iteration.
inline bool reader_settled(const Ring& r, std::uint64_t next) noexcept {
  return slot_settled(r.slot(next)->state.load(std::memory_order_acquire), next);
}

/// Wakes the channel's sleepers when `waiters` (a load of the word, ordered
/// by the caller) names any: the futex word is bumped, then woken.
inline void wake_sleepers(layout::ChannelHeader& h, std::uint64_t waiters) noexcept {
  if (waiters != 0) {
    h.futex_word.fetch_add(1, std::memory_order_release);
    futex_wake_all(h.futex_word);
  }
}

/// After a commit: wakes sleepers, making the system call only when some
/// subscriber sleeps. The caller has just committed with a CAS (a locked
/// read-modify-write), or is a solo publisher (`solo`).
inline void wake_waiters(layout::ChannelHeader& h, bool solo = false) noexcept {
  // SYNC POINT (store-load, fence-fence): the commit above, a seq_cst
  // fence, then the load of `waiters`; pairs with the fence after the
  // sleeper's fetch_or in Channel::enter_waiters(): we see its bit, or it
  // sees our commit. On x86-64 the fence is left to the hardware: the
  // shared commit is a LOCK CMPXCHG, which drains the store buffer before
  // any later load, so only the compiler is kept from moving the load
  // above it (a code-generation choice for x86-64, which the C++ rules
  // alone do not give; every other target, and ThreadSanitizer, get the
  // fence). A solo publish has no locked instruction and no fence: its
  // compiler barrier is the light side of an asymmetric fence whose heavy
  // side is the sleeper's membarrier, or its revoker's wake (end_solo).
#if defined(__x86_64__) && !defined(SHMBUS_TSAN)
  (void)solo;
  std::atomic_signal_fence(std::memory_order_seq_cst);
#else
  if (solo) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
#endif
  wake_sleepers(h, h.waiters.load(std::memory_order_relaxed));
}

}  // namespace shmbus::detail
