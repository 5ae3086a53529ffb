// shmbus-bench peers: two processes on two cores, shmbus against iceoryx,
// Boost.Interprocess message_queue, a Unix-domain socket and two references
// (floor: one shared word; spsc: a minimal ring), in one run; and a service
// call (shmbus, iceoryx request/response) against the same round trip over
// two channels.
//
//   latency:    ping-pong, one-way = RTT/2, p50/p99/p99.9 after warm-up
//   throughput: one-way, lossless, counted by the receiver
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "peer_transports.hpp"
#include "pmu_counters.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/iceoryx.hpp"

using namespace shmbus::bench;

namespace {

constexpr const char* kTransportNames =
    "floor,spsc,shmbus,shmbus_nohook,shmbus_block,shmbus_source,node,service,iceoryx,shmbus_iceoryx,"
    "iceoryx_service,boost_mq,uds,node_cloud,iceoryx_loan,node_typed,rclcpp,rclcpp_cloud";

struct Options {
  std::uint64_t rounds = 100'000;
  std::uint64_t warmup = 10'000;
  std::uint64_t messages = 1'000'000;
  std::vector<std::size_t> sizes{64, 4096};
  std::vector<std::string> transports{"floor",   "spsc",    "shmbus",         "shmbus_nohook",   "shmbus_block", "node",
                                      "service", "iceoryx", "shmbus_iceoryx", "iceoryx_service", "boost_mq",     "uds"};
  /// The throughput test's flow window for transports that overwrite (at
  /// most this many messages in flight, an ack every quarter); 0: theirs.
  std::uint64_t window = 0;
  std::vector<std::string> modes{"poll", "block"};
  unsigned repeat = 1;
  bool json = false;
  /// Counters per message in the latency runs: hardware (needs a PMU), or
  /// software events (the same view, for machines without one).
  bool counters = false;
  PmuCounters::Kind counter_kind = PmuCounters::Kind::kHardware;
};

/// One row: the medians over the run's repeats, and each repeat's p50 and
/// throughput (in repeat order, for spreads and paired ratios).
struct Result {
  std::string transport;
  Mode mode;
  std::size_t size;
  double p50 = 0, p99 = 0, p999 = 0;
  std::optional<double> msgs_per_s;
  std::vector<double> p50_runs, tput_runs;
  /// --counters: each latency run's counts per message (PmuCounters order).
  std::vector<std::array<double, PmuCounters::kCount>> counter_runs;
};

/// Each repeat's value of `runs` over the same repeat's of `ref` (paired:
/// measured in the same round); empty when the rows' repeats differ.
std::vector<double> paired_ratios(const std::vector<double>& runs, const std::vector<double>& ref) {
  std::vector<double> ratios;
  if (runs.size() != ref.size()) return ratios;
  for (std::size_t i = 0; i < runs.size(); ++i) ratios.push_back(runs[i] / ref[i]);
  return ratios;
}

/// The median over a row's runs of counter `k` per message.
double counter_median(const Result& r, std::size_t k) {
  std::vector<double> v;
  for (const auto& run : r.counter_runs) v.push_back(run[k]);
  return median(v);
}

/// "min-max" of a row's repeats, as a percentage around the median.
std::string spread(const std::vector<double>& runs, double med) {
  if (runs.size() < 2 || med <= 0) return "-";
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
  return fmt::format("{:+.0f}/{:+.0f}%", 100.0 * (*lo / med - 1.0), 100.0 * (*hi / med - 1.0));
}

/// What a child reports through the pipe.
struct Report {
  double p50, p99, p999, msgs_per_s;
  std::uint64_t lost;
  int ok;
  /// --counters, filled in by the parent: both sides' counts per message.
  std::optional<std::array<double, PmuCounters::kCount>> counters;
};

/// What each side of a latency run reports with --counters: its counts
/// over the measured round trips (warm-up excluded).
struct CounterReport {
  std::array<std::uint64_t, PmuCounters::kCount> values;
  std::uint64_t rounds;
  int ok;
};

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))), &set);
  ::sched_setaffinity(0, sizeof(set), &set);
}

enum class Task { kLatency, kThroughput };

