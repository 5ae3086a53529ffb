#pragma once
// What the test environment is: a sanitizer build, or an emulator.
// SHMBUS_TEST_SANITIZED: defined in a build under AddressSanitizer or
// ThreadSanitizer, SHMBUS_TEST_TSAN under ThreadSanitizer, whatever the
// compiler (GCC defines __SANITIZE_*__, clang 14 answers __has_feature only).

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHMBUS_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SHMBUS_TEST_SANITIZED 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define SHMBUS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMBUS_TEST_TSAN 1
#endif
#endif

#include <cstdlib>

namespace shmbus::test {

/// Whether the tests run under an emulator (scripts/test.sh --arch aarch64
/// sets SHMBUS_TEST_EMULATED to the emulator's name): page faults,
/// residency and CPU time are then the emulator's, not the code's, and the
/// tests that measure them skip.
inline const char* emulated() {
  const char* e = std::getenv("SHMBUS_TEST_EMULATED");  // NOLINT(concurrency-mt-unsafe): read, never set
  return e != nullptr && *e != '\0' ? e : nullptr;
}

}  // namespace shmbus::test
