// shmbus-bench-fanout: one publisher and N subscriber processes on one
// channel (a camera or lidar feeding N consumers), shmbus against iceoryx in
// the same run:
//
//   latency:    publish to the LAST subscriber's receipt, per message
//               (p50, p99), messages paced so that none queues behind another
//   throughput: messages per second every subscriber received, lossless
//               (a flow window: at most W messages ahead of the slowest)
//
//   shmbus-bench-fanout [--subscribers 1,2,4,8] [--sizes 64,1048576]
//                       [--modes block,poll] [--transports shmbus,iceoryx]
//                       [--messages 1000] [--throughput 20000] [--repeat 3]
//                       [--json] [--smoke]
//
// Polling subscribers run only where each has a core beside the
// publisher's (N + 1 <= CPUs); blocking ones at every N. Both publishers
// copy the payload in (shmbus publish, iceoryx loan + memcpy); both
// subscribers read the sequence in place.
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <thread>

#include "peer_transports.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/context.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

#if SHMBUS_BENCH_ICEORYX
#include "iceoryx_posh/popo/untyped_publisher.hpp"
#include "iceoryx_posh/popo/untyped_subscriber.hpp"
#include "iceoryx_posh/popo/wait_set.hpp"
#endif

using namespace shmbus;
using namespace shmbus::bench;

namespace {

constexpr std::uint32_t kMaxSubscribers = 8;

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

void cpu_relax() { __builtin_ia32_pause(); }

/// Ring (shmbus) and queue (iceoryx) depth for a message size, and the flow
/// window under it: 256 small messages, 32 of a MiB or more.
std::uint32_t depth_for(std::size_t size) { return size >= (256U << 10) ? 32 : 256; }
std::uint64_t window_for(std::size_t size) { return depth_for(size) * 3 / 4; }

/// What the processes of one run share (an anonymous shared mapping made
/// before the fork): readiness, each subscriber's progress, and the
/// latency phase's send and receive times.
struct alignas(64) Progress {
  std::atomic<std::uint64_t> received{0};  ///< the next sequence this subscriber expects
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint32_t> failed{0};
};
struct Board {
  std::atomic<std::uint32_t> ready{0};    ///< subscribers subscribed
  std::atomic<std::uint32_t> offered{0};  ///< the publisher exists (iceoryx subscribers wait for it)
  std::atomic<std::uint32_t> publisher_failed{0};
  std::int64_t throughput_ns = 0;
  Progress progress[kMaxSubscribers];
  // Then: send_ns[latency], recv_ns[subscribers][latency].
};

class SharedRun {
 public:
  SharedRun(std::uint32_t subscribers, std::uint64_t latency) : subscribers_(subscribers), latency_(latency) {
    bytes_ = sizeof(Board) + (1 + std::size_t{subscribers}) * latency * sizeof(std::int64_t);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map the run's shared board");
    board_ = new (p) Board();
  }
  ~SharedRun() { ::munmap(board_, bytes_); }
  SharedRun(const SharedRun&) = delete;
  SharedRun& operator=(const SharedRun&) = delete;

  Board& board() const { return *board_; }
  std::int64_t* send_ns() const { return reinterpret_cast<std::int64_t*>(board_ + 1); }
  std::int64_t* recv_ns(std::uint32_t i) const { return send_ns() + latency_ * (1 + std::size_t{i}); }

