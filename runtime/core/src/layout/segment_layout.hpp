#pragma once
// The header every shmbus segment begins with, and the helpers that hash a
// layout so that a process built against another layout refuses to map it.
//
//   0               8               16              24              32
//   +---------------+-------+-------+---------------+---------------+
//   | magic         |version| kind  | layout_hash   | total_size    |
//   +-------+-------+---------------+---------------+---------------+
//   | init  |creator| creator_start | reserved (16)                 |
//   +-------+-------+---------------+-------------------------------+  64

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "shmbus/types.hpp"

namespace shmbus::layout {

/// Copies `s` into a fixed char field of a segment (a name, a type name),
/// cut to fit and always NUL-terminated.
inline void copy_name(char* dst, std::size_t capacity, std::string_view s) noexcept {
  const std::size_t n = std::min(s.size(), capacity - 1);
  std::memcpy(dst, s.data(), n);
  std::memset(dst + n, 0, capacity - n);
}

inline constexpr std::size_t kCacheLine = 64;
/// "SHMBUS" followed by two zero bytes, little-endian.
inline constexpr std::uint64_t kMagic = 0x0000'5355'424d'4853ULL;
/// Bumped whenever any layout struct changes meaning.
inline constexpr std::uint32_t kLayoutVersion = 8;

enum class SegmentKind : std::uint32_t { kRegistry = 1, kChannel = 2, kRing = 3 };

/// init_state values: the creator writes everything, then publishes kReady.
inline constexpr std::uint32_t kInitializing = 0;
inline constexpr std::uint32_t kReady = 1;

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t kind;
  std::uint64_t layout_hash;
  std::uint64_t total_size;
  // SYNC POINT WRITE: the creator stores kReady (release) after the whole
  // segment is initialised; openers load it (acquire) before reading
  // anything else.
  std::atomic<std::uint32_t> init_state;
  std::uint32_t creator_pid;
  std::uint64_t creator_start_time;
  /// The creator's pid namespace (inode of /proc/self/ns/pid): a pid from
  /// another namespace cannot be judged, so its creator counts as alive.
  std::uint64_t creator_pid_ns;
  std::uint8_t reserved[8];
};
static_assert(std::is_standard_layout_v<SegmentHeader>);
static_assert(sizeof(SegmentHeader) == kCacheLine, "the segment header is one cache line");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free, or another process sees a lock");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free, or another process sees a lock");

/// FNV-1a over a list of numbers (sizes and offsets), evaluated at compile
/// time: any change of a layout struct changes the hash.
constexpr std::uint64_t fnv1a(std::uint64_t h, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (i * 8)) & 0xffU;
    h *= 0x100000001b3ULL;
  }
  return h;
}

template <typename... V>
constexpr std::uint64_t layout_hash_of(V... values) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  ((h = fnv1a(h, static_cast<std::uint64_t>(values))), ...);
  return h;
}

/// An owner word: a claim that names its owner, so one CAS both takes a
/// record and says whose it is. Low 2 bits: the phase (its meaning is the
/// table's); then the pid (22 bits: Linux's pid_max is at most 2^22); then
/// the owner's start time in clock ticks since boot (40 bits: centuries at
/// 100 Hz). pid + start time name a process uniquely: a reused pid has a
/// later start time.
inline constexpr unsigned kOwnerPidShift = 2;
inline constexpr unsigned kOwnerStartShift = 24;
inline constexpr std::uint64_t kOwnerPidMask = (1ULL << 22) - 1;
inline constexpr std::uint64_t kOwnerStartMask = (1ULL << 40) - 1;
constexpr std::uint64_t owner_word(std::uint32_t pid, std::uint64_t start_time, std::uint64_t phase) noexcept {
  return ((start_time & kOwnerStartMask) << kOwnerStartShift) | ((pid & kOwnerPidMask) << kOwnerPidShift) | phase;
}
constexpr std::uint64_t owner_phase(std::uint64_t word) noexcept { return word & 3U; }
constexpr std::uint32_t owner_pid(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>((word >> kOwnerPidShift) & kOwnerPidMask);
}
constexpr std::uint64_t owner_start_time(std::uint64_t word) noexcept { return word >> kOwnerStartShift; }

}  // namespace shmbus::layout