void write_all(int fd, const void* p, std::size_t n) {
  if (::write(fd, p, n) != static_cast<ssize_t>(n)) ::_exit(3);
}

/// The body of one side. The leader measures latency; the follower
/// measures throughput (it is the receiver there).
Report run_side(Transport& t, Side side, Mode mode, std::size_t size, Task task, const Options& o, int ready_fd,
                int go_fd, int counters_fd) {
  auto link = t.connect(side, size);
  // Opened before the start, counted from the first measured round trip.
  std::optional<PmuCounters> pmu;
  if (counters_fd >= 0) pmu.emplace(o.counter_kind);
  char c = 'r';
  write_all(ready_fd, &c, 1);
  if (::read(go_fd, &c, 1) != 1) ::_exit(3);
  std::vector<std::byte> msg(size, std::byte{0x5a});
  Report r{};
  const bool leader = side == Side::kLeader;
  if (task == Task::kLatency) {
    const std::uint64_t total = o.warmup + o.rounds;
    std::vector<std::int64_t> one_way;
    one_way.reserve(o.rounds);
    for (std::uint64_t i = 0; i < total; ++i) {
      if (pmu && i == o.warmup) pmu->start();
      std::memcpy(msg.data(), &i, sizeof(i));
      if (leader) {
        const std::int64_t t0 = now_ns();
        link->send(msg.data(), size);
        const std::uint64_t echo = link->receive(mode);
        const std::int64_t rtt = now_ns() - t0;
        if (echo != i) return r;
        if (i >= o.warmup) one_way.push_back(rtt / 2);
      } else {
        const std::uint64_t seq = link->receive(mode);
        std::memcpy(msg.data(), &seq, sizeof(seq));
        link->send(msg.data(), size);
      }
    }
    if (pmu) {
      pmu->stop();
      const CounterReport counts{pmu->values(), o.rounds, pmu->ok() ? 1 : 0};
      write_all(counters_fd, &counts, sizeof(counts));
    }
    if (leader) {
      std::sort(one_way.begin(), one_way.end());
      const auto pct = [&](double p) {
        return static_cast<double>(
            one_way[std::min(one_way.size() - 1, static_cast<std::size_t>(p * static_cast<double>(one_way.size())))]);
      };
      r.p50 = pct(0.50);
      r.p99 = pct(0.99);
      r.p999 = pct(0.999);
    }
  } else {
    const std::uint64_t window = link->flow_window() == 0 ? 0 : o.window != 0 ? o.window : link->flow_window();
    const std::uint64_t ack_every = window == 0 ? 0 : window / 4;
    if (leader) {
      std::uint64_t acked = 0;
      for (std::uint64_t i = 0; i < o.messages; ++i) {
        while (window != 0 && i - acked >= window) acked = link->receive(Mode::kPoll);
        std::memcpy(msg.data(), &i, sizeof(i));
        link->send(msg.data(), size);
      }
    } else {
      std::int64_t first = 0;
      for (std::uint64_t i = 0; i < o.messages; ++i) {
        const std::uint64_t seq = link->receive(mode);
        if (i == 0) first = now_ns();
        if (seq != i) return r;  // lost or reordered: the run is invalid
        if (ack_every != 0 && (i + 1) % ack_every == 0) {
          const std::uint64_t done = i + 1;
          std::memcpy(msg.data(), &done, sizeof(done));
          link->send(msg.data(), 8);
        }
      }
      const double secs = static_cast<double>(now_ns() - first) / 1e9;
      r.msgs_per_s = static_cast<double>(o.messages - 1) / secs;
    }
  }
  r.lost = link->lost();
  r.ok = r.lost == 0 ? 1 : 0;
  return r;
}

