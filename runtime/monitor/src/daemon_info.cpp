#include "shmbus/monitor/daemon_info.hpp"

#include "shmbus/bus_channels.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/String.hpp"

namespace shmbus::monitor {

namespace {

/// The pid of a live publisher of `channel`, if any.
std::optional<std::int32_t> live_publisher(const Config& config, const char* channel) {
  try {
    const introspect::ChannelView v = introspect::ChannelReader(config.domain, channel, false, config.access()).view();
    for (const auto& p : v.publishers) {
      if (p.alive) return p.pid;
    }
  } catch (const Error&) {
    // no such channel: the daemon never ran in this domain (or serves no page)
  }
  return std::nullopt;
}

}  // namespace

std::optional<DaemonInfo> find_daemon(const Config& config) {
  const auto pid = live_publisher(config, kAlertsChannel);
  if (!pid) return std::nullopt;
  DaemonInfo info{*pid, {}};
  if (live_publisher(config, kWebChannel) != pid) return info;
  try {
    Context context(config);
    TypedSubscriber<shmbus_msgs::String> web(kWebChannel, context, SubscriberOptions{.history = 1});
    while (const auto m = web.take()) info.web = std::string{m->data.view()};
  } catch (const Error&) {
    // gone meanwhile, or another type: no page to name
  }
  return info;
}

}  // namespace shmbus::monitor
