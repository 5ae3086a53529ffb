#pragma once
/// @file config_reader.hpp
/// Typed values from a TOML configuration file, each bad one refused as
/// Error(kConfig) "file:line:column: what is wrong, and the fix". The core
/// reads the transport's keys with it, and each program's library its own
/// section (shmbus/config_file.hpp hands them the file).

#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbus {

class Config;

/// Parses a configuration file's text. Throws Error(kConfig)
/// "source:line:column: what toml++ found".
[[nodiscard]] toml::table parse_toml(std::string_view text, const std::string& source_name);
/// The transport's settings from a parsed file (what Config::parse does
/// after parse_toml), for a caller that reads the programs' sections from
/// the same tree. Throws Error(kConfig).
[[nodiscard]] Config config_from_toml(const toml::table& root, const std::string& source_name);

class TomlReader {
 public:
  /// `source`: the file's name, as messages show it.
  explicit TomlReader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  [[noreturn]] void fail(const toml::node& at, const std::string& what) const;
  [[noreturn]] void fail(const toml::source_region& region, const std::string& what) const;
  /// "file:line:column" of a node, for messages about it later.
  [[nodiscard]] std::string position(const toml::node& n) const;

  [[nodiscard]] std::string string_of(const toml::node& n, std::string_view key) const;
  [[nodiscard]] std::vector<std::string> strings_of(const toml::node& n, std::string_view key) const;
  [[nodiscard]] std::int64_t integer_of(const toml::node& n, std::string_view key) const;
  /// An integer from `lo` to `hi`.
  [[nodiscard]] std::uint32_t bounded(const toml::node& n, std::string_view key, std::int64_t lo,
                                      std::int64_t hi) const;
  /// A power of two from 2 to `max`.
  [[nodiscard]] std::uint32_t power_of_two(const toml::node& n, std::string_view key, std::int64_t max) const;
  /// A positive duration ("100ms"; see parse_duration).
  [[nodiscard]] std::chrono::nanoseconds duration_of(const toml::node& n, std::string_view key) const;
  /// The table of `[name]`.
  [[nodiscard]] const toml::table& table_of(const toml::node& n, std::string_view name) const;
  /// The entries of `[[name]]`, each a table.
  [[nodiscard]] std::vector<const toml::table*> entries_of(const toml::node& n, std::string_view name) const;

 private:
  std::string source_;
};

}  // namespace shmbus
