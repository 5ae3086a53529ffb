#include "common.hpp"

#include "commands.hpp"

#include <time.h>

#include <fmt/format.h>

#include <cerrno>

#include "shmbus/config_file.hpp"
#include "shmbus/error.hpp"
#include "shmbus/schema/json_input.hpp"

namespace shmbus::tool {

ConfigSource config_source(const Globals& g) { return ConfigSource{g.config_path, g.domain}; }

Config load_config(const Globals& g) { return ConfigFile::load(config_source(g)).config(); }

monitor::MonitorConfig load_monitor_config(const Globals& g) { return monitor::load_monitor_config(config_source(g)); }

introspect::ChannelReader open_channel(const Config& config, std::string_view channel) {
  try {
    return introspect::ChannelReader(config.domain, channel, false, config.access());
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
    throw Error(Errc::kNotFound,
                fmt::format("channel {} not found in domain \"{}\"; `shmtool list --domain {}` shows its channels",
                            channel, config.domain, config.domain));
  }
}

namespace {

/// The one line a command says while it waits for a channel.
void say_waiting(const Config& config, std::string_view channel) {
  std::fprintf(stderr, "waiting for %.*s to appear in domain \"%s\"\n", static_cast<int>(channel.size()),
               channel.data(), config.domain.c_str());
}

}  // namespace

std::optional<introspect::ChannelReader> await_channel(const Config& config, std::string_view channel, bool no_wait) {
  if (no_wait) return open_channel(config, channel);
  bool said = false;
  while (!stop_requested()) {
    try {
      return introspect::ChannelReader(config.domain, channel, false, config.access());
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
    }
    if (!said) {
      say_waiting(config, channel);
      said = true;
    }
    sleep_until(mono_now_ns() + 20'000'000);
  }
  return std::nullopt;
}

Subscriber subscribe_reader(const Config& config, Context& context, std::string_view channel, bool no_wait,
                            SubscriberOptions options) {
  if (no_wait) (void)open_channel(config, channel);  // the line that says where to look
  options.wait_for_channel = !no_wait;
  return Subscriber(channel, std::nullopt, context, options);
}

bool await_attached(const Config& config, const std::vector<Subscriber*>& subscribers) {
  for (Subscriber* sub : subscribers) {
    if (sub->attach()) continue;
    say_waiting(config, sub->channel());
    while (!sub->attach()) {
      if (stop_requested()) return false;
      sleep_until(mono_now_ns() + 10'000'000);
    }
  }
  return !stop_requested();
}

std::optional<schema::Schema> schema_of(const introspect::ChannelView& view) { return schema::Schema::of(view.type()); }

ProvenanceNames::ProvenanceNames(const Config& config, std::string_view channel)
    : domain_(config.domain), access_(config.access()) {
  try {
    reader_.emplace(domain_, channel, false, access_);
  } catch (const Error&) {
    // Gone already: publishers show without a node.
  }
}

const std::string& ProvenanceNames::channel(std::uint32_t registry_index) {
  auto it = channels_.find(registry_index);
  if (it != channels_.end()) return it->second;
  std::optional<std::string> name;
  try {
    if (!domain_view_) domain_view_.emplace(domain_, access_);
    name = domain_view_->channel_name(registry_index);
  } catch (const Error&) {
    // No registry: the index is all there is.
  }
  return channels_.emplace(registry_index, name.value_or(fmt::format("#{}", registry_index))).first->second;
}

const std::string& ProvenanceNames::node(std::uint32_t publisher_id) {
  auto it = nodes_.find(publisher_id);
  if (it != nodes_.end()) return it->second;
  if (reader_) {
    for (const introspect::EndpointView& ep : reader_->view().publishers) nodes_.emplace(ep.id, ep.node);
  }
  return nodes_.emplace(publisher_id, std::string{}).first->second;
}

schema::Json ProvenanceNames::inputs_json(const MessageInfo& info) {
  schema::Json inputs = schema::Json::array();
  for (const Provenance& in : info.inputs()) {
    inputs.push_back(
        {{"channel", channel(in.channel_index)}, {"sequence", in.sequence}, {"inputs", schema::Json::array()}});
  }
  for (const Provenance& second : info.second_level()) {
    if (second.via >= inputs.size()) continue;
    inputs[second.via]["inputs"].push_back({{"channel", channel(second.channel_index)}, {"sequence", second.sequence}});
  }
  return inputs;
}

std::string ProvenanceNames::inputs_text(const MessageInfo& info) {
  std::string out;
  const auto second = info.second_level();
  for (std::size_t i = 0; i < info.inputs().size(); ++i) {
    const Provenance& in = info.inputs()[i];
    if (!out.empty()) out += ", ";
    out += fmt::format("{}#{}", channel(in.channel_index), in.sequence);
    std::string parents;
    for (const Provenance& p : second) {
      if (p.via != i) continue;
      if (!parents.empty()) parents += ", ";
      parents += fmt::format("{}#{}", channel(p.channel_index), p.sequence);
    }
    if (!parents.empty()) out += fmt::format(" ({})", parents);
  }
  return out;
}

}  // namespace shmbus::tool

namespace shmbus::tool {

Context make_context(const Config& config) {
  Config c = config;
  if (c.node.empty()) c.node = "shmtool";
  return Context(std::move(c));
}

schema::Json message_from_json_text(const schema::Schema& schema, const std::string& text, std::string_view what) {
  if (text.empty()) return schema.with_defaults(schema::Json::object());
  schema::Json data;
  try {
    data = schema::parse_json(text);
  } catch (const schema::JsonInputError& e) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("{} is not JSON ({}); quote it for the shell, e.g. '{{\"x\": 1.5}}'", what, e.what()));
  }
  if (!data.is_object()) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("{} must be a JSON object of {}'s fields, e.g. '{{\"{}\": ...}}'", what, schema.root().name,
                            schema.root().fields.empty() ? "x" : schema.root().fields.front().name));
  }
  return schema.with_defaults(data);
}

RecordingInput::RecordingInput(const Globals& g, const std::string& path, std::string_view verb, bool import)
    : recording_(path, rosbag2::Options{g.msg_paths, {}, import}) {
  for (const std::string& n : recording_.notes()) fmt::print(stderr, "{}: {}\n", verb, n);
}

std::string seconds_text(double s) { return fmt::format("{:g} s", s); }

}  // namespace shmbus::tool
