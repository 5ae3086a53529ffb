// shmbus-bridge against what a hostile client or server sends: frames
// nested a hundred thousand levels deep (JSON and CBOR), in every operation
// that copies, merges or echoes client data, before and after auth, and to
// the uplink. The bridge must refuse each with a status and keep serving
// a second client throughout.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>

#include "bridge/bridge_harness.hpp"
#include "shmbus/publisher.hpp"
#include "support/test_domain.hpp"

namespace {

using namespace shmbus::test::bridge;
using shmbus::test::ChildProcess;

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nested_objects(std::size_t depth) {
  std::string s;
  s.reserve(depth * 7);
  for (std::size_t i = 0; i < depth; ++i) s += R"({"a":)";
  s += "1";
  s.append(depth, '}');
  return s;
}

/// The resident set of process `pid` in bytes (VmRSS).
std::uint64_t rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

/// GET /healthz: whether it answered "ok" within `timeout`.
bool healthy(int port, std::chrono::milliseconds timeout) {
  asio::io_context io;
  tcp::socket s(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, "/healthz", 11};
  req.set(http::field::host, "127.0.0.1");
  http::response<http::string_body> res;
  bool ok = false;
  s.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(port)),
                  [&](beast::error_code ec) {
                    if (ec) return;
                    http::async_write(s, req, [&](beast::error_code wec, std::size_t) {
                      if (wec) return;
                      http::async_read(s, buffer, res,
                                       [&](beast::error_code rec, std::size_t) { ok = !rec && res.body() == "ok\n"; });
                    });
                  });
  io.run_for(timeout);
  return ok;
}

/// The bridge process is alive and a second client still gets /chatter.
void expect_serving(BridgeProcess& bridge, RawClient& watcher) {
  ASSERT_FALSE(bridge.process->exited()) << bridge.process->output();
  EXPECT_TRUE(watcher.read_until("hello")) << bridge.process->output();
}

