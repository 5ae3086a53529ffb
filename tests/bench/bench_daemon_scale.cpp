// shmbus-bench-scale: what one monitor scan costs per channel with 1,000 and
// 10,000 channels of full 1,000-stamp time lists, the resident memory of a
// real shmbusd watching them (private, mapped, and proportional), and how
// long `shmtool list` and `shmtool top -n 1` take to their first screen and
// with what peak memory; with --browsers, the daemon's CPU while its web
// page is open in 0, 1, 10 tabs of a headless chromium
// (tests/js/daemon_page_load.mjs), at the first channel count.
//
//   shmbus_bench_scale [--channels 1000,10000] [--capacity 2] [--max-message-size 8]
//                      [--browsers 0,1,10] [--cpu-seconds 20] [--json]
//
// --capacity and --max-message-size shape each channel's ring, which the
// monitor never reads: with a ring larger than 64 KiB the daemon's memory
// shows whether it maps only the channels' fronts.
//
// 50,000 channels need 50,000 mappings in this process and in shmbusd:
// within vm.max_map_count (65,530 by default). The in-process monitor would
// map them a second time: over that limit its scans are not measured ("-";
// -1 in the JSON), and the daemon's and the tools' figures still are.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>

#include "shmbus/cli.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/monitor.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/shmbusd/http.hpp"

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

/// The proportional set size of a process (smaps_rollup), KiB: shared pages
/// divided among the processes that map them.
long pss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Pss:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

/// One run of shmtool to its exit: wall time and peak RSS (-1: it failed).
struct ToolMeasure {
  double seconds = -1;
  long max_rss_kib = -1;
};

ToolMeasure measure_shmtool(std::vector<std::string> args) {
  std::vector<char*> argv;
  args.insert(args.begin(), "shmtool");
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto t0 = steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execv(SHMTOOL_PATH, argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  if (pid < 0 || ::wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return {duration<double>(steady_clock::now() - t0).count(), ru.ru_maxrss};
}

/// shmbusd's CPU with its page open in `tabs` tabs.
struct PageLoad {
  int tabs = 0;
  double cpu_percent = -1;  ///< of one core, over the measured interval
};

struct Row {
  std::vector<PageLoad> pages;
  std::size_t channels;
  double first_ns, idle_ns, steady_ns;
  double daemon_scan_ns;
  long daemon_rss_kib;
  long daemon_anon_kib;   ///< private memory
  long daemon_shmem_kib;  ///< mapped shared-memory pages (the channels)
  long daemon_pss_kib;    ///< proportional: shared pages divided among their mappers
  ToolMeasure list, top;  ///< `shmtool list`, `shmtool top -n 1`
};

/// A process's CPU time so far (utime + stime of /proc/PID/stat), seconds.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command (which may hold spaces): state is field 3,
  // utime 14, stime 15.
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// shmbusd's CPU over `seconds` while `tabs` tabs show its page (0: none).
PageLoad page_load(pid_t daemon, std::uint16_t port, int tabs, double seconds) {
  PageLoad p{tabs, -1};
  FILE* browser = nullptr;
  if (tabs > 0) {
    const std::string command = fmt::format("node {}/tests/js/daemon_page_load.mjs http://127.0.0.1:{}/ {} {:.0f}",
                                            SHMBUS_SOURCE_DIR, port, tabs, seconds + 5);
    browser = ::popen(command.c_str(), "r");
    std::array<char, 4096> line{};
    bool open = false;
    while (browser != nullptr && !open && std::fgets(line.data(), line.size(), browser) != nullptr) {
      open = std::string_view{line.data()}.starts_with("pages open");
    }
    if (!open) {
      if (browser != nullptr) ::pclose(browser);
      std::fprintf(stderr, "shmbus_bench_scale: the page did not open in %d tabs (is chromium installed?)\n", tabs);
      return p;
    }
    std::this_thread::sleep_for(milliseconds(500));
  }
  const double c0 = cpu_seconds(daemon);
  const auto t0 = steady_clock::now();
  std::this_thread::sleep_for(duration<double>(seconds));
  const double c1 = cpu_seconds(daemon);
  p.cpu_percent = 100.0 * (c1 - c0) / duration<double>(steady_clock::now() - t0).count();
  if (browser != nullptr) ::pclose(browser);
  return p;
}

/// A real shmbusd on the domain: its scan duration (from /metrics), RSS,
/// and its CPU with its page open in each of `tabs` tab counts.
struct DaemonMeasure {
  double scan_ns = -1;
  long rss = -1, anon = -1, shmem = -1, pss = -1;
  std::vector<PageLoad> pages;
};

DaemonMeasure measure_daemon(const std::string& domain, std::size_t channels, const std::vector<int>& tabs,
                             double cpu_seconds_each) {
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
      const auto [code, body] = shmbusd::http_request({"127.0.0.1", port, "/metrics"}, "GET", "", "", 10000);
      std::smatch c;
      if (std::regex_search(body, c, std::regex(R"(shmbus_daemon_channels\{[^}]*\} (\d+))")) &&
          std::stoul(c[1]) >= channels) {
        std::this_thread::sleep_for(seconds(1));
        const auto [code2, body2] = shmbusd::http_request({"127.0.0.1", port, "/metrics"}, "GET", "", "", 10000);
        std::smatch s;
        if (std::regex_search(body2, s, std::regex(R"(shmbus_daemon_scan_duration_seconds\{[^}]*\} ([0-9.e+-]+))"))) {
          scan_ns = std::stod(s[1]) * 1e9;
        }
      }
    } catch (const std::exception&) {
    }
  }
  // Two statistics windows more: the memory of steady state, not of start-up.
  std::this_thread::sleep_for(seconds(2));
  DaemonMeasure d{
      scan_ns, status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon"), status_kib(pid, "RssShmem"), pss_kib(pid), {}};
  for (const int n : tabs) d.pages.push_back(page_load(pid, port, n, cpu_seconds_each));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::unlink(log_path.c_str());
  return d;
}

/// vm.max_map_count: how many mappings a process may have.
std::size_t max_map_count() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  std::size_t n = 65530;
  in >> n;
  return n;
}

