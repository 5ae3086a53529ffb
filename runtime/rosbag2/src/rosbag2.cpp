#include "shmbus/rosbag2.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "files.hpp"
#include "limits.hpp"
#include "shmbus/error.hpp"
#include "shmbus/record/import.hpp"
#include "shmbus/record/rewrite.hpp"
#include "sqlite_bag.hpp"

namespace shmbus::rosbag2 {

namespace {

namespace fs = std::filesystem;

/// A bag to read: its files in order, and how it is compressed.
struct Bag {
  std::string storage;             ///< "sqlite3", "mcap", or "" (an MCAP file read as it is)
  std::vector<std::string> files;  ///< as named to the user
  std::vector<std::string> plain;  ///< where each is read (decompressed, when it was whole)
  bool per_message_zstd = false;
};

std::string upper(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

BagMetadata read_metadata(const fs::path& yaml) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(yaml, ec);
  if (ec) throw Error(Errc::kNotFound, fmt::format("{}: {}", yaml.string(), ec.message()));
  if (size > kMaxMetadataBytes) {
    throw Error(Errc::kConfig, fmt::format("{}: {} bytes, more than the {} a metadata.yaml may hold", yaml.string(),
                                           size, kMaxMetadataBytes));
  }
  std::ifstream in(yaml, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_metadata(text.str(), yaml.string());
}

/// Whether the metadata's compression is per message; refuses what is not
/// zstd.
bool per_message(const BagMetadata& m, const std::string& shown) {
  const std::string mode = upper(m.compression_mode);
  if (mode.empty() || mode == "NONE") return false;
  if (m.compression_format != "zstd") {
    throw Error(Errc::kConfig,
                fmt::format("{}: compression '{}' is not read; rosbag2's zstd is", shown, m.compression_format));
  }
  if (mode != "FILE" && mode != "MESSAGE") {
    throw Error(Errc::kConfig,
                fmt::format("{}: compression_mode '{}' is not rosbag2's (FILE or MESSAGE)", shown, m.compression_mode));
  }
  return mode == "MESSAGE";
}

/// A bag folder: its metadata.yaml's files, in order.
Bag folder_bag(const fs::path& folder) {
  const fs::path yaml = folder / "metadata.yaml";
  if (!fs::exists(yaml)) {
    throw Error(Errc::kConfig, fmt::format("{}: a folder without a metadata.yaml is not a rosbag2 bag; give one of "
                                           "its .db3 or .mcap files, or write one with ros2 bag reindex",
                                           folder.string()));
  }
  const BagMetadata m = read_metadata(yaml);
  Bag bag{m.storage_identifier, {}, {}, per_message(m, yaml.string())};
  if (bag.storage != "sqlite3" && bag.storage != "mcap") {
    throw Error(Errc::kConfig, fmt::format("{}: storage '{}' is not read; rosbag2's sqlite3 and mcap are",
                                           yaml.string(), bag.storage));
  }
  for (const std::string& rel : m.relative_file_paths) {
    fs::path p = folder / rel;
    // Before version 4 each path began with the bag folder's own name.
    if (!fs::exists(p) && m.version < 4) p = folder / fs::path(rel).filename();
    if (!fs::exists(p)) {
      throw Error(Errc::kNotFound, fmt::format("{}: its file {} is not in {}", yaml.string(), rel, folder.string()));
    }
    bag.files.push_back(p.string());
  }
  bag.plain = bag.files;
  return bag;
}

/// One file: SQLite (or zstd-compressed SQLite) is a bag of one file, with
/// the compression a metadata.yaml beside it gives that file; anything
/// else is read as MCAP.
Bag file_bag(const fs::path& file, const std::string& temp_dir, std::vector<TempFile>& temps) {
  FileKind kind = sniff(file.string());
  std::string path = file.string();
  if (kind == FileKind::kZstd) {
    temps.emplace_back(temp_dir, ".db3");
    unzstd_file(path, temps.back().path());
    path = temps.back().path();
    kind = sniff(path);
  }
  if (kind == FileKind::kMcap && path != file.string()) return {"mcap", {file.string()}, {path}, false};
  if (kind != FileKind::kSqlite) return {"", {file.string()}, {file.string()}, false};
  Bag bag{"sqlite3", {file.string()}, {path}, false};
  const fs::path yaml = file.parent_path() / "metadata.yaml";
  if (fs::exists(yaml)) {
    const BagMetadata m = read_metadata(yaml);
    const bool listed = std::ranges::any_of(
        m.relative_file_paths, [&](const std::string& rel) { return fs::path(rel).filename() == file.filename(); });
    if (listed) bag.per_message_zstd = per_message(m, yaml.string());
  }
  return bag;
}

std::string temp_folder(const Options& o) {
  if (!o.temp_dir.empty()) return o.temp_dir;
  // getenv is safe here: nothing in shmbus sets the environment.
  const char* env = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

}  // namespace

bool is_rosbag2_storage(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return true;
  const FileKind k = sniff(path);
  return k == FileKind::kSqlite || k == FileKind::kZstd;
}

Recording::Recording(const std::string& path, const Options& o) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw Error(Errc::kNotFound, fmt::format("{} does not exist", path));
  const std::string temp_dir = temp_folder(o);
  std::vector<TempFile> temps;  // decompressed files, removed when read
  Bag bag = fs::is_directory(st) ? folder_bag(path) : file_bag(path, temp_dir, temps);
  if (bag.storage.empty()) {
    mcap_ = path;
    files_ = {path};
    if (o.import) import(temp_dir, o);
    return;
  }
  files_ = bag.files;
  // Split files compressed whole (FILE mode: name.db3.zstd, name.mcap.zstd;
  // a file named alone was decompressed by file_bag).
  std::vector<std::string>& plain = bag.plain;
  bool whole = false;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    whole = whole || plain[i] != bag.files[i];
    if (sniff(plain[i]) != FileKind::kZstd) continue;
    whole = true;
    temps.emplace_back(temp_dir, bag.storage == "mcap" ? ".mcap" : ".db3");
    unzstd_file(plain[i], temps.back().path());
    plain[i] = temps.back().path();
  }
  storage_ = fmt::format("rosbag2 {}{}{}", bag.storage, whole ? ", zstd per file" : "",
                         bag.per_message_zstd ? ", zstd per message" : "");
  if (bag.storage == "mcap" && bag.per_message_zstd) {
    throw Error(Errc::kConfig, fmt::format("{}: MCAP files compressed per message are not read; their chunks are "
                                           "compressed instead (ros2 bag record --storage-preset-profile)",
                                           path));
  }
  TempFile out(temp_dir, ".mcap");
  if (bag.storage == "mcap") {
    record::RewriteOptions r;
    r.library = "shmbus rosbag2 mcap";
    (void)record::rewrite(plain, out.path(), r);
  } else {
    SqliteToMcap writer(out.path(), o.msg_paths);
    for (std::size_t i = 0; i < plain.size(); ++i) writer.add_file(plain[i], bag.files[i], bag.per_message_zstd);
    notes_ = writer.finish();
    undefined_ = writer.undefined();
  }
  copy_ = out.release();
  mcap_ = copy_;
  if (!o.import) return;
  try {
    import(temp_dir, o);
  } catch (...) {
    ::unlink(copy_.c_str());  // no destructor runs for a constructor that throws
    throw;
  }
}

void Recording::import(const std::string& temp_dir, const Options& o) {
  if (!record::is_ros2_recording(mcap_)) return;
  TempFile out(temp_dir, ".mcap");
  record::ImportOptions io;
  io.msg_paths = o.msg_paths;
  const record::ImportReport r = record::import_ros2(mcap_, out.path(), io);
  for (const record::UndecodedChannel& c : r.left_out) {
    notes_.push_back(fmt::format("{} ({}): {} message(s) kept raw, undecoded: {}", c.topic,
                                 c.type.empty() ? "no schema" : c.type, c.messages, c.why));
  }
  imported_ = out.release();
  mcap_ = imported_;
}

Recording::~Recording() {
  for (const std::string& f : {copy_, imported_}) {
    if (!f.empty()) ::unlink(f.c_str());
  }
}

}  // namespace shmbus::rosbag2
