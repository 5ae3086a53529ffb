#pragma once
// A channel's status as JSON, one form for every program that shows it:
// `shmtool list --json` and shmbusd's /api/channels (which adds to it).

#include <array>
#include <optional>

#include <nlohmann/json.hpp>

#include "shmbus/monitor/monitor.hpp"

namespace shmbus::monitor {

/// A finite number, or null (NaN: no sample).
nlohmann::ordered_json json_number(double x);

/// [f1, f2, f3], or null without thresholds.
nlohmann::ordered_json thresholds_json(const std::optional<std::array<double, 3>>& t);

/// {name, type, transport, publishers, subscribers, rate_hz, level,
/// messages, lost}: the channel at `level` (a one-shot tool shows the
/// level it measured, the daemon the debounced one).
nlohmann::ordered_json channel_json(const ChannelStatus& c, Level level);

}  // namespace shmbus::monitor
