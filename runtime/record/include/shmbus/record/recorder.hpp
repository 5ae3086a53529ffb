#pragma once
/// @file recorder.hpp
/// The bus to MCAP: a `Recorder` subscribes to the channels its options
/// select (and to those that appear later and match), and writes what they
/// carry, with each message's provenance and the domain's topology, into
/// one file, a split series, or snapshots written on a trigger.
///
/// The recorder is a subscriber on every channel it records (node
/// RecorderOptions::node): it never slows a publisher, and what it loses on the
/// rings is counted per channel. A reader thread drains the rings into a
/// bounded queue; a writer thread compresses and writes, so a slow disk
/// loses messages only when the queue is full, and those are counted too.
/// Both counts are written into each file (metadata "shmbus.lost") and
/// returned by run(). The writer thread hands a chunk to the kernel at
/// least once a second, so a recorder killed with SIGKILL leaves a file
/// that mcap::recover rebuilds with all but the last second.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/mcap.hpp"

namespace shmbus::record {

/// A snapshot written (snapshot mode), as the writer thread reports it.
struct SnapshotWritten {
  std::string path;
  std::size_t messages = 0;
  double seconds = 0;  ///< from the oldest message written to the trigger
  std::string reason;
};

struct RecorderOptions {
  /// FILE.mcap; a split series or snapshots number it (FILE_0.mcap, ...).
  std::string output;
  std::vector<std::string> patterns;  ///< channel names or fnmatch(3) globs
  bool all = false;                   ///< every channel
  std::vector<std::string> exclude;   ///< globs never recorded
  mcap::Compression compression = mcap::Compression::kZstd;
  std::uint64_t chunk_size = std::uint64_t{1} << 20;
  double duration_s = 0;                                 ///< 0: until stopped
  std::uint64_t queue_bytes = std::uint64_t{256} << 20;  ///< between the reader and the writer thread
  std::uint64_t split_bytes = 0;                         ///< a new file once this many bytes are written
  double split_duration_s = 0;                           ///< a new file after this much recorded time
  /// > 0: keep the last this many seconds in memory and write them when
  /// triggered (trigger_snapshot(), a message on kTriggerChannel, or
  /// shmbusd raising an alert on a recorded channel).
  double snapshot_s = 0;
  /// The reason a trigger_snapshot() call is written under.
  std::string direct_trigger_reason = "trigger_snapshot()";
  /// The MCAP header's library and the recording metadata's recorder.
  std::string library = "shmbus record";
  /// The node the recorder's subscriptions register under (left out of the
  /// module topology it records).
  std::string node = "shmbus-record";
  /// Called from the writer thread after each snapshot file is closed.
  std::function<void(const SnapshotWritten&)> on_snapshot;
};

/// What one recorded channel carried.
struct RecordedChannelSummary {
  std::string name;
  std::uint64_t written = 0;
  std::uint64_t lost_on_ring = 0;   ///< overwritten before the recorder read them
  std::uint64_t queue_dropped = 0;  ///< the queue to the writer thread was full
  [[nodiscard]] std::uint64_t lost() const noexcept { return lost_on_ring + queue_dropped; }
};

/// What a recording wrote.
struct RecordSummary {
  std::vector<RecordedChannelSummary> channels;
  std::vector<std::string> files;  ///< in the order written
  std::uint64_t bytes = 0;         ///< of the closed files
  [[nodiscard]] std::uint64_t messages() const noexcept;
  [[nodiscard]] std::uint64_t lost() const noexcept;
};

class Recorder {
 public:
  /// Opens the first file now (not in snapshot mode), so a path that cannot
  /// be written fails before anything is recorded; throws Error
  /// (kInvalidArgument) for options that select nothing.
  Recorder(const Config& config, RecorderOptions options);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// The first file the recording writes (numbered for a split series and
  /// snapshots).
  [[nodiscard]] std::string first_file() const;
  /// Records until options.duration_s has passed, stop() is called, or
  /// `stop_requested` (polled at least every 20 ms) says so; then writes
  /// what the rings still hold and closes the file. A write error (a full
  /// disk) ends the recording and is rethrown.
  RecordSummary run(const std::function<bool()>& stop_requested = {});
  /// Ends run() within 20 ms; from any thread.
  void stop() noexcept;
  /// The counts so far (messages written and lost per channel, bytes
  /// written), from any thread (run()'s stop predicate, for a status line);
  /// `files` is left empty.
  [[nodiscard]] RecordSummary status() const;
  /// Snapshot mode: writes the last options.snapshot_s seconds. Async-
  /// signal-safe (a SIGUSR1 handler may call it).
  void trigger_snapshot() noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Sends one trigger to the recorders in snapshot mode of `config`'s domain
/// and returns how many listen; none is Error kNotFound.
std::size_t trigger_snapshots(const Config& config, std::string_view reason);

}  // namespace shmbus::record
