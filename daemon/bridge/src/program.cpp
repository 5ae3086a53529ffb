// shmbus-bridge's command line: the [bridge] table's overrides, and
// `connect` for the uplink. The bridge is the library
// (shmbus/bridge/bridge.hpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "shmbus/bridge/bridge.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/config_file.hpp"
#include "shmbus/service_shell.hpp"

namespace shmbus::bridge {
namespace {

/// What the command line may set of the [bridge] table.
struct BridgeArgs {
  ConfigSource source;
  std::string domain;
  std::optional<std::string> listen, token_file, tls_cert, tls_key, foxglove_encoding, json_int64;
  std::vector<std::string> allow, deny, allow_origins, msg_path;
  std::optional<std::uint32_t> max_clients, max_frame_bytes, send_queue, max_ops, max_client_bytes;
  bool no_loopback_origins = false;
};

void add_bridge_options(CLI::App& app, BridgeArgs& a) {
  app.add_option("-c,--config", a.source.path, "configuration file (default: SHMBUS_CONFIG); its [bridge] table");
  app.add_option("--domain", a.domain, "domain to bridge (overrides the file and SHMBUS_DOMAIN)");
  app.add_option("--listen", a.listen, "ADDRESS:PORT (default 127.0.0.1:9090; port 0: any free port)");
  app.add_option("--allow", a.allow, "channel/service globs clients may use (default: all)");
  app.add_option("--deny", a.deny, "channel/service globs refused even when allowed");
  app.add_option("--token-file", a.token_file, "file holding the token clients must present");
  app.add_option("--tls-cert", a.tls_cert, "PEM certificate chain: serve wss:// and https:// only (with --tls-key)");
  app.add_option("--tls-key", a.tls_key, "PEM private key of --tls-cert");
  app.add_option("--max-clients", a.max_clients, "clients at once (default 64)");
  app.add_option("--max-frame-bytes", a.max_frame_bytes, "largest incoming WebSocket message (default 1 MiB)");
  app.add_option("--send-queue", a.send_queue, "messages queued per client before the oldest is dropped (1024)");
  app.add_option("--max-ops-per-second", a.max_ops, "operations per second per client (default 2000)");
  app.add_option("--max-client-bytes", a.max_client_bytes,
                 "bytes queued per client before its oldest messages are dropped (default 4 MiB)");
  app.add_option("--allow-origin", a.allow_origins,
                 "browser Origins (globs) that may connect besides loopback hosts' (no Origin: always)");
  app.add_flag("--no-loopback-origins", a.no_loopback_origins,
               "refuse pages from loopback hosts unless --allow-origin names them");
  app.add_option("--msg-path", a.msg_path,
                 "root of <package>/<Name>.msg files for the types clients create channels of (repeatable; "
                 "after the shipped types, before SHMBUS_MSG_PATH)");
  app.add_option("--foxglove-encoding", a.foxglove_encoding,
                 "how Foxglove clients get typed channels: cdr (default), json, or both (each channel twice)")
      ->check(CLI::IsMember({"cdr", "json", "both"}));
  app.add_option("--json-int64", a.json_int64,
                 "how rosbridge JSON carries 64-bit integers: number (default, as rosbridge) or string (exact)")
      ->check(CLI::IsMember({"number", "string"}));
}

CLI::App* add_connect_command(CLI::App& app, UplinkOptions& u) {
  CLI::App* connect = app.add_subcommand(
      "connect", "be the client of a remote rosbridge v2 server: export local channels to it, import its topics");
  connect->add_option("url", u.url, "ws://HOST:PORT or wss://HOST[:PORT] of the remote server")->required();
  connect->add_option("--tls-ca", u.tls_ca, "wss://: PEM certificate authorities to trust (default: the system's)");
  connect->add_option("--export", u.exports, "local channels to publish there (comma-separated)")->delimiter(',');
  connect->add_option("--import", u.imports, "remote topics to publish here (comma-separated)")->delimiter(',');
  return connect;
}

/// The command line over the file's [bridge] table.
void apply_bridge_args(const BridgeArgs& a, BridgeSettings& b) {
  if (a.listen) b.listen = *a.listen;
  if (!a.allow.empty()) b.allow = a.allow;
  if (!a.deny.empty()) b.deny = a.deny;
  if (a.token_file) b.token_file = *a.token_file;
  if (a.tls_cert) b.tls_cert = *a.tls_cert;
  if (a.tls_key) b.tls_key = *a.tls_key;
  if (a.max_clients) b.max_clients = std::max<std::uint32_t>(1, *a.max_clients);
  if (a.max_frame_bytes) b.max_frame_bytes = std::max<std::uint32_t>(1024, *a.max_frame_bytes);
  if (a.send_queue) b.send_queue = std::max<std::uint32_t>(1, *a.send_queue);
  if (a.max_ops) b.max_ops_per_second = std::max<std::uint32_t>(1, *a.max_ops);
  if (a.max_client_bytes) b.max_client_bytes = std::max<std::uint32_t>(64 * 1024, *a.max_client_bytes);
  if (!a.allow_origins.empty()) b.allow_origins = a.allow_origins;
  if (a.no_loopback_origins) b.loopback_origins = false;
  if (!a.msg_path.empty()) b.msg_path = a.msg_path;
  if (a.foxglove_encoding) b.foxglove_encoding = *foxglove_encoding_of(*a.foxglove_encoding);
  if (a.json_int64) b.json_int64 = *json_int64_of(*a.json_int64);
}

int run_uplink(const Config& config, const UplinkOptions& options) {
  Uplink uplink(config, options);
  service_shell::run_until_stopped([&] {
    const UplinkStats s = uplink.stats();
    return fmt::format(
        "{} to {}; {} messages sent, {} published here, {} dropped, {} lost while down, "
        "{} topics refused",
        s.connected ? "connected" : "not connected", options.url, s.bridge.messages_sent, s.bridge.messages_published,
        s.bridge.messages_dropped, s.link_lost, s.refused_topics);
  });
  const UplinkStats s = uplink.stats();
  spdlog::info(
      "stopping: {} links made, {} messages sent, {} published here, {} dropped, {} lost while the link "
      "was down, {} topics refused",
      s.connects, s.bridge.messages_sent, s.bridge.messages_published, s.bridge.messages_dropped, s.link_lost,
      s.refused_topics);
  return 0;
}

int run_server(const Config& config, const BridgeSettings& b) {
  Bridge bridge(config, b);
  spdlog::info("listening on {}://{}:{} for domain \"{}\" (rosbridge v2; foxglove.websocket.v1; /metrics)",
               b.tls_cert.empty() ? "ws" : "wss", b.listen.substr(0, b.listen.rfind(':')), bridge.port(),
               config.domain);
  service_shell::run_until_stopped([&] {
    const BridgeStats st = bridge.stats();
    return fmt::format("{} clients, {} messages sent, {} dropped", st.clients, st.messages_sent, st.messages_dropped);
  });
  spdlog::info("stopping");
  return 0;
}

int bridge_main(int argc, char** argv) {
  CLI::App app{"shmbus WebSocket bridge: rosbridge v2 and Foxglove clients on the channels and services of a domain",
               "shmbus-bridge"};
  BridgeArgs args;
  add_bridge_options(app, args);
  UplinkOptions uplink_options;
  CLI::App* connect = add_connect_command(app, uplink_options);
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (!args.domain.empty()) args.source.domain = args.domain;
  if (connect->parsed() && uplink_options.exports.empty() && uplink_options.imports.empty()) {
    std::fprintf(stderr, "shmbus-bridge connect: nothing to carry; give --export /a,/b and/or --import /c,/d\n");
    return 2;
  }
  return cli::guarded("shmbus-bridge", [&] {
    const ConfigFile file = ConfigFile::load(args.source);
    const Config& config = file.config();
    BridgeSettings settings = read_bridge_settings(file);
    apply_bridge_args(args, settings);
    spdlog::set_default_logger(service_shell::make_logger("shmbus-bridge", service_shell::stderr_is_journal()));
    cli::install_stop_handlers();
    return connect->parsed() ? run_uplink(config, uplink_options) : run_server(config, settings);
  });
}

}  // namespace
}  // namespace shmbus::bridge

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbus-bridge", [&] { return shmbus::bridge::bridge_main(argc, argv); });
}
