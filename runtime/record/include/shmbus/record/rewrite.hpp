#pragma once
/// @file rewrite.hpp
/// New recordings from recorded ones, streamed: `shmtool bag filter`,
/// `merge`, `compress` and `decompress`. Messages are read chunk by chunk
/// and written in log-time order, so memory is bounded by the chunk sizes,
/// not the files'. The recording's facts go along: every metadata record,
/// the provenance channel, and the module topology, merged where several
/// recordings become one (registry indexes renumbered where two recordings
/// gave one index to different channels, and the provenance records
/// rewritten to match), so `bag graph` and step replay read the result.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/mcap.hpp"

namespace shmbus::record {

/// How far a rewrite is: for a progress line.
struct RewriteProgress {
  std::uint64_t messages = 0;        ///< read so far (written or filtered out)
  std::uint64_t total_messages = 0;  ///< in the inputs
  std::uint64_t bytes_written = 0;   ///< to the output so far
};

struct RewriteOptions {
  std::vector<std::string> channels;                                 ///< fnmatch(3) globs to keep; empty: every channel
  std::vector<std::string> exclude;                                  ///< globs to drop (after `channels`)
  std::uint64_t begin_ns = 0;                                        ///< keep log times >= begin_ns
  std::uint64_t end_ns = std::numeric_limits<std::uint64_t>::max();  ///< and < end_ns
  /// The output's chunk compression; default: the first input's (zstd when
  /// its chunks differ).
  std::optional<mcap::Compression> compression;
  std::uint64_t chunk_size = std::uint64_t{1} << 20;  ///< uncompressed bytes per chunk
  std::string library = "shmbus record rewrite";      ///< the header's library field
  /// Called every 4096 messages and at the end.
  std::function<void(const RewriteProgress&)> progress;
};

struct RewriteReport {
  std::uint64_t messages = 0;    ///< written
  std::uint64_t channels = 0;    ///< written
  std::uint64_t bytes = 0;       ///< of the output
  std::uint64_t renumbered = 0;  ///< channels given another registry index
};

/// Writes `output` from `inputs` (one file, or several merged). Throws
/// Error(kInvalidArgument) when there is no input or the output is one of
/// the inputs, and what
/// mcap::Reader and mcap::Writer throw for unreadable inputs and an
/// unwritable output; Error(kLayoutMismatch) for topology metadata that
/// does not parse.
RewriteReport rewrite(const std::vector<std::string>& inputs, const std::string& output, const RewriteOptions& o);

}  // namespace shmbus::record
