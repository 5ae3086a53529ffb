#include "shmbus/monitor/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

namespace shmbus::monitor {

nlohmann::ordered_json json_number(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json thresholds_json(const std::optional<std::array<double, 3>>& t) {
  return t ? nlohmann::ordered_json::array({(*t)[0], (*t)[1], (*t)[2]}) : nlohmann::ordered_json(nullptr);
}

void write_json_string(std::string& out, std::string_view s) {
  // Names are mostly printable ASCII: quoted as they are. Anything else
  // (escapes, UTF-8, bad bytes) goes through nlohmann's serializer.
  const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
  out += nlohmann::json(std::string{s}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_json_number(std::string& out, double x) {
  if (std::isfinite(x)) {
    const std::size_t start = out.size();
    fmt::format_to(std::back_inserter(out), "{}", x);
    // A float stays a float to a reader (20.0, not 20), as nlohmann writes it.
    if (out.find_first_of(".e", start) == std::string::npos) out += ".0";
  } else {
    out += "null";
  }
}

void write_channel_members(std::string& out, const ChannelStatus& c, Level level) {
  out += "\"name\":";
  write_json_string(out, c.name);
  out += ",\"type\":";
  write_json_string(out, c.type_name);
  fmt::format_to(std::back_inserter(out),
                 ",\"transport\":\"{}\",\"publishers\":{},\"subscribers\":{},\"rate_hz\":", to_string(c.transport),
                 c.publishers, c.subscribers);
  write_json_number(out, c.measure.frequency_hz);
  fmt::format_to(std::back_inserter(out), ",\"level\":\"{}\",\"messages\":{},\"lost\":{}", to_string(level), c.messages,
                 c.lost);
}

nlohmann::ordered_json channel_json(const ChannelStatus& c, Level level) {
  std::string text = "{";
  write_channel_members(text, c, level);
  text += "}";
  return nlohmann::ordered_json::parse(text);
}

}  // namespace shmbus::monitor
