// shmbusd's web page and /api/*, with the real daemon, real publisher
// processes and the example pipeline: the answers against what
// `shmtool list --json` measures and what /shmbus/alerts says; the event
// stream and its connection bound; the page in a real browser (Debian's
// chromium driven by puppeteer-core) through a stop and 200 channels of
// churn.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "multiprocess/child_process.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/shmbusd/http.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Alert.hpp"
#include "support/certificate.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using nlohmann::json;
using shmbus::test::ChildProcess;
namespace fs = std::filesystem;

namespace {

const std::string kDaemon = SHMBUSD_PATH;
const std::string kPeer = SHMBUS_TEST_PEER;
const std::string kShmtool = SHMTOOL_PATH;
const std::string kPipeline = SHMBUS_EXAMPLE_PIPELINE;
const std::string kAdder = SHMBUS_EXAMPLE_ADDER;
const std::string kJs = std::string(SHMBUS_SOURCE_DIR) + "/tests/js";

/// A domain with shmbusd serving its page on a free loopback port, a
/// ~200 Hz publisher on /web/fast and a ~20 Hz one on /web/slow (pacing
/// by sleeps: the rates are whatever the machine gives, and every check
/// compares with a measure of the same time lists).
class WebBus {
 public:
  /// With `token`, shmbusd asks for it (token_file in [monitor]); with
  /// `tls_dir`, it serves TLS with tls_dir/cert.pem and key.pem.
  explicit WebBus(const std::string& token = "", const fs::path& tls_dir = {})
      : domain_(shmbus::test::unique_domain("web")), cleanup_{domain_} {
    config_ = (fs::temp_directory_path() / ("shmbusd_web_" + std::to_string(::getpid()) + ".toml")).string();
    token_file_ = config_ + ".token";
    std::ofstream(token_file_) << token << "\n";
    std::ofstream(config_) << "[defaults]\nstall_timeout = \"1s\"\ncapacity = 256\n\n"
                              "[[channel]]\nname = \"/web/fast\"\nthresholds_hz = [100.0, 400.0, 800.0]\n\n"
                              "[[channel]]\nname = \"/web/slow\"\nthresholds_hz = [10.0, 40.0, 80.0]\n\n"
                              "[monitor]\nscan_period = \"50ms\"\ndebounce_scans = 2\nstatistics_period = \"500ms\"\n"
                              "metrics_listen = \"127.0.0.1:0\"\n"
                           << (token.empty() ? "" : "token_file = \"" + token_file_ + "\"\n")
                           << (tls_dir.empty() ? ""
                                               : "tls_cert = \"" + (tls_dir / "cert.pem").string() +
                                                     "\"\ntls_key = \"" + (tls_dir / "key.pem").string() + "\"\n");
    fast_ = publisher("/web/fast", "5000");
    slow_ = publisher("/web/slow", "50000");
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kDaemon, "--foreground", "--config", config_, "--domain", domain_}, true);
    if (daemon_->wait_for_output("(port ", 20s)) {
      std::smatch m;
      const std::string out = daemon_->poll_output();
      if (std::regex_search(out, m, std::regex(R"(\(port (\d+)\))")))
        port_ = static_cast<std::uint16_t>(std::stoi(m[1]));
    }
  }
  ~WebBus() {
    daemon_->signal(SIGTERM);
    daemon_->wait(20s);
    fs::remove(config_);
    fs::remove(token_file_);
  }
  WebBus(const WebBus&) = delete;
  WebBus& operator=(const WebBus&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] const std::string& domain() const { return domain_; }
  [[nodiscard]] std::vector<std::string> env() const {
    return {"SHMBUS_DOMAIN=" + domain_, "SHMBUS_CONFIG=" + config_};
  }
  ChildProcess& daemon() { return *daemon_; }
  void stop_fast() { fast_.reset(); }
  void stop_slow() { slow_.reset(); }

  json get_json(const std::string& target) const {
    const auto [status, body] = shmbusd::http_request({"127.0.0.1", port_, target}, "GET", "", "");
    EXPECT_EQ(status, 200) << target << ": " << body;
    return json::parse(body);
  }
  /// `shmtool ARGS` in this domain and configuration; its standard output.
  std::string shmtool(const std::vector<std::string>& args) const {
    std::vector<std::string> command{kShmtool};
    command.insert(command.end(), args.begin(), args.end());
    ChildProcess tool(command, false, env());
    tool.wait(30s);
    return tool.output();
  }

 private:
  std::unique_ptr<ChildProcess> publisher(const std::string& channel, const std::string& pace_us) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{kPeer, "pub", domain_, channel, "1", "0", "64", pace_us}, false, env());
  }

  std::string domain_;
  shmbus::test::DomainCleanup cleanup_;
  std::string config_;
  std::string token_file_;
  std::unique_ptr<ChildProcess> fast_;
  std::unique_ptr<ChildProcess> slow_;
  std::unique_ptr<ChildProcess> daemon_;
  std::uint16_t port_ = 0;
};

