#pragma once
// What the peer program and the tests that drive it agree on: the channel
// geometry (16 slots, so laps happen; up to 4 KiB messages) and
// self-checking payloads (a torn or mixed copy fails payload_intact()).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "shmbus/config.hpp"

namespace shmbus::test {

#ifdef SHMBUS_TEST_PEER
/// The peer program's path (tests/CMakeLists.txt defines it for the tests
/// that start peers).
inline const std::string kPeer = SHMBUS_TEST_PEER;
#endif

/// The transport of the test's channels: SHMBUS_TEST_TRANSPORT=iceoryx in
/// the test process (its children inherit it), else the ring.
inline Transport test_transport() {
  const char* t = std::getenv("SHMBUS_TEST_TRANSPORT");  // NOLINT(concurrency-mt-unsafe): read at set-up
  return t != nullptr && std::string_view{t} == "iceoryx" ? Transport::kIceoryx : Transport::kShm;
}

/// The peer channels' ring (iceoryx: queue) capacity.
inline constexpr std::uint32_t kPeerCapacity = 16;

inline Config peer_config(const std::string& domain, const std::string& node) {
  Config c;
  c.domain = domain;
  c.node = node;
  c.defaults.transport = test_transport();
  c.defaults.capacity = kPeerCapacity;
  c.defaults.max_message_size = 4096;
  c.defaults.wait_spin = std::chrono::microseconds(20);
  // SHMBUS_TEST_STALL_TIMEOUT_MS: how long a claimed slot may hold readers
  // up (a 16 MiB message takes longer to write than the default 2 ms).
  if (const char* ms = std::getenv("SHMBUS_TEST_STALL_TIMEOUT_MS")) {  // NOLINT(concurrency-mt-unsafe): at set-up
    c.defaults.stall_timeout = std::chrono::milliseconds(std::atoll(ms));
  }
  // SHMBUS_TEST_MAX_MESSAGE_SIZE: the slots a channel starts with (it grows).
  if (const char* size = std::getenv("SHMBUS_TEST_MAX_MESSAGE_SIZE")) {  // NOLINT(concurrency-mt-unsafe): at set-up
    c.defaults.max_message_size = static_cast<std::uint32_t>(std::strtoul(size, nullptr, 10));
  }
  // SHMBUS_TEST_OVERFLOW=block: the channels' publishers wait for their
  // subscribers, up to SHMBUS_TEST_BLOCK_TIMEOUT_MS (default 1 s).
  const char* overflow = std::getenv("SHMBUS_TEST_OVERFLOW");  // NOLINT(concurrency-mt-unsafe): read at set-up
  if (overflow != nullptr && std::string_view{overflow} == "block") {
    c.defaults.overflow = Overflow::kBlock;
    c.defaults.overflow_set = true;
    if (const char* ms = std::getenv("SHMBUS_TEST_BLOCK_TIMEOUT_MS")) {  // NOLINT(concurrency-mt-unsafe)
      c.defaults.block_timeout = std::chrono::milliseconds(std::atoll(ms));
    }
  }
  return c;
}

inline constexpr std::size_t kPayloadHeader = 12;

inline std::byte pattern(std::uint32_t tag, std::uint32_t counter, std::size_t i) {
  return static_cast<std::byte>((tag * 131U + counter * 7U + static_cast<std::uint32_t>(i) * 13U) & 0xffU);
}

/// [tag][counter][size][pattern...]; size >= kPayloadHeader.
inline void fill_payload(std::byte* p, std::size_t size, std::uint32_t tag, std::uint32_t counter) {
  const auto n = static_cast<std::uint32_t>(size);
  std::memcpy(p, &tag, 4);
  std::memcpy(p + 4, &counter, 4);
  std::memcpy(p + 8, &n, 4);
  for (std::size_t i = kPayloadHeader; i < size; ++i) p[i] = pattern(tag, counter, i);
}

inline bool payload_intact(const std::byte* p, std::size_t size, std::uint32_t& tag, std::uint32_t& counter) {
  if (size < kPayloadHeader) return false;
  std::uint32_t n = 0;
  std::memcpy(&tag, p, 4);
  std::memcpy(&counter, p + 4, 4);
  std::memcpy(&n, p + 8, 4);
  if (n != size) return false;
  for (std::size_t i = kPayloadHeader; i < size; ++i) {
    if (p[i] != pattern(tag, counter, i)) return false;
  }
  return true;
}

}  // namespace shmbus::test
