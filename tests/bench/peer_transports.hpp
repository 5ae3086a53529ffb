#pragma once
// The transports `shmbus-bench peers` compares, behind one small interface.
// Each Link is one side of a two-process connection: it sends on one
// direction and receives on the other.

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/cli.hpp"

namespace shmbus::bench {

/// CLOCK_MONOTONIC in nanoseconds: the clock every benchmark process
/// stamps with (comparable across processes).
inline std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

/// fork(), the child killed when the benchmark process dies (a run cut
/// short leaves no side behind, spinning or holding shared memory).
inline pid_t fork_side() { return cli::fork_child(SIGKILL); }

/// The value below which a fraction `q` of `v` lies (sorts `v`).
inline double percentile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

/// Nanoseconds for a table: "812 ns", "12.3 us".
inline std::string format_ns(double ns) {
  return ns >= 10'000 ? fmt::format("{:.1f} us", ns / 1000) : fmt::format("{:.0f} ns", ns);
}

/// A spin-wait's pause (x86-64 PAUSE, aarch64 YIELD, else nothing).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// Waits for a run's processes until `deadline` (CLOCK_MONOTONIC ns), or
/// until `abort` (when given) turns non-zero: then kills them all. Whether
/// every one exited with 0. `abort` is a flag only (no data is published
/// through it), so its load needs no ordering partner.
inline bool wait_sides(const std::vector<pid_t>& sides, std::int64_t deadline,
                       const std::atomic<std::uint32_t>* abort = nullptr) {
  bool ok = true;
  for (const pid_t c : sides) {
    int status = 0;
    while (::waitpid(c, &status, WNOHANG) == 0) {
      if (now_ns() > deadline || (abort != nullptr && abort->load(std::memory_order_relaxed) != 0)) {
        for (const pid_t k : sides) ::kill(k, SIGKILL);
        ::waitpid(c, &status, 0);
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (const pid_t c : sides) ::waitpid(c, nullptr, WNOHANG);
  return ok;
}

/// The median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum class Mode { kPoll, kBlock };
enum class Side { kLeader, kFollower };

inline const char* to_string(Mode m) { return m == Mode::kPoll ? "poll" : "block"; }

/// One side of a connection. send() copies `size` bytes in; receive()
/// returns the first 8 bytes of the next message (a sequence number),
/// busy-polling or sleeping in the transport's blocking wait by mode.
class Link {
 public:
  virtual ~Link() = default;
  virtual void send(const std::byte* data, std::size_t size) = 0;
  virtual std::uint64_t receive(Mode mode) = 0;
  /// Messages this side received but the transport reports lost (must be 0).
  virtual std::uint64_t lost() const { return 0; }
  /// For transports that overwrite (shmbus): the leader must not run more
  /// than this many messages ahead in the throughput test; 0 = the
  /// transport is lossless by itself (blocking or waiting queues).
  virtual std::uint64_t flow_window() const { return 0; }
};

/// Per-run state created before the fork (shared memory, queues, sockets)
/// and the factory for each side's Link after it.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  virtual bool supports(Mode mode) const = 0;
  virtual bool has_throughput() const { return true; }
  /// A row of messages built and read in place (loans of any of
  /// kInPlaceSizes): neither side copies the payload. Latency only.
  virtual bool in_place() const { return false; }
  /// Called in the parent before forking the two sides.
  virtual void prepare(std::size_t max_size) = 0;
  /// Called in each child after the fork; may wait until the other side is
  /// connected.
  virtual std::unique_ptr<Link> connect(Side side, std::size_t max_size) = 0;
  /// Called in the parent after both sides exited.
  virtual void cleanup() {}
};

/// shmbus as it ships ("shmbus"); with its publishers' notify hook off
/// ("shmbus_nohook": no time-list stamp; the hook's cost, side by side); on
/// overflow = "block" channels ("shmbus_block": publishers wait for the
/// subscriber, so the throughput test runs without a flow window); or with
/// messages that cite nothing ("shmbus_source": each side takes inside an
/// InputScope of its own, so its publish cites no input, as a driver's or a
/// timer's output; such a message of at most 24 bytes travels in the slot
/// header's line). As shipped, a pong cites the ping it answers.
enum class ShmbusVariant { kAsShipped, kNoHook, kBlock, kSource };
std::unique_ptr<Transport> make_shmbus(ShmbusVariant variant = ShmbusVariant::kAsShipped);
/// shmbus through the Node API (callbacks dispatched by an executor).
std::unique_ptr<Transport> make_node();
/// The sizes of the in-place rows: point clouds of 64 KiB to 16 MiB.
inline constexpr std::uint32_t kInPlaceSizes[] = {64U << 10, 1U << 20, 4U << 20, 16U << 20};
/// A PointCloud2-shaped message (ROS 2's fields, generated C++) built in a
/// loan and read in place by a Node ("node_cloud"; iceoryx_loan is its peer).
std::unique_ptr<Transport> make_node_cloud();
/// The payload as a typed message through the Node API ("node_typed") or
/// shmbus::rclcpp ("rclcpp"); a point cloud through shmbus::rclcpp
/// ("rclcpp_cloud", node_cloud's pair).
std::unique_ptr<Transport> make_node_typed(bool rclcpp);
std::unique_ptr<Transport> make_rclcpp_cloud();
/// A request/response round trip: shmbus's ServiceClient and ServiceServer
/// ("service"), iceoryx 2.0's untyped client and server ("iceoryx_service").
/// Latency only.
std::unique_ptr<Transport> make_service();
/// What runs on RouDi (started by the transport, its pools in
/// `roudi_config_dir`): raw iceoryx publish/subscribe ("iceoryx"), its
/// request/response ("iceoryx_service"), or the shmbus API over a channel
/// with transport = "iceoryx" ("shmbus_iceoryx": the cost of shmbus's layer
/// over raw iceoryx). nullptr when iceoryx was not built in.
/// kLoan ("iceoryx_loan"): a loan whose sequence and last byte only are
/// written and read in place, node_cloud's peer.
enum class IceoryxKind { kRaw, kService, kShmbus, kLoan };
std::unique_ptr<Transport> make_iceoryx(const std::string& roudi_config_dir, IceoryxKind kind);
/// Why the iceoryx rows cannot run here (a RouDi that is not the
/// benchmark's already runs), or empty.
std::string iceoryx_refusal();

/// One of RouDi's mempools: chunks of `size` bytes (header included).
struct RoudiPool {
  std::uint32_t size;
  std::uint32_t count;
};
/// The chunk size a raw iceoryx payload of `payload` bytes needs.
constexpr std::uint32_t raw_chunk_size(std::uint32_t payload) { return payload + 64; }
/// The pools of `shmbus-bench peers`' iceoryx rows.
std::vector<RoudiPool> peer_pools();

/// The benchmark's own RouDi (iceoryx 2.0 allows one per machine) with
/// `pools`, stopped when destroyed. Throws when one already runs
/// (iceoryx_refusal) or iox-roudi does not start.
class BenchRoudi {
 public:
  BenchRoudi(const std::string& dir, std::vector<RoudiPool> pools);
  ~BenchRoudi();
  BenchRoudi(const BenchRoudi&) = delete;
  BenchRoudi& operator=(const BenchRoudi&) = delete;
  /// The running RouDi of this process, started by the first caller (with
  /// its pools), shared by the rows until the last one lets go.
  static std::shared_ptr<BenchRoudi> shared(const std::string& dir, const std::vector<RoudiPool>& pools);

 private:
  int pid_ = 0;
};

/// This process's iceoryx runtime, logging warnings only (its debug lines
/// on stdout are not results), named as shmbus names its runtimes.
void init_iceoryx_runtime(const std::string& name);
std::unique_ptr<Transport> make_boost_mq();
std::unique_ptr<Transport> make_uds();
std::unique_ptr<Transport> make_floor();
std::unique_ptr<Transport> make_spsc();

}  // namespace shmbus::bench