/// The example pipeline's four modules, running until destroyed.
class Pipeline {
 public:
  explicit Pipeline(const std::vector<std::string>& env) {
    for (const char* m : {"m1", "m2", "m3", "sensors"}) {
      modules_.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{kPipeline, "--module", m, "--rate", "20"}, true, env));
    }
  }
  ~Pipeline() {
    for (auto& m : modules_) m->signal(SIGTERM);
    for (auto& m : modules_) m->wait(10s);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

 private:
  std::vector<std::unique_ptr<ChildProcess>> modules_;
};

json by_name(const json& channels) {
  json out = json::object();
  for (const json& c : channels) out[c["name"].get<std::string>()] = c;
  return out;
}

/// A raw connection to 127.0.0.1:port sending `request` (with a receive
/// buffer of `rcvbuf` bytes when not 0); -1 on failure.
int connect_and_send(std::uint16_t port, const std::string& request, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf != 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  timeval wait{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  return fd;
}

/// What arrives on `fd` until `text` is in it, EOF, or 5 s of silence.
std::string read_until(int fd, const std::string& text) {
  std::string got;
  std::array<char, 4096> buf{};
  while (got.find(text) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    got.append(buf.data(), static_cast<std::size_t>(n));
  }
  return got;
}

/// A client of /api/events (Beast's WebSocket client), with a receive
/// buffer of `rcvbuf` bytes when not 0. Throws when refused.
class EventClient {
 public:
  explicit EventClient(std::uint16_t port, int rcvbuf = 0) : ws_(io_) {
    auto& socket = ws_.next_layer();
    socket.open(boost::asio::ip::tcp::v4());
    if (rcvbuf != 0) socket.set_option(boost::asio::socket_base::receive_buffer_size(rcvbuf));
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    ws_.handshake("127.0.0.1", "/api/events");
  }
  /// The next message ("" on a close or an error).
  std::string read() {
    boost::beast::flat_buffer buffer;
    boost::beast::error_code ec;
    ws_.read(buffer, ec);
    return ec ? std::string{} : boost::beast::buffers_to_string(buffer.data());
  }

 private:
  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
};

}  // namespace

