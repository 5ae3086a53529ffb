#pragma once
// CPU time a thread used (user + system), from its CPU clock: what tests
// and benchmarks compare with wall time to tell sleeping from spinning.
#include <pthread.h>
#include <time.h>

namespace shmbus::test {

/// Seconds of CPU `thread` (default: the calling one) has used.
inline double thread_cpu_seconds(pthread_t thread = ::pthread_self()) {
  clockid_t clock{};
  ::pthread_getcpuclockid(thread, &clock);
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace shmbus::test
