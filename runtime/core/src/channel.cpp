#include "channel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "futex.hpp"
#include "iceoryx_port.hpp"
#include "process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema_text.hpp"

namespace shmbus::detail {

using namespace layout;

namespace {
constexpr SegmentSpec kSpec{SegmentKind::kChannel, kChannelLayoutHash};

struct Geometry {
  std::uint64_t publishers, subscribers, time_list, claims, slots, schema, total;
};

/// Ring slots of a channel: none for iceoryx channels, whose messages
/// travel in iceoryx chunks.
std::uint64_t slot_count(Transport transport, std::uint64_t capacity) noexcept {
  return transport == Transport::kShm ? capacity : 0;
}

Geometry geometry(const ChannelSettings& s, std::size_t schema_size) {
  Geometry g{};
  g.publishers = align_up(sizeof(ChannelHeader), kCacheLine);
  g.subscribers = g.publishers + sizeof(EndpointEntry) * kMaxPublishers;
  g.time_list = g.subscribers + sizeof(EndpointEntry) * kMaxSubscribers;
  g.claims = align_up(g.time_list + sizeof(std::uint64_t) * s.time_list_capacity, kCacheLine);
  g.slots = g.claims + sizeof(SlotClaim) * slot_count(s.transport, s.capacity);
  g.schema = g.slots + std::uint64_t{slot_stride_for(s.max_message_size)} * slot_count(s.transport, s.capacity);
  g.total = align_up(g.schema + schema_size + 1, kCacheLine);
  return g;
}

std::string describe_type(std::string_view name, std::uint64_t hash) {
  return fmt::format("{} (hash {:016x})", name, hash);
}

void check_type(std::string_view channel, const TypeInfo& stored, const TypeInfo& type) {
  if (type.name == stored.name && type.hash == stored.hash) return;
  std::string detail;
  const std::string_view stored_schema = stored.schema;
  if (type.name == stored.name && !stored_schema.empty() && !type.schema.empty()) {
    // Same name, other definition: say where they part.
    const std::string diff = schema::first_difference(stored_schema, type.schema);
    if (!diff.empty()) detail = "; " + diff + " (here = the channel, there = yours)";
  }
  throw Error(Errc::kTypeMismatch,
              fmt::format("channel {} has type {}, you asked for {}{}", channel,
                          describe_type(stored.name, stored.hash), describe_type(type.name, type.hash), detail));
}
}  // namespace

namespace {

/// `offset + count * size`, false when it overflows 64 bits.
bool region_end(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t& end) noexcept {
  std::uint64_t bytes = 0;
  return !__builtin_mul_overflow(count, size, &bytes) && !__builtin_add_overflow(offset, bytes, &end);
}

/// What is wrong with a channel header read from shared memory, or empty.
/// Every field that sizes or places a region is checked against the mapped
/// size with overflow-safe arithmetic, and the regions must follow each
/// other in order, aligned, without overlap.
std::string geometry_problem(const ChannelHeader& h, std::size_t mapped, std::string_view expected_name) {
  if (mapped < sizeof(ChannelHeader)) return fmt::format("is {} bytes, smaller than a channel header", mapped);
  if (!std::has_single_bit(h.capacity) || h.capacity > kMaxCapacity) {
    return fmt::format("has capacity {} (a power of two up to {} expected)", h.capacity, kMaxCapacity);
  }
  if (!std::has_single_bit(h.time_list_capacity) || h.time_list_capacity > kMaxTimeListCapacity) {
    return fmt::format("has time_list_capacity {} (a power of two up to {} expected)", h.time_list_capacity,
                       kMaxTimeListCapacity);
  }
  if (h.max_message_size == 0 || h.max_message_size > kMaxMessageSize) {
    return fmt::format("has max_message_size {} (1 to {} expected)", h.max_message_size, kMaxMessageSize);
  }
  if (h.slot_stride != slot_stride_for(h.max_message_size)) {
    return fmt::format("has slot stride {} for max_message_size {}", h.slot_stride, h.max_message_size);
  }
  if (h.max_publishers != kMaxPublishers || h.max_subscribers != kMaxSubscribers) {
    return fmt::format("has endpoint tables of {}/{} entries", h.max_publishers, h.max_subscribers);
  }
  if (h.transport > static_cast<std::uint32_t>(Transport::kIceoryx))
    return fmt::format("has transport {}", h.transport);
  if (h.stall_timeout_ns <= 0) return fmt::format("has stall_timeout {} ns", h.stall_timeout_ns);
  if (h.overflow > static_cast<std::uint32_t>(Overflow::kBlock)) return fmt::format("has overflow {}", h.overflow);
  if (h.grow > 1 || h.max_grow_size > kMaxMessageSize ||
      (h.grow == 1 &&
       (h.max_grow_size < h.max_message_size || h.transport != static_cast<std::uint32_t>(Transport::kShm)))) {
    return fmt::format("has grow {} up to max_grow_size {} (max_message_size {}, transport {})", h.grow,
                       h.max_grow_size, h.max_message_size, h.transport);
  }
  if (h.overflow == static_cast<std::uint32_t>(Overflow::kBlock) &&
      (h.block_timeout_ns <= 0 || h.transport != static_cast<std::uint32_t>(Transport::kShm))) {
    return fmt::format("has overflow block with block_timeout {} ns on transport {}", h.block_timeout_ns, h.transport);
  }
  struct Region {
    const char* what;
    std::uint64_t offset, count, size;
  };
  const Region regions[] = {
      {"publisher table", h.publishers_offset, kMaxPublishers, sizeof(EndpointEntry)},
      {"subscriber table", h.subscribers_offset, kMaxSubscribers, sizeof(EndpointEntry)},
      {"time list", h.time_list_offset, h.time_list_capacity, sizeof(std::uint64_t)},
      {"slot claims", h.claims_offset, slot_count(static_cast<Transport>(h.transport), h.capacity), sizeof(SlotClaim)},
      {"slots", h.slots_offset, slot_count(static_cast<Transport>(h.transport), h.capacity), h.slot_stride},
      {"schema", h.schema_offset, h.schema_size, 1},
  };
  std::uint64_t previous_end = sizeof(ChannelHeader);
  for (const Region& r : regions) {
    std::uint64_t end = 0;
    if (r.offset < previous_end || !region_end(r.offset, r.count, r.size, end) || end > mapped) {
      return fmt::format("has its {} at offset {} (+{} x {} bytes) outside its place in the {} bytes", r.what, r.offset,
                         r.count, r.size, mapped);
    }
    if (r.size != 1 && r.offset % kCacheLine != 0) return fmt::format("has its {} unaligned", r.what);
    previous_end = end;
  }
  const std::string_view name{h.name, strnlen(h.name, sizeof(h.name))};
  if (name.size() == sizeof(h.name) || strnlen(h.type_name, sizeof(h.type_name)) == sizeof(h.type_name)) {
    return "has an unterminated name";
  }
  if (!expected_name.empty() && name != expected_name) {
    return fmt::format("names channel \"{}\", not {}", name, expected_name);
  }
  return {};
}

}  // namespace

Channel::Channel(Segment s, std::string name, std::string domain, SegmentAccess access)
    : segment_(std::move(s)), name_(std::move(name)), domain_(std::move(domain)), access_(std::move(access)) {
  auto* base = static_cast<std::byte*>(segment_.base());
  header_ = reinterpret_cast<ChannelHeader*>(base);
  const ChannelHeader& h = *header_;
  // The geometry is validated against the mapped size, then copied: a
  // corrupt or hostile header cannot make us address outside the mapping.
  if (const std::string problem = geometry_problem(h, segment_.size(), name_); !problem.empty()) {
    throw Error(Errc::kLayoutMismatch,
                fmt::format("shared-memory segment /dev/shm/{} {} (corrupt); if no process uses it, remove it "
                            "with `shmtool clean`",
                            segment_.name(), problem));
  }
  slots_ = base + h.slots_offset;
  claims_ = reinterpret_cast<SlotClaim*>(base + h.claims_offset);
  slot_mask_ = h.capacity - 1;
  slot_stride_ = h.slot_stride;
  max_message_size_ = h.max_message_size;
  grow_ = h.grow == 1;
  max_grow_size_ = grow_ ? h.max_grow_size : h.max_message_size;
  stall_timeout_ns_ = h.stall_timeout_ns;
  overflow_ = static_cast<Overflow>(h.overflow);
  block_timeout_ns_ = h.block_timeout_ns;
  transport_ = static_cast<Transport>(h.transport);
  time_list_ = reinterpret_cast<std::atomic<std::uint64_t>*>(base + h.time_list_offset);
  time_list_mask_ = h.time_list_capacity - 1;
  time_list_log2_ = static_cast<std::uint32_t>(std::countr_zero(h.time_list_capacity));
  publishers_ = reinterpret_cast<EndpointEntry*>(base + h.publishers_offset);
  subscribers_ = reinterpret_cast<EndpointEntry*>(base + h.subscribers_offset);
  type_name_.assign(h.type_name, strnlen(h.type_name, sizeof(h.type_name)));
  type_hash_ = h.type_hash;
  schema_.assign(reinterpret_cast<const char*>(base + h.schema_offset), h.schema_size);
  creator_pid_ = h.segment.creator_pid;
  // Text from another process's memory: bounded, and escaped for messages.
  creator_program_ = escape_name({h.creator_program, strnlen(h.creator_program, sizeof(h.creator_program))});
  sizes_from_ = escape_name({h.sizes_from, strnlen(h.sizes_from, sizeof(h.sizes_from))});
  // The schema, read once, lies after the ring: an observer keeps only what
  // comes before the slot claims, so the ring is out of its memory.
  const std::size_t mapped = segment_.size();
  segment_.keep_front(static_cast<std::size_t>(reinterpret_cast<std::byte*>(claims_) - base));
  if (segment_.size() != mapped) {
    slots_ = nullptr;
    claims_ = nullptr;
  }
  auto r0 = std::make_shared<Ring>();
  r0->slots = slots_;
  r0->claims = claims_;
  r0->mask = slot_mask_;
  r0->stride = slot_stride_;
  r0->max_message_size = max_message_size_;
  ring0_ = std::move(r0);
  // What the copies address must be mapped: a header changed since it was
  // validated is refused, not read past its mapping.
  const auto ends_within = [&](const void* region, std::size_t bytes) {
    return static_cast<std::size_t>(static_cast<const std::byte*>(region) - base) + bytes <= segment_.size();
  };
  if (!ends_within(publishers_, sizeof(EndpointEntry) * kMaxPublishers) ||
      !ends_within(subscribers_, sizeof(EndpointEntry) * kMaxSubscribers) ||
      !ends_within(time_list_, sizeof(std::uint64_t) * (time_list_mask_ + 1))) {
    throw Error(Errc::kLayoutMismatch,
                fmt::format("shared-memory segment /dev/shm/{} changed its geometry while it was opened (corrupt); "
                            "if no process uses it, remove it with `shmtool clean`",
                            segment_.name()));
  }
}

std::shared_ptr<Channel> Channel::open_existing(const std::string& domain, const ChannelName& name, bool writable,
                                                const SegmentAccess& access, Residency residency) {
  try {
    Segment s = Segment::open(name.object(), kSpec, writable, access, residency);
    return std::shared_ptr<Channel>(new Channel(std::move(s), name.str(), domain, access));
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) {
      throw Error(Errc::kNotFound, fmt::format("channel {} does not exist in domain \"{}\"", name.view(), domain));
    }
    throw;
  }
}

