#pragma once
/// @file types.hpp
/// Message types, the per-message header a subscriber receives, and the
/// small value types shared by the public API.

#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace shmbus {

/// `v` rounded up to a multiple of `a` (a > 0): layouts of messages and
/// segments.
constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) noexcept { return (v + a - 1) / a * a; }

/// The identity of a channel's message type: a name such as `sensors/Imu`,
/// a hash of its schema, and optionally the schema text itself.
/// Two openers of a channel agree when name and hash are equal.
struct TypeInfo {
  std::string name;    ///< `package/Name`; at most 95 characters
  std::uint64_t hash;  ///< stable hash of the normalised schema
  std::string schema;  ///< schema text, stored in the channel segment (may be empty)

  /// The type of raw byte channels (`shmbus/Bytes`, hash 0).
  static TypeInfo bytes() { return {"shmbus/Bytes", 0, ""}; }
  /// Whether the type carries a schema to decode it by: raw bytes (hash 0)
  /// and a type stored without its text carry none.
  [[nodiscard]] bool carries_schema() const noexcept { return hash != 0 && !schema.empty(); }
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

/// What shmbus-msggen generates for a type with strings or sequences: an
/// owning type (std::string, std::vector) with `kTypeName`, `kTypeHash`,
/// `kSchema`, its `View` (read in place) and `Builder` (write into a
/// loan), `wire_size()`, `build(Builder)` and `T::from(View)`.
template <typename T>
concept VariableMessageType = requires(const T& m, typename T::Builder b, const typename T::View& v) {
  {std::string_view{T::kTypeName}};
  {static_cast<std::uint64_t>(T::kTypeHash)};
  { m.wire_size() } -> std::convertible_to<std::size_t>;
  m.build(b);
  { T::from(v) } -> std::same_as<T>;
};

/// Either kind of message type.
template <typename T>
concept AnyMessageType = MessageType<T> || VariableMessageType<T>;

/// The TypeInfo of a message type.
template <AnyMessageType T>
TypeInfo type_info_of() {
  if constexpr (requires { std::string_view{T::kSchema}; }) {
    return {std::string{T::kTypeName}, T::kTypeHash, std::string{T::kSchema}};
  } else {
    return {std::string{T::kTypeName}, T::kTypeHash, ""};
  }
}

/// One input a module read before it published a message: which channel (by
/// its registry index) and which sequence. In a message's second level,
/// `via` is the index (in inputs()) of the first-level input it fed; in the
/// first level it is 0, or what the publisher gave in set_provenance (a
/// service response says there whether its handler succeeded). Trivial, so an array of them costs nothing to
/// declare.
struct Provenance {
  std::uint32_t channel_index;
  std::uint32_t via;
  std::uint64_t sequence;
};

/// How many provenance entries a message header carries: its first-level
/// inputs first, then, in the room they leave, those inputs' own inputs
/// (second level). A message citing more first-level inputs keeps the
/// first kMaxProvenance (a Node callback: the trigger and what it took
/// first) or the latest kMaxProvenance (a plain thread); the others are cut
/// and counted (MessageInfo::provenance_cut, the publisher's inputs-cut
/// counter in shmtool info).
inline constexpr std::size_t kMaxProvenance = 16;

/// Publishers one channel holds at once (the size of its endpoint table).
inline constexpr std::uint32_t kMaxChannelPublishers = 32;

/// What a subscriber learns about one message besides its payload.
struct MessageInfo {
  std::uint64_t sequence = 0;        ///< channel-wide, starts at 0, no gaps at the writer
  std::int64_t publish_time_ns = 0;  ///< CLOCK_MONOTONIC at publish
  std::int64_t publish_wall_ns = 0;  ///< CLOCK_REALTIME at publish
  std::uint32_t size = 0;            ///< payload bytes
  std::uint32_t publisher_id = 0;    ///< unique per channel, see shmtool info
  std::uint64_t lost_before = 0;     ///< messages lost since the previous take
  /// Publish time minus the publisher thread's take of its first input
  /// (0: no inputs, or provenance given explicitly).
  std::int64_t processing_ns = 0;
  std::uint16_t input_count = 0;       ///< first-level entries in `provenance`
  std::uint16_t entry_count = 0;       ///< all valid entries in `provenance`
  std::uint16_t provenance_cut = 0;    ///< first-level inputs not cited (saturates)
  std::uint16_t second_level_cut = 0;  ///< second-level inputs not cited (saturates)
  /// Entries [0, entry_count) are valid; the rest is left unwritten.
  std::array<Provenance, kMaxProvenance> provenance;

  /// The messages the publisher took to make this one.
  [[nodiscard]] std::span<const Provenance> inputs() const noexcept { return {provenance.data(), input_count}; }
  /// Their own inputs, each naming (via) the input it fed.
  [[nodiscard]] std::span<const Provenance> second_level() const noexcept {
    return {provenance.data() + input_count, static_cast<std::size_t>(entry_count - input_count)};
  }
};

}  // namespace shmbus
