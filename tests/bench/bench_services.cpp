// shmbus-bench-services: C client processes calling one server process
// (a planner's or a parameter server's many callers), shmbus's
// ServiceClient/ServiceServer against iceoryx 2.0's request/response in the
// same run:
//
//   calls/s:  every client's calls (each waits for its response before the
//             next call) over the time from the common start to the last
//             client's last response; the server serves on one thread, so
//             this is also the rate per server core
//   latency:  each call's round trip (p50, p99 over every client's calls)
//   lost:     calls the client reported lost (its response overwritten
//             before it was read) and called again; the rate counts each
//             call once
//
//   shmbus-bench-services [--clients 1,4,16] [--transports service,iceoryx_service]
//                         [--calls 2000] [--size 64] [--repeat 3] [--json] [--smoke]
//
// Every side blocks in its transport's wait (17 processes do not poll on a
// 2-CPU machine). The server echoes the request; a client checks that each
// response is its own call's.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "peer_transports.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/publisher.hpp"

using namespace shmbus::bench;

namespace {

/// A client is a publisher on the request channel: at most a channel's.
constexpr std::uint32_t kMaxClients = shmbus::kMaxChannelPublishers;

/// What the processes of one run share: readiness, the common start, each
/// client's last response time and failures, then every call's latency.
struct Board {
  std::atomic<std::uint32_t> server_ready{0};
  std::atomic<std::uint32_t> clients_ready{0};
  std::atomic<std::int64_t> start_ns{0};
  std::atomic<std::uint32_t> clients_done{0};
  std::atomic<std::uint64_t> recalls{0};  ///< calls reported lost and called again
  std::atomic<std::uint32_t> failed{0};
  std::int64_t end_ns[kMaxClients]{};
  // Then: latency_ns[clients][calls].
};

class SharedRun {
 public:
  SharedRun(std::uint32_t clients, std::uint64_t calls) : calls_(calls) {
    bytes_ = sizeof(Board) + std::size_t{clients} * calls * sizeof(std::int64_t);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map the run's shared board");
    board_ = new (p) Board();
  }
  ~SharedRun() { ::munmap(board_, bytes_); }
  SharedRun(const SharedRun&) = delete;
  SharedRun& operator=(const SharedRun&) = delete;
  Board& board() const { return *board_; }
  std::int64_t* latency_ns(std::uint32_t c) const { return reinterpret_cast<std::int64_t*>(board_ + 1) + calls_ * c; }

