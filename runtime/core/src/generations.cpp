// Ring generations: a channel's ring replaced by a larger one while it is
// used (layout/channel_layout.hpp, "Generations").

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "channel.hpp"
#include "process.hpp"
#include "shmbus/error.hpp"

namespace shmbus::detail {

using namespace layout;

namespace {

constexpr SegmentSpec kRingSpec{SegmentKind::kRing, kChannelLayoutHash};

/// A grown ring is halved while it would be larger than this (or than the
/// channel's first ring, when that is larger).
constexpr std::uint64_t kGrownRingBytes = std::uint64_t{64} << 20;
/// How long a grower waits for a live one holding the lock.
constexpr auto kGrowLockWait = std::chrono::seconds(2);

struct RingGeometry {
  std::uint64_t claims, slots, total;
};

RingGeometry ring_geometry(std::uint64_t capacity, std::uint64_t max_message_size) noexcept {
  RingGeometry g{};
  g.claims = align_up(sizeof(RingHeader), kCacheLine);
  g.slots = g.claims + sizeof(SlotClaim) * capacity;
  g.total = g.slots + slot_stride_for(max_message_size) * capacity;
  return g;
}

/// What is wrong with a ring segment's header read from shared memory, or
/// empty: its geometry against the mapping (overflow-safe), its place in
/// the channel's generations, and the channel it names.
std::string ring_problem(const RingHeader& h, std::size_t mapped, std::string_view channel, std::uint32_t g) {
  if (mapped < sizeof(RingHeader)) return fmt::format("is {} bytes, smaller than a ring header", mapped);
  if (!std::has_single_bit(h.capacity) || h.capacity > kMaxCapacity) {
    return fmt::format("has capacity {} (a power of two up to {} expected)", h.capacity, kMaxCapacity);
  }
  if (h.max_message_size == 0 || h.max_message_size > kMaxMessageSize) {
    return fmt::format("has max_message_size {} (1 to {} expected)", h.max_message_size, kMaxMessageSize);
  }
  if (h.slot_stride != slot_stride_for(h.max_message_size)) {
    return fmt::format("has slot stride {} for max_message_size {}", h.slot_stride, h.max_message_size);
  }
  if (h.generation != g) return fmt::format("says it is generation {}, not {}", h.generation, g);
  const RingGeometry want = ring_geometry(h.capacity, h.max_message_size);
  if (h.claims_offset != want.claims || h.slots_offset != want.slots || want.total > mapped) {
    return fmt::format("has its claims at {} and its slots at {} (+{} x {} bytes), not where {} bytes put them",
                       h.claims_offset, h.slots_offset, h.capacity, h.slot_stride, mapped);
  }
  const std::string_view name{h.channel, strnlen(h.channel, sizeof(h.channel))};
  if (name != channel) return fmt::format("belongs to channel \"{}\", not {}", escape_name(name), channel);
  return {};
}

/// Bytes of `domain`'s ring segments, as /dev/shm lists them now.
std::uint64_t ring_bytes(const std::string& domain) {
  const std::string prefix = domain_object_prefix(domain) + "g";
  std::uint64_t total = 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  // readdir on a stream this function alone owns: no shared state.
  while (const dirent* d = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
    if (std::strncmp(d->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), d->d_name, &st, 0) == 0) total += static_cast<std::uint64_t>(st.st_size);
  }
  ::closedir(dir);
  return total;
}

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

std::shared_ptr<const Ring> Channel::ring(std::uint32_t g) const {
  if (g == 0) return ring0_;
  if (g >= kMaxGenerations || g > generation()) return nullptr;
  const std::uint64_t start = generation_start(g);
  if (start == kStartUnknown) return nullptr;
  std::lock_guard lock(rings_mutex_);
  if (auto r = rings_[g].lock()) return r;
  if (ring_refused_[g]) return nullptr;
  auto r = map_ring(g, start);
  rings_[g] = r;
  return r;
}

std::shared_ptr<const Ring> Channel::map_ring(std::uint32_t g, std::uint64_t start) const {
  const std::string object = ring_object_name(domain_, name_, g);
  Segment seg;
  try {
    seg = Segment::open(object, kRingSpec, true, access_, Residency::kPopulated);
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) return nullptr;  // removed: no reader needed it any more
    ring_refused_[g] = true;
    std::fprintf(stderr, "shmbus: channel %s: generation %u of its ring is refused: %s\n", name_.c_str(), g, e.what());
    return nullptr;
  }
  auto* base = static_cast<std::byte*>(seg.base());
  const auto& h = *reinterpret_cast<const RingHeader*>(base);
  if (const std::string problem = ring_problem(h, seg.size(), name_, g); !problem.empty()) {
    ring_refused_[g] = true;
    std::fprintf(stderr,
                 "shmbus: channel %s: shared-memory segment /dev/shm/%s %s (corrupt): its messages are skipped "
                 "and counted lost; if no process uses the channel, remove it with `shmtool clean`\n",
                 name_.c_str(), object.c_str(), problem.c_str());
    return nullptr;
  }
  // The geometry copied from the validated header, as for generation 0.
  auto r = std::make_shared<Ring>();
  r->generation = g;
  r->start = start;
  r->mask = h.capacity - 1;
  r->stride = h.slot_stride;
  r->max_message_size = h.max_message_size;
  r->claims = reinterpret_cast<SlotClaim*>(base + h.claims_offset);
  r->slots = base + h.slots_offset;
  r->segment = std::move(seg);
  return r;
}

