// shmbus-bench-bridge: shmbus_msgs/Imu published at a fixed rate into shared
// memory, received by N WebSocket clients through shmbus-bridge (a separate
// process), as rosbridge JSON and as CBOR, and by Foxglove clients as JSON
// and as CDR, with a 640x480 rgb8 shmbus_msgs/Image at 30 Hz as well;
// latency = receive wall time minus the stamp the publisher wrote into
// header.stamp_ns (same host, same clock). The floor: a plain Boost.Beast WebSocket server (this program, in
// another process) broadcasting a message of the same size, with the stamp
// in it, at the same rate to the same clients: what WebSocket alone costs.
// CPU per message: the server process's utime+stime from /proc.
//
//   shmbus-bench-bridge [--clients 1,10,50] [--foxglove-clients 1,10] [--rate 1000] [--seconds 3]
//                       [--smoke] [--json]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spawn.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/context.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus_msgs/Header.hpp"
#include "shmbus_msgs/Image.hpp"
#include "shmbus_msgs/Imu.hpp"
#include "support/test_domain.hpp"

extern char** environ;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using nlohmann::json;

/// What a benchmark client subscribes to, and how.
struct Subscription {
  bool foxglove = false;
  std::string encoding;  ///< rosbridge: json, cbor; Foxglove: json, cdr
  std::string topic;
  std::string type;
};

/// The stamp after `"stamp_ns":` (JSON), after the CBOR text "stamp_ns", or
/// (Foxglove CDR) the message's first field: header.stamp_ns right after
/// the 13-byte message-data header and the 4-byte CDR header.
std::uint64_t stamp_of(std::string_view m, const std::string& encoding) {
  if (encoding == "cdr") {
    if (m.size() < 25) return 0;
    std::uint64_t v = 0;
    std::memcpy(&v, m.data() + 17, 8);
    return v;
  }
  if (encoding != "cbor") {
    const auto at = m.find("\"stamp_ns\":");
    return at == std::string_view::npos ? 0 : std::strtoull(m.data() + at + 11, nullptr, 10);
  }
  const std::string_view key = "\x68stamp_ns";
  const auto at = m.find(key);
  if (at == std::string_view::npos) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(m.data() + at + key.size());
  const unsigned major = p[0];
  if (major < 0x18) return major;
  const int bytes = major == 0x18 ? 1 : major == 0x19 ? 2 : major == 0x1a ? 4 : major == 0x1b ? 8 : 0;
  std::uint64_t v = 0;
  for (int i = 1; i <= bytes; ++i) v = (v << 8) | p[i];
  return v;
}

