#include "shmbus/stop_signals.hpp"

#include <signal.h>

#include <mutex>

namespace shmbus {
namespace {

GuardCondition g_stop_guard;
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

void call_previous(const struct sigaction& previous, int sig, siginfo_t* info, void* context) {
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
    previous.sa_handler(sig);
  }
}

void on_stop_signal(int sig, siginfo_t* info, void* context) {
  g_stop_guard.trigger();  // atomics and one futex system call: async-signal-safe
  call_previous(sig == SIGINT ? g_previous_int : g_previous_term, sig, info, context);
}

}  // namespace

void install_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &g_previous_int);
    ::sigaction(SIGTERM, &sa, &g_previous_term);
  });
}

bool stop_signalled() noexcept { return g_stop_guard.triggered(); }

GuardCondition& stop_signal_guard() noexcept { return g_stop_guard; }

}  // namespace shmbus