namespace {

/// A channel created with one value of `key` and configured here with
/// another: refused, naming both.
[[noreturn]] void refuse_mismatch(std::string_view name, std::string_view key, std::string_view created,
                                  std::string_view configured) {
  throw Error(Errc::kConfig,
              fmt::format("channel {} was created with {} \"{}\", and this process's configuration gives it \"{}\"; "
                          "configure it as \"{}\" everywhere (or remove the channel with `shmtool clean` once no "
                          "process uses it)",
                          name, key, created, configured, created));
}

}  // namespace

std::shared_ptr<Channel> Channel::create_or_open(const std::string& domain, const ChannelName& name,
                                                 const TypeInfo* type, const ChannelSettings& settings,
                                                 const SegmentAccess& access, bool create) {
  if (type != nullptr && type->name.size() >= kTypeNameBytes) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("type name \"{}\" is longer than {} bytes", type->name, kTypeNameBytes - 1));
  }
  std::shared_ptr<Channel> ch;
  if (type == nullptr || !create) {
    ch = open_existing(domain, name, true, access, Residency::kPopulated);
  } else {
    const Geometry g = geometry(settings, type->schema.size());
    Segment s = Segment::create_or_open(name.object(), g.total, access, kSpec, [&](void* base) {
      auto* h = static_cast<ChannelHeader*>(base);
      copy_name(h->name, sizeof(h->name), name.view());
      copy_name(h->type_name, sizeof(h->type_name), type->name);
      h->type_hash = type->hash;
      h->capacity = settings.capacity;
      h->max_message_size = settings.max_message_size;
      h->slot_stride = static_cast<std::uint32_t>(slot_stride_for(settings.max_message_size));  // <= 2^30 + 128
      h->time_list_capacity = settings.time_list_capacity;
      h->transport = static_cast<std::uint32_t>(settings.transport);
      h->max_publishers = kMaxPublishers;
      h->max_subscribers = kMaxSubscribers;
      h->schema_size = static_cast<std::uint32_t>(type->schema.size());
      h->publishers_offset = g.publishers;
      h->subscribers_offset = g.subscribers;
      h->time_list_offset = g.time_list;
      h->claims_offset = g.claims;
      h->slots_offset = g.slots;
      h->schema_offset = g.schema;
      h->stall_timeout_ns = settings.stall_timeout.count();
      h->overflow = static_cast<std::uint32_t>(settings.overflow);
      h->block_timeout_ns = settings.block_timeout.count();
      h->window_ns = settings.window.count();
      h->grow = settings.grow && settings.transport == Transport::kShm ? 1 : 0;
      h->max_grow_size = std::max(settings.max_grow_size, settings.max_message_size);
      h->generations[0].capacity = settings.capacity;
      h->generations[0].max_message_size = settings.max_message_size;
      h->generations[0].start.store(0, std::memory_order_relaxed);
      for (std::uint32_t k = 1; k < kMaxGenerations; ++k) {
        h->generations[k].start.store(kStartUnknown, std::memory_order_relaxed);
      }
      copy_name(h->creator_program, sizeof(h->creator_program), program_invocation_short_name);
      copy_name(h->sizes_from, sizeof(h->sizes_from), settings.sizes_from);
      if (settings.thresholds_hz) {
        h->has_thresholds = 1;
        for (int i = 0; i < 3; ++i) h->thresholds_hz[i] = (*settings.thresholds_hz)[i];
      }
      std::memcpy(static_cast<std::byte*>(base) + g.schema, type->schema.data(), type->schema.size());
    });
    ch = std::shared_ptr<Channel>(new Channel(std::move(s), name.str(), domain, access));
  }
  const ChannelHeader& h = ch->header();
  if (type != nullptr) check_type(name.view(), ch->type(), *type);
  if (settings.transport_set && h.transport != static_cast<std::uint32_t>(settings.transport)) {
    refuse_mismatch(name.view(), "transport", to_string(static_cast<Transport>(h.transport)),
                    to_string(settings.transport));
  }
  if (settings.overflow_set && h.overflow != static_cast<std::uint32_t>(settings.overflow)) {
    refuse_mismatch(name.view(), "overflow", to_string(static_cast<Overflow>(h.overflow)),
                    to_string(settings.overflow));
  }
  if (type != nullptr) ch->report_other_sizes(settings);
  return ch;
}

