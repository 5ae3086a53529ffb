#pragma once
// Where a message's timestamp lies when the Synchronizer takes it from a
// schema field ("header.stamp_ns") instead of the publish time.

#include <cstddef>
#include <cstdint>
#include <string>

#include "shmbus/types.hpp"

namespace shmbus::sync {

/// Where a stamp field lies in a message, and how to read it: an int64 or
/// uint64 of nanoseconds, or ROS 2's builtin_interfaces/Time (int32 sec,
/// uint32 nanosec; a ROS 2 header's `stamp`).
struct StampField {
  enum class Kind : std::uint8_t { kInt64, kUint64, kTime };
  std::uint32_t offset = 0;
  Kind kind = Kind::kInt64;

  /// The stamp in `message` (at least offset + 8 bytes), in nanoseconds.
  [[nodiscard]] std::int64_t read(const std::byte* message) const noexcept;
};

/// Resolves `path` (dot-separated, through nested messages) in the schema
/// of `type`. Throws Error(kInvalidArgument) naming `channel`, the type and
/// what is wrong: no schema, no such field, an array, not an int64/uint64
/// or a builtin_interfaces/Time.
StampField resolve_stamp_field(const std::string& channel, const TypeInfo& type, const std::string& path);

}  // namespace shmbus::sync
