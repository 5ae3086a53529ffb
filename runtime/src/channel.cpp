#include "channel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::detail {

using namespace layout;

namespace {
constexpr SegmentSpec kSpec{SegmentKind::kChannel, kChannelLayoutHash};

struct Geometry {
  std::uint64_t publishers, subscribers, time_list, slots, schema, total;
};

Geometry geometry(const ChannelSettings& s, std::size_t schema_size) {
  Geometry g{};
  g.publishers = align_up(sizeof(ChannelHeader), kCacheLine);
  g.subscribers = g.publishers + sizeof(EndpointEntry) * kMaxPublishers;
  g.time_list = g.subscribers + sizeof(EndpointEntry) * kMaxSubscribers;
  g.slots = align_up(g.time_list + sizeof(std::uint64_t) * s.time_list_capacity, kCacheLine);
  g.schema = g.slots + std::uint64_t{slot_stride_for(s.max_message_size)} * s.capacity;
  g.total = align_up(g.schema + schema_size + 1, kCacheLine);
  return g;
}

std::string describe_type(std::string_view name, std::uint64_t hash) {
  return fmt::format("{} (hash {:016x})", name, hash);
}

void check_type(std::string_view channel, const ChannelHeader& h, std::string_view stored_schema,
                const TypeInfo& type) {
  if (type.name == h.type_name && type.hash == h.type_hash) return;
  std::string detail;
  if (type.name == h.type_name && !stored_schema.empty() && !type.schema.empty()) {
    // Same name, other definition: say where they part.
    const std::string diff = schema::first_difference(stored_schema, type.schema);
    if (!diff.empty()) detail = "; " + diff + " (here = the channel, there = yours)";
  }
  throw Error(Errc::kTypeMismatch,
              fmt::format("channel {} has type {}, you asked for {}{}", channel,
                          describe_type(h.type_name, h.type_hash), describe_type(type.name, type.hash), detail));
}
}  // namespace

Channel::Channel(Segment s, std::string name) : segment_(std::move(s)), name_(std::move(name)) {
  auto* base = static_cast<std::byte*>(segment_.base());
  header_ = reinterpret_cast<ChannelHeader*>(base);
  const ChannelHeader& h = *header_;
  // The geometry is validated against the mapped size, so a corrupt header
  // cannot make us address outside the mapping.
  const bool pow2 = std::has_single_bit(h.capacity) && std::has_single_bit(h.time_list_capacity);
  const std::uint64_t slots_end = h.slots_offset + std::uint64_t{h.slot_stride} * h.capacity;
  if (!pow2 || h.slot_stride < slot_stride_for(h.max_message_size) || slots_end > segment_.size() ||
      h.schema_offset + h.schema_size > segment_.size() ||
      h.time_list_offset + 8ULL * h.time_list_capacity > h.slots_offset ||
      h.publishers_offset + sizeof(EndpointEntry) * kMaxPublishers > h.subscribers_offset ||
      h.max_publishers != kMaxPublishers || h.max_subscribers != kMaxSubscribers) {
    throw Error(Errc::kLayoutMismatch,
                fmt::format("shared-memory segment /dev/shm/{} has an inconsistent channel geometry "
                            "(corrupt); if no process uses it, remove it with `shmtool clean`",
                            segment_.name()));
  }
  slots_ = base + h.slots_offset;
  slot_mask_ = h.capacity - 1;
  slot_stride_ = h.slot_stride;
  time_list_ = reinterpret_cast<std::atomic<std::uint64_t>*>(base + h.time_list_offset);
  time_list_mask_ = h.time_list_capacity - 1;
  time_list_log2_ = static_cast<std::uint32_t>(std::countr_zero(h.time_list_capacity));
  publishers_ = reinterpret_cast<EndpointEntry*>(base + h.publishers_offset);
  subscribers_ = reinterpret_cast<EndpointEntry*>(base + h.subscribers_offset);
}

