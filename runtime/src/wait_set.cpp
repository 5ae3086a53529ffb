#include "shmbus/wait_set.hpp"

#include <thread>

#include "subscriber_impl.hpp"

namespace shmbus {

namespace {

/// Counts (and lists) the pending subscribers. `full`: also count claimed
/// but unfinished sequences, which costs a read of each write cursor.
std::size_t collect_pending(std::span<Subscriber::Impl* const> subs, std::vector<std::size_t>* ready,
                            bool full = true) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    if (!subs[i]->channel) continue;  // still waiting for its channel
    const Channel& ch = *subs[i]->channel;
    if (full ? reader_pending(ch, subs[i]->next) : reader_settled(ch, subs[i]->next)) {
      ++n;
      if (ready != nullptr) ready->push_back(i);
    }
  }
  return n;
}

/// Sleeps on every channel's futex word until a wake or the deadline.
void sleep_on(std::span<Subscriber::Impl* const> subs, std::span<const std::uint32_t> words,
              std::int64_t deadline) noexcept {
  if (subs.size() == 1) {
    futex_wait(subs[0]->header->futex_word, words[0], deadline);
    return;
  }
  constexpr std::size_t kMaxVector = 128;  // the kernel's limit for futex_waitv
  if (subs.size() <= kMaxVector) {
    FutexWaitItem items[kMaxVector];
    for (std::size_t i = 0; i < subs.size(); ++i) items[i] = {&subs[i]->header->futex_word, words[i]};
    if (futex_wait_any(std::span<const FutexWaitItem>{items, subs.size()}, deadline)) return;
  }
  // No futex_waitv (Linux < 5.16) or too many channels: poll every 1 ms.
  const std::int64_t until = std::min(deadline, mono_now_ns() + 1'000'000);
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<std::int64_t>(0, until - mono_now_ns())));
}

/// One sleep on every subscriber's channel (all attached): registers as a
/// sleeper, checks once more for data (SYNC POINT with the publisher's wake
/// check, see Channel::enter_waiters), sleeps until a wake or `until`, and
/// leaves.
void sleep_round(std::span<Subscriber::Impl* const> subs, std::int64_t until) noexcept {
  std::uint32_t stack_words[16];
  std::vector<std::uint32_t> heap_words;
  std::span<std::uint32_t> words{stack_words, std::min<std::size_t>(subs.size(), 16)};
  if (subs.size() > 16) {
    heap_words.resize(subs.size());
    words = heap_words;
  }
  for (std::size_t i = 0; i < subs.size(); ++i) words[i] = subs[i]->channel->enter_waiters(subs[i]->entry_index);
  if (collect_pending(subs, nullptr) == 0 && mono_now_ns() < until) sleep_on(subs, words, until);
  for (auto* s : subs) s->channel->leave_waiters(s->entry_index);
}

/// Tries to attach the subscribers still waiting for their channel (each
/// at most every kAttachRetryNs). True when some are still absent.
bool attach_absent(std::span<Subscriber::Impl* const> subs) noexcept {
  bool absent = false;
  for (auto* s : subs) absent |= !s->try_attach();
  return absent;
}

/// sleep_round() on the subscribers whose channel exists (a plain sleep
/// when none does).
void sleep_attached(std::span<Subscriber::Impl* const> subs, std::int64_t until) noexcept {
  std::vector<Subscriber::Impl*> attached;
  for (auto* s : subs) {
    if (s->channel) attached.push_back(s);
  }
  if (attached.empty()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<std::int64_t>(0, until - mono_now_ns())));
    return;
  }
  sleep_round(attached, until);
}

}  // namespace

std::size_t wait_any(std::span<Subscriber::Impl* const> subs, std::chrono::nanoseconds timeout,
                     std::vector<std::size_t>* ready) noexcept {
  bool absent = attach_absent(subs);
  if (std::size_t n = collect_pending(subs, ready)) return n;
  const std::int64_t start = mono_now_ns();
  const std::int64_t deadline = saturating_deadline(start, timeout);
  // Some channels do not exist yet: sleep in slices of kAttachRetryNs and
  // look for them between slices (set-up time, not the hot path).
  while (absent) {
    const std::int64_t now = mono_now_ns();
    if (now >= deadline) return 0;
    sleep_attached(subs, std::min(deadline, now + kAttachRetryNs));
    absent = attach_absent(subs);
    if (std::size_t n = collect_pending(subs, ready)) return n;
  }
  std::int64_t spin = 0;
  for (auto* s : subs) spin = std::max(spin, s->wait_spin_ns);
  const std::int64_t spin_until = std::min(deadline, start + spin);
  // Spin first: at high rates the next message comes sooner than a sleeping
  // CPU wakes up. The clock is read every 64 iterations only.
  if (spin > 0) {
    for (std::uint32_t i = 1;; ++i) {
      const bool every_64th = (i & 63U) == 0;
      if (std::size_t n = collect_pending(subs, ready, every_64th)) return n;
      if (every_64th && mono_now_ns() >= spin_until) break;
      cpu_relax();
    }
  }
  for (;;) {
    sleep_round(subs, deadline);
    const std::size_t n = collect_pending(subs, ready);
    if (n != 0 || mono_now_ns() >= deadline) return n;
  }
}

std::size_t WaitSet::attach(Subscriber& subscriber) {
  subscribers_.push_back(subscriber.impl_.get());
  return subscribers_.size() - 1;
}

std::size_t WaitSet::wait(std::chrono::nanoseconds timeout, std::vector<std::size_t>& ready) {
  ready.clear();
  return wait_any(subscribers_, timeout, &ready);
}

}  // namespace shmbus
