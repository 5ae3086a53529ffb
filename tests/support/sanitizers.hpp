#pragma once
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
