#pragma once
// The channel segment: header, endpoint tables, time list, ring of slots and
// schema text, each region starting on a cache line.
//
//   offset                      region
//   0                           ChannelHeader (identity, geometry, hot lines)
//   publishers_offset           EndpointEntry[max_publishers]
//   subscribers_offset          EndpointEntry[max_subscribers]
//   time_list_offset            std::atomic<uint64_t>[time_list_capacity]
//   claims_offset               SlotClaim[capacity], one cache line each
//   slots_offset                Slot[capacity], each slot_stride bytes
//   schema_offset               schema text (schema_size bytes)
//
// One slot:
//
//   0               8               16              24      28      32
//   +---------------+---------------+---------------+-------+-------+
//   | state         | mono_ns       | wall_ns       | size  | pubid |
//   +--+-+-+--+--+--+---------------+---------------+---------------+
//   |fl|n|e|ic|sc|  processing_ns  | inline entries (2 x 8 bytes)  |
//   +--+-+-+--+--+------------------+-------------------------------+  64
//   | ProvenanceEntry[16] (channel index, via, sequence): inputs,   |
//   | then their inputs (second level)                              |
//   +---------------------------------------------------------------+  320
//   | payload (max_message_size bytes, slot padded to 64)           |
//
// fl: 16-bit flags; n/e: 8-bit input count and entry count; ic/sc: 16-bit
// inputs cut, second-level inputs cut. A slot's own sequence is in its
// state. A message with at most two provenance entries, each with via 0,
// a channel index below 2^16 and a sequence below 2^48, has them packed in
// the first line (flag kSlotInlineProvenance): a module's output citing
// the input it took and that input's own input (a chain of stages), or two
// inputs. Only a message with more writes and reads the provenance lines,
// so one with up to two costs its reader two lines, the first and the
// payload's.
//
// A message of at most kInlinePayloadBytes (24) that cites nothing, copied
// in by publish(), has its payload at the end of the first line instead,
// where the processing time and the packed entries would be (flag
// kSlotInlinePayload; inline_payload_offset): its reader reads that one
// line. A loan's message stays where it was written, in the payload area.
//
// Slot state word: 0 = never written; (seq + 1) << 13 = committed seq;
// ((seq + 1) << 13) | (owner << 1) | 1 = seq being written by `owner`, the
// claiming publisher's token (its entry index and tenancy, 12 bits);
// sequences have 51 bits (2^51 messages: 7 years at 10 M msg/s).
//
// Each slot has a claim word too, in a line of its own that subscribers
// never read, holding the same values. Publishers claim a slot by CAS on its
// claim word, so a claim always names its writer; the claim's holder alone
// then writes the slot's state, with plain stores, and gives the claim back
// (CAS) only after its last store to the state. Subscribers poll the state
// line: had the claim been a CAS on that line, the publisher would stall on
// taking it back from them before it could write the message. A plain store
// waits in the store buffer instead, its line transfer overlapping the
// payload's.
//
// Solo publisher. A channel with one publisher grants it the `solo` word
// (ChannelHeader); while it holds the grant it publishes with plain stores
// only: its own cursor (solo_cursor), the claim word, the slot, its own
// time-list head (solo_time_list_head). A locked instruction (x86-64)
// waits for every earlier store to leave the store buffer, so without them
// one message's line transfers overlap the next message's. (On ARMv8 an
// acquire-release RMW is no such barrier: a later load may pass it, as
// keep_solo_grant's fence notes; a DMB is.) Readers take the
// larger of each pair of cursors. Around each solo publish the holder
// stores solo_busy_stamp = time-list index + 1, then (release) solo_busy =
// writing_state(seq, holder), and checks the grant after those stores (a
// compiler barrier only). A publisher that registers revokes the grant (CAS), then
// runs membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): every holder's publish
// either saw the revocation or has its busy stores visible. It waits for
// solo_busy to clear, then wakes the sleepers (a sleeper that came after
// the revocation ran no membarrier, and the holder's wake check has no
// fence); a holder dead, or alive but stopped past
// stall_timeout, is fenced instead: the cursors are raised past its
// sequence and stamp index (CAS, never lowered), and its claim word is set
// to the claim it was about to store, so its late stores change nothing
// that anyone else uses and its slot is a stalled writer's (dropped once
// per publisher, then skipped, as for any writer stopped mid-claim). The
// wake check has no fence in a solo publish: a subscriber about to sleep
// runs the membarrier instead (Channel::enter_waiters). A grant CAS, and a
// publisher's claim of its entry, are each followed by a seq_cst fence:
// the grant against a registrant's load of `solo` and a sleeper's, the
// claim against the grant's count of publishers (store-load, fence-fence).

