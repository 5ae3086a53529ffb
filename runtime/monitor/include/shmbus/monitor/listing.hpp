#pragma once
/// @file listing.hpp
/// What `shmtool list` shows of a domain, from one scan: every channel's
/// status, the channels that cannot be read (with why), and the channels
/// whose stored schema is refused. Its JSON is `shmtool list --json` and the
/// Python package's `shmbus.channels()`.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shmbus/monitor/monitor.hpp"

namespace shmbus::monitor {

struct Listing {
  std::vector<ChannelStatus> channels;
  std::map<std::string, std::string> unreadable;  ///< channel -> why
  std::map<std::string, std::string> refused;     ///< channel -> why its stored schema is refused
  /// One object per channel (channel_json, at the level this scan measured,
  /// with "schema_error" where refused), then {name, error} per unreadable
  /// channel.
  [[nodiscard]] nlohmann::ordered_json json() const;
};

/// One scan of the whole domain, as shmbusd would see it now: every
/// channel's status, statistics refreshed.
std::vector<ChannelStatus> observe(Monitor& monitor);

/// One scan of `monitor`'s domain (an observer's: nothing is written).
Listing list_domain(Monitor& monitor);

}  // namespace shmbus::monitor
