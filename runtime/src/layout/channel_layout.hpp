#pragma once
// The channel segment: header, endpoint tables, time list, ring of slots and
// schema text, each region starting on a cache line.
//
//   offset                      region
//   0                           ChannelHeader (identity, geometry, hot lines)
//   publishers_offset           EndpointEntry[max_publishers]
//   subscribers_offset          EndpointEntry[max_subscribers]
//   time_list_offset            std::atomic<uint64_t>[time_list_capacity]
//   slots_offset                Slot[capacity], each slot_stride bytes
//   schema_offset               schema text (schema_size bytes)
//
// One slot:
//
//   0               8       12      16              24              32
//   +---------------+-------+-------+---------------+---------------+
//   | state         |wr pid | flags | sequence      | mono_ns       |
//   +---------------+-------+-------+-------+-------+---------------+
//   | wall_ns       | size  | pubid | nprov | rsvd  | reserved      |
//   +---------------+-------+-------+-------+-------+---------------+  64
//   | ProvenanceEntry[4] (channel index, sequence)                  |
//   +---------------------------------------------------------------+  128
//   | payload (max_message_size bytes, slot padded to 64)           |
//
// Slot state word: 0 = never written; ((seq + 1) << 1) = committed seq;
// ((seq + 1) << 1) | 1 = seq being written.

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
inline constexpr std::size_t kNodeBytes = 64;
inline constexpr std::size_t kProvenanceEntries = 4;

constexpr std::uint64_t committed_state(std::uint64_t seq) noexcept { return (seq + 1) << 1; }
constexpr std::uint64_t writing_state(std::uint64_t seq) noexcept { return ((seq + 1) << 1) | 1U; }
constexpr bool is_writing(std::uint64_t state) noexcept { return (state & 1U) != 0; }
/// The sequence a non-zero state refers to.
constexpr std::uint64_t state_sequence(std::uint64_t state) noexcept { return (state >> 1) - 1; }

/// Slot flags.
inline constexpr std::uint32_t kSlotDiscarded = 1;  ///< a loan given back: no message

struct SlotHeader {
  // SYNC POINT WRITE (publisher): writing_state(s) by CAS (acq_rel), then a
  // release fence, then the header and payload, then committed_state(s) by a
  // release store. SYNC POINT READ (subscriber): acquire load, copy, acquire
  // fence, relaxed re-load; equal loads mean an untorn copy (seqlock).
  std::atomic<std::uint64_t> state;
  /// pid of the process that holds the slot in writing state; read only to
  /// decide whether a stalled slot was abandoned.
  std::atomic<std::uint32_t> writer_pid;
  std::uint32_t flags;
  std::uint64_t sequence;
  std::int64_t mono_ns;
  std::int64_t wall_ns;
  std::uint32_t size;
  std::uint32_t publisher_id;
  std::uint32_t provenance_count;
  std::uint32_t reserved0;
  std::uint64_t reserved1;
};
static_assert(std::is_standard_layout_v<SlotHeader>);
static_assert(sizeof(SlotHeader) == kCacheLine, "the slot header is the slot's first cache line");
static_assert(offsetof(SlotHeader, state) == 0);

struct ProvenanceEntry {
  std::uint32_t channel_index;
  std::uint32_t reserved;
  std::uint64_t sequence;
};
static_assert(sizeof(ProvenanceEntry) * kProvenanceEntries == kCacheLine,
              "provenance fills the slot's second cache line");

inline constexpr std::size_t kSlotPayloadOffset = 2 * kCacheLine;

constexpr std::uint32_t slot_stride_for(std::uint32_t max_message_size) noexcept {
  return static_cast<std::uint32_t>(align_up(kSlotPayloadOffset + max_message_size, kCacheLine));
}

