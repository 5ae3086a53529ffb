// shmtool record: the bus to MCAP, through shmbus::record::Recorder
// (shmbus/record/recorder.hpp); this maps the options, owns SIGUSR1 and
// prints.
//
// --split-size/--split-duration start a new file at a chunk boundary;
// --snapshot keeps the last DUR in memory instead and writes it when
// triggered (SIGUSR1, a message on /shmbus/record/trigger, or shmbusd
// raising an alert on a recorded channel).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <map>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/error.hpp"
#include "shmbus/record/recorder.hpp"

namespace shmbus::tool {

namespace {

/// The recorder SIGUSR1 triggers (snapshot mode).
std::atomic<record::Recorder*> g_snapshot_recorder{nullptr};

extern "C" void on_sigusr1(int /*signal*/) {
  if (record::Recorder* r = g_snapshot_recorder.load()) r->trigger_snapshot();
}

record::RecorderOptions recorder_options(const RecordOptions& o) {
  record::RecorderOptions r = o.recorder;
  r.library = "shmtool record";
  r.node = "shmtool-record";
  if (r.output.empty()) throw Error(Errc::kInvalidArgument, "record: give the file to write with -o FILE.mcap");
  if (r.patterns.empty() && !r.all) {
    throw Error(Errc::kInvalidArgument, "record: no channel to record; name channels or globs, or give --all");
  }
  const auto compression = mcap::parse_compression(o.compression);
  if (!compression) {
    throw Error(Errc::kInvalidArgument, "record: unknown --compression '" + o.compression + "'; use zstd, lz4 or none");
  }
  r.compression = *compression;
  r.direct_trigger_reason = "SIGUSR1";
  r.on_snapshot = [](const record::SnapshotWritten& s) {
    print(fmt::format("snapshot {}: {} messages, the {:.1f} s before the trigger ({})\n", s.path, s.messages, s.seconds,
                      s.reason));
  };
  return r;
}

/// The live status line of a recording on a terminal (stderr, redrawn at
/// most 10 times a second): messages, bytes, lost and the rate over the
/// last second; Enter on the terminal prints each channel's count, losses
/// and rate since the last such table.
class RecordStatus {
 public:
  RecordStatus(const record::Recorder& r, bool on) : r_(r), on_(on), keys_(on && ::isatty(STDIN_FILENO) == 1) {}
  ~RecordStatus() { clear(); }
  RecordStatus(const RecordStatus&) = delete;
  RecordStatus& operator=(const RecordStatus&) = delete;

  /// From run()'s stop predicate (at least every 20 ms).
  void tick() {
    const std::int64_t now = mono_now_ns();
    if (!on_ || now < next_) return;
    next_ = now + 100'000'000;
    const record::RecordSummary s = r_.status();
    if (keys_ && enter_pressed()) table(s, now);
    if (now - window_start_ >= 1'000'000'000) {
      rate_ = window_start_ == 0 ? 0.0
                                 : static_cast<double>(s.messages() - window_messages_) * 1e9 /
                                       static_cast<double>(now - window_start_);
      window_start_ = now;
      window_messages_ = s.messages();
    }
    std::fprintf(stderr, "\r\033[Krecording: %llu messages, %s, %llu lost, %s msg/s%s",
                 static_cast<unsigned long long>(s.messages()), human_bytes(s.bytes).c_str(),
                 static_cast<unsigned long long>(s.lost()), human_count(static_cast<std::uint64_t>(rate_)).c_str(),
                 keys_ ? "  (Enter: per channel)" : "");
    std::fflush(stderr);
    drawn_ = true;
  }
  void clear() {
    if (drawn_) std::fputs("\r\033[K", stderr);
    drawn_ = false;
  }

 private:
  static bool enter_pressed() {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char buf[256];
    return ::read(STDIN_FILENO, buf, sizeof buf) > 0;
  }
  void table(const record::RecordSummary& s, std::int64_t now) {
    clear();
    Table t({"CHANNEL", "MESSAGES>", "LOST>", "RATE>"});
    const double dt = static_cast<double>(now - (table_at_ != 0 ? table_at_ : start_)) / 1e9;
    for (const auto& c : s.channels) {
      const std::uint64_t before = last_[c.name];
      t.add({c.name, std::to_string(c.written), std::to_string(c.lost()),
             human_rate(dt > 0 ? static_cast<double>(c.written - before) / dt : 0.0)});
      last_[c.name] = c.written;
    }
    table_at_ = now;
    std::fputs(t.render().c_str(), stderr);
  }

  const record::Recorder& r_;
  bool on_;
  bool keys_;
  bool drawn_ = false;
  std::int64_t start_ = mono_now_ns();
  std::int64_t next_ = 0;
  std::int64_t window_start_ = 0;
  std::uint64_t window_messages_ = 0;
  double rate_ = 0;
  std::int64_t table_at_ = 0;
  std::map<std::string, std::uint64_t> last_;
};

void print_summary(const record::RecordSummary& s) {
  for (const auto& c : s.channels) {
    print(fmt::format("  {}: {} messages, {} lost ({} on the ring, {} with the queue full)\n", c.name, c.written,
                      c.lost(), c.lost_on_ring, c.queue_dropped));
  }
  const std::string into = s.files.size() == 1 ? s.files[0]
                           : s.files.empty()
                               ? std::string("no file (no trigger came)")
                               : fmt::format("{} files ({} ... {})", s.files.size(), s.files.front(), s.files.back());
  print(fmt::format("recorded {} messages on {} channels into {} ({}), {} lost\n", s.messages(), s.channels.size(),
                    into, human_bytes(s.bytes), s.lost()));
}

}  // namespace

int run_record(const Globals& g, const RecordOptions& o) {
  const Config config = load_config(g);
  install_stop_handlers();
  if (o.trigger) {
    // One trigger to the recorders in snapshot mode; none listening is not
    // found (exit 3), never a silent no-op.
    const std::size_t n =
        record::trigger_snapshots(config, o.reason.empty() ? std::string_view("shmtool record --trigger") : o.reason);
    print(fmt::format("triggered {} recorder(s)\n", n));
    return 0;
  }
  record::Recorder recorder(config, recorder_options(o));
  const record::RecorderOptions& r = o.recorder;
  const std::string what = r.all ? std::string("every channel") : fmt::format("{}", fmt::join(r.patterns, " "));
  if (r.snapshot_s > 0) {
    g_snapshot_recorder = &recorder;
    struct sigaction sa {};
    sa.sa_handler = on_sigusr1;
    ::sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGUSR1, &sa, nullptr);
    print(
        fmt::format("recording {} in memory, keeping the last {:g} s; SIGUSR1 (kill -USR1 {}), shmtool record "
                    "--trigger or a shmbusd alert on a recorded channel writes it to {}; Ctrl-C stops\n",
                    what, r.snapshot_s, ::getpid(), recorder.first_file()));
  } else {
    print(fmt::format("recording {} into {} ({} compression); Ctrl-C stops\n", what, recorder.first_file(),
                      o.compression));
  }
  // The status line in the normal mode only: a snapshot recorder writes
  // nothing until triggered, and says so on its own line.
  RecordStatus status(recorder, !o.quiet && r.snapshot_s <= 0 && ::isatty(STDERR_FILENO) == 1);
  const record::RecordSummary summary = recorder.run([&status] {
    status.tick();
    return stop_requested();
  });
  status.clear();
  g_snapshot_recorder = nullptr;
  print_summary(summary);
  return 0;
}

}  // namespace shmbus::tool
