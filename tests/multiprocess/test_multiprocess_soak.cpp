// Chaos soak: 4 channels, 6 publisher and 6 subscriber processes and a real
// shmbusd, while a driver SIGKILLs (and restarts), SIGSTOPs and SIGCONTs
// random ones. SHMBUS_SOAK_SECONDS sets the storm's length (default 60, as
// in CI; scripts/soak.sh DURATION for hours). Asserted: no torn message, no
// reordering, received + lost accounts for every sequence a subscriber saw;
// after the storm no subscriber stalls longer than 2 x stall_timeout, the
// sleeper count comes back to the real number of sleepers, shmbusd's rates
// match what the publishers publish, and `shmtool list` shows exactly the
// live endpoints.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>
#include <tuple>

#include "multiprocess/child_process.hpp"
#include "multiprocess/peer_protocol.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/shmbusd/http.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::kPeer;
namespace fs = std::filesystem;

namespace {

const std::string kDaemon = SHMBUSD_PATH;
const std::string kTool = SHMTOOL_PATH;
constexpr int kChannels = 4;
/// The soak channels' stall_timeout: long enough that a loaded 2-core
/// machine's scheduling alone does not reach it, short against the storm.
constexpr auto kStallTimeout = 50ms;

struct Peer {
  bool publisher;
  int channel;
  long pace_us;  ///< publishers
  int restarts = 0;
  std::unique_ptr<ChildProcess> proc;
};

std::string channel_name(int c) { return "/soak" + std::to_string(c); }

class Soak {
 public:
  explicit Soak(std::string domain) : domain_(std::move(domain)) {}

  void start(Peer& p, int index) {
    if (p.publisher) {
      // A new tag per life: a restarted publisher counts from 0 again.
      const std::string tag = std::to_string(1000 * (index + 1) + p.restarts);
      p.proc = std::make_unique<ChildProcess>(std::vector<std::string>{kPeer, "pub", domain_, channel_name(p.channel),
                                                                       tag, "0", "256", std::to_string(p.pace_us)});
    } else {
      p.proc = std::make_unique<ChildProcess>(
          std::vector<std::string>{kPeer, "sub", domain_, channel_name(p.channel), "0", "3600000"});
    }
  }

 private:
  std::string domain_;
};

/// Checks what a subscriber that ran to SIGTERM reports; returns its fields.
std::map<std::string, long long> expect_sound_subscriber(ChildProcess& s) {
  s.signal(SIGCONT);
  s.signal(SIGTERM);
  const int status = s.wait(60s);
  EXPECT_FALSE(s.timed_out()) << "subscriber hung: " << s.output();
  EXPECT_TRUE(WIFEXITED(status)) << s.output();
  auto f = s.fields();
  EXPECT_EQ(f["torn"], 0) << s.output();
  EXPECT_EQ(f["order"], 0) << s.output();
  EXPECT_EQ(f["accounting"], 0) << "received + lost must account for every sequence: " << s.output();
  EXPECT_EQ(f["counter_lost"], f["lost"]) << "every loss counted in shared memory: " << s.output();
  return f;
}

/// Runs a command; its exit code and stdout.
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  if (f == nullptr) return {-1, out};
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof(buf), f)) out.append(buf, n);
  const int status = ::pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

double metric(const std::string& text, const std::string& family, const std::string& channel) {
  std::smatch m;
  const std::regex re(family + R"(\{domain="[^"]*",channel=")" + channel + R"("\} ([0-9.eE+-]+))");
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1;
}

}  // namespace