/// The scan cost of a monitor in this process: first scan, idle scans, and
/// steady scans with 10 new stamps per channel each.
void measure_in_process(const Config& c, std::size_t n, std::vector<std::unique_ptr<Publisher>>& pubs, Row& row) {
  std::byte payload[8]{};
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
      for (int k = 0; k < 10; ++k) static_cast<void>(p->publish(payload, sizeof(payload)));
    }
    t0 = mono();
    monitor.scan(mono());
    spent += mono() - t0;
  }
  row.steady_ns = static_cast<double>(spent) / kScans / static_cast<double>(n);
}

/// Each channel's ring: the time list and endpoint tables are the same
/// whatever it is, and an observer never reads it.
struct Ring {
  std::uint32_t capacity = 2;
  std::uint32_t max_message_size = 8;
};

Row run(std::size_t n, Ring ring, const std::vector<int>& tabs, double cpu_seconds_each) {
  Config c;
  c.domain = "bench_scale_" + std::to_string(::getpid()) + "_" + std::to_string(n);
  c.registry_capacity = static_cast<std::uint32_t>(std::bit_ceil(std::max<std::size_t>(16384, n + 1024)));
  c.defaults.capacity = ring.capacity;
  c.defaults.max_message_size = ring.max_message_size;
  c.defaults.time_list_capacity = 1024;
  c.defaults.thresholds_hz = std::array<double, 3>{1.0, 200.0, 1000.0};
  Row row{{}, n, -1, -1, -1, -1, -1, -1, -1, -1, {}, {}};
  {
    Context ctx(c);
    std::vector<std::unique_ptr<Publisher>> pubs;
    pubs.reserve(n);
    std::byte payload[8]{};
    for (std::size_t i = 0; i < n; ++i) {
      pubs.push_back(std::make_unique<Publisher>(fmt::format("/scale/c{}", i), TypeInfo::bytes(), ctx));
      for (int k = 0; k < 1000; ++k) static_cast<void>(pubs.back()->publish(payload, sizeof(payload)));
    }
    // The in-process monitor maps every channel a second time: only while
    // both mappings fit under vm.max_map_count (shmbusd and shmtool, other
    // processes, map them once).
    if (2 * n + 4096 < max_map_count()) measure_in_process(c, n, pubs, row);
    const DaemonMeasure d = measure_daemon(c.domain, n, tabs, cpu_seconds_each);
    row.pages = d.pages;
    row.daemon_scan_ns = d.scan_ns > 0 ? d.scan_ns / static_cast<double>(n) : -1;
    row.daemon_rss_kib = d.rss;
    row.daemon_anon_kib = d.anon;
    row.daemon_shmem_kib = d.shmem;
    row.daemon_pss_kib = d.pss;
    row.list = measure_shmtool({"--domain", c.domain, "list"});
    row.top = measure_shmtool({"--domain", c.domain, "top", "-n", "1"});
  }
  introspect::clean_domain(c.domain, false);
  return row;
}

