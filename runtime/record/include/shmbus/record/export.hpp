#pragma once
/// @file export.hpp
/// A recording with its messages in another encoding, for tools that do
/// not read shmbus's slots: JSON (a `jsonschema` per type, what Foxglove
/// and `jq` read) or CDR (profile ros2, `ros2msg` schemas: what rosbag2
/// writes and `ros2 bag` and Foxglove read as ROS 2). import_ros2 is the
/// way back.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shmbus/record/import.hpp"
#include "shmbus/record/rewrite.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::record {

enum class ExportEncoding {
  kJson,  ///< `json` messages, a `jsonschema` per type; raw channels {"data": base64}
  kCdr,   ///< `cdr` messages (XCDR1), a `ros2msg` per type; raw channels `uint8[] data`
};

struct ExportOptions {
  ExportEncoding encoding = ExportEncoding::kJson;
  /// Refuse the whole file at the first channel whose type cannot be read
  /// or message that does not decode (else it is skipped and reported).
  bool strict = false;
  std::string library = "shmbus record export";  ///< the header's library field
  /// Called every 4096 messages and at the end.
  std::function<void(const RewriteProgress&)> progress;
};

using ExportReport = ConversionReport;

/// Writes `output` from the recording `input` (shmbus's, or a ROS 2 one:
/// its `ros2msg`/`cdr` channels are read through the definitions the file
/// carries) with every message in `o.encoding`; metadata, times and
/// sequences as they were. A channel whose type cannot be read, or a
/// message that does not decode, is left out and listed in
/// ConversionReport::left_out; with `strict` the first of them throws
/// Error(kInvalidArgument) naming it. Throws Error(kInvalidArgument) when
/// `output` is `input`, and what mcap::Reader and Writer throw.
ExportReport export_recording(const std::string& input, const std::string& output, const ExportOptions& o);

/// ExportEncoding by name ("json", "cdr"); Error(kInvalidArgument) naming
/// the two otherwise.
ExportEncoding parse_export_encoding(const std::string& name);

}  // namespace shmbus::record
