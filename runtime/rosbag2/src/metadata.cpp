// A bag folder's metadata.yaml, read with yaml-cpp (Debian's libyaml-cpp-dev).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>

#include "limits.hpp"
#include "shmbus/error.hpp"
#include "shmbus/rosbag2.hpp"

namespace shmbus::rosbag2 {

namespace {

Error bad(const std::string& name, const std::string& what) {
  return Error(Errc::kConfig, fmt::format("{}: {}; rosbag2 writes it as rosbag2_bagfile_information", name, what));
}

/// The scalar `key` of `info`, or `fallback` when it is absent.
std::string scalar(const YAML::Node& info, const char* key, const std::string& name, std::string fallback = {}) {
  const YAML::Node n = info[key];
  if (!n) return fallback;
  if (n.IsNull()) return {};
  if (!n.IsScalar()) throw bad(name, fmt::format("'{}' is not a single value", key));
  return n.Scalar();
}

std::uint64_t count(const YAML::Node& info, const char* key, const std::string& name) {
  const std::string text = scalar(info, key, name, "0");
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw bad(name, fmt::format("'{}' is '{}', not a count", key, text));
  }
  return value;
}

/// A split file's path: relative, inside the folder.
std::string file_path(const YAML::Node& n, const std::string& name) {
  if (!n.IsScalar() || n.Scalar().empty()) throw bad(name, "an entry of 'relative_file_paths' is not a file name");
  const std::filesystem::path p(n.Scalar());
  if (p.is_absolute() || n.Scalar().size() > kMaxNameBytes) {
    throw bad(name, fmt::format("file '{}' is not a path inside the bag folder", n.Scalar()));
  }
  for (const auto& part : p) {
    if (part == "..") throw bad(name, fmt::format("file '{}' leaves the bag folder", n.Scalar()));
  }
  return n.Scalar();
}

}  // namespace

BagMetadata parse_metadata(std::string_view text, const std::string& name) {
  if (text.size() > kMaxMetadataBytes) {
    throw bad(name, fmt::format("{} bytes, more than the {} a metadata.yaml may hold", text.size(), kMaxMetadataBytes));
  }
  YAML::Node root;
  try {
    // yaml-cpp stops nesting at a fixed depth (YAML::DeepRecursion).
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(Errc::kConfig, fmt::format("{}: not YAML: {}", name, e.what()));
  }
  try {
    const YAML::Node info = root.IsMap() ? root["rosbag2_bagfile_information"] : YAML::Node();
    if (!info || !info.IsMap()) throw bad(name, "no map 'rosbag2_bagfile_information'");
    BagMetadata m;
    m.storage_identifier = scalar(info, "storage_identifier", name);
    if (m.storage_identifier.empty()) throw bad(name, "no 'storage_identifier'");
    m.compression_format = scalar(info, "compression_format", name);
    m.compression_mode = scalar(info, "compression_mode", name);
    m.version = count(info, "version", name);
    const YAML::Node files = info["relative_file_paths"];
    if (!files || !files.IsSequence() || files.size() == 0) throw bad(name, "no list 'relative_file_paths'");
    if (files.size() > kMaxSplitFiles) {
      throw bad(name, fmt::format("{} files, more than {}", files.size(), kMaxSplitFiles));
    }
    for (const YAML::Node& f : files) m.relative_file_paths.push_back(file_path(f, name));
    return m;
  } catch (const YAML::Exception& e) {
    throw Error(Errc::kConfig, fmt::format("{}: {}", name, e.what()));
  }
}

}  // namespace shmbus::rosbag2