 private:
  std::uint64_t calls_;
  std::size_t bytes_ = 0;
  Board* board_ = nullptr;
};

struct Options {
  std::vector<std::uint32_t> clients{1, 4, 16};
  std::vector<std::string> transports{"service", "iceoryx_service"};
  std::uint64_t calls = 2000;  ///< per client
  std::size_t size = 64;
  unsigned repeat = 3;
  bool json = false;
};

/// The server process: serves every call (a call lost on its way back is
/// called again, and served again), until every client is done.
[[noreturn]] void server_main(Transport& t, const SharedRun& run, std::uint32_t clients, std::size_t size,
                              std::uint64_t calls) {
  Board& b = run.board();
  try {
    auto link = t.connect(Side::kFollower, size);
    b.server_ready.store(1);
    std::uint64_t served = 0;
    // The endpoints stay until every client has read its last response.
    while (b.clients_done.load() < clients && b.failed.load() == 0) {
      if (served < calls + b.recalls.load()) {
        link->receive(Mode::kBlock);
        ++served;
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    link.reset();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-bench-services: server: %s\n", e.what());
    b.failed.store(1);
    ::_exit(1);
  }
}

/// A client process: `calls` calls one after another, each timed. A call
/// the transport reports lost is counted and called again.
[[noreturn]] void client_main(Transport& t, const SharedRun& run, std::uint32_t c, std::size_t size,
                              std::uint64_t calls) {
  Board& b = run.board();
  try {
    while (b.server_ready.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto link = t.connect(Side::kLeader, size);
    b.clients_ready.fetch_add(1);
    while (b.start_ns.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::vector<std::byte> request(size, std::byte{0x5a});
    std::int64_t* latency = run.latency_ns(c);
    for (std::uint64_t k = 0; k < calls;) {
      const std::uint64_t tag = (std::uint64_t{c} << 48) | k;
      std::memcpy(request.data(), &tag, sizeof(tag));
      const std::int64_t t0 = now_ns();
      link->send(request.data(), request.size());
      const std::uint64_t got = link->receive(Mode::kBlock);
      if (got == UINT64_MAX) {
        b.recalls.fetch_add(1);  // before the call again: the server serves it
        continue;
      }
      latency[k] = now_ns() - t0;
      if (got != tag) throw std::runtime_error(fmt::format("call {} answered with another call's response", k));
      ++k;
    }
    b.end_ns[c] = now_ns();
    b.clients_done.fetch_add(1);
    link.reset();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-bench-services: client %u: %s\n", c, e.what());
    b.failed.store(1);
    ::_exit(1);
  }
}

struct Measure {
  double p50 = 0, p99 = 0, calls_per_s = 0, lost = 0;
  bool ok = false;
};

/// One run: the server, then C clients, started together once all are
/// connected; every process waited for at most a minute past the start.
Measure run_row(Transport& t, std::uint32_t clients, const Options& o) {
  t.prepare(o.size);
  SharedRun run(clients, o.calls);
  Board& b = run.board();
  std::vector<pid_t> children;
  const pid_t server = fork_side();
  if (server == 0) server_main(t, run, clients, o.size, clients * o.calls);
  children.push_back(server);
  for (std::uint32_t c = 0; c < clients; ++c) {
    const pid_t pid = fork_side();
    if (pid == 0) client_main(t, run, c, o.size, o.calls);
    children.push_back(pid);
  }
  const std::int64_t ready_deadline = now_ns() + 30'000'000'000LL;
  while (b.clients_ready.load() < clients && b.failed.load() == 0 && now_ns() < ready_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every client at its start line
  const std::int64_t start = now_ns();
  b.start_ns.store(start);
  bool ok = b.clients_ready.load() == clients;
  // A failed side ends the run at once.
  ok = wait_sides(children, start + 60'000'000'000LL, &b.failed) && ok;
  t.cleanup();
  Measure m;
  if (!ok || b.failed.load() != 0) return m;
  std::int64_t end = start;
  std::vector<double> all;
  all.reserve(clients * o.calls);
  for (std::uint32_t c = 0; c < clients; ++c) {
    end = std::max(end, b.end_ns[c]);
    for (std::uint64_t k = 0; k < o.calls; ++k) all.push_back(static_cast<double>(run.latency_ns(c)[k]));
  }
  m.p50 = percentile(all, 0.50);
  m.p99 = percentile(all, 0.99);
  m.calls_per_s = static_cast<double>(clients * o.calls) * 1e9 / static_cast<double>(end - start);
  m.lost = static_cast<double>(b.recalls.load());
  m.ok = end > start;
  return m;
}

struct Result {
  std::string transport;
  std::uint32_t clients = 0;
  std::vector<double> p50, p99, rate, lost;
  unsigned failed = 0;
};

}  // namespace

static int run_services(int argc, char** argv) {
  CLI::App app{"C client processes calling one server: shmbus services against iceoryx request/response",
               "shmbus-bench-services"};
  Options o;
  bool smoke = false;
  app.add_option("--clients", o.clients, "client process counts (1-32: a request channel's publishers)")
      ->delimiter(',')
      ->check(CLI::Range(1U, kMaxClients));
  app.add_option("--transports", o.transports, "subset of service,iceoryx_service")
      ->delimiter(',')
      ->check(CLI::IsMember({"service", "iceoryx_service"}));
  app.add_option("--calls", o.calls, "calls per client per run")->check(CLI::Range(10, 10'000'000));
  app.add_option("--size", o.size, "request and response size in bytes (8 B to 1 MiB)")->check(CLI::Range(8, 1 << 20));
  app.add_option("--repeat", o.repeat, "runs per row, interleaved across transports; medians reported")
      ->check(CLI::Range(1, 50));
  app.add_flag("--json", o.json, "one JSON object instead of a table");
  app.add_flag("--smoke", smoke, "a short run: 1 and 4 clients, 200 calls each, once");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  if (smoke) {
    o.clients = {1, 4};
    o.calls = 200;
    o.repeat = 1;
  }
  std::vector<std::unique_ptr<Transport>> transports;
  for (const std::string& name : o.transports) {
    if (name == "service") {
      transports.push_back(make_service());
      continue;
    }
    const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once at start
    auto t = make_iceoryx(tmp != nullptr ? tmp : "/tmp", IceoryxKind::kService);
    if (!t) {
      std::fprintf(stderr, "shmbus-bench-services: built without iceoryx; use --transports service\n");
      return 2;
    }
    const std::string refusal = iceoryx_refusal();
    if (!refusal.empty()) {
      std::fprintf(stderr, "shmbus-bench-services: %s\n", refusal.c_str());
      return 1;
    }
    transports.push_back(std::move(t));
  }
  std::vector<Result> results;
  for (const std::uint32_t c : o.clients) {
    for (const auto& t : transports) results.push_back(Result{t->name(), c, {}, {}, {}, {}, 0});
  }
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    std::size_t i = 0;
    for (const std::uint32_t c : o.clients) {
      for (const auto& t : transports) {
        Result& res = results[i++];
        const Measure m = run_row(*t, c, o);
        if (!m.ok) {
          ++res.failed;
          continue;
        }
        res.p50.push_back(m.p50);
        res.p99.push_back(m.p99);
        res.rate.push_back(m.calls_per_s);
        res.lost.push_back(m.lost);
      }
    }
  }
  unsigned failed = 0;
  for (const Result& r : results) failed += r.failed;
  const auto find = [&](const std::string& transport, std::uint32_t clients) -> const Result* {
    for (const Result& r : results) {
      if (r.transport == transport && r.clients == clients && !r.rate.empty()) return &r;
    }
    return nullptr;
  };
  if (o.json) {
    std::string s = "{\"rows\":[";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      s += fmt::format(
          "{}{{\"transport\":\"{}\",\"clients\":{},\"size\":{},\"p50_ns\":{:.0f},\"p99_ns\":{:.0f},"
          "\"calls_per_s\":{:.0f},\"lost_calls\":{:.0f},\"runs\":{},\"failed\":{}}}",
          i ? "," : "", r.transport, r.clients, o.size, median(r.p50), median(r.p99), median(r.rate), median(r.lost),
          r.rate.size(), r.failed);
    }
    std::printf("%s]}\n", s.c_str());
    return failed == 0 ? 0 : 1;
  }
  fmt::print(
      "services: C clients calling one server ({} calls each, {} B, blocking); calls/s over the server's one "
      "thread; medians of {} runs\n",
      o.calls, o.size, o.repeat);
  fmt::print("{:<16} {:>3}  {:>10} {:>10} {:>10} {:>10}  {:>12}  {}\n", "", "C", "p50", "p99", "calls/s", "lost/run",
             "vs 1 client", "rate vs iceoryx");
  const std::uint32_t fewest = *std::min_element(o.clients.begin(), o.clients.end());
  for (const Result& r : results) {
    if (r.rate.empty()) {
      fmt::print("{:<16} {:>3}  every run failed\n", r.transport, r.clients);
      continue;
    }
    std::string scale;
    if (const Result* one = find(r.transport, fewest))
      scale = fmt::format("x{:.2f}", median(r.rate) / median(one->rate));
    std::string vs;
    if (r.transport == "service") {
      if (const Result* p = find("iceoryx_service", r.clients))
        vs = fmt::format("{:.2f}", median(r.rate) / median(p->rate));
    }
    fmt::print("{:<16} {:>3}  {:>10} {:>10} {:>10.0f} {:>10.0f}  {:>12}  {}{}\n", r.transport, r.clients,
               format_ns(median(r.p50)), format_ns(median(r.p99)), median(r.rate), median(r.lost), scale, vs,
               r.failed ? fmt::format("  ({} runs failed)", r.failed) : "");
  }
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbus-bench-services", [&] { return run_services(argc, argv); });
}
