#include "shmbus/introspect.hpp"

#include <dirent.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <tuple>

#include "channel.hpp"
#include "process.hpp"
#include "registry.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::introspect {

using namespace detail;
using namespace layout;

struct DomainView::Impl {
  std::string domain;
  Registry registry;
};

DomainView::DomainView(const std::string& domain, const SegmentAccess& access) {
  validate_domain_name(domain);
  impl_ = std::make_unique<Impl>(Impl{domain, Registry::open_existing(domain, false, access)});
}
DomainView::~DomainView() = default;
DomainView::DomainView(DomainView&&) noexcept = default;
DomainView& DomainView::operator=(DomainView&&) noexcept = default;

const std::string& DomainView::domain() const noexcept { return impl_->domain; }

std::vector<std::string> DomainView::channel_names() const {
  std::vector<std::string> names;
  // Names from shared memory: escaped when not printable (and then refused
  // by whoever opens them, so they are listed as unreadable).
  impl_->registry.for_each_live(
      [&](std::uint32_t, const ChannelRecord& r) { names.push_back(escape_name(record_name(r))); });
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> DomainView::channel_name(std::uint32_t registry_index) const {
  const ChannelRecord* r = impl_->registry.record(registry_index);
  if (r == nullptr) return std::nullopt;
  return escape_name(record_name(*r));
}

std::uint64_t DomainView::generation() const noexcept { return impl_->registry.generation(); }

struct ChannelReader::Impl {
  std::shared_ptr<Channel> channel;
};

ChannelReader::ChannelReader(const std::string& domain, std::string_view channel, bool writable,
                             const SegmentAccess& access)
    : impl_(std::make_unique<Impl>(
          Impl{Channel::open_existing(domain, ChannelName(channel, domain), writable, access)})) {}
ChannelReader::~ChannelReader() = default;
ChannelReader::ChannelReader(ChannelReader&&) noexcept = default;
ChannelReader& ChannelReader::operator=(ChannelReader&&) noexcept = default;

namespace {

template <typename Entry>
bool read_endpoint(const Entry& e, EndpointView& v) {
  // SYNC POINT READ: pairs with fill_entry's release store of Live.
  const std::uint64_t st = e.state.load(std::memory_order_acquire);
  if (endpoint_phase(st) != kEndpointLive) return false;
  v.pid = static_cast<std::int32_t>(endpoint_pid(st));
  // relaxed, through atomic_ref: fill_entry stores it so, and an entry may
  // be let again while we read it.
  v.id = std::atomic_ref<const std::uint32_t>(e.id).load(std::memory_order_relaxed);
  v.node = escape_name(std::string_view(e.node, strnlen(e.node, sizeof(e.node))));
  v.alive = owner_alive(st, e.pid_ns.load(std::memory_order_relaxed));
  return true;
}

void collect_endpoints(const EndpointEntry* table, std::uint32_t n, bool publishers, std::vector<EndpointView>& out) {
  for (std::uint32_t i = 0; i < n; ++i) {
    EndpointView ev;
    if (!read_endpoint(table[i], ev)) continue;
    ev.slot = i;
    ev.messages = table[i].messages.load(std::memory_order_relaxed);
    const std::uint64_t missed = table[i].missed.load(std::memory_order_relaxed);
    (publishers ? ev.dropped : ev.lost) = missed;
    ev.age_sum_ns = table[i].age_sum_ns.load(std::memory_order_relaxed);
    ev.age_sum_sq_s2 = table[i].age_sum_sq_s2.load(std::memory_order_relaxed);
    ev.age_min_ns = table[i].age_min_ns.load(std::memory_order_relaxed);
    ev.age_max_ns = table[i].age_max_ns.load(std::memory_order_relaxed);
    ev.age_samples = table[i].age_samples.load(std::memory_order_relaxed);
    ev.discarded = table[i].discarded.load(std::memory_order_relaxed);
    ev.errors = table[i].errors.load(std::memory_order_relaxed);
    ev.provenance_cut = table[i].provenance_cut.load(std::memory_order_relaxed);
    ev.upstream_lost = table[i].upstream_lost.load(std::memory_order_relaxed);
    const std::uint64_t cursor = table[i].cursor.load(std::memory_order_relaxed);
    (publishers ? ev.blocked_ns : ev.read_cursor) = cursor;
    ev.block_timeouts = table[i].block_timeouts.load(std::memory_order_relaxed);
    out.push_back(std::move(ev));
  }
}

}  // namespace

bool ChannelReader::replaced() const noexcept { return impl_->channel->segment().replaced(); }

ChannelView ChannelReader::view() const {
  const Channel& ch = *impl_->channel;
  const ChannelHeader& h = ch.header();
  ChannelView v;
  const TypeInfo type = ch.type();
  v.name = ch.name();
  v.type_name = escape_name(type.name);
  v.type_hash = type.hash;
  v.schema = type.schema;
  v.transport = static_cast<Transport>(h.transport);
  v.registry_index = h.registry_index.load(std::memory_order_relaxed);
  std::tie(v.max_message_size, v.capacity) = ch.current_geometry();
  v.generation = ch.generation();
  v.max_grow_size = ch.may_grow() ? ch.size_ceiling() : 0;
  v.grows_refused = h.grows_refused.load(std::memory_order_relaxed);
  v.time_list_capacity = h.time_list_capacity;
  v.creator_pid = ch.creator_pid();
  v.creator_program = ch.creator_program();  // escaped when the channel was opened
  v.sizes_from = ch.sizes_from();
  v.stall_timeout_ns = ch.stall_timeout_ns();
  v.overflow = ch.overflow();
  v.block_timeout_ns = ch.block_timeout_ns();
  v.window_ns = h.window_ns;
  if (h.has_thresholds != 0) v.thresholds_hz = {h.thresholds_hz[0], h.thresholds_hz[1], h.thresholds_hz[2]};
  // Counters are statistics: relaxed loads.
  v.messages = ch.write_cursor();
  v.publish_dropped = h.publish_dropped.load(std::memory_order_relaxed);
  v.lost = h.reclaimed_lost.load(std::memory_order_relaxed);
  v.received = h.reclaimed_received.load(std::memory_order_relaxed);
  v.stamps = ch.time_list_head();
  v.wakeups = h.futex_word.load(std::memory_order_relaxed);
  v.sleepers = static_cast<std::uint32_t>(std::popcount(h.waiters.load(std::memory_order_relaxed)));
  const std::uint64_t solo = h.solo.load(std::memory_order_relaxed);
  v.solo = solo_granted(solo);
  v.solo_closed = solo_closed(solo);
  collect_endpoints(&ch.publisher(0), ch.entries_used(false), true, v.publishers);
  collect_endpoints(&ch.subscriber(0), ch.entries_used(true), false, v.subscribers);
  for (const EndpointView& s : v.subscribers) {
    v.lost += s.lost;
    v.received += s.messages;
  }
  return v;
}

std::uint64_t ChannelReader::read_stamps_since(TimeListCursor& cursor, std::vector<std::int64_t>& out) const {
  return impl_->channel->read_stamps_since(cursor, out);
}

void ChannelReader::reset_age_extremes() const {
  const Channel& ch = *impl_->channel;
  const auto reset = [](EndpointEntry& e) {
    if (endpoint_phase(e.state.load(std::memory_order_acquire)) != kEndpointLive) return;
    e.age_min_ns.store(UINT64_MAX, std::memory_order_relaxed);
    e.age_max_ns.store(0, std::memory_order_relaxed);
  };
  for (std::uint32_t i = 0; i < ch.entries_used(true); ++i) reset(ch.subscriber(i));
  for (std::uint32_t i = 0; i < ch.entries_used(false); ++i) reset(ch.publisher(i));
}

void ChannelReader::snapshot(TimeListSnapshot& out) const {
  out.total = impl_->channel->snapshot_time_list(out.stamps);
  out.capacity = impl_->channel->header().time_list_capacity;
}

namespace {

std::vector<std::string> domain_objects(const std::string& domain) {
  std::vector<std::string> names;
  const std::string prefix = domain_object_prefix(domain);
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return names;
  // readdir on a stream this function alone owns: no shared state.
  while (const dirent* d = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
    const std::string n = d->d_name;
    if (n.rfind(prefix, 0) == 0) names.push_back(n);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

template <typename Entry>
bool any_live(const Entry* table, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t st = table[i].state.load(std::memory_order_acquire);
    if (endpoint_phase(st) == kEndpointFree) continue;
    if (owner_alive(st, table[i].pid_ns.load(std::memory_order_relaxed))) return true;
  }
  return false;
}

}  // namespace

namespace {

enum class ChannelUse : std::uint8_t { kInUse, kUnused, kNotOurs };

/// Whether a live process uses `channel` (its dead processes' entries
/// reclaimed first unless `dry_run`); an unreadable segment is unused (a
/// left-over of another layout, or corrupt), another user's is not ours.
ChannelUse channel_use(const std::string& domain, const std::string& channel, bool dry_run,
                       const SegmentAccess& access) {
  try {
    auto ch = Channel::open_existing(domain, ChannelName(channel, domain), !dry_run, access);
    if (!dry_run) ch->reclaim_dead();
    const bool live = any_live(&ch->publisher(0), kMaxPublishers) || any_live(&ch->subscriber(0), kMaxSubscribers);
    return live ? ChannelUse::kInUse : ChannelUse::kUnused;
  } catch (const Error& e) {
    return e.code() == Errc::kPermission ? ChannelUse::kNotOurs : ChannelUse::kUnused;
  }
}

}  // namespace

bool remove_unused_channel(const std::string& domain, std::string_view channel, const SegmentAccess& access) {
  validate_domain_name(domain);
  validate_channel_name(channel);
  const std::string name{channel};
  if (channel_use(domain, name, false, access) != ChannelUse::kUnused) return false;
  if (!Segment::remove(channel_object_name(domain, name))) return false;
  // Its grown rings go with it.
  for (std::uint32_t g = 1; g < kMaxGenerations; ++g) Segment::remove(ring_object_name(domain, name, g));
  try {
    Registry::open_existing(domain, true, access).remove(name);
  } catch (const Error&) {
    // No registry left, or not ours: nothing to unlist.
  }
  return true;
}

CleanReport clean_domain(const std::string& domain, bool dry_run, const SegmentAccess& access) {
  validate_domain_name(domain);
  CleanReport report;
  const std::string registry_name = registry_object_name(domain);
  const std::string channel_prefix = domain_object_prefix(domain) + "c.";
  const std::vector<std::string> objects = domain_objects(domain);
  std::optional<Registry> registry;
  try {
    registry.emplace(Registry::open_existing(domain, !dry_run, access));
  } catch (const Error&) {
    // No registry, or one this build cannot read (another version, corrupt):
    // nothing to unlist; an unreadable one is removed with the rest.
  }
  std::size_t channels_left = 0;
  bool registry_exists = false;
  for (const std::string& object : objects) {
    if (object == registry_name) {
      registry_exists = true;
      continue;
    }
    if (const std::string grown = channel_of_ring_object(domain, object); !grown.empty()) {
      // A grown ring (ring_object_name): it goes with its channel, when no
      // live process uses that (or the channel is gone).
      const ChannelUse use = channel_use(domain, grown, dry_run, access);
      if (use != ChannelUse::kUnused) {
        report.kept.push_back(object);
        report.kept_why.emplace_back(use == ChannelUse::kInUse ? "in use by a live process" : "another user's");
        continue;
      }
      report.removed.push_back(object);
      if (!dry_run) Segment::remove(object);
      continue;
    }
    if (object.rfind(channel_prefix, 0) != 0) {
      report.kept.push_back(object);  // not a name shmbus makes: not ours to judge
      report.kept_why.emplace_back("not a name shmbus makes");
      continue;
    }
    std::string channel = object.substr(channel_prefix.size());
    std::replace(channel.begin(), channel.end(), '.', '/');
    channel.insert(channel.begin(), '/');
    const ChannelUse use = channel_use(domain, channel, dry_run, access);
    if (use != ChannelUse::kUnused) {
      report.kept.push_back(object);  // in use, or someone else's: not ours to remove
      report.kept_why.emplace_back(use == ChannelUse::kInUse ? "in use by a live process" : "another user's");
      ++channels_left;
      continue;
    }
    report.removed.push_back(object);
    if (!dry_run) {
      Segment::remove(object);
      if (registry) registry->remove(channel);
    }
  }
  if (registry_exists) {
    if (channels_left == 0) {
      report.removed.push_back(registry_name);
      if (!dry_run) Segment::remove(registry_name);
    } else {
      report.kept.push_back(registry_name);
      report.kept_why.push_back("the registry: " + std::to_string(channels_left) + " channel" +
                                (channels_left == 1 ? " of the domain remains" : "s of the domain remain"));
    }
  }
  return report;
}

}  // namespace shmbus::introspect
