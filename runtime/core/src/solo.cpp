// The solo publisher's grant, revocation and fencing (Channel members; the
// protocol is described at the top of layout/channel_layout.hpp).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <thread>

#include "channel.hpp"
#include "futex.hpp"
#include "process.hpp"
#include "ring.hpp"

namespace shmbus::detail {

using namespace layout;

namespace {

/// Raises `word` to at least `value`; never lowers it.
void raise_to(std::atomic<std::uint64_t>& word, std::uint64_t value) noexcept {
  std::uint64_t cur = word.load(std::memory_order_relaxed);
  // acq_rel: the word hands sequences (or stamp indices) on to the next
  // claimer, who orders its own stores after ours.
  while (cur < value && !word.compare_exchange_weak(cur, value, std::memory_order_acq_rel)) {
  }
}

}  // namespace

std::uint32_t Channel::publishers_present() const noexcept {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < kMaxPublishers; ++i) {
    // acquire: pairs with the claim CAS of a registering entry (claim_entry);
    // the store-load order with our grant CAS is keep_solo_grant's fence.
    n += endpoint_phase(publishers_[i].state.load(std::memory_order_acquire)) != kEndpointFree ? 1 : 0;
  }
  return n;
}

std::uint64_t Channel::take_solo_grant(std::uint32_t token) noexcept {
  if (transport_ != Transport::kShm || !solo_publishing_enabled()) return 0;
  ChannelHeader& h = *header_;
  // acquire: pairs with the acq_rel CAS of the last grant or revocation.
  std::uint64_t w = h.solo.load(std::memory_order_acquire);
  // A closed word's CAS fails too: the mark is in the word it compares.
  if (solo_granted(w) || solo_closed(w)) return 0;
  const std::uint64_t grant = solo_grant_word(solo_generation(w) + 1, token);
  return h.solo.compare_exchange_strong(w, grant, std::memory_order_acq_rel) ? grant : 0;
}

std::uint64_t Channel::keep_solo_grant(std::uint64_t grant) noexcept {
  ChannelHeader& h = *header_;
  // SYNC POINT (store-load, fence-fence): our grant CAS, this fence, then
  // loads of the entry states, and of `waiters` in each solo publish's wake
  // check. Pairs with two seq_cst fences: a registering publisher's after
  // its entry claim CAS (claim_entry), before end_solo loads `solo`; and a
  // sleeper's after its fetch_or on `waiters` (enter_waiters), before it
  // loads `solo`. Of two seq_cst fences one precedes the other in the
  // single total order, so the thread after it sees the other's store: the
  // registrant sees our grant and revokes it, or we see its entry and
  // revert; the sleeper sees the grant and runs the membarrier, or our
  // wake checks see its bit. acq_rel on the CAS alone orders neither (a
  // store then a load), on ARMv8 (LDAPR) nor by the C++ rules.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (publishers_present() != 1) {
    std::uint64_t mine = grant;
    h.solo.compare_exchange_strong(mine, solo_revoked_word(grant), std::memory_order_acq_rel);
    return 0;
  }
  // The solo path goes on from where the shared one is. We are the only
  // publisher: nobody moves either word but us until a newcomer revokes,
  // and its membarrier makes these stores visible to it.
  raise_to(h.solo_cursor, h.write_cursor.load(std::memory_order_acquire));
  raise_to(h.solo_time_list_head, h.time_list_head.load(std::memory_order_acquire));
  return grant;
}

void Channel::return_solo(std::uint64_t grant) noexcept {
  ChannelHeader& h = *header_;
  // SYNC POINT: release, after our last solo publish; pairs with the
  // acquire load of a revoker that cannot use membarrier (wait_for_holder).
  h.solo_ack.store(grant, std::memory_order_release);
  std::uint64_t w = grant;
  // A revoked grant (the CAS fails) was handed on by the revoker already.
  h.solo.compare_exchange_strong(w, solo_revoked_word(grant), std::memory_order_acq_rel);
  merge_solo_cursors();
}

void Channel::merge_solo_cursors() noexcept {
  ChannelHeader& h = *header_;
  raise_to(h.write_cursor, h.solo_cursor.load(std::memory_order_acquire));
  raise_to(h.time_list_head, h.solo_time_list_head.load(std::memory_order_acquire));
}

