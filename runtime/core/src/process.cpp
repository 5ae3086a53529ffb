#include "process.hpp"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "layout/segment_layout.hpp"

namespace shmbus::detail {

namespace {

/// State letter (field 3) and start time (field 22) of the process: of its
/// main thread, /proc/PID/task/PID/stat, whose start time is the process's.
/// Not /proc/PID/stat: qemu-user (an arm64 container on an x86-64 machine)
/// answers a process's reads of its own /proc/PID/stat with a stat it
/// makes up, each thread its own start time, so the start times a process
/// wrote into its endpoints matched no other reader's (every endpoint of
/// another thread or process looked dead, and was reclaimed under it).
struct ProcStat {
  char state = 0;
  std::uint64_t start_time = 0;
};

bool read_proc_stat(pid_t pid, ProcStat& out) noexcept {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", static_cast<int>(pid), static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces or
  // parentheses; the fields after it start past the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') return false;
  out.state = p[2];
  int field = 2;
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  if (field != 22) return false;
  out.start_time = std::strtoull(p, nullptr, 10);
  return true;
}

/// A thread's state letter and its context switches (voluntary and not),
/// from /proc/PID/task/TID/status.
bool read_thread_status(pid_t pid, int tid, char& state, std::uint64_t& switches) noexcept {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task/%d/status", static_cast<int>(pid), tid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char line[256];
  int found = 0;
  switches = 0;
  while (found < 3 && std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "State:", 6) == 0) {
      const char* p = line + 6;
      while (*p == ' ' || *p == '\t') ++p;
      state = *p;
      ++found;
    } else if (std::strncmp(line, "voluntary_ctxt_switches:", 24) == 0) {
      switches += std::strtoull(line + 24, nullptr, 10);
      ++found;
    } else if (std::strncmp(line, "nonvoluntary_ctxt_switches:", 27) == 0) {
      switches += std::strtoull(line + 27, nullptr, 10);
      ++found;
    }
  }
  std::fclose(f);
  return found == 3;
}

}  // namespace

bool SchedulerPass::passed() noexcept {
  if (!looked_) {
    looked_ = true;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid_));
    DIR* dir = ::opendir(path);
    if (dir == nullptr) return false;
    while (const dirent* d = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): our own DIR
      char* end = nullptr;
      const long tid_number = std::strtol(d->d_name, &end, 10);
      if (end == d->d_name || *end != '\0' || tid_number <= 0 || tid_number > INT_MAX) continue;  // "." and ".."
      const int tid = static_cast<int>(tid_number);
      Thread t{tid, 0, false};
      char state = 0;
      if (read_thread_status(pid_, tid, state, t.switches)) {
        t.off_cpu = state != 'R';
        waiting_.push_back(t);
      }
    }
    ::closedir(dir);
    looked_ = !waiting_.empty();  // nothing readable: look again next time
    return false;
  }
  std::erase_if(waiting_, [this](const Thread& t) {
    char state = 0;
    std::uint64_t switches = 0;
    if (!read_thread_status(pid_, t.tid, state, switches)) return true;  // ended
    return switches != t.switches || (t.off_cpu && state != 'R');
  });
  return waiting_.empty();
}

std::uint64_t process_start_time(pid_t pid) noexcept {
  ProcStat st;
  return read_proc_stat(pid, st) ? st.start_time : 0;
}

pid_t self_pid() noexcept {
  // Not cached across fork: a forked child must report its own pid.
  return ::getpid();
}

std::uint64_t self_start_time() noexcept {
  thread_local pid_t cached_pid = 0;
  thread_local std::uint64_t cached = 0;
  const pid_t pid = ::getpid();
  if (pid != cached_pid) {
    cached = process_start_time(pid);
    cached_pid = pid;
  }
  return cached;
}

std::uint64_t self_pid_ns() noexcept {
  static const std::uint64_t ns = [] {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
  }();
  return ns;
}

bool process_alive(pid_t pid, std::uint64_t start_time, std::uint64_t pid_ns) noexcept {
  if (pid <= 0) return false;
  const std::uint64_t own_ns = self_pid_ns();
  if (pid_ns != 0 && own_ns != 0 && pid_ns != own_ns) return true;  // another namespace: cannot know
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A killed process that its parent has not reaped yet is a zombie: it
  // will never write again, so it counts as dead.
  ProcStat st;
  if (!read_proc_stat(pid, st)) return true;  // exists (kill said so) but hidden: cannot know
  if (st.state == 'Z' || st.state == 'X') return false;
  // Compared in the 40 bits an owner word keeps.
  return start_time == 0 || (st.start_time & layout::kOwnerStartMask) == (start_time & layout::kOwnerStartMask);
}

std::uint64_t self_owner_word(std::uint64_t phase) noexcept {
  return layout::owner_word(static_cast<std::uint32_t>(self_pid()), self_start_time(), phase);
}

bool owner_alive(std::uint64_t word, std::uint64_t pid_ns) noexcept {
  return process_alive(static_cast<pid_t>(layout::owner_pid(word)), layout::owner_start_time(word), pid_ns);
}

std::string program_name() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name.empty() ? std::string{"process"} : name;
}

namespace {

/// The buffer size the *_r lookups ask for, with a floor for systems that
/// do not say.
std::size_t lookup_buffer_size(int name) {
  const long n = ::sysconf(name);
  return n > 0 ? static_cast<std::size_t>(n) : 16384;
}

}  // namespace

std::optional<gid_t> group_id(const std::string& name) {
  std::vector<char> buf(lookup_buffer_size(_SC_GETGR_R_SIZE_MAX));
  group g{};
  group* found = nullptr;
  while (::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) == ERANGE) buf.resize(buf.size() * 2);
  if (found == nullptr) return std::nullopt;
  return found->gr_gid;
}

std::string user_name(uid_t uid) {
  std::vector<char> buf(lookup_buffer_size(_SC_GETPW_R_SIZE_MAX));
  passwd p{};
  passwd* found = nullptr;
  while (::getpwuid_r(uid, &p, buf.data(), buf.size(), &found) == ERANGE) buf.resize(buf.size() * 2);
  return found != nullptr ? std::string{found->pw_name} : std::to_string(uid);
}

}  // namespace shmbus::detail
