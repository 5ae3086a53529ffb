// shmbus-bench-fanout: P publisher processes and N subscriber processes on
// one channel, shmbus against its peers in the same run. Three shapes of a
// robot's bus are rows of it:
//
//   fan-out:  one camera or lidar feeding N consumers (P = 1, N = 1..8)
//   camera:   1-8 MiB messages written through a loan and read in place,
//             touching the first and last cache line only or every byte
//             (--writes loan --reads ends,all), against the copying publish
//   fan-in:   P writers into one channel (logs, commands, diagnostics),
//             against iceoryx's publishers on one topic and Boost
//             message_queue (--publishers 1,2,4 --subscribers 1)
//
// Each row measures:
//   latency:    publish to the LAST subscriber's receipt, per message
//               (p50, p99), messages paced so that none queues behind another
//               (P writers staggered evenly within the pacing interval)
//   throughput: messages per second every subscriber received, lossless
//               (a flow window: each writer at most W/P messages ahead of
//               the slowest subscriber)
//
//   shmbus-bench-fanout [--publishers 1] [--subscribers 1,2,4,8]
//                       [--sizes 64,1048576] [--writes copy] [--reads ends]
//                       [--modes block,poll] [--transports shmbus,iceoryx]
//                       [--messages 1000] [--throughput 20000] [--repeat 3]
//                       [--json] [--smoke]
//
// Polling rows run only where every process has a core (P + N <= CPUs);
// blocking ones at every P and N. A copying publisher copies the whole
// payload in (shmbus publish, iceoryx loan + memcpy, message_queue send); a
// loaning one writes the sequence and the last cache line in place. A
// subscriber reads the sequence and the last cache line in place, or
// every byte (message_queue copies out: it has no other way).
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
#include <boost/interprocess/ipc/message_queue.hpp>
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
constexpr std::uint32_t kMaxPublishers = 4;
/// A message's first 8 bytes: its writer in the top byte, its sequence
/// (per writer) below.
constexpr unsigned kWriterShift = 56;
constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kWriterShift) - 1;

/// Ring (shmbus) and queue (iceoryx, message_queue) depth for a message
/// size, and the flow window under it: 256 small messages, 32 of 256 KiB
/// or more, 8 of 4 MiB or more.
std::uint32_t depth_for(std::size_t size) {
  if (size >= (4U << 20)) return 8;
  return size >= (256U << 10) ? 32 : 256;
}
std::uint64_t window_for(std::size_t size) { return depth_for(size) * 3 / 4; }

/// What the processes of one run share (an anonymous shared mapping made
/// before the fork): readiness, the phases' common starts, each
/// subscriber's progress per writer, and the latency phase's send and
/// receive times.
// SYNC POINT: a subscriber's release store of `received[w]` pairs with
// writer w's acquire loads in wait_for_all (the flow window). The stamp
// arrays after the board are plain: each slot has one writer, and the
// parent reads them only after waitpid() of every side.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::int64_t>::is_always_lock_free,
              "the board's atomics are shared across processes");
struct alignas(64) Progress {
  std::atomic<std::uint64_t> received[kMaxPublishers]{};  ///< the next sequence expected, per writer
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint32_t> failed{0};
};
struct Board {
  std::atomic<std::uint32_t> ready{0};    ///< subscribers subscribed
  std::atomic<std::uint32_t> offered{0};  ///< publishers that exist (iceoryx subscribers wait for all)
  std::atomic<std::uint32_t> publisher_failed{0};
  std::atomic<std::int64_t> paced_start_ns{0};  ///< set by writer 0 once every side is up
  std::atomic<std::uint32_t> paced_done{0};
  std::atomic<std::int64_t> burst_start_ns{0};  ///< set by writer 0 once every writer's paced phase arrived
  std::atomic<std::uint32_t> burst_done{0};
  std::int64_t throughput_ns = 0;
  Progress progress[kMaxSubscribers];
  // Then: send_ns[publishers][latency], recv_ns[subscribers][publishers][latency].
};

