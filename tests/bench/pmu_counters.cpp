#include "pmu_counters.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace shmbus::bench {
namespace {

struct EventSpec {
  std::uint32_t type;
  std::uint64_t config;
};

constexpr std::array<EventSpec, PmuCounters::kCount> kHardware{{
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                             (static_cast<std::uint64_t>(PERF_COUNT_HW_CACHE_RESULT_MISS) << 16)},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
}};
constexpr std::array<EventSpec, PmuCounters::kCount> kSoftware{{
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
}};

int open_event(const EventSpec& e, int group) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = e.type;
  attr.config = e.config;
  if (group < 0) attr.disabled = 1;  // the leader starts the group
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, group, 0));
}

std::string paranoid_level() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  std::string level;
  f >> level;
  return level.empty() ? "unknown" : level;
}

}  // namespace

std::array<const char*, PmuCounters::kCount> PmuCounters::names(Kind kind) noexcept {
  if (kind == Kind::kSoftware) return {"task-clock ns", "ctx switches", "page faults"};
  return {"cycles", "L1D misses", "LLC misses"};
}

PmuCounters::PmuCounters(Kind kind) {
  const auto& events = kind == Kind::kSoftware ? kSoftware : kHardware;
  for (std::size_t i = 0; i < kCount; ++i) {
    const int fd = open_event(events[i], i == 0 ? -1 : fds_[0]);
    if (fd >= 0) {
      fds_[i] = fd;
      continue;
    }
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      error_ = std::string("perf_event_open is not allowed here (") + std::strerror(err) +
               ", kernel.perf_event_paranoid = " + paranoid_level() + "); run as root or set it to 2 or lower";
    } else {
      error_ = std::string("this machine has no usable performance counters for ") + names(kind)[i] +
               " (perf_event_open: " + std::strerror(err) +
               "); run on bare metal or in a VM with a virtual PMU (a guest's dmesg says \"PMU not available\" "
               "when it has none)";
    }
    for (int& open : fds_) {
      if (open >= 0) ::close(open);
      open = -1;
    }
    return;
  }
}

PmuCounters::~PmuCounters() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void PmuCounters::start() noexcept {
  if (!ok()) return;
  ::ioctl(fds_[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
  ::ioctl(fds_[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

void PmuCounters::stop() noexcept {
  if (ok()) ::ioctl(fds_[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
}

std::array<std::uint64_t, PmuCounters::kCount> PmuCounters::values() const noexcept {
  std::array<std::uint64_t, kCount> out{};
  if (!ok()) return out;
  // PERF_FORMAT_GROUP with both times: nr, time_enabled, time_running, values.
  std::array<std::uint64_t, 3 + kCount> buf{};
  if (::read(fds_[0], buf.data(), sizeof(buf)) != static_cast<ssize_t>(sizeof(buf)) || buf[0] != kCount) return out;
  const std::uint64_t enabled = buf[1];
  const std::uint64_t running = buf[2];
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::uint64_t v = buf[3 + i];
    out[i] = running == 0 || running == enabled
                 ? v
                 : static_cast<std::uint64_t>(static_cast<double>(v) * static_cast<double>(enabled) /
                                              static_cast<double>(running));
  }
  return out;
}

}  // namespace shmbus::bench
