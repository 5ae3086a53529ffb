#pragma once
// Where a message's timestamp lies when the Synchronizer takes it from a
// schema field ("header.stamp_ns") instead of the publish time.

#include <cstdint>
#include <string>

#include "shmbus/types.hpp"

namespace shmbus::sync {

/// Where a stamp field lies in a message, and how to read it.
struct StampField {
  std::uint32_t offset = 0;
  bool is_signed = false;
};

/// Resolves `path` (dot-separated, through nested messages) in the schema
/// of `type`. Throws Error(kInvalidArgument) naming `channel`, the type and
/// what is wrong: no schema, no such field, an array, not an int64/uint64.
StampField resolve_stamp_field(const std::string& channel, const TypeInfo& type, const std::string& path);

}  // namespace shmbus::sync