 private:
  std::uint32_t subscribers_;
  std::uint64_t latency_;
  std::size_t bytes_ = 0;
  Board* board_ = nullptr;
};

/// One row's parameters.
struct Row {
  std::string transport;
  Mode mode = Mode::kBlock;
  std::size_t size = 0;
  std::uint32_t subscribers = 0;
};

struct Options {
  std::vector<std::uint32_t> subscribers{1, 2, 4, 8};
  std::vector<std::size_t> sizes{64, 1U << 20};
  std::vector<std::string> modes{"block", "poll"};
  std::vector<std::string> transports{"shmbus", "iceoryx"};
  std::uint64_t latency = 1000;       ///< paced messages per latency run
  std::uint64_t throughput = 20'000;  ///< messages per throughput run (1 MiB rows: a tenth)
  unsigned repeat = 3;
  bool json = false;
};

// ----------------------------------------------------------------- sides

/// The publishing side: puts the sequence at the front of `message` and
/// copies it in.
class FanPublisher {
 public:
  virtual ~FanPublisher() = default;
  virtual void send(std::uint64_t seq, std::span<std::byte> message) = 0;
};
/// A subscribing side: the next message's sequence, read in place.
class FanSubscriber {
 public:
  virtual ~FanSubscriber() = default;
  virtual std::uint64_t next(Mode mode) = 0;
  virtual std::uint64_t lost() const = 0;
};

Config shmbus_config(const std::string& domain, std::size_t size, const char* node) {
  Config c;
  c.domain = domain;
  c.node = node;
  c.defaults.capacity = depth_for(size);
  c.defaults.max_message_size = static_cast<std::uint32_t>(size);
  // As in `shmbus-bench peers`: this VM kind deschedules a vCPU for a few
  // ms under host load, which must not count a live writer as crashed.
  c.defaults.stall_timeout = std::chrono::milliseconds(100);
  return c;
}

class ShmbusFanPublisher final : public FanPublisher {
 public:
  ShmbusFanPublisher(const std::string& domain, std::size_t size)
      : ctx_(shmbus_config(domain, size, "fan_publisher")), pub_("/fan", TypeInfo::bytes(), ctx_) {}
  void send(std::uint64_t seq, std::span<std::byte> message) override {
    std::memcpy(message.data(), &seq, sizeof(seq));
    pub_.publish(message);
  }

 private:
  Context ctx_;
  Publisher pub_;
};

class ShmbusFanSubscriber final : public FanSubscriber {
 public:
  ShmbusFanSubscriber(const std::string& domain, std::size_t size)
      : ctx_(shmbus_config(domain, size, "fan_subscriber")), sub_("/fan", TypeInfo::bytes(), ctx_) {}
  std::uint64_t next(Mode mode) override {
    std::uint64_t seq = UINT64_MAX;
    for (;;) {
      if (sub_.read([&](std::span<const std::byte> p, const MessageInfo&) { std::memcpy(&seq, p.data(), 8); }).ok()) {
        return seq;
      }
      if (mode == Mode::kBlock) sub_.wait(std::chrono::milliseconds(100));
    }
  }
  std::uint64_t lost() const override { return sub_.lost(); }

 private:
  Context ctx_;
  Subscriber sub_;
};

#if SHMBUS_BENCH_ICEORYX
const iox::capro::ServiceDescription kFanService{"ShmbusBench", "Fan", "Bytes"};

class IceoryxFanPublisher final : public FanPublisher {
 public:
  IceoryxFanPublisher() {
    init_iceoryx_runtime(iceoryx::runtime_name("fan_publisher", ::getpid()));
    iox::popo::PublisherOptions po;
    po.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::WAIT_FOR_CONSUMER;
    pub_.emplace(kFanService, po);
  }
  ~IceoryxFanPublisher() override { pub_.reset(); }
  void send(std::uint64_t seq, std::span<std::byte> message) override {
    std::memcpy(message.data(), &seq, sizeof(seq));
    for (;;) {
      bool sent = false;
      pub_->loan(static_cast<std::uint32_t>(message.size())).and_then([&](void* chunk) {
        std::memcpy(chunk, message.data(), message.size());
        pub_->publish(chunk);
        sent = true;
      });
      if (sent) return;
      cpu_relax();  // the mempool momentarily exhausted
    }
  }

