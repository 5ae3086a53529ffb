#pragma once
// A channel's status as JSON, one form for every program that shows it:
// `shmtool list --json` and shmbusd's /api/channels and page events (which
// add to it). Written as text, without a document in between: the daemon
// writes a thousand channels several times a second.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shmbus/monitor/monitor.hpp"

namespace shmbus::monitor {

/// A finite number, or null (NaN: no sample).
nlohmann::ordered_json json_number(double x);

/// [f1, f2, f3], or null without thresholds.
nlohmann::ordered_json thresholds_json(const std::optional<std::array<double, 3>>& t);

/// Appends `s` as a JSON string (quoted and escaped; bytes that are not
/// UTF-8 replaced, never thrown on).
void write_json_string(std::string& out, std::string_view s);
/// Appends a finite number in its shortest exact form, or null.
void write_json_number(std::string& out, double x);

/// Appends the members {name, type, transport, publishers, subscribers,
/// rate_hz, level, messages, lost} of the channel at `level`, without the
/// braces, so a caller may add its own.
void write_channel_members(std::string& out, const ChannelStatus& c, Level level);

/// The same as one JSON object (a one-shot tool shows the level it
/// measured, the daemon the debounced one).
nlohmann::ordered_json channel_json(const ChannelStatus& c, Level level);

}  // namespace shmbus::monitor
