#include "segment.hpp"

#include <fmt/format.h>
#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <system_error>
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
  dev_t dev = 0;
  ino_t ino = 0;
  Residency residency = Residency::kPopulated;
};

Segment::Segment() = default;
Segment::~Segment() = default;
Segment::Segment(Segment&&) noexcept = default;
Segment& Segment::operator=(Segment&&) noexcept = default;

void* Segment::base() const noexcept { return impl_ ? impl_->region.get_address() : nullptr; }
std::size_t Segment::size() const noexcept { return impl_ ? impl_->region.get_size() : 0; }

void Segment::keep_front(std::size_t bytes) noexcept {
  if (!impl_ || impl_->residency != Residency::kOnTouch) return;
  const std::size_t page = bip::mapped_region::get_page_size();
  const std::size_t keep = (bytes + page - 1) / page * page;
  if (keep == 0 || keep >= size()) return;
  // The region munmaps the tail and keeps its own size in step, so its
  // destructor unmaps only what is still ours.
  impl_->region.shrink_by(size() - keep, true);
}

namespace {

/// How long an opener waits for a creator that is alive but not done yet.
constexpr auto kInitWait = std::chrono::seconds(5);
/// Every mapping fills its page table when it is made (MAP_POPULATE): the
/// first pass of a publisher or subscriber through a ring takes no page
/// faults (65,536 of them for a ring of 256 1 MiB slots, about 10 us each
/// on the CI machine kind), which real-time code cannot afford in its loop.
constexpr int kMapOptions = MAP_POPULATE;

/// Seconds since the object's inode last changed (creation or truncation).
double object_age_seconds(const std::string& name) {
  struct stat st {};
  if (::stat(("/dev/shm/" + name).c_str(), &st) != 0) return 0;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec - st.st_ctim.tv_sec) +
         static_cast<double>(now.tv_nsec - st.st_ctim.tv_nsec) / 1e9;
}

const char* kind_name(layout::SegmentKind k) {
  switch (k) {
    case layout::SegmentKind::kRegistry:
      return "registry";
    case layout::SegmentKind::kChannel:
      return "channel";
    case layout::SegmentKind::kRing:
      return "ring";
  }
  return "segment";
}

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

/// Refuses a segment that another user owns (unless `access` names its
/// group) or whose mode grants more than `access.mode`.
void check_access(const std::string& name, const struct stat& st, const SegmentAccess& access) {
  const unsigned mode = st.st_mode & 07777U;
  bool owner_ok = st.st_uid == ::geteuid();
  if (!owner_ok && !access.group.empty()) {
    const std::optional<gid_t> gid = group_id(access.group);
    owner_ok = gid && st.st_gid == *gid;
  }
  const unsigned extra = mode & ~access.mode & 07777U;
  if (owner_ok && extra == 0) return;
  const std::string fix = owner_ok ? fmt::format(
                                         "the configuration allows at most mode {:04o}; remove it (rm /dev/shm/{}) "
                                         "if it is not yours, or raise `mode`",
                                         access.mode, name)
                                   : fmt::format(
                                         "another user may have planted it; remove it (rm /dev/shm/{}) if it is "
                                         "not yours, or set `group` in the configuration to share segments",
                                         name);
  throw Error(Errc::kPermission,
              fmt::format("refusing shared-memory segment /dev/shm/{}: owner {} (uid {}), group {}, mode {:04o}, but "
                          "this process runs as uid {}{}; {}",
                          name, user_name(st.st_uid), st.st_uid, st.st_gid, mode, ::geteuid(),
                          access.group.empty() ? "" : fmt::format(" accepting group {}", access.group), fix));
}

/// Removes `name` when it is still the object behind `fd`, under an
/// exclusive flock on that object: two processes recovering the same
/// abandoned object never remove the fresh one the other created.
void remove_if_same(const std::string& name, int fd) {
  if (::flock(fd, LOCK_EX) != 0) return;
  struct stat held {};
  struct stat now {};
  if (::fstat(fd, &held) == 0 && ::stat(("/dev/shm/" + name).c_str(), &now) == 0 && held.st_ino == now.st_ino &&
      held.st_dev == now.st_dev) {
    bip::shared_memory_object::remove(name.c_str());
  }
  ::flock(fd, LOCK_UN);
}

}  // namespace

Segment Segment::open(const std::string& name, SegmentSpec spec, bool writable, const SegmentAccess& access,
                      Residency residency) {
  return open_object(name, spec, writable, access, false, residency);
}

bool Segment::replaced() const noexcept {
  if (!impl_) return true;
  struct stat st {};
  if (::stat(("/dev/shm/" + name_).c_str(), &st) != 0) return true;
  return st.st_ino != impl_->ino || st.st_dev != impl_->dev;
}

