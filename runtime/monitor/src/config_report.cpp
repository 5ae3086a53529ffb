#include "shmbus/monitor/config_report.hpp"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::monitor {

namespace {

std::string settings_text(const ChannelSettings& s) {
  return fmt::format("transport={} capacity={} max_message_size={} time_list_capacity={} window={} thresholds {}",
                     to_string(s.transport), s.capacity, s.max_message_size, s.time_list_capacity,
                     format_duration(s.window), thresholds_text(s.thresholds_hz));
}

}  // namespace

std::string thresholds_text(const std::optional<std::array<double, 3>>& thresholds) {
  return thresholds ? fmt::format("f1={} f2={} f3={} Hz", (*thresholds)[0], (*thresholds)[1], (*thresholds)[2])
                    : std::string{"none (measured, not alerted)"};
}

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> out;
  const auto check = [&](const ChannelSettings& s, const std::string& where, const std::string& what) {
    if (!s.thresholds_hz) return;
    const double needed = std::chrono::duration<double>(s.window).count() * (*s.thresholds_hz)[2];
    if (needed > static_cast<double>(s.time_list_capacity)) {
      out.push_back(
          fmt::format("{}: warning: {}: window {} at f3 = {} Hz needs {:.0f} stamps but time_list_capacity "
                      "is {}: the time list can never cover the window; raise time_list_capacity to {} or "
                      "shorten the window",
                      where.empty() ? config.source : where, what, format_duration(s.window), (*s.thresholds_hz)[2],
                      needed, s.time_list_capacity, std::bit_ceil(static_cast<std::uint64_t>(std::ceil(needed)))));
    }
  };
  check(config.defaults, config.defaults_where, "[defaults]");
  for (const ChannelRule& r : config.channels) check(config.channel(r.pattern), r.where, "channel " + r.pattern);
  return out;
}

std::string describe_config(const MonitorConfig& configuration) {
  const Config& config = configuration.config;
  std::string out =
      fmt::format("{}: valid\ndomain = {}\nnode = {}\n[defaults] {}\n", config.source, config.domain,
                  config.node.empty() ? "(the program's name)" : config.node, settings_text(config.defaults));
  for (const ChannelRule& r : config.channels) {
    out += fmt::format("[[channel]] {} -> {}\n", r.pattern, settings_text(config.channel(r.pattern)));
  }
  const MonitorSettings& m = configuration.monitor;
  out += fmt::format(
      "[monitor] scan_period={} debounce_scans={} metrics_listen={} tls_cert={} statistics_period={} webhook={}\n",
      format_duration(m.scan_period), m.debounce_scans, m.metrics_listen, m.tls_cert.empty() ? "none" : m.tls_cert,
      format_duration(m.statistics_period), m.webhook.empty() ? "none" : m.webhook);
  return out;
}

}  // namespace shmbus::monitor
