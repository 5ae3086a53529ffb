#pragma once
/// @file config_file.hpp
/// The configuration as every program loads it: the file (`--config`, else
/// SHMBUS_CONFIG, else the embedded default), then SHMBUS_DOMAIN, then
/// `--domain`. The core's `Config` is what the transport needs; each
/// program's library reads its own section (`[monitor]`, `[bridge]`,
/// `[[gateway]]`, `[[sync]]`) from the same file with section().

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shmbus/config.hpp"
#include "shmbus/config_reader.hpp"
#include "shmbus/config_source.hpp"

namespace shmbus {

class ConfigFile {
 public:
  /// Loads what `source` names. Throws Error(kConfig) "file:line:column:
  /// what" for a bad file, a bad SHMBUS_DOMAIN or a bad --domain.
  static ConfigFile load(const ConfigSource& source);
  /// From TOML text (tests, fuzzing); `source` names it in messages.
  static ConfigFile parse(std::string_view text, const std::string& source);

  /// The transport's settings.
  [[nodiscard]] const Config& config() const noexcept { return config_; }
  /// The top-level node `name` ([name] or [[name]]) when the file has it.
  [[nodiscard]] const toml::node* section(std::string_view name) const;
  /// What reads a section's values, with the file's name in messages.
  [[nodiscard]] TomlReader reader() const { return TomlReader(config_.source); }

 private:
  Config config_;
  std::shared_ptr<const toml::table> document_;  ///< null: the embedded default
};

}  // namespace shmbus
