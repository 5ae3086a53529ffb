#include "segment.hpp"

#include <fmt/format.h>
#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "process.hpp"
#include "shmbus/error.hpp"

namespace bip = boost::interprocess;

namespace shmbus::detail {

// Only the mapping is kept: the object's file descriptor is closed once the
// segment is mapped, so a process that maps thousands of channels (the
// daemon) does not run out of descriptors.
struct Segment::Impl {
  bip::mapped_region region;
};

Segment::Segment() = default;
Segment::~Segment() = default;
Segment::Segment(Segment&&) noexcept = default;
Segment& Segment::operator=(Segment&&) noexcept = default;

void* Segment::base() const noexcept { return impl_ ? impl_->region.get_address() : nullptr; }
std::size_t Segment::size() const noexcept { return impl_ ? impl_->region.get_size() : 0; }

namespace {

/// How long an opener waits for a creator that is alive but not done yet.
constexpr auto kInitWait = std::chrono::seconds(5);

/// Seconds since the object's inode last changed (creation or truncation).
double object_age_seconds(const std::string& name) {
  struct stat st {};
  if (::stat(("/dev/shm/" + name).c_str(), &st) != 0) return 0;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec - st.st_ctim.tv_sec) +
         static_cast<double>(now.tv_nsec - st.st_ctim.tv_nsec) / 1e9;
}

const char* kind_name(layout::SegmentKind k) { return k == layout::SegmentKind::kRegistry ? "registry" : "channel"; }

[[noreturn]] void refuse(const std::string& name, const std::string& what) {
  throw Error(Errc::kLayoutMismatch,
              fmt::format("shared-memory segment /dev/shm/{} {}; if no process uses it, remove it with "
                          "`shmtool clean` (or rm /dev/shm/{})",
                          name, what, name));
}

void validate(const std::string& name, const layout::SegmentHeader& h, std::size_t mapped, SegmentSpec spec) {
  if (h.magic != layout::kMagic) refuse(name, fmt::format("has magic {:#018x}, not a shmbus segment", h.magic));
  if (h.layout_version != layout::kLayoutVersion) {
    refuse(name, fmt::format("has layout version {}, this build uses {}", h.layout_version, layout::kLayoutVersion));
  }
  if (h.kind != static_cast<std::uint32_t>(spec.kind)) {
    refuse(name, fmt::format("is a segment of kind {}, expected a {}", h.kind, kind_name(spec.kind)));
  }
  if (h.layout_hash != spec.layout_hash) {
    refuse(name, fmt::format("has layout hash {:016x}, this build uses {:016x} (built from other sources)",
                             h.layout_hash, spec.layout_hash));
  }
  if (h.total_size != mapped) {
    refuse(name, fmt::format("is {} bytes but its header says {} (truncated or corrupt)", mapped, h.total_size));
  }
}

}  // namespace

Segment Segment::open(const std::string& name, SegmentSpec spec, bool writable) {
  Segment s;
  s.name_ = name;
  auto impl = std::make_unique<Impl>();
  const auto mode = writable ? bip::read_write : bip::read_only;
  bip::shared_memory_object object;
  try {
    object = bip::shared_memory_object(bip::open_only, name.c_str(), mode);
  } catch (const bip::interprocess_exception& e) {
    if (e.get_error_code() == bip::not_found_error) {
      throw Error(Errc::kNotFound, fmt::format("shared-memory segment /dev/shm/{} does not exist", name));
    }
    throw Error(Errc::kResource, fmt::format("cannot open /dev/shm/{}: {}; check its permissions", name, e.what()));
  }
  // A creator that won the race may not have sized the object yet; give it
  // the same bounded time as for initialisation, but only while the object
  // is young enough to have a creator still at work.
  const auto give_up = std::chrono::steady_clock::now() + kInitWait;
  bip::offset_t size = 0;
  while (true) {
    object.get_size(size);
    if (static_cast<std::size_t>(size) >= sizeof(layout::SegmentHeader)) break;
    if (std::chrono::steady_clock::now() > give_up || object_age_seconds(name) > 1.0) {
      refuse(name, fmt::format("is {} bytes, smaller than a segment header (truncated)", size));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  try {
    impl->region = bip::mapped_region(object, mode);
  } catch (const bip::interprocess_exception& e) {
    throw Error(Errc::kResource, fmt::format("cannot map /dev/shm/{}: {}", name, e.what()));
  }
  auto* h = static_cast<layout::SegmentHeader*>(impl->region.get_address());
  for (;;) {
    // SYNC POINT READ: pairs with the creator's release store of kReady.
    // One load per round: the state may turn ready between two loads.
    const std::uint32_t state = h->init_state.load(std::memory_order_acquire);
    if (state == layout::kReady) break;
    if (state != layout::kInitializing) {
      refuse(name, fmt::format("has init state {}, neither initialising nor ready (corrupt)", state));
    }
    // The creator writes its pid and start time before kReady, while we may
    // read them: a torn or zero read only delays the verdict by a round
    // (pid 0 is "not known yet"); the values are final once written.
    const std::uint32_t creator = h->creator_pid;
    const bool creator_dead = creator != 0 && !process_alive(static_cast<pid_t>(creator), h->creator_start_time);
    if (creator_dead || std::chrono::steady_clock::now() > give_up) {
      if (creator == 0) refuse(name, "has no shmbus header (corrupt, or not a shmbus segment)");
      refuse(name, fmt::format("was left half-initialised by pid {}", creator));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  validate(name, *h, impl->region.get_size(), spec);
  s.impl_ = std::move(impl);
  return s;
}

Segment Segment::create_or_open(const std::string& name, std::size_t size, std::uint32_t mode, SegmentSpec spec,
                                const std::function<void(void*)>& init, bool& created) {
  auto impl = std::make_unique<Impl>();
  bip::permissions perms(static_cast<int>(mode & 07777U));
  bip::shared_memory_object object;
  try {
    object = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perms);
  } catch (const bip::interprocess_exception& e) {
    if (e.get_error_code() == bip::already_exists_error) {
      created = false;
      return open(name, spec, true);
    }
    throw Error(Errc::kResource, fmt::format("cannot create /dev/shm/{}: {}", name, e.what()));
  }
  created = true;
  try {
    object.truncate(static_cast<bip::offset_t>(size));
    impl->region = bip::mapped_region(object, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    bip::shared_memory_object::remove(name.c_str());
    throw Error(Errc::kResource,
                fmt::format("cannot size /dev/shm/{} to {} bytes: {}; is /dev/shm full?", name, size, e.what()));
  }
  auto* h = static_cast<layout::SegmentHeader*>(impl->region.get_address());
  h->creator_pid = static_cast<std::uint32_t>(self_pid());
  h->creator_start_time = self_start_time();
  init(impl->region.get_address());
  h->magic = layout::kMagic;
  h->layout_version = layout::kLayoutVersion;
  h->kind = static_cast<std::uint32_t>(spec.kind);
  h->layout_hash = spec.layout_hash;
  h->total_size = size;
  // SYNC POINT WRITE: everything above is visible to an opener that loads
  // kReady with acquire.
  h->init_state.store(layout::kReady, std::memory_order_release);
  Segment s;
  s.name_ = name;
  s.impl_ = std::move(impl);
  return s;
}

bool Segment::remove(const std::string& name) noexcept { return bip::shared_memory_object::remove(name.c_str()); }

}  // namespace shmbus::detail