/// A child process: this program with `args`, or another program.
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Its log would interleave with the table.
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  return pid;
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// N WebSocket clients on one thread, recording every message's latency.
class Clients {
 public:
  Clients(int port, int n, const Subscription& sub) : encoding_(sub.encoding) {
    tcp::resolver resolver(io_);
    const auto endpoints = resolver.resolve("127.0.0.1", std::to_string(port));
    for (int i = 0; i < n; ++i) {
      auto ws = std::make_unique<websocket::stream<tcp::socket>>(io_);
      asio::connect(ws->next_layer(), endpoints);
      ws->next_layer().set_option(tcp::no_delay(true));
      if (sub.foxglove) {
        ws->set_option(websocket::stream_base::decorator([](websocket::request_type& req) {
          req.set(beast::http::field::sec_websocket_protocol, "foxglove.websocket.v1");
        }));
      }
      ws->handshake("127.0.0.1", "/");
      subscribe(*ws, sub);
      streams_.push_back(std::move(ws));
      buffers_.emplace_back();
    }
    for (std::size_t i = 0; i < streams_.size(); ++i) read(i);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Clients() {
    io_.stop();
    thread_.join();
  }
  Clients(const Clients&) = delete;
  Clients& operator=(const Clients&) = delete;
  /// Starts counting (after the warm-up).
  void start() { counting_.store(true); }
  void stop() { counting_.store(false); }
  std::vector<std::int64_t> latencies() {
    std::vector<std::int64_t> out;
    asio::post(io_, [&] { out = latencies_; });
    while (out.empty() && !latencies_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return out;
  }

 private:
  /// rosbridge: a subscribe op. Foxglove: the channel of the topic in the
  /// wanted encoding, from the advertisements, then a subscribe op.
  static void subscribe(websocket::stream<tcp::socket>& ws, const Subscription& sub) {
    if (sub.topic.empty()) return;  // the floor sends without asking
    if (!sub.foxglove) {
      ws.write(asio::buffer(json{{"op", "subscribe"},
                                 {"topic", sub.topic},
                                 {"type", sub.type},
                                 {"compression", sub.encoding == "cbor" ? "cbor" : "none"}}
                                .dump()));
      return;
    }
    for (int frames = 0; frames < 100; ++frames) {
      beast::flat_buffer b;
      ws.read(b);
      const json m = json::parse(beast::buffers_to_string(b.data()), nullptr, false);
      if (!m.is_object() || m.value("op", "") != "advertise") continue;
      for (const json& c : m["channels"]) {
        if (c["topic"] != sub.topic || c["encoding"] != sub.encoding) continue;
        ws.write(asio::buffer(
            json{{"op", "subscribe"}, {"subscriptions", json::array({{{"id", 1}, {"channelId", c["id"]}}})}}.dump()));
        return;
      }
    }
    throw std::runtime_error(fmt::format("the bridge advertised no {} channel {}", sub.encoding, sub.topic));
  }

 private:
  void read(std::size_t i) {
    streams_[i]->async_read(buffers_[i], [this, i](beast::error_code ec, std::size_t) {
      if (ec) return;
      const auto data = buffers_[i].data();
      const std::string_view m(static_cast<const char*>(data.data()), data.size());
      const std::uint64_t stamp = stamp_of(m, encoding_);
      if (stamp != 0 && counting_.load(std::memory_order_relaxed)) {
        latencies_.push_back(shmbus::wall_now_ns() - static_cast<std::int64_t>(stamp));
      }
      buffers_[i].consume(buffers_[i].size());
      read(i);
    });
  }
  asio::io_context io_;
  std::string encoding_;
  std::atomic<bool> counting_{false};
  std::vector<std::unique_ptr<websocket::stream<tcp::socket>>> streams_;
  std::vector<beast::flat_buffer> buffers_;
  std::vector<std::int64_t> latencies_;
  std::thread thread_;
};

/// The floor server: broadcasts `size`-byte JSON texts holding the wall
/// stamp, `rate` per second, to every client that connects.
int floor_server(int port_out_fd, std::size_t size, double rate) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::string port = std::to_string(acceptor.local_endpoint().port()) + "\n";
  (void)!::write(port_out_fd, port.data(), port.size());
  std::vector<std::shared_ptr<websocket::stream<tcp::socket>>> clients;
  std::vector<bool> busy;
  std::function<void()> accept = [&] {
    acceptor.async_accept([&](beast::error_code ec, tcp::socket s) {
      if (ec) return;
      s.set_option(tcp::no_delay(true));  // as the bridge does
      auto ws = std::make_shared<websocket::stream<tcp::socket>>(std::move(s));
      ws->accept();
      clients.push_back(ws);
      busy.push_back(false);
      accept();
    });
  };
  accept();
  asio::steady_timer timer(io);
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  auto next = std::chrono::steady_clock::now();
  std::function<void()> tick = [&] {
    next += period;
    timer.expires_at(next);
    timer.async_wait([&](beast::error_code ec) {
      if (ec) return;
      auto text = std::make_shared<std::string>(
          fmt::format("{{\"op\":\"publish\",\"msg\":{{\"stamp_ns\":{},\"pad\":\"", shmbus::wall_now_ns()));
      text->append(size > text->size() + 3 ? size - text->size() - 3 : 0, 'x');
      text->append("\"}}");
      for (std::size_t i = 0; i < clients.size(); ++i) {
        if (busy[i]) continue;  // like the bridge: a slow client misses messages
        busy[i] = true;
        clients[i]->async_write(asio::buffer(*text), [&, i, text](beast::error_code, std::size_t) { busy[i] = false; });
      }
      tick();
    });
  };
  tick();
  io.run();
  return 0;
}

struct Row {
  std::string server;
  std::string message;
  std::string encoding;
  int clients = 0;
  std::size_t received = 0;
  double expected = 0;
  double p50_us = 0, p99_us = 0;
  double cpu_s = 0;
  double seconds = 0;
  [[nodiscard]] double per_core() const { return cpu_s > 0 ? static_cast<double>(received) / cpu_s : 0; }
};

double percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1000.0;
}

