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

namespace shmbus::detail {

/// What a segment must be for this build to use it.
struct SegmentSpec {
  layout::SegmentKind kind;
  std::uint64_t layout_hash;
};

class Segment {
 public:
  Segment();
  ~Segment();
  Segment(Segment&&) noexcept;
  Segment& operator=(Segment&&) noexcept;

  /// Creates the object with `size` bytes and `mode`, runs `init` on the
  /// zeroed memory, writes the header and publishes it ready; or, when
  /// another process created it first, opens and validates it as open().
  /// `created` tells which happened.
  static Segment create_or_open(const std::string& name, std::size_t size, std::uint32_t mode, SegmentSpec spec,
                                const std::function<void(void*)>& init, bool& created);

  /// Opens an existing segment and validates its header. Throws
  /// Error(kNotFound) when absent; Error(kLayoutMismatch) when it is
  /// truncated, corrupt, of another layout, or was left half-initialised.
  static Segment open(const std::string& name, SegmentSpec spec, bool writable);

  /// Removes the object name (mappings stay valid). False when absent.
  static bool remove(const std::string& name) noexcept;

  [[nodiscard]] void* base() const noexcept;
  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
};

}  // namespace shmbus::detail
