// The bridge's state on its network thread: the bus reader, the outlets
// the sessions share, the services it calls and the channels its clients
// created (hub.hpp).
#include <fmt/format.h>
#include <fnmatch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string>

#include "hub.hpp"
#include "session.hpp"
#include "shmbus/names.hpp"
#include "shmbus/service_shell.hpp"

namespace shmbus::bridge {

namespace {

Config with_node(Config c) {
  if (c.node.empty()) c.node = "shmbus-bridge";
  return c;
}

}  // namespace

Hub::Hub(const Config& c, BridgeSettings bridge_settings, asio::io_context& context_io)
    : config_(with_node(c)),
      settings_(std::move(bridge_settings)),
      io_(context_io),
      context_(config_),
      token_(service_shell::read_token(settings_.token_file)),
      catalog_(config_.domain, config_.access()),
      types_(settings_.msg_path),
      services_(std::make_unique<ServiceCaller>(context_)) {}

void Hub::start_reader() {
  reader_ =
      std::make_unique<BusReader>(context_, [this](std::shared_ptr<const OutMessage> message, std::vector<Sink> sinks) {
        // To the network thread, where the sessions live. What waits there
        // is bounded in bytes: a network thread that falls behind (a client
        // that asks for much work per message) drops, counted, instead of
        // queueing without end.
        std::size_t bytes = 0;
        for (const auto& e : message->encoded) bytes += e ? e->size() : 0;
        if (in_flight_bytes_.load(std::memory_order_relaxed) + bytes > kMaxInFlightBytes) {
          counters_.messages_dropped.fetch_add(sinks.size(), std::memory_order_relaxed);
          return;
        }
        // Relaxed, here and in the handler's fetch_sub: a byte count that
        // bounds, synchronizing nothing (the message itself reaches the
        // network thread through asio::post, which orders it).
        in_flight_bytes_.fetch_add(bytes, std::memory_order_relaxed);
        asio::post(io_, [this, bytes, message = std::move(message), sinks = std::move(sinks)] {
          in_flight_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
          for (const Sink& s : sinks) {
            if (auto session = s.session.lock()) session->deliver(*message, s.key);
          }
        });
      });
}

void Hub::stop() {
  reader_.reset();    // no more dispatches
  services_.reset();  // its workers finish their calls
}

void Hub::join(Session& session) { sessions_.insert(&session); }

void Hub::leave(Session& session) {
  sessions_.erase(&session);
  if (reader_) reader_->remove_all(&session);
}

void Hub::subscribe(const ChannelEntry& channel, Sink sink, bool from_first) {
  reader_->add(channel, std::move(sink), from_first);
}

void Hub::unsubscribe(const std::string& channel, const Session* owner, std::uint64_t key) {
  reader_->remove(channel, owner, key);
}

void Hub::shutdown_sessions() {
  const std::vector<Session*> all(sessions_.begin(), sessions_.end());
  for (Session* s : all) s->shutdown();
}

BridgeStats Hub::stats() const noexcept {
  BridgeStats s;
  s.connections_refused = counters_.connections_refused.load(std::memory_order_relaxed);
  s.messages_sent = counters_.messages_sent.load(std::memory_order_relaxed);
  s.messages_dropped = counters_.messages_dropped.load(std::memory_order_relaxed);
  s.messages_published = counters_.messages_published.load(std::memory_order_relaxed);
  s.ops_refused = counters_.ops_refused.load(std::memory_order_relaxed);
  s.bus_messages = reader_ ? reader_->taken() : 0;
  s.bus_lost = reader_ ? reader_->lost() : 0;
  s.service_calls = counters_.service_calls.load(std::memory_order_relaxed);
  s.service_failures = counters_.service_failures.load(std::memory_order_relaxed);
  return s;
}

bool Hub::allowed(std::string_view name) const {
  const std::string n{name};
  const auto matches = [&](const std::string& glob) { return glob == n || ::fnmatch(glob.c_str(), n.c_str(), 0) == 0; };
  const auto& b = settings_;
  if (!b.allow.empty() && std::none_of(b.allow.begin(), b.allow.end(), matches)) return false;
  return std::none_of(b.deny.begin(), b.deny.end(), matches);
}

void Hub::refresh() {
  std::vector<const ChannelEntry*> added;
  std::vector<ChannelEntry> removed;
  if (!catalog_.refresh(added, removed)) return;
  std::vector<std::shared_ptr<Session>> all;
  all.reserve(sessions_.size());
  for (Session* s : sessions_) all.push_back(s->shared_from_this());
  for (const auto& s : all) s->channels_changed(added, removed);
}

void Hub::services_tick() {
  std::vector<std::shared_ptr<Session>> all;
  all.reserve(sessions_.size());
  for (Session* s : sessions_) all.push_back(s->shared_from_this());
  for (const auto& s : all) s->services_tick();
}

void Hub::graph_tick() {
  std::vector<std::shared_ptr<Session>> watchers;
  for (Session* s : sessions_) {
    if (s->wants_graph()) watchers.push_back(s->shared_from_this());
  }
  if (watchers.empty()) return;
  const BusGraph graph = bus_graph(catalog_, [this](std::string_view name) { return allowed(name); });
  for (const auto& s : watchers) s->graph_now(graph);
}

std::optional<std::string> Hub::call_service(const std::string& service, const schema::Json& args,
                                             std::chrono::nanoseconds timeout, ServiceCaller::Done done) {
  counters_.service_calls.fetch_add(1, std::memory_order_relaxed);
  const auto fail = [&](std::string why) {
    counters_.service_failures.fetch_add(1, std::memory_order_relaxed);
    return std::optional<std::string>(std::move(why));
  };
  if (!allowed(service)) return fail(fmt::format("{} is not allowed by this bridge's allow/deny lists", service));
  refresh();
  const ChannelEntry* requests = catalog_.find(service_request_channel(service));
  const ChannelEntry* responses = catalog_.find(service_response_channel(service));
  if (requests == nullptr || responses == nullptr || !requests->schema || !responses->schema) {
    return fail(
        fmt::format("no service {} in domain \"{}\" (/rosapi/services lists them)", service, catalog_.domain()));
  }
  std::vector<std::byte> request;
  try {
    request = requests->schema->encode(requests->schema->with_defaults(args));
  } catch (const schema::CodecError& e) {
    return fail(fmt::format("{}: the request does not fit {}: {}", service, requests->type.name, e.what()));
  }
  const ServiceTypes service_types{service_type_of_request_type(requests->type.name), requests->type, responses->type};
  auto counted = [&counters = counters_, done = std::move(done)](ServiceCaller::Result r) {
    if (r.status != CallStatus::kOk) counters.service_failures.fetch_add(1, std::memory_order_relaxed);
    done(std::move(r));
  };
  if (!services_->call(service, service_types, std::move(request), responses->schema, timeout,
                       settings_.json_int64 == JsonInt64::kString, std::move(counted))) {
    return fail(fmt::format("{}: {} calls are already waiting for this service; try again later", service,
                            ServiceCaller::kMaxQueued));
  }
  return std::nullopt;
}

std::shared_ptr<const schema::Schema> Hub::schema_of_type(const std::string& type) const {
  // The schema a process of the domain already uses for the type wins (a
  // channel then agrees with it); else the type catalog's.
  if (const auto [owner, def] = catalog_.find_type(type); def != nullptr) {
    return std::make_shared<const schema::Schema>(
        schema::Schema::from_canonical(schema::MessageSet::canonical_text(*def)));
  }
  try {
    return std::make_shared<const schema::Schema>(types_.find(short_type_name(type)));
  } catch (const Error& e) {
    throw Error(Errc::kNotFound, e.what());
  }
}

ChannelEntry Hub::plan_channel(const std::string& topic, const std::string& type, std::size_t client_made) const {
  if (type.empty()) {
    throw Error(Errc::kInvalidArgument, fmt::format("cannot create {}: name its type (package/Name)", topic));
  }
  if (client_made >= settings_.max_created_channels) {
    throw Error(Errc::kResource,
                fmt::format("cannot create {}: this client made {} channels already, the most this bridge allows "
                            "(max_created_channels); unadvertise one first",
                            topic, client_made));
  }
  // All clients together make at most a quarter of the domain's registry,
  // so the robot's own processes always find room.
  if (const std::size_t most = config_.registry_capacity / 4; created_.size() >= most) {
    throw Error(Errc::kResource,
                fmt::format("cannot create {}: the bridge made {} channels for its clients, a quarter of the "
                            "domain's registry ({} entries); clients must unadvertise some first",
                            topic, created_.size(), config_.registry_capacity));
  }
  const ChannelSettings channel = config_.channel(topic);
  const std::uint64_t bytes = std::uint64_t{channel.capacity} * channel.max_message_size;
  if (bytes > settings_.max_created_channel_bytes) {
    throw Error(
        Errc::kResource,
        fmt::format("cannot create {}: its configuration ({} slots of {} bytes) reserves {} bytes, over "
                    "the {} a client may create (max_created_channel_bytes)",
                    topic, channel.capacity, channel.max_message_size, bytes, settings_.max_created_channel_bytes));
  }
  std::shared_ptr<const schema::Schema> schema;
  try {
    schema = schema_of_type(type);
  } catch (const Error& e) {
    throw Error(Errc::kNotFound, fmt::format("cannot create {}: {}", topic, e.what()));
  }
  ChannelEntry entry;
  entry.name = topic;
  entry.type = schema->type_info();
  entry.schema = std::move(schema);
  return entry;
}

Outlet& Hub::acquire_outlet(const ChannelEntry& entry, bool made) {
  auto it = outlets_.find(entry.name);
  if (it == outlets_.end()) {
    // A channel made for a client grows at most to rings of
    // max_created_channel_bytes (two slots of half of it).
    PublisherOptions options;
    if (made) {
      options.max_grow_size =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(settings_.max_created_channel_bytes / 2, 1U << 30));
    }
    it = outlets_.emplace(entry.name, Outlet{Publisher(entry.name, entry.type, context_, options), entry.schema, 0})
             .first;
  }
  ++it->second.users;
  if (made) created_.insert(entry.name);
  return it->second;
}

void Hub::release_outlet(const std::string& channel) {
  const auto it = outlets_.find(channel);
  if (it == outlets_.end() || --it->second.users != 0) return;
  outlets_.erase(it);
  // A channel the bridge made for a client goes with its last user of the
  // bridge, unless some process (or the bridge's own reader) uses it.
  if (const auto made = created_.find(channel); made != created_.end()) {
    try {
      if (introspect::remove_unused_channel(config_.domain, channel, config_.access())) {
        spdlog::info("removed {}, which a client created and no one uses now", channel);
      }
    } catch (const Error& e) {
      spdlog::warn("could not remove {}, which a client created: {}", channel, e.what());
    }
    created_.erase(made);
  }
}

}  // namespace shmbus::bridge
