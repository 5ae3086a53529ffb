#include "registry.hpp"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

#include "fnv.hpp"
#include "process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::detail {

using layout::ChannelRecord;

std::uint64_t hash_name(std::string_view name) noexcept { return fnv1a64(name); }

namespace {
constexpr SegmentSpec kSpec{layout::SegmentKind::kRegistry, layout::kRegistryLayoutHash};

bool name_is(const ChannelRecord& r, std::uint64_t hash, std::string_view name) {
  return r.name_hash == hash && record_name(r) == name;
}

/// How long a record may stay claimed by a live process before it is
/// taken for corrupt.
constexpr std::int64_t kClaimWaitNs = 1'000'000'000;
}  // namespace

std::string_view record_name(const ChannelRecord& r) noexcept { return {r.name, strnlen(r.name, sizeof(r.name))}; }
std::string_view record_type_name(const ChannelRecord& r) noexcept {
  return {r.type_name, strnlen(r.type_name, sizeof(r.type_name))};
}

Registry::Registry(Segment s) : segment_(std::move(s)) {
  const auto* h = static_cast<const layout::RegistryHeader*>(segment_.base());
  const std::uint64_t cap = segment_.size() >= sizeof(layout::RegistryHeader) ? h->capacity : 0;
  const std::uint64_t records_end = sizeof(layout::RegistryHeader) + cap * sizeof(ChannelRecord);
  if (!std::has_single_bit(cap) || cap > kMaxRegistryCapacity || h->records_offset != sizeof(layout::RegistryHeader) ||
      records_end > segment_.size()) {
    throw Error(Errc::kLayoutMismatch,
                fmt::format("shared-memory segment /dev/shm/{} has an inconsistent registry header (capacity {}, "
                            "records at {}, {} bytes; corrupt); if no process uses the domain, remove it with "
                            "`shmtool clean`",
                            segment_.name(), cap, cap != 0 ? h->records_offset : 0, segment_.size()));
  }
  capacity_ = static_cast<std::uint32_t>(cap);
}

Registry Registry::open_or_create(const std::string& domain, std::uint32_t capacity, const SegmentAccess& access) {
  // A Config made in code is not read by ConfigReader: refused here, before
  // a registry that every opener would call corrupt exists.
  if (!std::has_single_bit(capacity) || capacity > kMaxRegistryCapacity) {
    throw Error(Errc::kConfig, fmt::format("registry_capacity {} is not a power of two from 1 to {}; use one "
                                           "(std::bit_ceil of the channels the domain will hold)",
                                           capacity, kMaxRegistryCapacity));
  }
  const std::size_t size = sizeof(layout::RegistryHeader) + std::size_t{capacity} * sizeof(ChannelRecord);
  Segment s = Segment::create_or_open(registry_object_name(domain), size, access, kSpec, [capacity](void* base) {
    auto* h = static_cast<layout::RegistryHeader*>(base);
    h->capacity = capacity;
    h->records_offset = sizeof(layout::RegistryHeader);
  });
  Registry r{std::move(s)};
  r.domain_ = domain;
  return r;
}

Registry Registry::open_existing(const std::string& domain, bool writable, const SegmentAccess& access) {
  try {
    // Introspection and cleaning: only the records read become resident.
    Registry r{Segment::open(registry_object_name(domain), kSpec, writable, access, Residency::kOnTouch)};
    r.domain_ = domain;
    return r;
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) {
      throw Error(Errc::kNotFound, fmt::format("domain \"{}\" has no registry: no shmbus process has used "
                                               "it yet (check SHMBUS_DOMAIN or --domain)",
                                               domain));
    }
    throw;
  }
}

ChannelRecord* Registry::records() const noexcept {
  return reinterpret_cast<ChannelRecord*>(static_cast<std::byte*>(segment_.base()) + header()->records_offset);
}

