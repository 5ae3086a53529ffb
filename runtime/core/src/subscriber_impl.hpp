#pragma once
// The state of a Subscriber, shared with WaitSet (which sleeps on the
// channels of several subscribers at once).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "channel.hpp"
#include "iceoryx_port.hpp"
#include "process.hpp"
#include "ring.hpp"
#include "shmbus/input_scope.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus {

using namespace detail;
using namespace layout;

/// How long a subscriber polls an empty slot before it also reads the
/// write cursor (to notice a claimed sequence whose slot is not written
/// yet): the cursor's line is every publisher's, and a poll loop reading it
/// takes it away from them.
inline constexpr std::int64_t kCursorCheckNs = 20'000;

/// How often a subscriber waiting for its channel looks for it.
inline constexpr std::int64_t kAttachRetryNs = 10'000'000;

struct Subscriber::Impl {
  /// The name checked and resolved, and the channel's settings from
  /// `config`, once.
  Impl(ChannelName checked_name, const Config& config)
      : name(std::move(checked_name)), settings(config.channel(name)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  std::shared_ptr<Channel> channel;  ///< null while waiting for the channel to appear
  /// The ring of the generation `next` is in (layout/channel_layout.hpp,
  /// "Generations"), and where it ends: the next generation's start, once
  /// known (else kStartUnknown).
  std::shared_ptr<const Ring> ring_held;
  const Ring* ring = nullptr;
  std::uint32_t gen = 0;
  std::uint64_t ring_end = kStartUnknown;
  std::shared_ptr<const Ring> previous_ring;
  ChannelName name;
  ChannelSettings settings;
  Context* context = nullptr;
  SubscriberOptions options;
  std::int64_t next_attach_try = 0;
  ChannelHeader* header = nullptr;
  EndpointEntry* entry = nullptr;
  std::uint32_t entry_index = 0;
  std::uint32_t id = 0;
  std::uint64_t next = 0;          ///< next sequence to deliver
  std::uint64_t pending_lost = 0;  ///< lost since the last delivered message
  /// Ring: the first sequence of those (the losses since the last delivered
  /// message are [lost_from, next), discarded loans between them included).
  std::uint64_t lost_from = 0;
  std::int64_t stall_since = 0;  ///< when `next` was first seen claimed but unwritten
  std::int64_t idle_since = 0;   ///< when a poll first found nothing at `next` (0: not yet looked)
  bool dead_checked = false;
  bool said_wrong_size = false;  ///< wrong_size has said its line
  std::uint32_t idle_polls = 0;
  std::uint32_t age_sample_every = 8;
  std::uint32_t age_countdown = 1;  ///< the first take is sampled
  std::int64_t stall_timeout_ns = 0;
  std::int64_t wait_spin_ns = 0;
  std::uint32_t max_size = 0;  ///< the channel's max_message_size, validated at open
  /// overflow = block: `next` as last stored in the entry's read cursor,
  /// which publishers wait on.
  bool blocking = false;
  std::uint64_t shown_next = UINT64_MAX;
  /// Set on iceoryx channels: messages arrive in its chunks, not the ring.
  std::unique_ptr<IceoryxSubscriberPort> iox;
  /// iceoryx: a chunk taken but not delivered (the caller's buffer was too
  /// small), delivered by the next take.
  const std::byte* held = nullptr;
  const SlotHeader* held_header = nullptr;
  IceoryxSubscriberPort::ChunkBounds held_bounds;
  /// iceoryx: each publisher's count in the last chunk from it, or its
  /// messages published when we subscribed (a gap is a message iceoryx
  /// discarded from our queue).
  std::vector<std::pair<std::uint32_t, std::uint64_t>> last_count;
  /// iceoryx: publisher ids above this registered after we subscribed.
  std::uint64_t id_floor = 0;
  /// iceoryx: a discard reported whose count is not settled yet.
  bool discards_unsettled = false;

  ~Impl() {
    if (held != nullptr) iox->release(held);
    if (!channel) return;
    channel->unregister_subscriber(entry_index);
    if (gen != 0 || channel->generation() != 0) channel->remove_unneeded_generations();
  }

  /// Something to take (or, on the ring, a claimed sequence to judge).
  /// `full`: on the ring, also read the write cursor (a line every
  /// publisher writes), when the slot is not settled.
  [[nodiscard]] bool pending(bool full = true) const noexcept {
    if (iox) return held != nullptr || iox->has_data();
    if (reader_settled(*ring, next) || moved_on()) return true;
    return full && ring_cursor() > next;
  }

  /// The next sequence to claim, as far as our ring goes: the write cursor,
  /// or the next generation's start.
  [[nodiscard]] std::uint64_t ring_cursor() const noexcept { return std::min(channel->write_cursor(), ring_end); }

  /// Whether `next` is past our ring: a later generation starts at or
  /// below it. One load of a line written only when the ring grows.
  [[nodiscard]] bool moved_on() const noexcept {
    if (header->generation.load(std::memory_order_relaxed) == gen) [[likely]]
      return false;
    const std::uint64_t start = channel->generation_start(gen + 1);
    return start != kStartUnknown && next >= start;
  }

  /// Moves to the generation `next` is in, when a later one starts at or
  /// below it (its ring mapped; one removed or refused is skipped to the
  /// start of the one after, its messages counted lost). True when we
  /// moved. Notes the end of our ring once the next start is known.
  [[gnu::noinline]] bool follow() noexcept {
    const std::uint32_t g = channel->generation();
    bool moved = false;
    while (gen < g) {
      const std::uint64_t s1 = channel->generation_start(gen + 1);
      if (s1 == kStartUnknown) break;
      ring_end = s1;
      if (next < s1) break;
      // The newest generation at or below `next`.
      std::uint32_t k = gen + 1;
      while (k < g) {
        const std::uint64_t after = channel->generation_start(k + 1);
        if (after == kStartUnknown || after > next) break;
        ++k;
      }
      std::shared_ptr<const Ring> r;
      try {
        r = channel->ring(k);
      } catch (...) {
        r = nullptr;
      }
      if (!r) {
        const std::uint64_t after = k < g ? channel->generation_start(k + 1) : kStartUnknown;
        if (after == kStartUnknown) break;  // the newest cannot be read: nothing past it either
        skip_to(after);
        continue;
      }
      // The ring we leave stays mapped until we leave the next one: a
      // message of it taken but not yet reread (a recorder's writer) can
      // still be reread (Subscriber::reread_in_place).
      previous_ring = std::exchange(ring_held, std::move(r));
      ring = ring_held.get();
      gen = k;
      max_size = ring->max_message_size;
      ring_end = kStartUnknown;
      header->subscriber_generation[entry_index].store(gen + 1, std::memory_order_relaxed);
      moved = true;
    }
    if (moved) channel->remove_unneeded_generations();
    return moved;
  }

  /// For a wait: whether there is something to take now (settled), or
  /// take must judge a claimed but unwritten sequence now. A claimed one
  /// whose judgment is not due yet is not ready: the wait sleeps on the
  /// futex (the commit wakes it) no later than `judge_by`, lowered to when
  /// the stall is judged (a dead writer after kDeadWriterCheckNs, any writer
  /// at stall_timeout; the stall clock starts here if take has not started
  /// it). `full`: also look for claims (a read of the write cursor).
  [[nodiscard]] bool ready(bool full, std::int64_t& judge_by) noexcept {
    if (iox) return held != nullptr || iox->has_data();
    if (reader_settled(*ring, next) || moved_on()) return true;
    if (!full || ring_cursor() <= next) return false;
    const std::int64_t now = mono_now_ns();
    if (stall_since == 0) {
      stall_since = now;
      dead_checked = false;
    }
    // A writer in the slot is asked about once (give_up_stalled); one not
    // there yet (between the cursor and its claim) only at the bound.
    // relaxed: it only chooses when to look again; take re-reads the state
    // with acquire (its SYNC POINT READ) before it acts on it.
    const std::uint64_t st = ring->slot(next)->state.load(std::memory_order_relaxed);
    const bool ask_writer = !dead_checked && is_writing(st) && state_sequence(st) == next;
    const std::int64_t at = stall_since + (ask_writer ? kDeadWriterCheckNs : stall_timeout_ns);
    if (now >= at) return true;
    judge_by = std::min(judge_by, at);
    return false;
  }

  /// Opens the channel and registers; throws as the constructor does.
  /// `from_start`: the channel appeared after we subscribed (try_attach).
  void open(const std::optional<TypeInfo>& type, bool from_start = false);
  /// For a subscriber waiting for its channel: tries to open it, at most
  /// every 10 ms (or now, with `force`). True when attached.
  bool try_attach(bool force = false) noexcept;

  /// Message age statistics in the entry: one clock read and a few relaxed
  /// single-writer stores, every age_sample_every-th take.
  void record_age(std::int64_t publish_time_ns) noexcept {
    const std::int64_t now = stamp_now_ns();
    entry->add_age_sample(now > publish_time_ns ? static_cast<std::uint64_t>(now - publish_time_ns) : 0);
  }

  void count_lost(std::uint64_t n) noexcept {
    pending_lost += n;
    entry->lost().store(entry->lost().load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  void skip_to(std::uint64_t seq) noexcept {
    if (pending_lost == 0) lost_from = next;
    count_lost(seq - next);
    advance_to(seq);
  }

  /// `next` moves on: the stall and idle clocks start again.
  void advance_to(std::uint64_t seq) noexcept {
    next = seq;
    stall_since = 0;
    idle_since = 0;
  }

  /// Decides about a sequence that is claimed but not committed: keep
  /// waiting (false) or count it lost (true) after the stall bound.
  bool give_up_stalled(std::uint64_t state) noexcept {
    const std::int64_t now = mono_now_ns();
    if (stall_since == 0) {
      stall_since = now;
      dead_checked = false;
      return false;
    }
    const std::int64_t stalled = now - stall_since;
    if (stalled >= stall_timeout_ns) return true;
    if (!dead_checked && stalled >= kDeadWriterCheckNs && is_writing(state) && state_sequence(state) == next) {
      dead_checked = true;
      return !channel->writer_alive(state);
    }
    return false;
  }

  /// Copies a slot's provenance into `info`, at most `room` entries (what
  /// follows the header); runs inside the seqlock read (torn values are
  /// discarded by the re-check), so the counts are clamped before they
  /// bound a copy. `ring`: a ring slot, whose entries may be packed in its
  /// first line (`flags` tells; iceoryx chunks: always after the header).
  static_assert(sizeof(Provenance) == sizeof(ProvenanceEntry) &&
                    offsetof(Provenance, via) == offsetof(ProvenanceEntry, via) &&
                    offsetof(Provenance, sequence) == offsetof(ProvenanceEntry, sequence),
                "a slot's provenance entries are copied into MessageInfo as they are");
  static void read_provenance(const SlotHeader* slot, MessageInfo& info, std::uint32_t room, bool ring,
                              std::uint16_t flags = 0) noexcept {
    const auto load8 = [](const std::uint8_t& v) {
      return std::atomic_ref<const std::uint8_t>(v).load(std::memory_order_relaxed);
    };
    const auto entries = static_cast<std::uint16_t>(std::min<std::uint32_t>(load8(slot->entry_count), room));
    info.entry_count = entries;
    info.input_count = std::min<std::uint16_t>(load8(slot->input_count), entries);
    info.provenance_cut = slot->inputs_cut;
    info.second_level_cut = slot->second_level_cut;
    // An inline payload is where the processing time would be (it is 0).
    info.processing_ns = (flags & kSlotInlinePayload) != 0 ? 0 : slot->processing_ns;
    if (ring && (flags & kSlotInlineProvenance) != 0) {
      const auto n = std::min<std::uint16_t>(entries, kInlineEntries);
      info.entry_count = n;
      info.input_count = std::min(info.input_count, n);
      for (std::uint16_t i = 0; i < n; ++i) {
        const ProvenanceEntry e = unpack_inline(slot->inline_entries[i]);
        info.provenance[i] = Provenance{e.channel_index, 0, e.sequence};
      }
    } else if (ring) {
      // A ring slot's lines hold all kProvenanceEntries (an iceoryx chunk
      // only `room`).
      detail::copy_provenance(info.provenance.data(), Channel::provenance(slot), entries);
    } else if (entries != 0) {
      std::memcpy(info.provenance.data(), Channel::provenance(slot), sizeof(ProvenanceEntry) * entries);
    }
  }

  /// A ring slot's message size, read inside the seqlock read. atomic_ref
  /// (relaxed): the size bounds the copy, so the compiler must not read it
  /// again after the bound is applied. The bound is our private copy of the
  /// geometry, and for a payload in the header's line (`flags`) that line:
  /// a torn header may claim any size.
  [[nodiscard]] std::uint32_t slot_size(const SlotHeader* slot, std::uint16_t flags) const noexcept {
    return slot_size_in(slot, flags, max_size);
  }
  /// The same, bounded by `bound` (the ring's slots).
  [[nodiscard]] static std::uint32_t slot_size_in(const SlotHeader* slot, std::uint16_t flags,
                                                  std::uint32_t bound) noexcept {
    const std::uint32_t size = std::atomic_ref<const std::uint32_t>(slot->size).load(std::memory_order_relaxed);
    return std::min({size, bound, (flags & kSlotInlinePayload) != 0 ? kInlinePayloadBytes : bound});
  }

  /// A message's info from its ring slot: its sequence is the one its
  /// state says.
  static void read_slot_info(const SlotHeader* slot, std::uint64_t sequence, std::uint32_t size, std::uint16_t flags,
                             MessageInfo& info) noexcept {
    info.sequence = sequence;
    read_header(slot, size, info);
    read_provenance(slot, info, kProvenanceEntries, true, flags);
  }

  /// A message's info from its iceoryx chunk's header, followed by room for
  /// `provenance_room` entries.
  static void read_chunk_info(const SlotHeader* slot, std::uint32_t size, MessageInfo& info,
                              std::uint32_t provenance_room) noexcept {
    info.sequence = slot->inline_entries[kChunkSequence];
    read_header(slot, size, info);
    read_provenance(slot, info, provenance_room, false);
  }

  static void read_header(const SlotHeader* slot, std::uint32_t size, MessageInfo& info) noexcept {
    info.publish_time_ns = slot->mono_ns;
    info.publish_wall_ns = slot->wall_ns;
    info.size = size;
    info.publisher_id = slot->publisher_id;
  }

  /// Hands a message over: its losses before it, counters, age sample,
  /// the thread's input log (provenance of what it publishes next).
  void delivered(TakeResult& result) noexcept {
    result.info.lost_before = pending_lost;
    pending_lost = 0;
    entry->messages.store(entry->messages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (--age_countdown == 0) {
      age_countdown = age_sample_every;
      record_age(result.info.publish_time_ns);
    }
    detail::input_log().add(header->registry_index.load(std::memory_order_relaxed), result.info);
    result.status = TakeStatus::kOk;
  }

  /// iceoryx: `publisher`'s entry in last_count, or end().
  auto last_count_of(std::uint32_t publisher) noexcept {
    return std::find_if(last_count.begin(), last_count.end(), [&](const auto& p) { return p.first == publisher; });
  }

  /// iceoryx: counts the messages of `publisher` missing before `count`
  /// (discarded from our full queue). A publisher not seen yet started
  /// after we subscribed: its count began at 0. A count not above the last
  /// is history, sent before we subscribed (ids are never reused).
  void count_gap(std::uint32_t publisher, std::uint64_t count) noexcept {
    auto it = last_count_of(publisher);
    if (it == last_count.end()) it = last_count.insert(last_count.end(), {publisher, 0});
    if (count > it->second + 1) count_lost(count - it->second - 1);
    it->second = std::max(it->second, count);
  }

  /// iceoryx: a message discarded from our full queue is counted by the
  /// gap it leaves in its publisher's count, at that publisher's next
  /// message; a publisher's last messages leave no such gap. So once
  /// iceoryx has reported a discard, an empty queue settles them: what each
  /// publisher counts as sent beyond the last we saw of it was discarded.
  /// A publisher we never saw counts from 0 (as in count_gap) if it
  /// registered after we subscribed; one that is gone is read from its
  /// freed entry, until a new publisher claims that entry.
  void settle_discards() noexcept {
    if (!discards_unsettled && !iox->discarded()) return;
    discards_unsettled = true;
    std::array<Channel::PublisherCount, kMaxPublishers> counts;
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < kMaxPublishers; ++i) {
      if (channel->publisher_count(i, counts[n])) ++n;
    }
    // Each count was loaded after its messages were pushed into our queue
    // (publisher_count's SYNC POINT): if the queue is empty now, every one
    // of them was taken or discarded. If not, the next empty take settles.
    if (iox->has_data()) return;
    for (std::uint32_t k = 0; k < n; ++k) {
      const Channel::PublisherCount& c = counts[k];
      auto it = last_count_of(c.id);
      if (it == last_count.end()) {
        if (!c.live && c.id <= id_floor) continue;  // gone before we subscribed
        it = last_count.insert(last_count.end(), {c.id, 0});
      }
      if (c.sent > it->second) {
        count_lost(c.sent - it->second);
        it->second = c.sent;
      }
    }
    discards_unsettled = false;
  }

  /// The take protocol of iceoryx channels: the next chunk (or the one
  /// held back), read in place, released once consumed.
  template <typename Consume>
  TakeResult take_chunk(Consume&& consume) noexcept {
    TakeResult result;
    const SlotHeader* slot = held_header;
    IceoryxSubscriberPort::ChunkBounds bounds = held_bounds;
    const std::byte* payload = held != nullptr ? held : iox->take(slot, bounds);
    if (payload == nullptr) {
      settle_discards();
      return result;
    }
    held = nullptr;
    // The header's claims are bounded by what iceoryx allocated: its size
    // by the chunk's payload, its provenance by the room the chunk has.
    const std::uint32_t size = std::min({slot->size, bounds.payload_size, max_size});
    read_chunk_info(slot, size, result.info, bounds.provenance_room);
    if (!consume(payload, size, result.info)) {
      held = payload;
      held_header = slot;
      held_bounds = bounds;
      result.status = TakeStatus::kBufferTooSmall;
      return result;
    }
    // relaxed: the publisher's count, ordered by iceoryx's hand-over of
    // the chunk (its publish, our take), like the header's other fields.
    count_gap(slot->publisher_id, slot->state.load(std::memory_order_relaxed));
    iox->release(payload);
    delivered(result);
    return result;
  }

  /// The take protocol. `consume(payload, size, info)` runs inside the
  /// seqlock read (the bytes may be torn; the re-check after it decides)
  /// and returns false when it cannot take a message of that size.
  template <typename Consume>
  TakeResult take_with(Consume&& consume) noexcept {
    if (!channel && !try_attach()) return TakeResult{};
    if (iox) return take_chunk(consume);
    return take_slot(consume);
  }

  /// take_with for messages of exactly `size` bytes (a fixed-layout
  /// type's): `deliver(payload, size, info)` is called only on those (inside
  /// the seqlock read, as consume is). Others are skipped and counted
  /// (wrong_size), at most a ring's worth per call.
  template <typename Deliver>
  TakeResult take_sized(std::size_t size, Deliver&& deliver) noexcept {
    const std::uint64_t tries = channel && ring != nullptr ? ring->capacity() + 1 : 1;
    for (std::uint64_t i = 0; i < tries; ++i) {
      bool other_size = false;
      TakeResult r = take_with([&](const std::byte* payload, std::uint32_t n, const MessageInfo& info) {
        other_size = n != size;
        if (!other_size) deliver(payload, n, info);
        return true;
      });
      if (!r.ok() || !other_size) return r;
      wrong_size(r.info, size);
    }
    return TakeResult{};
  }

  /// A message that is not of the subscriber's fixed-layout type (another
  /// size): counted as discarded, and said once.
  void wrong_size(const MessageInfo& info, std::size_t size) noexcept {
    entry->discarded.store(entry->discarded.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (said_wrong_size) return;
    said_wrong_size = true;
    std::fprintf(stderr,
                 "shmbus: channel %s: a message of %u bytes from publisher %u is not a %s, which is %zu bytes: "
                 "skipped and counted as discarded (shmtool info %s); later ones are counted only\n",
                 name.str().c_str(), info.size, info.publisher_id, channel->type_name().c_str(), size,
                 name.str().c_str());
  }

  /// overflow = block: tells publishers how far we have read. Release: our
  /// reads of every slot before `next` come before a publisher's writes
  /// into them (it loads the cursor with acquire).
  void show_cursor() noexcept {
    entry->read_cursor().store(next, std::memory_order_release);
    shown_next = next;
  }

  /// The take protocol of ring channels. One named result, returned once:
  /// it is built in the caller's return slot (a MessageInfo is 320 bytes,
  /// and a copy of it cost a tenth of a publish-and-take).
  template <typename Consume>
  TakeResult take_slot(Consume&& consume) noexcept {
    TakeResult result;
    take_slot_into(result, consume);
    if (blocking && next != shown_next) show_cursor();
    return result;
  }

  /// take_slot's loop: fills `result` (left kNoData when nothing is taken).
  /// Every pass moves `next` on or returns. A take makes at most two passes
  /// over the ring (a lap skipped, then a ring of discarded or torn slots)
  /// and then returns with nothing: the states are another process's
  /// writes, and a hostile one may name any sequence in each slot (the next
  /// take goes on from there).
  template <typename Consume>
  void take_slot_into(TakeResult& result, Consume& consume) noexcept {
    std::uint64_t capacity = ring->capacity();
    // Counted where `next` moves on, not on the path that finds nothing
    // (a poll loop's): that one returns at once.
    std::uint64_t passes = 0;
    const auto again = [&passes, &capacity]() noexcept { return ++passes <= 2 * capacity + 1; };
    for (;;) {
      SlotHeader* slot = ring->slot(next);
      // SYNC POINT READ: pairs with the publisher's release store of the
      // committed state.
      const std::uint64_t st = slot->state.load(std::memory_order_acquire);
      if (st == committed_state(next)) {
        std::uint32_t size = 0;
        std::uint16_t flags = 0;
        bool fits = true;
        {
          [[maybe_unused]] SeqlockReadScope racy_copy;
          flags = std::atomic_ref<std::uint16_t>(slot->flags).load(std::memory_order_relaxed);
          size = slot_size(slot, flags);
          read_slot_info(slot, next, size, flags, result.info);
        }
        // Outside the scope: a copy opens its own (Subscriber::take), and a
        // caller's in-place reader is checked by ThreadSanitizer.
        if ((flags & kSlotDiscarded) == 0) fits = consume(Channel::payload(slot, flags, size), size, result.info);
        // SYNC POINT READ (seqlock): pairs with the publisher's release
        // fence after it marks the slot writing.
        std::atomic_thread_fence(std::memory_order_acquire);
        if (slot->state.load(std::memory_order_relaxed) != st) {
          skip_to(next + 1);  // overwritten while copied: torn, never delivered
          if (again()) continue;
          return;
        }
        if ((flags & kSlotDiscarded) != 0) {
          advance_to(next + 1);
          if (again()) continue;
          return;
        }
        if (!fits) {
          result.status = TakeStatus::kBufferTooSmall;
          return;
        }
        advance_to(next + 1);
        delivered(result);
        return;
      }
      if (st != 0 && state_sequence(st) > next) {
        skip_lapped(capacity);
        if (again()) continue;
        return;
      }
      if (is_writing(st) && state_sequence(st) == next) {
        // Our sequence, being written: judged every 64th poll (the stall
        // clock starts at the first of them), no sooner than before.
        if ((++idle_polls & 63U) != 0) return;
        if (give_up_stalled(st)) {
          skip_to(next + 1);
          if (again()) continue;
          return;
        }
        return;
      }
      // An older lap: nothing new yet, a publisher still on its way, or our
      // ring's end (followed).
      if (followed(capacity)) {
        if (again()) continue;
        return;
      }
      // 63 polls in 64 end here, before the call (a poll loop's path).
      if (stall_since == 0 && (++idle_polls & 63U) != 0) return;
      if (older_lap_moved_on(st, capacity) && again()) continue;
      return;
    }
  }

  /// Whether the channel grew past our ring and we moved to the ring
  /// `next` is in (follow); `capacity` is then the new ring's. One load of
  /// a line that only a growth writes ("Generations").
  bool followed(std::uint64_t& capacity) noexcept {
    if (header->generation.load(std::memory_order_relaxed) == gen) [[likely]]
      return false;
    if (!follow()) return false;
    capacity = ring->capacity();
    return true;
  }

  /// take_slot_into's lapped case: slot `next` holds a later message.
  /// Resumes at the oldest sequence our ring can still hold; the ring ends
  /// where a later generation starts, which follow notes first (or moves
  /// us there, where the loop looks again).
  void skip_lapped(std::uint64_t& capacity) noexcept {
    if (followed(capacity)) return;
    const std::uint64_t cursor = ring_cursor();
    skip_to(std::max(next + 1, cursor > capacity ? cursor - capacity : 0));
  }

  /// take_slot_into's idle path: slot `next` holds an older lap (nothing
  /// new yet, or a publisher between its claim and its slot). True when
  /// the cursor moved on and the loop goes on.
  bool older_lap_moved_on(std::uint64_t st, std::uint64_t capacity) noexcept {
    // Whether `next` was claimed at all (a publisher between its cursor and
    // its slot, or stopped there) is in the write cursor, a line every
    // publisher writes. It is read only once we have been idle for
    // kCursorCheckNs (the clock is read every 64th poll): reading it every
    // 64th poll pulled the line away from the publisher's next claim on
    // nearly every message of a busy poll loop.
    if (stall_since == 0) {  // every 64th poll (the caller counts them)
      const std::int64_t now = mono_now_ns();
      if (idle_since == 0) idle_since = now;
      if (now - idle_since < kCursorCheckNs) return false;
    }
    const std::uint64_t cursor = ring_cursor();
    if (cursor <= next) {
      stall_since = 0;
      return false;  // nothing published yet
    }
    if (cursor - next > capacity) {
      skip_to(cursor - capacity);
      return true;
    }
    if (give_up_stalled(st)) {
      skip_to(next + 1);
      return true;
    }
    return false;  // being written; try again shortly
  }
};

/// Blocks until any of `subs` is pending, any of `guards` is triggered or
/// `timeout` passes: spins for the longest wait_spin of them, then sleeps
/// on their futex words (one futex call for one word, futex_waitv for
/// several). Appends the indices of pending subscribers to `ready` when
/// given; returns how many are.
std::size_t wait_any(std::span<Subscriber::Impl* const> subs, std::span<GuardCondition* const> guards,
                     std::chrono::nanoseconds timeout, std::vector<std::size_t>* ready) noexcept;

}  // namespace shmbus
