#pragma once
// Whether shmbusd watches a domain, and where its web page is: for the
// programs that point a person at it (shmtool, the demo).

#include <cstdint>
#include <optional>
#include <string>

#include "shmbus/config.hpp"

namespace shmbus::monitor {

struct DaemonInfo {
  std::int32_t pid = 0;
  std::string web;  ///< the page's address ("http://127.0.0.1:9464/"), "" when it serves none
};

/// The shmbusd of `config.domain`: the live publisher of its alerts
/// channel, and the address it published on /shmbus/web (read with a
/// subscriber that takes the last message). nullopt when none runs.
std::optional<DaemonInfo> find_daemon(const Config& config);

}  // namespace shmbus::monitor
