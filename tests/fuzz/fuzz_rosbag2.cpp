// libFuzzer target: rosbag2's storage as shmtool's bag commands and play
// read it from a peer. The first byte picks what the rest is:
//   0  a bag folder's metadata.yaml (parse_metadata: yaml-cpp, bounded);
//   1  a sqlite3 file (SQLite's own checks, then rosbag2's tables: topics,
//      messages, message_definitions), converted to MCAP and read back;
//   2  one message's data compressed per message (a zstd frame, bounded
//      before it is allocated).
// Anything may be refused with an Error (or, for a frame, the reason);
// nothing may crash, hang or allocate what the input cannot hold.
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "files.hpp"
#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/rosbag2.hpp"

using namespace shmbus;

namespace {

/// A folder of this process's own: a metadata.yaml elsewhere in /tmp must
/// not be read as the file's bag.
const std::string& folder() {
  // Never destroyed: the exit handler that removes it runs after statics go.
  static const std::string* const dir = [] {
    auto* d = new std::string("/tmp/fuzz_rosbag2_XXXXXX");
    if (::mkdtemp(d->data()) == nullptr) std::abort();
    std::atexit([] { std::filesystem::remove_all(folder()); });
    return d;
  }();
  return *dir;
}

void sqlite_file(std::string_view bytes) {
  const std::string path = folder() + "/bag.db3";
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  try {
    rosbag2::Options o;
    o.temp_dir = folder();
    const rosbag2::Recording r(path, o);
    mcap::Reader reader(r.path());
    std::size_t n = 0;
    reader.read_messages([&](const mcap::MessageView& m) {
      n += m.data.size();
      return true;
    });
  } catch (const Error&) {
    // refused: one line, as shmtool says it
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      try {
        (void)rosbag2::parse_metadata(body, "metadata.yaml");
      } catch (const Error&) {
        // refused
      }
      break;
    case 1:
      sqlite_file(body);
      break;
    default:
      try {
        (void)rosbag2::unzstd(std::as_bytes(std::span{body.data(), body.size()}), std::uint64_t{1} << 20);
      } catch (const std::runtime_error&) {
        // not a frame, or more than the bound
      }
      break;
  }
  return 0;
}