//
// Generations. A channel's ring can be replaced by a larger one while it is
// used: a publisher with a message bigger than the slots grows the channel
// (Channel::grow). Generation 0 is the ring above; generation g >= 1 is a
// segment of its own (RingHeader, named by ring_object_name). Everything
// else (the cursors, the endpoint tables, the time list, the futex) stays
// in the channel's segment, so sequences, stamps and counters run on. Each
// sequence belongs to exactly one generation: the last whose `start` is at
// or below it. The grower, holding grow_owner, makes the segment, fills
// generations[g+1] (start = kStartUnknown), stores `generation` = g+1
// (seq_cst), then settles the start: a fetch_add on the write cursor
// (seq_cst) and a CAS of `start` from kStartUnknown to what it returned.
// Any publisher that finds the start unknown settles it the same way, so a
// grower killed after its announcement stalls nobody. Every claim loads
// `generation` (seq_cst) after its RMW on the cursor: a publisher that
// still sees g claimed before the settling RMW (both RMWs and the two
// seq_cst accesses of each side are in one total order), so its sequence
// is below the start and its slot is in generation g; one that sees g+1
// finds the start known or settles it, and compares. A sequence claimed
// only to settle a start is written as a discarded slot (no message). A
// reader with nothing at `next` loads `generation`; when a later one's
// start is at or below `next`, it moves there (the announcement is stored
// before the commit that wakes it: a sleeper's fence-fence check sees it).
// The solo grant and growing exclude each other: a grower gives its grant
// back first, and no grant is kept while another publisher is registered.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "layout/segment_layout.hpp"

