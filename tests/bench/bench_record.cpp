// shmbus-bench-record: what the recorder and the player cost, against the
// limits of the machine measured in the same run.
//   - 64 B messages: the highest paced rate the real `shmtool record`
//     (compression none, into tmpfs) keeps up with, with zero loss;
//   - 1 MiB messages: the same, as a fraction of the bandwidth plain
//     write(2) reaches into the same directory, from a buffer in memory and
//     from shared memory that another process has just written each block
//     into (what any recorder that is not the publisher's process reads: its
//     floor on this machine);
//   - chunk compression (none, lz4, zstd) of sensor-like streams (IMU,
//     camera): ratio and speed of mcap::Writer;
//   - replay timing: how far each message `shmtool play` publishes is from
//     its recorded spacing, at 1 kHz.
//   shmbus-bench-record [--dir DIR] [--smoke] [--json]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Imu.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using Json = nlohmann::json;

namespace {

const std::string kTool = SHMTOOL_PATH;

struct Options {
  std::string dir = "/dev/shm";
  bool smoke = false;
  bool json = false;
  double seconds = 1.0;           ///< per paced rate
  std::string only;               ///< one part: small, large, compression, replay
  std::vector<double> fractions;  ///< 1 MiB rates, as fractions of plain write(2); empty: the default ladder
  [[nodiscard]] bool runs(const char* part) const { return only.empty() || only == part; }
};

/// One paced recording run.
struct RecordRun {
  double rate = 0;  ///< messages per second asked for
  std::uint64_t published = 0;
  std::uint64_t recorded = 0;
  std::uint64_t lost = 0;
  std::uint64_t ring_lost = 0;   ///< overwritten before the reader thread took them
  std::uint64_t queue_lost = 0;  ///< dropped with the writer thread's queue full
  double seconds = 0;            ///< of publishing
  std::uint64_t file_bytes = 0;
};

/// The number after `prefix` in `text`, or 0.
std::uint64_t number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + prefix.size()));
}