Segment Segment::open_object(const std::string& name, SegmentSpec spec, bool writable, const SegmentAccess& access,
                             bool recover, Residency residency) {
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
  const int fd = object.get_mapping_handle().handle;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(Errc::kResource, fmt::format("cannot stat /dev/shm/{}", name));
  check_access(name, st, access);
  impl->dev = st.st_dev;
  impl->ino = st.st_ino;
  // Removes an object its creator abandoned, for the caller to create anew.
  auto abandon = [&](const std::string& why) {
    if (!recover) refuse(name, why);
    remove_if_same(name, fd);
    throw Error(Errc::kNotFound, fmt::format("shared-memory segment /dev/shm/{} was abandoned", name));
  };
  // A creator that won the race may not have sized the object yet; give it
  // the same bounded time as for initialisation, but only while the object
  // is young enough to have a creator still at work.
  const auto give_up = std::chrono::steady_clock::now() + kInitWait;
  bip::offset_t size = 0;
  while (true) {
    object.get_size(size);
    if (static_cast<std::size_t>(size) >= sizeof(layout::SegmentHeader)) break;
    if (std::chrono::steady_clock::now() > give_up || object_age_seconds(name) > 1.0) {
      abandon(fmt::format("is {} bytes, smaller than a segment header (truncated)", size));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  try {
    impl->region =
        bip::mapped_region(object, mode, 0, 0, nullptr, residency == Residency::kPopulated ? kMapOptions : 0);
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
    const bool creator_dead =
        creator != 0 && !process_alive(static_cast<pid_t>(creator), h->creator_start_time, h->creator_pid_ns);
    if (creator_dead) abandon(fmt::format("was left half-initialised by pid {}, which died", creator));
    if (std::chrono::steady_clock::now() > give_up) {
      if (creator == 0) refuse(name, "has no shmbus header (corrupt, or not a shmbus segment)");
      refuse(name, fmt::format("is still being initialised by pid {} after {} s", creator, kInitWait.count()));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  validate(name, *h, impl->region.get_size(), spec);
  impl->residency = residency;
  s.impl_ = std::move(impl);
  return s;
}

Segment Segment::create_or_open(const std::string& name, std::size_t size, const SegmentAccess& access,
                                SegmentSpec spec, const std::function<void(void*)>& init) {
  // A few rounds: each ends in a segment, or in the removal of an abandoned
  // one (which another recoverer may race to re-create: then we open it).
  for (int round = 0;; ++round) {
    auto impl = std::make_unique<Impl>();
    bip::permissions perms(static_cast<int>(access.mode & 07777U));
    bip::shared_memory_object object;
    try {
      object = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perms);
    } catch (const bip::interprocess_exception& e) {
      if (e.get_error_code() != bip::already_exists_error) {
        throw Error(Errc::kResource, fmt::format("cannot create /dev/shm/{}: {}", name, e.what()));
      }
      try {
        return open_object(name, spec, true, access, round < 3, Residency::kPopulated);
      } catch (const Error& opened) {
        if (opened.code() == Errc::kNotFound && round < 3) continue;  // removed meanwhile: create it
        throw;
      }
    }
    const int fd = object.get_mapping_handle().handle;
    // The mode without the umask, and the configured group.
    ::fchmod(fd, static_cast<mode_t>(access.mode & 07777U));
    if (!access.group.empty()) {
      if (const std::optional<gid_t> gid = group_id(access.group)) {
        if (::fchown(fd, static_cast<uid_t>(-1), *gid) != 0) {
          bip::shared_memory_object::remove(name.c_str());
          throw Error(Errc::kPermission, fmt::format("cannot give /dev/shm/{} to group {}: this user is not in "
                                                     "it; add it (usermod -aG {} USER) or change `group`",
                                                     name, access.group, access.group));
        }
      }
    }
    struct stat st {};
    ::fstat(fd, &st);
    impl->dev = st.st_dev;
    impl->ino = st.st_ino;
    try {
      object.truncate(static_cast<bip::offset_t>(size));
      // Every page is allocated now: a full /dev/shm fails here, with one
      // line, not with a SIGBUS at a publisher's first write into a page
      // tmpfs cannot back; and no publish pays for a page's allocation.
      if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size)); err != 0) {
        throw bip::interprocess_exception(std::system_category().message(err).c_str());
      }
      impl->region = bip::mapped_region(object, bip::read_write, 0, 0, nullptr, kMapOptions);
    } catch (const bip::interprocess_exception& e) {
      bip::shared_memory_object::remove(name.c_str());
      throw Error(Errc::kResource,
                  fmt::format("cannot size /dev/shm/{} to {} bytes: {}; is /dev/shm full?", name, size, e.what()));
    }
    auto* h = static_cast<layout::SegmentHeader*>(impl->region.get_address());
    h->creator_pid = static_cast<std::uint32_t>(self_pid());
    h->creator_start_time = self_start_time();
    h->creator_pid_ns = self_pid_ns();
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
}

bool Segment::remove(const std::string& name) noexcept { return bip::shared_memory_object::remove(name.c_str()); }

bool Segment::exists(const std::string& name) noexcept {
  struct stat st {};
  return ::stat(("/dev/shm/" + name).c_str(), &st) == 0;
}

}  // namespace shmbus::detail