/// Forks the two sides pinned to CPUs 0 and 1 and returns the measuring
/// side's report (nullopt when a side failed or hung).
std::optional<Report> run_pair(Transport& t, Mode mode, std::size_t size, Task task, const Options& o) {
  t.prepare(size);
  int report_pipe[2], ready_pipe[2], go_pipe[2], counters_pipe[2];
  if (::pipe(report_pipe) || ::pipe(ready_pipe) || ::pipe(go_pipe) || ::pipe(counters_pipe)) return std::nullopt;
  const bool counting = o.counters && task == Task::kLatency;
  pid_t pids[2];
  for (int s = 0; s < 2; ++s) {
    pids[s] = ::fork();
    if (pids[s] == 0) {
      pin_to_cpu(s);
      const Side side = s == 0 ? Side::kLeader : Side::kFollower;
      Report r{};
      try {
        r = run_side(t, side, mode, size, task, o, ready_pipe[1], go_pipe[0], counting ? counters_pipe[1] : -1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shmbus-bench: %s %s: %s\n", t.name().c_str(), to_string(mode), e.what());
      }
      const bool measures = (task == Task::kLatency) == (side == Side::kLeader);
      if (measures) write_all(report_pipe[1], &r, sizeof(r));
      std::fflush(nullptr);
      ::_exit(0);
    }
  }
  char c = 0;
  bool ready = true;
  for (int s = 0; s < 2; ++s) ready = ready && ::read(ready_pipe[0], &c, 1) == 1;
  const char go[2] = {'g', 'g'};
  if (ready) write_all(go_pipe[1], go, 2);
  Report r{};
  // The report, or a hang: a side that gave up (a lost message makes a
  // throughput run invalid) can leave the other waiting forever.
  pollfd p{report_pipe[0], POLLIN, 0};
  const bool reported = ready && ::poll(&p, 1, 120'000) == 1;
  const ssize_t n = reported ? ::read(report_pipe[0], &r, sizeof(r)) : 0;
  if (!reported)
    std::fprintf(stderr, "shmbus-bench: %s %s: no report within 120 s\n", t.name().c_str(), to_string(mode));
  // Both sides' counts (the follower finishes with the leader), summed:
  // a round trip moves two messages, each sent by one side and received
  // by the other, so the sum over 2 x rounds is the cost of one message.
  if (counting && reported) {
    std::array<double, PmuCounters::kCount> sum{};
    std::uint64_t rounds = 0;
    int sides = 0;
    for (; sides < 2; ++sides) {
      CounterReport side{};
      pollfd cp{counters_pipe[0], POLLIN, 0};
      if (::poll(&cp, 1, 10'000) != 1 || ::read(counters_pipe[0], &side, sizeof(side)) != sizeof(side) || side.ok == 0)
        break;
      for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += static_cast<double>(side.values[k]);
      rounds = side.rounds;
    }
    if (sides == 2 && rounds != 0) {
      for (double& v : sum) v /= 2.0 * static_cast<double>(rounds);
      r.counters = sum;
    }
  }
  // Each side ends by itself once the run is over, giving its ports back
  // (iceoryx: RouDi's monitoring is off, so a side killed mid-teardown
  // would stay listed); one that has not within 10 s is of no more use.
  for (pid_t pid : pids) {
    int status = 0;
    bool ended = false;
    for (int waited_ms = 0; reported && !ended && waited_ms < 10'000; waited_ms += 5) {
      ended = ::waitpid(pid, &status, WNOHANG) == pid;
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!ended) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }
  for (int fd : {report_pipe[0], report_pipe[1], ready_pipe[0], ready_pipe[1], go_pipe[0], go_pipe[1], counters_pipe[0],
                 counters_pipe[1]}) {
    ::close(fd);
  }
  t.cleanup();
  if (n != sizeof(r) || r.ok == 0) return std::nullopt;
  return r;
}

/// run_pair, once more when it fails: on a loaded machine a writer
/// descheduled beyond stall_timeout mid-copy makes readers count its message
/// lost, which invalidates a lossless-throughput run. Said on stderr.
std::optional<Report> run_pair_again_on_failure(Transport& t, Mode mode, std::size_t size, Task task,
                                                const Options& o) {
  if (auto r = run_pair(t, mode, size, task, o)) return r;
  std::fprintf(stderr, "shmbus-bench: %s %s %zu B %s run failed; running it once more\n", t.name().c_str(),
               to_string(mode), size, task == Task::kLatency ? "latency" : "throughput");
  return run_pair(t, mode, size, task, o);
}

std::string human_ns(double ns) {
  return ns >= 10'000 ? fmt::format("{:.1f} us", ns / 1000) : fmt::format("{:.0f} ns", ns);
}

}  // namespace

static int run_bench(int argc, char** argv) {
  CLI::App app{"compare shmbus with its peers", "shmbus-bench"};
  app.require_subcommand(1);
  auto* peers = app.add_subcommand("peers",
                                   "two-process latency and throughput against iceoryx, "
                                   "Boost message_queue, a Unix socket, floor and spsc; "
                                   "node = shmbus through Node callbacks");
  Options o;
  bool smoke = false;
  peers->add_option("--rounds", o.rounds, "measured round trips per latency run")->check(CLI::Range(100, 100'000'000));
  peers->add_option("--warmup", o.warmup, "round trips before measuring");
  peers->add_option("--messages", o.messages, "messages per throughput run")->check(CLI::Range(1000, 1'000'000'000));
  peers->add_option("--sizes", o.sizes, "payload sizes in bytes")->delimiter(',');
  peers->add_option("--transports", o.transports, std::string{"subset of "} + kTransportNames)->delimiter(',');
  peers
      ->add_option("--repeat", o.repeat, "runs per row, interleaved across transports; rows report medians and spreads")
      ->check(CLI::Range(1, 100));
  peers
      ->add_option("--window", o.window,
                   "throughput: messages in flight for transports that overwrite (shmbus: 192 of its 256 slots)")
      ->check(CLI::Range(8, 256));
  peers->add_option("--modes", o.modes, "subset of poll,block")->delimiter(',');
  peers->add_flag("--json", o.json, "print one JSON object instead of a table");
  bool software_counters = false;
  peers->add_flag("--counters", o.counters,
                  "latency runs: hardware counters per message, both processes, user space (cycles, L1D read "
                  "misses, LLC misses); needs a PMU");
  peers->add_flag("--software-counters", software_counters,
                  "--counters with software events (task clock, context switches, page faults), for machines "
                  "without a PMU");
  peers->add_flag("--smoke", smoke, "tiny runs (CI: does every transport work?)");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  if (smoke) {
    o.rounds = 2000;
    o.warmup = 200;
    o.messages = 20000;
  }
  if (software_counters) {
    o.counters = true;
    o.counter_kind = PmuCounters::Kind::kSoftware;
  }
  if (o.counters) {
    const PmuCounters probe(o.counter_kind);
    if (!probe.ok()) {
      std::fprintf(stderr, "shmbus-bench: --counters: %s\n", probe.error().c_str());
      return 1;
    }
  }
  for (const std::string& m : o.modes) {
    if (m != "poll" && m != "block") {
      std::fprintf(stderr, "shmbus-bench: unknown mode '%s'; use poll,block\n", m.c_str());
      return 2;
    }
  }
  for (std::size_t s : o.sizes) {
    const bool in_place_size =
        std::find(std::begin(kInPlaceSizes), std::end(kInPlaceSizes), s) != std::end(kInPlaceSizes);
    if ((s < 8 || s > 4096) && !in_place_size) {
      std::fprintf(stderr,
                   "shmbus-bench: size %zu is out of range; use 8 to 4096 bytes (copied rows), or 65536, 1048576, "
                   "4194304, 16777216 (node_cloud, iceoryx_loan)\n",
                   s);
      return 2;
    }
  }
  const std::string tmp = ::getenv("TMPDIR") != nullptr ? ::getenv("TMPDIR") : "/tmp";
  std::vector<std::unique_ptr<Transport>> transports;
  for (const std::string& name : o.transports) {
    std::unique_ptr<Transport> t;
    if (name == "shmbus")
      t = make_shmbus();
    else if (name == "shmbus_nohook")
      t = make_shmbus(ShmbusVariant::kNoHook);
    else if (name == "shmbus_block")
      t = make_shmbus(ShmbusVariant::kBlock);
    else if (name == "shmbus_source")
      t = make_shmbus(ShmbusVariant::kSource);
    else if (name == "node")
      t = make_node();
    else if (name == "iceoryx")
      t = make_iceoryx(tmp, IceoryxKind::kRaw);
    else if (name == "service")
      t = make_service();
    else if (name == "iceoryx_service")
      t = make_iceoryx(tmp, IceoryxKind::kService);
    else if (name == "shmbus_iceoryx")
      t = make_iceoryx(tmp, IceoryxKind::kShmbus);
    else if (name == "boost_mq")
      t = make_boost_mq();
    else if (name == "uds")
      t = make_uds();
    else if (name == "floor")
      t = make_floor();
    else if (name == "spsc")
      t = make_spsc();
    else if (name == "node_cloud")
      t = make_node_cloud();
    else if (name == "node_typed" || name == "rclcpp")
      t = make_node_typed(name == "rclcpp");
    else if (name == "rclcpp_cloud")
      t = make_rclcpp_cloud();
    else if (name == "iceoryx_loan")
      t = make_iceoryx(tmp, IceoryxKind::kLoan);
    else {
      std::fprintf(stderr, "shmbus-bench: unknown transport '%s'; use %s\n", name.c_str(), kTransportNames);
      return 2;
    }
    if (!t) {
      std::fprintf(stderr, "shmbus-bench: %s was not built in (install libiceoryx-posh-dev)\n", name.c_str());
      continue;
    }
    if (name.find("iceoryx") != std::string::npos) {
      if (const std::string why = iceoryx_refusal(); !why.empty()) {  // before any row runs
        std::fprintf(stderr, "shmbus-bench: %s\n", why.c_str());
        return 1;
      }
    }
    transports.push_back(std::move(t));
  }
  // Rows in transport order (the table's). Each repeat runs every row once,
  // so slow drifts of the machine fall on all transports alike, and runs
  // the rows of one mode and size back to back, transports in turn: the
  // rows a paired ratio compares (below) are measured seconds apart, in the
  // same phase of a VM whose speed moves between phases.
  std::vector<Result> results;
  std::vector<Transport*> row_transport;
  for (const auto& t : transports) {
    for (Mode mode : {Mode::kPoll, Mode::kBlock}) {
      if (!t->supports(mode) || std::find(o.modes.begin(), o.modes.end(), to_string(mode)) == o.modes.end()) continue;
      for (std::size_t size : o.sizes) {
        if (t->in_place() != (size > 4096)) continue;  // clouds in place, the rest copied
        results.push_back(Result{t->name(), mode, size, 0, 0, 0, std::nullopt, {}, {}, {}});
        row_transport.push_back(t.get());
      }
    }
  }
  std::vector<std::size_t> run_order(results.size());
  for (std::size_t i = 0; i < run_order.size(); ++i) run_order[i] = i;
  std::stable_sort(run_order.begin(), run_order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair{results[a].mode, results[a].size} < std::pair{results[b].mode, results[b].size};
  });
  std::vector<std::vector<double>> p99s(results.size()), p999s(results.size());
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    for (const std::size_t row : run_order) {
      Result& res = results[row];
      Transport& t = *row_transport[row];
      const char* name = res.transport.c_str();
      const Mode mode = res.mode;
      const std::size_t size = res.size;
      if (!o.json) {
        std::fprintf(stderr, "running %s %s %zu B%s ...\n", name, to_string(mode), size,
                     o.repeat > 1 ? fmt::format(" (run {} of {})", rep + 1, o.repeat).c_str() : "");
      }
      const auto lat = run_pair_again_on_failure(t, mode, size, Task::kLatency, o);
      if (!lat) {
        std::fprintf(stderr, "shmbus-bench: %s %s %zu B latency run failed\n", name, to_string(mode), size);
        return 1;
      }
      res.p50_runs.push_back(lat->p50);
      if (o.counters) {
        if (!lat->counters) {
          std::fprintf(stderr, "shmbus-bench: %s %s %zu B: the counters of a side were not read\n", name,
                       to_string(mode), size);
          return 1;
        }
        res.counter_runs.push_back(*lat->counters);
      }
      p99s[row].push_back(lat->p99);
      p999s[row].push_back(lat->p999);
      if (t.has_throughput()) {
        const auto tp = run_pair_again_on_failure(t, mode, size, Task::kThroughput, o);
        if (!tp) {
          std::fprintf(stderr, "shmbus-bench: %s %s %zu B throughput run failed (lost messages?)\n", name,
                       to_string(mode), size);
          return 1;
        }
        res.tput_runs.push_back(tp->msgs_per_s);
      }
    }
  }
  for (std::size_t row = 0; row < results.size(); ++row) {
    Result& r = results[row];
    r.p50 = median(r.p50_runs);
    r.p99 = median(p99s[row]);
    r.p999 = median(p999s[row]);
    if (!r.tput_runs.empty()) r.msgs_per_s = median(r.tput_runs);
  }
  transports.clear();
  // The children _exit: iceoryx leaves their runtimes' files in /tmp.
  shmbus::iceoryx::remove_stale_runtime_files();

  const auto find = [&](const std::string& tr, Mode m, std::size_t s) -> const Result* {
    for (const auto& r : results)
      if (r.transport == tr && r.mode == m && r.size == s) return &r;
    return nullptr;
  };
  if (o.json) {
    nlohmann::json j;
    j["results"] = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json e{{"transport", r.transport}, {"mode", to_string(r.mode)}, {"size", r.size},
                       {"p50_ns", r.p50},          {"p99_ns", r.p99},           {"p999_ns", r.p999}};
      e["msgs_per_s"] = r.msgs_per_s ? nlohmann::json(*r.msgs_per_s) : nlohmann::json(nullptr);
      e["p50_ns_runs"] = r.p50_runs;
      e["msgs_per_s_runs"] = r.tput_runs;
      if (!r.counter_runs.empty()) {
        nlohmann::json c;
        const auto names = PmuCounters::names(o.counter_kind);
        for (std::size_t k = 0; k < PmuCounters::kCount; ++k) c[names[k]] = counter_median(r, k);
        e["counters_per_msg"] = c;
      }
      j["results"].push_back(e);
    }
    j["repeat"] = o.repeat;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  fmt::print("one-way latency (RTT/2) and lossless throughput, two processes pinned to CPUs 0 and 1{}\n",
             o.repeat > 1
                 ? fmt::format("; medians of {} interleaved runs, p50 spread = min/max around the median", o.repeat)
                 : "");
  fmt::print("{:<15} {:<5} {:>8}  {:>9} {:>11} {:>9} {:>9}  {:>12}  {:>8} {:>10} {:>10}\n", "transport", "mode", "size",
             "p50", "p50 spread", "p99", "p99.9", "msgs/s", "p50/floor", "p50/iceoryx", "tput/iceoryx");
  for (const auto& r : results) {
    const Result* floor = find("floor", Mode::kPoll, 64);
    const Result* iox = find(r.transport == "node_cloud" ? "iceoryx_loan" : "iceoryx", r.mode, r.size);
    fmt::print("{:<15} {:<5} {:>8}  {:>9} {:>11} {:>9} {:>9}  {:>12}  {:>8} {:>10} {:>10}\n", r.transport,
               to_string(r.mode), r.size, human_ns(r.p50), spread(r.p50_runs, r.p50), human_ns(r.p99), human_ns(r.p999),
               r.msgs_per_s ? fmt::format("{:.2f} M", *r.msgs_per_s / 1e6) : "-",
               floor ? fmt::format("{:.2f}x", r.p50 / floor->p50) : "-",
               iox ? fmt::format("{:.2f}x", r.p50 / iox->p50) : "-",
               iox && r.msgs_per_s && iox->msgs_per_s ? fmt::format("{:.2f}x", *r.msgs_per_s / *iox->msgs_per_s) : "-");
  }
  // The cache-miss view: what moving one message costs in cycles and in
  // lines pulled into L1D (from another core's cache, mostly), per
  // transport, from the same latency runs as the table.
  if (o.counters) {
    const auto names = PmuCounters::names(o.counter_kind);
    fmt::print("{} counters per message (latency runs: both processes, user space; median of {} runs)\n",
               o.counter_kind == PmuCounters::Kind::kSoftware ? "software" : "hardware", o.repeat);
    fmt::print("{:<15} {:<5} {:>5}  {:>13} {:>13} {:>13}\n", "transport", "mode", "size", names[0], names[1], names[2]);
    for (const auto& r : results) {
      if (r.counter_runs.empty()) continue;
      fmt::print("{:<15} {:<5} {:>5}  {:>13.1f} {:>13.4f} {:>13.4f}\n", r.transport, to_string(r.mode), r.size,
                 counter_median(r, 0), counter_median(r, 1), counter_median(r, 2));
    }
  }
  // shmbus against the references, run by run: each repeat's p50 over the
  // same repeat's reference p50 (same mode and size, measured just before),
  // as the median and range of those ratios. A VM that changes speed
  // between runs moves both sides of a ratio, not one.
  if (o.repeat > 1) {
    for (const auto& r : results) {
      if (r.transport != "shmbus") continue;
      std::string line;
      for (const char* ref_name : {"floor", "spsc"}) {
        const Result* ref = find(ref_name, r.mode, r.size);
        if (ref == nullptr) continue;
        const std::vector<double> ratios = paired_ratios(r.p50_runs, ref->p50_runs);
        if (ratios.empty()) continue;
        const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
        line += fmt::format("{}shmbus/{} {:.2f}x ({:.2f}-{:.2f})", line.empty() ? "" : ", ", ref_name, median(ratios),
                            *lo, *hi);
      }
      if (!line.empty()) {
        fmt::print("paired p50 ratios {} {} B, median (range) of {} runs: {}\n", to_string(r.mode), r.size,
                   r.p50_runs.size(), line);
      }
    }
  }
  // A point cloud built in a loan and read in place: its p50 against
  // iceoryx's loan of the same size, run by run, and against itself at the
  // smallest size (a loan's cost must not grow with the message).
  for (const auto& r : results) {
    if (r.transport != "node_cloud") continue;
    const Result* iox = find("iceoryx_loan", r.mode, r.size);
    const Result* small = find("node_cloud", r.mode, kInPlaceSizes[0]);
    std::string line;
    if (iox != nullptr) {
      const std::vector<double> ratios = paired_ratios(r.p50_runs, iox->p50_runs);
      if (!ratios.empty()) {
        const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
        line += fmt::format("node_cloud/iceoryx_loan {:.2f}x ({:.2f}-{:.2f})", median(ratios), *lo, *hi);
      }
    }
    if (small != nullptr) {
      line +=
          fmt::format("{}p50 / p50 at {} B {:.2f}x", line.empty() ? "" : ", ", kInPlaceSizes[0], r.p50 / small->p50);
    }
    if (!line.empty()) {
      fmt::print("in place {} {} B, median (range) of {} runs: {}\n", to_string(r.mode), r.size, r.p50_runs.size(),
                 line);
    }
  }
  // The rclcpp layer's cost: shmbus::rclcpp's publisher and subscription
  // against the Node API's with the same message and view callback, run by
  // run (rclcpp/node_typed, rclcpp_cloud/node_cloud).
  for (const auto& r : results) {
    const char* pair = r.transport == "rclcpp" ? "node_typed" : r.transport == "rclcpp_cloud" ? "node_cloud" : nullptr;
    const Result* base = pair != nullptr ? find(pair, r.mode, r.size) : nullptr;
    if (base == nullptr) continue;
    const std::vector<double> ratios = paired_ratios(r.p50_runs, base->p50_runs);
    const double mid = ratios.empty() ? r.p50 / base->p50 : median(ratios);
    const auto [lo, hi] = ratios.empty() ? std::pair{mid, mid}
                                         : std::pair{*std::min_element(ratios.begin(), ratios.end()),
                                                     *std::max_element(ratios.begin(), ratios.end())};
    fmt::print(
        "rclcpp layer {} {} B: p50 {}/{} {:.3f}x ({:.3f}-{:.3f}), p50 {:+.0f} ns{}\n", to_string(r.mode), r.size,
        r.transport, pair, mid, lo, hi, r.p50 - base->p50,
        r.msgs_per_s && base->msgs_per_s ? fmt::format(", throughput {:.3f}x", *r.msgs_per_s / *base->msgs_per_s) : "");
  }
  // The executor's cost per message: a Node callback against a raw read of
  // the same channels, measured side by side in this run.
  for (const auto& r : results) {
    const Result* raw = r.transport == "node" ? find("shmbus", r.mode, r.size) : nullptr;
    if (raw == nullptr) continue;
    fmt::print("node dispatch overhead {} {} B: p50 {:+.0f} ns, p99 {:+.0f} ns per message (node - shmbus)\n",
               to_string(r.mode), r.size, r.p50 - raw->p50, r.p99 - raw->p99);
  }
  // The notify hook's cost: the time-list stamp per publish, side by side.
  for (const auto& r : results) {
    const Result* off = r.transport == "shmbus" ? find("shmbus_nohook", r.mode, r.size) : nullptr;
    if (off == nullptr) continue;
    fmt::print(
        "notify hook {} {} B: p50 {:+.0f} ns{} (shmbus - shmbus_nohook)\n", to_string(r.mode), r.size, r.p50 - off->p50,
        r.msgs_per_s && off->msgs_per_s ? fmt::format(", throughput {:.2f}x", *r.msgs_per_s / *off->msgs_per_s) : "");
  }
  // A lossless stream: shmbus with its ack window ("shmbus") and on a
  // block channel ("shmbus_block"), against Boost's message_queue.
  for (const auto& r : results) {
    const Result* mq = r.transport == "shmbus_block" ? find("boost_mq", r.mode, r.size) : nullptr;
    const Result* acked = r.transport == "shmbus_block" ? find("shmbus", r.mode, r.size) : nullptr;
    if (!r.msgs_per_s || ((mq == nullptr || !mq->msgs_per_s) && (acked == nullptr || !acked->msgs_per_s))) continue;
    fmt::print("lossless stream {} {} B: shmbus_block {:.2f} M msgs/s{}{}\n", to_string(r.mode), r.size,
               *r.msgs_per_s / 1e6,
               mq && mq->msgs_per_s ? fmt::format(", {:.2f}x boost_mq", *r.msgs_per_s / *mq->msgs_per_s) : "",
               acked && acked->msgs_per_s
                   ? fmt::format(", {:.2f}x shmbus with its ack window", *r.msgs_per_s / *acked->msgs_per_s)
                   : "");
  }
  // shmbus's layer over iceoryx: the same channels through the shmbus API
  // (message header in the chunk, time-list stamp, futex wake check)
  // against raw iceoryx, in this run; with repeats, also the range of the
  // paired (same repeat) differences.
  for (const auto& r : results) {
    const Result* raw = r.transport == "shmbus_iceoryx" ? find("iceoryx", r.mode, r.size) : nullptr;
    if (raw == nullptr) continue;
    std::string paired;
    if (const std::vector<double> ratios = paired_ratios(r.p50_runs, raw->p50_runs); ratios.size() > 1) {
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      paired = fmt::format(" (per run {:+.1f}% to {:+.1f}%)", 100.0 * (*lo - 1), 100.0 * (*hi - 1));
    }
    fmt::print(
        "shmbus layer over iceoryx {} {} B: p50 {:+.0f} ns ({:+.1f}%){}{}\n", to_string(r.mode), r.size,
        r.p50 - raw->p50, 100.0 * (r.p50 / raw->p50 - 1.0), paired,
        r.msgs_per_s && raw->msgs_per_s ? fmt::format(", throughput {:.2f}x", *r.msgs_per_s / *raw->msgs_per_s) : "");
  }
  // A service call against the same round trip over two channels (the
  // floor of its design) and against iceoryx's request/response.
  for (const auto& r : results) {
    if (r.transport != "service") continue;
    const Result* two = find("shmbus", r.mode, r.size);
    const Result* iox = find("iceoryx_service", r.mode, r.size);
    fmt::print("service round trip {} {} B: p50 {} p99 {}{}{}\n", to_string(r.mode), r.size, human_ns(2 * r.p50),
               human_ns(2 * r.p99), two ? fmt::format(", {:.2f}x two channels", r.p50 / two->p50) : "",
               iox ? fmt::format(", {:.2f}x iceoryx request/response", r.p50 / iox->p50) : "");
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {  // a peer that cannot run here (a RouDi already running...)
    std::fprintf(stderr, "shmbus-bench: %s\n", e.what());
    return 1;
  }
}