std::shared_ptr<const Ring> Channel::ring_of(std::uint64_t seq) const {
  for (std::uint32_t k = generation() + 1; k-- > 0;) {
    const std::uint64_t start = generation_start(k);
    if (start != kStartUnknown && start <= seq) return ring(k);
  }
  return nullptr;
}

std::shared_ptr<const Ring> Channel::current_ring() const {
  std::uint32_t g = generation();
  // Announced and not settled yet: the one before is still the current one.
  if (g > 0 && generation_start(g) == kStartUnknown) --g;
  return ring(g);
}

std::pair<std::uint32_t, std::uint32_t> Channel::current_geometry() const noexcept {
  std::uint32_t g = generation();
  if (g > 0 && generation_start(g) == kStartUnknown) --g;
  if (g == 0) return {max_message_size_, static_cast<std::uint32_t>(capacity())};
  // Shared memory: bounded for display (a ring is validated when mapped).
  const GenerationRecord& rec = header_->generations[g];
  return {std::min<std::uint32_t>(rec.max_message_size, kMaxMessageSize),
          std::min<std::uint32_t>(rec.capacity, kMaxCapacity)};
}

std::uint64_t Channel::settle_start(std::uint32_t g, bool& won) noexcept {
  won = false;
  if (g == 0 || g >= kMaxGenerations) return GrowOutcome::kNoSequence;
  std::atomic<std::uint64_t>& start = header_->generations[g].start;
  if (start.load(std::memory_order_acquire) != kStartUnknown) return GrowOutcome::kNoSequence;
  // SYNC POINT (seq_cst RMW): after the announcement's seq_cst store, in the
  // one total order with every claim's RMW and its load of `generation`:
  // a claim that still saw the old generation claimed below this.
  const std::uint64_t c = header_->write_cursor.fetch_add(1, std::memory_order_seq_cst);
  std::uint64_t expected = kStartUnknown;
  // SYNC POINT WRITE: release; pairs with generation_start's acquire.
  won = start.compare_exchange_strong(expected, c, std::memory_order_acq_rel);
  return c;
}

void Channel::remove_unneeded_generations() noexcept {
  std::uint32_t lowest = generation();
  if (lowest > 0 && generation_start(lowest) == kStartUnknown) --lowest;
  const std::uint32_t used = entries_used(true);
  for (std::uint32_t i = 0; i < used; ++i) {
    const EndpointEntry& e = subscribers_[i];
    const std::uint64_t st = e.state.load(std::memory_order_acquire);
    if (endpoint_phase(st) == kEndpointFree || !owner_alive(st, e.pid_ns.load(std::memory_order_relaxed))) continue;
    const std::uint32_t v = header_->subscriber_generation[i].load(std::memory_order_relaxed);
    if (v != 0) lowest = std::min(lowest, v - 1);
  }
  std::uint32_t below = std::max<std::uint32_t>(header_->removed_below.load(std::memory_order_relaxed), 1);
  for (std::uint32_t k = below; k < lowest; ++k) Segment::remove(ring_object_name(domain_, name_, k));
  while (below < lowest && !header_->removed_below.compare_exchange_weak(below, lowest, std::memory_order_relaxed)) {
  }
}

