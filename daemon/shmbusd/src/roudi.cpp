#include "shmbus/shmbusd/roudi.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/iceoryx.hpp"

namespace shmbus::shmbusd {

namespace {

constexpr int kExecFailed = 127;

/// Waits up to `timeout_ms` for `pid` to exit; true when it did.
bool reaped(pid_t pid, int timeout_ms, int& status) {
  for (int i = 0; i <= timeout_ms / 10; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

RoudiSupervisor::RoudiSupervisor(const Config& config, std::string config_file) : file_(std::move(config_file)) {
  if (iceoryx::roudi_running()) {
    throw Error(Errc::kResource,
                "--roudi: a RouDi already runs on this machine (its socket /tmp/roudi answers); stop it, or run "
                "shmbusd without --roudi and let that RouDi serve");
  }
  std::ofstream out(file_);
  out << iceoryx::roudi_config(config);
  if (!out.flush()) {
    throw Error(Errc::kResource, fmt::format("--roudi: cannot write RouDi's configuration to {}", file_));
  }
  start();
  for (int i = 0; i < 1000 && !iceoryx::roudi_running(); ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      if (WIFEXITED(status) && WEXITSTATUS(status) == kExecFailed) {
        throw Error(Errc::kNotFound, "--roudi: iox-roudi is not installed; install Debian's iceoryx package");
      }
      throw Error(Errc::kResource,
                  fmt::format("--roudi: iox-roudi exited at start (status {}); run `iox-roudi -c {}` to see why",
                              status, file_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!iceoryx::roudi_running()) {
    throw Error(Errc::kResource, "--roudi: iox-roudi did not answer within 10 s");
  }
  spdlog::info("RouDi (iox-roudi, pid {}) serves the iceoryx channels, pools from {}", pid_, file_);
}

void RoudiSupervisor::start() {
  pid_ = ::fork();
  if (pid_ < 0) {
    pid_ = 0;
    throw Error(Errc::kResource, "--roudi: fork failed");
  }
  if (pid_ == 0) {
    // The child: RouDi logs warnings and errors to shmbusd's stderr (the
    // journal under systemd). Signals shmbusd blocked are unblocked.
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execlp("iox-roudi", "iox-roudi", "-c", file_.c_str(), "-l", "warning", nullptr);
    ::_exit(kExecFailed);
  }
}

void RoudiSupervisor::check(std::int64_t now_ns) {
  if (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return;
    spdlog::error(
        "RouDi (pid {}) exited ({}); starting it again. Processes using iceoryx channels must be "
        "restarted: iceoryx does not reconnect them",
        pid_,
        WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                            : fmt::format("status {}", WEXITSTATUS(status)));
    pid_ = 0;
  }
  if (now_ns < next_start_ns_) return;
  next_start_ns_ = now_ns + 1'000'000'000;
  ++restarts_;
  start();
}

RoudiSupervisor::~RoudiSupervisor() {
  std::remove(file_.c_str());
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  if (!reaped(pid_, 5000, status)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
}

}  // namespace shmbus::shmbusd
