#pragma once
// systemd-analyze verify of one of config/'s units, its ExecStart pointed at
// the built program.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace shmbus::test {

/// What `systemd-analyze verify` says of config/`unit` (empty: nothing to
/// complain about) once `installed_path` in it is replaced by `built_path`;
/// "systemd-analyze missing..." when it is not there.
inline std::string verify_unit(const std::string& unit, const std::string& installed_path,
                               const std::string& built_path) {
  namespace fs = std::filesystem;
  if (std::system("command -v systemd-analyze >/dev/null") != 0) {  // NOLINT(concurrency-mt-unsafe)
    return "systemd-analyze missing: run scripts/install-deps.sh";
  }
  const fs::path dir = fs::temp_directory_path() / ("unit_" + std::to_string(::getpid()) + "_" + unit);
  fs::create_directories(dir);
  const std::string cmd = "sed 's|" + installed_path + "|" + built_path + "|' " + SHMBUS_SOURCE_DIR + "/config/" +
                          unit + " > " + (dir / unit).string() + " && systemd-analyze verify " + (dir / unit).string() +
                          " > " + (dir / "out.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());  // NOLINT(concurrency-mt-unsafe)
  std::ifstream out(dir / "out.txt");
  std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  if (rc != 0 && text.empty()) text = "systemd-analyze verify failed (exit status " + std::to_string(rc) + ")";
  fs::remove_all(dir);
  return text;
}

}  // namespace shmbus::test