TEST(SoakTest, ChaosOfKillsStopsAndRestartsBreaksNothing) {
  const char* env = std::getenv("SHMBUS_SOAK_SECONDS");  // NOLINT(concurrency-mt-unsafe)
  const auto storm = std::chrono::seconds(env != nullptr ? std::atoi(env) : 60);
  const std::string domain = test::unique_domain("soak");
  shmbus::test::DomainCleanup cleanup{domain};

  // The channels, made first with the soak's stall_timeout (the creator's
  // settings hold for everyone).
  Config config = test::peer_config(domain, "soak_driver");
  config.defaults.stall_timeout = kStallTimeout;
  {
    Context ctx{config};
    for (int c = 0; c < kChannels; ++c) Publisher make(channel_name(c), TypeInfo::bytes(), ctx);
  }

  const fs::path dir = fs::temp_directory_path() / ("shmbus_soak_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path config_file = dir / "shmbus.toml";
  std::ofstream(config_file) << "[monitor]\nscan_period = \"50ms\"\nmetrics_listen = \"127.0.0.1:0\"\n";
  ChildProcess shmbusd({kDaemon, "--foreground", "--config", config_file.string(), "--domain", domain}, true);
  ASSERT_TRUE(shmbusd.wait_for_output("(port ", 20s)) << shmbusd.poll_output();
  std::smatch port_match;
  const std::string daemon_out = shmbusd.poll_output();
  ASSERT_TRUE(std::regex_search(daemon_out, port_match, std::regex(R"(\(port (\d+)\))")));
  const auto port = static_cast<std::uint16_t>(std::stoi(port_match[1]));

  std::vector<Peer> peers;
  for (const auto& [publisher, channel, pace] : std::vector<std::tuple<bool, int, long>>{{true, 0, 500},
                                                                                         {true, 1, 700},
                                                                                         {true, 2, 1000},
                                                                                         {true, 3, 1300},
                                                                                         {true, 0, 900},
                                                                                         {true, 1, 1100},
                                                                                         {false, 0, 0},
                                                                                         {false, 1, 0},
                                                                                         {false, 2, 0},
                                                                                         {false, 3, 0},
                                                                                         {false, 0, 0},
                                                                                         {false, 2, 0}}) {
    peers.push_back(Peer{publisher, channel, pace, 0, nullptr});
  }
  Soak soak(domain);
  for (std::size_t i = 0; i < peers.size(); ++i) soak.start(peers[i], static_cast<int>(i));

  // The storm.
  std::mt19937 rng(20261122);
  std::uniform_int_distribution<std::size_t> pick(0, peers.size() - 1);
  std::uniform_int_distribution<int> action(0, 9), pause_ms(1, 30), gap_ms(20, 80);
  int kills = 0, stops = 0;
  const auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < storm) {
    const std::size_t i = pick(rng);
    Peer& p = peers[i];
    if (action(rng) < 4) {
      p.proc->signal(SIGKILL);
      p.proc->wait(10s);
      ++p.restarts;
      ++kills;
      soak.start(p, static_cast<int>(i));
    } else {
      p.proc->signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      p.proc->signal(SIGCONT);
      ++stops;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng)));
  }
  std::printf("storm: %d kills, %d stops over %lld s\n", kills, stops, static_cast<long long>(storm.count()));

  // Subscribers that lived through the storm: sound accounting.
  long long delivered = 0;
  for (Peer& p : peers) {
    if (p.publisher) continue;
    delivered += expect_sound_subscriber(*p.proc)["delivered"];
    soak.start(p, 0);  // fresh, measuring only the time after the storm
  }
  EXPECT_GT(delivered, 0);
  for (int c = 0; c < kChannels; ++c) {
    const auto wanted = static_cast<std::size_t>(
        std::count_if(peers.begin(), peers.end(), [c](const Peer& p) { return !p.publisher && p.channel == c; }));
    test::wait_for_subscribers(domain, channel_name(c), wanted);
  }

  // shmbusd's rates against what the publishers publish (the write cursor),
  // counted over the same last second as shmbusd's 1 s window ends (its
  // last scan is at most one 50 ms scan period before the request): on a
  // loaded machine the publishers' rates drift, so a longer or earlier
  // interval would compare different seconds.
  std::this_thread::sleep_for(1500ms);  // a full window after the storm
  std::vector<std::uint64_t> m0(kChannels);
  for (int c = 0; c < kChannels; ++c) m0[c] = introspect::ChannelReader(domain, channel_name(c)).view().messages;
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const auto metrics = shmbusd::http_request({"127.0.0.1", port, "/metrics"}, "GET", "", "").second;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int c = 0; c < kChannels; ++c) {
    const double published =
        static_cast<double>(introspect::ChannelReader(domain, channel_name(c)).view().messages - m0[c]) / seconds;
    const double measured = metric(metrics, "shmbus_channel_frequency_hz", channel_name(c));
    EXPECT_NEAR(measured, published, 0.1 * published) << channel_name(c);
  }

  // `shmtool list` shows exactly the live endpoints.
  const auto [code, out] = run(kTool + " list --json --domain " + domain);
  ASSERT_EQ(code, 0) << out;
  const auto rows = nlohmann::json::parse(out);
  for (int c = 0; c < kChannels; ++c) {
    const auto count = [&](bool publisher) {
      return std::count_if(peers.begin(), peers.end(),
                           [&](const Peer& p) { return p.publisher == publisher && p.channel == c; });
    };
    bool found = false;
    for (const auto& row : rows) {
      if (row["name"] != channel_name(c)) continue;
      found = true;
      EXPECT_EQ(row["publishers"], count(true)) << row.dump();
      EXPECT_EQ(row["subscribers"], count(false)) << row.dump();
    }
    EXPECT_TRUE(found) << channel_name(c);
  }

  // Publishers stop: every subscriber goes to sleep, and the sleeper count
  // is exactly that (none left behind by subscribers killed asleep).
  for (Peer& p : peers) {
    if (!p.publisher) continue;
    p.proc->signal(SIGTERM);
    EXPECT_TRUE(WIFEXITED(p.proc->wait(30s))) << p.proc->output();
  }
  std::uint32_t sleepers = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    sleepers = 0;
    for (int c = 0; c < kChannels; ++c) sleepers += introspect::ChannelReader(domain, channel_name(c)).view().sleepers;
    if (sleepers == 6) break;
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(sleepers, 6U) << "six subscribers, all asleep";

  for (Peer& p : peers) {
    if (p.publisher) continue;
    auto f = expect_sound_subscriber(*p.proc);
    EXPECT_LE(f["max_stall_us"], 2 * std::chrono::duration_cast<std::chrono::microseconds>(kStallTimeout).count())
        << "a stall after the storm: " << p.proc->output();
  }
  shmbusd.signal(SIGTERM);
  shmbusd.wait(20s);
  fs::remove_all(dir);
}
