// A process with two nodes, each spun on its own thread, for the signal
// test: SIGINT must end both spins, and both nodes' endpoints must be
// unregistered when the process exits.
//   node_peer DOMAIN
// Prints "ready" once both nodes subscribed, and on the way out
// "alpha_calls=N beta_calls=M alpha_timer=K".
#include <cstdio>
#include <thread>

#include "multiprocess/peer_protocol.hpp"
#include "shmbus/error.hpp"
#include "shmbus/node.hpp"

using namespace shmbus;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc != 2) {
    std::fprintf(stderr, "usage: node_peer DOMAIN\n");
    return 2;
  }
  try {
    // The channels are made here (the subscriptions come first), with a
    // stall bound no preemption reaches: the test counts every message, and
    // a publisher descheduled between claim and commit past the default
    // 2 ms would have its message rightly counted lost.
    Config config = test::peer_config(argv[1], "node_peer");
    config.defaults.stall_timeout = std::chrono::seconds(2);
    Context ctx{config};
    Node alpha("alpha", ctx);
    Node beta("beta", ctx);
    std::uint64_t alpha_calls = 0;
    std::uint64_t beta_calls = 0;
    alpha.subscribe_raw("/alpha_in", TypeInfo::bytes(),
                        [&](std::span<const std::byte>, const MessageInfo&) { ++alpha_calls; });
    beta.subscribe_raw("/beta_in", TypeInfo::bytes(),
                       [&](std::span<const std::byte>, const MessageInfo&) { ++beta_calls; });
    auto& timer = alpha.every(10ms, [] {});
    std::printf("ready\n");
    std::thread beta_thread([&] { beta.spin(); });
    alpha.spin();
    beta_thread.join();
    std::printf("alpha_calls=%llu beta_calls=%llu alpha_timer=%llu\n", static_cast<unsigned long long>(alpha_calls),
                static_cast<unsigned long long>(beta_calls), static_cast<unsigned long long>(timer.runs()));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "node_peer: %s\n", e.what());
    return e.exit_code();
  }
}
