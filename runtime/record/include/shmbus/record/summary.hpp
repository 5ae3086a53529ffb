#pragma once
/// @file summary.hpp
/// What a recording holds, in the figures `mcap info` gives (library,
/// profile, chunks and their compression, encodings, metadata and
/// attachment counts) plus the recorder's own (losses, rates), summed over
/// the files of a split series.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shmbus::record {

/// The chunks of one compression.
struct ChunkFigures {
  std::uint64_t chunks = 0;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
};

/// One channel of a recording (a topic, across the files).
struct ChannelSummary {
  std::string name;
  std::string type;             ///< the schema's name ("" without one)
  std::string schema_encoding;  ///< "" without a schema
  std::string message_encoding;
  std::uint64_t messages = 0;
  std::uint64_t lost = 0;  ///< while recording (the recorder's count)
};

/// A recording: one file or several (a split series, or files named
/// together), their figures merged.
struct RecordingSummary {
  std::vector<std::string> files;
  std::uint64_t bytes = 0;
  std::vector<std::string> libraries;  ///< distinct, in file order
  std::vector<std::string> profiles;   ///< distinct, in file order
  std::uint64_t start_ns = 0;          ///< of the earliest message
  std::uint64_t end_ns = 0;            ///< of the latest message
  std::uint64_t messages = 0;
  std::uint64_t chunks = 0;
  std::uint64_t attachments = 0;
  std::uint64_t metadata = 0;
  /// By compression: "none", "lz4", "zstd".
  std::map<std::string, ChunkFigures> compression;
  /// In order of first appearance.
  std::vector<ChannelSummary> channels;

  [[nodiscard]] double duration_s() const noexcept {
    return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) / 1e9 : 0.0;
  }
};

/// Reads the summaries of `paths` (each a file, or, with `series`, a split
/// series' first file naming the series: recording_files()), duplicates
/// once.
/// Throws what mcap::Reader throws for a file that is not a readable MCAP
/// file (Error(kConfig) naming it and the byte), Error(kNotFound) for one
/// that does not exist.
RecordingSummary summarize(const std::vector<std::string>& paths, bool series = true);

}  // namespace shmbus::record
