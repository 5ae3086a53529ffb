#pragma once
// Prometheus text exposition (format 0.0.4) of the monitor's state.

#include <cstdint>
#include <string>
#include <vector>

#include "shmbus/monitor/monitor.hpp"

namespace shmbus::shmbusd {

using monitor::ChannelStatus;

/// The daemon's own figures.
struct DaemonFigures {
  double last_scan_seconds = 0;
  std::uint64_t scans = 0;
  std::uint64_t transitions = 0;
  std::uint64_t webhook_failures = 0;
  std::uint64_t web_streams = 0;         ///< event streams (open pages)
  std::uint64_t web_events_skipped = 0;  ///< updates a slow page did not get
};

/// Renders every metric of every channel, labelled with domain and channel.
std::string render_metrics(const std::string& domain, const std::vector<ChannelStatus>& channels,
                           const DaemonFigures& daemon);

}  // namespace shmbus::shmbusd
