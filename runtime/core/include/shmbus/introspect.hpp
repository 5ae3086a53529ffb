#pragma once
/// @file introspect.hpp
/// A read-only view of a domain for the daemon and the tools: the channels,
/// their endpoints and counters, and snapshots of their time lists. Nothing
/// here registers an endpoint or changes a channel.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/types.hpp"

namespace shmbus::introspect {

/// One live publisher or subscriber of a channel.
struct EndpointView {
  std::uint32_t id = 0;
  /// Its entry in the channel's endpoint table: unique among the channel's
  /// endpoints of its kind now, reused once it is gone.
  std::uint32_t slot = 0;
  std::int32_t pid = 0;
  std::string node;
  bool alive = true;           ///< false: its process is gone (not yet reclaimed)
  std::uint64_t messages = 0;  ///< published, or received
  std::uint64_t dropped = 0;   ///< publishers: messages dropped (a claim given up)
  std::uint64_t lost = 0;      ///< subscribers: messages lost (overwritten or skipped)
  /// Subscribers: message age (take time - publish time), sampled every
  /// age_sample_every-th take. Publishers: the transit of what they carried
  /// from another host (Publisher::record_transit; gateways). Sums since the
  /// endpoint started (over age_samples samples); min/max since the last
  /// ChannelReader::reset_age_extremes() (min is UINT64_MAX before a sample).
  std::uint64_t age_sum_ns = 0;
  double age_sum_sq_s2 = 0;
  std::uint64_t age_min_ns = UINT64_MAX;
  std::uint64_t age_max_ns = 0;
  std::uint64_t age_samples = 0;  ///< takes whose age the sums hold
  /// Subscribers: taken, then discarded by the application (a synchronizer).
  std::uint64_t discarded = 0;
  /// Subscribers: exceptions thrown by a Node's callbacks for it.
  std::uint64_t errors = 0;
  /// Publishers: first-level inputs their messages could not cite (beyond
  /// kMaxProvenance per message).
  std::uint64_t provenance_cut = 0;
  /// Publishers: messages lost before they reached it (a gateway's import:
  /// lost between the hosts; Publisher::count_upstream_lost).
  std::uint64_t upstream_lost = 0;
  /// overflow = block channels. Publishers: time spent waiting for room,
  /// and waits that reached block_timeout (the subscribers holding them up
  /// were overtaken). Subscribers: the next sequence they take (UINT64_MAX
  /// until known; on other channels, too).
  std::uint64_t blocked_ns = 0;
  std::uint64_t block_timeouts = 0;
  std::uint64_t read_cursor = UINT64_MAX;
};

/// Everything a channel says about itself.
struct ChannelView {
  std::string name;
  std::string type_name;
  std::uint64_t type_hash = 0;
  std::string schema;
  /// The type as the channel stores it (name, hash, schema).
  [[nodiscard]] TypeInfo type() const { return {type_name, type_hash, schema}; }
  Transport transport = Transport::kShm;
  std::uint32_t registry_index = 0;
  /// The ring's slots and their size now: those of its current
  /// generation (0 until the channel grows for the first time).
  std::uint32_t capacity = 0;
  std::uint32_t max_message_size = 0;
  std::uint32_t generation = 0;
  /// The largest slot the ring may grow to; 0: it does not grow.
  std::uint32_t max_grow_size = 0;
  /// Publishes refused because the ring could not grow (over
  /// max_grow_size, past the domain's grow_budget, ...).
  std::uint64_t grows_refused = 0;
  std::uint32_t time_list_capacity = 0;
  /// Who created the channel, and where its three sizes above came from
  /// (the `file:line:column` of its configuration entry, "the publisher's
  /// options", or "" for the built-in defaults).
  std::uint32_t creator_pid = 0;
  std::string creator_program;
  std::string sizes_from;
  std::int64_t stall_timeout_ns = 0;
  Overflow overflow = Overflow::kOverwrite;
  std::int64_t block_timeout_ns = 0;                   ///< overflow = block only
  std::int64_t window_ns = 0;                          ///< from the creator's configuration
  std::optional<std::array<double, 3>> thresholds_hz;  ///< idem
  std::uint64_t messages = 0;                          ///< sequences claimed (published or dropped)
  std::uint64_t publish_dropped = 0;                   ///< claims that were dropped
  std::uint64_t lost = 0;                              ///< lost by all subscribers, past ones included
  std::uint64_t received = 0;                          ///< received by all subscribers, past ones included
  std::uint64_t stamps = 0;                            ///< time-list stamps ever written
  std::uint32_t wakeups = 0;                           ///< futex wake calls publishers made (mod 2^32)
  std::uint32_t sleepers = 0;                          ///< subscribers asleep in a wait right now
  /// A lone publisher holds the solo grant: it publishes without locked
  /// instructions (docs/architecture.md, "Solo publisher").
  bool solo = false;
  /// Closed to solo publishing for good: a process that cannot use
  /// membarrier (a seccomp filter) used the channel.
  bool solo_closed = false;
  std::vector<EndpointView> publishers;
  std::vector<EndpointView> subscribers;
};

/// The stamps of one time list in time order, CLOCK_MONOTONIC ns. `total` is how many were ever written; when it
/// exceeds the capacity the oldest were overwritten.
struct TimeListSnapshot {
  std::vector<std::int64_t> stamps;
  std::uint64_t total = 0;
  std::uint32_t capacity = 0;
};

/// Where an incremental reader of a time list is: every index below `next`
/// was examined once; `pending` holds the examined indices whose stamp was
/// claimed but not stored yet (with several publishers a stamp claimed
/// before a higher index may be stored after it). A pending index is read
/// again on every call until its stamp is there or the list overwrote it,
/// so no stamp is skipped and none is read twice.
struct TimeListCursor {
  std::uint64_t next = 0;
  std::vector<std::uint64_t> pending;
};

class ChannelReader;

/// A domain's registry, mapped read-only.
/// Thread-safety: const members may be called concurrently.
class DomainView {
 public:
  /// Throws Error(kNotFound) when the domain has no registry, and
  /// Error(kLayoutMismatch) for a foreign or corrupt one.
  /// `access`: whose registry is accepted (Config::access()).
  explicit DomainView(const std::string& domain, const SegmentAccess& access = {});
  ~DomainView();
  DomainView(DomainView&&) noexcept;
  DomainView& operator=(DomainView&&) noexcept;

