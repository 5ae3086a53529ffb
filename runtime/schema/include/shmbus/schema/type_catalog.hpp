#pragma once
/// @file type_catalog.hpp
/// Message types by name, resolved the same way by every program: the
/// shipped definitions (std_msgs, sensor_msgs, shmbus_msgs; compiled in),
/// then every `<package>/<Name>.msg` under the given roots (a program's
/// `--msg-path`), then under each colon-separated root of
/// `SHMBUS_MSG_PATH`. Target `shmbus::schema`.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/schema.hpp"

namespace shmbus::schema {

class TypeCatalog {
 public:
  /// Reads the shipped definitions, then `msg_paths`, then (when
  /// `read_environment`) SHMBUS_MSG_PATH. Throws SchemaError for a bad
  /// definition file, naming it.
  explicit TypeCatalog(std::vector<std::string> msg_paths = {}, bool read_environment = true);

  /// True when `full_name` (package/Name) is known.
  [[nodiscard]] bool contains(std::string_view full_name) const;
  /// The type `full_name`. Throws Error(kInvalidArgument) naming the type,
  /// the roots it was looked for in and the known types when there is none.
  [[nodiscard]] Schema find(std::string_view full_name) const;
  /// Where user definitions were looked for: the roots in search order.
  [[nodiscard]] const std::vector<std::string>& roots() const noexcept { return roots_; }

 private:
  std::shared_ptr<MessageSet> set_;
  std::vector<std::string> roots_;
};

/// The roots of a colon-separated path list (SHMBUS_MSG_PATH's form);
/// empty entries are skipped.
[[nodiscard]] std::vector<std::string> split_path_list(std::string_view list);

}  // namespace shmbus::schema