void Channel::list_in(Registry& registry) {
  // Every opener makes sure the channel is listed: a creator killed between
  // creating the segment and listing it is repaired by the next opener.
  const std::uint32_t index = registry.ensure(name_, type_name_, type_hash_, static_cast<std::uint32_t>(transport_));
  header().registry_index.store(index, std::memory_order_relaxed);
}

std::string_view Channel::schema_text() const noexcept { return schema_; }

std::string Channel::sizes_origin() const {
  return fmt::format("from {} of {} (pid {}), which created the channel",
                     sizes_from_.empty() ? "the built-in defaults" : sizes_from_,
                     creator_program_.empty() ? "a process" : creator_program_, creator_pid_);
}

std::string Channel::too_large(std::size_t size) const {
  if (grow_) {
    return fmt::format(
        "a message of {} bytes does not fit channel {}: it grows up to max_grow_size {} ({}); raise "
        "max_grow_size where it is created",
        size, name_, max_grow_size_, sizes_origin());
  }
  // Why it does not grow: its transport, or its creator's grow = false.
  const std::string_view fixed = transport_ == Transport::kIceoryx
                                     ? "an iceoryx channel does not grow: its chunks come from RouDi's memory pools"
                                     : "it was created with grow = false";
  return fmt::format(
      "a message of {} bytes does not fit channel {}: its max_message_size is {} ({}), and {}; give {} a "
      "max_message_size of at least {} where it is created (the configuration's [[channel]] entry, or a "
      "publisher's option), then stop the processes using it (shmtool info {}) and run `shmtool clean` so that it "
      "is made anew",
      size, name_, max_message_size_, sizes_origin(), fixed, name_, size, name_);
}

