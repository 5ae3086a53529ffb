#pragma once
// Files a bag is read through: temporary files removed when they go, the
// kind of a file by its first bytes, and zstd decompression bounded before
// its output is written.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shmbus::rosbag2 {

/// A file created in `dir` (mkstemps), removed when this goes unless
/// released.
class TempFile {
 public:
  TempFile(const std::string& dir, const std::string& suffix);
  ~TempFile();
  TempFile(TempFile&& other) noexcept;
  TempFile& operator=(TempFile&&) = delete;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The path, no longer removed by this.
  std::string release() noexcept;

 private:
  std::string path_;
};

enum class FileKind { kOther, kSqlite, kZstd, kMcap };

/// What `path` is by its first bytes (SQLite's header, a zstd frame, MCAP's
/// magic); kOther when it is none of those or cannot be read.
FileKind sniff(const std::string& path);

/// Decompresses the zstd file `in` to `out`. Throws Error(kConfig) naming
/// `in` when it is not zstd, Error(kResource) when the output would not fit
/// in the free space of `out`'s folder or cannot be written.
void unzstd_file(const std::string& in, const std::string& out);

/// One zstd frame, decompressed. Throws std::runtime_error with zstd's
/// reason, or when it holds more than `max_bytes` (checked before the
/// bytes are allocated).
std::vector<std::byte> unzstd(std::span<const std::byte> in, std::uint64_t max_bytes);

}  // namespace shmbus::rosbag2
