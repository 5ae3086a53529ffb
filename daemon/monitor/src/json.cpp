#include "shmbus/monitor/json.hpp"

#include <cmath>
#include <string>

namespace shmbus::monitor {

nlohmann::ordered_json json_number(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json thresholds_json(const std::optional<std::array<double, 3>>& t) {
  return t ? nlohmann::ordered_json::array({(*t)[0], (*t)[1], (*t)[2]}) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json channel_json(const ChannelStatus& c, Level level) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["type"] = c.type_name;
  j["transport"] = std::string{to_string(c.transport)};
  j["publishers"] = c.publishers;
  j["subscribers"] = c.subscribers;
  j["rate_hz"] = json_number(c.measure.frequency_hz);
  j["level"] = to_string(level);
  j["messages"] = c.messages;
  j["lost"] = c.lost;
  return j;
}

}  // namespace shmbus::monitor
