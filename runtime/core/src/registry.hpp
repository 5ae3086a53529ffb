#pragma once
// The registry segment of a domain: which channels exist.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "layout/registry_layout.hpp"
#include "segment.hpp"

namespace shmbus::detail {

class Registry {
 public:
  /// Opens the domain's registry, creating it with `capacity` records.
  static Registry open_or_create(const std::string& domain, std::uint32_t capacity, const SegmentAccess& access);
  /// Opens an existing registry (Error(kNotFound) when the domain has none)
  /// for introspection or cleaning: pages become resident as they are read.
  static Registry open_existing(const std::string& domain, bool writable, const SegmentAccess& access);

  /// The record index of `name`, adding a record when there is none.
  /// Safe against concurrent adders of the same name: both end at one record.
  std::uint32_t ensure(std::string_view name, std::string_view type_name, std::uint64_t type_hash,
                       std::uint32_t transport);
  /// The record index of a live `name`, if listed.
  [[nodiscard]] std::optional<std::uint32_t> find(std::string_view name) const;
  /// Marks `name`'s record removed (a tombstone). False when not listed.
  bool remove(std::string_view name);
  /// Calls `f(index, record)` for every live record, in index order.
  void for_each_live(const std::function<void(std::uint32_t, const layout::ChannelRecord&)>& f) const;
  /// The live record at `index`, or nullptr.
  [[nodiscard]] const layout::ChannelRecord* record(std::uint32_t index) const;

  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t generation() const noexcept {
    return header()->generation.load(std::memory_order_acquire);
  }
  [[nodiscard]] const std::string& object_name() const noexcept { return segment_.name(); }
  /// See Segment::replaced().
  [[nodiscard]] bool replaced() const noexcept { return segment_.replaced(); }

 private:
  /// Validates the header (capacity, records' place) against the mapping.
  explicit Registry(Segment s);
  [[nodiscard]] layout::RegistryHeader* header() const noexcept {
    return static_cast<layout::RegistryHeader*>(segment_.base());
  }
  [[nodiscard]] layout::ChannelRecord* records() const noexcept;
  std::string domain_;
  Segment segment_;
  std::uint32_t capacity_ = 0;  ///< validated at open, kept in private memory
};

/// A record's name, bounded by its field (a corrupt record may lack the NUL).
std::string_view record_name(const layout::ChannelRecord& r) noexcept;
std::string_view record_type_name(const layout::ChannelRecord& r) noexcept;

/// 64-bit FNV-1a of a name.
std::uint64_t hash_name(std::string_view name) noexcept;

using layout::copy_name;

}  // namespace shmbus::detail
