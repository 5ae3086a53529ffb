#include "shmbus/publisher.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>

#include "channel.hpp"
#include "iceoryx_port.hpp"
#include "process.hpp"
#include "ring.hpp"
#include "segment.hpp"
#include "shmbus/error.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/names.hpp"

namespace shmbus {

using namespace detail;
using namespace layout;

static_assert(kMaxChannelPublishers == kMaxPublishers, "the public bound is the endpoint table's");

struct Publisher::Impl {
  std::shared_ptr<Channel> channel;
  ChannelHeader* header = nullptr;
  /// The ring of the newest generation we know (layout/channel_layout.hpp,
  /// "Generations"), and the older ones a claim or open loan of ours is
  /// still in (dropped once none is).
  std::shared_ptr<const Ring> ring_held;
  const Ring* ring = nullptr;
  std::uint32_t gen = 0;
  std::vector<std::shared_ptr<const Ring>> older_rings;
  /// The sequence our growth claimed as its new generation's start: the
  /// next claim takes it.
  std::uint64_t preclaimed = GrowOutcome::kNoSequence;
  GrowLimits grow_limits;
  std::string refusal;          ///< the last growth refused, said by too_large()
  bool said_too_large = false;  ///< the first refused size is said on stderr, once
  EndpointEntry* entry = nullptr;
  std::uint32_t entry_index = 0;
  std::uint32_t id = 0;
  std::uint32_t max_size = 0;
  std::int64_t stall_timeout_ns = 0;
  std::uint32_t owner = 0;            ///< token in the slot states we write
  std::uint64_t stuck_claim = ~0ULL;  ///< a live writer's claim already waited out
  bool notify_hook = true;
  /// Provenance given by set_provenance (explicit: true), cited as is.
  bool explicit_provenance = false;
  std::uint32_t explicit_count = 0;
  std::uint64_t explicit_cut = 0;
  ProvenanceEntry explicit_entries[kProvenanceEntries]{};
  /// The plain-thread log of our last publish and its `taken` then: a
  /// publish cites what that thread took since.
  const detail::InputLog* mark_log = nullptr;
  std::uint64_t mark = 0;
  std::int64_t wall_offset = 0;
  std::int64_t wall_offset_read_at = 0;
  /// Set on iceoryx channels: messages travel in its chunks, not the ring.
  std::unique_ptr<IceoryxPublisherPort> iox;
  /// overflow = block: sequences below room_until are free to claim (the
  /// slowest live subscriber's cursor plus the capacity, when last read).
  bool blocking = false;
  std::int64_t block_timeout_ns = 0;
  std::int64_t wait_spin_ns = 0;
  std::uint64_t room_until = 0;
  std::uint32_t laggard = 0;  ///< the subscriber entry room_until was computed from
  /// Subscribers a wait reached block_timeout for: overtaken, and ignored
  /// while their entry keeps its tenancy and its cursor stays where it was.
  std::uint64_t overtaken_mask = 0;
  std::array<std::uint64_t, kMaxSubscribers> overtaken_cursor{};
  std::array<std::uint32_t, kMaxSubscribers> overtaken_tenancy{};
  bool waited = false;  ///< the last claim waited for room (its publish time is read after)
  /// set_interrupt: asked while a claim waits for room; true ends the wait.
  std::function<bool()> interrupt;
  /// What claim_room returns when `interrupt` ended its wait.
  static constexpr std::uint64_t kInterrupted = UINT64_MAX;
  static constexpr std::int64_t kInterruptCheckNs = 20'000'000;
  /// Solo publisher (layout/channel_layout.hpp): our grant word while we
  /// hold it (else 0); shared publishes
  /// since we last asked for one; loans open (no grant while any is: a
  /// loan's commit takes the shared path); the time-list index of the solo
  /// publish in flight.
  std::uint64_t solo_grant = 0;
  std::uint32_t shared_publishes = 0;
  std::uint32_t open_loans = 0;
  std::uint64_t solo_stamp = 0;
  /// A publisher on the shared path asks for the grant again after this
  /// many publishes: the scan of the publisher table costs about 1 us.
  static constexpr std::uint32_t kSoloRetryEvery = 1024;

  ~Impl() {
    if (!channel) return;
    if (solo_grant != 0) channel->return_solo(solo_grant);
    channel->unregister_publisher(entry_index);
  }

  /// Claims the next sequence and its slot for writing; `fast` tells
  /// whether it is a solo publish (then commit and notify are too). Returns
  /// nullptr when the message must be dropped (counted by the caller).
  SlotHeader* claim(std::uint64_t& seq, bool& fast, std::size_t size) noexcept {
    std::uint64_t s = 0;
    fast = false;
    if (solo_grant != 0) {
      // The room is waited for before the solo words are touched: a wait
      // that is interrupted leaves them as they were.
      if (blocking) {
        s = claim_room(true);
        if (s == kInterrupted) return nullptr;
      }
      fast = solo_begin(s);
    }
    if (fast) {
      SlotHeader* slot = claim_slot(*ring, s, seq, true);
      if (slot == nullptr) solo_end();
      return slot;
    }
    if (preclaimed != GrowOutcome::kNoSequence) [[unlikely]] {
      s = std::exchange(preclaimed, GrowOutcome::kNoSequence);  // our growth's first sequence
    } else if (blocking) {
      s = claim_room(false);
      if (s == kInterrupted) return nullptr;  // only a wait for room can be interrupted
    } else {
      // SYNC POINT (seq_cst RMW, then the seq_cst load of `generation`
      // below): "Generations" in layout/channel_layout.hpp. Otherwise the
      // cursor only hands out numbers; what readers may read is published
      // through the slot state. On x86-64 the same LOCK XADD as relaxed,
      // and the load a plain one.
      s = header->write_cursor.fetch_add(1, std::memory_order_seq_cst);
    }
    const std::uint32_t g = header->generation.load(std::memory_order_seq_cst);
    if (g != gen) [[unlikely]]
      return claim_in_generation(s, g, seq, size);
    return claim_slot(*ring, s, seq, false);
  }

  /// claim's path when the channel has grown since we last looked: settles
  /// the starts still unknown, adopts the newest ring, and claims `s` in
  /// the generation it belongs to. nullptr (a drop) when that ring is gone
  /// or too small for what we checked (a corrupt record).
  [[gnu::noinline]] SlotHeader* claim_in_generation(std::uint64_t s, std::uint32_t g, std::uint64_t& seq,
                                                    std::size_t size) noexcept {
    g = std::min(g, kMaxGenerations - 1);
    for (std::uint32_t k = gen + 1; k <= g; ++k) {
      bool won = false;
      const std::uint64_t c = channel->settle_start(k, won);
      if (c != GrowOutcome::kNoSequence) fill_discarded(c);
    }
    std::shared_ptr<const Ring> r = ring_for(s, g);
    if (!r) return nullptr;
    if (r->generation == g) adopt(r);
    if (size > r->max_message_size) return nullptr;
    return claim_slot(*r, s, seq, false);
  }

