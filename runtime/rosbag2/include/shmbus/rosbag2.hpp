#pragma once
/// @file rosbag2.hpp
/// rosbag2's storage as rosbag2 writes it, read as one MCAP recording: a
/// sqlite3 file (`.db3`, the default until ROS 2 Iron), or a bag folder
/// (`metadata.yaml` with its split files, sqlite3 or MCAP, compressed per
/// file or per message with zstd as the metadata says). What the bag
/// commands and `play` read then is what rosbag2's MCAP storage writes:
/// profile `ros2`, a `ros2msg` schema per type, `cdr` messages in log-time
/// order, each channel's `offered_qos_profiles` as its metadata. A type's
/// definition comes from the file's `message_definitions` table where it
/// has one, else from the msg path (`--msg-path`, SHMBUS_MSG_PATH,
/// AMENT_PREFIX_PATH: schema::TypeCatalog). Target `shmbus::rosbag2`.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbus::rosbag2 {

/// What a bag folder's `metadata.yaml` says (rosbag2_bagfile_information).
struct BagMetadata {
  std::string storage_identifier;                ///< "sqlite3" or "mcap"
  std::vector<std::string> relative_file_paths;  ///< the split files, in order
  std::string compression_format;                ///< "" or "zstd"
  std::string compression_mode;                  ///< "", "NONE", "FILE" or "MESSAGE"
  std::uint64_t version = 0;                     ///< before 4, each path begins with the folder's name
};

/// Reads a `metadata.yaml` (`text`, named `name` in errors). Throws
/// Error(kConfig) with one line naming `name` and what is wrong: not YAML,
/// too large or too deep, no `rosbag2_bagfile_information`, a field of the
/// wrong kind, a file path that leaves the folder.
BagMetadata parse_metadata(std::string_view text, const std::string& name);

struct Options {
  /// Roots of message definitions searched after the shipped ones, for the
  /// types the file does not define (shmtool's --msg-path).
  std::vector<std::string> msg_paths;
  /// Where the converted recording and decompressed files are written
  /// (default: TMPDIR, else /tmp).
  std::string temp_dir;
  /// A ROS 2 recording (profile ros2: rosbag2's storage, or an MCAP file
  /// rosbag2 or `bag export --encoding cdr` wrote) is also imported
  /// (record::import_ros2) into a shmbus recording, whose channels carry
  /// their types as `play` publishes them. Channels kept undecoded are
  /// each said in a note.
  bool import = false;
};

/// A recording's files as MCAP: an MCAP file is read as it is; a rosbag2
/// sqlite3 file or bag folder is written to one temporary MCAP file,
/// removed when this goes (as is the import Options::import asks for).
class Recording {
 public:
  /// Opens `path`: an `.mcap` file, a `.db3` (or `.db3.zstd`) file, or a
  /// folder with a `metadata.yaml`. Throws Error(kNotFound) for a path that
  /// does not exist, Error(kConfig) with one line naming the file and what
  /// is wrong for one that is not a rosbag2 file, and Error(kResource) when
  /// the copy cannot be written.
  explicit Recording(const std::string& path, const Options& o = {});
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  Recording(Recording&&) = delete;
  Recording& operator=(Recording&&) = delete;

  /// The MCAP file to read.
  [[nodiscard]] const std::string& path() const noexcept { return mcap_; }
  /// What was read, for a summary: "rosbag2 sqlite3" or "rosbag2 mcap",
  /// with ", zstd per file" or ", zstd per message"; empty for an MCAP
  /// file read as it is.
  [[nodiscard]] const std::string& storage() const noexcept { return storage_; }
  /// The files read, in order (the bag's split files; the path itself).
  [[nodiscard]] const std::vector<std::string>& files() const noexcept { return files_; }
  /// One line for each message left out of the copy (a topic id the file
  /// does not list, a negative timestamp, data that does not decompress)
  /// and, with Options::import, each channel kept undecoded. A type that
  /// neither the file nor the msg path defines gets a schema without text:
  /// the bag commands carry its channel undecoded and say so.
  [[nodiscard]] const std::vector<std::string>& notes() const noexcept { return notes_; }
  /// The channels whose type neither the file nor the msg path defines,
  /// "TOPIC (TYPE)", for a summary to name (the bag commands that decode
  /// say each as they skip it).
  [[nodiscard]] const std::vector<std::string>& undefined() const noexcept { return undefined_; }

 private:
  void import(const std::string& temp_dir, const Options& o);

  std::string mcap_;
  std::string storage_;
  std::string copy_;      ///< the converted file, removed with this
  std::string imported_;  ///< the import, removed with this
  std::vector<std::string> files_;
  std::vector<std::string> notes_;
  std::vector<std::string> undefined_;
};

/// True when `path` is read through Recording's conversion: a directory, or
/// a file whose first bytes are SQLite's header or a zstd frame.
[[nodiscard]] bool is_rosbag2_storage(const std::string& path);

}  // namespace shmbus::rosbag2
