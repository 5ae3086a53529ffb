#pragma once
// Running the real shmtool from tests: to its end (exit code, stdout,
// stderr), or in the background as a ChildProcess; a domain removed at the
// end of a test; refusals checked for their one line.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "support/test_domain.hpp"

namespace shmbus::test::tool {

using namespace std::chrono_literals;
using nlohmann::json;

inline const std::string kTool = SHMTOOL_PATH;

/// A finished run: exit code and both streams.
struct ToolRun {
  int code = -1;
  std::string out;
  std::string err;
  [[nodiscard]] std::size_t err_lines() const {
    return static_cast<std::size_t>(std::count(err.begin(), err.end(), '\n'));
  }
};

/// Runs shmtool with `args` to its end (killed after 30 s).
inline ToolRun shmtool(const std::vector<std::string>& args) {
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<std::string> all{kTool};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, kTool.c_str(), &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn shmtool failed");
  ToolRun r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  int open = 2;
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  if (open > 0) ::kill(pid, SIGKILL);
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Every line of `text` parsed as JSON.
inline std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

inline std::vector<std::string> tool_args(std::vector<std::string> args, const std::string& domain) {
  args.push_back("--domain");
  args.push_back(domain);
  return args;
}

/// A long-running shmtool (pub, echo, hz, top) with its stdout (and, with
/// `merge_stderr`, its stderr) captured.
inline std::unique_ptr<ChildProcess> start_tool(std::vector<std::string> args, const std::string& domain,
                                                bool merge_stderr = false) {
  std::vector<std::string> all{kTool};
  for (auto& a : tool_args(std::move(args), domain)) all.push_back(std::move(a));
  return std::make_unique<ChildProcess>(all, merge_stderr);
}

/// Waits until `channel` has at least one stamp in its time list.
inline void wait_for_stamps(const std::string& domain, const std::string& channel, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (shmbus::introspect::ChannelReader(domain, channel).view().stamps >= n) return;
    } catch (const shmbus::Error&) {
      // not created yet
    }
    std::this_thread::sleep_for(5ms);
  }
  FAIL() << channel << " got no " << n << " publishes";
}

inline bool exited_zero(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

/// The rate the stamps of `channel`'s last `window` really give, f =
/// (n-1)/(Tn-T1): what a rate a tool reported a moment ago is compared
/// with (a busy machine may run a publisher late; its nominal rate is then
/// not what happened).
inline double stamped_rate(const std::string& domain, const std::string& channel,
                           std::chrono::nanoseconds window = 1s) {
  shmbus::introspect::TimeListSnapshot snap;
  shmbus::introspect::ChannelReader(domain, channel).snapshot(snap);
  const std::int64_t now = shmbus::mono_now_ns();
  std::vector<std::int64_t> in;
  for (const std::int64_t t : snap.stamps) {
    if (t > now - window.count() && t <= now) in.push_back(t);
  }
  if (in.size() < 2) return 0;
  return static_cast<double>(in.size() - 1) * 1e9 / static_cast<double>(in.back() - in.front());
}

/// A command shmtool must refuse: its exit code and what its one stderr
/// line must name.
struct Refusal {
  std::vector<std::string> args;
  int code;
  std::string needle;
};

inline void expect_refused(const std::vector<Refusal>& cases, const std::string& domain) {
  for (const Refusal& c : cases) {
    const ToolRun r = shmtool(tool_args(c.args, domain));
    SCOPED_TRACE(c.args.front() + " " + (c.args.size() > 1 ? c.args[1] : "") + ": " + r.err);
    EXPECT_EQ(r.code, c.code);
    EXPECT_EQ(r.err_lines(), 1U);
    EXPECT_NE(r.err.find(c.needle), std::string::npos);
    EXPECT_EQ(r.err.rfind("shmtool", 0), 0U);
  }
}

/// Removes the test's domain at the end, whatever the test left.
struct DomainGuard {
  std::string name = shmbus::test::unique_domain("tool");
  ~DomainGuard() { shmbus::introspect::clean_domain(name, false); }
};

/// shmtool on a pseudo-terminal (what a person at a terminal sees): keys
/// go in with key(), the screen accumulates in `screen`.
class ToolOnPty {
 public:
  /// Starts shmtool with `args` (the --domain added) on a new terminal.
  ToolOnPty(std::vector<std::string> args, const std::string& domain) {
    std::vector<std::string> all{kTool};
    for (auto& a : tool_args(std::move(args), domain)) all.push_back(std::move(a));
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ < 0) throw std::runtime_error("forkpty failed");
    if (pid_ == 0) {
      ::execv(kTool.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~ToolOnPty() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  ToolOnPty(const ToolOnPty&) = delete;
  ToolOnPty& operator=(const ToolOnPty&) = delete;

  /// Reads what the program writes for `t`.
  void read_for(std::chrono::milliseconds t) {
    const auto deadline = std::chrono::steady_clock::now() + t;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = ::read(master_, buf, sizeof(buf));
        if (n <= 0) break;
        screen.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  /// Reads until `what` is on the screen; bounded, so a loaded machine is
  /// waited for and a broken program still fails.
  bool read_until(const std::string& what, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (screen.find(what) == std::string::npos && std::chrono::steady_clock::now() < deadline) read_for(50ms);
    return screen.find(what) != std::string::npos;
  }
  /// Types `keys`.
  bool key(const std::string& keys) const {
    return ::write(master_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size());
  }
  /// Waits for the program's end (reading on), up to `timeout`; its wait
  /// status (SIGKILLed after the timeout).
  int wait(std::chrono::milliseconds timeout) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      read_for(50ms);
    }
    pid_ = -1;
    return status;
  }

  std::string screen;

 private:
  pid_t pid_ = -1;
  int master_ = -1;
};

}  // namespace shmbus::test::tool