  [[nodiscard]] const std::string& domain() const noexcept;
  /// Names of the listed channels, sorted.
  [[nodiscard]] std::vector<std::string> channel_names() const;
  /// The channel's name at a registry index (for Provenance), if listed.
  [[nodiscard]] std::optional<std::string> channel_name(std::uint32_t registry_index) const;
  /// Changes whenever a channel is listed or removed.
  [[nodiscard]] std::uint64_t generation() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One channel, mapped read-only.
class ChannelReader {
 public:
  /// Throws Error(kNotFound) when the channel does not exist. `writable`
  /// only for reset_age_extremes().
  ChannelReader(const std::string& domain, std::string_view channel, bool writable = false,
                const SegmentAccess& access = {});
  ~ChannelReader();
  ChannelReader(ChannelReader&&) noexcept;
  ChannelReader& operator=(ChannelReader&&) noexcept;

  /// A fresh view of the channel's identity, endpoints and counters.
  [[nodiscard]] ChannelView view() const;
  /// Whether the channel's name now names another segment, or none (it was
  /// removed, and perhaps made again): this reader maps what is gone.
  [[nodiscard]] bool replaced() const noexcept;
  /// Incremental read for monitors: appends to `out` every stamp stored
  /// since the last call with `cursor` (at most one list's worth; pending
  /// ones first, then in index order, so not always in time order) and
  /// advances `cursor`. An entry claimed but not yet stored stays pending
  /// until it is stored (or overwritten: a publisher that died between
  /// claiming and storing never stores). Returns how many indices were lost
  /// to overwriting before they were read.
  std::uint64_t read_stamps_since(TimeListCursor& cursor, std::vector<std::int64_t>& out) const;

  /// Starts a new min/max window of every endpoint's age (subscribers) and
  /// transit (publishers); the daemon calls it once per statistics window.
  /// Needs `writable`.
  void reset_age_extremes() const;

  /// A consistent snapshot of the time list: every stamp returned was
  /// written by a publish, none is counted twice. Reuses `out`'s storage.
  void snapshot(TimeListSnapshot& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What clean_domain removed, or would remove.
struct CleanReport {
  std::vector<std::string> removed;   ///< /dev/shm object names
  std::vector<std::string> kept;      ///< in use by a live process
  std::vector<std::string> kept_why;  ///< why each of `kept` was kept, in its order
};

/// Removes the domain's segments that no live process uses: a channel with
/// no live publisher or subscriber, and the registry once no channel is
/// left. Entries of dead processes are reclaimed first. With `dry_run`,
/// reports without removing. Segments that are not valid shmbus segments
/// of this layout are removed too (they can only be left-overs).
/// Segments another user owns (refused by `access`) are kept: not ours.
CleanReport clean_domain(const std::string& domain, bool dry_run, const SegmentAccess& access = {});

/// Removes one channel (its segment and registry entry) when no live
/// process uses it, as clean_domain() judges; false when it is in use,
/// someone else's, or already gone. A process that attaches between the
/// check and the removal keeps its mapping, but the name is free again.
bool remove_unused_channel(const std::string& domain, std::string_view channel, const SegmentAccess& access = {});

}  // namespace shmbus::introspect