namespace shmbus::layout {

inline constexpr std::uint32_t kMaxPublishers = 32;
inline constexpr std::uint32_t kMaxSubscribers = 64;
inline constexpr std::size_t kNameBytes = 128;
inline constexpr std::size_t kTypeNameBytes = 96;
inline constexpr std::size_t kCreatorProgramBytes = 32;
inline constexpr std::size_t kSizesFromBytes = 224;
inline constexpr std::size_t kNodeBytes = 64;
inline constexpr std::size_t kProvenanceEntries = 16;

/// A publisher's token in slot states: its entry index (5 bits) and the
/// entry's tenancy (7 bits), so a claim by an earlier holder of the same
/// entry is told apart from the current holder's.
inline constexpr unsigned kSlotOwnerBits = 12;
inline constexpr unsigned kSlotSeqShift = kSlotOwnerBits + 1;
inline constexpr std::uint32_t kTenancyMask = 0x7F;
static_assert(kMaxPublishers <= 32, "publisher entry indices take 5 bits of a slot owner token");
static_assert(kMaxSubscribers <= 64, "sleeping subscribers are bits of one 64-bit word");
constexpr std::uint32_t publisher_token(std::uint32_t entry_index, std::uint32_t tenancy) noexcept {
  return ((tenancy & kTenancyMask) << 5) | entry_index;
}
constexpr std::uint32_t token_entry(std::uint32_t token) noexcept { return token & 31U; }
constexpr std::uint32_t token_tenancy(std::uint32_t token) noexcept { return token >> 5; }

constexpr std::uint64_t committed_state(std::uint64_t seq) noexcept { return (seq + 1) << kSlotSeqShift; }
constexpr std::uint64_t writing_state(std::uint64_t seq, std::uint32_t owner) noexcept {
  return ((seq + 1) << kSlotSeqShift) | (std::uint64_t{owner} << 1) | 1U;
}
constexpr bool is_writing(std::uint64_t state) noexcept { return (state & 1U) != 0; }
/// The sequence a non-zero state refers to.
constexpr std::uint64_t state_sequence(std::uint64_t state) noexcept { return (state >> kSlotSeqShift) - 1; }
/// The token of the publisher writing a slot in writing state.
constexpr std::uint32_t slot_owner(std::uint64_t state) noexcept {
  return static_cast<std::uint32_t>((state >> 1) & ((1U << kSlotOwnerBits) - 1));
}

/// Slot flags.
inline constexpr std::uint16_t kSlotDiscarded = 1;  ///< a loan given back: no message
/// The provenance entries are packed in the header's line (see the top).
inline constexpr std::uint16_t kSlotInlineProvenance = 2;
/// The payload is in the header's line (see the top): no provenance, no
/// processing time.
inline constexpr std::uint16_t kSlotInlinePayload = 4;

struct ProvenanceEntry {
  std::uint32_t channel_index;
  std::uint32_t via;  ///< second level: index of the input it fed
  std::uint64_t sequence;
};

/// Inline provenance (see the top of this file): at most kInlineEntries,
/// each packed into one word as channel_index << kInlineSequenceBits |
/// sequence.
inline constexpr std::uint32_t kInlineEntries = 2;
inline constexpr unsigned kInlineSequenceBits = 48;
constexpr bool inlinable(const ProvenanceEntry& e) noexcept {
  return e.via == 0 && e.channel_index < (1U << (64 - kInlineSequenceBits)) &&
         e.sequence < (std::uint64_t{1} << kInlineSequenceBits);
}
constexpr std::uint64_t pack_inline(const ProvenanceEntry& e) noexcept {
  return (std::uint64_t{e.channel_index} << kInlineSequenceBits) | e.sequence;
}
constexpr ProvenanceEntry unpack_inline(std::uint64_t word) noexcept {
  return ProvenanceEntry{static_cast<std::uint32_t>(word >> kInlineSequenceBits), 0,
                         word & ((std::uint64_t{1} << kInlineSequenceBits) - 1)};
}
static_assert(unpack_inline(pack_inline(ProvenanceEntry{65535, 0, (1ULL << 48) - 1})).channel_index == 65535);
static_assert(!inlinable(ProvenanceEntry{1U << 16, 0, 0}) && !inlinable(ProvenanceEntry{0, 0, 1ULL << 48}) &&
              !inlinable(ProvenanceEntry{0, 1, 0}));

struct SlotHeader {
  // SYNC POINT WRITE (publisher, holding the slot's claim): writing_state(s,
  // owner) by a relaxed store, then a release fence, then the header and
  // payload, then committed_state(s) by a release store. SYNC POINT READ
  // (subscriber): acquire load, copy, acquire fence, relaxed re-load; equal
  // loads mean an untorn copy (seqlock).
  std::atomic<std::uint64_t> state;
  std::int64_t mono_ns;
  std::int64_t wall_ns;
  std::uint32_t size;
  std::uint32_t publisher_id;
  std::uint16_t flags;
  std::uint8_t input_count;        ///< first-level provenance entries
  std::uint8_t entry_count;        ///< all provenance entries (<= kProvenanceEntries)
  std::uint16_t inputs_cut;        ///< first-level inputs not cited (saturates)
  std::uint16_t second_level_cut;  ///< second-level inputs not cited (saturates)
  std::int64_t processing_ns;      ///< publish minus the first input's take; 0: unknown
  /// Ring slots: the provenance entries when flags has
  /// kSlotInlineProvenance, packed (pack_inline); otherwise they are all in
  /// the provenance lines. iceoryx chunks, whose state holds the publisher's
  /// own count: word kChunkSequence is the message's sequence, and all of
  /// its provenance is in the entries after the header.
  std::array<std::uint64_t, kInlineEntries> inline_entries;
};
inline constexpr std::size_t kChunkSequence = 0;
static_assert(std::is_standard_layout_v<SlotHeader>);
static_assert(sizeof(SlotHeader) == kCacheLine, "the slot header is the slot's first cache line");
static_assert(offsetof(SlotHeader, state) == 0);
static_assert(offsetof(SlotHeader, inline_entries) + sizeof(SlotHeader::inline_entries) == kCacheLine,
              "the packed provenance entries end the header's line");
static_assert(kProvenanceEntries <= 255, "provenance counts are 8-bit");
/// An inline payload (kSlotInlinePayload) of `size` bytes ends the header's
/// line: in the packed entries' 16 bytes (offset 48, 16-aligned) when it
/// fits there, else from the processing time on (offset 40, 8-aligned: no
/// type of 17 to 24 bytes needs more). So a view of it in place is aligned
/// for any type of its size.
inline constexpr std::uint32_t kInlinePayloadBytes = kCacheLine - offsetof(SlotHeader, processing_ns);
constexpr std::size_t inline_payload_offset(std::uint32_t size) noexcept {
  return size <= sizeof(SlotHeader::inline_entries) ? offsetof(SlotHeader, inline_entries)
                                                    : offsetof(SlotHeader, processing_ns);
}
static_assert(offsetof(SlotHeader, inline_entries) == offsetof(SlotHeader, processing_ns) + 8 &&
                  kInlinePayloadBytes == 24 && inline_payload_offset(16) % 16 == 0 &&
                  inline_payload_offset(24) % 8 == 0,
              "an inline payload is the processing time and the packed entries, and nothing else");
/// A slot's claim word (see the top of this file), alone in its line so a
/// publisher claims without taking a line away from polling subscribers.
/// SYNC POINT: claimed by CAS (acq_rel), given back by CAS (release) after
/// the holder's last store to the slot's state: the next claimer's acquire
/// orders its own state stores after that one.
struct alignas(kCacheLine) SlotClaim {
  std::atomic<std::uint64_t> word;
};
static_assert(sizeof(SlotClaim) == kCacheLine);

static_assert(sizeof(ProvenanceEntry) * kProvenanceEntries == 4 * kCacheLine,
              "provenance fills the four cache lines after the slot header");

inline constexpr std::size_t kSlotPayloadOffset = 5 * kCacheLine;

/// The largest geometry a channel may have (the configuration's limits);
/// an opener refuses a segment whose header claims more.
inline constexpr std::uint64_t kMaxCapacity = 1ULL << 20;
inline constexpr std::uint64_t kMaxMessageSize = 1ULL << 30;
inline constexpr std::uint64_t kMaxTimeListCapacity = 1ULL << 24;

/// Computed in 64 bits: never truncates, whatever the header says.
constexpr std::uint64_t slot_stride_for(std::uint64_t max_message_size) noexcept {
  return align_up(kSlotPayloadOffset + max_message_size, kCacheLine);
}

/// Endpoint entry state word: an owner word (segment_layout.hpp) with these
/// phases. Carrying pid and start time in the word that is CASed means a
/// claim always names its owner.
inline constexpr std::uint64_t kEndpointFree = 0;
inline constexpr std::uint64_t kEndpointClaimed = 1;
inline constexpr std::uint64_t kEndpointLive = 2;
constexpr std::uint64_t endpoint_phase(std::uint64_t state) noexcept { return owner_phase(state); }
constexpr std::uint32_t endpoint_pid(std::uint64_t state) noexcept { return owner_pid(state); }

/// A publisher's or subscriber's entry. The counters have a single writer,
/// the owner, which stores them relaxed; readers (tools, daemon) load them
/// relaxed: they are statistics, ordered against nothing. The age fields
/// are a subscriber's (take time minus publish time), sampled every
/// age_sample_every-th take so the clock read stays off most takes:
/// cumulative sums the daemon differences between windows, and a min/max it
/// resets at each window (a sample racing the reset may land in either).
struct alignas(kCacheLine) EndpointEntry {
  // SYNC POINT WRITE: the owner fills the entry, then stores kEndpointLive
  // (release); readers load the state (acquire) before the fields.
  std::atomic<std::uint64_t> state;
  /// The owner's pid namespace (process_alive); written by the claimer just
  /// after its CAS while others may judge the claim: relaxed atomic.
  std::atomic<std::uint64_t> pid_ns;
  std::uint32_t id;
  /// Bumped (release) by whoever frees the entry, while it still holds it:
  /// a slot claim names (entry, tenancy), so a claim of an earlier holder
  /// is never taken for the current holder's.
  std::atomic<std::uint32_t> tenancy;
  std::atomic<std::uint64_t> messages;  ///< published, or received
  /// A publisher's dropped messages, or a subscriber's lost ones: one
  /// counter, named by its reader through dropped() and lost().
  std::atomic<std::uint64_t> missed;
  /// Channels with overflow = block. Subscribers: the next sequence they
  /// will take (UINT64_MAX until known); they store it (release) after
  /// they are done with the message before it, and publishers load it
  /// (acquire) before they claim a slot it may still be read in.
  /// Publishers: nanoseconds they spent waiting for room (statistics).
  std::atomic<std::uint64_t> cursor;
  std::atomic<std::uint64_t> age_sum_ns;
  std::atomic<double> age_sum_sq_s2;  ///< sum of squared ages, in s^2
  std::atomic<std::uint64_t> age_min_ns;
  std::atomic<std::uint64_t> age_max_ns;
  std::atomic<std::uint64_t> age_samples;  ///< takes whose age was recorded (1 in age_sample_every)
  /// Subscribers: messages taken and then discarded by the application
  /// (Subscriber::count_discarded, e.g. by a synchronizer).
  std::atomic<std::uint64_t> discarded;
  /// Subscribers: exceptions thrown by the callbacks a Node ran for this
  /// subscription (Subscriber::count_error).
  std::atomic<std::uint64_t> errors;
  /// Publishers: first-level inputs their messages could not cite (beyond
  /// kProvenanceEntries).
  std::atomic<std::uint64_t> provenance_cut;
  /// Publishers: messages lost before they reached this publisher (a
  /// gateway's import: lost between the hosts). Its age_* fields then hold
  /// each message's transit, receive time minus the origin's wall stamp.
  std::atomic<std::uint64_t> upstream_lost;
  /// Publishers on overflow = block channels: waits that reached
  /// block_timeout, after which the slow subscribers were overtaken (each
  /// counts what it then loses).
  std::atomic<std::uint64_t> block_timeouts;
  char node[kNodeBytes];

