#pragma once
// RouDi (iox-roudi, Debian's iceoryx package) for tests of iceoryx
// channels: one per test process, started at first need with the pools
// shmbus derives from the test's configuration, stopped when the process
// ends. iceoryx 2.0 has one RouDi per machine, so ctest runs the tests that
// need it one at a time (RESOURCE_LOCK roudi); a RouDi already running
// (a developer's) is used and left alone.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "shmbus/config.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "support/test_domain.hpp"

namespace shmbus::test {

class Roudi {
 public:
  /// Starts RouDi unless one runs; true when one runs afterwards. Its
  /// pools are derived (iceoryx::roudi_config) from channels of every size
  /// the tests use, so one RouDi serves a whole test program.
  static bool ensure() {
    static Roudi instance;
    return instance.start(pools());
  }

  ~Roudi() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    std::remove(file_.c_str());
  }

 private:
  bool start(const Config& config) {
    if (iceoryx::roudi_running()) return true;
    const std::string dir = ::testing::TempDir();
    file_ = dir + "roudi_" + std::to_string(::getpid()) + ".toml";
    const std::string& file = file_;
    std::ofstream(file) << iceoryx::roudi_config(config);
    pid_ = ::fork();
    if (pid_ == 0) {
      // RouDi's own messages would read as the test's: to /dev/null.
      const int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
      }
      ::execlp("iox-roudi", "iox-roudi", "-c", file.c_str(), "-l", "warning", nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 500 && !iceoryx::roudi_running(); ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return iceoryx::roudi_running();  // another test's RouDi won the race
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return iceoryx::roudi_running();
  }

  static Config pools() {
    Config c;
    c.source = "the tests";
    c.defaults.transport = Transport::kIceoryx;
    c.defaults.capacity = 64;
    c.defaults.max_message_size = 4096;
    const auto rule = [&](const char* pattern, std::uint32_t capacity, std::uint32_t size) {
      ChannelRule r;
      r.pattern = pattern;
      r.transport = Transport::kIceoryx;
      r.capacity = capacity;
      r.max_message_size = size;
      c.channels.push_back(r);
    };
    rule("/small/*", 256, 64);
    rule("/large/*", 16, 1 << 20);
    return c;
  }

  pid_t pid_ = 0;
  std::string file_;
};

/// Sets SHMBUS_TEST_TRANSPORT, which test::peer_config reads in this
/// process and in the peers it starts (they inherit it); starts RouDi for
/// iceoryx. A failed start fails the test.
struct TransportEnvironment {
  static void use(Transport t) {
    if (t == Transport::kIceoryx) {
      ASSERT_TRUE(Roudi::ensure()) << "iox-roudi did not start";
      ::setenv("SHMBUS_TEST_TRANSPORT", "iceoryx", 1);
    } else {
      ::unsetenv("SHMBUS_TEST_TRANSPORT");
    }
  }
};

/// A multi-process test over the transport GetParam() names, on a fresh
/// domain removed afterwards; the peers it starts inherit the transport.
class TransportDomainTest : public ::testing::TestWithParam<Transport> {
 protected:
  explicit TransportDomainTest(const std::string& tag) : domain_(unique_domain(tag)) {}
  void SetUp() override { TransportEnvironment::use(GetParam()); }
  void TearDown() override {
    introspect::clean_domain(domain_, false);
    TransportEnvironment::use(Transport::kShm);
  }
  std::string domain_;
};

/// The transports a parameterised test runs over, named for test names.
inline std::string transport_name(const ::testing::TestParamInfo<Transport>& info) {
  return info.param == Transport::kIceoryx ? "Iceoryx" : "Shm";
}

}  // namespace shmbus::test
