// shmtool: inspect and drive a shmbus domain from a terminal.
//
//   shmtool list | info CH | echo CH | hz CH | pub CH | stats [CH] | alerts | top | clean
//
// Exit codes: 0 ok, 1 runtime failure, 2 bad usage or configuration,
// 3 channel not found; every failure is one line on stderr.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "commands.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/error.hpp"

using namespace shmbus::tool;

namespace {

const CLI::Validator kPositiveSeconds(
    [](std::string& text) -> std::string {
      try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size() && v > 0 && std::isfinite(v)) return {};
      } catch (const std::exception&) {
        // not a number: the message below
      }
      return "must be a number of seconds > 0, not '" + text + "'";
    },
    "SECONDS>0");

/// The first word that is not a global option, when it names no command:
/// CLI11 would only say that a command is required.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--domain" || a == "--config" || a == "--msg-path") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == a) return std::nullopt;
    }
    return a;
  }
  return std::nullopt;
}

int run(int argc, char** argv) {
  CLI::App app{"Inspect and drive a shmbus domain: channels, rates, alerts, messages.", "shmtool"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the command too
  Globals g;
  app.add_option("--domain", g.domain, "Domain (default: SHMBUS_DOMAIN, else the configuration's, else 'default')");
  app.add_option("--config", g.config_path, "Configuration file (default: SHMBUS_CONFIG, else the embedded one)");
  app.add_option("--msg-path", g.msg_paths,
                 "Directory of <package>/<Name>.msg definitions (repeatable; also "
                 "SHMBUS_MSG_PATH)");

  const auto json_flag = [&](CLI::App* c) { return c->add_flag("--json", g.json, "Print JSON for scripts"); };

  CLI::App* list = app.add_subcommand("list", "One row per channel: type, endpoints, rate, level, counters");
  json_flag(list);

  std::string channel;
  CLI::App* info = app.add_subcommand("info", "Everything about one channel");
  info->add_option("CHANNEL", channel, "Channel name, e.g. /imu")->required();
  json_flag(info);

  EchoOptions echo_o;
  CLI::App* echo = app.add_subcommand("echo", "Print messages, decoded through the channel's schema");
  echo->add_option("CHANNEL", echo_o.channel, "Channel name")->required();
  echo->add_option("-n,--count", echo_o.count, "Stop after N messages (default: until Ctrl-C)");
  CLI::Option* echo_json = json_flag(echo);
  echo->add_flag("--hex", echo_o.hex, "Print payloads as hex instead of decoding")->excludes(echo_json);
  echo->add_flag("--no-header", echo_o.no_header, "Print only the payloads");
  echo->add_option("--history", echo_o.history, "Show up to N messages already in the ring first");
  echo->add_flag("--no-wait", echo_o.no_wait, "Exit 3 if the channel does not exist (default: wait for it)");

  HzOptions hz_o;
  CLI::App* hz = app.add_subcommand("hz", "Rate and period statistics from the time list, without subscribing");
  hz->add_option("CHANNEL", hz_o.channel, "Channel name")->required();
  hz->add_option("--window", hz_o.window_s, "Window in seconds (default: the channel's configured window)")
      ->check(kPositiveSeconds);
  hz->add_option("--interval", hz_o.interval_s, "Seconds between reports")->check(kPositiveSeconds);
  hz->add_option("-n,--reports", hz_o.reports, "Stop after N reports (default: until Ctrl-C)");
  hz->add_flag("--no-wait", hz_o.no_wait, "Exit 3 if the channel does not exist (default: wait for it)");
  json_flag(hz);

  PubOptions pub_o;
  bool once = false;
  CLI::App* pub = app.add_subcommand("pub", "Publish JSON through a schema (or raw bytes) at an exact rate");
  pub->add_option("CHANNEL", pub_o.channel, "Channel name")->required();
  pub->add_option("DATA", pub_o.data,
                  "JSON object of the fields to set (others are zero); hex bytes for a raw channel");
  CLI::Option* type_opt =
      pub->add_option("--type", pub_o.type, "Message type package/Name (default: the existing channel's)");
  pub->add_option("--raw-size", pub_o.raw_size, "Publish raw messages of BYTES bytes (type shmbus/Bytes)")
      ->excludes(type_opt);
  pub->add_option("--rate", pub_o.rate_hz, "Messages per second (default 1)");
  CLI::Option* count_opt = pub->add_option("--count", pub_o.count, "Stop after N messages (default: until Ctrl-C)");
  pub->add_flag("--once", once, "Publish one message and exit")->excludes(count_opt);
  pub->add_flag("--stamp", pub_o.stamp, "Set header.stamp_ns (wall clock) and header.seq in every message");

  StatsOptions stats_o;
  CLI::App* stats = app.add_subcommand("stats", "Period statistics per channel, received and lost per subscriber");
  stats->add_option("CHANNEL", stats_o.channel, "Only this channel");
  json_flag(stats);

  CLI::App* alerts = app.add_subcommand("alerts", "The level of each monitored channel, its rate and thresholds");
  json_flag(alerts);

  TopOptions top_o;
  CLI::App* top = app.add_subcommand("top", "A live table of all channels; q quits");
  top->add_option("--interval", top_o.interval_s, "Seconds between refreshes")->check(kPositiveSeconds);
  top->add_option("--sort", top_o.sort, "Sort by rate, level or name")->check(CLI::IsMember({"rate", "level", "name"}));
  top->add_option("-n,--iterations", top_o.iterations, "Stop after N refreshes (default: until q or Ctrl-C)");

  SyncOptions sync_o;
  CLI::App* sync = app.add_subcommand("sync", "Align several channels into sets with a bounded time disparity");
  sync->add_option("NAME", sync_o.name, "A [[sync]] entry of the configuration (options below override it)");
  sync->add_option("--inputs", sync_o.inputs, "Input channels, comma-separated (2 to 8)")->delimiter(',');
  sync->add_option("--policy", sync_o.policy, "bounded (default), exact, approximate or latest");
  sync->add_option("--threshold", sync_o.threshold, "Largest disparity of a set, e.g. 10ms (bounded: required)");
  sync->add_option("--output", sync_o.output, "Channel the sets go to (shmbus_msgs/SyncSet)");
  sync->add_option("--stamp-field", sync_o.stamp_field,
                   "Timestamp field of the inputs, e.g. header.stamp_ns (default: the publish time)");
  sync->add_option("--queue-size", sync_o.queue_size, "Messages kept per input (default 64)");
  sync->add_option("--master", sync_o.master, "latest: the input that triggers a set (default: the first)");
  sync->add_option("-n,--count", sync_o.count, "Stop after N sets (default: until Ctrl-C)");
  sync->add_flag("--no-wait", sync_o.no_wait, "Exit 3 if an input does not exist (default: wait for it)");

  bool dry_run = false;
  CLI::App* clean = app.add_subcommand("clean", "Remove the domain's segments no live process uses");
  clean->add_flag("--dry-run", dry_run, "Only say what would be removed");
  json_flag(clean);

  if (const auto bad = unknown_command(app, argc, argv)) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
    std::fprintf(stderr, "shmtool: unknown command '%s'; the commands are %s; see shmtool --help\n", bad->c_str(),
                 names.c_str());
    return 2;
  }
  if (const auto code = shmbus::cli::parse(app, argc, argv)) return *code;
  if (once) pub_o.count = 1;

  return shmbus::cli::guarded("shmtool", [&] {
    if (list->parsed()) return run_list(g);
    if (info->parsed()) return run_info(g, channel);
    if (echo->parsed()) return run_echo(g, echo_o);
    if (hz->parsed()) return run_hz(g, hz_o);
    if (pub->parsed()) return run_pub(g, pub_o);
    if (stats->parsed()) return run_stats(g, stats_o);
    if (alerts->parsed()) return run_alerts(g);
    if (top->parsed()) return run_top(g, top_o);
    if (clean->parsed()) return run_clean(g, dry_run);
    if (sync->parsed()) return run_sync(g, sync_o);
    return 2;
  });
}

}  // namespace

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmtool", [&] { return run(argc, argv); });
}
