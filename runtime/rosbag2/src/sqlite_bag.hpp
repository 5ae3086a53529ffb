#pragma once
// rosbag2's sqlite3 files (rosbag2_storage_sqlite3) written into one MCAP
// file as rosbag2's MCAP storage writes a bag: channels by topic, a ros2msg
// schema per type, messages in log-time order.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "shmbus/mcap.hpp"
#include "shmbus/schema/type_catalog.hpp"

namespace shmbus::rosbag2 {

class SqliteToMcap {
 public:
  SqliteToMcap(const std::string& output, std::vector<std::string> msg_paths);

  /// Adds the messages of one sqlite3 file (`shown`: its name in lines;
  /// `per_message_zstd`: each message's data is a zstd frame). Throws
  /// Error(kConfig) naming `shown` when it is not a rosbag2 sqlite3 file.
  void add_file(const std::string& path, const std::string& shown, bool per_message_zstd);
  /// Finishes the MCAP file; returns a line for each message left out and
  /// each definition on the msg path that cannot be read.
  std::vector<std::string> finish();
  /// The topics whose type neither the file nor the msg path defines:
  /// "TOPIC (TYPE)".
  [[nodiscard]] const std::vector<std::string>& undefined() const noexcept { return undefined_; }

 private:
  struct Topic {
    std::string name, type, format, qos;
  };
  std::uint16_t channel(const Topic& t, const std::map<std::string, std::string>& definitions,
                        const std::string& shown);
  std::uint16_t schema(const std::string& type, const std::map<std::string, std::string>& definitions,
                       const std::string& topic, const std::string& shown);

  mcap::Writer writer_;
  schema::TypeCatalog catalog_;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint16_t> channels_;
  std::map<std::uint16_t, std::uint32_t> sequence_;
  std::map<std::string, std::uint16_t> schemas_;
  std::vector<std::string> notes_;
  std::vector<std::string> undefined_;
  /// Messages left out, by topic: why, and how many.
  std::map<std::string, std::pair<std::string, std::uint64_t>> left_out_;
};

}  // namespace shmbus::rosbag2
