// The [[gateway]] entries of the configuration file.
#include <string>
#include <vector>

#include "shmbus/config_file.hpp"
#include "shmbus/gateway/gateway.hpp"

namespace shmbus::gateway {

namespace {

GatewayRule read_rule(const TomlReader& r, const toml::table& t) {
  GatewayRule rule;
  rule.where = r.position(t);
  for (const auto& [k, v] : t) {
    const std::string_view key = k.str();
    if (key == "export") {
      rule.exports = r.strings_of(v, key);
    } else if (key == "import") {
      rule.imports = r.strings_of(v, key);
    } else if (key == "reliability") {
      const std::string text = r.string_of(v, key);
      if (text == "reliable") {
        rule.reliability = GatewayRule::Reliability::kReliable;
      } else if (text == "best_effort") {
        rule.reliability = GatewayRule::Reliability::kBestEffort;
      } else {
        r.fail(v, "reliability = \"" + text + "\" must be \"reliable\" or \"best_effort\"");
      }
    } else if (key == "history_depth") {
      rule.history_depth = r.bounded(v, key, 1, 100'000);
    } else if (key == "partition") {
      rule.partition = r.string_of(v, key);
    } else {
      r.fail(k.source(), "unknown key gateway." + std::string{key});
    }
  }
  if (rule.exports.empty() && rule.imports.empty()) {
    r.fail(t, "a [[gateway]] entry carries nothing: give export = [\"/glob\"] and/or import = [\"/glob\"]");
  }
  return rule;
}

}  // namespace

std::vector<GatewayRule> read_gateway_rules(const ConfigFile& file) {
  std::vector<GatewayRule> rules;
  const toml::node* section = file.section("gateway");
  if (section == nullptr) return rules;
  const TomlReader reader = file.reader();
  for (const toml::table* e : reader.entries_of(*section, "gateway")) rules.push_back(read_rule(reader, *e));
  return rules;
}

}  // namespace shmbus::gateway
