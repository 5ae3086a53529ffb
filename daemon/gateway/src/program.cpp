// shmbus-gateway's command line: the configuration's [[gateway]] entries,
// the domain, the DDS domain id.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <optional>

#include "shmbus/cli.hpp"
#include "shmbus/config_file.hpp"
#include "shmbus/gateway/gateway.hpp"
#include "shmbus/service_shell.hpp"

namespace shmbus::gateway {
namespace {

int gateway_main(int argc, char** argv) {
  CLI::App app{
      "shmbus gateway: carries channels between hosts over Cyclone DDS ([[gateway]] entries of the "
      "configuration)",
      "shmbus-gateway"};
  ConfigSource source;
  std::string domain;
  GatewayOptions options;
  app.add_option("-c,--config", source.path, "configuration file (default: SHMBUS_CONFIG); its [[gateway]] entries");
  app.add_option("--domain", domain, "shmbus domain to carry (overrides the file and SHMBUS_DOMAIN)");
  app.add_option("--dds-domain", options.dds_domain, "DDS domain id (default 0; Cyclone's settings: CYCLONEDDS_URI)")
      ->check(CLI::Range(0, 232));
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (!domain.empty()) source.domain = domain;
  return cli::guarded("shmbus-gateway", [&] {
    const ConfigFile file = ConfigFile::load(source);
    Config config = file.config();
    options.rules = read_gateway_rules(file);
    if (config.node.empty()) config.node = "shmbus-gateway";
    spdlog::set_default_logger(service_shell::make_logger("shmbus-gateway", service_shell::stderr_is_journal()));
    cli::install_stop_handlers();
    Gateway gateway(config, options);
    spdlog::info("carrying domain \"{}\" over DDS domain {} ({} [[gateway]] entries)", config.domain,
                 options.dds_domain, options.rules.size());
    service_shell::run_until_stopped([&] {
      const GatewayStats s = gateway.stats();
      return fmt::format("{} channels exported, {} imported; {} messages sent, {} received, {} lost",
                         s.exported_channels, s.imported_channels, s.messages_sent, s.messages_received,
                         s.ring_lost + s.transit_lost);
    });
    const GatewayStats s = gateway.stats();
    spdlog::info(
        "stopping: {} messages sent in {} DDS samples, {} received, {} lost in rings, {} lost in transit, {} with no "
        "remote reader, {} not sent back, {} refused",
        s.messages_sent, s.batches_sent, s.messages_received, s.ring_lost, s.transit_lost, s.unmatched,
        s.not_reexported, s.refused);
    return 0;
  });
}

}  // namespace
}  // namespace shmbus::gateway

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbus-gateway", [&] { return shmbus::gateway::gateway_main(argc, argv); });
}