GrowOutcome Channel::grow(std::size_t size, const GrowLimits& limits, const std::function<void(GrowPause)>& at) {
  GrowOutcome out;
  const auto refuse = [&](std::string why) {
    header_->grows_refused.fetch_add(1, std::memory_order_relaxed);
    out.refusal = std::move(why);
    return out;
  };
  if (!grow_ || transport_ != Transport::kShm) return refuse(too_large(size));
  if (size > max_grow_size_) return refuse(too_large(size));
  // One grower at a time: an owner word, so a dead holder is known.
  const std::uint64_t me = self_owner_word(1);
  const auto give_up = std::chrono::steady_clock::now() + kGrowLockWait;
  for (;;) {
    std::uint64_t cur = 0;
    // SYNC POINT: acquire pairs with the last holder's release below.
    if (header_->grow_owner.compare_exchange_strong(cur, me, std::memory_order_acq_rel)) break;
    if (!owner_alive(cur) && header_->grow_owner.compare_exchange_strong(cur, me, std::memory_order_acq_rel)) break;
    if (std::chrono::steady_clock::now() > give_up) {
      return refuse(fmt::format("channel {} is being grown by pid {}, which has held it for {} s; is it stopped?",
                                name_, owner_pid(cur), kGrowLockWait.count()));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  at(GrowPause::kLocked);
  std::string refusal;
  try {
    refusal = grow_locked(size, limits, out, at);
  } catch (const Error& e) {
    refusal = fmt::format("channel {} could not grow: {}", name_, e.what());
  }
  // SYNC POINT WRITE: release; what we did under the lock before the next
  // holder's acquire.
  header_->grow_owner.store(0, std::memory_order_release);
  if (!refusal.empty()) return refuse(std::move(refusal));
  remove_unneeded_generations();
  return out;
}

std::string Channel::grow_locked(std::size_t size, const GrowLimits& limits, GrowOutcome& out,
                                 const std::function<void(GrowPause)>& at) {
  for (std::uint32_t round = 0; round < 2 * kMaxGenerations; ++round) {
    const std::uint32_t g = generation();
    if (generation_start(g) == kStartUnknown) {
      // Announced by a grower that died before it settled the start.
      bool won = false;
      const std::uint64_t c = settle_start(g, won);
      if (c != GrowOutcome::kNoSequence) out.spare.push_back(c);
      continue;
    }
    if (current_geometry().first >= size) {
      out.grown = true;  // grown meanwhile, by another publisher
      return {};
    }
    if (g + 1 >= kMaxGenerations) {
      return fmt::format(
          "channel {} has grown {} times, the most a channel may; give it a max_message_size of at "
          "least {} where it is created",
          name_, g, size);
    }
    const std::uint64_t slot = std::min<std::uint64_t>(std::bit_ceil(size), max_grow_size_);
    const std::uint64_t stride = slot_stride_for(slot);
    // The slot count: the channel's, halved while the ring is over its
    // bound (the larger of its first ring and the smaller of 64 MiB and two
    // slots of max_grow_size), never below 2 nor below a live subscriber's
    // history.
    const std::uint64_t bound =
        std::max(capacity() * slot_stride_, std::min(kGrownRingBytes, 2 * slot_stride_for(max_grow_size_)));
    std::uint64_t cap = capacity();
    while (cap > 2 && cap * stride > bound) cap /= 2;
    std::uint64_t floor = 2;
    for (std::uint32_t i = 0; i < entries_used(true); ++i) {
      const EndpointEntry& e = subscribers_[i];
      if (endpoint_phase(e.state.load(std::memory_order_acquire)) != kEndpointLive) continue;
      floor = std::max<std::uint64_t>(floor, header_->subscriber_wants_slots[i].load(std::memory_order_relaxed));
    }
    cap = std::max(cap, std::bit_ceil(std::min(floor, capacity())));
    const RingGeometry rg = ring_geometry(cap, slot);
    const std::uint64_t used = ring_bytes(limits.domain);
    if (used + rg.total > limits.budget) {
      return fmt::format(
          "growing channel {} to {} slots of {} bytes needs {}, and the rings of domain \"{}\" already "
          "hold {} of its grow_budget of {}; raise grow_budget in the configuration, or give the "
          "channel a max_message_size of at least {} where it is created",
          name_, cap, slot, mib(rg.total), limits.domain, mib(used), mib(limits.budget), size);
    }
    const std::uint32_t next = g + 1;
    const std::string object = ring_object_name(domain_, name_, next);
    // A segment of that name is a dead grower's that it never announced.
    Segment::remove(object);
    Segment seg = Segment::create_or_open(object, rg.total, access_, kRingSpec, [&](void* base) {
      auto* h = static_cast<RingHeader*>(base);
      copy_name(h->channel, sizeof(h->channel), name_);
      h->generation = next;
      h->capacity = static_cast<std::uint32_t>(cap);
      h->max_message_size = static_cast<std::uint32_t>(slot);
      h->slot_stride = static_cast<std::uint32_t>(stride);
      h->claims_offset = rg.claims;
      h->slots_offset = rg.slots;
    });
    at(GrowPause::kCreated);
    GenerationRecord& rec = header_->generations[next];
    rec.capacity = static_cast<std::uint32_t>(cap);
    rec.max_message_size = static_cast<std::uint32_t>(slot);
    rec.start.store(kStartUnknown, std::memory_order_relaxed);
    // SYNC POINT WRITE (seq_cst): the record above before it (release), and
    // before our settling RMW in the total order ("Generations").
    header_->generation.store(next, std::memory_order_seq_cst);
    at(GrowPause::kAnnounced);
    bool won = false;
    const std::uint64_t c = settle_start(next, won);
    if (c != GrowOutcome::kNoSequence) (won ? out.first : out.spare.emplace_back()) = c;
    out.grown = true;
    return {};
  }
  return fmt::format("channel {} could not grow: its generations kept changing", name_);
}

}  // namespace shmbus::detail