void Channel::end_solo() noexcept {
  ChannelHeader& h = *header_;
  // A process that cannot use membarrier cannot be the heavy side of the
  // holder's fence: it closes the channel to solo publishing for good (no
  // grant is taken from a closed word), and waits for the holder instead.
  const bool fences = membarrier_available();
  std::uint64_t w = h.solo.load(std::memory_order_acquire);
  while ((solo_granted(w) || (!fences && !solo_closed(w))) &&
         !h.solo.compare_exchange_weak(w, fences ? solo_revoked_word(w) : solo_closed_word(w),
                                       std::memory_order_acq_rel)) {
  }
  // Never granted: no solo publish can have happened (a grant racing with
  // our registration sees our entry and reverts before it publishes).
  if (solo_generation(w) == 0) return;
  // SYNC POINT (store-load, asymmetric): the revocation above, then every
  // registered thread's full barrier, then solo_busy. Pairs with the
  // holder's busy stores, compiler barrier and load of `solo` (Publisher's
  // solo_begin): it saw the revocation, or its busy stores are visible here.
  // Without membarrier: the last holder's pass through the scheduler, or
  // its give-back (wait_for_holder).
  if (!heavy_barrier()) wait_for_holder(w);
  WriterWait holder;
  // acquire: pairs with the holder's release stores of solo_busy (its
  // stores for the publish come before the one that clears it).
  for (std::uint64_t busy = h.solo_busy.load(std::memory_order_acquire); busy != 0;
       busy = h.solo_busy.load(std::memory_order_acquire)) {
    const std::int64_t now = mono_now_ns();
    bool timed_out = false;
    if (holder.judge(now, stall_timeout_ns_, timed_out)) {
      const bool alive = writer_alive(busy);
      if (!alive || timed_out) {
        fence_solo(busy, alive);
        break;
      }
    }
    if (now - holder.since < kDeadWriterCheckNs) {
      cpu_relax();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  // The holder is out (its busy cleared, acquire) or fenced off. A solo
  // publish that passed its grant check before our revocation ended with a
  // wake check that has no fence, and a subscriber that went to sleep after
  // the revocation saw no grant and ran no membarrier: that store (commit)
  // then load (`waiters`) against the sleeper's store (fetch_or) then load
  // (slot state) may miss each other, on x86-64 too. So we check for it.
  // SYNC POINT (store-load, fence-fence): the holder's commit happens before
  // our acquire load of solo_busy, then this fence, then our load of
  // `waiters`; pairs with the sleeper's fence after its fetch_or
  // (enter_waiters): we see its bit and wake it, or it sees the commit.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_sleepers(h, h.waiters.load(std::memory_order_relaxed));
  merge_solo_cursors();
}

void Channel::wait_for_holder(std::uint64_t w) noexcept {
  ChannelHeader& h = *header_;
  const std::uint32_t token = solo_holder(w);
  // The grant it held: `w` itself, or the one a revocation or give-back
  // turned into `w` (one generation before; closing keeps it).
  const std::uint64_t grant = solo_grant_word(solo_generation(w) - (solo_granted(w) ? 0 : 1), token);
  const EndpointEntry& e = publishers_[token_entry(token)];
  const std::int64_t until = mono_now_ns() + stall_timeout_ns_;
  std::optional<SchedulerPass> pass;
  for (;;) {
    // acquire: pairs with the holder's release store in return_solo, after
    // its last solo publish.
    if (h.solo_ack.load(std::memory_order_acquire) == grant) return;
    // Gone (its entry freed or re-let, or its process dead): its stores
    // landed when it left or died.
    const std::uint64_t st = e.state.load(std::memory_order_acquire);
    if (!writer_alive(writing_state(0, token))) return;
    // Its threads are watched through /proc only when its pid means the
    // same process here (one pid namespace); otherwise its give-back or
    // the bound decides.
    const std::uint64_t ns = e.pid_ns.load(std::memory_order_relaxed);
    if (!pass && (ns == 0 || ns == self_pid_ns())) pass.emplace(static_cast<pid_t>(endpoint_pid(st)));
    if (pass && pass->passed()) return;
    if (mono_now_ns() >= until) {
      // Past the bound: judged as a stalled holder (end_solo's wait for
      // solo_busy). Said, as a fence that could not be made.
      std::fprintf(stderr,
                   "shmbus: channel %s: this process cannot use membarrier, and the solo publisher it revoked (pid "
                   "%u) neither gave the grant back nor passed through the scheduler within stall_timeout; it is "
                   "judged as a stalled writer\n",
                   name_.c_str(), static_cast<unsigned>(endpoint_pid(st)));
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Channel::fence_solo(std::uint64_t busy, bool alive) noexcept {
  ChannelHeader& h = *header_;
  // acquire: pairs with the holder's release store of solo_busy, which its
  // busy stamp precedes.
  const std::uint64_t stamp_end = h.solo_busy_stamp.load(std::memory_order_acquire);
  if (alive) {
    // It will go on: its sequence and stamp index stay its own, and its
    // claim word says so now (the value it was about to store, if it has
    // not): claimers of later laps see a live writer in the slot.
    const std::uint64_t seq = state_sequence(busy);
    raise_to(h.write_cursor, seq + 1);
    if (stamp_end != 0) raise_to(h.time_list_head, stamp_end);
    // Its ring is the current one: no ring grows while a grant is held.
    if (const std::shared_ptr<const Ring> r = current_ring(); r && seq >= r->start) {
      std::uint64_t expected = seq - r->start >= r->capacity() ? committed_state(seq - r->capacity()) : 0;
      // SYNC POINT: acq_rel as a publisher's claim CAS (its partner: the
      // release that gave the claim back; later claimers' acquire).
      r->claim_word(seq).compare_exchange_strong(expected, busy, std::memory_order_acq_rel);
    }
  }
  // A dead holder's stores all landed when it died: merge_solo_cursors
  // continues after them, and a claim word it took is a dead writer's.
  std::uint64_t b = busy;
  h.solo_busy.compare_exchange_strong(b, 0, std::memory_order_acq_rel);
}

}  // namespace shmbus::detail
