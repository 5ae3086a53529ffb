#pragma once
/// @file stage_settings.hpp
/// The synchronizer's section of the configuration file: `[[sync]]`
/// entries, each a stage `shmtool sync NAME` runs. Target `shmbus::sync`.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/config_reader.hpp"

namespace shmbus::sync {

/// One [[sync]] entry.
struct StageSettings {
  std::string name;
  std::string where;  ///< "file:line:column" of the entry
  std::vector<std::string> inputs;
  std::string output;
  std::string policy = "bounded";  ///< bounded, exact, approximate, latest
  std::optional<std::chrono::nanoseconds> threshold;
  std::string stamp_field;  ///< empty: the publish time
  std::uint32_t queue_size = 64;
  std::string master;  ///< latest: the triggering input
};

/// The [[sync]] entries of `section` (the file's "sync" node; null: none),
/// in file order. Throws Error(kConfig) "file:line:column: what".
std::vector<StageSettings> read_stage_settings(const TomlReader& reader, const toml::node* section);

}  // namespace shmbus::sync
