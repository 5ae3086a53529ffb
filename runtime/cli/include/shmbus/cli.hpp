#pragma once
// Command-line parsing with the project's exit codes: --help prints and
// exits 0; a usage error prints one line naming the fix and exits 2 (CLI11's
// own exit codes are 100+).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

namespace shmbus::cli {

/// Parses; returns the exit code to leave with, or nullopt to go on.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s; see %s --help\n", app.get_name().c_str(), e.what(), app.get_name().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace shmbus::cli
