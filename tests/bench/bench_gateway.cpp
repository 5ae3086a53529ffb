// shmbus-bench-gateway: host A -> host B through shmbus-gateway over Cyclone
// DDS, on two network namespaces joined by a veth pair, against Cyclone's
// own ddsperf on the same pair in the same run (the raw DDS floor).
//
// Latency: a round trip like ddsperf's ping/pong. This program publishes a
// ping into A's /bench/ping (A's gateway exports it, B's imports it), takes
// it from B's channel and publishes it back into B's /bench/pong (B's
// gateway exports it, A's imports it), then takes it from A's: both gateways
// and the veth pair twice. The shared memory of both domains is this
// machine's, so one process plays both hosts' applications; only the
// gateways and ddsperf run inside the namespaces.
// Throughput: A publishes with at most `--window` messages not yet received
// on B (lossless flow control); messages per second received on B, against
// ddsperf pub/sub (reliable, the same sizes).
//
//   shmbus-bench-gateway [--sizes 64,4096,1048576] [--seconds 2] [--smoke] [--json]
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/context.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "support/test_domain.hpp"
#include "support/two_hosts.hpp"

namespace {

using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::TwoHosts;

const std::string kGateway = SHMBUS_GATEWAY_PATH;

struct Row {
  std::size_t size = 0;
  double gateway_rtt_p50_us = 0, gateway_rtt_p99_us = 0;
  double ddsperf_rtt_p50_us = 0;
  double gateway_rate = 0;  ///< messages per second received on B
  double ddsperf_rate = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

/// A domain with a gateway in host `host` and this process's context on it.
struct Side {
  Side(const TwoHosts& hosts, int host, std::size_t size, const std::string& wait_spin, const std::string& entries) {
    config.domain = fmt::format("benchgw{}_{}_{}", ::getpid(), host, size);
    cleanup.domain = config.domain;
    config.node = "bench";
    const std::string settings =
        fmt::format("[[channel]]\nname = \"/bench/*\"\ncapacity = 64\nmax_message_size = {}\nwait_spin = \"{}\"\n",
                    std::max<std::size_t>(size, 64), wait_spin);
    config = shmbus::Config::parse(fmt::format("domain = \"{}\"\nnode = \"bench\"\n{}", config.domain, settings),
                                   "bench.toml");
    file = std::filesystem::temp_directory_path() / (config.domain + ".toml");
    std::ofstream(file) << fmt::format("domain = \"{}\"\n{}{}", config.domain, settings, entries);
    context = std::make_unique<shmbus::Context>(config);
    gateway = std::make_unique<ChildProcess>(hosts.on(host, {kGateway, "--config", file.string()}), true,
                                             std::vector<std::string>{"CYCLONEDDS_URI=" + hosts.dds_config(host)});
    if (!gateway->wait_for_output("carrying domain", 10s)) {
      throw shmbus::Error(shmbus::Errc::kResource, "the gateway did not start: " + gateway->output());
    }
  }
  ~Side() {
    gateway->signal(SIGTERM);
    gateway->wait(10s);
    std::filesystem::remove(file);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  /// Destroyed last: once the gateway stopped and our endpoints closed,
  /// the domain's segments are removed.
  shmbus::test::DomainCleanup cleanup;
  shmbus::Config config;
  std::filesystem::path file;
  std::unique_ptr<shmbus::Context> context;
  std::unique_ptr<ChildProcess> gateway;
};

/// Takes the next message of `sub` into `buffer` within `timeout`.
bool take_within(shmbus::Subscriber& sub, std::vector<std::byte>& buffer, std::chrono::milliseconds timeout) {
  const std::int64_t deadline = shmbus::mono_now_ns() + timeout.count() * 1'000'000;
  while (shmbus::mono_now_ns() < deadline) {
    if (sub.take(buffer).ok()) return true;
    sub.wait(1ms);
  }
  return false;
}

void gateway_row(const TwoHosts& hosts, Row& row, int round_trips, double seconds, std::size_t window,
                 const std::string& wait_spin) {
  const std::size_t size = row.size;
  Side a(hosts, 0, size, wait_spin, "[[gateway]]\nexport = [\"/bench/ping\"]\nimport = [\"/bench/pong\"]\n");
  Side b(hosts, 1, size, wait_spin, "[[gateway]]\nexport = [\"/bench/pong\"]\nimport = [\"/bench/ping\"]\n");
  const shmbus::TypeInfo raw = shmbus::TypeInfo::bytes();
  shmbus::Publisher ping(std::string{"/bench/ping"}, raw, *a.context);
  shmbus::Publisher pong(std::string{"/bench/pong"}, raw, *b.context);
  shmbus::SubscriberOptions wait_for;
  wait_for.wait_for_channel = true;
  shmbus::Subscriber ping_b("/bench/ping", std::nullopt, *b.context, wait_for);
  shmbus::Subscriber pong_a("/bench/pong", std::nullopt, *a.context, wait_for);
  std::vector<std::byte> payload(size, std::byte{0x5a}), buffer(size);
  // Warm up until a round trip completes (discovery, matching).
  bool warm = false;
  for (int i = 0; i < 300 && !warm; ++i) {
    static_cast<void>(ping.publish(payload));
    if (take_within(ping_b, buffer, 50ms)) {
      static_cast<void>(pong.publish(buffer));
      warm = take_within(pong_a, buffer, 1s);
    }
  }
  if (!warm) throw shmbus::Error(shmbus::Errc::kResource, "no round trip through the gateways within 15 s");
  while (ping_b.take(buffer).ok() || pong_a.take(buffer).ok()) {
  }
  std::vector<double> rtt;
  for (int i = 0; i < round_trips; ++i) {
    const std::int64_t t0 = shmbus::mono_now_ns();
    static_cast<void>(ping.publish(payload));
    if (!take_within(ping_b, buffer, 2s)) continue;
    static_cast<void>(pong.publish(buffer));
    if (!take_within(pong_a, buffer, 2s)) continue;
    rtt.push_back(static_cast<double>(shmbus::mono_now_ns() - t0) / 1e3);
  }
  row.gateway_rtt_p50_us = percentile(rtt, 0.5);
  row.gateway_rtt_p99_us = percentile(rtt, 0.99);

  // Throughput: A publishes while fewer than `window` are on their way.
  std::uint64_t sent = 0, received = 0;
  const std::int64_t start = shmbus::mono_now_ns();
  const std::int64_t end = start + static_cast<std::int64_t>(seconds * 1e9);
  while (shmbus::mono_now_ns() < end) {
    if (sent - received < window) {
      static_cast<void>(ping.publish(payload));
      ++sent;
    }
    while (ping_b.take(buffer).ok()) ++received;
    if (sent - received >= window) ping_b.wait(1ms);
  }
  row.gateway_rate = static_cast<double>(received) / (static_cast<double>(shmbus::mono_now_ns() - start) / 1e9);
}

/// ddsperf ping/pong and pub/sub between the hosts: the DDS floor.
void ddsperf_row(const TwoHosts& hosts, Row& row, double seconds, int dds_domain) {
  const std::string size = std::to_string(row.size);
  const std::string duration = fmt::format("{}", std::max(2, static_cast<int>(seconds) + 2));
  const auto on = [&](int host, std::vector<std::string> args) {
    return std::make_unique<ChildProcess>(hosts.on(host, args), true,
                                          std::vector<std::string>{"CYCLONEDDS_URI=" + hosts.dds_config(host)});
  };
  {
    auto pong = on(1, {"ddsperf", "-i", std::to_string(dds_domain), "-D", duration, "pong"});
    auto ping = on(0, {"ddsperf", "-i", std::to_string(dds_domain), "-D", duration, "ping", "size", size});
    ping->wait(60s);
    pong->wait(10s);
    // Per-second lines: "... size S mean Xus min ... 50% Yus ..."; the
    // median of the seconds after the first (discovery).
    std::vector<double> p50;
    const std::regex line("size " + size + " mean [0-9.]+us min [0-9.]+us 50% ([0-9.]+)us");
    const std::string out = ping->output();
    for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
      p50.push_back(std::stod((*it)[1]));
    }
    if (p50.size() > 1) p50.erase(p50.begin());
    row.ddsperf_rtt_p50_us = percentile(p50, 0.5);
  }
  {
    auto sub = on(1, {"ddsperf", "-i", std::to_string(dds_domain + 1), "-D", duration, "sub"});
    auto pub = on(0, {"ddsperf", "-i", std::to_string(dds_domain + 1), "-D", duration, "pub", "size", size});
    pub->wait(60s);
    sub->wait(10s);
    std::vector<double> rates;
    const std::regex line("size " + size + " total [0-9]+ lost [0-9]+ delta [0-9]+ lost [0-9]+ rate ([0-9.]+) kS/s");
    const std::string out = sub->output();
    for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
      rates.push_back(std::stod((*it)[1]) * 1e3);
    }
    // The busy seconds: drop the ramp-up and the tail after the publisher left.
    std::sort(rates.begin(), rates.end());
    row.ddsperf_rate = rates.empty() ? 0 : percentile(rates, 0.75);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shmbus-gateway between two hosts (network namespaces) against Cyclone's ddsperf",
               "shmbus-bench-gateway"};
  std::vector<std::size_t> sizes{64, 4096, 1U << 20};
  double seconds = 2;
  int round_trips = 2000;
  std::size_t window = 64;
  std::string wait_spin = "50us";
  bool smoke = false, as_json = false;
  app.add_option("--sizes", sizes, "message sizes in bytes")->delimiter(',');
  app.add_option("--seconds", seconds, "seconds of throughput per size");
  app.add_option("--round-trips", round_trips, "round trips per size (a tenth for 1 MiB and more)");
  app.add_option("--window", window, "messages in flight in the throughput run");
  app.add_option("--wait-spin", wait_spin,
                 "the channels' wait_spin (default 50us, the default): how long a wait spins before it sleeps");
  app.add_flag("--smoke", smoke, "tiny run: 64 B and 4 KiB, 100 round trips, 0.5 s (CI)");
  app.add_flag("--json", as_json, "one JSON object");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  if (smoke) {
    sizes = {64, 4096};
    seconds = 0.5;
    round_trips = 100;
  }
  return shmbus::cli::guarded("shmbus-bench-gateway", [&] {
    const TwoHosts hosts;
    if (!hosts.error().empty()) {
      std::printf("shmbus-bench-gateway: skipped: %s\n", hosts.error().c_str());
      return 0;
    }
    std::vector<Row> rows;
    int dds_domain = 100 + ::getpid() % 50;
    for (const std::size_t size : sizes) {
      Row row;
      row.size = size;
      gateway_row(hosts, row, size >= (1U << 20) ? std::max(10, round_trips / 10) : round_trips, seconds, window,
                  wait_spin);
      ddsperf_row(hosts, row, seconds, dds_domain);
      dds_domain += 2;
      rows.push_back(row);
    }
    if (as_json) {
      nlohmann::json j = nlohmann::json::array();
      for (const Row& r : rows) {
        j.push_back({{"size", r.size},
                     {"gateway_rtt_p50_us", r.gateway_rtt_p50_us},
                     {"gateway_rtt_p99_us", r.gateway_rtt_p99_us},
                     {"ddsperf_rtt_p50_us", r.ddsperf_rtt_p50_us},
                     {"gateway_msgs_per_s", r.gateway_rate},
                     {"ddsperf_msgs_per_s", r.ddsperf_rate}});
      }
      std::printf("%s\n", j.dump().c_str());
      return 0;
    }
    std::printf("host A -> host B over a veth pair (two network namespaces), Cyclone DDS, reliable; wait_spin %s\n",
                wait_spin.c_str());
    std::printf("%10s %16s %16s %8s %16s %16s %8s\n", "size", "gateway rtt p50", "ddsperf rtt p50", "ratio",
                "gateway msg/s", "ddsperf msg/s", "ratio");
    for (const Row& r : rows) {
      std::printf("%10zu %13.1f us %13.1f us %7.2fx %16.0f %16.0f %7.2fx\n", r.size, r.gateway_rtt_p50_us,
                  r.ddsperf_rtt_p50_us, r.ddsperf_rtt_p50_us > 0 ? r.gateway_rtt_p50_us / r.ddsperf_rtt_p50_us : 0,
                  r.gateway_rate, r.ddsperf_rate, r.ddsperf_rate > 0 ? r.gateway_rate / r.ddsperf_rate : 0);
    }
    return 0;
  });
}