 private:
  iox::cxx::optional<iox::popo::UntypedPublisher> pub_;
};

class IceoryxFanSubscriber final : public FanSubscriber {
 public:
  explicit IceoryxFanSubscriber(std::size_t size) {
    init_iceoryx_runtime(iceoryx::runtime_name("fan_subscriber", ::getpid()));
    iox::popo::SubscriberOptions so;
    so.queueCapacity = depth_for(size);
    so.queueFullPolicy = iox::popo::QueueFullPolicy::BLOCK_PRODUCER;
    sub_.emplace(kFanService, so);
    waitset_.emplace();
    waitset_->attachState(*sub_, iox::popo::SubscriberState::HAS_DATA).or_else([](auto) {
      throw std::runtime_error("iceoryx: cannot attach the subscriber to a WaitSet");
    });
    while (sub_->getSubscriptionState() != iox::SubscribeState::SUBSCRIBED) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~IceoryxFanSubscriber() override {
    waitset_.reset();
    sub_.reset();
  }
  std::uint64_t next(Mode mode) override {
    for (;;) {
      std::uint64_t seq = UINT64_MAX;
      sub_->take().and_then([&](const void* chunk) {
        std::memcpy(&seq, chunk, sizeof(seq));
        sub_->release(chunk);
      });
      if (seq != UINT64_MAX) return seq;
      if (mode == Mode::kBlock) waitset_->timedWait(iox::units::Duration::fromMilliseconds(100));
    }
  }
  std::uint64_t lost() const override { return 0; }  // BLOCK_PRODUCER: gaps are counted by the caller

 private:
  iox::cxx::optional<iox::popo::UntypedSubscriber> sub_;
  iox::cxx::optional<iox::popo::WaitSet<>> waitset_;
};
#endif

std::unique_ptr<FanPublisher> make_publisher(const Row& r, const std::string& domain) {
#if SHMBUS_BENCH_ICEORYX
  if (r.transport == "iceoryx") return std::make_unique<IceoryxFanPublisher>();
#endif
  return std::make_unique<ShmbusFanPublisher>(domain, r.size);
}

std::unique_ptr<FanSubscriber> make_subscriber(const Row& r, const std::string& domain) {
#if SHMBUS_BENCH_ICEORYX
  if (r.transport == "iceoryx") return std::make_unique<IceoryxFanSubscriber>(r.size);
#endif
  return std::make_unique<ShmbusFanSubscriber>(domain, r.size);
}

// ------------------------------------------------------------- processes

/// A subscriber process: receives every sequence of both phases in order,
/// stamping the latency phase's receipts, then exits.
[[noreturn]] void subscriber_main(const Row& r, const std::string& domain, const SharedRun& run, std::uint32_t i,
                                  std::uint64_t latency, std::uint64_t total) {
  Progress& me = run.board().progress[i];
  try {
    // iceoryx subscribers reach SUBSCRIBED only once the publisher offers.
    while (r.transport == "iceoryx" && run.board().offered.load() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto sub = make_subscriber(r, domain);
    run.board().ready.fetch_add(1);
    std::int64_t* recv = run.recv_ns(i);
    std::uint64_t expected = 0;
    while (expected < total) {
      const std::uint64_t seq = sub->next(r.mode);
      const std::int64_t t = now_ns();
      if (seq < latency) recv[seq] = t;
      if (seq != expected) me.lost.fetch_add(seq > expected ? seq - expected : 1);
      expected = seq + 1;
      me.received.store(expected, std::memory_order_release);
    }
    me.lost.fetch_add(sub->lost());
    sub.reset();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-bench-fanout: subscriber %u: %s\n", i, e.what());
    me.failed.store(1);
    ::_exit(1);
  }
}

/// Waits until every subscriber has received up to `seq` (exclusive).
void wait_for_all(const SharedRun& run, std::uint32_t n, std::uint64_t seq) {
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t spins = 1; run.board().progress[i].received.load(std::memory_order_acquire) < seq; ++spins) {
      if (run.board().progress[i].failed.load() != 0) return;
      if ((spins & 255U) == 0) {
        ::sched_yield();
      } else {
        cpu_relax();
      }
    }
  }
}

/// The publisher process: the paced latency phase, then the windowed
/// throughput phase.
[[noreturn]] void publisher_main(const Row& r, const std::string& domain, const SharedRun& run, std::uint64_t latency,
                                 std::uint64_t throughput, std::int64_t interval_ns) {
  try {
    auto pub = make_publisher(r, domain);
    run.board().offered.store(1);
    while (run.board().ready.load() < r.subscribers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // every subscriber at its first wait
    std::vector<std::byte> payload(r.size, std::byte{0x5a});
    std::int64_t* send = run.send_ns();
    const std::int64_t start = now_ns() + interval_ns;
    for (std::uint64_t k = 0; k < latency; ++k) {
      const std::int64_t at = start + static_cast<std::int64_t>(k) * interval_ns;
      const timespec ts{at / 1'000'000'000, at % 1'000'000'000};
      ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      send[k] = now_ns();
      pub->send(k, payload);
    }
    wait_for_all(run, r.subscribers, latency);
    const std::uint64_t window = window_for(r.size);
    const std::int64_t t0 = now_ns();
    for (std::uint64_t s = latency; s < latency + throughput; ++s) {
      if (s + 1 > latency + window) wait_for_all(run, r.subscribers, s + 1 - window);
      pub->send(s, payload);
    }
    wait_for_all(run, r.subscribers, latency + throughput);
    run.board().throughput_ns = now_ns() - t0;
    pub.reset();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-bench-fanout: publisher: %s\n", e.what());
    run.board().publisher_failed.store(1);
    ::_exit(1);
  }
}

struct Measure {
  double p50 = 0, p99 = 0, msgs_per_s = 0;
  bool ok = false;
};

double percentile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

/// One run of a row: N subscriber processes and a publisher process,
/// waited for at most `limit`.
Measure run_row(const Row& r, const Options& o, int index) {
  const std::string domain = fmt::format("bench_fan_{}_{}", ::getpid(), index);
  const std::uint64_t throughput = r.size >= (256U << 10) ? o.throughput / 10 : o.throughput;
  // Paced well apart: a message never waits for the one before it.
  const std::int64_t interval_ns = r.size >= (256U << 10) ? 4'000'000 : 500'000;
  SharedRun run(r.subscribers, o.latency);
  std::vector<pid_t> children;
  for (std::uint32_t i = 0; i < r.subscribers; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) subscriber_main(r, domain, run, i, o.latency, o.latency + throughput);
    children.push_back(pid);
  }
  const pid_t pub = ::fork();
  if (pub == 0) publisher_main(r, domain, run, o.latency, throughput, interval_ns);
  children.push_back(pub);
  // Bounded: the paced phase, plus a generous minute for the rest.
  const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(o.latency) * interval_ns + 60'000'000'000LL;
  bool ok = true;
  for (const pid_t c : children) {
    int status = 0;
    while (::waitpid(c, &status, WNOHANG) == 0) {
      if (now_ns() > deadline) {
        for (const pid_t k : children) ::kill(k, SIGKILL);
        ::waitpid(c, &status, 0);
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (const pid_t c : children) ::waitpid(c, nullptr, WNOHANG);
  if (r.transport == "shmbus") introspect::clean_domain(domain, false);
  Measure m;
  const Board& b = run.board();
  for (std::uint32_t i = 0; i < r.subscribers; ++i) ok = ok && b.progress[i].lost.load() == 0;
  if (!ok || b.throughput_ns <= 0) return m;
  std::vector<double> last;
  last.reserve(o.latency);
  for (std::uint64_t k = 0; k < o.latency; ++k) {
    std::int64_t latest = 0;
    for (std::uint32_t i = 0; i < r.subscribers; ++i) latest = std::max(latest, run.recv_ns(i)[k]);
    last.push_back(static_cast<double>(latest - run.send_ns()[k]));
  }
  m.p50 = percentile(last, 0.50);
  m.p99 = percentile(last, 0.99);
  m.msgs_per_s = static_cast<double>(throughput) * 1e9 / static_cast<double>(b.throughput_ns);
  m.ok = true;
  return m;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string format_ns(double ns) {
  return ns >= 10'000 ? fmt::format("{:.1f} us", ns / 1000) : fmt::format("{:.0f} ns", ns);
}

struct Result {
  Row row{};
  std::vector<double> p50, p99, tput;  ///< per repeat; empty entries: failed runs
  unsigned failed = 0;
};

}  // namespace

static int run_fanout(int argc, char** argv) {
  CLI::App app{"one publisher, N subscriber processes: shmbus against iceoryx", "shmbus-bench-fanout"};
  Options o;
  bool smoke = false;
  app.add_option("--subscribers", o.subscribers, "subscriber process counts (1-8)")
      ->delimiter(',')
      ->check(CLI::Range(1U, kMaxSubscribers));
  app.add_option("--sizes", o.sizes, "payload sizes in bytes (at least 8)")
      ->delimiter(',')
      ->check(CLI::Range(8, 64 << 20));
  app.add_option("--modes", o.modes, "subset of block,poll")->delimiter(',')->check(CLI::IsMember({"block", "poll"}));
  app.add_option("--transports", o.transports, "subset of shmbus,iceoryx")
      ->delimiter(',')
      ->check(CLI::IsMember({"shmbus", "iceoryx"}));
  app.add_option("--messages", o.latency, "paced messages per latency run")->check(CLI::Range(10, 1'000'000));
  app.add_option("--throughput", o.throughput, "messages per throughput run (sizes of 256 KiB and more: a tenth)")
      ->check(CLI::Range(100, 100'000'000));
  app.add_option("--repeat", o.repeat, "runs per row, interleaved across transports; medians reported")
      ->check(CLI::Range(1, 50));
  app.add_flag("--json", o.json, "one JSON object instead of a table");
  app.add_flag("--smoke", smoke, "a short run: 1 and 2 subscribers, 64 B and 64 KiB, one repeat");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (smoke) {
    o.subscribers = {1, 2};
    o.sizes = {64, 64 << 10};
    o.latency = 100;
    o.throughput = 2000;
    o.repeat = 1;
  }
  const unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
  std::vector<Row> rows;
  for (const std::string& mode_name : o.modes) {
    const Mode mode = mode_name == "poll" ? Mode::kPoll : Mode::kBlock;
    for (const std::size_t size : o.sizes) {
      for (const std::uint32_t n : o.subscribers) {
        if (mode == Mode::kPoll && n + 1 > cpus) continue;  // a poller without a core of its own
        for (const std::string& t : o.transports) rows.push_back(Row{t, mode, size, n});
      }
    }
  }
#if SHMBUS_BENCH_ICEORYX
  std::shared_ptr<BenchRoudi> roudi;
  if (std::find(o.transports.begin(), o.transports.end(), "iceoryx") != o.transports.end()) {
    std::vector<RoudiPool> pools;
    for (const std::size_t size : o.sizes) {
      // Every subscriber's queue full, the publisher's window, and spares.
      const std::uint32_t count = depth_for(size) * (kMaxSubscribers + 2);
      pools.push_back({raw_chunk_size(static_cast<std::uint32_t>(size)), count});
    }
    try {
      const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once at start
      roudi = std::make_shared<BenchRoudi>(tmp != nullptr ? tmp : "/tmp", pools);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shmbus-bench-fanout: %s\n", e.what());
      return 1;
    }
  }
#else
  if (std::find(o.transports.begin(), o.transports.end(), "iceoryx") != o.transports.end()) {
    std::fprintf(stderr, "shmbus-bench-fanout: built without iceoryx; use --transports shmbus\n");
    return 2;
  }
#endif
  std::vector<Result> results(rows.size());
  int index = 0;
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Result& res = results[i];
      res.row = rows[i];
      const Measure m = run_row(rows[i], o, index++);
      if (!m.ok) {
        ++res.failed;
        continue;
      }
      res.p50.push_back(m.p50);
      res.p99.push_back(m.p99);
      res.tput.push_back(m.msgs_per_s);
    }
  }
  const auto find = [&](const std::string& transport, Mode mode, std::size_t size, std::uint32_t n) -> const Result* {
    for (const Result& r : results) {
      const Row& w = r.row;
      if (w.transport == transport && w.mode == mode && w.size == size && w.subscribers == n && !r.p50.empty()) {
        return &r;
      }
    }
    return nullptr;
  };
  unsigned failed = 0;
  for (const Result& r : results) failed += r.failed;
  if (o.json) {
    std::string s = "{\"rows\":[";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      s += fmt::format(
          "{}{{\"transport\":\"{}\",\"mode\":\"{}\",\"size\":{},\"subscribers\":{},\"p50_ns\":{:.0f},"
          "\"p99_ns\":{:.0f},\"msgs_per_s\":{:.0f},\"runs\":{},\"failed\":{}}}",
          i ? "," : "", r.row.transport, to_string(r.row.mode), r.row.size, r.row.subscribers, median(r.p50),
          median(r.p99), median(r.tput), r.p50.size(), r.failed);
    }
    std::printf("%s]}\n", s.c_str());
    return failed == 0 ? 0 : 1;
  }
  fmt::print(
      "fan-out: one publisher, N subscriber processes; latency = publish to the last subscriber's receipt "
      "({} paced messages), throughput lossless to all; medians of {} runs\n",
      o.latency, o.repeat);
  fmt::print("{:<8} {:<6} {:>8} {:>3}  {:>10} {:>10} {:>12}  {:>11} {:>12}\n", "", "mode", "size", "N", "p50", "p99",
             "msgs/s", "p50/iceoryx", "tput/iceoryx");
  for (const Result& r : results) {
    if (r.p50.empty()) {
      fmt::print("{:<8} {:<6} {:>8} {:>3}  every run failed\n", r.row.transport, to_string(r.row.mode), r.row.size,
                 r.row.subscribers);
      continue;
    }
    std::string vs;
    const Result* p =
        r.row.transport == "shmbus" ? find("iceoryx", r.row.mode, r.row.size, r.row.subscribers) : nullptr;
    if (p != nullptr) {
      vs = fmt::format("{:>11.2f} {:>12.2f}", median(r.p50) / median(p->p50), median(r.tput) / median(p->tput));
    }
    fmt::print("{:<8} {:<6} {:>8} {:>3}  {:>10} {:>10} {:>12.0f}  {}{}\n", r.row.transport, to_string(r.row.mode),
               r.row.size, r.row.subscribers, format_ns(median(r.p50)), format_ns(median(r.p99)), median(r.tput), vs,
               r.failed ? fmt::format("  ({} runs failed)", r.failed) : "");
  }
  // How each transport's figures grow from the fewest subscribers to the most.
  const auto [fewest, most] = std::minmax_element(o.subscribers.begin(), o.subscribers.end());
  for (const Result& r : results) {
    if (r.row.subscribers != *fewest || *most == *fewest) continue;
    const Result* m = find(r.row.transport, r.row.mode, r.row.size, *most);
    if (m == nullptr || r.p50.empty()) continue;
    fmt::print("growth N={}->{}: {:<8} {:<6} {:>8} B: p50 x{:.2f}, throughput x{:.2f}\n", *fewest, *most,
               r.row.transport, to_string(r.row.mode), r.row.size, median(m->p50) / median(r.p50),
               median(m->tput) / median(r.tput));
  }
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  return cli::guarded("shmbus-bench-fanout", [&] { return run_fanout(argc, argv); });
}