void wait_for_subscriber(const std::string& domain, const std::string& channel) {
  for (int i = 0; i < 2000; ++i) {
    if (!introspect::ChannelReader(domain, channel).view().subscribers.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  throw std::runtime_error("the recorder did not subscribe to " + channel);
}

/// Publishes `size`-byte messages at `rate` per second for `seconds` (in
/// batches every millisecond, absolute deadlines) while `shmtool record`
/// records them into `dir`; the recorder's own summary says what it wrote
/// and lost.
RecordRun record_at(const Options& o, std::size_t size, double rate, double seconds, std::uint32_t capacity) {
  Config c;
  c.domain = test::unique_domain("brec");
  c.node = "bench_record";
  c.defaults.capacity = capacity;
  c.defaults.max_message_size = static_cast<std::uint32_t>(size);
  // Two vCPUs run the publisher and the recorder's two threads: a publisher
  // preempted between claiming a slot and committing it for longer than the
  // default 2 ms would be skipped as crashed (counted lost) - a scheduling
  // effect, not the recorder's throughput, so the bound is wider here.
  c.defaults.stall_timeout = std::chrono::milliseconds(100);
  const std::string file = o.dir + "/shmbus_bench_record_" + std::to_string(::getpid()) + ".mcap";
  RecordRun run;
  run.rate = rate;
  {
    Context ctx(c);
    Publisher pub("/bench/rec", TypeInfo::bytes(), ctx);
    test::ChildProcess recorder(
        {kTool, "record", "-o", file, "/bench/rec", "--compression", "none", "--domain", c.domain}, true);
    if (!recorder.wait_for_output("recording", std::chrono::seconds(20))) {
      throw std::runtime_error("shmtool record did not start: " + recorder.output());
    }
    wait_for_subscriber(c.domain, "/bench/rec");
    std::vector<std::byte> payload(size, std::byte{0x5a});
    const std::int64_t start = mono_now_ns();
    const auto total = static_cast<std::uint64_t>(rate * seconds);
    for (std::int64_t tick = 1; run.published < total; ++tick) {
      const auto due =
          std::min<std::uint64_t>(total, static_cast<std::uint64_t>(rate * 1e-3 * static_cast<double>(tick)));
      for (; run.published < due; ++run.published) {
        std::memcpy(payload.data(), &run.published, sizeof run.published);
        static_cast<void>(pub.publish(payload));
      }
      const std::int64_t next = start + tick * 1'000'000;
      const timespec ts{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
      ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
    run.seconds = static_cast<double>(mono_now_ns() - start) / 1e9;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    recorder.signal(SIGINT);
    recorder.wait(std::chrono::seconds(60));
    const std::string out = recorder.output();
    run.recorded = number_after(out, "recorded ");
    const auto lost_at = out.find(" lost\n", out.find("recorded "));
    const auto comma = out.rfind(", ", lost_at);
    run.lost = lost_at == std::string::npos ? 0 : std::stoull(out.substr(comma + 2));
    run.ring_lost = number_after(out, "lost (");
    run.queue_lost = number_after(out, " on the ring, ");
    run.file_bytes = std::filesystem::exists(file) ? std::filesystem::file_size(file) : 0;
  }
  introspect::clean_domain(c.domain, false);
  std::filesystem::remove(file);
  return run;
}

/// Where plain write(2) takes its 1 MiB blocks from.
enum class Source {
  kCached,  ///< the same block every time (in the cache)
  kMemory,  ///< blocks from a 256 MiB buffer in turn, as data that arrives from elsewhere in memory
  kFresh,   ///< shared memory, each block just written (memcpy) by another process, as a publisher's message is
};

/// Bytes per second plain write(2) of 1 MiB blocks reaches in `dir`
/// (fsync included), over `total` bytes, from `source`.
double plain_write_bandwidth(const Options& o, std::uint64_t total, Source from) {
  const std::string file = o.dir + "/shmbus_bench_plain_" + std::to_string(::getpid());
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  constexpr std::size_t kBlocks = 256;
  const std::size_t source_bytes = from == Source::kCached ? kBlock : kBlocks * kBlock;
  // Shared (kFresh: with the producer process), with two counters after the
  // blocks: produced (the producer's release store after its memcpy pairs
  // with the writer's acquire load before its write) and written (the
  // writer's release store after its write pairs with the producer's
  // acquire load before it reuses the block).
  const std::size_t mapped = source_bytes + 64;
  void* map = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map == MAP_FAILED) throw std::runtime_error("cannot map the write(2) source");
  char* source = static_cast<char*>(map);
  std::memset(source, 'x', source_bytes);
  auto* counters = new (source + source_bytes) std::atomic<std::uint64_t>[2] {};
  const std::uint64_t blocks = total / kBlock;
  pid_t producer = -1;
  if (from == Source::kFresh) {
    producer = ::fork();
    if (producer == 0) {  // fills block i (at most 4 ahead of the writer), as a publisher does
      std::vector<char> message(kBlock, 'y');
      for (std::uint64_t i = 0; i < blocks; ++i) {
        while (i >= counters[1].load(std::memory_order_acquire) + 4) std::this_thread::yield();
        std::memcpy(source + (i % kBlocks) * kBlock, message.data(), kBlock);
        counters[0].store(i + 1, std::memory_order_release);
      }
      ::_exit(0);
    }
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + file);
  const std::int64_t t0 = mono_now_ns();
  for (std::uint64_t i = 0; i < blocks; ++i) {
    if (from == Source::kFresh) {
      while (counters[0].load(std::memory_order_acquire) <= i) std::this_thread::yield();
    }
    const char* block = source + (i * kBlock) % source_bytes;
    if (::write(fd, block, kBlock) != static_cast<ssize_t>(kBlock)) throw std::runtime_error("cannot write " + file);
    counters[1].store(i + 1, std::memory_order_release);
  }
  ::fsync(fd);
  const double s = static_cast<double>(mono_now_ns() - t0) / 1e9;
  ::close(fd);
  if (producer > 0) ::waitpid(producer, nullptr, 0);
  ::munmap(map, mapped);
  std::filesystem::remove(file);
  return static_cast<double>(blocks * kBlock) / s;
}

/// Sensor-like streams for the compression rows.
struct Stream {
  std::string name;
  std::uint64_t period_ns = 0;
  std::vector<std::vector<std::byte>> messages;
};

/// shmbus_msgs/Imu at 1 kHz: a slowly turning body with noisy rates and
/// fixed covariances, as a driver publishes it.
Stream imu_stream(int n) {
  Stream s{"imu (shmbus_msgs/Imu, 1 kHz)", 1'000'000, {}};
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  for (int i = 0; i < n; ++i) {
    shmbus_msgs::Imu m{};
    m.header.stamp_ns = 1'800'000'000'000'000'000ULL + static_cast<std::uint64_t>(i) * 1'000'000ULL;
    m.header.seq = static_cast<std::uint32_t>(i);
    m.header.frame_id.assign("imu_link");
    const double yaw = 0.001 * i;
    m.orientation = {0, 0, std::sin(yaw / 2), std::cos(yaw / 2)};
    m.angular_velocity = {noise(rng), noise(rng), 1.0 + noise(rng)};
    m.linear_acceleration = {noise(rng), noise(rng), 9.81 + noise(rng)};
    for (std::size_t k = 0; k < 9; k += 4) {
      m.orientation_covariance[k] = 1e-4;
      m.angular_velocity_covariance[k] = 1e-5;
      m.linear_acceleration_covariance[k] = 1e-3;
    }
    const auto* p = reinterpret_cast<const std::byte*>(&m);
    s.messages.emplace_back(p, p + sizeof m);
  }
  return s;
}

/// 640x480 mono8 images at 30 Hz of a smooth scene drifting across the
/// frame, with a little sensor noise.
Stream image_stream(int n) {
  constexpr int kWidth = 640;
  constexpr int kHeight = 480;
  Stream s{"image (640x480 mono8, 30 Hz)", 33'333'333, {}};
  std::mt19937 rng(42);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (int f = 0; f < n; ++f) {
    std::vector<std::byte> img(static_cast<std::size_t>(kWidth) * kHeight);
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const double v = 128 + 60 * std::sin((x + 3 * f) / 40.0) * std::cos(y / 30.0) + noise(rng);
        img[static_cast<std::size_t>(y) * kWidth + x] = static_cast<std::byte>(std::clamp(v, 0.0, 255.0));
      }
    }
    s.messages.push_back(std::move(img));
  }
  return s;
}

/// mcap::Writer with one compression on one stream: ratio and speed.
struct CompressionRun {
  std::string stream;
  std::string compression;
  double ratio = 0;      ///< input bytes / file bytes
  double input_mbs = 0;  ///< MB/s of messages written (compression included)
};

CompressionRun compress(const Options& o, mcap::Compression compression, const Stream& stream) {
  const std::string file = o.dir + "/shmbus_bench_compress_" + std::to_string(::getpid()) + ".mcap";
  mcap::WriterOptions w;
  w.compression = compression;
  const std::int64_t t0 = mono_now_ns();
  std::uint64_t bytes = 0;
  {
    mcap::Writer writer(file, w);
    const std::uint16_t ch = writer.add_channel(0, "/sensor", "shmbus", {});
    std::uint64_t t = 1;
    std::uint32_t seq = 0;
    for (const auto& m : stream.messages) {
      writer.write({ch, seq++, t, t, m});
      t += stream.period_ns;
      bytes += m.size();
    }
    writer.close();
  }
  const double s = static_cast<double>(mono_now_ns() - t0) / 1e9;
  CompressionRun r;
  r.stream = stream.name;
  r.compression = compression == mcap::Compression::kNone ? "none" : std::string(mcap::compression_name(compression));
  r.ratio = static_cast<double>(bytes) / static_cast<double>(std::filesystem::file_size(file));
  r.input_mbs = static_cast<double>(bytes) / s / 1e6;
  std::filesystem::remove(file);
  return r;
}

/// Replay timing: a recording of `n` 64 B messages exactly 1 ms apart is
/// played by `shmtool play`; each message's publish time (the player's
/// stamp) is compared with its recorded offset. Errors in microseconds.
struct ReplayRun {
  std::uint64_t messages = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
};

ReplayRun replay_timing(const Options& o, std::uint64_t n) {
  const std::string file = o.dir + "/shmbus_bench_replay_" + std::to_string(::getpid()) + ".mcap";
  const std::uint64_t t0 = static_cast<std::uint64_t>(wall_now_ns());
  {
    mcap::Writer writer(file, {});
    const TypeInfo bytes = TypeInfo::bytes();
    const std::uint16_t ch = writer.add_channel(
        0, "/bench/replay", "shmbus", {{"type_name", bytes.name}, {"type_hash", fmt::format("{:016x}", bytes.hash)}});
    std::vector<std::byte> payload(64, std::byte{1});
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t t = t0 + i * 1'000'000;
      writer.write({ch, static_cast<std::uint32_t>(i), t, t, payload});
    }
    writer.close();
  }
  Config c;
  c.domain = test::unique_domain("brep");
  c.node = "bench_replay";
  c.defaults.capacity = 4096;
  c.defaults.max_message_size = 64;
  std::vector<std::int64_t> stamps;
  {
    Context ctx(c);
    Subscriber sub("/bench/replay", TypeInfo::bytes(), ctx);
    test::ChildProcess player({kTool, "play", file, "--wait-for-subscribers", "--domain", c.domain}, true);
    std::vector<std::byte> buffer(64);
    const std::int64_t limit = mono_now_ns() + static_cast<std::int64_t>(n) * 1'000'000 + 20'000'000'000;
    while (stamps.size() < n && mono_now_ns() < limit) {
      sub.wait(std::chrono::milliseconds(100));
      for (TakeResult r = sub.take(buffer); r.ok(); r = sub.take(buffer)) stamps.push_back(r.info.publish_time_ns);
    }
    player.wait(std::chrono::seconds(20));
  }
  introspect::clean_domain(c.domain, false);
  std::filesystem::remove(file);
  std::vector<double> errors;
  for (std::size_t i = 0; i < stamps.size(); ++i) {
    const auto expected = static_cast<std::int64_t>(i) * 1'000'000;
    errors.push_back(std::abs(static_cast<double>(stamps[i] - stamps[0] - expected)) / 1e3);
  }
  ReplayRun r;
  r.messages = stamps.size();
  if (errors.empty()) return r;
  std::sort(errors.begin(), errors.end());
  const auto pct = [&](double p) {
    return errors[std::min(errors.size() - 1, static_cast<std::size_t>(p * static_cast<double>(errors.size())))];
  };
  r.p50_us = pct(0.50);
  r.p99_us = pct(0.99);
  r.max_us = errors.back();
  return r;
}