  /// The ring sequence `s` belongs to (the newest generation at or below
  /// `g` whose start is at or below it), kept in older_rings when it is not
  /// the newest; null when it is gone.
  std::shared_ptr<const Ring> ring_for(std::uint64_t s, std::uint32_t g) noexcept {
    for (std::uint32_t k = g + 1; k-- > 0;) {
      const std::uint64_t start = channel->generation_start(k);
      if (start == kStartUnknown || start > s) continue;
      if (ring != nullptr && ring->generation == k) return ring_held;
      for (const auto& o : older_rings) {
        if (o->generation == k) return o;
      }
      try {
        std::shared_ptr<const Ring> r = channel->ring(k);
        if (r && k != g) older_rings.push_back(r);
        return r;
      } catch (...) {
        return nullptr;
      }
    }
    return nullptr;
  }

  /// The ring we hold a claim of `seq` in: the newest, or an older one.
  const Ring& claim_ring(std::uint64_t seq) const noexcept {
    if (seq >= ring->start || older_rings.empty()) [[likely]]
      return *ring;
    for (auto it = older_rings.rbegin(); it != older_rings.rend(); ++it) {
      if (seq >= (*it)->start) return **it;
    }
    return *ring;
  }

  /// Makes `r` our newest ring; block channels look at the room again.
  void adopt(std::shared_ptr<const Ring> r) noexcept {
    if (ring_held && ring_held != r) older_rings.push_back(std::move(ring_held));
    ring_held = std::move(r);
    ring = ring_held.get();
    gen = ring->generation;
    room_until = 0;
  }

  /// Drops the older rings once no claim or loan of ours is in them.
  void release_older_rings() noexcept {
    if (open_loans == 0) older_rings.clear();
  }

  /// A sequence we claimed that carries no message (settling a start):
  /// written as a discarded slot, so readers pass it without a loss.
  void fill_discarded(std::uint64_t c) noexcept {
    std::shared_ptr<const Ring> r = ring_for(c, std::min(channel->generation(), kMaxGenerations - 1));
    if (!r) return;
    std::uint64_t seq = 0;
    SlotHeader* slot = claim_slot(*r, c, seq, false);
    if (slot == nullptr) return;
    write_header(slot, seq, draft_header(stamp_now_ns(), 0, kSlotDiscarded));
    if (release_slot(*r, slot, seq, false)) wake_waiters(*header);
  }

  /// A message over what the channel may grow to (or, if it does not grow,
  /// over its slots): too_large() says so; a growing channel counts it
  /// with its refused growths.
  PublishResult over_ceiling(std::size_t size) noexcept {
    refusal.clear();
    if (channel->may_grow()) header->grows_refused.fetch_add(1, std::memory_order_relaxed);
    return refused(size);
  }

  /// What too_large() says of a message of `size` bytes.
  [[nodiscard]] std::string refusal_line(std::size_t size) const {
    return refusal.empty() ? channel->too_large(size) : refusal;
  }

  /// A message of `size` bytes not carried: said once on stderr (this
  /// publisher's first), so that no caller that ignores the result loses
  /// it without a word.
  PublishResult refused(std::size_t size) noexcept {
    if (!std::exchange(said_too_large, true)) {
      try {
        std::fprintf(stderr, "shmbus: %s (said once per publisher; PublishResult::kTooLarge)\n",
                     refusal_line(size).c_str());
      } catch (const std::exception&) {  // no memory for the line: the result still says it
      }
    }
    return PublishResult::kTooLarge;
  }

  /// Makes the channel hold a message of `size` bytes (it grows; see
  /// Channel::grow). False, with `refusal` set, when it cannot.
  [[gnu::noinline]] bool fit(std::size_t size) noexcept {
    if (solo_grant != 0) channel->return_solo(std::exchange(solo_grant, 0));  // growing is for the shared path
    try {
      GrowOutcome o = channel->grow(size, grow_limits, [this](GrowPause at) { grow_pause(at); });
      for (const std::uint64_t c : o.spare) fill_discarded(c);
      if (!o.refusal.empty()) {
        refusal = std::move(o.refusal);
        return false;
      }
      std::shared_ptr<const Ring> r = channel->current_ring();
      if (!r || r->max_message_size < size) {
        if (o.first != GrowOutcome::kNoSequence) fill_discarded(o.first);
        refusal =
            fmt::format("channel {} grew, but its newest ring cannot be used (see the line above)", channel->name());
        return false;
      }
      adopt(std::move(r));
      preclaimed = o.first;
      return true;
    } catch (const std::exception& e) {
      refusal = fmt::format("channel {} could not grow: {}", channel->name(), e.what());
      return false;
    }
  }

  /// A solo publish begins: the sequence `s` from our own cursor (on a
  /// block channel, the one claim_room gave), the busy words, then the
  /// grant checked. False, with the grant given up, when it was revoked:
  /// the publish takes the shared path.
  bool solo_begin(std::uint64_t& s) noexcept {
    ChannelHeader& h = *header;
    // relaxed: while we hold the grant we alone write the solo words.
    if (!blocking) s = h.solo_cursor.load(std::memory_order_relaxed);
    solo_stamp = h.solo_time_list_head.load(std::memory_order_relaxed);
    h.solo_busy_stamp.store(notify_hook ? solo_stamp + 1 : 0, std::memory_order_relaxed);
    // release: a revoker that sees solo_busy (acquire) sees solo_busy_stamp.
    h.solo_busy.store(writing_state(s, owner), std::memory_order_release);
    // SYNC POINT (store-load, asymmetric): the busy stores above before the
    // load of the grant below. The light side is a compiler barrier; the
    // heavy side is the revoker's membarrier (Channel::end_solo).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (h.solo.load(std::memory_order_relaxed) != solo_grant) {
      h.solo_busy.store(0, std::memory_order_release);
      channel->return_solo(std::exchange(solo_grant, 0));
      return false;
    }
    test_wake_early();
    h.solo_cursor.store(s + 1, std::memory_order_relaxed);
    return true;
  }

  /// A solo publish ends (committed, or dropped): a revoker waiting on it
  /// may go on. release: everything we stored for it comes first.
  void solo_end() noexcept { header->solo_busy.store(0, std::memory_order_release); }