void Channel::report_other_sizes(const ChannelSettings& settings) const {
  if (settings.sizes_from.empty()) return;  // the built-in defaults: this process names no size
  std::string stored;
  std::string wanted;
  const auto compare = [&](std::string_view key, std::uint32_t has, std::uint32_t asked) {
    if (has == asked) return;
    stored += fmt::format("{}{} {}", stored.empty() ? "" : ", ", key, has);
    wanted += fmt::format("{}{} {}", wanted.empty() ? "" : ", ", key, asked);
  };
  compare("max_message_size", max_message_size_, settings.max_message_size);
  // The geometry copied at open, not the shared header's words.
  compare("capacity", static_cast<std::uint32_t>(capacity()), settings.capacity);
  compare("time_list_capacity", static_cast<std::uint32_t>(time_list_mask_ + 1), settings.time_list_capacity);
  if (stored.empty()) return;
  std::fprintf(stderr, "%s\n",
               fmt::format("shmbus: channel {} exists with {} ({}); this process asks for {} ({}): the channel's "
                           "values hold. To use yours, stop the processes using it (shmtool info {}) and run "
                           "`shmtool clean`",
                           name_, stored, sizes_origin(), wanted, settings.sizes_from, name_)
                   .c_str());
}

TypeInfo Channel::type() const { return TypeInfo{type_name_, type_hash_, schema_}; }