/// Endpoint entry state word: (pid << 2) | phase. Carrying the pid in the
/// word that is CASed means a claim always names its owner.
inline constexpr std::uint64_t kEndpointFree = 0;
inline constexpr std::uint64_t kEndpointClaimed = 1;
inline constexpr std::uint64_t kEndpointLive = 2;
constexpr std::uint64_t endpoint_state(std::uint32_t pid, std::uint64_t phase) noexcept {
  return (static_cast<std::uint64_t>(pid) << 2) | phase;
}
constexpr std::uint64_t endpoint_phase(std::uint64_t state) noexcept { return state & 3U; }
constexpr std::uint32_t endpoint_pid(std::uint64_t state) noexcept { return static_cast<std::uint32_t>(state >> 2); }

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
  std::uint64_t start_time;
  std::uint32_t id;
  std::uint32_t reserved0;
  std::atomic<std::uint64_t> messages;  ///< published, or received
  std::atomic<std::uint64_t> lost;      ///< dropped by a publisher, or lost by a subscriber
  std::atomic<std::uint64_t> age_sum_ns;
  std::atomic<double> age_sum_sq_s2;  ///< sum of squared ages, in s^2
  std::atomic<std::uint64_t> age_min_ns;
  std::atomic<std::uint64_t> age_max_ns;
  std::atomic<std::uint64_t> age_samples;  ///< takes whose age was recorded (1 in age_sample_every)
  /// Subscribers: messages taken and then discarded by the application
  /// (Subscriber::count_discarded, e.g. by a synchronizer).
  std::atomic<std::uint64_t> discarded;
  std::uint64_t reserved1[5];
  char node[kNodeBytes];
};
static_assert(std::is_standard_layout_v<EndpointEntry>);
static_assert(std::atomic<double>::is_always_lock_free, "atomics in shared memory must be lock-free");
static_assert(sizeof(EndpointEntry) == 3 * kCacheLine, "entries are three cache lines, never shared");

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
  std::uint8_t reserved[32];

  /// Next sequence to claim; fetch_add by publishers. Own line: it is the
  /// one word every publisher writes.
  alignas(kCacheLine) std::atomic<std::uint64_t> write_cursor;

  /// Futex word, bumped by a publisher only when `waiters` is non-zero, and
  /// the count of sleepers. SYNC POINT: publisher = commit store, full fence,
  /// load waiters; subscriber = waiters fetch_add (full fence), load slot
  /// state. One of the two sees the other (store-load ordering).
  alignas(kCacheLine) std::atomic<std::uint32_t> futex_word;
  std::atomic<std::uint32_t> waiters;

  /// Cold counters; relaxed: statistics only.
  alignas(kCacheLine) std::atomic<std::uint64_t> next_endpoint_id;
  std::atomic<std::uint64_t> publish_dropped;      ///< claims overtaken or given up
  std::atomic<std::uint64_t> reclaimed_received;   ///< from subscribers since gone
  std::atomic<std::uint64_t> reclaimed_lost;       ///< from subscribers since gone
  std::atomic<std::uint64_t> reclaimed_endpoints;  ///< entries of dead processes reclaimed

  /// Time list head: total stamps ever written. One fetch_add per publish.
  alignas(kCacheLine) std::atomic<std::uint64_t> time_list_head;
};
static_assert(std::is_standard_layout_v<ChannelHeader>);
static_assert(offsetof(ChannelHeader, write_cursor) % kCacheLine == 0);
static_assert(offsetof(ChannelHeader, futex_word) - offsetof(ChannelHeader, write_cursor) >= kCacheLine,
              "the futex line must not share the cursor's cache line");
static_assert(offsetof(ChannelHeader, time_list_head) - offsetof(ChannelHeader, next_endpoint_id) >= kCacheLine,
              "the time-list head has its own cache line");
static_assert(sizeof(ChannelHeader) % kCacheLine == 0);

/// Time-list entry: the stamp in ns with its low 4 bits replaced by the lap
/// number (index / capacity) mod 16. A reader knows which lap it expects at
/// each index, so an entry claimed but not yet stored (still holding an
/// older lap's stamp) is recognised and skipped: one fetch_add and one store
/// per stamp, and a snapshot is still exact. Resolution: 16 ns.
inline constexpr std::uint64_t kLapMask = 0xF;
constexpr std::uint64_t time_list_entry(std::int64_t ns, std::uint64_t index, std::uint32_t capacity_log2) noexcept {
  return (static_cast<std::uint64_t>(ns) & ~kLapMask) | ((index >> capacity_log2) & kLapMask);
}

inline constexpr std::uint64_t kChannelLayoutHash = layout_hash_of(
    kLayoutVersion, sizeof(SegmentHeader), sizeof(ChannelHeader), offsetof(ChannelHeader, write_cursor),
    offsetof(ChannelHeader, futex_word), offsetof(ChannelHeader, time_list_head), sizeof(SlotHeader),
    sizeof(ProvenanceEntry), sizeof(EndpointEntry), sizeof(EndpointEntry), kSlotPayloadOffset,
    offsetof(EndpointEntry, messages), offsetof(EndpointEntry, lost), offsetof(EndpointEntry, age_max_ns),
    offsetof(EndpointEntry, age_samples), offsetof(EndpointEntry, discarded), kMaxPublishers, kMaxSubscribers);

}  // namespace shmbus::layout