  /// Takes the slot of sequence `s`: a plain store on the solo path when
  /// the claim word holds what a solo publisher expects there, else a CAS.
  SlotHeader* claim_slot(const Ring& r, std::uint64_t s, std::uint64_t& seq, bool fast) noexcept {
    SlotHeader* slot = r.slot(s);
    // The slot's claim word (not its state, which subscribers poll: see
    // layout/channel_layout.hpp). Try the common case first: it holds the
    // previous lap's committed message (or nothing, on the first lap). A
    // failed CAS leaves the actual word in `st`. The CASed word names us
    // (owner token): a claim always names its writer, whenever this process
    // stops or dies. SYNC POINT: acquire pairs with the release of the
    // claim's previous holder, after its last store to the slot's state.
    std::atomic<std::uint64_t>& word = r.claim_word(s);
    const std::uint64_t capacity = r.capacity();
    const std::uint64_t mine = writing_state(s, owner);
    // A ring's first lap begins at its generation's start.
    std::uint64_t st = s - r.start >= capacity ? committed_state(s - capacity) : 0;
    if (fast) {
      // Solo: no other publisher claims while we are busy, and a revoker
      // that fenced us stored `mine` here itself (Channel::fence_solo).
      // SYNC POINT: acquire pairs with the release that gave the claim back
      // (ours, or the shared path's CAS before the grant), as the CAS does.
      const std::uint64_t cur = word.load(std::memory_order_acquire);
      if (cur == st || cur == mine) {
        word.store(mine, std::memory_order_relaxed);
        return claimed(slot, s, seq);
      }
      st = cur;  // a dead or stalled writer's claim: the general case below
    } else if (word.compare_exchange_strong(st, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return claimed(slot, s, seq);
    }
    WriterWait stuck;
    for (;;) {
      // Case 1: a later lap already owns the slot (we were descheduled
      // between the fetch_add and here): our message is too old to store.
      if (st != 0 && state_sequence(st) >= s) return nullptr;
      // Case 2: a writer of an earlier lap is still in the slot. A writer
      // known dead (its entry freed or re-let, or its pid + start time gone)
      // is taken over at once; a live or unknown one never is, since it
      // would go on writing into the slot: we wait for it up to
      // stall_timeout, then drop our message. A claim we already waited out
      // is dropped at once, so a stopped writer costs each publisher one
      // stall_timeout, not one per lap.
      if (is_writing(st)) {
        if (st == stuck_claim) return nullptr;
        bool timed_out = false;
        if (stuck.judge(mono_now_ns(), stall_timeout_ns, timed_out)) {
          if (!channel->writer_alive(st)) {
            // CAS cases: won -> the dead writer's slot is ours; lost -> the
            // state moved on, re-examine it.
            if (word.compare_exchange_strong(st, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
              break;
            }
            continue;
          }
          if (timed_out) {
            stuck_claim = st;
            return nullptr;
          }
        }
        cpu_relax();
        st = word.load(std::memory_order_acquire);
        continue;
      }
      // Case 3: free, or committed by an earlier lap: claim it. A failed CAS
      // reloads `st` and re-examines the cases.
      if (word.compare_exchange_weak(st, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
        break;
      }
    }
    return claimed(slot, s, seq);
  }

  /// overflow = block: the sequence below the slowest live subscriber's
  /// cursor plus the capacity (room_limit), which `claim` then takes.
  /// Sequences are claimed by CAS, never handed out before there is room,
  /// so a wait holds up no subscriber. The wait spins for wait_spin
  /// (yielding its CPU now and then after 5 us: spin_round), then
  /// sleeps in growing steps of up to 200 us; subscribers of dead processes
  /// are reclaimed (after 100 us, then every 10 ms), and at block_timeout
  /// the subscribers still holding the slot are overtaken: counted in
  /// block_timeouts here, and in their own lost counts when they go on.
  /// `solo`: the sequence is our solo cursor's, which solo_begin advances.
  /// While it waits, `interrupt` (when set) is asked every 20 ms; true
  /// returns kInterrupted, nothing claimed.
  std::uint64_t claim_room(bool solo) noexcept {
    std::int64_t since = 0;       // the wait began (blocked_ns)
    std::int64_t bound_from = 0;  // block_timeout counts from here
    std::int64_t next_reclaim = 0;
    std::int64_t next_interrupt_check = 0;
    std::int64_t nap_ns = 0;
    std::uint32_t spins = 0;
    waited = false;
    for (;;) {
      // relaxed: a number to claim; what orders our slot writes after the
      // subscribers' reads is the acquire load of their cursors.
      std::uint64_t w = (solo ? header->solo_cursor : header->write_cursor).load(std::memory_order_relaxed);
      if (w >= room_until) room_until = room_limit(w);
      if (w < room_until) {
        // SYNC POINT: seq_cst as the fetch_add in claim ("Generations").
        if (solo || header->write_cursor.compare_exchange_weak(w, w + 1, std::memory_order_seq_cst,
                                                               std::memory_order_relaxed)) {
          if (since != 0) {
            add_blocked(mono_now_ns() - since);
            waited = true;
          }
          return w;
        }
        continue;
      }
      const std::int64_t now = mono_now_ns();
      if (since == 0) {
        since = now;
        bound_from = now;
        next_reclaim = now + kDeadWriterCheckNs;
        next_interrupt_check = now + kInterruptCheckNs;
      }
      if (interrupt && now >= next_interrupt_check) {
        next_interrupt_check = now + kInterruptCheckNs;
        if (asked_to_stop()) {
          add_blocked(now - since);
          return kInterrupted;
        }
      }
      if (now >= next_reclaim) {
        next_reclaim = now + 10'000'000;
        if (channel->reclaim_dead() != 0) {
          room_until = 0;  // a dead subscriber held it: look again
          continue;
        }
      }
      if (now - bound_from >= block_timeout_ns) {
        overtake(w);
        // Single writer (this publisher): relaxed, statistics.
        entry->block_timeouts.store(entry->block_timeouts.load(std::memory_order_relaxed) + 1,
                                    std::memory_order_relaxed);
        room_until = 0;
        bound_from = now;  // a wait for another subscriber starts its own bound
        continue;
      }
      // Until the laggard moves or leaves, only its line is read.
      const EndpointEntry& slowest = channel->subscriber(laggard);
      // relaxed: only a hint that it moved; what we claim is decided by
      // room_limit's acquire loads, which pair with the subscriber's
      // release store in show_cursor().
      const std::uint64_t lag = slowest.read_cursor().load(std::memory_order_relaxed);
      if (endpoint_phase(slowest.state.load(std::memory_order_relaxed)) != kEndpointLive || lag == UINT64_MAX ||
          lag + ring->capacity() > w) {
        room_until = 0;
        continue;
      }
      if (now - bound_from < wait_spin_ns) {
        spin_round(++spins, now - since);
      } else {
        nap_ns = std::min<std::int64_t>(std::max<std::int64_t>(nap_ns * 2, 10'000), 200'000);
        std::this_thread::sleep_for(std::chrono::nanoseconds(nap_ns));
      }
    }
  }

  void add_blocked(std::int64_t ns) noexcept {
    // Single writer: relaxed, statistics.
    entry->blocked_ns().store(entry->blocked_ns().load(std::memory_order_relaxed) + static_cast<std::uint64_t>(ns),
                              std::memory_order_relaxed);
  }

  /// The interrupt predicate; one that throws counts as asking to stop.
  bool asked_to_stop() noexcept {
    try {
      return interrupt();
    } catch (...) {
      return true;
    }
  }

  /// The slowest live subscriber's cursor plus the capacity: the first
  /// sequence whose slot it may still read. At most `w` plus the capacity,
  /// so the cursors are read again at least once a lap: a subscriber that
  /// joins (or goes on after it was overtaken) is waited for from then on.
  std::uint64_t room_limit(std::uint64_t w) noexcept {
    std::uint64_t lowest = w;
    for (std::uint32_t i = 0; i < kMaxSubscribers; ++i) {
      const EndpointEntry& e = channel->subscriber(i);
      // SYNC POINT READ: acquire of the state pairs with the subscriber's
      // release store of kEndpointLive; acquire of the cursor pairs with
      // its release store after it was done with the message before it, so
      // our writes into that slot come after its reads.
      if (endpoint_phase(e.state.load(std::memory_order_acquire)) != kEndpointLive) continue;
      const std::uint64_t c = e.read_cursor().load(std::memory_order_acquire);
      const std::uint64_t bit = std::uint64_t{1} << i;
      if ((overtaken_mask & bit) != 0) {
        if (c == overtaken_cursor[i] && e.tenancy.load(std::memory_order_relaxed) == overtaken_tenancy[i]) continue;
        overtaken_mask &= ~bit;  // it went on: it holds us again
      }
      if (c < lowest) {
        lowest = c;
        laggard = i;
      }
    }
    // A ring is fresh for its first lap: no subscriber reads it before.
    return std::max(lowest, ring->start) + ring->capacity();
  }

  /// After block_timeout: every live subscriber still holding sequence `w`
  /// is overtaken until its cursor moves.
  void overtake(std::uint64_t w) noexcept {
    for (std::uint32_t i = 0; i < kMaxSubscribers; ++i) {
      const EndpointEntry& e = channel->subscriber(i);
      if (endpoint_phase(e.state.load(std::memory_order_acquire)) != kEndpointLive) continue;
      const std::uint64_t c = e.read_cursor().load(std::memory_order_acquire);
      if (c == UINT64_MAX || c + ring->capacity() > w) continue;
      overtaken_mask |= std::uint64_t{1} << i;
      overtaken_cursor[i] = c;
      overtaken_tenancy[i] = e.tenancy.load(std::memory_order_relaxed);
    }
  }

  SlotHeader* claimed(SlotHeader* slot, std::uint64_t s, std::uint64_t& seq) noexcept {
    // We hold the claim: we alone write the state until we give it back. (A
    // claim taken from a writer known dead: its last stores to the state
    // had left its store buffer before the kernel reaped it, long before
    // liveness said dead.)
    // relaxed store, then SYNC POINT WRITE (seqlock): the fence orders the
    // writing state before the header and payload stores that follow;
    // pairs with the reader's acquire fence before its re-check.
    test_pause(kPauseTaken);
    slot->state.store(writing_state(s, owner), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    seq = s;
    test_pause(kPauseClaimed);
    return slot;
  }

  /// CLOCK_REALTIME for the header, derived from the monotonic stamp and
  /// an offset re-read every 100 ms: one clock read per publish instead of
  /// two. A wall-clock step shows in headers within 100 ms; frequencies
  /// never depend on it.
  std::int64_t wall_from_mono(std::int64_t mono) noexcept {
    if (mono - wall_offset_read_at > 100'000'000 || wall_offset_read_at == 0) {
      wall_offset = wall_now_ns() - mono_now_ns();
      wall_offset_read_at = mono;
    }
    return mono + wall_offset;
  }

  /// A message's header, drafted before its slot is claimed. The claim's
  /// store of the writing state is the first to the line subscribers poll;
  /// a subscriber that reads the line before the commit is stored takes it
  /// back, and the commit then waits for it once more. So the work (the
  /// wall offset, provenance from the thread's inputs, packing) is done
  /// here, and only stores are left between claim and commit (write_header).
  struct HeaderDraft {
    std::int64_t mono = 0;
    std::int64_t wall = 0;
    std::uint32_t size = 0;
    std::uint16_t flags = 0;  ///< kSlotInlineProvenance or kSlotInlinePayload set here when they fit
    std::uint8_t input_count = 0;
    std::uint8_t entry_count = 0;
    std::uint16_t second_level_cut = 0;
    std::int64_t processing_ns = 0;
    std::uint64_t cut = 0;  ///< first-level inputs not cited (the publisher's counter)
    std::array<std::uint64_t, kInlineEntries> packed{};
    std::array<ProvenanceEntry, kProvenanceEntries> entries;  ///< [0, entry_count); not inline
  };

  /// `room`: provenance entries the header has space for (a ring slot has
  /// kProvenanceEntries; an iceoryx chunk loaned without provenance none).
  /// Reads, never writes, what the provenance is drawn from: a draft not
  /// written (the claim failed) cites nothing.
  HeaderDraft draft_header(std::int64_t mono, std::uint32_t size, std::uint16_t flags,
                           std::uint32_t room = kProvenanceEntries) noexcept {
    HeaderDraft d;
    d.mono = mono;
    d.wall = wall_from_mono(mono);
    d.size = size;
    d.flags = flags;
    if ((flags & kSlotDiscarded) == 0) draft_provenance(d, room);
    return d;
  }

  /// A message copied in by publish(): as draft_header, and its payload
  /// goes in the header's line when it is small and cites nothing
  /// (kSlotInlinePayload; its processing time is then 0 too).
  HeaderDraft draft_copied(std::int64_t mono, std::uint32_t size) noexcept {
    HeaderDraft d = draft_header(mono, size, 0);
    if (!iox && size <= kInlinePayloadBytes && d.entry_count == 0) {
      d.flags = static_cast<std::uint16_t>((d.flags & ~kSlotInlineProvenance) | kSlotInlinePayload);
    }
    return d;
  }

  /// Stores a draft into a slot we hold (ring) or a chunk we loaned
  /// (iceoryx; `seq` is written for those only, a ring slot's is in its
  /// state). Stores only; the caller then calls cited().
  void write_header(SlotHeader* slot, std::uint64_t seq, const HeaderDraft& d) noexcept {
    slot->flags = d.flags;
    slot->mono_ns = d.mono;
    slot->wall_ns = d.wall;
    slot->size = d.size;
    slot->publisher_id = id;
    slot->input_count = d.input_count;
    slot->entry_count = d.entry_count;
    slot->inputs_cut = saturate16(d.cut);
    slot->second_level_cut = d.second_level_cut;
    if ((d.flags & kSlotInlinePayload) != 0) return;  // the caller stores the payload where these would be
    slot->processing_ns = d.processing_ns;
    if ((d.flags & kSlotInlineProvenance) != 0) {
      slot->inline_entries = d.packed;
    } else if (!iox) {
      // A ring slot has lines for all kProvenanceEntries (an iceoryx chunk
      // room for n only), and the entries are staged in an array of as many.
      detail::copy_provenance(Channel::provenance(slot), d.entries.data(), d.entry_count);
    } else {
      slot->inline_entries[kChunkSequence] = seq;
      if (d.entry_count != 0) {
        std::memcpy(Channel::provenance(slot), d.entries.data(), sizeof(ProvenanceEntry) * d.entry_count);
      }
    }
  }

  /// Drafts, writes and cites at once (an iceoryx chunk: no subscriber
  /// polls it while it is written).
  void write_header_now(SlotHeader* slot, std::uint64_t seq, std::int64_t mono, std::uint32_t size,
                        std::uint32_t room = kProvenanceEntries) noexcept {
    const HeaderDraft draft = draft_header(mono, size, 0, room);
    write_header(slot, seq, draft);
    cited(draft);
  }

  static std::uint16_t saturate16(std::uint64_t v) noexcept {
    return static_cast<std::uint16_t>(std::min<std::uint64_t>(v, 0xFFFF));
  }

  /// The draft's provenance: explicit, or the inputs this thread's callback
  /// scope recorded (the first kProvenanceEntries), or the inputs this
  /// thread took since our previous publish on it (the latest
  /// kProvenanceEntries); then, in the room left, those inputs' own inputs.
  /// What does not fit is cut (and counted by cited). A ring slot's
  /// entries that fit go packed into the header's line
  /// (kSlotInlineProvenance), so its provenance lines are neither written
  /// nor read.
  void draft_provenance(HeaderDraft& d, std::uint32_t room) const noexcept {
    ProvenanceEntry* out = d.entries.data();
    std::uint32_t n = 0;
    std::uint64_t count = 0;
    std::uint64_t second_cut = 0;
    if (explicit_provenance) {
      count = std::min(explicit_count, room);
      std::copy_n(explicit_entries, count, out);
      n = static_cast<std::uint32_t>(count);
      d.cut = explicit_cut + explicit_count - count;
    } else {
      const detail::InputLog& log = detail::input_log();
      const InputSelection inputs = select_inputs(log, room);
      count = inputs.count;
      d.cut = inputs.total - count;
      for (std::uint64_t i = 0; i < count; ++i) {
        const detail::TakenInput& t = log.ring[(inputs.first + i) % kProvenanceEntries];
        out[n++] = ProvenanceEntry{t.input.channel_index, 0, t.input.sequence};
      }
      for (std::uint64_t i = 0; i < count; ++i) {
        const detail::TakenInput& t = log.ring[(inputs.first + i) % kProvenanceEntries];
        for (std::uint32_t j = 0; j < t.parent_count; ++j) {
          if (n == room) {
            ++second_cut;
            continue;
          }
          out[n++] = ProvenanceEntry{t.parents[j].channel_index, static_cast<std::uint32_t>(i), t.parents[j].sequence};
        }
      }
      d.processing_ns = count != 0 ? d.mono - log.run_ns : 0;
    }
    d.input_count = static_cast<std::uint8_t>(count);
    d.entry_count = static_cast<std::uint8_t>(n);
    d.second_level_cut = saturate16(second_cut);
    if (!iox && n <= kInlineEntries && std::all_of(out, out + n, inlinable)) {
      d.flags |= kSlotInlineProvenance;
      for (std::uint32_t i = 0; i < n; ++i) d.packed[i] = pack_inline(out[i]);
    }
  }

  /// A message drafted from the thread's inputs was written (or loaned and
  /// committed): the next publish cites what the thread takes from now on,
  /// the next take starts a new run (its clock read starts the next
  /// processing time), and inputs cut are counted.
  void cited(const HeaderDraft& d) noexcept {
    detail::InputLog& log = detail::input_log();
    if (!log.keep_first) {
      mark_log = &log;
      mark = log.taken;
      log.run_start = log.taken;
    }
    if (d.cut != 0) {
      // Single writer (this publisher): relaxed load and store, statistics.
      entry->provenance_cut.store(entry->provenance_cut.load(std::memory_order_relaxed) + d.cut,
                                  std::memory_order_relaxed);
    }
  }

  /// Moves the slot from our writing state to committed. False when the
  /// slot is no longer ours (taken over after we were judged dead): the
  /// message is then dropped, and counted by the caller.
  bool commit(SlotHeader* slot, std::uint64_t seq, std::int64_t mono, bool fast, bool prefetch = true) noexcept {
    test_pause(kPauseWritten);
    if (!release_slot(fast ? *ring : claim_ring(seq), slot, seq, fast)) {
      if (fast) solo_end();
      return false;
    }
    notify(mono, fast);
    // Solo: our next message goes into the next slot. Its payload's first
    // line is taken for writing now, while no one reads it (its last
    // reader was a lap ago), so that message's stores do not wait for it
    // behind the state's line. The header's line is left alone: subscribers
    // poll it, and would only take it back. Not after a message whose
    // payload was in the header's line: the next is likely as small.
    if (fast && prefetch) prefetch_for_write(Channel::payload(ring->slot(seq + 1)));
    return true;
  }

  /// Stores the committed state, then gives the claim back: in that order,
  /// so no later claimer can write the state before our last store to it.
  /// False when the claim is no longer ours (taken over after we were judged
  /// dead, which a live writer never is): the state is then not touched.
  bool release_slot(const Ring& r, SlotHeader* slot, std::uint64_t seq, bool fast) noexcept {
    std::atomic<std::uint64_t>& word = r.claim_word(seq);
    std::uint64_t expected = writing_state(seq, owner);
    // relaxed: our own claim, read back from our own line; only a taker
    // could have changed it.
    if (word.load(std::memory_order_relaxed) != expected) return false;
    // SYNC POINT WRITE: header and payload before the committed state
    // (release); pairs with the subscriber's acquire load of the state.
    slot->state.store(committed_state(seq), std::memory_order_release);
    if (fast) {
      // Solo: a live writer's claim is never taken, so nobody else writes
      // the word while it names us. SYNC POINT WRITE: release, as the CAS.
      word.store(committed_state(seq), std::memory_order_release);
      return true;
    }
    // SYNC POINT WRITE: the state store above before the next claimer's
    // (release; pairs with its acquire CAS). On x86-64 a LOCK CMPXCHG, which
    // wake_waiters counts on there to order the commit before its load of
    // `waiters` (elsewhere it fences).
    return word.compare_exchange_strong(expected, committed_state(seq), std::memory_order_release,
                                        std::memory_order_relaxed);
  }

  /// After a message is visible to subscribers: counts it, stamps the time
  /// list (the notify hook) and wakes sleepers.
  void notify(std::int64_t mono, bool fast) noexcept {
    // Single writer: a plain increment. SYNC POINT WRITE (release): the
    // message is handed on before it is counted; pairs with the acquire
    // load in Channel::publisher_count (an iceoryx subscriber settling the
    // discards of its queue). A plain store on x86-64.
    entry->messages.store(entry->messages.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    test_pause(kPauseCommitted);
    if (notify_hook) {
      // Solo: the index solo_begin announced in solo_busy_stamp, and our
      // own head (relaxed: readers need no order with it, as for the CAS).
      const std::uint64_t i = fast ? solo_stamp : channel->claim_stamp();
      if (fast) header->solo_time_list_head.store(i + 1, std::memory_order_relaxed);
      test_pause(kPauseStampClaimed);
      channel->store_stamp(i, mono);
    }
    wake(fast);
    if (fast) solo_end();
  }

  /// The inputs of `log` our next message cites, at most `room` of them:
  /// `count` of the `total` taken, from ring index `first` on.
  struct InputSelection {
    std::uint64_t total, count, first;
  };
  InputSelection select_inputs(const detail::InputLog& log, std::uint32_t room) const noexcept {
    const std::uint64_t total = log.taken - inputs_from(log);
    const std::uint64_t count = std::min<std::uint64_t>(total, room);
    return {total, count, log.keep_first ? 0 : log.taken - count};
  }

  /// The provenance entries draft_provenance would fill for our next
  /// message given all the room (inputs and their own inputs, at most
  /// kProvenanceEntries): an iceoryx chunk carries room for these only.
  std::uint32_t provenance_entries() const noexcept {
    if (explicit_provenance) return std::min<std::uint32_t>(explicit_count, kProvenanceEntries);
    const detail::InputLog& log = detail::input_log();
    const InputSelection cited = select_inputs(log, kProvenanceEntries);
    std::uint64_t n = cited.count;
    for (std::uint64_t i = 0; i < cited.count && n < kProvenanceEntries; ++i) {
      n += log.ring[(cited.first + i) % kProvenanceEntries].parent_count;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, kProvenanceEntries));
  }

  /// Where in `log` the inputs of our next message start: all of a
  /// callback scope's (keep_first), else what the thread took since our
  /// previous publish on it (or since its run began).
  std::uint64_t inputs_from(const detail::InputLog& log) const noexcept {
    if (log.keep_first) return 0;
    return mark_log == &log ? mark : log.run_start;
  }

  /// iceoryx: a chunk for `size` bytes and the channel's next sequence;
  /// nullptr (counted as a drop) when RouDi's pool has no chunk free.
  /// `room` gets the provenance entries its header holds: those the message
  /// cites now, or (`more_inputs`: a loan, whose writer may take more
  /// before the commit) all kProvenanceEntries when it cites any.
  std::byte* loan_chunk(std::uint32_t size, bool more_inputs, SlotHeader*& slot, std::uint64_t& seq,
                        std::uint32_t& room) noexcept {
    room = provenance_entries();
    if (more_inputs && room != 0) room = kProvenanceEntries;
    std::byte* payload = iox->loan(size, room, slot);
    if (payload == nullptr) {
      count_drop();
      return nullptr;
    }
    // relaxed: the cursor only hands out numbers (and counts for tools).
    seq = header->write_cursor.fetch_add(1, std::memory_order_relaxed);
    test_pause(kPauseClaimed);
    return payload;
  }

  /// iceoryx: writes the chunk's header (as a slot's), stamps this port's
  /// own count into `state` (a subscriber's gap in it is a loss), sends.
  void send_chunk(std::byte* payload, SlotHeader* slot, std::uint64_t seq, std::uint32_t size,
                  std::uint32_t room) noexcept {
    const std::int64_t mono = stamp_now_ns();
    write_header_now(slot, seq, mono, size, room);
    // relaxed: not a ring state but a plain value in the chunk; its
    // ordering partner is iceoryx's hand-over of the chunk (publish below,
    // the subscriber's take), as for the rest of the header.
    slot->state.store(iox->next_count(), std::memory_order_relaxed);
    test_pause(kPauseWritten);
    iox->publish(payload);
    // SYNC POINT (store-load): the push into the subscribers' queues above
    // before wake_waiters' load of `waiters`; pairs with the fence after the
    // sleeper's fetch_or in Channel::enter_waiters(). wake_waiters relies on
    // a locked instruction before it on x86-64: the notify hook's fetch_add
    // (claim_stamp) is one; without the hook, a full fence (iceoryx's push
    // is not known to end with one).
    if (!notify_hook) std::atomic_thread_fence(std::memory_order_seq_cst);
    notify(mono, false);
  }

  /// Test seam, compiled only into the test peer (SHMBUS_TEST_SEAMS; the
  /// library has none): SHMBUS_TEST_PAUSE=taken|claimed|written|committed|
  /// stamp|wake-early|registered|granted makes the publisher stop itself
  /// (SIGSTOP) at that step, once per publisher, so a test can kill, stall
  /// or resume it exactly there (taken: the claim word is ours, the slot's
  /// state not yet written; registered: our entry is claimed, the grant not
  /// yet revoked (end_solo); granted: the solo grant is taken, the
  /// publishers not yet counted (keep_solo_grant)). Read once at start.
  ///
  /// wake-early: a solo publish that has passed its grant check loads
  /// `waiters` now, stops, and on resuming acts on that load instead of
  /// loading again after its commit. That is an execution the CPU may
  /// choose: the solo wake check has no fence, so its load may be satisfied
  /// before the publish's stores are visible (store-load reordering, on
  /// x86-64 too). A test can then put a sleeper between the two.
  enum PausePoint {
    kPauseNone,
    kPauseTaken,
    kPauseClaimed,
    kPauseWritten,
    kPauseCommitted,
    kPauseStampClaimed,
    kPauseWakeEarly,
    kPauseRegistered,
    kPauseGranted,
    kPauseGrowLocked,
    kPauseGrowCreated,
    kPauseGrowAnnounced
  };
  /// A growth's steps (Channel::grow) as pause points: grow-locked,
  /// grow-created, grow-announced.
  void grow_pause(GrowPause at) noexcept {
    test_pause(at == GrowPause::kLocked    ? kPauseGrowLocked
               : at == GrowPause::kCreated ? kPauseGrowCreated
                                           : kPauseGrowAnnounced);
  }
#ifdef SHMBUS_TEST_SEAMS
  PausePoint pause_at = kPauseNone;
  bool woke_early = false;
  std::uint64_t waiters_seen_early = 0;
  void test_pause(PausePoint p) noexcept {
    if (pause_at == p) [[unlikely]] {
      pause_at = kPauseNone;
      ::raise(SIGSTOP);
    }
  }
  void read_test_pause() noexcept {
    const char* p = std::getenv("SHMBUS_TEST_PAUSE");  // NOLINT(concurrency-mt-unsafe): read once at set-up
    const std::string_view point{p == nullptr ? "" : p};
    pause_at = point == "taken"            ? kPauseTaken
               : point == "claimed"        ? kPauseClaimed
               : point == "written"        ? kPauseWritten
               : point == "committed"      ? kPauseCommitted
               : point == "stamp"          ? kPauseStampClaimed
               : point == "wake-early"     ? kPauseWakeEarly
               : point == "registered"     ? kPauseRegistered
               : point == "granted"        ? kPauseGranted
               : point == "grow-locked"    ? kPauseGrowLocked
               : point == "grow-created"   ? kPauseGrowCreated
               : point == "grow-announced" ? kPauseGrowAnnounced
                                           : kPauseNone;
  }
  void test_wake_early() noexcept {
    if (pause_at != kPauseWakeEarly) return;
    waiters_seen_early = header->waiters.load(std::memory_order_relaxed);
    woke_early = true;
    test_pause(kPauseWakeEarly);
  }
  /// The wake after a commit; the one a wake-early publish took, if any.
  void wake(bool fast) noexcept {
    if (std::exchange(woke_early, false)) {
      wake_sleepers(*header, waiters_seen_early);
      return;
    }
    wake_waiters(*header, fast);
  }
#else
  static void test_pause(PausePoint /*p*/) noexcept {}
  static void read_test_pause() noexcept {}
  static void test_wake_early() noexcept {}
  void wake(bool fast) const noexcept { wake_waiters(*header, fast); }
#endif

  /// On the shared path: asks for the solo grant every kSoloRetryEvery
  /// publishes (the other publishers may have gone).
  void maybe_go_solo() noexcept {
    if (open_loans != 0 || ++shared_publishes < kSoloRetryEvery) return;
    shared_publishes = 0;
    solo_grant = ask_solo();
  }

  /// Asks for the solo grant: taken, then kept if we are alone (0: not).
  std::uint64_t ask_solo() noexcept {
    const std::uint64_t grant = channel->take_solo_grant(owner);
    if (grant == 0) return 0;
    test_pause(kPauseGranted);
    const std::uint64_t kept = channel->keep_solo_grant(grant);
    // A channel grown since our ring was current (by a publisher since
    // gone): the grant is given back, and the shared path's next claim
    // moves us to the new ring. No ring grows while we hold it.
    if (kept != 0 && header->generation.load(std::memory_order_seq_cst) != gen) {
      channel->return_solo(kept);
      return 0;
    }
    return kept;
  }

  void count_drop() noexcept {
    entry->dropped().store(entry->dropped().load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    header->publish_dropped.fetch_add(1, std::memory_order_relaxed);
  }
};

namespace {

/// The configuration's settings for a channel with the publisher's own
/// sizes, when it gives any (checked as the configuration checks them).
ChannelSettings with_options(ChannelSettings s, const PublisherOptions& o) {
  if (o.max_message_size != 0) {
    if (o.max_message_size > kMaxMessageSize) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("max_message_size {} is over {} bytes", o.max_message_size, kMaxMessageSize));
    }
    s.max_message_size = o.max_message_size;
  }
  if (o.capacity != 0) {
    if (!std::has_single_bit(o.capacity) || o.capacity > kMaxCapacity) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("capacity {} is not a power of two up to {}", o.capacity, kMaxCapacity));
    }
    s.capacity = o.capacity;
  }
  if (o.max_grow_size != 0) {
    if (o.max_grow_size > kMaxMessageSize) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("max_grow_size {} is over {} bytes", o.max_grow_size, kMaxMessageSize));
    }
    s.max_grow_size = o.max_grow_size;
  }
  if (o.min_capacity > s.capacity) {
    if (o.min_capacity > kMaxCapacity) {
      throw Error(Errc::kInvalidArgument, fmt::format("a depth of {} is over {}", o.min_capacity, kMaxCapacity));
    }
    s.capacity = std::bit_ceil(o.min_capacity);
    s.sizes_from = "the publisher's options";
  }
  if (o.max_message_size != 0 || o.capacity != 0) s.sizes_from = "the publisher's options";
  return s;
}

}  // namespace