std::uint64_t Channel::snapshot_time_list(std::vector<std::int64_t>& out) const {
  // SYNC POINT READ: pairs with the release stores in stamp().
  const std::uint64_t head = time_list_head();
  const std::uint64_t cap = time_list_mask_ + 1;
  const std::uint64_t first = head > cap ? head - cap : 0;
  // The raw entries first (in `out`'s storage), then the head again:
  // indices it has lapped meanwhile may hold a newer lap and are left out.
  out.resize(head - first);
  for (std::uint64_t i = first; i < head; ++i) {
    out[i - first] = static_cast<std::int64_t>(time_list_[i & time_list_mask_].load(std::memory_order_acquire));
  }
  const std::uint64_t head2 = time_list_head();
  const std::uint64_t floor = std::max(first, head2 > cap ? head2 - cap : 0);
  const std::int64_t now = mono_now_ns();
  std::size_t kept = 0;
  for (std::uint64_t i = floor; i < head; ++i) {
    const auto e = static_cast<std::uint64_t>(out[i - first]);
    if (time_list_lap_is(e, i, time_list_log2_)) out[kept++] = time_list_stamp(e, now);
  }
  out.resize(kept);
  // Several publishers stamp after their commits, so index order can be off
  // by a few stamps; callers get time order. Usually a single O(n) check.
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  return head;
}

std::uint64_t Channel::read_stamps_since(TimeListCursor& cursor, std::vector<std::int64_t>& out) const {
  // SYNC POINT READ: pairs with the release stores in stamp().
  const std::uint64_t head = time_list_head();
  const std::uint64_t cap = time_list_mask_ + 1;
  std::uint64_t overwritten = 0;
  if (head > cap && cursor.next < head - cap) {
    overwritten = head - cap - cursor.next;
    cursor.next = head - cap;
  }
  if (cursor.next > head) cursor.next = head;  // a list that was re-created
  // Load every index to examine (the pending ones, then the new ones), then
  // the head again: an index the head has lapped meanwhile may hold a newer
  // lap's stamp and is not used.
  thread_local std::vector<std::pair<std::uint64_t, std::uint64_t>> loaded;
  loaded.clear();
  for (std::uint64_t i : cursor.pending) {
    loaded.emplace_back(i, time_list_[i & time_list_mask_].load(std::memory_order_acquire));
  }
  for (std::uint64_t i = cursor.next; i < head; ++i) {
    loaded.emplace_back(i, time_list_[i & time_list_mask_].load(std::memory_order_acquire));
  }
  const std::uint64_t head2 = time_list_head();
  const std::uint64_t floor = head2 > cap ? head2 - cap : 0;
  const std::int64_t now = mono_now_ns();
  cursor.pending.clear();
  for (const auto& [i, e] : loaded) {
    if (i < floor) {
      ++overwritten;
    } else if (time_list_lap_is(e, i, time_list_log2_)) {
      out.push_back(time_list_stamp(e, now));
    } else {
      cursor.pending.push_back(i);  // claimed, not stored yet
    }
  }
  cursor.next = head;
  return overwritten;
}

bool Channel::writer_alive(std::uint64_t slot_state) const noexcept {
  const std::uint32_t token = slot_owner(slot_state);
  const EndpointEntry& e = publishers_[token_entry(token)];
  // The entry's state, its tenancy, its state again: equal states mean the
  // tenancy belongs to the holder named by the state (a holder bumps the
  // tenancy before it frees the entry).
  const std::uint64_t st = e.state.load(std::memory_order_acquire);
  const std::uint32_t tenancy = e.tenancy.load(std::memory_order_acquire);
  if (e.state.load(std::memory_order_acquire) != st) return true;      // changing hands: ask again later
  if (endpoint_phase(st) == kEndpointFree) return false;               // its publisher is gone
  if ((tenancy & kTenancyMask) != token_tenancy(token)) return false;  // an earlier holder's claim
  return owner_alive(st, e.pid_ns.load(std::memory_order_relaxed));
}

std::uint32_t Channel::publisher_token(std::uint32_t index) const noexcept {
  return layout::publisher_token(index, publishers_[index].tenancy.load(std::memory_order_acquire));
}

