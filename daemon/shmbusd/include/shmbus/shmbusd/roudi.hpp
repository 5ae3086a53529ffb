#pragma once
// `shmbusd --roudi`: runs iceoryx's RouDi (iox-roudi) beside the monitor,
// with the memory pools the shmbus configuration's iceoryx channels need,
// and starts it again if it exits.

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "shmbus/config.hpp"

namespace shmbus::shmbusd {

class RoudiSupervisor {
 public:
  /// Writes the pool configuration to `config_file` and starts iox-roudi;
  /// returns once RouDi answers. Error(kResource) when another RouDi
  /// already runs on this machine, or when it does not start within 10 s;
  /// Error(kNotFound) when iox-roudi is not installed.
  RoudiSupervisor(const Config& config, std::string config_file);
  /// Stops RouDi (SIGTERM, then SIGKILL after 5 s).
  ~RoudiSupervisor();
  RoudiSupervisor(const RoudiSupervisor&) = delete;
  RoudiSupervisor& operator=(const RoudiSupervisor&) = delete;

  /// Called every scan: when RouDi exited, logs it and starts it again, at
  /// most once per second. Processes attached to the old RouDi must be
  /// restarted (iceoryx 2.0 does not reconnect them).
  void check(std::int64_t now_ns);

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] std::uint64_t restarts() const noexcept { return restarts_; }

 private:
  void start();
  std::string file_;
  pid_t pid_ = 0;
  std::int64_t next_start_ns_ = 0;
  std::uint64_t restarts_ = 0;
};

}  // namespace shmbus::shmbusd