std::shared_ptr<Channel> Channel::open_existing(const std::string& domain, std::string_view name, bool writable) {
  validate_channel_name(name);
  try {
    Segment s = Segment::open(channel_object_name(domain, name), kSpec, writable);
    return std::shared_ptr<Channel>(new Channel(std::move(s), std::string{name}));
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) {
      throw Error(Errc::kNotFound, fmt::format("channel {} does not exist in domain \"{}\"", name, domain));
    }
    throw;
  }
}

std::shared_ptr<Channel> Channel::create_or_open(const std::string& domain, std::string_view name, const TypeInfo* type,
                                                 const ChannelSettings& settings, std::uint32_t mode,
                                                 Registry& registry) {
  validate_channel_name(name);
  if (settings.transport != Transport::kShm) {
    throw Error(Errc::kConfig, fmt::format("channel {}: transport \"{}\" is not available in this build "
                                           "yet; set transport = \"shm\" for it in the configuration",
                                           name, to_string(settings.transport)));
  }
  if (type != nullptr && type->name.size() >= kTypeNameBytes) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("type name \"{}\" is longer than {} bytes", type->name, kTypeNameBytes - 1));
  }
  std::shared_ptr<Channel> ch;
  if (type == nullptr) {
    ch = open_existing(domain, name, true);
  } else {
    const Geometry g = geometry(settings, type->schema.size());
    bool created = false;
    Segment s = Segment::create_or_open(
        channel_object_name(domain, name), g.total, mode, kSpec,
        [&](void* base) {
          auto* h = static_cast<ChannelHeader*>(base);
          copy_name(h->name, sizeof(h->name), name);
          copy_name(h->type_name, sizeof(h->type_name), type->name);
          h->type_hash = type->hash;
          h->capacity = settings.capacity;
          h->max_message_size = settings.max_message_size;
          h->slot_stride = slot_stride_for(settings.max_message_size);
          h->time_list_capacity = settings.time_list_capacity;
          h->transport = static_cast<std::uint32_t>(settings.transport);
          h->max_publishers = kMaxPublishers;
          h->max_subscribers = kMaxSubscribers;
          h->schema_size = static_cast<std::uint32_t>(type->schema.size());
          h->publishers_offset = g.publishers;
          h->subscribers_offset = g.subscribers;
          h->time_list_offset = g.time_list;
          h->slots_offset = g.slots;
          h->schema_offset = g.schema;
          h->stall_timeout_ns = settings.stall_timeout.count();
          h->window_ns = settings.window.count();
          if (settings.thresholds_hz) {
            h->has_thresholds = 1;
            for (int i = 0; i < 3; ++i) h->thresholds_hz[i] = (*settings.thresholds_hz)[i];
          }
          std::memcpy(static_cast<std::byte*>(base) + g.schema, type->schema.data(), type->schema.size());
        },
        created);
    ch = std::shared_ptr<Channel>(new Channel(std::move(s), std::string{name}));
  }
  const ChannelHeader& h = ch->header();
  if (type != nullptr) check_type(name, h, ch->schema_text(), *type);
  // Every opener makes sure the channel is listed: a creator killed between
  // creating the segment and listing it is repaired by the next opener.
  const std::uint32_t index = registry.ensure(name, h.type_name, h.type_hash, h.transport);
  ch->header().registry_index.store(index, std::memory_order_relaxed);
  return ch;
}

std::string_view Channel::schema_text() const noexcept {
  const auto* base = static_cast<const char*>(segment_.base());
  return {base + header_->schema_offset, header_->schema_size};
}

TypeInfo Channel::type() const { return TypeInfo{header_->type_name, header_->type_hash, std::string{schema_text()}}; }