std::string page_json(const std::vector<PageLoad>& pages) {
  std::string s;
  for (const PageLoad& p : pages) {
    s += fmt::format("{}{{\"tabs\":{},\"cpu_percent\":{:.3f}}}", s.empty() ? "" : ",", p.tabs, p.cpu_percent);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"monitor scan cost per channel at scale", "shmbus_bench_scale"};
  std::vector<std::size_t> counts{1000, 10000};
  bool json = false;
  std::vector<int> tabs;
  double cpu_seconds_each = 20;
  Ring ring;
  app.add_option("--channels", counts, "channel counts")->delimiter(',');
  app.add_option("--capacity", ring.capacity, "each channel's slots (a power of two)")->check(CLI::Range(2U, 1U << 16));
  app.add_option("--max-message-size", ring.max_message_size, "each channel's slot payload, bytes")
      ->check(CLI::Range(8U, 1U << 24));
  app.add_option("--browsers", tabs,
                 "shmbusd's CPU with its page open in these many tabs (0: none), at the first count")
      ->delimiter(',');
  app.add_option("--cpu-seconds", cpu_seconds_each, "how long each CPU figure is measured")->check(CLI::Range(1, 600));
  app.add_flag("--json", json, "one JSON object");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  std::vector<Row> rows;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    rows.push_back(run(counts[i], ring, i == 0 ? tabs : std::vector<int>{}, cpu_seconds_each));
  }
  if (json) {
    std::string s =
        fmt::format("{{\"capacity\":{},\"max_message_size\":{},\"results\":[", ring.capacity, ring.max_message_size);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      s += fmt::format(
          "{}{{\"channels\":{},\"first_scan_ns_per_channel\":{:.1f},\"idle_scan_ns_per_channel\":{:.1f},"
          "\"steady_scan_ns_per_channel\":{:.1f},\"shmbusd_scan_ns_per_channel\":{:.1f},"
          "\"shmbusd_rss_kib\":{},\"shmbusd_rss_anon_kib\":{},\"shmbusd_rss_shmem_kib\":{},\"shmbusd_pss_kib\":{},"
          "\"list_seconds\":{:.4f},\"list_max_rss_kib\":{},\"top_seconds\":{:.4f},\"top_max_rss_kib\":{},"
          "\"page_cpu\":[{}]}}",
          i ? "," : "", r.channels, r.first_ns, r.idle_ns, r.steady_ns, r.daemon_scan_ns, r.daemon_rss_kib,
          r.daemon_anon_kib, r.daemon_shmem_kib, r.daemon_pss_kib, r.list.seconds, r.list.max_rss_kib, r.top.seconds,
          r.top.max_rss_kib, page_json(r.pages));
    }
    std::printf("%s]}\n", s.c_str());
    return 0;
  }
  fmt::print("monitor scan cost per channel (1,000-stamp time lists; steady = 10 new stamps per channel per scan)\n");
  fmt::print("{:>9}  {:>12}  {:>12}  {:>12}  {:>14}  {:>30}\n", "channels", "first scan", "idle scan", "steady scan",
             "shmbusd scan", "shmbusd RSS (private + shm)");
  const auto mib = [](long kib) { return static_cast<double>(kib) / 1024.0; };
  // "-": not measured (the in-process monitor at counts over the mapping limit).
  const auto ns = [](double v) { return v < 0 ? std::string("-") : fmt::format("{:.0f} ns", v); };
  for (const Row& r : rows) {
    fmt::print("{:>9}  {:>12}  {:>12}  {:>12}  {:>14}  {:>8.1f} MiB ({:.1f} + {:.1f})\n", r.channels, ns(r.first_ns),
               ns(r.idle_ns), ns(r.steady_ns), ns(r.daemon_scan_ns), mib(r.daemon_rss_kib), mib(r.daemon_anon_kib),
               mib(r.daemon_shmem_kib));
  }
  fmt::print("\n{:>9}  {:>12}  {:>24}  {:>24}\n", "channels", "shmbusd PSS", "shmtool list (peak RSS)",
             "shmtool top -n 1 (peak RSS)");
  for (const Row& r : rows) {
    fmt::print("{:>9}  {:>8.1f} MiB  {:>9.3f} s ({:>6.1f} MiB)  {:>9.3f} s ({:>6.1f} MiB)\n", r.channels,
               mib(r.daemon_pss_kib), r.list.seconds, mib(r.list.max_rss_kib), r.top.seconds, mib(r.top.max_rss_kib));
  }
  for (const Row& r : rows) {
    if (r.pages.empty()) continue;
    fmt::print("shmbusd's CPU at {} channels with its web page open (one headless chromium, tabs updating):\n",
               r.channels);
    const double none = r.pages.front().tabs == 0 ? r.pages.front().cpu_percent : 0;
    for (const PageLoad& p : r.pages) {
      fmt::print("  {:>2} tabs: {:6.2f}% of a core", p.tabs, p.cpu_percent);
      if (p.tabs > 0 && r.pages.front().tabs == 0) {
        fmt::print("  (+{:.2f}% per tab over none)", (p.cpu_percent - none) / p.tabs);
      }
      fmt::print("\n");
    }
  }
  return 0;
}