std::uint32_t Channel::enter_waiters(std::uint32_t index) const noexcept {
  const std::uint32_t word = header_->futex_word.load(std::memory_order_acquire);
  header_->waiters.fetch_or(std::uint64_t{1} << index, std::memory_order_relaxed);
  // SYNC POINT (store-load, fence-fence): our fetch_or, this fence, then
  // loads of `solo` and of the slot state. Pairs with the fence after a
  // shared commit (wake_waiters), after a grant CAS (keep_solo_grant) and
  // after a revoker's wait for the holder (end_solo).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A solo publisher's wake check has no fence (layout/channel_layout.hpp):
  // a membarrier is its other half (asymmetric fence). A grant we do not
  // see here was made after this fence in the seq_cst order, so its
  // holder's fence after the grant CAS orders our fetch_or before every
  // one of its wake checks; a grant revoked before we look is the
  // revoker's to wake us for (end_solo).
  if (solo_granted(header_->solo.load(std::memory_order_acquire))) heavy_barrier();
  return word;
}

void Channel::leave_waiters(std::uint32_t index) const noexcept {
  // relaxed: leaving orders nothing; a publisher that still sees the bit
  // only makes one spare wake call.
  header_->waiters.fetch_and(~(std::uint64_t{1} << index), std::memory_order_relaxed);
}

namespace {

/// Raises a table's count of entries ever claimed (ChannelHeader::
/// publishers_used) to cover `index`.
/// SYNC POINT WRITE: release CAS, before fill_entry's Live store; pairs with
/// Channel::entries_used's acquire load.
void mark_used(std::atomic<std::uint32_t>& used, std::uint32_t index) noexcept {
  std::uint32_t seen = used.load(std::memory_order_relaxed);
  while (seen <= index && !used.compare_exchange_weak(seen, index + 1, std::memory_order_release)) {
  }
}

std::uint32_t claim_entry(EndpointEntry* table, std::uint32_t size, std::atomic<std::uint32_t>& used,
                          const std::string& channel, const char* what) {
  const std::uint64_t claimed = self_owner_word(kEndpointClaimed);
  // Free entries in the order of their last holder's id, never used (id 0)
  // first: a freed publisher entry keeps that publisher's final count for
  // iceoryx subscribers settling discards (Channel::publisher_count), so
  // the most recently freed are taken last. States and ids are read
  // relaxed: a hint of order only; the acq_rel CAS below decides (and
  // pairs with release_entry's release store of kEndpointFree).
  std::array<std::pair<std::uint32_t, std::uint32_t>, std::max(kMaxPublishers, kMaxSubscribers)> order{};
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < size && n < order.size(); ++i) {
    if (table[i].state.load(std::memory_order_relaxed) != kEndpointFree) continue;
    order[n++] = {std::atomic_ref<std::uint32_t>(table[i].id).load(std::memory_order_relaxed), i};
  }
  std::sort(order.begin(), order.begin() + n);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = order[k].second;
    std::uint64_t expected = kEndpointFree;
    // CAS cases: won -> the entry is ours, still invisible to readers until
    // Live; lost -> someone else holds it, try the next one.
    if (table[i].state.compare_exchange_strong(expected, claimed, std::memory_order_acq_rel)) {
      // SYNC POINT WRITE (seqlock begin, and store-load): seq_cst, so it is
      // two fences in one. As a release fence, it keeps the field stores
      // below (refilled for the new holder) behind the claim: a reader that
      // reads one of them sees the claim on its re-check (publisher_count)
      // and throws the reading away; the CAS's own release orders only what
      // came before it. As a seq_cst fence, it orders a publisher's claim
      // before end_solo's load of `solo`; pairs with the fence after the
      // grant CAS (keep_solo_grant).
      std::atomic_thread_fence(std::memory_order_seq_cst);
      table[i].pid_ns.store(self_pid_ns(), std::memory_order_relaxed);
      mark_used(used, i);
      return i;
    }
  }
  throw Error(Errc::kResource, fmt::format("channel {} has no free {} entry ({} in use); close some, or "
                                           "run `shmtool clean` if their processes died",
                                           channel, what, size));
}

static_assert(offsetof(EndpointEntry, id) % std::atomic_ref<std::uint32_t>::required_alignment == 0,
              "an entry's id is accessed through atomic_ref");

void fill_entry(EndpointEntry& e, std::string_view node, std::uint32_t id) {
  // relaxed, through atomic_ref: publisher_count reads the id of an entry
  // that may be claimed again meanwhile (and throws that reading away).
  std::atomic_ref<std::uint32_t>(e.id).store(id, std::memory_order_relaxed);
  copy_name(e.node, sizeof(e.node), node);
  // SYNC POINT WRITE: fields before Live.
  e.state.store(self_owner_word(kEndpointLive), std::memory_order_release);
}

