#pragma once
// Process identity and liveness (the clocks are shmbus/clock.hpp).

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/clock.hpp"

namespace shmbus::detail {

using shmbus::mono_now_ns;
using shmbus::wall_now_ns;

/// The start time of `pid` in clock ticks since boot (/proc/PID/stat field
/// 22), or 0 when there is no such process. With the pid it names a process
/// uniquely: a reused pid has a later start time.
std::uint64_t process_start_time(pid_t pid) noexcept;

/// This process's pid and start time, read once.
pid_t self_pid() noexcept;
std::uint64_t self_start_time() noexcept;

/// The inode of this process's pid namespace (/proc/self/ns/pid), 0 when
/// it cannot be read. Pids are only comparable inside one namespace.
std::uint64_t self_pid_ns() noexcept;

/// False only when `pid` is known to be gone: no such process, a zombie,
/// or (when `start_time` is non-zero) a later process that reused the pid.
/// Whatever cannot be known counts as alive: a pid of another namespace
/// (`pid_ns` non-zero and not ours), kill() refused with EPERM while /proc
/// hides the process (hidepid), /proc unreadable. Acting on a live process
/// as if it were dead corrupts; waiting on a dead one as if it lived only
/// costs time, bounded elsewhere.
bool process_alive(pid_t pid, std::uint64_t start_time = 0, std::uint64_t pid_ns = 0) noexcept;

/// This process's owner word (layout/segment_layout.hpp) with `phase`:
/// what a claim CASes into an endpoint entry or a registry record.
std::uint64_t self_owner_word(std::uint64_t phase) noexcept;

/// process_alive() of the process an owner word names.
bool owner_alive(std::uint64_t owner_word, std::uint64_t pid_ns = 0) noexcept;

/// Watches the threads of one process for a pass through the scheduler:
/// the heavy side of an asymmetric fence for a process that cannot use
/// membarrier. A thread seen off its CPU twice with the same count of
/// context switches, or whose count changed, or that ended, has been
/// switched out since the first look; the switch is a full barrier, so its
/// stores from before the first look are visible now, and its loads after
/// it see ours from before the first look (what membarrier's GLOBAL command
/// waits for, seen through /proc/PID/task/TID/status).
class SchedulerPass {
 public:
  explicit SchedulerPass(pid_t pid) noexcept : pid_(pid) {}
  /// True once every thread of the process seen at the first call has
  /// passed; false until then, and whenever /proc cannot tell (another pid
  /// namespace, hidepid). The first call only looks.
  bool passed() noexcept;

 private:
  struct Thread {
    int tid;
    std::uint64_t switches;
    bool off_cpu;
  };
  pid_t pid_;
  bool looked_ = false;
  std::vector<Thread> waiting_;  ///< threads not seen to pass yet
};

/// This program's name (/proc/self/comm), the default node name.
std::string program_name();

/// The group id of group `name` (getgrnam_r: safe with other threads), or
/// nullopt when the system has no such group.
std::optional<gid_t> group_id(const std::string& name);

/// The login name of `uid` (getpwuid_r), or the number when it has none.
std::string user_name(uid_t uid);

}  // namespace shmbus::detail
