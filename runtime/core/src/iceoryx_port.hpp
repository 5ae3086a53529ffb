#pragma once
// The iceoryx transport's ports: a channel with transport = "iceoryx"
// carries its payloads in iceoryx chunks (iox::popo untyped publisher and
// subscriber, RouDi's memory pools) instead of its ring. Each chunk's user
// header is laid out as a ring slot's header followed by provenance entries
// (a SlotHeader, then room for as many entries as the message cites), so
// the publisher writes and the subscriber reads message info exactly as on
// the ring. The channel's shmbus segment stays: registry record, endpoints,
// schema, time list and futex word.
//
// In a chunk's SlotHeader, `state` is not a ring state: it holds the
// publisher's own count of messages sent, which lets a subscriber count
// what iceoryx discarded from its queue (a gap in one publisher's count).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layout/channel_layout.hpp"

namespace shmbus::detail {

/// The user header of a shmbus chunk: a slot's header, and room for as
/// many provenance entries as the message cites (at most all of a slot's:
/// the largest header).
inline constexpr std::uint32_t kChunkUserHeaderSize = layout::kSlotPayloadOffset;
inline constexpr std::uint32_t kChunkSlotHeaderSize = sizeof(layout::SlotHeader);
constexpr std::uint32_t chunk_user_header_size(std::uint32_t provenance_room) noexcept {
  return kChunkSlotHeaderSize + provenance_room * static_cast<std::uint32_t>(sizeof(layout::ProvenanceEntry));
}
/// Payloads are aligned as malloc aligns. Not to a cache line as in a ring
/// slot: after iceoryx's chunk header (40 bytes) and the slot header, a
/// 16-byte aligned payload starts in the second cache line, so a small
/// message costs the reader two lines, not three.
inline constexpr std::uint32_t kChunkPayloadAlignment = alignof(std::max_align_t);

/// Registers this process with RouDi once (the first iceoryx channel it
/// opens). Error(kNotFound) naming `channel` and how to start RouDi when
/// none runs.
void ensure_iceoryx_runtime(std::string_view channel);

class IceoryxPublisherPort {
 public:
  /// Offers the channel, keeping `history` messages for late subscribers
  /// (publisher_history). When `subscribers_exist`, waits (up to 2 s) until
  /// RouDi has connected them, so the first messages reach them.
  IceoryxPublisherPort(const std::string& domain, const std::string& channel, std::uint32_t history,
                       bool subscribers_exist);
  ~IceoryxPublisherPort();
  IceoryxPublisherPort(const IceoryxPublisherPort&) = delete;
  IceoryxPublisherPort& operator=(const IceoryxPublisherPort&) = delete;

  /// A chunk for `size` payload bytes, and its slot header, followed by
  /// room for `provenance_room` entries (at most kProvenanceEntries);
  /// nullptr when RouDi's pool has none free.
  std::byte* loan(std::uint32_t size, std::uint32_t provenance_room, layout::SlotHeader*& header) noexcept;
  void publish(std::byte* payload) noexcept;
  void release(std::byte* payload) noexcept;
  /// Messages sent by this port, the count stamped into each chunk.
  std::uint64_t next_count() noexcept { return ++sent_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t sent_ = 0;
};

class IceoryxSubscriberPort {
 public:
  /// Subscribes with a queue of `capacity` (at most 256, iceoryx's bound)
  /// and `history` past messages (at most 16). Waits (up to 2 s) until RouDi
  /// has processed the subscription, and connected it when
  /// `publishers_exist`.
  IceoryxSubscriberPort(const std::string& domain, const std::string& channel, std::uint32_t capacity,
                        std::uint32_t history, bool publishers_exist);
  ~IceoryxSubscriberPort();
  IceoryxSubscriberPort(const IceoryxSubscriberPort&) = delete;
  IceoryxSubscriberPort& operator=(const IceoryxSubscriberPort&) = delete;

  /// What a taken chunk holds, as iceoryx sized it (the slot header's own
  /// claims come from the publishing process and are bounded by these).
  struct ChunkBounds {
    std::uint32_t payload_size = 0;
    std::uint32_t provenance_room = 0;  ///< entries the user header has room for
  };
  /// The next chunk's payload, slot header and bounds, or nullptr.
  const std::byte* take(const layout::SlotHeader*& header, ChunkBounds& bounds) noexcept;
  void release(const std::byte* payload) noexcept;
  [[nodiscard]] bool has_data() const noexcept;
  /// True when iceoryx discarded a chunk from our full queue since the
  /// last call (its flag, cleared by the call).
  [[nodiscard]] bool discarded() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::detail
