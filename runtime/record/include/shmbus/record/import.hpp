#pragma once
/// @file import.hpp
/// A ROS 2 recording as a shmbus one: what rosbag2 writes to MCAP and
/// `shmtool bag export --encoding cdr` writes (profile ros2, `ros2msg`
/// schemas, `cdr` messages), for the types shmbus can hold.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/mcap.hpp"
#include "shmbus/record/rewrite.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::record {

struct ImportOptions {
  /// Roots of `<package>/<Name>.msg` files searched after the shipped
  /// definitions (and before SHMBUS_MSG_PATH), as shmtool's --msg-path.
  std::vector<std::string> msg_paths;
  /// Called every 4096 messages and at the end.
  std::function<void(const RewriteProgress&)> progress;
  /// Refuse the whole file at the first channel whose type cannot be read
  /// or message that does not decode (else that channel is kept raw).
  bool strict = false;
  std::string library = "shmbus record import";  ///< the header's library field
};

/// A channel imported as it was, undecoded: its bytes, its schema's name
/// and text (a raw shmbus channel, type shmbus/Bytes, that plays its CDR).
struct UndecodedChannel {
  std::string topic;
  std::string type;  ///< its schema's name
  std::uint64_t messages = 0;
  std::string why;  ///< the first reason
};

/// What a conversion (import_ros2, export_recording) wrote, and what it
/// could not convert.
struct ConversionReport {
  std::uint64_t messages = 0;  ///< written
  std::uint64_t channels = 0;  ///< written
  std::uint64_t bytes = 0;     ///< of the output
  /// Channels it could not convert (or messages of them), with the first
  /// reason: kept raw by an import, left out by an export.
  std::vector<UndecodedChannel> left_out;
  /// Per channel: what decoding its CDR accepted and counted
  /// (Schema::from_cdr), where anything was.
  std::vector<std::pair<std::string, schema::CdrNotes>> notes;
};
using ImportReport = ConversionReport;

/// True when channel `c` is ROS 2's (rosbag2's MCAP, `bag export
/// --encoding cdr`): `cdr` messages with a `ros2msg` schema `s`.
[[nodiscard]] bool is_ros2_channel(const mcap::Channel& c, const mcap::Schema* s) noexcept;

/// True when the MCAP file at `path` is a ROS 2 recording, what
/// import_ros2 takes: profile `ros2`, or a channel of ROS 2's. Throws what
/// mcap::Reader throws.
[[nodiscard]] bool is_ros2_recording(const std::string& path);

/// The type a `ros2msg` schema record defines (its name, `pkg/msg/Type`,
/// and its text with the types it uses), as a schema of its own. Throws
/// Error(kInvalidArgument) naming `topic` and the type when the text cannot
/// be read.
schema::Schema schema_of_ros2msg(const mcap::Schema& s, std::string_view topic);

/// Writes `output`, a shmbus recording (profile shmbus, `shmbus.msg`
/// schemas, messages as published) that `shmtool play` replays, from the
/// ROS 2 recording `input`. Each channel's type is its schema's name with
/// `/msg/` dropped (`sensor_msgs/msg/Imu` is `sensor_msgs/Imu`), resolved
/// as shmtool resolves types; one found there must describe the same
/// message as the file's `ros2msg` text (compared without comments and
/// blank lines, each definition by name), one that is not comes from that
/// text (schema_of_ros2msg); `shmbus/msg/Bytes` channels become raw
/// channels.
/// A channel whose type is not found, differs, or is not ros2msg/cdr, or
/// one of whose messages does not decode, is kept undecoded (listed in
/// ConversionReport::left_out). With `strict`, the first of those throws
/// instead: Error(kInvalidArgument) naming the channel and type,
/// Error(kConfig) naming the message. `output` is written beside itself
/// and renamed into place when the import is finished: a refused import
/// leaves nothing there, and an existing file as it was. Throws what
/// mcap::Reader and Writer throw.
ImportReport import_ros2(const std::string& input, const std::string& output, const ImportOptions& o);

}  // namespace shmbus::record