class SharedRun {
 public:
  SharedRun(std::uint32_t publishers, std::uint32_t subscribers, std::uint64_t latency)
      : publishers_(publishers), latency_(latency) {
    bytes_ = sizeof(Board) + std::size_t{publishers} * (1 + std::size_t{subscribers}) * latency * sizeof(std::int64_t);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map the run's shared board");
    board_ = new (p) Board();
  }
  ~SharedRun() { ::munmap(board_, bytes_); }
  SharedRun(const SharedRun&) = delete;
  SharedRun& operator=(const SharedRun&) = delete;

  Board& board() const { return *board_; }
  std::int64_t* send_ns(std::uint32_t w) const { return reinterpret_cast<std::int64_t*>(board_ + 1) + latency_ * w; }
  std::int64_t* recv_ns(std::uint32_t i, std::uint32_t w) const {
    return send_ns(0) + latency_ * (publishers_ * (1 + std::size_t{i}) + w);
  }

 private:
  std::uint32_t publishers_;
  std::uint64_t latency_;
  std::size_t bytes_ = 0;
  Board* board_ = nullptr;
};

/// One row's parameters.
struct Row {
  std::string transport;
  Mode mode = Mode::kBlock;
  std::size_t size = 0;
  bool loan = false;      ///< writes through a loan (else copies in)
  bool read_all = false;  ///< reads every byte (else the first and last line)
  std::uint32_t publishers = 1;
  std::uint32_t subscribers = 1;
};

struct Options {
  std::vector<std::uint32_t> publishers{1};
  std::vector<std::uint32_t> subscribers{1, 2, 4, 8};
  std::vector<std::size_t> sizes{64, 1U << 20};
  std::vector<std::string> writes{"copy"};
  std::vector<std::string> reads{"ends"};
  std::vector<std::string> modes{"block", "poll"};
  std::vector<std::string> transports{"shmbus", "iceoryx"};
  std::uint64_t latency = 1000;       ///< paced messages per writer per latency run
  std::uint64_t throughput = 20'000;  ///< messages per throughput run (256 KiB: a tenth, 4 MiB: a 40th)
  /// Pacing of the latency run for every size (0: by size, interval_for).
  std::int64_t interval_ns = 0;
  unsigned repeat = 3;
  bool json = false;
};

/// The latency run's pacing by size: well apart, so that a message never
/// waits for the one before it.
std::int64_t interval_for(std::size_t size) {
  if (size >= (4U << 20)) return 10'000'000;
  return size >= (256U << 10) ? 4'000'000 : 500'000;
}

std::uint64_t throughput_for(const Options& o, std::size_t size) {
  if (size >= (4U << 20)) return std::max<std::uint64_t>(o.throughput / 40, 50);
  return size >= (256U << 10) ? o.throughput / 10 : o.throughput;
}

// ----------------------------------------------------------------- sides

/// Reads a message where it lies: its tag, then the last cache line or
/// every byte. What it reads is kept from the optimizer.
std::uint64_t read_message(std::span<const std::byte> p, bool all) {
  std::uint64_t tag = 0;
  std::memcpy(&tag, p.data(), sizeof(tag));
  std::uint64_t sum = 0;
  if (all) {
    for (std::size_t o = 0; o + sizeof(sum) <= p.size(); o += sizeof(sum)) {
      std::uint64_t word = 0;
      std::memcpy(&word, p.data() + o, sizeof(word));
      sum ^= word;
    }
  } else {
    sum = static_cast<std::uint64_t>(p[p.size() - 1]);
  }
  asm volatile("" : : "r"(sum) : "memory");
  return tag;
}

/// Writes a message: its tag, and (through a loan) the last cache line.
void write_ends(std::span<std::byte> out, std::uint64_t tag) {
  std::memcpy(out.data(), &tag, sizeof(tag));
  out[out.size() - 1] = static_cast<std::byte>(tag);
}

/// The publishing side: a loan written at its ends, or `message` (tagged
/// at its front) copied in.
class FanPublisher {
 public:
  virtual ~FanPublisher() = default;
  virtual void send(std::uint64_t tag, std::span<std::byte> message, bool loan) = 0;
};
/// A subscribing side: the next message's tag, read in place.
class FanSubscriber {
 public:
  virtual ~FanSubscriber() = default;
  virtual std::uint64_t next(Mode mode, bool read_all) = 0;
  virtual std::uint64_t lost() const = 0;
};