Publisher::Publisher(std::string_view channel, const TypeInfo& type, Context& context, const PublisherOptions& options)
    : impl_(std::make_unique<Impl>()) {
  // The name is checked and the channel's settings resolved once, here.
  const ChannelName name(channel, context.config().domain);
  const ChannelSettings settings = with_options(context.config().channel(name), options);
  // A process that may publish solo registers for the solo holder's
  // membarrier here, once, with its first publisher: a process that only
  // subscribes never does, so the membarrier of a sleeper or a revoker
  // interrupts only the CPUs running a possible holder. Not at a publish:
  // with several threads running the registration waits for an RCU grace
  // period (about 10 ms), which would hold up that message.
  (void)detail::solo_publishing_enabled();
  auto ch = context.state().channel(name, settings, &type, options.create);
  impl_->read_test_pause();
  impl_->entry_index = ch->register_publisher(options.node.empty() ? context.node() : options.node, impl_->id);
  impl_->channel = std::move(ch);
  impl_->header = &impl_->channel->header();
  impl_->entry = &impl_->channel->publisher(impl_->entry_index);
  impl_->owner = impl_->channel->publisher_token(impl_->entry_index);
  impl_->max_size = impl_->channel->size_ceiling();
  impl_->grow_limits = GrowLimits{context.config().domain, context.config().grow_budget};
  impl_->ring_held = impl_->channel->current_ring();
  if (!impl_->ring_held) {
    throw Error(Errc::kLayoutMismatch,
                fmt::format("channel {}: its current ring cannot be mapped (see the line above)", name.str()));
  }
  impl_->ring = impl_->ring_held.get();
  impl_->gen = impl_->ring->generation;
  impl_->stall_timeout_ns = impl_->channel->stall_timeout_ns();
  impl_->notify_hook = options.notify_hook;
  impl_->blocking = impl_->channel->overflow() == Overflow::kBlock;
  impl_->block_timeout_ns = impl_->channel->block_timeout_ns();
  impl_->wait_spin_ns = settings.wait_spin.count();
  // A solo publisher's publishes before our registration are done (or it
  // is fenced off) once end_solo returns; then we may hold the grant
  // ourselves if we are alone.
  impl_->test_pause(Impl::kPauseRegistered);
  impl_->channel->end_solo();
  impl_->solo_grant = impl_->ask_solo();
  if (impl_->channel->transport() == Transport::kIceoryx) {
    impl_->iox = std::make_unique<IceoryxPublisherPort>(context.config().domain, name.str(), settings.publisher_history,
                                                        impl_->channel->live_endpoints(true) != 0);
  }
}