std::uint64_t Channel::snapshot_time_list(std::vector<std::int64_t>& out) const {
  out.clear();
  // SYNC POINT READ: pairs with the release stores in stamp().
  const std::uint64_t head = header_->time_list_head.load(std::memory_order_acquire);
  const std::uint64_t cap = time_list_mask_ + 1;
  const std::uint64_t first = head > cap ? head - cap : 0;
  out.reserve(head - first);
  for (std::uint64_t i = first; i < head; ++i) {
    const std::uint64_t e = time_list_[i & time_list_mask_].load(std::memory_order_acquire);
    // An entry of another lap is either still being written (older lap) or
    // already overwritten by a stamp after `head` was read (newer lap).
    if (e != 0 && (e & kLapMask) == ((i >> time_list_log2_) & kLapMask)) {
      out.push_back(static_cast<std::int64_t>(e & ~kLapMask));
    }
  }
  // Several publishers stamp after their commits, so index order can be off
  // by a few stamps; callers get time order. Usually a single O(n) check.
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  return head;
}

std::uint64_t Channel::read_stamps_since(std::uint64_t& cursor, std::vector<std::int64_t>& out) const {
  // SYNC POINT READ: pairs with the release stores in stamp().
  const std::uint64_t head = header_->time_list_head.load(std::memory_order_acquire);
  const std::uint64_t cap = time_list_mask_ + 1;
  std::uint64_t overwritten = 0;
  if (head > cap && cursor < head - cap) {
    overwritten = head - cap - cursor;
    cursor = head - cap;
  }
  std::uint64_t resume = head;  // first index of a trailing run of unwritten entries
  for (std::uint64_t i = cursor; i < head; ++i) {
    const std::uint64_t e = time_list_[i & time_list_mask_].load(std::memory_order_acquire);
    if (e != 0 && (e & kLapMask) == ((i >> time_list_log2_) & kLapMask)) {
      out.push_back(static_cast<std::int64_t>(e & ~kLapMask));
      resume = head;
    } else if (resume == head) {
      resume = i;
    }
  }
  cursor = resume;
  return overwritten;
}

namespace {

template <typename Entry>
std::uint32_t claim_entry(Entry* table, std::uint32_t size, const std::string& channel, const char* what) {
  const auto pid = static_cast<std::uint32_t>(self_pid());
  for (std::uint32_t i = 0; i < size; ++i) {
    std::uint64_t expected = kEndpointFree;
    // CAS cases: won -> the entry is ours, still invisible to readers until
    // Live; lost -> someone else holds it, try the next one.
    if (table[i].state.compare_exchange_strong(expected, endpoint_state(pid, kEndpointClaimed),
                                               std::memory_order_acq_rel)) {
      return i;
    }
  }
  throw Error(Errc::kResource, fmt::format("channel {} has no free {} entry ({} in use); close some, or "
                                           "run `shmtool clean` if their processes died",
                                           channel, what, size));
}

template <typename Entry>
void fill_entry(Entry& e, std::string_view node, std::uint32_t id) {
  e.start_time = self_start_time();
  e.id = id;
  copy_name(e.node, sizeof(e.node), node);
  // SYNC POINT WRITE: fields before Live.
  e.state.store(endpoint_state(static_cast<std::uint32_t>(self_pid()), kEndpointLive), std::memory_order_release);
}

template <typename Entry>
bool entry_dead(const Entry& e, std::uint64_t state) {
  const std::uint64_t phase = endpoint_phase(state);
  if (phase == kEndpointFree) return false;
  const auto pid = static_cast<pid_t>(endpoint_pid(state));
  return !process_alive(pid, phase == kEndpointLive ? e.start_time : 0);
}

}  // namespace