/// The highest rate of `runs` with nothing lost (0 when none).
double zero_loss_rate(const std::vector<RecordRun>& runs) {
  double best = 0;
  for (const auto& r : runs) {
    if (r.lost == 0 && r.recorded == r.published) best = std::max(best, r.rate);
  }
  return best;
}

Json runs_json(const std::vector<RecordRun>& runs) {
  Json out = Json::array();
  for (const auto& r : runs) {
    out.push_back({{"rate", r.rate},
                   {"published", r.published},
                   {"recorded", r.recorded},
                   {"lost", r.lost},
                   {"ring_lost", r.ring_lost},
                   {"queue_lost", r.queue_lost},
                   {"seconds", r.seconds},
                   {"file_bytes", r.file_bytes}});
  }
  return out;
}

void print_runs(const std::vector<RecordRun>& runs, std::size_t size) {
  fmt::print("  {:>12} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10}\n", "rate/s", "published", "recorded", "lost", "(ring",
             "queue)", "MB/s");
  for (const auto& r : runs) {
    fmt::print("  {:>12.0f} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10.1f}\n", r.rate, r.published, r.recorded, r.lost,
               r.ring_lost, r.queue_lost,
               static_cast<double>(r.recorded) * static_cast<double>(size) / r.seconds / 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return cli::guarded("shmbus-bench-record", [&] {
    Options o;
    CLI::App app{"recorder throughput, compression and replay timing", "shmbus-bench-record"};
    app.add_option("--dir", o.dir, "where the recordings go (default /dev/shm, a tmpfs)");
    app.add_flag("--smoke", o.smoke, "tiny runs: does it work? (CI)");
    app.add_flag("--json", o.json, "print one JSON object");
    app.add_option("--only", o.only, "run one part: small, large, compression or replay")
        ->check(CLI::IsMember({"small", "large", "compression", "replay"}));
    app.add_option("--seconds", o.seconds, "seconds per paced rate (default 1)")->check(CLI::Range(0.1, 600.0));
    app.add_option("--fraction", o.fractions, "1 MiB runs at these fractions of plain write(2) (default 0.1 ... 0.8)")
        ->check(CLI::Range(0.001, 2.0));
    if (const auto code = cli::parse(app, argc, argv)) return *code;

    const double seconds = o.smoke ? 0.2 : o.seconds;
    const std::vector<double> small_rates =
        o.smoke ? std::vector<double>{20'000} : std::vector<double>{250'000, 500'000, 1'000'000, 1'500'000, 2'000'000};
    std::vector<RecordRun> small;
    if (o.runs("small")) {
      for (const double rate : small_rates) small.push_back(record_at(o, 64, rate, seconds, 65536));
    }

    const std::uint64_t plain_bytes = o.smoke ? (64ULL << 20) : (2ULL << 30);
    const double plain_hot = o.runs("large") ? plain_write_bandwidth(o, plain_bytes, Source::kCached) : 0.0;
    const double plain = o.runs("large") ? plain_write_bandwidth(o, plain_bytes, Source::kMemory) : 0.0;
    const double plain_fresh = o.runs("large") ? plain_write_bandwidth(o, plain_bytes, Source::kFresh) : 0.0;
    const std::vector<double> fractions = !o.fractions.empty() ? o.fractions
                                          : o.smoke            ? std::vector<double>{0.02}
                                                    : std::vector<double>{0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.6, 0.8};
    std::vector<RecordRun> large;
    if (o.runs("large")) {
      for (const double f : fractions) large.push_back(record_at(o, 1 << 20, f * plain / (1 << 20), seconds, 256));
    }
    const double large_best = zero_loss_rate(large) * (1 << 20);
    double large_peak = 0;  // the most any run recorded per second, losses or not
    for (const auto& r : large) {
      large_peak = std::max(large_peak, static_cast<double>(r.recorded) * (1 << 20) / r.seconds);
    }

    std::vector<CompressionRun> compression;
    for (const Stream& stream : o.runs("compression") ? std::vector<Stream>{imu_stream(o.smoke ? 1000 : 60'000),
                                                                            image_stream(o.smoke ? 10 : 300)}
                                                      : std::vector<Stream>{}) {
      for (const auto c : {mcap::Compression::kNone, mcap::Compression::kLz4, mcap::Compression::kZstd}) {
        compression.push_back(compress(o, c, stream));
      }
    }
    const ReplayRun replay = o.runs("replay") ? replay_timing(o, o.smoke ? 300 : 5000) : ReplayRun{};

    if (o.json) {
      Json comp = Json::array();
      for (const auto& c : compression) {
        comp.push_back(
            {{"stream", c.stream}, {"compression", c.compression}, {"ratio", c.ratio}, {"input_mb_s", c.input_mbs}});
      }
      const Json j{{"dir", o.dir},
                   {"small_64B", runs_json(small)},
                   {"small_zero_loss_rate", zero_loss_rate(small)},
                   {"plain_write_bytes_per_s", plain},
                   {"plain_write_hot_bytes_per_s", plain_hot},
                   {"plain_write_fresh_bytes_per_s", plain_fresh},
                   {"large_peak_bytes_per_s", large_peak},
                   {"large_1MiB", runs_json(large)},
                   {"large_zero_loss_bytes_per_s", large_best},
                   {"large_vs_plain_write", plain > 0 ? large_best / plain : 0.0},
                   {"large_vs_fresh_write", plain_fresh > 0 ? large_best / plain_fresh : 0.0},
                   {"compression", comp},
                   {"replay",
                    {{"messages", replay.messages},
                     {"p50_us", replay.p50_us},
                     {"p99_us", replay.p99_us},
                     {"max_us", replay.max_us}}}};
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("shmtool record into {} (compression none), paced publisher, {:.1f} s per rate\n", o.dir, seconds);
    fmt::print("64 B messages:\n");
    print_runs(small, 64);
    fmt::print("  highest rate with zero loss: {:.0f} msg/s\n", zero_loss_rate(small));
    fmt::print(
        "1 MiB messages (plain write(2) of 1 MiB blocks here: {:.0f} MB/s from a 256 MiB buffer, {:.0f} MB/s "
        "of one cached block, {:.0f} MB/s of blocks another process has just written; rates are fractions of the "
        "first):\n",
        plain / 1e6, plain_hot / 1e6, plain_fresh / 1e6);
    print_runs(large, 1 << 20);
    const auto ratios = [&](double v) {
      return fmt::format("{:.0f} MB/s = {:.2f}x plain write(2), {:.2f}x of just-written blocks", v / 1e6,
                         plain > 0 ? v / plain : 0.0, plain_fresh > 0 ? v / plain_fresh : 0.0);
    };
    fmt::print("  highest with zero loss: {}\n", ratios(large_best));
    fmt::print("  most recorded (with losses): {}\n", ratios(large_peak));
    fmt::print("chunk compression (mcap::Writer, 1 MiB chunks, zstd level 1):\n");
    for (const auto& c : compression) {
      fmt::print("  {:<30} {:<5} ratio {:5.2f}x   {:8.1f} MB/s in\n", c.stream, c.compression, c.ratio, c.input_mbs);
    }
    fmt::print("shmtool play at 1 kHz, publish time against the recorded spacing ({} messages):\n", replay.messages);
    fmt::print("  error p50 {:.1f} us   p99 {:.1f} us   max {:.1f} us\n", replay.p50_us, replay.p99_us, replay.max_us);
    return 0;
  });
}