// /api/channels says what `shmtool list --json` says of every channel (the
// rate within 2% of shmtool's measure a moment later), with the endpoints'
// nodes; /api/alerts has the transition /shmbus/alerts carried; /api/graph
// is the pipeline's module graph; `shmtool list` names the page.
TEST(DaemonWeb, ApiAnswersAgreeWithShmtoolListTheAlertsChannelAndThePipeline) {
  WebBus bus;
  ASSERT_NE(bus.port(), 0) << bus.daemon().poll_output();
  const Pipeline pipeline(bus.env());
  Config config;
  config.domain = bus.domain();
  Context context(config);
  TypedSubscriber<shmbus_msgs::Alert> alerts("/shmbus/alerts", context);

  // Every channel of shmtool's list, with the same figures.
  bool agreed = false;
  json last;
  for (int look = 0; look < 40 && !agreed; ++look) {
    std::this_thread::sleep_for(250ms);
    const json api = bus.get_json("/api/channels");
    const json list = json::parse(bus.shmtool({"list", "--json"}));
    const json mine = by_name(api["channels"]);
    agreed = list.size() >= 9;  // the two publishers, the pipeline's six, the daemon's own
    for (const json& c : list) {
      const std::string name = c["name"];
      if (name.starts_with("/shmbus/")) continue;  // shmtool's own look at /shmbus/web comes and goes
      if (!mine.contains(name)) {
        agreed = false;
        continue;
      }
      const json& m = mine[name];
      for (const char* key : {"type", "transport", "publishers", "subscribers"}) agreed = agreed && m[key] == c[key];
      agreed = agreed && m["messages"].get<std::uint64_t>() <= c["messages"].get<std::uint64_t>();
      if (name.starts_with("/web/")) {
        const double page = m["rate_hz"];
        const double tool = c["rate_hz"];
        agreed = agreed && tool > 0 && std::abs(page / tool - 1) <= 0.02;
      }
    }
    last = json{{"api", api}, {"list", list}};
  }
  ASSERT_TRUE(agreed) << last.dump(1);
  const json fast = by_name(last["api"]["channels"])["/web/fast"];
  EXPECT_EQ(fast["level"], "nominal");
  EXPECT_EQ(fast["thresholds_hz"], json::array({100.0, 400.0, 800.0}));
  ASSERT_EQ(fast["endpoints"]["publishers"].size(), 1U);
  EXPECT_GT(fast["endpoints"]["publishers"][0]["pid"].get<int>(), 0);
  EXPECT_TRUE(fast["last_age_s"].is_number());
  EXPECT_LT(fast["last_age_s"].get<double>(), 1.0);
  const json c3 = by_name(last["api"]["channels"])["/pipeline/c3"];
  ASSERT_EQ(c3["endpoints"]["publishers"].size(), 1U);
  EXPECT_EQ(c3["endpoints"]["publishers"][0]["node"], "m1");

  // /web/slow stops: the alert in /api/alerts is the one on /shmbus/alerts.
  const double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  bus.stop_slow();
  std::optional<shmbus_msgs::Alert> critical;
  for (auto end = std::chrono::steady_clock::now() + 15s; !critical && std::chrono::steady_clock::now() < end;) {
    if (!alerts.wait(100ms)) continue;
    while (auto a = alerts.take()) {
      if (a->channel.view() == "/web/slow" && a->new_level == shmbus_msgs::Alert::LEVEL_CRITICAL) critical = *a;
    }
  }
  ASSERT_TRUE(critical) << bus.daemon().poll_output();
  const json api_alerts = bus.get_json("/api/alerts");
  ASSERT_FALSE(api_alerts["alerts"].empty()) << api_alerts.dump(1);
  const json& newest = api_alerts["alerts"][0];
  EXPECT_EQ(newest["channel"], "/web/slow");
  EXPECT_EQ(newest["old_level"], "nominal");
  EXPECT_EQ(newest["new_level"], "critical");
  EXPECT_EQ(newest["rate_hz"].get<double>(), critical->frequency_hz);
  EXPECT_GE(newest["time_unix_s"].get<double>(), before);
  EXPECT_EQ(by_name(bus.get_json("/api/channels")["channels"])["/web/slow"]["level"], "critical");

  // The pipeline's modules and what each reads and writes.
  const json graph = bus.get_json("/api/graph");
  std::map<std::string, std::pair<json, json>> modules;
  for (const json& m : graph["modules"]) modules[m["name"]] = {m["reads"], m["writes"]};
  const auto rw = [](std::vector<std::string> reads, std::vector<std::string> writes) {
    return std::pair<json, json>{json(reads), json(writes)};
  };
  EXPECT_EQ(modules["sensors"], rw({}, {"/pipeline/c1", "/pipeline/c2", "/pipeline/c4"})) << graph.dump(1);
  EXPECT_EQ(modules["m1"], rw({"/pipeline/c1", "/pipeline/c2"}, {"/pipeline/c3"}));
  EXPECT_EQ(modules["m2"], rw({"/pipeline/c3", "/pipeline/c4", "/pipeline/c6"}, {"/pipeline/c5"}));
  EXPECT_EQ(modules["m3"], rw({}, {"/pipeline/c6"}));
  const std::vector<std::string> order = graph["order"];
  const auto at = [&](const std::string& m) { return std::find(order.begin(), order.end(), m) - order.begin(); };
  EXPECT_LT(at("sensors"), at("m1"));
  EXPECT_LT(at("m1"), at("m2"));
  EXPECT_LT(at("m3"), at("m2"));
  for (const json& c : graph["channels"]) EXPECT_FALSE(c["name"].get<std::string>().starts_with("/shmbus/"));

  // The history holds a sample per channel; the page is one HTML page.
  const json history = bus.get_json("/api/history");
  EXPECT_EQ(history["period_s"], 2.0);
  EXPECT_TRUE(history["channels"].contains("/web/fast"));
  const auto [page_status, page] = shmbusd::http_request({"127.0.0.1", bus.port(), "/"}, "GET", "", "");
  EXPECT_EQ(page_status, 200);
  EXPECT_NE(page.find("new WebSocket("), std::string::npos);
  int missing = 0;
  const auto [missing_status, missing_body] =
      shmbusd::http_request({"127.0.0.1", bus.port(), "/api/nope"}, "GET", "", "");
  missing = missing_status;
  EXPECT_EQ(missing, 404) << missing_body;

  // shmtool points a person at the page.
  const std::string address = "http://127.0.0.1:" + std::to_string(bus.port()) + "/";
  EXPECT_NE(bus.shmtool({"list"}).find(address), std::string::npos) << bus.shmtool({"list"});
}

