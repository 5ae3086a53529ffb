#include "shmbus/monitor/listing.hpp"

#include <optional>

#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/json.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/types.hpp"

namespace shmbus::monitor {

namespace {

/// Why each channel's stored schema is refused (beyond the schema limits,
/// or malformed), by channel; each type's schema parsed once. Read through
/// the monitor's mappings.
std::map<std::string, std::string> refused_schemas(const Monitor& monitor, const std::vector<ChannelStatus>& channels) {
  std::map<std::string, std::string> out;
  std::map<std::uint64_t, std::string> by_hash;  // "" : parses
  for (const ChannelStatus& c : channels) {
    const std::optional<introspect::ChannelView> view = monitor.view(c.name);
    if (!view || !view->type().carries_schema()) continue;
    const auto [it, fresh] = by_hash.try_emplace(view->type_hash);
    if (fresh) {
      try {
        (void)schema::Schema::from_canonical(view->schema);
      } catch (const schema::SchemaError& e) {
        it->second = e.what();
      }
    }
    if (!it->second.empty()) out[c.name] = it->second;
  }
  return out;
}

}  // namespace

std::vector<ChannelStatus> observe(Monitor& monitor) {
  (void)monitor.scan(mono_now_ns());
  monitor.refresh_statistics();
  return monitor.statuses();
}

Listing list_domain(Monitor& monitor) {
  Listing l;
  l.channels = observe(monitor);
  l.unreadable = monitor.unreadable();
  l.refused = refused_schemas(monitor, l.channels);
  return l;
}

nlohmann::ordered_json Listing::json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ChannelStatus& c : channels) {
    // The level this scan measured: a one-shot listing has no history to
    // debounce (`top` and the daemon show the debounced one).
    out.push_back(channel_json(c, c.observed));
    if (const auto r = refused.find(c.name); r != refused.end()) out.back()["schema_error"] = r->second;
  }
  for (const auto& [name, why] : unreadable) out.push_back(nlohmann::ordered_json{{"name", name}, {"error", why}});
  return out;
}

}  // namespace shmbus::monitor
