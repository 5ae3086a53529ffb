#pragma once
// Real child processes for multi-process tests: spawned with posix_spawn,
// their stdout captured, stopped with real signals. When the test that
// started one fails, what the child printed is kept under the build
// folder: test-logs/SUITE.TEST/PROGRAM-PID.log.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"

extern char** environ;

#ifndef SHMBUS_TEST_LOG_DIR
#define SHMBUS_TEST_LOG_DIR "test-logs"
#endif

namespace shmbus::test {

class ChildProcess {
 public:
  /// Starts `args`; its stdout (and stderr too, with `merge_stderr`) is
  /// captured. `env` entries ("NAME=value") are added to this environment.
  explicit ChildProcess(const std::vector<std::string>& args, bool merge_stderr = false,
                        const std::vector<std::string>& env = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    if (merge_stderr) ::posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    std::vector<char*> envp;
    // An entry of `env` replaces the inherited one of the same name (a
    // program reads the first, so the inherited would win).
    const auto overridden = [&](const char* entry) {
      const char* eq = std::strchr(entry, '=');
      const std::size_t n = eq == nullptr ? std::strlen(entry) : static_cast<std::size_t>(eq - entry) + 1;
      return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.compare(0, n, entry, n) == 0; });
    };
    for (char** e = environ; *e != nullptr; ++e) {
      if (!overridden(*e)) envp.push_back(*e);
    }
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
    if (rc != 0) throw std::runtime_error("posix_spawn " + args[0] + " failed");
    args_ = args;
    spawned_pid_ = pid_;
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_ >= 0) {
      drain(0);
      ::close(out_);
    }
    keep_log_if_failed();
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  /// Signals the child; nothing once it was waited for (pid -1 would be
  /// kill(-1): every process of the user).
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  /// Waits for the exit (SIGKILL after `timeout`); returns the wait status.
  /// Again after the exit: the same status (never waitpid(-1), which would
  /// reap another child, nor kill(-1)).
  int wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return exit_status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (true) {
      drain(10);
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out_ = true;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
    }
    pid_ = -1;
    exit_status_ = status;
    drain(0);
    return status;
  }

  /// Waits up to `timeout` until the child stops itself (SIGSTOP).
  bool wait_stopped(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      drain(5);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG | WUNTRACED) == pid_ && WIFSTOPPED(status)) return true;
    }
    return false;
  }

  [[nodiscard]] bool timed_out() const { return timed_out_; }
  /// Whether the child has ended (a crash included); reaps it if so, and
  /// wait() then returns its status.
  bool exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    exit_status_ = status;
    drain(0);
    return true;
  }
  /// Reads what the child printed so far (while it runs).
  const std::string& poll_output() {
    drain(0);
    return output_;
  }
  /// Waits up to `timeout` until the output contains `text`.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      drain(20);
      if (output_.find(text) != std::string::npos) return true;
    }
    return false;
  }
  [[nodiscard]] const std::string& output() const { return output_; }

  /// The key=value pairs of the last output line.
  [[nodiscard]] std::map<std::string, long long> fields() const {
    std::map<std::string, long long> f;
    std::string text = output_;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::istringstream line(text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
    std::string kv;
    while (line >> kv) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) f[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    }
    return f;
  }

 private:
  void drain(int timeout_ms) {
    pollfd p{out_, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
      char buf[4096];
      const ssize_t n = ::read(out_, buf, sizeof(buf));
      if (n <= 0) break;
      output_.append(buf, static_cast<std::size_t>(n));
      timeout_ms = 0;
    }
  }

  /// The child's command line and output, kept where a failed test's
  /// reader finds them (ctest shows the test's own output only).
  void keep_log_if_failed() const noexcept {
#ifndef SHMBUS_CHILD_PROCESS_WITHOUT_GTEST  // benchmarks: no test to fail
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    if (test == nullptr || !::testing::Test::HasFailure()) return;
    try {
      std::string name = std::string(test->test_suite_name()) + "." + test->name();
      std::replace(name.begin(), name.end(), '/', '_');  // parameterized tests: Suite/Test.Case/0
      const std::filesystem::path dir = std::filesystem::path(SHMBUS_TEST_LOG_DIR) / name;
      std::filesystem::create_directories(dir);
      const std::filesystem::path file =
          dir / (std::filesystem::path(args_.at(0)).filename().string() + "-" + std::to_string(spawned_pid_) + ".log");
      std::ofstream out(file);
      out << "$";
      for (const auto& a : args_) out << ' ' << a;
      out << "\n" << output_;
      std::fprintf(stderr, "output of %s (pid %d) kept in %s\n", args_.at(0).c_str(), static_cast<int>(spawned_pid_),
                   file.c_str());
    } catch (const std::exception&) {
      // a log that cannot be written never fails the test run itself
    }
#endif
  }

  std::vector<std::string> args_;
  pid_t spawned_pid_ = -1;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  int out_ = -1;
  bool timed_out_ = false;
  std::string output_;
};

/// Waits (up to 20 s) until `channel` shows `n` live subscribers.
inline void wait_for_subscribers(const std::string& domain, const std::string& channel, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (introspect::ChannelReader(domain, channel).view().subscribers.size() >= n) return;
    } catch (const Error&) {
      // not created yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  FAIL() << "subscribers did not register on " << channel;
}

/// Waits (up to 20 s) until every subscriber of the channel has delivered
/// or counted lost every sequence claimed so far. A test that asserts exact
/// loss counts publishes in lock-step with it: on a loaded machine a
/// descheduled subscriber is otherwise overrun, and its (rightly counted)
/// overrun losses would add to the ones under test.
inline void wait_until_caught_up(const introspect::ChannelReader& reader) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    const auto v = reader.view();
    // The ring's sequences include claims never committed (counted lost
    // when dead); iceoryx's chunks never sent are no messages: there, the
    // stamps (one per message sent) are what a subscriber must cover.
    const std::uint64_t sent = v.transport == Transport::kIceoryx ? v.stamps : v.messages;
    bool behind = false;
    for (const auto& s : v.subscribers) behind = behind || s.messages + s.lost < sent;
    if (!behind) return;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "a subscriber of " << v.name << " did not catch up with sequence " << v.messages;
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace shmbus::test