// /api/events is a WebSocket of the channels: the first message at once,
// then one per 400 ms. At most 48 are open at once (the 49th is answered
// 503), so /metrics is still served with them all open; 300 idle
// connections meet the listener's bound of 64 (the rest closed at once).
TEST(DaemonWeb, EventStreamsSendTheChannelsAndAreBoundedLikeEveryConnection) {
  WebBus bus;
  ASSERT_NE(bus.port(), 0) << bus.daemon().poll_output();
  std::vector<std::unique_ptr<EventClient>> streams;
  streams.push_back(std::make_unique<EventClient>(bus.port()));
  std::vector<json> got;
  for (int i = 0; i < 3; ++i) got.push_back(json::parse(streams.front()->read()));
  EXPECT_EQ(got.back()["domain"], bus.domain());
  EXPECT_TRUE(by_name(got.back()["channels"]).contains("/web/fast")) << got.back().dump();
  EXPECT_GT(got.back()["time_unix_s"].get<double>(), got.front()["time_unix_s"].get<double>());

  for (int i = 1; i < 48; ++i) streams.push_back(std::make_unique<EventClient>(bus.port()));
  for (const auto& s : streams) EXPECT_FALSE(s->read().empty());
  EXPECT_THROW(EventClient{bus.port()}, boost::system::system_error) << "the 49th stream is refused";
  const auto [status, metrics] = shmbusd::http_request({"127.0.0.1", bus.port(), "/metrics"}, "GET", "", "");
  EXPECT_EQ(status, 200) << "a scrape is served with 48 pages open";
  EXPECT_TRUE(std::regex_search(metrics, std::regex(R"(shmbus_daemon_web_streams\{[^}]*\} 48\n)")))
      << metrics.substr(0, 2000);
  streams.clear();
  // A plain GET of the stream is told what it is.
  EXPECT_NE(shmbusd::http_request({"127.0.0.1", bus.port(), "/api/events"}, "GET", "", "").second.find("WebSocket"),
            std::string::npos);

  // 300 idle connections: 64 held (until their 10 s head timeout), 236 closed.
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(connect_and_send(bus.port(), ""));
  std::this_thread::sleep_for(200ms);
  int closed = 0;
  for (const int fd : idle) {
    timeval quick{0, 200'000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &quick, sizeof quick);
    char c = 0;
    closed += ::recv(fd, &c, 1, 0) == 0 ? 1 : 0;
  }
  EXPECT_GE(closed, 236) << "connections past the 64 are closed at once";
  EXPECT_LE(closed, 236 + 48) << "streams closed a moment ago may still hold places";
  for (const int fd : idle) ::close(fd);
  const std::regex none_open(R"(shmbus_daemon_web_streams\{[^}]*\} 0\n)");
  std::string text;
  for (int i = 0; i < 100 && !std::regex_search(text, none_open); ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      text = shmbusd::http_request({"127.0.0.1", bus.port(), "/metrics"}, "GET", "", "").second;
    } catch (const Error&) {
    }
  }
  EXPECT_TRUE(std::regex_search(text, none_open)) << text.substr(0, 3000);
  EXPECT_NE(text.find("shmbus_daemon_web_events_skipped_total{"), std::string::npos);
}