Publisher::~Publisher() = default;
Publisher::Publisher(Publisher&&) noexcept = default;
Publisher& Publisher::operator=(Publisher&&) noexcept = default;

PublishResult Publisher::publish(std::span<const std::byte> payload) noexcept {
  Impl& p = *impl_;
  if (payload.size() > p.max_size) [[unlikely]]
    return p.over_ceiling(payload.size());
  if (p.iox) {
    SlotHeader* slot = nullptr;
    std::uint64_t seq = 0;
    std::uint32_t room = 0;
    std::byte* chunk = p.loan_chunk(static_cast<std::uint32_t>(payload.size()), false, slot, seq, room);
    if (chunk == nullptr) return PublishResult::kDropped;
    if (!payload.empty()) std::memcpy(chunk, payload.data(), payload.size());  // an empty span's data() may be null
    p.send_chunk(chunk, slot, seq, static_cast<std::uint32_t>(payload.size()), room);
    return PublishResult::kOk;
  }
  const auto size = static_cast<std::uint32_t>(payload.size());
  if (size > p.ring->max_message_size) [[unlikely]] {
    if (!p.fit(size)) return p.refused(size);
  }
  // Drafted before the claim: between claim and commit only stores are
  // left (HeaderDraft), and the inputs are marked cited after the commit.
  Impl::HeaderDraft draft = p.draft_copied(stamp_now_ns(), size);
  std::uint64_t seq = 0;
  bool fast = false;
  SlotHeader* slot = p.claim(seq, fast, size);
  if (slot == nullptr) {
    p.count_drop();
    return PublishResult::kDropped;
  }
  if (p.waited) draft = p.draft_copied(stamp_now_ns(), size);  // waited for room: the message exists from now
  p.write_header(slot, seq, draft);
  if (!payload.empty()) std::memcpy(Channel::payload(slot, draft.flags, size), payload.data(), payload.size());
  const bool committed = p.commit(slot, seq, draft.mono, fast, (draft.flags & kSlotInlinePayload) == 0);
  p.cited(draft);
  if (!p.older_rings.empty()) p.release_older_rings();
  if (!committed) {
    p.count_drop();
    return PublishResult::kDropped;
  }
  if (!fast) p.maybe_go_solo();
  return PublishResult::kOk;
}

