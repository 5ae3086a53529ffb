// shmbusd's command line: the configuration, its overrides, and the
// classic daemon's detach. The monitor is the library (shmbus/shmbusd/daemon.hpp).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shmbus/cli.hpp"
#include "shmbus/error.hpp"
#include "shmbus/iceoryx.hpp"
#include "shmbus/monitor/config_report.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/shmbusd/daemon.hpp"

namespace shmbus::shmbusd {
namespace {

int daemon_main(int argc, char** argv) {
  CLI::App app{"shmbus monitoring daemon: frequencies, alerts and statistics of every channel", "shmbusd"};
  Options options;
  std::string check;
  std::string domain;
  std::string listen;
  app.add_option("-c,--config", options.source.path, "configuration file (default: SHMBUS_CONFIG)");
  app.add_option("--domain", domain, "domain to watch (overrides the file and SHMBUS_DOMAIN)");
  app.add_option("--metrics-listen", listen, "ADDRESS:PORT for /metrics, /healthz and the web page, or off");
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding the token HTTP clients must present (Bearer, or ?token= in the page's address)");
  std::string tls_cert;
  std::string tls_key;
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain: serve https:// and wss:// only (with --tls-key)");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
  app.add_option("--check-config", check, "validate FILE, print the effective settings, exit 0 or 2");
  app.add_flag("--foreground", options.foreground, "stay in the foreground (systemd runs it so anyway)");
  app.add_flag("--roudi", options.roudi,
               "run iceoryx's RouDi (iox-roudi) for the iceoryx channels, pools sized from the configuration");
  bool print_roudi_config = false;
  app.add_flag("--roudi-config", print_roudi_config,
               "print the RouDi configuration (iox-roudi -c) derived from the configuration, exit");
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (!domain.empty()) options.source.domain = domain;
  if (!listen.empty()) options.metrics_listen = listen;
  if (!token_file.empty()) options.token_file = token_file;
  if (!tls_cert.empty()) options.tls_cert = tls_cert;
  if (!tls_key.empty()) options.tls_key = tls_key;
  return cli::guarded("shmbusd", [&] {
    if (print_roudi_config) {
      std::fputs(iceoryx::roudi_config(load_config(options).config).c_str(), stdout);
      return 0;
    }
    if (!check.empty()) {
      Options o = options;
      o.source.path = check;
      const monitor::MonitorConfig c = load_config(o);
      check_config_files(c);
      std::fputs(monitor::describe_config(c).c_str(), stdout);
      for (const std::string& w : monitor::config_warnings(c.config)) std::fprintf(stderr, "%s\n", w.c_str());
      return 0;
    }
    // Before any thread starts, so every thread inherits the mask.
    block_loop_signals();
    bool to_journal = service_shell::stderr_is_journal();
    if (!options.foreground && !to_journal &&
        std::getenv("NOTIFY_SOCKET") == nullptr) {  // NOLINT(concurrency-mt-unsafe)
      // Classic daemon: detach from the terminal; logs go to the journal.
      if (::daemon(0, 0) != 0) throw Error(Errc::kResource, "cannot detach into the background (daemon(3) failed)");
      to_journal = true;
    }
    return run(options, to_journal);
  });
}

}  // namespace
}  // namespace shmbus::shmbusd

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbusd", [&] { return shmbus::shmbusd::daemon_main(argc, argv); });
}
