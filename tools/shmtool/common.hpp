#pragma once
// What every shmtool command shares: the global options and the
// configuration they select, Ctrl-C handling, the message-type catalog and
// opening a channel with an error that says how to find the right one.

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/cli.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/config.hpp"
#include "shmbus/config_source.hpp"
#include "shmbus/context.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/settings.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/types.hpp"

namespace shmbus::tool {

/// Options every command takes.
struct Globals {
  std::optional<std::string> domain;   ///< --domain, else SHMBUS_DOMAIN, else the file's, else "default"
  std::string config_path;             ///< --config, else SHMBUS_CONFIG, else the embedded default
  std::vector<std::string> msg_paths;  ///< --msg-path roots of <package>/<Name>.msg, then SHMBUS_MSG_PATH
  bool json = false;                   ///< --json
};

/// Where the global options say the configuration is (--config, --domain).
ConfigSource config_source(const Globals& g);
/// The configuration the global options select (ConfigFile, so every
/// program reads a file the same way). Throws Error(kConfig).
Config load_config(const Globals& g);
/// The same with shmbusd's [monitor] section, for the commands that measure.
monitor::MonitorConfig load_monitor_config(const Globals& g);

/// SIGINT and SIGTERM request a stop, so a command leaves through its
/// destructors and unregisters its endpoints.
using cli::install_stop_handlers;
using cli::stop_requested;

/// Opens `channel` for reading; a missing one is Error(kNotFound) that says
/// where to look.
introspect::ChannelReader open_channel(const Config& config, std::string_view channel);
/// open_channel(), for commands that subscribe: with `no_wait` false, an
/// absent channel is waited for (processes start in any order), saying so
/// once on stderr. nullopt when Ctrl-C came first.
std::optional<introspect::ChannelReader> await_channel(const Config& config, std::string_view channel, bool no_wait);

/// A subscriber to `channel` for commands that read messages. With
/// `no_wait` a missing channel is open_channel()'s Error(kNotFound);
/// without, an absent channel is subscribed to as it waits (attach with
/// await_attached()), and a channel that appears later is read from its
/// first message: nothing published after the command started is skipped
/// (what its ring no longer holds is counted lost).
Subscriber subscribe_reader(const Config& config, Context& context, std::string_view channel, bool no_wait,
                            SubscriberOptions options = {});
/// Attaches each subscriber whose channel does not exist yet as it
/// appears, saying once on stderr what it waits for. False when Ctrl-C
/// came first.
bool await_attached(const Config& config, const std::vector<Subscriber*>& subscribers);

/// The schema a channel stores, or nullopt for raw (`shmbus/Bytes`) and
/// schema-less channels (schema::Schema::of for a TypeInfo).
std::optional<schema::Schema> schema_of(const introspect::ChannelView& view);

/// A context for commands that publish or subscribe: the node is "shmtool"
/// unless the configuration names one.
Context make_context(const Config& config);

/// A duration in seconds as the messages say it ("5 s", "0.25 s").
std::string seconds_text(double s);

/// A message of `schema` as JSON: `text` (a JSON object, possibly empty)
/// merged onto an all-zero message, so fields left out are zero. A bad
/// text is Error(kInvalidArgument) naming `what` (DATA, REQUEST).
schema::Json message_from_json_text(const schema::Schema& schema, const std::string& text, std::string_view what);

/// Names for what a message's provenance cites, for echo: channels by
/// registry index, and the node of each publisher of one channel. Lookups
/// are cached; an unknown publisher id re-reads the channel's endpoints.
class ProvenanceNames {
 public:
  ProvenanceNames(const Config& config, std::string_view channel);
  /// The channel at `registry_index`, or "#N" when the registry no longer
  /// lists it.
  const std::string& channel(std::uint32_t registry_index);
  /// The node of publisher `id` of our channel ("" when it is gone).
  const std::string& node(std::uint32_t publisher_id);
  /// `info`'s inputs as JSON: [{channel, sequence, inputs: [{channel,
  /// sequence}]}], the second level under the input it fed.
  schema::Json inputs_json(const MessageInfo& info);
  /// The same on one line: "/a#3 (/b#7, /c#1), /d#9".
  std::string inputs_text(const MessageInfo& info);

 private:
  std::string domain_;
  SegmentAccess access_;
  std::optional<introspect::DomainView> domain_view_;
  std::optional<introspect::ChannelReader> reader_;
  std::map<std::uint32_t, std::string> channels_;
  std::map<std::uint32_t, std::string> nodes_;
};

}  // namespace shmbus::tool