Loan Publisher::loan(std::size_t size) noexcept {
  Loan loan;
  Impl& p = *impl_;
  if (size > p.max_size) {
    static_cast<void>(p.over_ceiling(size));  // the invalid loan says it
    return loan;
  }
  if (!p.iox && size > p.ring->max_message_size && !p.fit(size)) {
    static_cast<void>(p.refused(size));
    return loan;
  }
  std::uint64_t seq = 0;
  SlotHeader* slot = nullptr;
  std::byte* data = nullptr;
  if (p.iox) {
    // A loan is an iceoryx chunk: the message is written in place.
    std::uint32_t room = 0;
    data = p.loan_chunk(static_cast<std::uint32_t>(size), true, slot, seq, room);
    if (data == nullptr) return loan;
    loan.room_ = room;
  } else {
    // A loan takes the shared path (it may stay open across publishes): the
    // grant is given up first, and asked for again once no loan is open.
    if (p.solo_grant != 0) p.channel->return_solo(std::exchange(p.solo_grant, 0));
    bool fast = false;
    slot = p.claim(seq, fast, size);
    if (slot == nullptr) {
      p.count_drop();
      return loan;
    }
    ++p.open_loans;
    data = Channel::payload(slot);
  }
  loan.owner_ = this;
  loan.slot_ = slot;
  loan.data_ = data;
  loan.size_ = size;
  loan.sequence_ = seq;
  return loan;
}