/// shmbus's wait_spin in every side (--wait-spin-us), set before they fork.
std::chrono::nanoseconds g_wait_spin = Config{}.defaults.wait_spin;

Config shmbus_config(const std::string& domain, std::size_t size, const char* node) {
  Config c;
  c.defaults.wait_spin = g_wait_spin;
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
  void send(std::uint64_t tag, std::span<std::byte> message, bool loan) override {
    if (!loan) {
      std::memcpy(message.data(), &tag, sizeof(tag));
      static_cast<void>(pub_.publish(message));
      return;
    }
    Loan l = pub_.loan(message.size());
    if (!l) throw std::runtime_error("shmbus: no loan of the message's size");
    write_ends(l.data(), tag);
    static_cast<void>(pub_.commit(l));
  }

 private:
  Context ctx_;
  Publisher pub_;
};

class ShmbusFanSubscriber final : public FanSubscriber {
 public:
  ShmbusFanSubscriber(const std::string& domain, std::size_t size)
      : ctx_(shmbus_config(domain, size, "fan_subscriber")), sub_("/fan", TypeInfo::bytes(), ctx_) {}
  std::uint64_t next(Mode mode, bool read_all) override {
    std::uint64_t tag = UINT64_MAX;
    for (;;) {
      if (sub_.read([&](std::span<const std::byte> p, const MessageInfo&) { tag = read_message(p, read_all); }).ok()) {
        return tag;
      }
      if (mode == Mode::kBlock) sub_.wait(std::chrono::milliseconds(100));
    }
  }
  std::uint64_t lost() const override { return sub_.lost(); }

 private:
  Context ctx_;
  Subscriber sub_;
};

/// Boost.Interprocess message_queue: one consumer only (N = 1), copies in
/// and out. The parent creates the queue before the fork.
class MqFanPublisher final : public FanPublisher {
 public:
  explicit MqFanPublisher(const std::string& name) : mq_(boost::interprocess::open_only, name.c_str()) {}
  void send(std::uint64_t tag, std::span<std::byte> message, bool) override {
    std::memcpy(message.data(), &tag, sizeof(tag));
    mq_.send(message.data(), message.size(), 0);
  }

 private:
  boost::interprocess::message_queue mq_;
};

class MqFanSubscriber final : public FanSubscriber {
 public:
  MqFanSubscriber(const std::string& name, std::size_t size)
      : mq_(boost::interprocess::open_only, name.c_str()), buffer_(size) {}
  std::uint64_t next(Mode mode, bool read_all) override {
    std::size_t got = 0;
    unsigned priority = 0;
    if (mode == Mode::kBlock) {
      mq_.receive(buffer_.data(), buffer_.size(), got, priority);
    } else {
      while (!mq_.try_receive(buffer_.data(), buffer_.size(), got, priority)) cpu_relax();
    }
    return read_message({buffer_.data(), got}, read_all);
  }
  std::uint64_t lost() const override { return 0; }  // a blocking queue: gaps are counted by the caller

 private:
  boost::interprocess::message_queue mq_;
  std::vector<std::byte> buffer_;
};

#if SHMBUS_BENCH_ICEORYX
/// The run's service, named after its domain: RouDi's monitoring is off, so
/// a process that died before giving its ports back stays listed, and a
/// later run's blocking publisher must never wait for its queue.
iox::capro::ServiceDescription fan_service(const std::string& domain) {
  return {"ShmbusBench", iox::capro::IdString_t{iox::cxx::TruncateToCapacity, domain.c_str()}, "Fan"};
}