Row measure(const std::string& server, const Subscription& sub, int port, pid_t pid, int n, double seconds, double rate,
            const std::function<void()>& publish_for) {
  // What the previous row left queued (its clients' last images) is gone
  // first: the server's CPU time stops growing.
  for (int i = 0; i < 50; ++i) {
    const double before = cpu_seconds(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (cpu_seconds(pid) - before < 0.005) break;
  }
  Clients clients(port, n, sub);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // subscriptions settle
  clients.start();
  const double cpu0 = cpu_seconds(pid);
  const auto t0 = std::chrono::steady_clock::now();
  publish_for();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The last ones arrive (the floor server never stops: it is counted over
  // the publishing time only).
  if (server != "floor") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  clients.stop();
  Row r;
  r.server = server;
  r.message = sub.type.empty() ? "shmbus_msgs/Imu" : sub.type;  // the floor sends Imu-sized messages
  r.encoding = sub.encoding;
  r.clients = n;
  r.cpu_s = cpu_seconds(pid) - cpu0;
  r.seconds = elapsed;
  std::vector<std::int64_t> lat = clients.latencies();
  r.received = lat.size();
  r.expected = rate * seconds * n;
  r.p50_us = percentile(lat, 0.5);
  r.p99_us = percentile(lat, 0.99);
  return r;
}

/// Publishes `make(seq)` at `rate` for `seconds`, each stamped (its
/// header.stamp_ns, the message's first field) just before it goes.
void publish_at(shmbus::Publisher& pub, std::vector<std::byte>& message, double rate, double seconds) {
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  auto next = std::chrono::steady_clock::now();
  const auto end = next + std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
  std::uint32_t seq = 0;
  while (next < end) {
    std::this_thread::sleep_until(next);
    auto* header = reinterpret_cast<shmbus_msgs::Header*>(message.data());
    header->seq = seq++;
    header->stamp_ns = static_cast<std::uint64_t>(shmbus::wall_now_ns());
    static_cast<void>(pub.publish(message));
    next += period;
  }
}

template <typename T>
shmbus::TypeInfo type_of() {
  return shmbus::TypeInfo{T::kTypeName, T::kTypeHash, T::kSchema};
}

void print_rows(const std::vector<Row>& rows, double seconds, bool as_json) {
  json out = json::array();
  if (!as_json) {
    fmt::print("{:.1f} s per row; latency = publish (shm) -> WebSocket receive\n", seconds);
    fmt::print("{:<22} {:<16} {:<5} {:>7} {:>9} {:>8} {:>9} {:>9} {:>12} {:>10}\n", "server", "message", "enc",
               "clients", "received", "of", "p50 us", "p99 us", "msgs/s/core", "vs floor");
  }
  for (const Row& r : rows) {
    const auto floor_row = std::find_if(rows.begin(), rows.end(), [&](const Row& f) {
      return f.server == "floor" && f.clients == r.clients && f.message == r.message;
    });
    const double ratio = floor_row != rows.end() && floor_row->p50_us > 0 ? r.p50_us / floor_row->p50_us : 0;
    out.push_back(json{{"server", r.server},
                       {"message", r.message},
                       {"encoding", r.encoding},
                       {"clients", r.clients},
                       {"received", r.received},
                       {"expected", r.expected},
                       {"p50_us", r.p50_us},
                       {"p99_us", r.p99_us},
                       {"messages_per_core_second", r.per_core()},
                       {"p50_vs_floor", ratio}});
    if (!as_json) {
      fmt::print("{:<22} {:<16} {:<5} {:>7} {:>9} {:>8.0f} {:>9.1f} {:>9.1f} {:>12.0f} {:>9.2f}x\n", r.server,
                 r.message, r.encoding, r.clients, r.received, r.expected, r.p50_us, r.p99_us, r.per_core(), ratio);
    }
    if (r.received == 0) {
      throw shmbus::Error(shmbus::Errc::kResource, fmt::format("{} {} {} with {} clients received nothing", r.server,
                                                               r.message, r.encoding, r.clients));
    }
  }
  if (as_json) fmt::print("{}\n", out.dump());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shmbus-bridge throughput and latency against a plain WebSocket server", "shmbus-bench-bridge"};
  std::vector<int> counts{1, 10, 50};
  std::vector<int> foxglove_counts{1, 10};
  double rate = 1000;
  double image_rate = 30;
  double seconds = 3;
  bool smoke = false, as_json = false;
  int floor_fd = -1;
  app.add_option("--clients", counts, "rosbridge client counts")->delimiter(',');
  app.add_option("--foxglove-clients", foxglove_counts, "Foxglove client counts")->delimiter(',');
  app.add_option("--rate", rate, "Imu messages per second");
  app.add_option("--seconds", seconds, "seconds per row");
  app.add_flag("--smoke", smoke, "tiny run: 1 and 2 clients, 0.5 s (CI)");
  app.add_flag("--json", as_json, "one JSON object");
  app.add_option("--floor-server", floor_fd, "internal: run the floor server, write its port to FD")->group("");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  const std::size_t imu_json_size = 1100;  // about what the bridge sends for one Imu
  if (floor_fd >= 0) return floor_server(floor_fd, imu_json_size, rate);
  if (smoke) {
    counts = {1, 2};
    foxglove_counts = {1, 2};
    seconds = 0.5;
  }
  return shmbus::cli::guarded("shmbus-bench-bridge", [&] {
    shmbus::Config config;
    config.domain = fmt::format("benchbridge{}", ::getpid());
    config.node = "bench";
    // Room for a 640x480 rgb8 image on its channel.
    constexpr std::uint32_t kPixels = 640 * 480 * 3;
    shmbus::ChannelRule camera;
    camera.pattern = "/camera/image";
    camera.capacity = 16;
    camera.max_message_size = shmbus_msgs::Image::View::kFixedSize + kPixels;
    config.channels.push_back(camera);
    // Runs last, once the publishers and the context are gone (also when a
    // row throws).
    const shmbus::test::DomainCleanup cleanup{config.domain};
    shmbus::Context context(config);
    shmbus::Publisher imu_pub("/imu", type_of<shmbus_msgs::Imu>(), context);
    shmbus::Publisher image_pub("/camera/image", type_of<shmbus_msgs::Image>(), context);
    std::vector<std::byte> imu(sizeof(shmbus_msgs::Imu));
    {
      shmbus_msgs::Imu m{};
      m.orientation = {0.1, 0.2, 0.3, 0.9};
      m.angular_velocity = {0.01, -0.02, 0.03};
      m.linear_acceleration = {0.1, 0.2, 9.81};
      std::memcpy(imu.data(), &m, sizeof(m));
    }
    std::vector<std::byte> image;
    {
      shmbus_msgs::Image m;
      m.height = 480;
      m.width = 640;
      m.encoding.assign("rgb8");
      m.step = 640 * 3;
      m.data.resize(kPixels);
      for (std::uint32_t k = 0; k < kPixels; ++k) m.data[k] = static_cast<std::uint8_t>(k * 7);
      image = shmbus::msg::to_bytes(m);
    }
    const auto publish_imu = [&] { publish_at(imu_pub, imu, rate, seconds); };
    const auto publish_image = [&] { publish_at(image_pub, image, image_rate, seconds); };
    std::vector<Row> rows;
    // The bridge, as installed users run it; each typed channel offered to
    // Foxglove clients in both encodings, so one bridge serves every row.
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string bridge_path = SHMBUS_BRIDGE_PATH;
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    // A port free now (the kernel's pick, released for the bridge to take).
    const std::string listen_port = [] {
      asio::io_context io;
      tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
      return std::to_string(probe.local_endpoint().port());
    }();
    const pid_t bridge = spawn({bridge_path, "--listen", "127.0.0.1:" + listen_port, "--domain", config.domain,
                                "--foxglove-encoding", "both"});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int port = std::stoi(listen_port);
    for (const char* encoding : {"json", "cbor"}) {
      for (const int n : counts) {
        rows.push_back(measure("shmbus-bridge", Subscription{false, encoding, "/imu", "shmbus_msgs/Imu"}, port, bridge,
                               n, seconds, rate, publish_imu));
      }
    }
    for (const char* encoding : {"json", "cdr"}) {
      for (const int n : foxglove_counts) {
        rows.push_back(measure("shmbus-bridge foxglove", Subscription{true, encoding, "/imu", "shmbus_msgs/Imu"}, port,
                               bridge, n, seconds, rate, publish_imu));
        rows.push_back(measure("shmbus-bridge foxglove",
                               Subscription{true, encoding, "/camera/image", "shmbus_msgs/Image"}, port, bridge, n,
                               seconds, image_rate, publish_image));
      }
    }
    ::kill(bridge, SIGTERM);
    ::waitpid(bridge, nullptr, 0);
    // The floor.
    const pid_t floor = spawn({self, "--floor-server", std::to_string(fds[1]), "--rate", std::to_string(rate)});
    char buf[16] = {};
    const ssize_t got = ::read(fds[0], buf, sizeof buf - 1);
    const int floor_port = got > 0 ? std::atoi(buf) : 0;
    for (const int n : counts) {
      rows.push_back(measure("floor", Subscription{false, "json", "", ""}, floor_port, floor, n, seconds, rate, [&] {
        std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9)));
      }));
    }
    ::kill(floor, SIGTERM);
    ::waitpid(floor, nullptr, 0);
    print_rows(rows, seconds, as_json);
    return 0;
  });
}
