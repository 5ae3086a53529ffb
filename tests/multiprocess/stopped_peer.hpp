#pragma once
// What the multi-process tests that stop a peer publisher inside a step
// (SHMBUS_TEST_PAUSE) share: the stopped peer, whether this build and
// kernel grant the solo path at all, and a bounded wait for a channel's
// state as introspection shows it.

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "shmbus/introspect.hpp"

namespace shmbus::test {

/// Whether a lone publisher holds the solo grant in this build on this
/// kernel (not under ThreadSanitizer, and membarrier's GLOBAL_EXPEDITED).
inline bool solo_expected() {
#if defined(SHMBUS_TEST_TSAN)
  return false;
#else
  const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0U, 0);
  return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0;
#endif
}

/// Polls `channel`'s view until `pred(view)` holds, for up to `timeout`;
/// returns whether it held.
template <class Pred>
bool wait_for_view(const std::string& domain, const std::string& channel, Pred pred,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred(introspect::ChannelReader(domain, channel).view())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// A peer publishing `count` checksummed messages of `size` bytes (tag
/// `tag`, `pace_us` apart) to `channel` of `domain`, stopped at `point`
/// (SHMBUS_TEST_PAUSE) of its construction or first publish.
inline std::unique_ptr<ChildProcess> stopped_peer(const std::string& domain, const std::string& channel,
                                                  const std::string& point, int tag, int count, int size = 64,
                                                  int pace_us = 0) {
  auto p = std::make_unique<ChildProcess>(
      std::vector<std::string>{kPeer, "pub", domain, channel, std::to_string(tag), std::to_string(count),
                               std::to_string(size), std::to_string(pace_us)},
      false, std::vector<std::string>{"SHMBUS_TEST_PAUSE=" + point});
  EXPECT_TRUE(p->wait_stopped(std::chrono::seconds(20))) << "the peer did not stop at " << point;
  return p;
}

}  // namespace shmbus::test
