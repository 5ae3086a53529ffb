// shmbus-bench-scale: what one monitor scan costs per channel with 1,000 and
// 10,000 channels of full 1,000-stamp time lists, and the resident memory of
// a real shmbusd watching them.
//
//   shmbus_bench_scale [--channels 1000,10000] [--json]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "shmbus/cli.hpp"
#include "shmbus/daemon/http.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/monitor.hpp"
#include "shmbus/publisher.hpp"

using namespace shmbus;
using namespace std::chrono;

namespace {

std::int64_t mono() { return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count(); }

/// A line of /proc/PID/status ("VmRSS", "RssAnon", "RssShmem") in KiB.
long status_kib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

struct Row {
  std::size_t channels;
  double first_ns, idle_ns, steady_ns;
  double daemon_scan_ns;
  long daemon_rss_kib;
  long daemon_anon_kib;   ///< private memory
  long daemon_shmem_kib;  ///< mapped shared-memory pages (the channels)
};

/// A real shmbusd on the domain: its scan duration (from /metrics) and RSS.
struct DaemonMeasure {
  double scan_ns = -1;
  long rss = -1, anon = -1, shmem = -1;
};

DaemonMeasure measure_daemon(const std::string& domain, std::size_t channels) {
  // The daemon logs to a file: a pipe nobody drains would stop it when full.
  const std::string log_path = "/tmp/shmbus_bench_scale_" + std::to_string(::getpid()) + ".log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    ::execl(SHMBUSD_PATH, "shmbusd", "--foreground", "--domain", domain.c_str(), "--metrics-listen", "127.0.0.1:0",
            nullptr);
    ::_exit(127);
  }
  std::uint16_t port = 0;
  const auto deadline = steady_clock::now() + seconds(60);
  std::smatch m;
  while (port == 0 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
    std::ifstream in(log_path);
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (std::regex_search(log, m, std::regex(R"(\(port (\d+)\))"))) port = static_cast<std::uint16_t>(std::stoi(m[1]));
  }
  double scan_ns = -1;
  // Let it discover every channel and settle into steady scans.
  for (int i = 0; i < 100 && scan_ns < 0; ++i) {
    std::this_thread::sleep_for(milliseconds(300));
    try {
      const auto [code, body] = daemon::http_request({"127.0.0.1", port, "/metrics"}, "GET", "", "", 10000);
      std::smatch c;
      if (std::regex_search(body, c, std::regex(R"(shmbus_daemon_channels\{[^}]*\} (\d+))")) &&
          std::stoul(c[1]) >= channels) {
        std::this_thread::sleep_for(seconds(1));
        const auto [code2, body2] = daemon::http_request({"127.0.0.1", port, "/metrics"}, "GET", "", "", 10000);
        std::smatch s;
        if (std::regex_search(body2, s, std::regex(R"(shmbus_daemon_scan_duration_seconds\{[^}]*\} ([0-9.e+-]+))"))) {
          scan_ns = std::stod(s[1]) * 1e9;
        }
      }
    } catch (const std::exception&) {
    }
  }
  const DaemonMeasure d{scan_ns, status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon"), status_kib(pid, "RssShmem")};
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::unlink(log_path.c_str());
  return d;
}

