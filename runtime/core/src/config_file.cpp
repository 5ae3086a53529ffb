#include "shmbus/config_file.hpp"

#include <string>

#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus {

ConfigFile ConfigFile::parse(std::string_view text, const std::string& source) {
  ConfigFile f;
  f.document_ = std::make_shared<const toml::table>(parse_toml(text, source));  // parsed once, for every section
  f.config_ = config_from_toml(*f.document_, source);
  return f;
}

ConfigFile ConfigFile::load(const ConfigSource& source) {
  const Config::Environment env = Config::environment();
  const std::string& path = source.path.empty() ? env.config_path : source.path;
  ConfigFile f;
  if (!path.empty()) f = parse(Config::read_file(path), path);
  if (env.domain) f.config_.domain = *env.domain;
  if (source.domain) {
    try {
      validate_domain_name(*source.domain);
    } catch (const Error& e) {
      throw Error(Errc::kConfig, std::string{"--domain: "} + e.what());
    }
    f.config_.domain = *source.domain;
  }
  return f;
}

const toml::node* ConfigFile::section(std::string_view name) const {
  return document_ ? document_->get(name) : nullptr;
}

}  // namespace shmbus
