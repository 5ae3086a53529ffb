#include "shmbus/wait_set.hpp"

#include <climits>
#include <thread>

#include "subscriber_impl.hpp"

namespace shmbus {

namespace {

/// Counts (and lists) the ready subscribers. `full`: also judge claimed
/// but unfinished sequences, which costs a read of each write cursor; one
/// not due yet lowers `judge_by` (Impl::ready).
std::size_t collect_pending(std::span<Subscriber::Impl* const> subs, std::vector<std::size_t>* ready, bool full,
                            std::int64_t& judge_by) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    if (!subs[i]->channel) continue;  // still waiting for its channel
    if (subs[i]->ready(full, judge_by)) {
      ++n;
      if (ready != nullptr) ready->push_back(i);
    }
  }
  return n;
}

bool any_triggered(std::span<GuardCondition* const> guards) noexcept {
  for (const auto* g : guards) {
    if (g->triggered()) return true;
  }
  return false;
}

/// Sleeps until the deadline with no word to sleep on; a stop signal does
/// not cut it short (the caller's guards and deadline decide).
void nap_until(std::int64_t deadline) noexcept {
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<std::int64_t>(0, deadline - mono_now_ns())));
}

/// Sleeps on the futex words until one changes, a wake, or the deadline.
void sleep_on(std::span<const FutexWaitItem> items, std::int64_t deadline) noexcept {
  if (items.size() == 1) {
    futex_wait(*items[0].word, items[0].expected, deadline);
    return;
  }
  if (futex_wait_any(items, deadline)) return;
  // No futex_waitv (Linux < 5.16) or too many words: poll every 1 ms.
  nap_until(std::min(deadline, mono_now_ns() + 1'000'000));
}

/// One sleep on every attached subscriber's channel and every guard:
/// registers as a sleeper, samples the guards' words, checks once more for
/// data and triggers (SYNC POINT with the publisher's wake check, see
/// Channel::enter_waiters, and with GuardCondition::trigger, which sets the
/// flag before it bumps the word), sleeps until a wake or `until`, leaves.
void sleep_round(std::span<Subscriber::Impl* const> subs, std::span<GuardCondition* const> guards,
                 std::int64_t until) noexcept {
  constexpr std::size_t kMaxVector = 128;  // the kernel's limit for futex_waitv
  FutexWaitItem stack_items[16];
  std::vector<FutexWaitItem> heap_items;
  std::span<FutexWaitItem> items{stack_items, std::min<std::size_t>(subs.size() + guards.size(), 16)};
  if (subs.size() + guards.size() > 16) {
    heap_items.resize(subs.size() + guards.size());
    items = heap_items;
  }
  std::size_t n = 0;
  for (auto* s : subs) {
    if (s->channel) items[n++] = {&s->header->futex_word, s->channel->enter_waiters(s->entry_index)};
  }
  for (auto* g : guards) items[n++] = {&g->word(), g->word().load(std::memory_order_acquire)};
  // A claimed sequence whose stall is not to be judged yet is slept on too
  // (its commit wakes us), until its judgment is due.
  if (collect_pending(subs, nullptr, true, until) == 0 && !any_triggered(guards) && mono_now_ns() < until) {
    if (n == 0 || n > kMaxVector) {
      nap_until(n == 0 ? until : std::min(until, mono_now_ns() + 1'000'000));
    } else {
      sleep_on(items.first(n), until);
    }
  }
  for (auto* s : subs) {
    if (s->channel) s->channel->leave_waiters(s->entry_index);
  }
}

/// Tries to attach the subscribers still waiting for their channel (each
/// at most every kAttachRetryNs). True when some are still absent.
bool attach_absent(std::span<Subscriber::Impl* const> subs) noexcept {
  bool absent = false;
  for (auto* s : subs) absent |= !s->try_attach();
  return absent;
}

}  // namespace

void GuardCondition::trigger() noexcept {
  triggered_.store(true, std::memory_order_release);
  word_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(word_);
}

std::size_t wait_any(std::span<Subscriber::Impl* const> subs, std::span<GuardCondition* const> guards,
                     std::chrono::nanoseconds timeout, std::vector<std::size_t>* ready) noexcept {
  bool absent = attach_absent(subs);
  std::int64_t judge_by = INT64_MAX;  // unused: each sleep computes its own
  if (std::size_t n = collect_pending(subs, ready, true, judge_by)) return n;
  if (any_triggered(guards) || timeout.count() <= 0) return 0;  // a poll: no sleeper registration either
  const std::int64_t start = mono_now_ns();
  const std::int64_t deadline = saturating_deadline(start, timeout);
  // Some channels do not exist yet: sleep in slices of kAttachRetryNs and
  // look for them between slices (set-up time, not the hot path).
  while (absent) {
    const std::int64_t now = mono_now_ns();
    if (now >= deadline) return 0;
    sleep_round(subs, guards, std::min(deadline, now + kAttachRetryNs));
    absent = attach_absent(subs);
    if (std::size_t n = collect_pending(subs, ready, true, judge_by)) return n;
    if (any_triggered(guards)) return 0;
  }
  std::int64_t spin = 0;
  for (auto* s : subs) spin = std::max(spin, s->wait_spin_ns);
  const std::int64_t spin_until = std::min(deadline, start + spin);
  // Spin first: at high rates the next message comes sooner than a sleeping
  // CPU wakes up. The clock (and the guards) are read every 64 iterations;
  // the write cursors only after kCursorCheckNs of spinning (see
  // take_slot: their lines are the publishers').
  if (spin > 0) {
    for (std::uint32_t i = 1;; ++i) {
      const bool every_64th = (i & 63U) == 0;
      const std::int64_t now = every_64th ? mono_now_ns() : 0;
      if (std::size_t n = collect_pending(subs, ready, every_64th && now - start >= kCursorCheckNs, judge_by)) {
        return n;
      }
      if (every_64th && (now >= spin_until || any_triggered(guards))) break;
      spin_round(i, now - start);  // `now` is read on every 64th round, when it may yield
    }
  }
  for (;;) {
    sleep_round(subs, guards, deadline);
    const std::size_t n = collect_pending(subs, ready, true, judge_by);
    if (n != 0 || any_triggered(guards) || mono_now_ns() >= deadline) return n;
  }
}

std::size_t WaitSet::attach(Subscriber& subscriber) {
  subscribers_.push_back(subscriber.impl_.get());
  return subscribers_.size() - 1;
}

void WaitSet::attach(GuardCondition& guard) { guards_.push_back(&guard); }

void WaitSet::clear() noexcept {
  subscribers_.clear();
  guards_.clear();
}

std::size_t WaitSet::wait(std::chrono::nanoseconds timeout, std::vector<std::size_t>& ready) {
  ready.clear();
  return wait_any(subscribers_, guards_, timeout, &ready);
}

}  // namespace shmbus
