#pragma once
// The registry segment of a domain: an open-addressing hash table of channel
// records keyed by channel name (linear probing). Records are never moved;
// a removed channel leaves a tombstone so probes keep going past it, and a
// new name never reuses a tombstone while the registry is in use, so two
// processes adding the same name at once always meet at the same record.
//
//   0                64               128
//   +----------------+----------------+---------------------------------+
//   | SegmentHeader  | capacity, gen  | ChannelRecord[capacity] (256 B) |
//   +----------------+----------------+---------------------------------+

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "layout/channel_layout.hpp"
#include "layout/segment_layout.hpp"

namespace shmbus::layout {

/// Record phase in the low 2 bits of the state word; a Claimed word is an
/// owner word (segment_layout.hpp): the claimer's pid and start time.
inline constexpr std::uint64_t kRecordFree = 0;
inline constexpr std::uint64_t kRecordClaimed = 1;
inline constexpr std::uint64_t kRecordLive = 2;
inline constexpr std::uint64_t kRecordTombstone = 3;

struct alignas(kCacheLine) ChannelRecord {
  // SYNC POINT WRITE: claimer CASes Free -> Claimed(owner) (acq_rel), fills the
  // record, stores Live (release). Readers load (acquire) before the fields.
  std::atomic<std::uint64_t> state;
  std::uint64_t name_hash;
  char name[kNameBytes];
  char type_name[kTypeNameBytes];
  std::uint64_t type_hash;
  std::uint32_t transport;
  std::uint32_t reserved;
};
static_assert(std::is_standard_layout_v<ChannelRecord>);
static_assert(sizeof(ChannelRecord) == 256, "records are four cache lines");

struct RegistryHeader {
  SegmentHeader segment;
  std::uint32_t capacity;  ///< records, a power of two
  std::uint32_t reserved0;
  std::uint64_t records_offset;
  /// Bumped (release) after every add or removal, so a reader can tell the
  /// list changed without re-reading it.
  std::atomic<std::uint64_t> generation;
  std::uint8_t reserved[40];
};
static_assert(sizeof(RegistryHeader) == 2 * kCacheLine);

inline constexpr std::uint64_t kRegistryLayoutHash =
    layout_hash_of(kLayoutVersion, sizeof(SegmentHeader), sizeof(RegistryHeader), sizeof(ChannelRecord),
                   offsetof(ChannelRecord, type_hash), kNameBytes, kTypeNameBytes);

}  // namespace shmbus::layout