PublishResult Publisher::commit(Loan& loan) noexcept { return commit(loan, loan.size_); }

PublishResult Publisher::commit(Loan& loan, std::size_t size) noexcept {
  if (!loan.valid() || loan.owner_ != this) return PublishResult::kDropped;
  if (size > loan.size_) return PublishResult::kTooLarge;
  Impl& p = *impl_;
  auto* slot = static_cast<SlotHeader*>(loan.slot_);
  if (p.iox) {
    p.send_chunk(loan.data_, slot, loan.sequence_, static_cast<std::uint32_t>(size), loan.room_);
    loan.data_ = nullptr;
    loan.owner_ = nullptr;
    return PublishResult::kOk;
  }
  // The publish time is the commit time: that is when the message exists.
  const Impl::HeaderDraft draft = p.draft_header(stamp_now_ns(), static_cast<std::uint32_t>(size), 0);
  p.write_header(slot, loan.sequence_, draft);
  const bool committed = p.commit(slot, loan.sequence_, draft.mono, false);
  p.cited(draft);
  --p.open_loans;
  if (!p.older_rings.empty()) p.release_older_rings();
  loan.data_ = nullptr;
  loan.owner_ = nullptr;
  if (!committed) {
    p.count_drop();
    return PublishResult::kDropped;
  }
  return PublishResult::kOk;
}

