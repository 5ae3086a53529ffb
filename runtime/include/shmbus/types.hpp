#pragma once
/// @file types.hpp
/// Message types, the per-message header a subscriber receives, and the
/// small value types shared by the public API.

#include <array>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace shmbus {

/// The identity of a channel's message type: a name such as `sensors/Imu`,
/// a hash of its schema, and optionally the schema text itself.
/// Two openers of a channel agree when name and hash are equal.
struct TypeInfo {
  std::string name;    ///< `package/Name`; at most 95 characters
  std::uint64_t hash;  ///< stable hash of the normalised schema
  std::string schema;  ///< schema text, stored in the channel segment (may be empty)

  /// The type of raw byte channels (`shmbus/Bytes`, hash 0).
  static TypeInfo bytes() { return {"shmbus/Bytes", 0, ""}; }
};

/// A trivially copyable struct that declares `static constexpr` members
/// `kTypeName` (convertible to std::string_view) and `kTypeHash`
/// (std::uint64_t); `kSchema` is optional. Generated message headers satisfy
/// it; hand-written structs may too.
template <typename T>
concept MessageType = std::is_trivially_copyable_v<T> && requires {
  {std::string_view{T::kTypeName}};
  {static_cast<std::uint64_t>(T::kTypeHash)};
};

/// The TypeInfo of a MessageType.
template <MessageType T>
TypeInfo type_info_of() {
  if constexpr (requires { std::string_view{T::kSchema}; }) {
    return {std::string{T::kTypeName}, T::kTypeHash, std::string{T::kSchema}};
  } else {
    return {std::string{T::kTypeName}, T::kTypeHash, ""};
  }
}

/// One input a module read before it published a message: which channel (by
/// its registry index) and which sequence. Used by the replayer to rebuild
/// module-dependency order.
struct Provenance {
  std::uint32_t channel_index = 0;
  std::uint64_t sequence = 0;
};

/// How many provenance entries a message header can carry.
inline constexpr std::size_t kMaxProvenance = 4;

/// What a subscriber learns about one message besides its payload.
struct MessageInfo {
  std::uint64_t sequence = 0;          ///< channel-wide, starts at 0, no gaps at the writer
  std::int64_t publish_time_ns = 0;    ///< CLOCK_MONOTONIC at publish
  std::int64_t publish_wall_ns = 0;    ///< CLOCK_REALTIME at publish
  std::uint32_t size = 0;              ///< payload bytes
  std::uint32_t publisher_id = 0;      ///< unique per channel, see shmtool info
  std::uint64_t lost_before = 0;       ///< messages lost since the previous take
  std::uint32_t provenance_count = 0;  ///< valid entries in `provenance`
  std::array<Provenance, kMaxProvenance> provenance{};
};

}  // namespace shmbus