class IceoryxFanPublisher final : public FanPublisher {
 public:
  explicit IceoryxFanPublisher(const std::string& domain) {
    init_iceoryx_runtime(iceoryx::runtime_name("fan_publisher", ::getpid()));
    iox::popo::PublisherOptions po;
    po.subscriberTooSlowPolicy = iox::popo::ConsumerTooSlowPolicy::WAIT_FOR_CONSUMER;
    pub_.emplace(fan_service(domain), po);
  }
  ~IceoryxFanPublisher() override { pub_.reset(); }
  void send(std::uint64_t tag, std::span<std::byte> message, bool loan) override {
    std::memcpy(message.data(), &tag, sizeof(tag));
    for (;;) {
      bool sent = false;
      pub_->loan(static_cast<std::uint32_t>(message.size())).and_then([&](void* chunk) {
        if (loan) {
          write_ends({static_cast<std::byte*>(chunk), message.size()}, tag);
        } else {
          std::memcpy(chunk, message.data(), message.size());
        }
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
  IceoryxFanSubscriber(const std::string& domain, std::size_t size) : size_(size) {
    init_iceoryx_runtime(iceoryx::runtime_name("fan_subscriber", ::getpid()));
    iox::popo::SubscriberOptions so;
    so.queueCapacity = depth_for(size);
    so.queueFullPolicy = iox::popo::QueueFullPolicy::BLOCK_PRODUCER;
    sub_.emplace(fan_service(domain), so);
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
  std::uint64_t next(Mode mode, bool read_all) override {
    for (;;) {
      std::uint64_t tag = UINT64_MAX;
      sub_->take().and_then([&](const void* chunk) {
        tag = read_message({static_cast<const std::byte*>(chunk), size_}, read_all);
        sub_->release(chunk);
      });
      if (tag != UINT64_MAX) return tag;
      if (mode == Mode::kBlock) waitset_->timedWait(iox::units::Duration::fromMilliseconds(100));
    }
  }
  std::uint64_t lost() const override { return 0; }  // BLOCK_PRODUCER: gaps are counted by the caller

 private:
  std::size_t size_;
  iox::cxx::optional<iox::popo::UntypedSubscriber> sub_;
  iox::cxx::optional<iox::popo::WaitSet<>> waitset_;
};
#endif

/// A run's names: the shmbus domain, or the message_queue's name.
std::string queue_name(const std::string& domain) { return domain + "_mq"; }

std::unique_ptr<FanPublisher> make_publisher(const Row& r, const std::string& domain) {
#if SHMBUS_BENCH_ICEORYX
  if (r.transport == "iceoryx") return std::make_unique<IceoryxFanPublisher>(domain);
#endif
  if (r.transport == "boost_mq") return std::make_unique<MqFanPublisher>(queue_name(domain));
  return std::make_unique<ShmbusFanPublisher>(domain, r.size);
}

std::unique_ptr<FanSubscriber> make_subscriber(const Row& r, const std::string& domain) {
#if SHMBUS_BENCH_ICEORYX
  if (r.transport == "iceoryx") return std::make_unique<IceoryxFanSubscriber>(domain, r.size);
#endif
  if (r.transport == "boost_mq") return std::make_unique<MqFanSubscriber>(queue_name(domain), r.size);
  return std::make_unique<ShmbusFanSubscriber>(domain, r.size);
}

// ------------------------------------------------------------- processes

/// A subscriber process: receives every writer's sequences of both phases
/// in order, stamping the latency phase's receipts, then exits.
[[noreturn]] void subscriber_main(const Row& r, const std::string& domain, const SharedRun& run, std::uint32_t i,
                                  std::uint64_t latency, std::uint64_t per_writer) {
  Progress& me = run.board().progress[i];
  try {
    // iceoryx subscribers reach SUBSCRIBED only once a publisher offers;
    // once every one does, each is connected.
    while (r.transport == "iceoryx" && run.board().offered.load() < r.publishers) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto sub = make_subscriber(r, domain);
    run.board().ready.fetch_add(1);
    std::vector<std::uint64_t> expected(r.publishers, 0);
    std::uint64_t remaining = per_writer * r.publishers;
    while (remaining > 0) {
      const std::uint64_t tag = sub->next(r.mode, r.read_all);
      const std::int64_t t = now_ns();
      const auto w = static_cast<std::uint32_t>(tag >> kWriterShift);
      const std::uint64_t seq = tag & kSeqMask;
      if (w >= r.publishers || seq >= per_writer) throw std::runtime_error("a message no writer sent");
      if (seq < latency) run.recv_ns(i, w)[seq] = t;
      if (seq != expected[w]) me.lost.fetch_add(seq > expected[w] ? seq - expected[w] : 1);
      remaining -= std::min(remaining, seq + 1 > expected[w] ? seq + 1 - expected[w] : 0);
      expected[w] = seq + 1;
      me.received[w].store(expected[w], std::memory_order_release);
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

/// Waits until every subscriber has received writer `w`'s messages up to
/// `seq` (exclusive).
void wait_for_all(const SharedRun& run, std::uint32_t n, std::uint32_t w, std::uint64_t seq) {
  for (std::uint32_t i = 0; i < n; ++i) {
    const Progress& p = run.board().progress[i];
    for (std::uint32_t spins = 1; p.received[w].load(std::memory_order_acquire) < seq; ++spins) {
      if (p.failed.load() != 0) return;
      if ((spins & 255U) == 0) {
        ::sched_yield();
      } else {
        cpu_relax();
      }
    }
  }
}

/// Waits until `value` is at least `target` (the writers' barriers).
template <typename T>
T wait_until(const std::atomic<T>& value, T target) {
  T v = value.load();
  while (v < target) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    v = value.load();
  }
  return v;
}

/// Writer `w`'s process: the paced latency phase (writers staggered within
/// the interval), then the windowed throughput phase, both begun together.
[[noreturn]] void publisher_main(const Row& r, const std::string& domain, const SharedRun& run, std::uint32_t w,
                                 std::uint64_t latency, std::uint64_t per_writer, std::int64_t interval_ns) {
  Board& b = run.board();
  try {
    auto pub = make_publisher(r, domain);
    b.offered.fetch_add(1);
    wait_until(b.ready, r.subscribers);
    wait_until(b.offered, r.publishers);
    if (w == 0) {
      // Every subscriber at its first wait; iceoryx's discovery has joined
      // every publisher to every subscriber.
      std::this_thread::sleep_for(std::chrono::milliseconds(r.transport == "iceoryx" ? 300 : 50));
      b.paced_start_ns.store(now_ns() + interval_ns);
    }
    const std::int64_t start = wait_until(b.paced_start_ns, std::int64_t{1}) +
                               interval_ns * static_cast<std::int64_t>(w) / static_cast<std::int64_t>(r.publishers);
    std::vector<std::byte> payload(r.size, std::byte{0x5a});
    const std::uint64_t tag = std::uint64_t{w} << kWriterShift;
    std::int64_t* send = run.send_ns(w);
    for (std::uint64_t k = 0; k < latency; ++k) {
      const std::int64_t at = start + static_cast<std::int64_t>(k) * interval_ns;
      const timespec ts{at / 1'000'000'000, at % 1'000'000'000};
      ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      send[k] = now_ns();
      pub->send(tag | k, payload, r.loan);
    }
    wait_for_all(run, r.subscribers, w, latency);
    b.paced_done.fetch_add(1);
    if (w == 0) {
      wait_until(b.paced_done, r.publishers);
      b.burst_start_ns.store(now_ns());
    }
    const std::int64_t t0 = wait_until(b.burst_start_ns, std::int64_t{1});
    const std::uint64_t window = std::max<std::uint64_t>(1, window_for(r.size) / r.publishers);
    for (std::uint64_t s = latency; s < per_writer; ++s) {
      if (s + 1 > latency + window) wait_for_all(run, r.subscribers, w, s + 1 - window);
      pub->send(tag | s, payload, r.loan);
    }
    wait_for_all(run, r.subscribers, w, per_writer);
    b.burst_done.fetch_add(1);
    if (w == 0) {
      wait_until(b.burst_done, r.publishers);
      b.throughput_ns = now_ns() - t0;
    }
    pub.reset();
    ::_exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shmbus-bench-fanout: publisher %u: %s\n", w, e.what());
    b.publisher_failed.store(1);
    ::_exit(1);
  }
}

struct Measure {
  double p50 = 0, p99 = 0, msgs_per_s = 0;
  bool ok = false;
};

/// One run of a row: N subscriber processes and P publisher processes,
/// waited for at most the paced phase and a minute.
Measure run_row(const Row& r, const Options& o, int index) {
  const std::string domain = fmt::format("bench_fan_{}_{}", ::getpid(), index);
  const std::uint64_t per_writer = o.latency + throughput_for(o, r.size) / r.publishers;
  const std::int64_t interval_ns = o.interval_ns > 0 ? o.interval_ns : interval_for(r.size);
  std::optional<boost::interprocess::message_queue> mq;
  if (r.transport == "boost_mq") {
    boost::interprocess::message_queue::remove(queue_name(domain).c_str());
    mq.emplace(boost::interprocess::create_only, queue_name(domain).c_str(), depth_for(r.size), r.size);
  }
  SharedRun run(r.publishers, r.subscribers, o.latency);
  std::vector<pid_t> children;
  for (std::uint32_t i = 0; i < r.subscribers; ++i) {
    const pid_t pid = fork_side();
    if (pid == 0) subscriber_main(r, domain, run, i, o.latency, per_writer);
    children.push_back(pid);
  }
  for (std::uint32_t w = 0; w < r.publishers; ++w) {
    const pid_t pid = fork_side();
    if (pid == 0) publisher_main(r, domain, run, w, o.latency, per_writer, interval_ns);
    children.push_back(pid);
  }
  bool ok = wait_sides(children, now_ns() + static_cast<std::int64_t>(o.latency) * interval_ns + 60'000'000'000LL);
  if (r.transport == "shmbus") introspect::clean_domain(domain, false);
  if (mq) boost::interprocess::message_queue::remove(queue_name(domain).c_str());
  Measure m;
  const Board& b = run.board();
  for (std::uint32_t i = 0; i < r.subscribers; ++i) ok = ok && b.progress[i].lost.load() == 0;
  if (!ok || b.throughput_ns <= 0) return m;
  std::vector<double> last;
  last.reserve(o.latency * r.publishers);
  for (std::uint32_t w = 0; w < r.publishers; ++w) {
    for (std::uint64_t k = 0; k < o.latency; ++k) {
      std::int64_t latest = 0;
      for (std::uint32_t i = 0; i < r.subscribers; ++i) latest = std::max(latest, run.recv_ns(i, w)[k]);
      last.push_back(static_cast<double>(latest - run.send_ns(w)[k]));
    }
  }
  m.p50 = percentile(last, 0.50);
  m.p99 = percentile(last, 0.99);
  const std::uint64_t burst = (per_writer - o.latency) * r.publishers;
  m.msgs_per_s = static_cast<double>(burst) * 1e9 / static_cast<double>(b.throughput_ns);
  m.ok = true;
  return m;
}

struct Result {
  Row row{};
  std::vector<double> p50, p99, tput;  ///< per repeat; empty entries: failed runs
  unsigned failed = 0;
};

const char* write_name(const Row& r) { return r.loan ? "loan" : "copy"; }
const char* read_name(const Row& r) { return r.read_all ? "all" : "ends"; }

/// Whether a row can run: pollers each need a core; message_queue has one
/// consumer and no loan.
bool runnable(const Row& r, unsigned cpus) {
  if (r.mode == Mode::kPoll && r.publishers + r.subscribers > cpus) return false;
  return r.transport != "boost_mq" || (r.subscribers == 1 && !r.loan);
}

std::vector<Row> rows_of(const Options& o) {
  const unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
  std::vector<Row> rows;
  for (const std::string& mode_name : o.modes) {
    for (const std::size_t size : o.sizes) {
      for (const std::string& write : o.writes) {
        for (const std::string& read : o.reads) {
          for (const std::uint32_t p : o.publishers) {
            for (const std::uint32_t n : o.subscribers) {
              for (const std::string& t : o.transports) {
                const Row r{
                    t, mode_name == "poll" ? Mode::kPoll : Mode::kBlock, size, write == "loan", read == "all", p, n};
                if (runnable(r, cpus)) rows.push_back(r);
              }
            }
          }
        }
      }
    }
  }
  return rows;
}

/// The result of the row that differs from `r` as `change` makes it.
template <typename Change>
const Result* find_like(const std::vector<Result>& results, const Row& r, Change change) {
  Row want = r;
  change(want);
  for (const Result& x : results) {
    const Row& w = x.row;
    if (w.transport == want.transport && w.mode == want.mode && w.size == want.size && w.loan == want.loan &&
        w.read_all == want.read_all && w.publishers == want.publishers && w.subscribers == want.subscribers &&
        !x.p50.empty()) {
      return &x;
    }
  }
  return nullptr;
}

void print_json(const std::vector<Result>& results) {
  std::string s = "{\"rows\":[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    s += fmt::format(
        "{}{{\"transport\":\"{}\",\"mode\":\"{}\",\"size\":{},\"write\":\"{}\",\"read\":\"{}\",\"publishers\":{},"
        "\"subscribers\":{},\"p50_ns\":{:.0f},\"p99_ns\":{:.0f},\"msgs_per_s\":{:.0f},\"runs\":{},\"failed\":{}}}",
        i ? "," : "", r.row.transport, to_string(r.row.mode), r.row.size, write_name(r.row), read_name(r.row),
        r.row.publishers, r.row.subscribers, median(r.p50), median(r.p99), median(r.tput), r.p50.size(), r.failed);
  }
  std::printf("%s]}\n", s.c_str());
}

/// Each dimension's growth, from its smallest value to its largest, the
/// others fixed: subscribers (fan-out), publishers (fan-in), size (zero
/// copy: independent of size or not).
template <typename T, typename Field>
void print_growth(const std::vector<Result>& results, const std::vector<T>& values, const char* what, Field field) {
  if (values.size() < 2) return;
  const auto [least, most] = std::minmax_element(values.begin(), values.end());
  for (const Result& r : results) {
    if (field(r.row) != *least || r.p50.empty()) continue;
    const Result* m = find_like(results, r.row, [&](Row& w) { field(w) = *most; });
    if (m == nullptr) continue;
    fmt::print("growth {} {}->{}: {:<8} {:<5} {:>8} B {} {} P={} N={}: p50 x{:.2f}, throughput x{:.2f}\n", what, *least,
               *most, r.row.transport, to_string(r.row.mode), r.row.size, write_name(r.row), read_name(r.row),
               r.row.publishers, r.row.subscribers, median(m->p50) / median(r.p50), median(m->tput) / median(r.tput));
  }
}

void print_table(const Options& o, const std::vector<Result>& results) {
  fmt::print(
      "P publishers, N subscribers; latency = publish to the last subscriber's receipt ({} paced messages per "
      "writer), throughput lossless to all; medians of {} runs; ratios: shmbus over the peer in the same row\n",
      o.latency, o.repeat);
  fmt::print("{:<8} {:<5} {:>8} {:<4} {:<4} {:>1} {:>1}  {:>10} {:>10} {:>12}  {}\n", "", "mode", "size", "wr", "rd",
             "P", "N", "p50", "p99", "msgs/s", "p50 / tput vs peers");
  for (const Result& r : results) {
    const Row& w = r.row;
    if (r.p50.empty()) {
      fmt::print("{:<8} {:<5} {:>8} {:<4} {:<4} {:>1} {:>1}  every run failed\n", w.transport, to_string(w.mode),
                 w.size, write_name(w), read_name(w), w.publishers, w.subscribers);
      continue;
    }
    std::string vs;
    if (w.transport == "shmbus") {
      for (const char* peer : {"iceoryx", "boost_mq"}) {
        const Result* p = find_like(results, w, [&](Row& x) { x.transport = peer; });
        if (p != nullptr) {
          vs += fmt::format("  {} {:.2f} / {:.2f}", peer, median(r.p50) / median(p->p50),
                            median(r.tput) / median(p->tput));
        }
      }
    }
    fmt::print("{:<8} {:<5} {:>8} {:<4} {:<4} {:>1} {:>1}  {:>10} {:>10} {:>12.0f} {}{}\n", w.transport,
               to_string(w.mode), w.size, write_name(w), read_name(w), w.publishers, w.subscribers,
               format_ns(median(r.p50)), format_ns(median(r.p99)), median(r.tput), vs,
               r.failed ? fmt::format("  ({} runs failed)", r.failed) : "");
  }
  print_growth(
      results, o.subscribers, "N", [](auto& row) -> auto& { return row.subscribers; });
  print_growth(
      results, o.publishers, "P", [](auto& row) -> auto& { return row.publishers; });
  print_growth(
      results, o.sizes, "size", [](auto& row) -> auto& { return row.size; });
}

}  // namespace

static int run_fanout(int argc, char** argv) {
  CLI::App app{"P publisher and N subscriber processes on one channel: shmbus against iceoryx and message_queue",
               "shmbus-bench-fanout"};
  Options o;
  bool smoke = false;
  app.add_option("--publishers", o.publishers, "publisher process counts (1-4)")
      ->delimiter(',')
      ->check(CLI::Range(1U, kMaxPublishers));
  app.add_option("--subscribers", o.subscribers, "subscriber process counts (1-8)")
      ->delimiter(',')
      ->check(CLI::Range(1U, kMaxSubscribers));
  app.add_option("--sizes", o.sizes, "payload sizes in bytes (8 B to 64 MiB)")
      ->delimiter(',')
      ->check(CLI::Range(8, 64 << 20));
  app.add_option("--writes", o.writes, "subset of copy,loan: copy the payload in, or write a loan's ends")
      ->delimiter(',')
      ->check(CLI::IsMember({"copy", "loan"}));
  app.add_option("--reads", o.reads, "subset of ends,all: read the first and last line in place, or every byte")
      ->delimiter(',')
      ->check(CLI::IsMember({"ends", "all"}));
  app.add_option("--modes", o.modes, "subset of block,poll")->delimiter(',')->check(CLI::IsMember({"block", "poll"}));
  app.add_option("--transports", o.transports, "subset of shmbus,iceoryx,boost_mq")
      ->delimiter(',')
      ->check(CLI::IsMember({"shmbus", "iceoryx", "boost_mq"}));
  std::uint32_t wait_spin_us = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Config{}.defaults.wait_spin).count());
  app.add_option("--wait-spin-us", wait_spin_us,
                 "shmbus's wait_spin: how long a blocking wait spins before it sleeps (default 50)")
      ->check(CLI::Range(0, 100'000));
  std::uint32_t interval_us = 0;
  app.add_option("--interval-us", interval_us,
                 "pacing of the latency run for every size (default by size: 0.5 ms, 4 ms from 256 KiB, 10 ms from "
                 "4 MiB); one value separates the size's effect from the pacing's")
      ->check(CLI::Range(10, 1'000'000));
  app.add_option("--messages", o.latency, "paced messages per writer per latency run")
      ->check(CLI::Range(10, 1'000'000));
  app.add_option("--throughput", o.throughput,
                 "messages per throughput run (sizes of 256 KiB and more: a tenth; of 4 MiB and more: a 40th)")
      ->check(CLI::Range(100, 100'000'000));
  app.add_option("--repeat", o.repeat, "runs per row, interleaved across transports; medians reported")
      ->check(CLI::Range(1, 50));
  app.add_flag("--json", o.json, "one JSON object instead of a table");
  app.add_flag("--smoke", smoke, "a short run of the rows asked for: 100 paced and 2000 burst messages, once");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  g_wait_spin = std::chrono::microseconds(wait_spin_us);
  o.interval_ns = std::int64_t{interval_us} * 1000;
  if (smoke) {
    o.latency = 100;
    o.throughput = 2000;
    o.repeat = 1;
  }
  const std::vector<Row> rows = rows_of(o);
  const auto uses = [&](const char* t) {
    return std::find(o.transports.begin(), o.transports.end(), t) != o.transports.end();
  };
#if SHMBUS_BENCH_ICEORYX
  std::shared_ptr<BenchRoudi> roudi;
  if (uses("iceoryx")) {
    const std::uint32_t n = *std::max_element(o.subscribers.begin(), o.subscribers.end());
    const std::uint32_t p = *std::max_element(o.publishers.begin(), o.publishers.end());
    std::vector<RoudiPool> pools;
    for (const std::size_t size : o.sizes) {
      // Every subscriber's queue full, each publisher's window, and spares.
      pools.push_back({raw_chunk_size(static_cast<std::uint32_t>(size)), depth_for(size) * (n + p + 1)});
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
  if (uses("iceoryx")) {
    std::fprintf(stderr, "shmbus-bench-fanout: built without iceoryx; use --transports shmbus,boost_mq\n");
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
  unsigned failed = 0;
  for (const Result& r : results) failed += r.failed;
  if (o.json) {
    print_json(results);
  } else {
    print_table(o, results);
  }
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  return cli::guarded("shmbus-bench-fanout", [&] { return run_fanout(argc, argv); });
}