/// Known dead: the owner word's pid + start time (Claimed and Live alike).
bool entry_dead(const EndpointEntry& e, std::uint64_t state) {
  if (endpoint_phase(state) == kEndpointFree) return false;
  return !owner_alive(state, e.pid_ns.load(std::memory_order_relaxed));
}

}  // namespace

std::uint32_t Channel::register_endpoint(EndpointEntry* table, std::uint32_t size, std::string_view node,
                                         const char* what, std::uint32_t& id) {
  reclaim_dead();
  const std::uint32_t i = claim_entry(
      table, size, table == subscribers_ ? header_->subscribers_used : header_->publishers_used, name_, what);
  EndpointEntry& e = table[i];
  e.messages.store(0, std::memory_order_relaxed);
  e.missed.store(0, std::memory_order_relaxed);
  e.age_sum_ns.store(0, std::memory_order_relaxed);
  e.age_sum_sq_s2.store(0, std::memory_order_relaxed);
  e.age_min_ns.store(UINT64_MAX, std::memory_order_relaxed);
  e.age_max_ns.store(0, std::memory_order_relaxed);
  e.age_samples.store(0, std::memory_order_relaxed);
  e.discarded.store(0, std::memory_order_relaxed);
  e.errors.store(0, std::memory_order_relaxed);
  e.provenance_cut.store(0, std::memory_order_relaxed);
  e.upstream_lost.store(0, std::memory_order_relaxed);
  // A subscriber's read cursor is unknown until it has chosen where to
  // start (UINT64_MAX holds nobody up); a publisher's blocked time is 0.
  e.cursor.store(table == subscribers_ ? UINT64_MAX : 0, std::memory_order_relaxed);
  e.block_timeouts.store(0, std::memory_order_relaxed);
  // A subscriber pins no ring generation until it has chosen its ring.
  if (table == subscribers_) {
    header_->subscriber_generation[i].store(0, std::memory_order_relaxed);
    header_->subscriber_wants_slots[i].store(0, std::memory_order_relaxed);
  }
  // relaxed: the RMW alone makes ids unique; nothing else is ordered by it.
  id = static_cast<std::uint32_t>(header_->next_endpoint_id.fetch_add(1, std::memory_order_relaxed) + 1);
  fill_entry(e, node, id);
  return i;
}

std::uint32_t Channel::register_publisher(std::string_view node, std::uint32_t& id) {
  return register_endpoint(publishers_, kMaxPublishers, node, "publisher", id);
}

std::uint32_t Channel::register_subscriber(std::string_view node, std::uint32_t& id) {
  // A process that cannot use membarrier cannot be the heavy side of a solo
  // holder's wake check either (enter_waiters): it closes the channel to
  // solo publishing before it registers (a publisher does in end_solo).
  if (transport_ == Transport::kShm && !membarrier_available()) end_solo();
  return register_endpoint(subscribers_, kMaxSubscribers, node, "subscriber", id);
}

