// libFuzzer target: one WebSocket frame into a bridge session, as a
// rosbridge client (JSON text or CBOR), a Foxglove client (JSON text or a
// binary message), or the remote server of the uplink sends it. The
// session lives on a hub of a real domain, without a socket: what it
// writes waits in its queue. Nothing may crash, hang, leak or grow without
// bound; a channel a frame creates goes with its session.
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "session.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus_msgs/String.hpp"

using namespace shmbus;
using namespace shmbus::bridge;

namespace {

struct Bench {
  Bench() {
    Config c;
    c.domain = "fuzz_bridge_" + std::to_string(::getpid());
    c.node = "fuzz";
    BridgeSettings b;
    b.service_timeout = std::chrono::milliseconds(1);
    introspect::clean_domain(c.domain, false);
    hub = std::make_unique<Hub>(c, b, io);
    hub->start_reader();
    // A channel the frames can subscribe to, advertise and publish on.
    publisher = std::make_unique<Publisher>("/chatter", type_info_of<shmbus_msgs::String>(), hub->context());
    domain = c.domain;
  }
  /// At the fuzzer's exit: its domain's segments go with it.
  ~Bench() {
    publisher.reset();
    hub.reset();
    introspect::clean_domain(domain, false);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  std::string domain;
  asio::io_context io{1};
  std::unique_ptr<Hub> hub;
  std::unique_ptr<Publisher> publisher;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Bench bench;
  if (size < 1) return 0;
  // The first byte picks the side and the frame's kind.
  const std::uint8_t mode = data[0] % 6;
  const std::string frame(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Protocol protocol = mode == 2 || mode == 3 ? Protocol::kFoxglove : Protocol::kRosbridge;
  auto session = make_session(*bench.hub, Stream(tcp::socket(bench.io)), protocol);
  if (mode >= 4) session->as_uplink();
  session->receive(frame, mode % 2 == 0);
  session->shutdown();
  bench.io.poll();  // what the session posted (service answers, deliveries) runs, then goes
  bench.io.restart();
  return 0;
}