// A page that stops reading gets fewer updates, never a queue: while its
// write is pending every later event skips it (counted), and once it goes
// the stream is released.
TEST(DaemonWeb, AStreamThatDoesNotReadSkipsEventsAndIsReleasedWhenItCloses) {
  shmbusd::HttpServer server("127.0.0.1:0", [](const shmbusd::HttpRequest&) {
    return shmbusd::HttpResponse{200, "application/json", "{}", true};
  });
  auto client = std::make_unique<EventClient>(server.port(), 4096);
  ASSERT_EQ(client->read(), "{}");
  for (int i = 0; i < 50 && server.streams() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(server.streams(), 1);
  // 64 MiB offered in 1 MiB events to a client that reads nothing: the
  // kernel's buffers take a few, the rest are skipped while one is pending.
  const std::string event(1 << 20, 'x');
  for (int i = 0; i < 64; ++i) {
    server.publish_event(event);
    std::this_thread::sleep_for(5ms);
  }
  for (int i = 0; i < 100 && server.skipped_events() < 32; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_GE(server.skipped_events(), 32U);
  client.reset();
  // Gone: the next write fails, or the read ends first.
  for (int i = 0; i < 200 && server.streams() != 0; ++i) {
    server.publish_event("{}");
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(server.streams(), 0);
}

// With token_file, every path but /healthz asks for the token, as a
// Bearer header or ?token= (the page's own requests carry it so).
TEST(DaemonWeb, ATokenGuardsThePageTheApiAndMetricsButNotHealthz) {
  WebBus bus("s3cr%t&x");
  ASSERT_NE(bus.port(), 0) << bus.daemon().poll_output();
  const auto status_of = [&](const std::string& target) {
    return shmbusd::http_request({"127.0.0.1", bus.port(), target}, "GET", "", "").first;
  };
  for (const char* path : {"/", "/api/channels", "/api/alerts", "/api/graph", "/api/events", "/metrics"}) {
    EXPECT_EQ(status_of(path), 401) << path;
    EXPECT_EQ(status_of(std::string(path) + "?token=wrong"), 401) << path;
  }
  EXPECT_EQ(status_of("/api/channels?token=s3cr%25t%26x"), 200);
  EXPECT_EQ(status_of("/?a=1&token=s3cr%25t%26x"), 200);
  // Without the token: never 401; 200 once the daemon has scanned (503
  // "no recent scan" until its first scan, which may come after this).
  int health = status_of("/healthz");
  for (int i = 0; i < 100 && health == 503; ++i) {
    std::this_thread::sleep_for(20ms);
    health = status_of("/healthz");
  }
  EXPECT_EQ(health, 200);
  const int fd =
      connect_and_send(bus.port(), "GET /api/channels HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cr%t&x\r\n\r\n");
  EXPECT_NE(read_until(fd, "\r\n").find("200 OK"), std::string::npos);
  ::close(fd);
}

// With tls_cert and tls_key the listener speaks https:// and wss:// only:
// the API with the certificate verified, the page's stream, the page in
// Chromium, and the address shmtool and the log give (tests/js/daemon_tls.mjs).
TEST(DaemonWeb, WithTlsTheApiThePageAndItsStreamAreHttpsAndWssOnly) {
  const fs::path dir = fs::temp_directory_path() / ("shmbusd_tls_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(shmbus::test::make_certificate(dir));
  {
    WebBus bus("", dir);
    ASSERT_NE(bus.port(), 0) << bus.daemon().poll_output();
    const std::string address = "https://127.0.0.1:" + std::to_string(bus.port()) + "/";
    EXPECT_NE(bus.daemon().poll_output().find("web page " + address), std::string::npos) << bus.daemon().poll_output();
    EXPECT_NE(bus.shmtool({"list"}).find(address), std::string::npos);
    std::vector<std::string> env = bus.env();
    env.push_back("NODE_EXTRA_CA_CERTS=" + (dir / "cert.pem").string());
    ChildProcess node(
        {"/usr/bin/env", "node", kJs + "/daemon_tls.mjs", "127.0.0.1:" + std::to_string(bus.port()), "/web/fast"},
        false, env);
    const int status = node.wait(90s);
    const std::string& output = node.output();
    // The report is the last line.
    const auto line = output.rfind("\n{");
    const json r = json::parse(output.substr(line == std::string::npos ? 0 : line + 1), nullptr, false);
    ASSERT_FALSE(r.is_discarded()) << output;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
    EXPECT_EQ(r["errors"], json::array()) << output;
    EXPECT_EQ(r["plain"].get<std::string>().rfind("error", 0), 0U) << output;
    EXPECT_EQ(r["apiStatus"], 200) << output;
    EXPECT_NE(r["apiChannels"].dump().find("/web/fast"), std::string::npos) << output;
    EXPECT_EQ(r["pageHtml"], true) << output;
    EXPECT_NE(r["wss"]["channels"].dump().find("/web/slow"), std::string::npos) << output;
    EXPECT_EQ(r["browserRow"], true) << output;
    EXPECT_EQ(r["browserProtocol"], "https:") << output;
    // The plain request is said once, with its likely cause.
    EXPECT_TRUE(bus.daemon().wait_for_output("a client speaking http:// to this https:// listener?", 5s))
        << bus.daemon().poll_output();
  }
  // Half a pair, a file that is not there, or one that is no certificate:
  // one line, exit 2, and nothing left in shared memory (the files are read
  // before the daemon's bus channels exist).
  const std::string config = (dir / "empty.toml").string();
  std::ofstream(config) << "";
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--tls-cert", (dir / "cert.pem").string()},
            "TLS needs a certificate and its key: give both --tls-cert FILE and --tls-key FILE (monitor.tls_cert and "
            "monitor.tls_key)"},
           {{"--tls-cert", "/nonexistent/cert.pem", "--tls-key", (dir / "key.pem").string()},
            "TLS certificate /nonexistent/cert.pem does not exist or is not a file; give a PEM file (--tls-cert)"},
           {{"--tls-cert", (dir / "key.pem").string(), "--tls-key", (dir / "key.pem").string()},
            "TLS certificate " + (dir / "key.pem").string() + " cannot be used"}}) {
    std::vector<std::string> command{kDaemon, "--foreground", "--config", config, "--metrics-listen", "127.0.0.1:0"};
    command.insert(command.end(), args.begin(), args.end());
    const std::string domain = shmbus::test::unique_domain("webtls");
    ChildProcess d(command, true, {"SHMBUS_DOMAIN=" + domain});
    const int status = d.wait(20s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << d.output();
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      EXPECT_FALSE(e.path().filename().string().starts_with("shmbus." + domain + ".")) << e.path() << " left behind";
    }
    EXPECT_NE(d.output().find("shmbusd: " + says), std::string::npos) << d.output();
    EXPECT_EQ(std::count(d.output().begin(), d.output().end(), '\n'), 1) << d.output();
  }
  fs::remove_all(dir);
}

// The page in headless Chromium: see tests/js/daemon_page_browser.mjs.
TEST(DaemonWeb, ThePageInABrowserFollowsRatesAStopAndChurnWithoutAReload) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_FAIL() << "no /usr/bin/chromium: run scripts/install-deps.sh";
  ASSERT_TRUE(fs::exists(kJs + "/node_modules/puppeteer-core")) << "run scripts/install-deps.sh";
  WebBus bus("page-token");  // the page's own requests carry the token of its address
  ASSERT_NE(bus.port(), 0) << bus.daemon().poll_output();
  const Pipeline pipeline(bus.env());
  ChildProcess adder({kAdder}, true, bus.env());
  ASSERT_TRUE(adder.wait_for_output("serving /example/add", 10s)) << adder.output();
  const std::string screenshot = std::string(SHMBUS_TEST_LOG_DIR) + "/shmbusd_page.png";
  fs::create_directories(SHMBUS_TEST_LOG_DIR);
  fs::remove(screenshot);
  ChildProcess browser({"/usr/bin/env", "node", kJs + "/daemon_page_browser.mjs",
                        "http://127.0.0.1:" + std::to_string(bus.port()) + "/?token=page-token", kShmtool, "/web/fast",
                        "/web/slow", "sensors,m1,m2,m3", "/example/add", screenshot},
                       false, bus.env());
  ASSERT_TRUE(browser.wait_for_output("stop fast", 120s)) << browser.output();
  bus.stop_fast();
  ASSERT_TRUE(browser.wait_for_output("\nchurn\n", 30s)) << browser.output();
  {
    Config config;
    config.domain = bus.domain();
    Context context(config);
    std::vector<std::unique_ptr<Publisher>> churn;
    const std::vector<std::byte> one(8);
    for (int i = 0; i < 200; ++i) {
      churn.push_back(std::make_unique<Publisher>(fmt::format("/churn/c{:03}", i), TypeInfo::bytes(), context));
      EXPECT_EQ(churn.back()->publish(one), PublishResult::kOk);
    }
    EXPECT_TRUE(browser.wait_for_output("churn seen", 60s)) << browser.output();
  }
  int removed = 0;
  for (int i = 0; i < 200; ++i) {
    removed += introspect::remove_unused_channel(bus.domain(), fmt::format("/churn/c{:03}", i)) ? 1 : 0;
  }
  EXPECT_EQ(removed, 200);
  const int status = browser.wait(90s);
  const std::string& output = browser.output();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  const auto last = output.rfind("\n{");
  ASSERT_NE(last, std::string::npos) << output;
  const json r = json::parse(output.substr(last + 1));
  EXPECT_EQ(r["errors"], json::array()) << output;
  EXPECT_LE(r["steps"]["alert_after_ms"].get<int>(), 3000) << output;
  EXPECT_EQ(r["steps"]["churn_appeared"], 200);
  EXPECT_EQ(r["steps"]["churn_left"], 0);
  EXPECT_TRUE(fs::exists(screenshot) && fs::file_size(screenshot) > 10000) << screenshot;
}
