#include "shmbus/monitor/settings.hpp"

#include "shmbus/config_file.hpp"

namespace shmbus::monitor {

MonitorSettings read_monitor_settings(const ConfigFile& file) {
  MonitorSettings m;
  const toml::node* section = file.section("monitor");
  if (section == nullptr) return m;
  const TomlReader r = file.reader();
  for (const auto& [k, v] : r.table_of(*section, "monitor")) {
    const std::string_view key = k.str();
    if (key == "scan_period") {
      m.scan_period = r.duration_of(v, key);
    } else if (key == "debounce_scans") {
      m.debounce_scans = r.bounded(v, key, 1, 1000);
    } else if (key == "metrics_listen") {
      m.metrics_listen = r.string_of(v, key);
    } else if (key == "statistics_period") {
      m.statistics_period = r.duration_of(v, key);
    } else if (key == "webhook") {
      m.webhook = r.string_of(v, key);
    } else if (key == "token_file") {
      m.token_file = r.string_of(v, key);
    } else if (key == "tls_cert") {
      m.tls_cert = r.string_of(v, key);
    } else if (key == "tls_key") {
      m.tls_key = r.string_of(v, key);
    } else {
      r.fail(k.source(), "unknown key monitor." + std::string{key});
    }
  }
  return m;
}

MonitorConfig load_monitor_config(const ConfigSource& source) {
  const ConfigFile file = ConfigFile::load(source);
  return {file.config(), read_monitor_settings(file)};
}

}  // namespace shmbus::monitor