void Channel::release_entry(EndpointEntry& e, bool subscriber, std::uint32_t index, bool fold) noexcept {
  if (subscriber) {
    if (fold) {
      header_->reclaimed_received.fetch_add(e.messages.load(std::memory_order_relaxed), std::memory_order_relaxed);
      header_->reclaimed_lost.fetch_add(e.lost().load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    // Its sleep, if it died asleep: publishers stop making futex calls for it.
    leave_waiters(index);
  }
  // Before the entry is free: a checker that sees the old state with the new
  // tenancy knows the old holder's claims are void.
  e.tenancy.fetch_add(1, std::memory_order_acq_rel);
  e.state.store(kEndpointFree, std::memory_order_release);
}

void Channel::unregister_publisher(std::uint32_t index) noexcept {
  release_entry(publishers_[index], false, index, false);
}

std::uint32_t Channel::live_endpoints(bool subscribers) const noexcept {
  const EndpointEntry* table = subscribers ? subscribers_ : publishers_;
  const std::uint32_t size = subscribers ? kMaxSubscribers : kMaxPublishers;
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < size; ++i) {
    // acquire: pairs with the owner's release store of kEndpointLive.
    n += endpoint_phase(table[i].state.load(std::memory_order_acquire)) == kEndpointLive ? 1 : 0;
  }
  return n;
}

bool Channel::publisher_count(std::uint32_t i, PublisherCount& out) const noexcept {
  EndpointEntry& e = publishers_[i];
  // SYNC POINT READ (a seqlock over the entry): tenancy and state before
  // and after the fields. A claimer changes the state before it refills
  // the fields, and whoever frees an entry bumps its tenancy first, so
  // equal readings mean one holder's fields. The acquire loads pair with
  // the release stores of kEndpointLive and kEndpointFree (the fields are
  // written before either), and the count's with its publisher's release
  // store after each message was handed on (Publisher's notify).
  const std::uint32_t tenancy = e.tenancy.load(std::memory_order_acquire);
  const std::uint64_t state = e.state.load(std::memory_order_acquire);
  const std::uint64_t phase = endpoint_phase(state);
  if (phase != kEndpointLive && phase != kEndpointFree) return false;
  out.id = std::atomic_ref<std::uint32_t>(e.id).load(std::memory_order_relaxed);
  out.sent = e.messages.load(std::memory_order_acquire);
  out.live = phase == kEndpointLive;
  std::atomic_thread_fence(std::memory_order_acquire);
  return out.id != 0 && e.state.load(std::memory_order_relaxed) == state &&
         e.tenancy.load(std::memory_order_relaxed) == tenancy;
}

void Channel::unregister_subscriber(std::uint32_t index) noexcept {
  release_entry(subscribers_[index], true, index, true);
}

std::uint32_t Channel::reclaim_dead() noexcept {
  std::uint32_t freed = 0;
  const std::uint64_t hold = self_owner_word(kEndpointClaimed);
  auto reclaim = [&](EndpointEntry* table, std::uint32_t size, bool subscriber) {
    for (std::uint32_t i = 0; i < size; ++i) {
      EndpointEntry& e = table[i];
      std::uint64_t st = e.state.load(std::memory_order_acquire);
      if (!entry_dead(e, st)) continue;
      // CAS to a claim of our own: only the reclaimer that wins frees the
      // entry, and it holds it until it is clean (a reclaimer that dies
      // half-way leaves a claim that the next one reclaims).
      if (!e.state.compare_exchange_strong(st, hold, std::memory_order_acq_rel)) continue;
      e.pid_ns.store(self_pid_ns(), std::memory_order_relaxed);
      release_entry(e, subscriber, i, endpoint_phase(st) == kEndpointLive);
      ++freed;
    }
  };
  reclaim(publishers_, kMaxPublishers, false);
  reclaim(subscribers_, kMaxSubscribers, true);
  if (freed != 0) {
    header_->reclaimed_endpoints.fetch_add(freed, std::memory_order_relaxed);
    // A dead subscriber pins no generation of the ring.
    if (generation() != 0) remove_unneeded_generations();
  }
  return freed;
}

Registry& DomainState::registry() {
  // Caller holds mutex_. A registry removed under us (`shmtool clean` while
  // this process was between channels) is re-opened: channels created from
  // now on are listed in the one monitors read.
  if (!registry_ || registry_->replaced()) {
    registry_.reset();
    registry_.emplace(Registry::open_or_create(config_.domain, config_.registry_capacity, config_.access()));
  }
  return *registry_;
}

std::shared_ptr<Channel> DomainState::channel(const ChannelName& name, const ChannelSettings& settings,
                                              const TypeInfo* type, bool create) {
  std::lock_guard lock(mutex_);
  if (auto it = channels_.find(name.view()); it != channels_.end()) {
    auto ch = it->second.lock();
    if (ch && !ch->segment().replaced()) {
      if (type != nullptr) {
        check_type(name.view(), ch->type(), *type);
        ch->report_other_sizes(settings);
      }
      return ch;
    }
  }
  // Refused before anything exists (the RouDi check below included).
  if (type != nullptr && settings.overflow == Overflow::kBlock && settings.transport == Transport::kIceoryx) {
    throw Error(Errc::kConfig, fmt::format("channel {} is configured with overflow = \"block\" and transport = "
                                           "\"iceoryx\": blocking is for \"shm\" channels (iceoryx's blocking "
                                           "publisher has no bounded wait); configure one or the other",
                                           name.view()));
  }
  // A channel this process would create as an iceoryx one needs RouDi: find
  // out before its segment exists, so a missing RouDi leaves nothing
  // behind. An existing channel is opened first: that its transport differs
  // from ours is the error to report, and an iceoryx one checks for RouDi
  // when its port is made.
  const bool creates_iceoryx =
      create && settings.transport == Transport::kIceoryx && type != nullptr && !Segment::exists(name.object());
  const auto open = [&] {
    return Channel::create_or_open(config_.domain, name, type, settings, config_.access(), create);
  };
  std::shared_ptr<Channel> ch = creates_iceoryx ? nullptr : open();
  // Every endpoint of an iceoryx channel needs this process's runtime.
  if (creates_iceoryx || ch->transport() == Transport::kIceoryx) ensure_iceoryx_runtime(name.view());
  if (!ch) ch = open();
  ch->list_in(registry());
  channels_[name.str()] = ch;
  return ch;
}

}  // namespace shmbus::detail