void Publisher::discard(Loan& loan) noexcept {
  Impl& p = *impl_;
  if (p.iox) {
    // Never sent: its sequence is a gap no subscriber counts as lost (they
    // count gaps in each publisher's own count of messages sent).
    p.iox->release(loan.data_);
    loan.data_ = nullptr;
    loan.owner_ = nullptr;
    return;
  }
  auto* slot = static_cast<SlotHeader*>(loan.slot_);
  p.write_header(slot, loan.sequence_, p.draft_header(stamp_now_ns(), 0, kSlotDiscarded));
  // From our own claim only: a slot taken over is not ours to end.
  if (p.release_slot(p.claim_ring(loan.sequence_), slot, loan.sequence_, false)) wake_waiters(*p.header);
  --p.open_loans;
  if (!p.older_rings.empty()) p.release_older_rings();
  loan.data_ = nullptr;
  loan.owner_ = nullptr;
}

Loan& Loan::operator=(Loan&& other) noexcept {
  if (this != &other) {
    if (valid()) owner_->discard(*this);
    owner_ = std::exchange(other.owner_, nullptr);
    slot_ = std::exchange(other.slot_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    sequence_ = other.sequence_;
    room_ = other.room_;
  }
  return *this;
}

Loan::~Loan() {
  if (valid()) owner_->discard(*this);
}

void Publisher::set_provenance(std::span<const Provenance> inputs) noexcept {
  Impl& p = *impl_;
  p.explicit_provenance = !inputs.empty();
  p.explicit_count = static_cast<std::uint32_t>(std::min(inputs.size(), kProvenanceEntries));
  p.explicit_cut = inputs.size() - p.explicit_count;
  for (std::uint32_t i = 0; i < p.explicit_count; ++i) {
    p.explicit_entries[i] = ProvenanceEntry{inputs[i].channel_index, inputs[i].via, inputs[i].sequence};
  }
}

std::uint32_t Publisher::id() const noexcept { return impl_->id; }
const std::string& Publisher::channel() const noexcept { return impl_->channel->name(); }
std::uint32_t Publisher::channel_index() const noexcept {
  return impl_->header->registry_index.load(std::memory_order_relaxed);
}
std::size_t Publisher::max_message_size() const noexcept {
  return impl_->iox ? impl_->max_size : impl_->ring->max_message_size;
}
std::size_t Publisher::size_ceiling() const noexcept { return impl_->max_size; }
std::string Publisher::too_large(std::size_t size) const { return impl_->refusal_line(size); }

PublishResult Publisher::refuse(std::size_t size) noexcept { return impl_->over_ceiling(size); }
void Publisher::set_interrupt(std::function<bool()> interrupted) { impl_->interrupt = std::move(interrupted); }
bool Publisher::may_wait() const noexcept { return impl_->blocking; }
std::uint64_t Publisher::published() const noexcept { return impl_->entry->messages.load(std::memory_order_relaxed); }
std::uint64_t Publisher::dropped() const noexcept { return impl_->entry->dropped().load(std::memory_order_relaxed); }

std::uint64_t Publisher::block_timeouts() const noexcept {
  return impl_->entry->block_timeouts.load(std::memory_order_relaxed);
}

std::chrono::nanoseconds Publisher::blocked() const noexcept {
  return std::chrono::nanoseconds(impl_->entry->blocked_ns().load(std::memory_order_relaxed));
}

void Publisher::record_transit(std::int64_t ns) noexcept {
  impl_->entry->add_age_sample(ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
}

void Publisher::count_upstream_lost(std::uint64_t n) noexcept {
  // Single writer (this publisher): relaxed load and store, statistics.
  auto& lost = impl_->entry->upstream_lost;
  lost.store(lost.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace shmbus
