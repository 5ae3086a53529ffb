#pragma once
// What the bridge's process-level tests share: the bridge as a child
// process, a raw WebSocket client, /metrics, a shmtool publisher.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"

namespace shmbus::test::bridge {

using namespace std::chrono_literals;
using nlohmann::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

inline const std::string kBridge = SHMBUS_BRIDGE_PATH;
inline const std::string kShmtool = SHMTOOL_PATH;
inline const std::string kAdder = SHMBUS_EXAMPLE_ADDER;
inline const std::string kJs = std::string(SHMBUS_SOURCE_DIR) + "/tests/js";

/// The bridge process on `domain`; its port read from its first log line.
struct BridgeProcess {
  BridgeProcess(const std::string& domain, std::vector<std::string> extra = {},
                const std::string& listen = "127.0.0.1:0", std::vector<std::string> env = {}) {
    std::vector<std::string> args{kBridge, "--listen", listen};
    args.insert(args.end(), extra.begin(), extra.end());
    env.push_back("SHMBUS_DOMAIN=" + domain);
    process = std::make_unique<ChildProcess>(args, true, env);
    EXPECT_TRUE(process->wait_for_output(" for domain ", 10s)) << process->output();
    std::smatch m;
    const std::string out = process->output();
    if (std::regex_search(out, m, std::regex("listening on wss?://127\\.0\\.0\\.1:([0-9]+)"))) port = std::stoi(m[1]);
  }
  ~BridgeProcess() {
    if (process->pid() <= 0) return;  // the test ended it
    // SIGTERM: a clean exit with everything released (under ASan, no leak).
    process->signal(SIGTERM);
    const int status = process->wait(10s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << process->output();
  }
  std::unique_ptr<ChildProcess> process;
  int port = 0;
};

/// The example adder (/example/add, example_srvs/AddTwoInts) serving in
/// `domain`; nullptr (and a failure) when it does not start serving.
inline std::unique_ptr<ChildProcess> start_adder(const std::string& domain) {
  auto adder = std::make_unique<ChildProcess>(std::vector<std::string>{kAdder}, true,
                                              std::vector<std::string>{"SHMBUS_DOMAIN=" + domain});
  if (!adder->wait_for_output("serving /example/add", 10s)) {
    ADD_FAILURE() << adder->output();
    return nullptr;
  }
  return adder;
}

/// A node script of tests/js (with `env` added); its stdout as JSON.
inline json run_node(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  if (!std::filesystem::exists(kJs + "/node_modules/roslib")) {
    ADD_FAILURE() << "the npm clients are not installed in " << kJs << ": run scripts/install-deps.sh";
    return {};
  }
  std::vector<std::string> argv{"/usr/bin/env", "node"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess node(argv, false, env);
  const int status = node.wait(40s);
  const std::string& out = node.output();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  try {
    return json::parse(out.substr(0, out.find('\n')));
  } catch (const json::exception&) {
    ADD_FAILURE() << "not a JSON report: " << out;
    return {};
  }
}

/// A raw WebSocket client: what a broken or hostile client sends.
class RawClient {
 public:
  explicit RawClient(int port, const std::string& subprotocol = "", const std::string& target = "/") {
    tcp::resolver resolver(io_);
    asio::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    if (!subprotocol.empty()) {
      ws_.set_option(websocket::stream_base::decorator(
          [subprotocol](websocket::request_type& req) { req.set(http::field::sec_websocket_protocol, subprotocol); }));
    }
    ws_.handshake("127.0.0.1", target);
  }
  void send(const std::string& text) {
    ws_.text(true);
    ws_.write(asio::buffer(text));
  }
  void send_binary(const std::string& bytes) {
    ws_.binary(true);
    ws_.write(asio::buffer(bytes));
  }
  /// The next message, or nullopt when the connection ended (`code` is then
  /// the close code) or nothing came within `timeout`.
  std::optional<std::string> read(std::chrono::milliseconds timeout = 10s) {
    beast::flat_buffer buffer;
    std::optional<beast::error_code> result;
    ws_.async_read(buffer, [&](beast::error_code ec, std::size_t) { result = ec; });
    io_.restart();
    io_.run_for(timeout);
    if (!result) {
      ws_.next_layer().close();
      io_.restart();
      io_.run();
      return std::nullopt;
    }
    if (*result) {
      code = ws_.reason().code;
      return std::nullopt;
    }
    return beast::buffers_to_string(buffer.data());
  }
  /// Reads until a message contains `text` (or `n` messages went by).
  std::optional<json> read_until(const std::string& text, int n = 200) {
    for (int i = 0; i < n; ++i) {
      const auto m = read();
      if (!m) return std::nullopt;
      if (m->find(text) != std::string::npos) return json::parse(*m);
    }
    return std::nullopt;
  }
  std::uint16_t code = 0;

 private:
  asio::io_context io_;
  websocket::stream<tcp::socket> ws_{io_};
};

/// GET `target` of the bridge on loopback: the body, or nullopt when no
/// answer came within `timeout`.
inline std::optional<std::string> http_get(int port, const std::string& target, const std::string& token = "",
                                           std::chrono::milliseconds timeout = 10s) {
  asio::io_context io;
  tcp::socket s(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  http::response<http::string_body> res;
  std::optional<std::string> body;
  s.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(port)),
                  [&](beast::error_code ec) {
                    if (ec) return;
                    http::async_write(s, req, [&](beast::error_code wec, std::size_t) {
                      if (wec) return;
                      http::async_read(s, buffer, res, [&](beast::error_code rec, std::size_t) {
                        if (!rec) body = res.body();
                      });
                    });
                  });
  io.run_for(timeout);
  return body;
}

/// A file that lives as long as the test: a token or a configuration.
struct TempFile {
  TempFile(const std::string& name, const std::string& content)
      : path((std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string()) {
    std::ofstream(path) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path;
};

/// GET /metrics of the bridge: one counter's value (-1: none, or no answer).
inline double metric(int port, const std::string& name, const std::string& token = "") {
  std::smatch m;
  const std::string body = http_get(port, "/metrics", token).value_or("");
  if (!std::regex_search(body, m, std::regex("\n" + name + "\\{[^}]*\\} ([0-9.e+]+)"))) return -1;
  return std::stod(m[1]);
}

/// shmtool publishing a String on `channel` at `rate` Hz.
inline std::unique_ptr<ChildProcess> start_publisher(const std::string& domain, const std::string& channel,
                                                     const std::string& rate = "100") {
  auto p =
      std::make_unique<ChildProcess>(std::vector<std::string>{kShmtool, "pub", channel, "--type", "shmbus_msgs/String",
                                                              R"({"data": "hello"})", "--rate", rate},
                                     true, std::vector<std::string>{"SHMBUS_DOMAIN=" + domain});
  const std::int64_t deadline = shmbus::mono_now_ns() + 10'000'000'000;
  while (shmbus::mono_now_ns() < deadline) {
    try {
      if (shmbus::introspect::ChannelReader(domain, channel).view().messages > 0) break;
    } catch (const shmbus::Error&) {
    }
    std::this_thread::sleep_for(5ms);
  }
  return p;
}

/// Publishes into one channel every 10 ms until stopped (at most 3000
/// times), keeping each message's bytes by the number it carries.
class Feeder {
 public:
  using Fill = std::function<std::vector<std::byte>(std::uint32_t i)>;
  Feeder(shmbus::Publisher& pub, Fill fill) : pub_(pub), fill_(std::move(fill)) {
    thread_ = std::thread([this] {
      for (std::uint32_t i = 0; i < 3000 && !stop_; ++i) {
        std::vector<std::byte> bytes = fill_(i);
        static_cast<void>(pub_.publish(bytes));
        {
          const std::lock_guard lock(mutex_);
          sent_.push_back(std::move(bytes));
        }
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  ~Feeder() { stop(); }
  Feeder(const Feeder&) = delete;
  Feeder& operator=(const Feeder&) = delete;
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] std::vector<std::byte> sent(std::size_t i) {
    const std::lock_guard lock(mutex_);
    return i < sent_.size() ? sent_[i] : std::vector<std::byte>{};
  }

 private:
  shmbus::Publisher& pub_;
  Fill fill_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::vector<std::byte>> sent_;
  std::thread thread_;
};

}  // namespace shmbus::test::bridge
