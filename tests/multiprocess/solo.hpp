#pragma once
// What the multi-process tests of the solo publisher share: whether this
// build and kernel grant it at all, and a bounded wait for a channel's
// state as introspection shows it.

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

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

}  // namespace shmbus::test
