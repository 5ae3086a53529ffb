#pragma once
/// @file config_source.hpp
/// Where a program's configuration comes from (the command line's part);
/// shmbus/config_file.hpp loads it.

#include <optional>
#include <string>

namespace shmbus {

struct ConfigSource {
  std::string path;                   ///< --config, else SHMBUS_CONFIG, else the embedded default
  std::optional<std::string> domain;  ///< --domain: overrides the file and SHMBUS_DOMAIN
};

class ConfigFile;

}  // namespace shmbus
