// Command-line parsing with the project's exit codes (shmbus/cli.hpp).
#include "shmbus/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace shmbus::cli {

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  if (app.get_version_ptr() == nullptr) app.set_version_flag("--version", std::string{SHMBUS_VERSION});
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s; see %s --help\n", app.get_name().c_str(), e.what(), app.get_name().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace shmbus::cli
