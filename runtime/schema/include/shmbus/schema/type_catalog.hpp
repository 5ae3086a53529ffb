#pragma once
/// @file type_catalog.hpp
/// Message types by name, resolved the same way by every program: the
/// shipped definitions (std_msgs, sensor_msgs, shmbus_msgs; compiled in),
/// then the given roots (a program's `--msg-path`), then each
/// colon-separated root of `SHMBUS_MSG_PATH`, then `<prefix>/share` for each
/// prefix of `AMENT_PREFIX_PATH` (a sourced ROS 2 workspace). A root holds
/// `<package>/<Name>.msg` or, as ROS 2 installs them,
/// `<package>/msg/<Name>.msg` (and `.srv`, `.action`). Definitions are read
/// when a type needs them: a broken file fails only the types that use it.
/// `pkg/msg/Type` and `pkg/Type` name one type. Target `shmbus::schema`.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/schema.hpp"

namespace shmbus::schema {

class TypeCatalog {
 public:
  /// Search order: the shipped definitions, `msg_paths`, then (when
  /// `read_environment`) SHMBUS_MSG_PATH and AMENT_PREFIX_PATH. Reads no
  /// definition yet.
  explicit TypeCatalog(std::vector<std::string> msg_paths = {}, bool read_environment = true);

  /// True when a definition of `full_name` exists (it may still be broken).
  [[nodiscard]] bool contains(std::string_view full_name) const;
  /// The type `full_name` (`pkg/Type` or `pkg/msg/Type`), with the types it
  /// uses. Throws Error(kInvalidArgument) naming the type, the roots it was
  /// looked for in and known types when there is none; SchemaError
  /// ("file:line: ...") when its definition or one it uses is broken.
  [[nodiscard]] Schema find(std::string_view full_name) const;
  /// Where user definitions are looked for: the roots in search order.
  [[nodiscard]] const std::vector<std::string>& roots() const noexcept { return roots_; }
  /// The file (or `<shipped>/...`) that defines `full_name`, or empty.
  [[nodiscard]] std::string locate(std::string_view full_name) const;
  /// Adds the definition of `full_name` to `set` (for
  /// MessageSet::load_missing); false when there is none.
  bool load(MessageSet& set, const std::string& full_name) const;
  /// The message types the shipped definitions and the roots hold (by
  /// their file names; nothing is parsed), sorted.
  [[nodiscard]] std::vector<std::string> known() const;

 private:
  std::vector<std::string> roots_;
};

/// The roots of a colon-separated path list (SHMBUS_MSG_PATH's form);
/// empty entries are skipped.
[[nodiscard]] std::vector<std::string> split_path_list(std::string_view list);

}  // namespace shmbus::schema