Row run(std::size_t n) {
  Config c;
  c.domain = "bench_scale_" + std::to_string(::getpid()) + "_" + std::to_string(n);
  c.registry_capacity = 16384;
  c.defaults.capacity = 2;
  c.defaults.max_message_size = 8;
  c.defaults.time_list_capacity = 1024;
  c.defaults.thresholds_hz = std::array<double, 3>{1.0, 200.0, 1000.0};
  Row row{n, 0, 0, 0, -1, -1, -1, -1};
  {
    Context ctx(c);
    std::vector<std::unique_ptr<Publisher>> pubs;
    pubs.reserve(n);
    std::byte payload[8]{};
    for (std::size_t i = 0; i < n; ++i) {
      pubs.push_back(std::make_unique<Publisher>(fmt::format("/scale/c{}", i), TypeInfo::bytes(), ctx));
      for (int k = 0; k < 1000; ++k) pubs.back()->publish(payload, sizeof(payload));
    }
    monitor::Monitor monitor(c);
    // First scan: discovers every channel and reads its 1,000 stamps.
    std::int64_t t0 = mono();
    monitor.scan(mono());
    row.first_ns = static_cast<double>(mono() - t0) / static_cast<double>(n);
    // Idle scans: nothing new.
    constexpr int kScans = 20;
    t0 = mono();
    for (int i = 0; i < kScans; ++i) monitor.scan(mono());
    row.idle_ns = static_cast<double>(mono() - t0) / kScans / static_cast<double>(n);
    // Steady scans: 10 new stamps per channel between scans (100 Hz at the
    // default 100 ms scan period), scans timed alone.
    std::int64_t spent = 0;
    for (int i = 0; i < kScans; ++i) {
      for (auto& p : pubs) {
        for (int k = 0; k < 10; ++k) p->publish(payload, sizeof(payload));
      }
      t0 = mono();
      monitor.scan(mono());
      spent += mono() - t0;
    }
    row.steady_ns = static_cast<double>(spent) / kScans / static_cast<double>(n);
    const DaemonMeasure d = measure_daemon(c.domain, n);
    row.daemon_scan_ns = d.scan_ns > 0 ? d.scan_ns / static_cast<double>(n) : -1;
    row.daemon_rss_kib = d.rss;
    row.daemon_anon_kib = d.anon;
    row.daemon_shmem_kib = d.shmem;
  }
  introspect::clean_domain(c.domain, false);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"monitor scan cost per channel at scale", "shmbus_bench_scale"};
  std::vector<std::size_t> counts{1000, 10000};
  bool json = false;
  app.add_option("--channels", counts, "channel counts")->delimiter(',');
  app.add_flag("--json", json, "one JSON object");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  std::vector<Row> rows;
  for (std::size_t n : counts) rows.push_back(run(n));
  if (json) {
    std::string s = "{\"results\":[";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      s += fmt::format(
          "{}{{\"channels\":{},\"first_scan_ns_per_channel\":{:.1f},\"idle_scan_ns_per_channel\":{:.1f},"
          "\"steady_scan_ns_per_channel\":{:.1f},\"shmbusd_scan_ns_per_channel\":{:.1f},"
          "\"shmbusd_rss_kib\":{},\"shmbusd_rss_anon_kib\":{},\"shmbusd_rss_shmem_kib\":{}}}",
          i ? "," : "", r.channels, r.first_ns, r.idle_ns, r.steady_ns, r.daemon_scan_ns, r.daemon_rss_kib,
          r.daemon_anon_kib, r.daemon_shmem_kib);
    }
    std::printf("%s]}\n", s.c_str());
    return 0;
  }
  fmt::print("monitor scan cost per channel (1,000-stamp time lists; steady = 10 new stamps per channel per scan)\n");
  fmt::print("{:>9}  {:>12}  {:>12}  {:>12}  {:>14}  {:>30}\n", "channels", "first scan", "idle scan", "steady scan",
             "shmbusd scan", "shmbusd RSS (private + shm)");
  for (const Row& r : rows) {
    fmt::print("{:>9}  {:>9.0f} ns  {:>9.0f} ns  {:>9.0f} ns  {:>11.0f} ns  {:>8.1f} MiB ({:.1f} + {:.1f})\n",
               r.channels, r.first_ns, r.idle_ns, r.steady_ns, r.daemon_scan_ns,
               static_cast<double>(r.daemon_rss_kib) / 1024.0, static_cast<double>(r.daemon_anon_kib) / 1024.0,
               static_cast<double>(r.daemon_shmem_kib) / 1024.0);
  }
  return 0;
}
