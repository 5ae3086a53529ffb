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
#include <unistd.h>

#include <atomic>
#include <csignal>

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
  if (o.output.empty()) throw Error(Errc::kInvalidArgument, "record: give the file to write with -o FILE.mcap");
  if (o.patterns.empty() && !o.all) {
    throw Error(Errc::kInvalidArgument, "record: no channel to record; name channels or globs, or give --all");
  }
  const auto compression = mcap::parse_compression(o.compression);
  if (!compression) {
    throw Error(Errc::kInvalidArgument, "record: unknown --compression '" + o.compression + "'; use zstd, lz4 or none");
  }
  record::RecorderOptions r;
  r.output = o.output;
  r.patterns = o.patterns;
  r.all = o.all;
  r.exclude = o.exclude;
  r.compression = *compression;
  r.chunk_size = o.chunk_size;
  r.duration_s = o.duration_s;
  r.queue_bytes = o.queue_bytes;
  r.split_bytes = o.split_bytes;
  r.split_duration_s = o.split_duration_s;
  r.snapshot_s = o.snapshot_s;
  r.direct_trigger_reason = "SIGUSR1";
  r.on_snapshot = [](const record::SnapshotWritten& s) {
    print(fmt::format("snapshot {}: {} messages, the {:.1f} s before the trigger ({})\n", s.path, s.messages, s.seconds,
                      s.reason));
  };
  return r;
}

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
  const std::string what = o.all ? std::string("every channel") : fmt::format("{}", fmt::join(o.patterns, " "));
  if (o.snapshot_s > 0) {
    g_snapshot_recorder = &recorder;
    struct sigaction sa {};
    sa.sa_handler = on_sigusr1;
    ::sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGUSR1, &sa, nullptr);
    print(
        fmt::format("recording {} in memory, keeping the last {:g} s; SIGUSR1 (kill -USR1 {}), shmtool record "
                    "--trigger or a shmbusd alert on a recorded channel writes it to {}; Ctrl-C stops\n",
                    what, o.snapshot_s, ::getpid(), recorder.first_file()));
  } else {
    print(fmt::format("recording {} into {} ({} compression); Ctrl-C stops\n", what, recorder.first_file(),
                      o.compression));
  }
  const record::RecordSummary summary = recorder.run([] { return stop_requested(); });
  g_snapshot_recorder = nullptr;
  print_summary(summary);
  return 0;
}

}  // namespace shmbus::tool
