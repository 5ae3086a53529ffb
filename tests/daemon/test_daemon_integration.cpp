// The real shmbusd with real publisher processes whose rate changes: level
// transitions in the log, on /shmbus/alerts and in /metrics; promtool
// accepts /metrics; a fake NOTIFY_SOCKET sees READY=1 and WATCHDOG=1; a
// killed and restarted daemon finds every channel again; a real Alertmanager
// (Debian's prometheus-alertmanager) receives the webhook's alert.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/shmbusd/http.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Alert.hpp"
#include "shmbus_msgs/Statistics.hpp"
#include "support/test_domain.hpp"
#include "support/unit_file.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
namespace fs = std::filesystem;

namespace {

const std::string kDaemon = SHMBUSD_PATH;
const std::string kPeer = SHMBUS_TEST_PEER;

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// A datagram socket standing in for systemd's NOTIFY_SOCKET. Like systemd
/// it reads all the time (a full socket would block the daemon's sd_notify).
class FakeNotifySocket {
 public:
  FakeNotifySocket() : path_(fs::temp_directory_path() / ("shmbus_notify_" + std::to_string(::getpid()))) {
    fs::remove(path_);
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path_.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) throw std::runtime_error("bind notify socket");
    timeval tv{0, 50'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    reader_ = std::thread([this] {
      while (!stop_.load()) {
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n <= 0) continue;
        std::lock_guard lock(mutex_);
        received_.append(buf, static_cast<std::size_t>(n)).push_back('\n');
      }
    });
  }
  ~FakeNotifySocket() {
    stop_ = true;
    reader_.join();
    ::close(fd_);
    fs::remove(path_);
  }
  [[nodiscard]] std::string path() const { return path_.string(); }
  /// Waits until a datagram contained `text`.
  bool wait_for(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mutex_);
        if (received_.find(text) != std::string::npos) return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

 private:
  fs::path path_;
  int fd_ = -1;
  std::mutex mutex_;
  std::string received_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

std::uint16_t metrics_port_of(ChildProcess& daemon) {
  EXPECT_TRUE(daemon.wait_for_output("(port ", 20s)) << daemon.poll_output();
  std::smatch m;
  const std::string out = daemon.poll_output();
  if (!std::regex_search(out, m, std::regex(R"(\(port (\d+)\))"))) return 0;
  return static_cast<std::uint16_t>(std::stoi(m[1]));
}

std::string get(std::uint16_t port, const std::string& target, int* status = nullptr) {
  const auto [code, body] = shmbusd::http_request({"127.0.0.1", port, target}, "GET", "", "");
  if (status != nullptr) *status = code;
  return body;
}

/// Waits for an alert with `level` on /shmbus/alerts.
std::optional<shmbus_msgs::Alert> wait_alert(TypedSubscriber<shmbus_msgs::Alert>& sub, std::uint8_t level,
                                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!sub.wait(100ms)) continue;
    while (auto a = sub.take()) {
      if (a->new_level == level) return a;
    }
  }
  return std::nullopt;
}

int run(const std::string& command) { return std::system(command.c_str()); }

}  // namespace

