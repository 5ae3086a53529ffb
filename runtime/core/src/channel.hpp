#pragma once
// A mapped channel segment and the operations on its endpoint tables. The
// ring protocol itself lives in ring.hpp; this class owns the mapping.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layout/channel_layout.hpp"
#include "registry.hpp"
#include "segment.hpp"
#include "shmbus/config.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/names.hpp"
#include "shmbus/types.hpp"

namespace shmbus::detail {

using introspect::TimeListCursor;

/// One generation's ring, mapped, with its geometry copied from the
/// validated header (layout/channel_layout.hpp, "Generations"). Generation
/// 0 lies in the channel's segment; a later one holds its own segment,
/// which stays mapped while anyone holds the Ring.
struct Ring {
  std::uint32_t generation = 0;
  std::uint64_t start = 0;  ///< its first sequence
  std::byte* slots = nullptr;
  layout::SlotClaim* claims = nullptr;
  std::uint64_t mask = 0;
  std::uint64_t stride = 0;
  std::uint32_t max_message_size = 0;
  Segment segment;  ///< empty for generation 0

  [[nodiscard]] layout::SlotHeader* slot(std::uint64_t seq) const noexcept {
    return reinterpret_cast<layout::SlotHeader*>(slots + (seq & mask) * stride);
  }
  /// The claim word of the slot `seq` goes into (layout/channel_layout.hpp).
  [[nodiscard]] std::atomic<std::uint64_t>& claim_word(std::uint64_t seq) const noexcept {
    return claims[seq & mask].word;
  }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return mask + 1; }
};

/// What a publisher's process allows growing (its configuration's).
struct GrowLimits {
  std::string domain;
  std::uint64_t budget = 0;  ///< bytes of all ring generations in the domain
};

/// The steps of a growth, where a test seam may stop the grower.
enum class GrowPause : std::uint8_t { kLocked, kCreated, kAnnounced };

/// A growth asked for: done (or done by another publisher), or refused
/// with one line saying why.
struct GrowOutcome {
  bool grown = false;
  std::string refusal;
  /// The sequence the grower claimed to settle the new generation's start,
  /// when it was the start (its message goes there); else kNoSequence.
  std::uint64_t first = kNoSequence;
  /// Sequences claimed while settling starts that carry no message: the
  /// caller writes each as a discarded slot.
  std::vector<std::uint64_t> spare;
  static constexpr std::uint64_t kNoSequence = UINT64_MAX;
};

class Channel {
 public:
  /// Maps an existing channel segment without touching the registry
  /// (introspection: Residency::kOnTouch). Error(kNotFound) when it does
  /// not exist. A kOnTouch channel keeps only its front mapped (header,
  /// endpoint tables, time list; Segment::keep_front): it has no ring, and
  /// slot() and claim_word() are for publishers and subscribers.
  static std::shared_ptr<Channel> open_existing(const std::string& domain, const ChannelName& name, bool writable,
                                                const SegmentAccess& access, Residency residency = Residency::kOnTouch);
  /// Creates the channel with `settings` and `type`, or opens it; checks the
  /// type (when `type` is given). Without `type`, or without `create`,
  /// only an existing channel is opened (Error(kNotFound) naming it
  /// otherwise).
  static std::shared_ptr<Channel> create_or_open(const std::string& domain, const ChannelName& name,
                                                 const TypeInfo* type, const ChannelSettings& settings,
                                                 const SegmentAccess& access, bool create);
  /// Lists the channel in `registry` (again: a creator killed before it
  /// listed the channel is repaired by the next opener) and stores its
  /// index in the header.
  void list_in(Registry& registry);

