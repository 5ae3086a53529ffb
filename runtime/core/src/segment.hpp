#pragma once
// A named shared-memory segment (Boost.Interprocess) that begins with a
// SegmentHeader: created and initialised by exactly one process, opened and
// validated by the others.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "layout/segment_layout.hpp"
#include "shmbus/config.hpp"

namespace shmbus::detail {

/// What a segment must be for this build to use it.
struct SegmentSpec {
  layout::SegmentKind kind;
  std::uint64_t layout_hash;
};

/// Which pages of a mapping are resident (Segment::open).
enum class Residency : std::uint8_t { kPopulated, kOnTouch };

class Segment {
 public:
  Segment();
  ~Segment();
  Segment(Segment&&) noexcept;
  Segment& operator=(Segment&&) noexcept;

  /// Creates the object with `size` bytes and `access` (mode, group), runs
  /// `init` on the zeroed memory, writes the header and publishes it ready;
  /// or, when another process created it first, opens and validates it as
  /// open(). An object whose creator died before it was ready is removed
  /// and created anew.
  static Segment create_or_open(const std::string& name, std::size_t size, const SegmentAccess& access,
                                SegmentSpec spec, const std::function<void(void*)>& init);

  /// Opens an existing segment, checks its owner and mode against `access`
  /// and validates its header. Throws Error(kNotFound) when absent;
  /// Error(kPermission) when another user owns it or its mode is wider than
  /// `access` allows; Error(kLayoutMismatch) when it is truncated, corrupt,
  /// of another layout, or was left half-initialised.
  /// `residency`: kPopulated (publishers, subscribers) maps every page at
  /// once, so their loops take no page faults; kOnTouch (observers: tools,
  /// the daemon) maps pages as they are read, so an observer's memory holds
  /// only what it reads (a channel's header, endpoints and time list, not
  /// its ring).
  static Segment open(const std::string& name, SegmentSpec spec, bool writable, const SegmentAccess& access,
                      Residency residency = Residency::kPopulated);

  /// True when the name no longer refers to the object this segment mapped
  /// (removed by `shmtool clean`, or removed and created anew).
  [[nodiscard]] bool replaced() const noexcept;

  /// Removes the object name (mappings stay valid). False when absent.
  static bool remove(const std::string& name) noexcept;
  /// Whether an object of that name exists (a snapshot: it may be created
  /// or removed right after).
  static bool exists(const std::string& name) noexcept;

  /// Of a kOnTouch mapping, unmaps everything past the page holding byte
  /// `bytes - 1`: an observer that reads only the front of a segment (a
  /// channel's header, endpoint tables and time list) then has nothing
  /// else in its address space, so the kernel's fault-around (which maps
  /// the already-resident neighbours of a faulting page, up to 64 KiB) cannot
  /// put a channel's ring into its memory. size() becomes the kept bytes.
  /// Nothing for a kPopulated mapping.
  void keep_front(std::size_t bytes) noexcept;

  [[nodiscard]] void* base() const noexcept;
  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }

 private:
  /// open(); with `recover`, an object whose creator died before it was
  /// ready is removed and Error(kNotFound) thrown, so the caller creates it.
  static Segment open_object(const std::string& name, SegmentSpec spec, bool writable, const SegmentAccess& access,
                             bool recover, Residency residency);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
};

}  // namespace shmbus::detail
