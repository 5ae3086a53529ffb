// A build without yaml-cpp (the aarch64 cross build: Debian's
// libyaml-cpp-dev installs for one architecture at a time): bag folders
// are refused, rosbag2's .db3 and .mcap files are still read.
#include <fmt/format.h>

#include "shmbus/error.hpp"
#include "shmbus/rosbag2.hpp"

namespace shmbus::rosbag2 {

BagMetadata parse_metadata(std::string_view /*text*/, const std::string& name) {
  throw Error(Errc::kConfig, fmt::format("{}: this build of shmbus reads no YAML (built without yaml-cpp); give the "
                                         "bag's .db3 or .mcap files one by one",
                                         name));
}

}  // namespace shmbus::rosbag2
