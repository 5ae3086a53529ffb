#pragma once
// A script of tests/js run by Node.js (the npm clients other ecosystems
// use: Foxglove's readers and writers, @mcap/core), its stdout parsed as
// JSON. A script that fails, or prints no JSON, fails the test.

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace shmbus::test {

/// Runs `cmd` (a shell command line); its stdout as JSON, or an empty
/// object after a test failure.
inline nlohmann::json run_json_command(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "cannot run " << cmd;
    return nlohmann::json::object();
  }
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd << "\n" << out;
  if (rc != 0) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << "not a JSON report: " << out;
    return nlohmann::json::object();
  }
}

/// `node tests/js/SCRIPT ARG` (SHMBUS_SOURCE_DIR's); its stdout as JSON,
/// or an empty object after a test failure.
inline nlohmann::json run_node_script(const std::string& script, const std::string& arg) {
  return run_json_command("node " + std::string(SHMBUS_SOURCE_DIR) + "/tests/js/" + script + " " + arg);
}

}  // namespace shmbus::test
