#pragma once
// A self-signed certificate for the TLS tests, made by openssl.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>

#include "multiprocess/child_process.hpp"

namespace shmbus::test {

/// A self-signed certificate for localhost and 127.0.0.1 (its own
/// authority), dir/cert.pem, and its key, dir/key.pem.
inline void make_certificate(const std::filesystem::path& dir) {
  ChildProcess openssl(
      {"/usr/bin/env", "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout",
       (dir / "key.pem").string(), "-out", (dir / "cert.pem").string()},
      true);
  const int status = openssl.wait(std::chrono::seconds(20));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "openssl req: " << openssl.output() << " (openssl missing? run scripts/install-deps.sh)";
}

}  // namespace shmbus::test
