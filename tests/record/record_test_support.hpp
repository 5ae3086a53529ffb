#pragma once
// What the record library's tests share: a folder per test, a recorder on
// a thread of its own, and a wait for what the recorder has received.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "shmbus/config.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/record/recorder.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus_msgs/String.hpp"

namespace shmbus::record {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace): test durations

inline Config ring_config() {
  Config c;
  c.defaults.capacity = 1024;
  return c;
}

/// Each test's files, in a folder removed after it.
class RecordFolderTest : public ::testing::Test {
 protected:
  RecordFolderTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("shmbus_recorder_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(dir_);
  }
  ~RecordFolderTest() override { std::filesystem::remove_all(dir_); }
  [[nodiscard]] std::string temp_path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

/// The messages the recorder's subscriber on `channel` has received, once
/// it has `n` (false after 10 s).
inline bool recorder_received(const Config& config, const std::string& channel, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      const auto view = introspect::ChannelReader(config.domain, channel, false, config.access()).view();
      for (const auto& s : view.subscribers) {
        if (s.node == RecorderOptions{}.node && s.messages >= n) return true;
      }
    } catch (const Error&) {
      // not there yet
    }
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

/// Runs a recorder on a thread of its own; stops and joins it when it goes
/// out of scope, also when a failed assertion leaves the test early.
class Running {
 public:
  explicit Running(Recorder& r) : recorder_(r), thread_([this] { summary_ = recorder_.run(); }) {}
  ~Running() { finish(); }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  /// Stops the recorder and returns what it wrote.
  const RecordSummary& finish() {
    if (thread_.joinable()) {
      recorder_.stop();
      thread_.join();
    }
    return summary_;
  }

 private:
  Recorder& recorder_;
  RecordSummary summary_;
  std::thread thread_;
};

inline shmbus_msgs::String text(const std::string& s) {
  shmbus_msgs::String m{};
  m.data.assign(s);
  return m;
}

/// The code of the Error `make` throws; nullopt when it throws none.
inline std::optional<Errc> refusal(const std::function<void()>& make) {
  try {
    make();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

}  // namespace shmbus::record