  [[nodiscard]] layout::ChannelHeader& header() const noexcept { return *header_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& type_name() const noexcept { return type_name_; }
  [[nodiscard]] const Segment& segment() const noexcept { return segment_; }

  /// The geometry copied into private memory at open, after validation: a
  /// process that changes the header afterwards cannot make us address
  /// outside the mapping.
  [[nodiscard]] std::uint32_t max_message_size() const noexcept { return max_message_size_; }
  [[nodiscard]] std::int64_t stall_timeout_ns() const noexcept { return stall_timeout_ns_; }
  [[nodiscard]] Transport transport() const noexcept { return transport_; }
  [[nodiscard]] Overflow overflow() const noexcept { return overflow_; }
  [[nodiscard]] std::int64_t block_timeout_ns() const noexcept { return block_timeout_ns_; }
  /// Where the ring's sizes came from: "from FILE:LINE:COLUMN of PROGRAM
  /// (pid N), which created the channel" (or from the built-in defaults,
  /// or the publisher's options).
  [[nodiscard]] std::string sizes_origin() const;
  [[nodiscard]] std::uint32_t creator_pid() const noexcept { return creator_pid_; }
  [[nodiscard]] const std::string& creator_program() const noexcept { return creator_program_; }
  /// The configuration entry of the sizes ("" for the built-in defaults).
  /// Both strings are read bounded from the segment and escaped.
  [[nodiscard]] const std::string& sizes_from() const noexcept { return sizes_from_; }
  /// The one line for a message of `size` bytes over max_message_size:
  /// the sizes' origin and what to do.
  [[nodiscard]] std::string too_large(std::size_t size) const;
  /// An opener whose `settings` name sizes other than the channel's (the
  /// channel was made before, by another configuration): one line on
  /// stderr naming both and the fix. The channel's sizes hold.
  void report_other_sizes(const ChannelSettings& settings) const;

  /// The ring of generation `g` (0: the one in this segment), mapped once
  /// per process; null when `g` is not announced, its start not settled,
  /// or its segment removed (its messages are gone) or refused as corrupt
  /// (said once on stderr).
  [[nodiscard]] std::shared_ptr<const Ring> ring(std::uint32_t g) const;
  /// The current generation (announced; its start may still be unknown).
  [[nodiscard]] std::uint32_t generation() const noexcept {
    // SYNC POINT READ: acquire pairs with the grower's seq_cst store, after
    // its stores of the generation's record.
    return std::min(header_->generation.load(std::memory_order_acquire), layout::kMaxGenerations - 1);
  }
  /// The first sequence of generation `g`, or kStartUnknown.
  [[nodiscard]] std::uint64_t generation_start(std::uint32_t g) const noexcept {
    // SYNC POINT READ: pairs with the settling CAS (release).
    return g < layout::kMaxGenerations ? header_->generations[g].start.load(std::memory_order_acquire)
                                       : layout::kStartUnknown;
  }
  /// The ring sequence `seq` was claimed in: the newest generation whose
  /// start is at or below it (null when that ring cannot be mapped).
  [[nodiscard]] std::shared_ptr<const Ring> ring_of(std::uint64_t seq) const;
  /// The newest generation with a settled start, and its ring (null when
  /// it cannot be mapped).
  [[nodiscard]] std::shared_ptr<const Ring> current_ring() const;
  /// The slot size and slot count of the newest settled generation, as
  /// its record says (bounded): what tools show.
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> current_geometry() const noexcept;
  /// Whether this channel may grow (a ring channel created with grow on).
  [[nodiscard]] bool may_grow() const noexcept { return grow_; }
  /// The largest message a publisher may send: max_grow_size when the
  /// channel grows, else its slots.
  [[nodiscard]] std::uint32_t size_ceiling() const noexcept { return grow_ ? max_grow_size_ : max_message_size_; }
  /// Makes the ring hold messages of `size` bytes: nothing when the
  /// current generation does already, else the next generation (one
  /// grower at a time; a dead one's lock is taken over). `token`: the
  /// caller's publisher token. Refused, with the line to say, over the
  /// channel's max_grow_size, past `limits.budget`, when the channel does
  /// not grow, or after kMaxGenerations - 1 growths.
  /// `at(point)` is called at each step (GrowPause), for test seams.
  GrowOutcome grow(std::size_t size, const GrowLimits& limits, const std::function<void(GrowPause)>& at);
  /// Settles generation `g`'s start if it is still unknown (a grower killed
  /// after announcing it, or any publisher that finds it so): claims a
  /// sequence (seq_cst fetch_add) and CASes it in. Returns the sequence
  /// claimed (kNoSequence when the start was known): the caller fills it,
  /// and `won` tells whether it is the start.
  std::uint64_t settle_start(std::uint32_t g, bool& won) noexcept;
  /// Removes the segments of generations that no live subscriber reads
  /// any more (all below the lowest one a subscriber entry names, and
  /// below the current one).
  void remove_unneeded_generations() noexcept;

  [[nodiscard]] const Ring& ring0() const noexcept { return *ring0_; }
  [[nodiscard]] static std::byte* payload(layout::SlotHeader* s) noexcept {
    return reinterpret_cast<std::byte*>(s) + layout::kSlotPayloadOffset;
  }
  /// Where a ring slot's message of `size` bytes is, given its flags: in
  /// the header's line (kSlotInlinePayload) or in the payload area.
  [[nodiscard]] static std::byte* payload(layout::SlotHeader* s, std::uint16_t flags, std::uint32_t size) noexcept {
    return (flags & layout::kSlotInlinePayload) != 0
               ? reinterpret_cast<std::byte*>(s) + layout::inline_payload_offset(size)
               : payload(s);
  }
  /// The provenance entries after a slot's (or an iceoryx chunk's) header:
  /// as many as a MessageInfo holds, so copy_provenance copies between the
  /// two in whole lines.
  static_assert(layout::kProvenanceEntries == kMaxProvenance, "a slot holds as many entries as a MessageInfo");
  [[nodiscard]] static layout::ProvenanceEntry* provenance(layout::SlotHeader* s) noexcept {
    return reinterpret_cast<layout::ProvenanceEntry*>(reinterpret_cast<std::byte*>(s) + layout::kCacheLine);
  }
  [[nodiscard]] static const layout::ProvenanceEntry* provenance(const layout::SlotHeader* s) noexcept {
    return reinterpret_cast<const layout::ProvenanceEntry*>(reinterpret_cast<const std::byte*>(s) + layout::kCacheLine);
  }
  /// The slot count the channel was created with (generation 0's).
  [[nodiscard]] std::uint64_t capacity() const noexcept { return slot_mask_ + 1; }

  /// The next sequence to claim: the larger of the shared cursor and the
  /// solo publisher's (layout/channel_layout.hpp, "Solo publisher").
  [[nodiscard]] std::uint64_t write_cursor() const noexcept {
    // SYNC POINT READ: acquire, as for the shared cursor alone; each word
    // only grows, so the larger of the two is never ahead of the truth.
    return std::max(header_->write_cursor.load(std::memory_order_acquire),
                    header_->solo_cursor.load(std::memory_order_acquire));
  }
  /// Stamps ever claimed: the larger of the shared and the solo head.
  [[nodiscard]] std::uint64_t time_list_head() const noexcept {
    // SYNC POINT READ: acquire, as for the shared head alone; the entries
    // carry their own release stores (store_stamp), the heads only bound.
    return std::max(header_->time_list_head.load(std::memory_order_acquire),
                    header_->solo_time_list_head.load(std::memory_order_acquire));
  }

  /// Solo publisher (layout/channel_layout.hpp), in two steps: takes the
  /// grant for publisher `token` (CAS) when nobody holds it and this process
  /// can take part (solo_publishing_enabled), returning the grant word (0:
  /// not taken); then keep_solo_grant keeps it when `token` is the channel's
  /// one publisher (returns it) or gives it back (returns 0).
  [[nodiscard]] std::uint64_t take_solo_grant(std::uint32_t token) noexcept;
  [[nodiscard]] std::uint64_t keep_solo_grant(std::uint64_t grant) noexcept;
  /// The holder, between publishes, gives `grant` back (if it still holds
  /// it) and hands the shared cursors on.
  void return_solo(std::uint64_t grant) noexcept;
  /// A publisher that has just registered: revokes the grant, waits for a
  /// solo publish in flight (up to stall_timeout; a holder known dead is
  /// fenced at once, a live one stopped past it then) and raises the shared
  /// cursors past the solo ones.
  void end_solo() noexcept;
  /// Without membarrier: waits until the last solo holder named in `w`
  /// cannot be inside a solo publish it began before our revocation (it
  /// gave the grant back, it is gone, or each of its threads passed through
  /// the scheduler: SchedulerPass), at most stall_timeout.
  void wait_for_holder(std::uint64_t w) noexcept;
  /// Raises the shared cursor and time-list head to the solo ones (CAS, never
  /// lowered): the shared path then continues where the solo one stopped.
  void merge_solo_cursors() noexcept;

  /// The notify hook: one fetch_add on the head (claim_stamp), one store
  /// (store_stamp).
  [[nodiscard]] std::uint64_t claim_stamp() const noexcept {
    // relaxed fetch_add: the head only hands out indices; the entry itself
    // carries its lap, so readers need no ordering with the head.
    return header_->time_list_head.fetch_add(1, std::memory_order_relaxed);
  }
  void store_stamp(std::uint64_t i, std::int64_t mono_ns) const noexcept {
    // SYNC POINT WRITE: release so a reader that sees the entry (acquire)
    // also sees the committed slot of the message it stamps.
    time_list_[i & time_list_mask_].store(layout::time_list_entry(mono_ns, i, time_list_log2_),
                                          std::memory_order_release);
  }
  void stamp(std::int64_t mono_ns) const noexcept { store_stamp(claim_stamp(), mono_ns); }
  /// Reads the stamps of the current lap into `out` (time order, entries
  /// still being written left out). Returns the head read.
  std::uint64_t snapshot_time_list(std::vector<std::int64_t>& out) const;
  /// See introspect::ChannelReader::read_stamps_since.
  std::uint64_t read_stamps_since(TimeListCursor& cursor, std::vector<std::int64_t>& out) const;

  /// False only when the publisher that holds a slot in `writing_state`
  /// is known to be gone (its entry freed or re-let, or its process dead by
  /// pid + start time); a claim by a live or unknown writer is never taken.
  [[nodiscard]] bool writer_alive(std::uint64_t slot_state) const noexcept;
  /// The token a publisher registered at `index` writes into slot states.
  [[nodiscard]] std::uint32_t publisher_token(std::uint32_t index) const noexcept;

  /// The subscriber at entry `index` registers as a sleeper (its bit in
  /// `waiters`) and gets the futex value to sleep on; leave_waiters after.
  std::uint32_t enter_waiters(std::uint32_t index) const noexcept;
  void leave_waiters(std::uint32_t index) const noexcept;

  /// Publisher entries held (claimed or live).
  [[nodiscard]] std::uint32_t publishers_present() const noexcept;

  /// Endpoint tables. register_* reclaims entries of dead processes first;
  /// they throw Error(kResource) when the table is full.
  std::uint32_t register_publisher(std::string_view node, std::uint32_t& id);
  std::uint32_t register_subscriber(std::string_view node, std::uint32_t& id);
  void unregister_publisher(std::uint32_t index) noexcept;
  void unregister_subscriber(std::uint32_t index) noexcept;
  [[nodiscard]] layout::EndpointEntry& publisher(std::uint32_t i) const noexcept { return publishers_[i]; }
  [[nodiscard]] layout::EndpointEntry& subscriber(std::uint32_t i) const noexcept { return subscribers_[i]; }
  /// Frees the entries whose process is gone, folding their counters into
  /// the channel's reclaimed_* totals. Returns how many were freed.
  std::uint32_t reclaim_dead() noexcept;
  /// Live entries of the publisher (or subscriber) table.
  [[nodiscard]] std::uint32_t live_endpoints(bool subscribers) const noexcept;
  /// How many leading entries of a table were ever claimed (acquire; at
  /// most the table's size, whatever shared memory says): an observer reads
  /// only those, leaving the pages of entries never used untouched.
  [[nodiscard]] std::uint32_t entries_used(bool subscribers) const noexcept {
    const std::uint32_t n =
        (subscribers ? header_->subscribers_used : header_->publishers_used).load(std::memory_order_acquire);
    return std::min(n, subscribers ? layout::kMaxSubscribers : layout::kMaxPublishers);
  }
  /// A publisher entry's id and count of messages sent, read as one whole
  /// (the entry neither claimed, refilled nor freed meanwhile): false when
  /// it cannot be, or the entry was never used. A freed entry keeps its last
  /// holder's id and count until it is claimed again; `live` tells which.
  struct PublisherCount {
    std::uint32_t id = 0;
    std::uint64_t sent = 0;
    bool live = false;
  };
  [[nodiscard]] bool publisher_count(std::uint32_t i, PublisherCount& out) const noexcept;

  [[nodiscard]] TypeInfo type() const;
  /// The schema text stored at creation (empty for untyped channels).
  [[nodiscard]] std::string_view schema_text() const noexcept;

 private:
  Channel(Segment s, std::string name, std::string domain, SegmentAccess access);
  /// Maps generation `g`'s segment and validates it (ring()).
  [[nodiscard]] std::shared_ptr<const Ring> map_ring(std::uint32_t g, std::uint64_t start) const;
  /// grow()'s work under the lock: the refusal, or empty.
  std::string grow_locked(std::size_t size, const GrowLimits& limits, GrowOutcome& out,
                          const std::function<void(GrowPause)>& at);
  std::uint32_t register_endpoint(layout::EndpointEntry* table, std::uint32_t size, std::string_view node,
                                  const char* what, std::uint32_t& id);
  /// Frees entry `e` that this process holds (claimed by it): folds a
  /// subscriber's counters, clears its sleep, bumps the tenancy, frees.
  void release_entry(layout::EndpointEntry& e, bool subscriber, std::uint32_t index, bool fold) noexcept;
  /// end_solo: a holder dead or stopped past stall_timeout inside the solo
  /// publish `busy` (its solo_busy) is fenced off from what others use.
  void fence_solo(std::uint64_t busy, bool alive) noexcept;
  Segment segment_;
  std::string name_;
  layout::ChannelHeader* header_;
  std::string domain_;
  SegmentAccess access_;
  std::shared_ptr<const Ring> ring0_;
  mutable std::mutex rings_mutex_;
  mutable std::array<std::weak_ptr<const Ring>, layout::kMaxGenerations> rings_;
  mutable std::array<bool, layout::kMaxGenerations> ring_refused_{};
  bool grow_ = false;
  std::uint32_t max_grow_size_ = 0;
  std::byte* slots_;
  layout::SlotClaim* claims_;
  std::uint64_t slot_mask_;
  std::uint64_t slot_stride_;
  std::uint32_t max_message_size_;
  std::int64_t stall_timeout_ns_;
  Overflow overflow_;
  std::int64_t block_timeout_ns_;
  Transport transport_;
  std::string type_name_;
  std::uint64_t type_hash_;
  std::string schema_;
  std::uint32_t creator_pid_;
  std::string creator_program_;
  std::string sizes_from_;
  std::atomic<std::uint64_t>* time_list_;
  std::uint64_t time_list_mask_;
  std::uint32_t time_list_log2_;
  layout::EndpointEntry* publishers_;
  layout::EndpointEntry* subscribers_;
};

/// What a Context has mapped of its domain: the registry and a cache of
/// channels shared by every publisher and subscriber of the process.
class DomainState {
 public:
  DomainState(const Config& config) : config_(config) {}
  /// The channel, mapped once per process; `settings` are the caller's,
  /// resolved once (config.channel(name)), and create it when it is new. A
  /// mapping whose object was removed (`shmtool clean`) is replaced by the
  /// current one.
  /// Without `create` an existing channel is opened, never made. The name
  /// is resolved to its object here, once per mapping, and this process's
  /// iceoryx runtime is started here for an iceoryx channel.
  std::shared_ptr<Channel> channel(const ChannelName& name, const ChannelSettings& settings, const TypeInfo* type,
                                   bool create = true);
  /// The registry; re-opened when its object was removed, so channels
  /// created later are listed where monitors look.
  Registry& registry();

 private:
  const Config& config_;
  std::mutex mutex_;
  std::optional<Registry> registry_;
  std::map<std::string, std::weak_ptr<Channel>, std::less<>> channels_;
};

}  // namespace shmbus::detail