TEST(DaemonIntegrationTest, RealDaemonReportsTransitionsEverywhereAndSurvivesItsRestart) {
  const std::string domain = shmbus::test::unique_domain("shmbusd");
  shmbus::test::DomainCleanup cleanup{domain};
  const fs::path dir = fs::temp_directory_path() / ("shmbusd_it_" + std::to_string(::getpid()));
  fs::create_directories(dir);

  // A real Alertmanager when the package is there.
  std::unique_ptr<ChildProcess> alertmanager;
  std::uint16_t am_port = 0;
  if (fs::exists("/usr/bin/prometheus-alertmanager")) {
    am_port = free_port();
    std::ofstream(dir / "am.yml") << "route:\n  receiver: none\nreceivers:\n  - name: none\n";
    alertmanager = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/prometheus-alertmanager", "--config.file=" + (dir / "am.yml").string(),
                                 "--storage.path=" + (dir / "am-data").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(am_port),
                                 "--cluster.listen-address="},
        true);
    bool ready = false;
    for (int i = 0; i < 100 && !ready; ++i) {
      try {
        int status = 0;
        get(am_port, "/-/ready", &status);
        ready = status == 200;
      } catch (const std::exception&) {
      }
      if (!ready) std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(ready) << "alertmanager did not start: " << alertmanager->poll_output();
  }

  const fs::path config = dir / "shmbus.toml";
  {
    std::ofstream f(config);
    f << "[defaults]\ncapacity = 16\nmax_message_size = 4096\nwait_spin = \"20us\"\n\n"
         "[[channel]]\nname = \"/rate\"\nthresholds_hz = [40.0, 60.0, 150.0]\n\n"
         "[monitor]\nscan_period = \"50ms\"\ndebounce_scans = 2\nstatistics_period = \"500ms\"\n"
         "metrics_listen = \"127.0.0.1:0\"\n";
    if (am_port != 0) f << "webhook = \"http://127.0.0.1:" << am_port << "/api/v2/alerts\"\n";
  }
  Config sub_config = Config::load_file(config.string());
  sub_config.domain = domain;
  sub_config.node = "integration_test";
  Context ctx(sub_config);
  TypedSubscriber<shmbus_msgs::Alert> alerts("/shmbus/alerts", ctx);
  TypedSubscriber<shmbus_msgs::Statistics> statistics("/shmbus/statistics", ctx);

  // ~50 Hz: nominal.
  auto publisher =
      std::make_unique<ChildProcess>(std::vector<std::string>{kPeer, "pub", domain, "/rate", "1", "0", "64", "20000"});
  FakeNotifySocket notify;
  const std::vector<std::string> daemon_args{kDaemon, "--foreground", "--config", config.string(), "--domain", domain};
  const std::vector<std::string> daemon_env{"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=400000"};
  auto shmbusd = std::make_unique<ChildProcess>(daemon_args, true, daemon_env);
  std::uint16_t port = metrics_port_of(*shmbusd);
  ASSERT_NE(port, 0);
  EXPECT_TRUE(notify.wait_for("READY=1", 10s));
  EXPECT_TRUE(notify.wait_for("WATCHDOG=1", 10s));
  EXPECT_TRUE(notify.wait_for("STATUS=", 10s));

  // Statistics of /rate arrive on the bus.
  bool got_statistics = false;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       !got_statistics && std::chrono::steady_clock::now() < deadline;) {
    if (!statistics.wait(100ms)) continue;
    while (auto s = statistics.take()) {
      if (s->channel.view() == "/rate" && s->frequency_hz > 30 && s->period.count > 0) got_statistics = true;
    }
  }
  EXPECT_TRUE(got_statistics);

  // ~100 Hz: degraded.
  publisher.reset();
  publisher =
      std::make_unique<ChildProcess>(std::vector<std::string>{kPeer, "pub", domain, "/rate", "2", "0", "64", "10000"});
  const auto degraded = wait_alert(alerts, shmbus_msgs::Alert::LEVEL_DEGRADED, 15s);
  ASSERT_TRUE(degraded.has_value()) << shmbusd->poll_output();
  EXPECT_EQ(degraded->channel.view(), "/rate");
  EXPECT_GT(degraded->frequency_hz, 60.0);
  EXPECT_EQ(degraded->thresholds_hz[2], 150.0);

  // Stopped: critical.
  publisher.reset();
  const auto critical = wait_alert(alerts, shmbus_msgs::Alert::LEVEL_CRITICAL, 15s);
  ASSERT_TRUE(critical.has_value()) << shmbusd->poll_output();
  EXPECT_EQ(critical->old_level, shmbus_msgs::Alert::LEVEL_DEGRADED);

  EXPECT_TRUE(shmbusd->wait_for_output("channel /rate: level 1 (nominal) -> 2 (degraded)", 5s))
      << shmbusd->poll_output();
  EXPECT_TRUE(shmbusd->wait_for_output("channel /rate: level 2 (degraded) -> 3 (critical)", 5s));
  const std::string metrics = get(port, "/metrics");
  EXPECT_NE(metrics.find("shmbus_channel_alert_level{domain=\"" + domain + "\",channel=\"/rate\"} 3"),
            std::string::npos)
      << metrics;
  int health = 0;
  EXPECT_EQ(get(port, "/healthz", &health), "ok\n");
  EXPECT_EQ(health, 200);

  // promtool, from Debian's prometheus package, accepts the exposition.
  std::ofstream(dir / "metrics.txt") << metrics;
  ASSERT_EQ(run("command -v promtool >/dev/null"), 0) << "promtool missing: run scripts/install-deps.sh";
  EXPECT_EQ(run("promtool check metrics < " + (dir / "metrics.txt").string() + " > " + (dir / "promtool.txt").string() +
                " 2>&1"),
            0)
      << std::ifstream(dir / "promtool.txt").rdbuf();

  // The webhook's alert is in Alertmanager's own API.
  if (alertmanager) {
    bool seen = false;
    for (int i = 0; i < 50 && !seen; ++i) {
      const auto list = nlohmann::json::parse(get(am_port, "/api/v2/alerts"));
      for (const auto& a : list) {
        seen = seen || (a["labels"]["alertname"] == "ShmbusChannelFrequency" && a["labels"]["channel"] == "/rate" &&
                        a["labels"]["domain"] == domain && a["labels"]["severity"] == "critical");
      }
      if (!seen) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(seen) << get(am_port, "/api/v2/alerts");
  }

  // Killed and restarted: every channel is found again from shared memory.
  shmbusd->signal(SIGKILL);
  shmbusd->wait(10s);
  shmbusd = std::make_unique<ChildProcess>(daemon_args, true, daemon_env);
  port = metrics_port_of(*shmbusd);
  std::string after;
  for (int i = 0; i < 50; ++i) {
    after = get(port, "/metrics");
    if (after.find("channel=\"/rate\"") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  for (const char* channel : {"/rate", "/shmbus/alerts", "/shmbus/statistics"}) {
    EXPECT_NE(
        after.find(std::string{"shmbus_channel_frequency_hz{domain=\""} + domain + "\",channel=\"" + channel + "\"}"),
        std::string::npos)
        << channel;
  }

  // SIGHUP reloads new thresholds without a restart.
  {
    std::ofstream f(config);
    f << "[defaults]\ncapacity = 16\nmax_message_size = 4096\n\n"
         "[[channel]]\nname = \"/rate\"\nthresholds_hz = [0.0, 1.0, 2.0]\n\n"
         "[monitor]\nscan_period = \"50ms\"\ndebounce_scans = 2\nmetrics_listen = \"127.0.0.1:0\"\n";
  }
  shmbusd->signal(SIGHUP);
  EXPECT_TRUE(shmbusd->wait_for_output("reloaded " + config.string(), 10s)) << shmbusd->poll_output();
  std::string reloaded;
  for (int i = 0; i < 50; ++i) {
    reloaded = get(port, "/metrics");
    if (reloaded.find("bound=\"f3\"} 2\n") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(reloaded.find("shmbus_channel_threshold_hz{domain=\"" + domain + "\",channel=\"/rate\",bound=\"f3\"} 2\n"),
            std::string::npos)
      << reloaded;

  // SIGTERM stops cleanly.
  shmbusd->signal(SIGTERM);
  const int status = shmbusd->wait(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shmbusd->output();
  EXPECT_NE(shmbusd->output().find("stopping on signal"), std::string::npos);
  if (alertmanager) {
    // Wait for it: it writes its data directory while it shuts down, and
    // removing the directory under it failed now and then.
    alertmanager->signal(SIGTERM);
    alertmanager->wait(20s);
  }
  fs::remove_all(dir);
}

TEST(DaemonIntegrationTest, UnitFilePassesSystemdAnalyzeVerify) {
  EXPECT_EQ(shmbus::test::verify_unit("shmbusd.service", "/usr/sbin/shmbusd", kDaemon), "");
}

TEST(DaemonIntegrationTest, BadConfigurationExitsTwoWithOneLine) {
  const fs::path bad = fs::temp_directory_path() / ("shmbusd_bad_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(bad) << "[[channel]]\nname = \"/x\"\nthresholds_hz = [30.0, 20.0, 60.0]\n";
  ChildProcess check({kDaemon, "--check-config", bad.string()}, true);
  const int status = check.wait(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
  EXPECT_EQ(check.output(), "shmbusd: " + bad.string() + ":3:17: thresholds_hz must satisfy f1 < f2 < f3\n");
  ChildProcess run_bad({kDaemon, "--foreground", "--config", bad.string()}, true);
  EXPECT_EQ(WEXITSTATUS(run_bad.wait(10s)), 2);
  fs::remove(bad);
}

// A corrupt channel segment (max_message_size of all ones) next to a healthy
// one. Before: shmbusd died with SIGSEGV. Now it logs the channel once and
// goes on watching the other.
TEST(DaemonIntegrationTest, CorruptChannelIsLoggedOnceAndTheOthersAreStillWatched) {
  const std::string domain = shmbus::test::unique_domain("shmbusd_corrupt");
  shmbus::test::DomainCleanup cleanup{domain};
  ChildProcess good({kPeer, "pub", domain, "/good", "1", "0", "64", "10000"});
  {
    ChildProcess bad({kPeer, "pub", domain, "/bad", "2", "0", "64", "10000"});
    std::this_thread::sleep_for(200ms);
    bad.signal(SIGKILL);
    bad.wait(10s);
  }
  {
    std::fstream f("/dev/shm/shmbus." + domain + ".c.bad", std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    const std::uint32_t huge = 0xFFFFFFFFU;
    f.seekp(300);  // ChannelHeader::max_message_size
    f.write(reinterpret_cast<const char*>(&huge), sizeof(huge));
  }
  const fs::path config = fs::temp_directory_path() / ("shmbusd_corrupt_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "[monitor]\nscan_period = \"50ms\"\nmetrics_listen = \"127.0.0.1:0\"\n";
  ChildProcess shmbusd({kDaemon, "--foreground", "--config", config.string(), "--domain", domain}, true);
  const std::uint16_t port = metrics_port_of(shmbusd);
  ASSERT_NE(port, 0);
  EXPECT_TRUE(shmbusd.wait_for_output("channel /bad is not watched", 10s)) << shmbusd.poll_output();
  std::this_thread::sleep_for(1500ms);  // many scans
  const std::string log = shmbusd.poll_output();
  EXPECT_EQ(log.find("channel /bad is not watched"), log.rfind("channel /bad is not watched")) << "once: " << log;
  EXPECT_NE(log.find("has max_message_size 4294967295"), std::string::npos) << log;
  const std::string metrics = get(port, "/metrics");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(metrics, m, std::regex(R"(shmbus_channel_frequency_hz\{[^}]*channel="/good"\} ([0-9.]+))")))
      << metrics;
  EXPECT_GT(std::stod(m[1]), 50.0) << "the healthy channel is still measured (~100 Hz)";
  shmbusd.signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(shmbusd.wait(20s))) << "shmbusd ended by SIGTERM, not by a crash: " << shmbusd.output();
  good.signal(SIGTERM);
  good.wait(10s);
  fs::remove(config);
}

/// A TCP connection to 127.0.0.1:`port` (plain sockets: what an idle or
/// hostile client holds open).
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// The HTTP listener serves at most 64 connections at once: idle ones past
// that are closed at once instead of holding a descriptor each, and once
// they go a scrape is served again.
TEST(DaemonHttp, ConnectionsPastTheLimitAreClosedAndTheListenerRecovers) {
  const std::string domain = shmbus::test::unique_domain("dhttp");
  const fs::path config = fs::temp_directory_path() / ("shmbusd_http_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "[monitor]\nmetrics_listen = \"127.0.0.1:0\"\n";
  ChildProcess shmbusd({kDaemon, "--foreground", "--config", config.string(), "--domain", domain}, true);
  const std::uint16_t port = metrics_port_of(shmbusd);
  ASSERT_NE(port, 0);
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) idle.push_back(connect_to(port));
  std::this_thread::sleep_for(200ms);  // all accepted
  const int extra = connect_to(port);
  timeval wait{5, 0};
  ::setsockopt(extra, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char c = 0;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(extra, &c, 1, 0), 0) << "closed by the daemon (EOF), not left waiting";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  ::close(extra);
  for (const int fd : idle) ::close(fd);
  std::string body;
  for (int i = 0; i < 50 && body.find("shmbus_") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    body = get(port, "/metrics");
  }
  EXPECT_NE(body.find("shmbus_"), std::string::npos) << body;
  shmbusd.signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(shmbusd.wait(20s))) << shmbusd.output();
  shmbus::introspect::clean_domain(domain, false);
  fs::remove(config);
}

// `shmbusd --roudi`: RouDi runs with the pools derived from the
// configuration; an iceoryx channel between real processes is monitored
// like any (its time list); a RouDi killed is started again; stopping
// shmbusd stops it.
TEST(DaemonIceoryx, RoudiFlagRunsRoudiTheDaemonMonitorsIceoryxChannelsAndRestartsIt) {
  if (iceoryx::roudi_running()) GTEST_SKIP() << "a RouDi already runs on this machine";
  const std::string domain = shmbus::test::unique_domain("droudi");
  const fs::path config = fs::temp_directory_path() / ("shmbusd_roudi_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "[monitor]\nscan_period = \"50ms\"\nmetrics_listen = \"127.0.0.1:0\"\n\n"
                           "[[channel]]\nname = \"/iox/*\"\ntransport = \"iceoryx\"\ncapacity = 16\n"
                           "max_message_size = 4096\nwindow = \"500ms\"\n";
  ChildProcess shmbusd({kDaemon, "--foreground", "--roudi", "--config", config.string(), "--domain", domain}, true);
  ASSERT_TRUE(shmbusd.wait_for_output("serves the iceoryx channels", 20s)) << shmbusd.poll_output();
  EXPECT_TRUE(iceoryx::roudi_running());
  const std::uint16_t port = metrics_port_of(shmbusd);
  {
    // ~500 Hz over iceoryx (the peer's channels follow SHMBUS_TEST_TRANSPORT).
    ChildProcess pub({kPeer, "pub", domain, "/iox/rate", "1", "0", "64", "2000"}, false,
                     {"SHMBUS_TEST_TRANSPORT=iceoryx"});
    double hz = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    const std::regex line(R"(shmbus_channel_frequency_hz\{[^}]*channel="/iox/rate"\} ([0-9.e+]+))");
    while (hz < 100 && std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string metrics = get(port, "/metrics");
      if (std::regex_search(metrics, m, line)) hz = std::stod(m[1]);
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_GT(hz, 100) << "the iceoryx channel's publishes are stamped and monitored";
    EXPECT_EQ(shmbus::introspect::ChannelReader(domain, "/iox/rate").view().transport, Transport::kIceoryx);
    pub.signal(SIGTERM);
    EXPECT_TRUE(WIFEXITED(pub.wait(20s))) << pub.output();
  }
  // RouDi killed: shmbusd says so and starts it again.
  ASSERT_EQ(run("pkill -KILL -f 'iox-rou[d]i -c .*shmbusd-roudi-'"), 0);
  EXPECT_TRUE(shmbusd.wait_for_output("exited (signal 9); starting it again", 10s)) << shmbusd.poll_output();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!iceoryx::roudi_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(iceoryx::roudi_running()) << "RouDi started again";
  shmbusd.signal(SIGTERM);
  EXPECT_EQ(shmbusd.wait(20s), 0) << shmbusd.poll_output();
  EXPECT_FALSE(iceoryx::roudi_running()) << "stopping shmbusd stops its RouDi";
  shmbus::introspect::clean_domain(domain, false);
  fs::remove(config);
}

TEST(DaemonIntegrationTest, RoudiUnitFilePassesSystemdAnalyzeVerify) {
  EXPECT_EQ(shmbus::test::verify_unit("shmbus-roudi.service", "/usr/sbin/shmbusd", kDaemon), "");
}

TEST(DaemonIceoryx, RoudiConfigPrintsPoolsSizedFromTheConfiguration) {
  const fs::path config = fs::temp_directory_path() / ("shmbusd_pools_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "[defaults]\ncapacity = 64\nmax_message_size = 4096\n\n"
                           "[[channel]]\nname = \"/camera/*\"\ntransport = \"iceoryx\"\ncapacity = 8\n"
                           "max_message_size = 1048576\n";
  ChildProcess print({kDaemon, "--roudi-config", "--config", config.string()});
  ASSERT_EQ(print.wait(20s), 0) << print.output();
  const std::string out = print.output();
  // [defaults]: 8 channels x (64 x 4 subscribers + 24); /camera/*: 8 x 4 + 24.
  const std::string defaults =
      fmt::format("size = {}\ncount = {}\n", iceoryx::chunk_payload_size(4096), 8 * (64 * 4 + 24));
  const std::string camera = fmt::format("size = {}\ncount = {}\n", iceoryx::chunk_payload_size(1 << 20), 8 * 4 + 24);
  EXPECT_NE(out.find(defaults), std::string::npos) << out;
  EXPECT_NE(out.find(camera), std::string::npos) << out;
  EXPECT_GE(iceoryx::chunk_payload_size(1 << 20), (1U << 20) + 320U) << "room for the message and shmbus's header";
  fs::remove(config);
}