  /// Publisher entries: messages the publisher dropped (a claim given up).
  std::atomic<std::uint64_t>& dropped() noexcept { return missed; }
  /// One age (or transit) sample: relaxed single-writer stores, statistics.
  void add_age_sample(std::uint64_t ns) noexcept {
    age_samples.store(age_samples.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    age_sum_ns.store(age_sum_ns.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
    const double s = static_cast<double>(ns) * 1e-9;
    age_sum_sq_s2.store(age_sum_sq_s2.load(std::memory_order_relaxed) + s * s, std::memory_order_relaxed);
    if (ns < age_min_ns.load(std::memory_order_relaxed)) age_min_ns.store(ns, std::memory_order_relaxed);
    if (ns > age_max_ns.load(std::memory_order_relaxed)) age_max_ns.store(ns, std::memory_order_relaxed);
  }
  /// Subscriber entries on overflow = block channels: see `cursor`.
  std::atomic<std::uint64_t>& read_cursor() noexcept { return cursor; }
  [[nodiscard]] const std::atomic<std::uint64_t>& read_cursor() const noexcept { return cursor; }
  /// Publisher entries: time spent waiting for room (overflow = block).
  std::atomic<std::uint64_t>& blocked_ns() noexcept { return cursor; }
  /// Subscriber entries: messages the subscriber lost (overwritten, skipped).
  std::atomic<std::uint64_t>& lost() noexcept { return missed; }
  [[nodiscard]] const std::atomic<std::uint64_t>& lost() const noexcept { return missed; }
};
static_assert(std::is_standard_layout_v<EndpointEntry>);
static_assert(std::atomic<double>::is_always_lock_free, "atomics in shared memory must be lock-free");
static_assert(sizeof(EndpointEntry) == 3 * kCacheLine, "entries are three cache lines, never shared");
static_assert(offsetof(EndpointEntry, cursor) / kCacheLine == offsetof(EndpointEntry, messages) / kCacheLine &&
                  offsetof(EndpointEntry, cursor) / kCacheLine == offsetof(EndpointEntry, state) / kCacheLine,
              "a subscriber's read cursor shares the line of its state and of the count it bumps on every take: "
              "one line written per take, one line read per entry by a publisher looking for room");

/// One ring generation. Generation 0 is the ring in the channel's segment;
/// each later one is a segment of its own (RingHeader). `capacity` and
/// `max_message_size` are written by the grower before it announces the
/// generation; `start`, the generation's first sequence, after (by CAS
/// from kStartUnknown: see "Generations").
struct GenerationRecord {
  std::atomic<std::uint64_t> start;
  std::uint32_t capacity;
  std::uint32_t max_message_size;
};
static_assert(sizeof(GenerationRecord) == 16);
inline constexpr std::uint32_t kMaxGenerations = 32;
inline constexpr std::uint64_t kStartUnknown = UINT64_MAX;

/// The header of a later generation's ring segment: the channel it belongs
/// to, its generation and its geometry, then the claim words and the slots
/// as in a channel segment.
struct RingHeader {
  SegmentHeader segment;
  char channel[kNameBytes];
  std::uint32_t generation;
  std::uint32_t capacity;
  std::uint32_t max_message_size;
  std::uint32_t slot_stride;
  std::uint64_t claims_offset;
  std::uint64_t slots_offset;
};
static_assert(std::is_standard_layout_v<RingHeader>);

struct ChannelHeader {
  SegmentHeader segment;
  // Identity and geometry: written once by the creator before kReady.
  char name[kNameBytes];
  char type_name[kTypeNameBytes];
  std::uint64_t type_hash;
  std::uint32_t capacity;
  std::uint32_t max_message_size;
  std::uint32_t slot_stride;
  std::uint32_t time_list_capacity;
  std::uint32_t transport;
  std::uint32_t max_publishers;
  std::uint32_t max_subscribers;
  std::uint32_t schema_size;
  std::uint64_t publishers_offset;
  std::uint64_t subscribers_offset;
  std::uint64_t time_list_offset;
  std::uint64_t slots_offset;
  std::uint64_t schema_offset;
  std::int64_t stall_timeout_ns;
  std::int64_t window_ns;
  double thresholds_hz[3];
  std::uint32_t has_thresholds;
  /// Index of the channel's registry record; every opener stores it
  /// (relaxed: all store the same value, nothing is ordered by it).
  std::atomic<std::uint32_t> registry_index;
  /// What a publisher does when the ring is full of messages a subscriber
  /// has not taken: Overflow::kOverwrite (0) or kBlock (wait for it, up to
  /// block_timeout_ns, then overtake it).
  std::uint32_t overflow;
  std::uint32_t reserved_overflow;
  std::int64_t block_timeout_ns;
  std::uint64_t claims_offset;
  /// Entries [0, n) of each table have been claimed at least once, never
  /// lowered. Observers read only those entries, so the pages of entries
  /// never used stay out of their memory; a stale value only misses an
  /// endpoint that went live after the snapshot began.
  /// SYNC POINT: raised by claim_entry's mark_used (release CAS, before the
  /// entry's Live store); loaded by Channel::entries_used (acquire).
  std::atomic<std::uint32_t> publishers_used;
  std::atomic<std::uint32_t> subscribers_used;
  /// Where the ring's sizes came from, for the messages that name them
  /// (written once by the creator, NUL-terminated, read bounded): the
  /// creator's program name, and the `file:line:column` of the
  /// configuration entry that set them ("" for the built-in defaults, or
  /// the publisher's own options).
  char creator_program[kCreatorProgramBytes];
  char sizes_from[kSizesFromBytes];

  /// Next sequence to claim; fetch_add by publishers. Own line: it is the
  /// one word every publisher writes.
  alignas(kCacheLine) std::atomic<std::uint64_t> write_cursor;
  /// Solo publisher (see the top of this file), in the line the holder
  /// alone writes while it holds the grant. `solo`: bit 0 set while
  /// granted, the holder's token in bits 1-12, a generation above
  /// (solo_grant_word); a grant or revocation is a CAS that bumps it.
  std::atomic<std::uint64_t> solo;
  std::atomic<std::uint64_t> solo_cursor;  ///< next sequence, while solo
  /// writing_state(seq, holder) while a solo publish is in flight, else 0.
  std::atomic<std::uint64_t> solo_busy;
  std::atomic<std::uint64_t> solo_busy_stamp;  ///< its time-list index + 1; 0: none
  /// The grant word its holder gave back last (release, after its last
  /// solo publish; Channel::return_solo): what a process that cannot use
  /// membarrier waits for when it revokes (Channel::wait_for_holder).
  std::atomic<std::uint64_t> solo_ack;

  /// Futex word, bumped by a publisher only when `waiters` is non-zero, and
  /// the sleepers: bit i set while subscriber entry i sleeps (or is about
  /// to), so reclaiming a dead subscriber's entry clears exactly its sleep.
  /// SYNC POINT: publisher = commit, seq_cst fence, load waiters;
  /// subscriber = waiters fetch_or, seq_cst fence, load slot state. One of
  /// the two sees the other (store-load, fence-fence; ring.hpp's
  /// wake_waiters for x86-64's locked commit, and the solo publisher's
  /// asymmetric fence at the top of this file).
  alignas(kCacheLine) std::atomic<std::uint32_t> futex_word;
  std::uint32_t reserved_futex;
  std::atomic<std::uint64_t> waiters;

  /// Cold counters; relaxed: statistics only.
  alignas(kCacheLine) std::atomic<std::uint64_t> next_endpoint_id;
  std::atomic<std::uint64_t> publish_dropped;      ///< claims overtaken or given up
  std::atomic<std::uint64_t> reclaimed_received;   ///< from subscribers since gone
  std::atomic<std::uint64_t> reclaimed_lost;       ///< from subscribers since gone
  std::atomic<std::uint64_t> reclaimed_endpoints;  ///< entries of dead processes reclaimed

  /// Time list head: total stamps ever written. One fetch_add per publish.
  alignas(kCacheLine) std::atomic<std::uint64_t> time_list_head;
  /// The solo publisher's head (plain stores); readers take the larger.
  std::atomic<std::uint64_t> solo_time_list_head;

  /// Ring generations (see "Generations" at the top of this file). The
  /// current generation: read by every claim and by a reader with nothing
  /// to take, written only when the ring grows, so its line stays shared.
  alignas(kCacheLine) std::atomic<std::uint32_t> generation;
  /// The creator's growth settings, written once before kReady: 1 when the
  /// ring may grow, and the largest slot it may grow to.
  std::uint32_t grow;
  std::uint32_t max_grow_size;
  std::uint32_t reserved_grow;
  /// The grower's owner word (segment_layout.hpp; phase 1), 0 when free:
  /// one grower at a time, and a dead one's lock is taken over.
  std::atomic<std::uint64_t> grow_owner;
  /// Generations below this one have had their segments removed.
  std::atomic<std::uint32_t> removed_below;
  std::uint32_t reserved_removed;
  /// Publishes refused because growing was (max_grow_size, the domain's
  /// grow_budget, grow = false, the generation limit). Relaxed: statistics.
  std::atomic<std::uint64_t> grows_refused;
  GenerationRecord generations[kMaxGenerations];
  /// Per subscriber entry: the ring generation it reads, plus one (0: none
  /// yet), which keeps that generation and the later ones from being
  /// removed (Channel::remove_unneeded_generations); and the slots it asked
  /// the ring to keep (history), below which a growing ring does not
  /// shrink. The owner's relaxed stores; read by growers and removers.
  std::atomic<std::uint32_t> subscriber_generation[kMaxSubscribers];
  std::atomic<std::uint32_t> subscriber_wants_slots[kMaxSubscribers];
  /// Padding: the growth fields above add 1,088 bytes, and with this page
  /// less those everything after the header (endpoint tables, time list,
  /// claims, slots) keeps the offset within its page it had before they
  /// came (docs/performance.md: without it, the 64 B throughput of
  /// `shmbus-bench peers` fell by a quarter, paired, on the CI machine kind).
  std::uint8_t page_offset_kept[4096 - 17 * kCacheLine];
};
static_assert(sizeof(ChannelHeader) == 15 * kCacheLine + 4096,
              "the regions after the header keep their offsets within a page (see page_offset_kept)");
static_assert(std::is_standard_layout_v<ChannelHeader>);
static_assert(offsetof(ChannelHeader, write_cursor) % kCacheLine == 0);
static_assert(offsetof(ChannelHeader, futex_word) - offsetof(ChannelHeader, write_cursor) >= kCacheLine,
              "the futex line must not share the cursor's cache line");
static_assert(offsetof(ChannelHeader, solo_busy_stamp) / kCacheLine ==
                      offsetof(ChannelHeader, write_cursor) / kCacheLine &&
                  offsetof(ChannelHeader, solo_ack) / kCacheLine == offsetof(ChannelHeader, write_cursor) / kCacheLine,
              "the solo words share the cursor's line, which the solo publisher alone writes");
static_assert(offsetof(ChannelHeader, solo_time_list_head) / kCacheLine ==
                  offsetof(ChannelHeader, time_list_head) / kCacheLine,
              "a time-list reader reads both heads from one line");
static_assert(offsetof(ChannelHeader, time_list_head) - offsetof(ChannelHeader, next_endpoint_id) >= kCacheLine,
              "the time-list head has its own cache line");
static_assert(offsetof(ChannelHeader, waiters) % 8 == 0 &&
                  offsetof(ChannelHeader, waiters) - offsetof(ChannelHeader, futex_word) < kCacheLine,
              "the sleeper mask shares the futex word's line: one line for the publisher's wake check");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the sleeper mask is one lock-free word");
static_assert(sizeof(ChannelHeader) % kCacheLine == 0);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  offsetof(ChannelHeader, subscribers_used) + sizeof(std::uint32_t) <=
                      offsetof(ChannelHeader, write_cursor),
              "the used-entry counts are lock-free and stay in the cold identity lines, off the cursor's line");

/// The `solo` word: granted to `token` (generation `gen`), or not granted.
/// The `solo` word: bit 0 granted; bits 1-12 the holder's token (kept
/// after a revocation or give-back: the last holder); bit 13 closed for
/// good (solo_closed_word); the generation above, bumped by each grant and
/// each revocation or give-back (0: never granted).
inline constexpr unsigned kSoloGenerationShift = kSlotSeqShift + 1;
inline constexpr std::uint64_t kSoloClosed = std::uint64_t{1} << kSlotSeqShift;
inline constexpr std::uint64_t kSoloTokenBits = ((std::uint64_t{1} << kSlotOwnerBits) - 1) << 1;
constexpr std::uint64_t solo_grant_word(std::uint64_t gen, std::uint32_t token) noexcept {
  return (gen << kSoloGenerationShift) | (std::uint64_t{token} << 1) | 1U;
}
constexpr bool solo_granted(std::uint64_t word) noexcept { return (word & 1U) != 0; }
constexpr bool solo_closed(std::uint64_t word) noexcept { return (word & kSoloClosed) != 0; }
constexpr std::uint64_t solo_generation(std::uint64_t word) noexcept { return word >> kSoloGenerationShift; }
/// The token of the holder, or of the last one.
constexpr std::uint32_t solo_holder(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>((word & kSoloTokenBits) >> 1);
}
/// The word after `word`'s grant is revoked or given back: the next
/// generation, the last holder's token and the closed mark kept.
constexpr std::uint64_t solo_revoked_word(std::uint64_t word) noexcept {
  return ((solo_generation(word) + 1) << kSoloGenerationShift) | (word & (kSoloTokenBits | kSoloClosed));
}
/// `word` closed for good: its grant revoked (a word not granted keeps its
/// generation, so generation 0 still says "never granted"). No grant is
/// taken from a closed word.
constexpr std::uint64_t solo_closed_word(std::uint64_t word) noexcept {
  return (solo_granted(word) ? solo_revoked_word(word) : word) | kSoloClosed;
}
static_assert(!solo_granted(solo_revoked_word(solo_grant_word(1, 4095))) &&
                  solo_holder(solo_revoked_word(solo_grant_word(1, 4095))) == 4095 &&
                  solo_generation(solo_closed_word(solo_grant_word(3, 1))) == 4 &&
                  solo_generation(solo_closed_word(0)) == 0 && solo_closed(solo_revoked_word(solo_closed_word(0))),
              "the solo word's fields do not overlap");

/// Time-list entry: the stamp's low 56 bits (ns) above the lap number
/// (index / capacity) mod 256. A reader knows which lap it expects at each
/// index, so an entry claimed but not yet stored (still holding an older
/// lap's stamp) is recognised and left pending; one fetch_add and one store
/// per stamp. A reader re-reads the head after the entries: an entry whose
/// index the head has lapped since may hold a newer lap and is not used, so
/// the tag only has to tell older laps apart (256 consecutive stampers of
/// one index would have to die). The full stamp is rebuilt from the reader's
/// clock: exact within +-2^55 ns (1.1 years) of it. Resolution: 1 ns.
inline constexpr unsigned kLapBits = 8;
inline constexpr std::uint64_t kLapMask = (1U << kLapBits) - 1;
constexpr std::uint64_t time_list_entry(std::int64_t ns, std::uint64_t index, std::uint32_t capacity_log2) noexcept {
  return (static_cast<std::uint64_t>(ns) << kLapBits) | ((index >> capacity_log2) & kLapMask);
}
constexpr bool time_list_lap_is(std::uint64_t entry, std::uint64_t index, std::uint32_t capacity_log2) noexcept {
  return entry != 0 && (entry & kLapMask) == ((index >> capacity_log2) & kLapMask);
}
/// The stamp of `entry`, the one nearest to `now_ns` with those low bits.
constexpr std::int64_t time_list_stamp(std::uint64_t entry, std::int64_t now_ns) noexcept {
  constexpr unsigned kBits = 64 - kLapBits;
  constexpr std::uint64_t kMod = 1ULL << kBits;
  const std::uint64_t delta = ((entry >> kLapBits) - static_cast<std::uint64_t>(now_ns)) & (kMod - 1);
  const std::int64_t signed_delta = delta >= kMod / 2
                                        ? static_cast<std::int64_t>(delta) - static_cast<std::int64_t>(kMod)
                                        : static_cast<std::int64_t>(delta);
  return now_ns + signed_delta;
}

inline constexpr std::uint64_t kChannelLayoutHash = layout_hash_of(
    kLayoutVersion, sizeof(SegmentHeader), sizeof(ChannelHeader), offsetof(ChannelHeader, write_cursor),
    offsetof(ChannelHeader, futex_word), offsetof(ChannelHeader, waiters), offsetof(ChannelHeader, time_list_head),
    sizeof(SlotHeader), kSlotSeqShift, kLapBits, offsetof(EndpointEntry, tenancy), sizeof(ProvenanceEntry),
    sizeof(EndpointEntry), sizeof(EndpointEntry), kSlotPayloadOffset, offsetof(EndpointEntry, messages),
    offsetof(EndpointEntry, missed), offsetof(EndpointEntry, age_max_ns), offsetof(EndpointEntry, age_samples),
    offsetof(EndpointEntry, discarded), offsetof(EndpointEntry, errors), offsetof(EndpointEntry, provenance_cut),
    offsetof(EndpointEntry, upstream_lost), offsetof(EndpointEntry, cursor), offsetof(EndpointEntry, block_timeouts),
    offsetof(ChannelHeader, overflow), offsetof(ChannelHeader, block_timeout_ns), offsetof(SlotHeader, processing_ns),
    offsetof(ChannelHeader, claims_offset), sizeof(SlotClaim), offsetof(SlotHeader, inline_entries),
    offsetof(SlotHeader, flags), kProvenanceEntries, kMaxPublishers, kMaxSubscribers, offsetof(ChannelHeader, solo),
    kInlineSequenceBits, offsetof(ChannelHeader, solo_cursor), offsetof(ChannelHeader, solo_busy),
    offsetof(ChannelHeader, solo_busy_stamp), offsetof(ChannelHeader, solo_time_list_head), kInlinePayloadBytes,
    inline_payload_offset(1), offsetof(ChannelHeader, publishers_used), offsetof(ChannelHeader, subscribers_used),
    offsetof(ChannelHeader, creator_program), offsetof(ChannelHeader, sizes_from), offsetof(ChannelHeader, solo_ack),
    kSoloGenerationShift, kSoloClosed, offsetof(ChannelHeader, generation), offsetof(ChannelHeader, grow_owner),
    offsetof(ChannelHeader, generations), kMaxGenerations, sizeof(RingHeader),
    offsetof(ChannelHeader, subscriber_generation), offsetof(RingHeader, claims_offset));

}  // namespace shmbus::layout