std::uint32_t Registry::ensure(std::string_view name, std::string_view type_name, std::uint64_t type_hash,
                               std::uint32_t transport) {
  const std::uint64_t hash = hash_name(name);
  const std::uint32_t cap = capacity();
  const std::uint32_t mask = cap - 1;
  const std::uint64_t claimed = self_owner_word(layout::kRecordClaimed);
  ChannelRecord* recs = records();
  std::uint64_t claim_seen = 0;  ///< the claim word being waited on, and since when
  std::int64_t claim_seen_at = 0;
  for (std::uint32_t probe = 0; probe < cap;) {
    const std::uint32_t i = static_cast<std::uint32_t>(hash + probe) & mask;
    ChannelRecord& r = recs[i];
    std::uint64_t st = r.state.load(std::memory_order_acquire);
    switch (st & 3U) {
      case layout::kRecordFree: {
        // CAS cases: won -> fill and publish; lost -> re-examine this index
        // (the winner may be adding the same name).
        if (r.state.compare_exchange_strong(st, claimed, std::memory_order_acq_rel)) {
          r.name_hash = hash;
          copy_name(r.name, sizeof(r.name), name);
          copy_name(r.type_name, sizeof(r.type_name), type_name);
          r.type_hash = type_hash;
          r.transport = transport;
          // SYNC POINT WRITE: record fields before Live.
          r.state.store(layout::kRecordLive, std::memory_order_release);
          header()->generation.fetch_add(1, std::memory_order_release);
          return i;
        }
        continue;
      }
      case layout::kRecordClaimed: {
        // Someone is filling this record, maybe with our name: wait for it,
        // or free it when its claimer died half-way.
        // A claim lasts a few stores; one held by a live process for
        // longer than kClaimWait is corrupt (or that process is stuck):
        // refused, never waited on forever.
        if (!owner_alive(st)) {
          r.state.compare_exchange_strong(st, layout::kRecordFree, std::memory_order_acq_rel);
        } else {
          if (st != claim_seen) {  // a new claim: its own time starts now
            claim_seen = st;
            claim_seen_at = mono_now_ns();
          }
          if (mono_now_ns() - claim_seen_at > kClaimWaitNs) {
            throw Error(Errc::kLayoutMismatch,
                        fmt::format("record {} of /dev/shm/{} has been claimed by pid {} for over 1 s (corrupt, or "
                                    "that process is stuck); if no process uses the domain, remove it with "
                                    "`shmtool clean`",
                                    i, segment_.name(), layout::owner_pid(st)));
          }
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        continue;
      }
      case layout::kRecordLive:
        if (name_is(r, hash, name)) return i;
        ++probe;
        continue;
      default:  // tombstone
        ++probe;
        continue;
    }
  }
  throw Error(Errc::kResource,
              fmt::format("the registry of domain \"{}\" is full ({} channels); raise registry_capacity in "
                          "the configuration and run `shmtool clean` once no process uses the domain",
                          domain_, cap));
}

std::optional<std::uint32_t> Registry::find(std::string_view name) const {
  const std::uint64_t hash = hash_name(name);
  const std::uint32_t cap = capacity();
  const ChannelRecord* recs = records();
  for (std::uint32_t probe = 0; probe < cap; ++probe) {
    const std::uint32_t i = static_cast<std::uint32_t>(hash + probe) & (cap - 1);
    const std::uint64_t st = recs[i].state.load(std::memory_order_acquire);
    if (st == layout::kRecordFree) return std::nullopt;
    if ((st & 3U) == layout::kRecordLive && name_is(recs[i], hash, name)) return i;
  }
  return std::nullopt;
}

bool Registry::remove(std::string_view name) {
  const auto i = find(name);
  if (!i) return false;
  records()[*i].state.store(layout::kRecordTombstone, std::memory_order_release);
  header()->generation.fetch_add(1, std::memory_order_release);
  return true;
}

void Registry::for_each_live(const std::function<void(std::uint32_t, const ChannelRecord&)>& f) const {
  const ChannelRecord* recs = records();
  for (std::uint32_t i = 0; i < capacity(); ++i) {
    if ((recs[i].state.load(std::memory_order_acquire) & 3U) == layout::kRecordLive) f(i, recs[i]);
  }
}

const ChannelRecord* Registry::record(std::uint32_t index) const {
  if (index >= capacity()) return nullptr;
  const ChannelRecord& r = records()[index];
  return (r.state.load(std::memory_order_acquire) & 3U) == layout::kRecordLive ? &r : nullptr;
}

}  // namespace shmbus::detail