std::uint32_t Channel::register_endpoint(EndpointEntry* table, std::uint32_t size, std::string_view node,
                                         const char* what, std::uint32_t& id) {
  reclaim_dead();
  const std::uint32_t i = claim_entry(table, size, name_, what);
  EndpointEntry& e = table[i];
  e.messages.store(0, std::memory_order_relaxed);
  e.lost.store(0, std::memory_order_relaxed);
  e.age_sum_ns.store(0, std::memory_order_relaxed);
  e.age_sum_sq_s2.store(0, std::memory_order_relaxed);
  e.age_min_ns.store(UINT64_MAX, std::memory_order_relaxed);
  e.age_max_ns.store(0, std::memory_order_relaxed);
  e.age_samples.store(0, std::memory_order_relaxed);
  e.discarded.store(0, std::memory_order_relaxed);
  // relaxed: the RMW alone makes ids unique; nothing else is ordered by it.
  id = static_cast<std::uint32_t>(header_->next_endpoint_id.fetch_add(1, std::memory_order_relaxed) + 1);
  fill_entry(e, node, id);
  return i;
}

std::uint32_t Channel::register_publisher(std::string_view node, std::uint32_t& id) {
  return register_endpoint(publishers_, kMaxPublishers, node, "publisher", id);
}

std::uint32_t Channel::register_subscriber(std::string_view node, std::uint32_t& id) {
  return register_endpoint(subscribers_, kMaxSubscribers, node, "subscriber", id);
}

void Channel::unregister_publisher(std::uint32_t index) noexcept {
  publishers_[index].state.store(kEndpointFree, std::memory_order_release);
}

void Channel::unregister_subscriber(std::uint32_t index) noexcept {
  EndpointEntry& e = subscribers_[index];
  header_->reclaimed_received.fetch_add(e.messages.load(std::memory_order_relaxed), std::memory_order_relaxed);
  header_->reclaimed_lost.fetch_add(e.lost.load(std::memory_order_relaxed), std::memory_order_relaxed);
  e.state.store(kEndpointFree, std::memory_order_release);
}

std::uint32_t Channel::reclaim_dead() noexcept {
  std::uint32_t freed = 0;
  for (std::uint32_t i = 0; i < kMaxPublishers; ++i) {
    std::uint64_t st = publishers_[i].state.load(std::memory_order_acquire);
    // CAS: only the reclaimer that wins folds the entry; a lost race means
    // another process reclaimed it or the owner changed it.
    if (entry_dead(publishers_[i], st) &&
        publishers_[i].state.compare_exchange_strong(st, kEndpointFree, std::memory_order_acq_rel)) {
      ++freed;
    }
  }
  for (std::uint32_t i = 0; i < kMaxSubscribers; ++i) {
    EndpointEntry& e = subscribers_[i];
    std::uint64_t st = e.state.load(std::memory_order_acquire);
    if (!entry_dead(e, st)) continue;
    const std::uint64_t received = e.messages.load(std::memory_order_relaxed);
    const std::uint64_t lost = e.lost.load(std::memory_order_relaxed);
    if (e.state.compare_exchange_strong(st, kEndpointFree, std::memory_order_acq_rel)) {
      if (endpoint_phase(st) == kEndpointLive) {
        header_->reclaimed_received.fetch_add(received, std::memory_order_relaxed);
        header_->reclaimed_lost.fetch_add(lost, std::memory_order_relaxed);
      }
      ++freed;
    }
  }
  if (freed != 0) header_->reclaimed_endpoints.fetch_add(freed, std::memory_order_relaxed);
  return freed;
}

Registry& DomainState::registry() {
  // Caller holds mutex_.
  if (!registry_) {
    registry_.emplace(Registry::open_or_create(config_.domain, config_.registry_capacity, config_.mode));
  }
  return *registry_;
}

std::shared_ptr<Channel> DomainState::channel(std::string_view name, const TypeInfo* type) {
  std::lock_guard lock(mutex_);
  if (auto it = channels_.find(name); it != channels_.end()) {
    if (auto ch = it->second.lock()) {
      if (type != nullptr) check_type(name, ch->header(), ch->schema_text(), *type);
      return ch;
    }
  }
  auto ch = Channel::create_or_open(config_.domain, name, type, config_.channel(name), config_.mode, registry());
  channels_[std::string{name}] = ch;
  return ch;
}

}  // namespace shmbus::detail