TEST(BridgeHostileTest, DeeplyNestedFramesAreRefusedAndOthersServed) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  RawClient watcher(bridge.port);
  watcher.send(R"({"op": "subscribe", "topic": "/chatter"})");
  ASSERT_TRUE(watcher.read_until("hello"));

  RawClient c(bridge.port);
  // An id 70,000 arrays deep: refused before the status reply echoes it.
  c.send(R"({"op": "x", "id": )" + nested_arrays(70'000) + "}");
  auto s = c.read_until("nesting deeper than 64");
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["level"], "error");
  expect_serving(bridge, watcher);
  // CBOR: a million 0x81 bytes, arrays a million deep.
  c.send_binary(std::string(1'000'000, '\x81'));
  EXPECT_TRUE(c.read_until("malformed CBOR: nesting deeper than 64"));
  expect_serving(bridge, watcher);
  // CBOR text that is not UTF-8 (it would be echoed as the id).
  c.send_binary(std::string("\xa2\x62op\x61x\x62id\x61\xff", 11));
  EXPECT_TRUE(c.read_until("not valid UTF-8"));
  expect_serving(bridge, watcher);
  // publish, its msg 100,000 objects deep (merged with the defaults).
  c.send(R"({"op": "publish", "topic": "/chatter", "msg": )" + nested_objects(100'000) + "}");
  EXPECT_TRUE(c.read_until("nesting deeper than 64"));
  expect_serving(bridge, watcher);
  // call_service, its args 200,000 arrays deep (copied).
  c.send(R"({"op": "call_service", "service": "/rosapi/topics", "args": )" + nested_arrays(200'000) + "}");
  EXPECT_TRUE(c.read_until("nesting deeper than 64"));
  expect_serving(bridge, watcher);
  // 64 levels are taken: the limit is what is documented.
  c.send(R"({"op": "set_level", "level": "info", "id": )" + nested_arrays(63) + "}");
  c.send(R"({"op": "y", "id": "after"})");
  s = c.read_until("unknown op");
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["id"], "after");

  // Foxglove: a clientPublish payload {"data": [[[...]]]} 200,000 deep.
  RawClient fox(bridge.port, "foxglove.websocket.v1");
  ASSERT_TRUE(fox.read_until("serverInfo"));
  fox.send(R"({"op": "advertise", "channels": [{"id": 7, "topic": "/chatter", "encoding": "json",
              "schemaName": "std_msgs/String"}]})");
  std::string frame("\x01\x07\x00\x00\x00", 5);
  frame += R"({"data": )" + nested_arrays(200'000) + "}";
  fox.send_binary(frame);
  EXPECT_TRUE(fox.read_until("nesting deeper than 64"));
  fox.send(nested_objects(100'000));
  EXPECT_TRUE(fox.read_until("nesting deeper than 64"));
  expect_serving(bridge, watcher);
}

TEST(BridgeHostileTest, DeepFramesBeforeAuthAreRefusedToo) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  const std::string token_file =
      (std::filesystem::temp_directory_path() / ("bridge_hostile_token_" + std::to_string(::getpid()))).string();
  std::ofstream(token_file) << "s3cret\n";
  BridgeProcess bridge(domain, {"--token-file", token_file});
  ASSERT_NE(bridge.port, 0);
  RawClient watcher(bridge.port);
  watcher.send(R"({"op": "auth", "mac": "s3cret"})");
  watcher.send(R"({"op": "subscribe", "topic": "/chatter"})");
  ASSERT_TRUE(watcher.read_until("hello"));
  {
    RawClient c(bridge.port);
    c.send(R"({"op": "x", "id": )" + nested_arrays(70'000) + "}");
    EXPECT_TRUE(c.read_until("nesting deeper than 64"));
  }
  expect_serving(bridge, watcher);
  {
    RawClient c(bridge.port);
    c.send_binary(std::string(1'000'000, '\x81'));
    EXPECT_TRUE(c.read_until("nesting deeper than 64"));
  }
  expect_serving(bridge, watcher);
  std::filesystem::remove(token_file);
}

TEST(BridgeHostileTest, ClientsThatAskMuchAndReadNothingStayWithinTheirByteBudget) {
  // A 64 KiB raw channel published as fast as one thread can; two clients
  // that never read: one asks for fragments of 1 byte (raised to 1024),
  // one for whole messages (each about 200 KB of JSON).
  shmbus::test::TestDomain d(
      shmbus::Config::parse("[[channel]]\nname = \"/cam\"\nmax_message_size = 65536\n", "cam.toml"));
  const std::string domain = d.context().domain();
  auto chatter = start_publisher(domain, "/chatter");
  shmbus::Publisher cam("/cam", shmbus::TypeInfo::bytes(), d.context());
  constexpr std::uint32_t kBudget = 1U << 20;
  BridgeProcess bridge(domain, {"--max-client-bytes", std::to_string(kBudget)});
  ASSERT_NE(bridge.port, 0);
  const std::uint64_t base = rss_bytes(bridge.process->pid());
  RawClient watcher(bridge.port);
  watcher.send(R"({"op": "subscribe", "topic": "/chatter"})");
  ASSERT_TRUE(watcher.read_until("hello"));
  RawClient fragments(bridge.port);
  fragments.send(R"({"op": "subscribe", "topic": "/cam", "fragment_size": 1})");
  RawClient whole(bridge.port);
  whole.send(R"({"op": "subscribe", "topic": "/cam"})");

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> published{0};
  std::thread flood([&] {
    const std::vector<std::byte> frame(65536, std::byte{7});
    while (!stop) {
      if (cam.publish(frame) == shmbus::PublishResult::kOk) ++published;
    }
  });
  std::uint64_t peak = base;
  int answered = 0;
  const std::int64_t end = shmbus::mono_now_ns() + 3'000'000'000;
  while (shmbus::mono_now_ns() < end) {
    peak = std::max(peak, rss_bytes(bridge.process->pid()));
    if (healthy(bridge.port, 2s)) ++answered;
    std::this_thread::sleep_for(100ms);
  }
  stop = true;
  flood.join();
  ASSERT_FALSE(bridge.process->exited()) << bridge.process->output();
  EXPECT_GT(published.load(), 1000U);
  EXPECT_GE(answered, 10) << "/healthz did not answer within 2 s while the clients were flooded";
  // Two clients' budgets, the bound on what waits for the network thread
  // (16 MiB), and the allocator's and the encoders' slack.
  const std::uint64_t bound = 2 * std::uint64_t{kBudget} + (16U << 20) + (32U << 20);
  EXPECT_LT(peak - base, bound) << "RSS from " << base << " to " << peak;
  std::fprintf(stderr, "bridge RSS %llu -> %llu bytes; %llu published\n", static_cast<unsigned long long>(base),
               static_cast<unsigned long long>(peak), static_cast<unsigned long long>(published.load()));
  EXPECT_GT(metric(bridge.port, "shmbus_bridge_messages_dropped_total"), 0);
  expect_serving(bridge, watcher);
}

/// A WebSocket server on loopback that answers the first frame it reads
/// with `reply` (binary), then reads until the peer goes.
class HostileServer {
 public:
  explicit HostileServer(std::string reply) : reply_(std::move(reply)) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    port = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] {
      try {
        tcp::socket socket = acceptor_.accept();
        websocket::stream<tcp::socket> ws(std::move(socket));
        ws.accept();
        beast::flat_buffer buffer;
        ws.read(buffer);  // the uplink's first operation
        ws.binary(true);
        ws.write(asio::buffer(reply_));
        sent = true;
        for (;;) {
          buffer.consume(buffer.size());
          ws.read(buffer);
        }
      } catch (const std::exception&) {
        // the uplink went, or the test closed the acceptor
      }
    });
  }
  ~HostileServer() {
    beast::error_code ignored;
    acceptor_.close(ignored);
    thread_.join();
  }
  int port = 0;
  std::atomic<bool> sent{false};

 private:
  std::string reply_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
};

TEST(BridgeHostileTest, TheUplinkSurvivesAServerThatAnswersCborAMillionDeep) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  auto publisher = start_publisher(domain, "/chatter");
  HostileServer server(std::string(1'000'000, '\x81'));
  ChildProcess uplink({kBridge, "connect", "ws://127.0.0.1:" + std::to_string(server.port), "--export", "/chatter"},
                      true, {"SHMBUS_DOMAIN=" + domain});
  EXPECT_TRUE(uplink.wait_for_output("nesting deeper than 64", 20s)) << uplink.output();
  EXPECT_TRUE(server.sent);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(uplink.exited()) << uplink.output();
  uplink.signal(SIGTERM);
  const int status = uplink.wait(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << uplink.output();
}

}  // namespace
