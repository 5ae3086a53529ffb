// The Foxglove WebSocket protocol (foxglove.hpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "foxglove.hpp"
#include "shmbus/bus_channels.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema/json_input.hpp"
#include "shmbus_msgs/Clock.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

bool foxglove_visible(const Hub& hub, const ChannelEntry& e) { return !e.service_channel && hub.allowed(e.name); }

/// The type a replay publishes its time in on kClockChannel (`shmtool
/// play --clock`): the time capability follows that channel.
constexpr const char* kClockType = shmbus_msgs::Clock::kTypeName;

/// With both encodings, a channel's CDR form has this bit in its id.
constexpr std::uint32_t kCdrBit = 0x8000'0000U;

/// What a channel without a schema is offered as: its bytes.
constexpr const char* kBytesType = "shmbus/Bytes";

std::uint32_t load_u32(std::string_view data, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(data[at + static_cast<std::size_t>(i)]);
  return v;
}

/// Writes `v` little-endian into out[0, sizeof v): the binary frames'
/// integers.
template <typename T>
void store_le(char* out, T v) {
  for (std::size_t i = 0; i < sizeof v; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

FoxgloveSession::~FoxgloveSession() = default;

void FoxgloveSession::on_frame(const std::string& data, bool text) {
  if (!text) {
    on_binary(data);
    return;
  }
  Json op;
  try {
    op = schema::parse_json(data);
  } catch (const schema::JsonInputError& e) {
    hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
    status(2, fmt::format("malformed JSON: {}", e.what()));
    return;
  }
  on_op(op);
}

void FoxgloveSession::deliver(const OutMessage& message, std::uint64_t key) {
  if (closed_) return;
  if (key == clock_key_) {
    send_time(message, key);
    return;
  }
  const auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  const auto channel = subs_.find(it->second);
  if (channel == subs_.end()) return;
  const Encoding form = is_cdr(channel->second) ? Encoding::kFoxgloveCdr : Encoding::kFoxglove;
  const auto& body = message.encoded[static_cast<std::size_t>(form)];
  if (!body) return;
  Frame f;
  f.body = body;
  f.binary = true;
  f.subscription = key;
  // Message data: opcode 1, subscription id (u32), receive time (u64 ns),
  // little-endian.
  f.head[0] = 1;
  store_le(f.head.data() + 1, it->second);
  store_le(f.head.data() + 5, static_cast<std::uint64_t>(message.receive_wall_ns));
  f.head_len = 13;
  enqueue(std::move(f));
}

void FoxgloveSession::send_time(const OutMessage& message, std::uint64_t key) {
  // The clock message's CDR: the 4-byte header, then clock_ns.
  const auto& body = message.encoded[static_cast<std::size_t>(Encoding::kFoxgloveCdr)];
  if (!body || body->size() < 12) return;
  static const auto kNothing = std::make_shared<const std::string>();
  Frame f;
  f.body = kNothing;
  f.binary = true;
  f.subscription = key;
  f.head[0] = 2;  // time: u64 ns
  std::memcpy(f.head.data() + 1, body->data() + 4, 8);
  f.head_len = 9;
  enqueue(std::move(f));
}

void FoxgloveSession::release() {
  for (const auto& [id, channel] : client_channels_) hub_.release_outlet(channel);
  client_channels_.clear();
}

void FoxgloveSession::status(int level, const std::string& message) {
  // What a client is told goes to the log too: one line naming the client.
  spdlog::warn("client {}: {}", peer_, message);
  send_text(dump_json(Json{{"op", "status"}, {"level", level}, {"message", message}}));
}

std::vector<std::uint32_t> FoxgloveSession::channel_ids(const ChannelEntry& e) const {
  switch (hub_.settings().foxglove_encoding) {
    case FoxgloveEncoding::kCdr:
    case FoxgloveEncoding::kJson:
      return {e.id};
    case FoxgloveEncoding::kBoth:
      return {e.id, e.id | kCdrBit};
  }
  return {};
}

bool FoxgloveSession::is_cdr(std::uint32_t channel_id) const noexcept {
  const FoxgloveEncoding mode = hub_.settings().foxglove_encoding;
  return mode == FoxgloveEncoding::kCdr || (mode == FoxgloveEncoding::kBoth && (channel_id & kCdrBit) != 0);
}

const ChannelEntry* FoxgloveSession::entry_of(std::uint32_t channel_id) const {
  return hub_.catalog().find_id(hub_.settings().foxglove_encoding == FoxgloveEncoding::kBoth ? channel_id & ~kCdrBit
                                                                                             : channel_id);
}

Json FoxgloveSession::channel_json(const ChannelEntry& e, std::uint32_t channel_id) const {
  if (is_cdr(channel_id)) {
    // ROS 2 CDR with its .msg text, as foxglove_bridge offers ROS 2 topics;
    // bytes without a schema as a message of one uint8[].
    return Json{{"id", channel_id},
                {"topic", e.name},
                {"encoding", "cdr"},
                {"schemaName", schema::ros2_type_name(e.schema ? e.type.name : kBytesType)},
                {"schema", e.schema ? schema::ros2msg_text(e.schema->root()) : std::string{schema::kBytesRos2msgText}},
                {"schemaEncoding", "ros2msg"}};
  }
  static const std::string kBytesSchema = dump_json(
      Json{{"type", "object"},
           {"properties",
            {{"data", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}, {"maximum", 255}}}}}}},
           {"required", Json::array({"data"})}});
  return Json{{"id", channel_id},
              {"topic", e.name},
              {"encoding", "json"},
              {"schemaName", e.schema ? e.type.name : kBytesType},
              {"schema", e.schema ? dump_json(e.schema->json_schema()) : kBytesSchema},
              {"schemaEncoding", "jsonschema"}};
}

void FoxgloveSession::opened() {
  hub_.refresh();
  // Time is announced when a replay publishes its clock as the client
  // connects (a capability cannot be added later in this protocol): the
  // clock channel with a live publisher, not one a finished replay left.
  const ChannelEntry* clock = hub_.catalog().find(kClockChannel);
  time_ = clock != nullptr && clock->type.name == kClockType && hub_.allowed(kClockChannel) &&
          hub_.catalog().published(kClockChannel);
  Json capabilities = Json::array({"clientPublish", "services", "connectionGraph"});
  if (time_) capabilities.push_back("time");
  send_text(dump_json(Json{{"op", "serverInfo"},
                           {"name", "shmbus-bridge"},
                           {"capabilities", std::move(capabilities)},
                           {"supportedEncodings", Json::array({"json"})},
                           {"metadata", Json{{"domain", hub_.catalog().domain()}}},
                           {"sessionId", std::to_string(wall_now_ns())}}));
  std::vector<const ChannelEntry*> all;
  for (const auto& [name, e] : hub_.catalog().channels()) all.push_back(&e);
  advertise(all);
  update_services();
  if (time_) follow_clock(*clock);
}

void FoxgloveSession::follow_clock(const ChannelEntry& e) {
  clock_key_ = next_key();
  hub_.subscribe(e, Sink{weak_from_this(), this, clock_key_, Encoding::kFoxgloveCdr});
}

void FoxgloveSession::update_services() {
  std::map<std::uint32_t, std::string> now;  // by the request channel's id
  for (const auto& [name, e] : hub_.catalog().channels()) {
    const std::string service = service_of_request_channel(name);
    if (service.empty() || !e.schema || !hub_.allowed(service) || !hub_.catalog().served(service)) continue;
    const ChannelEntry* response = hub_.catalog().find(service_response_channel(service));
    if (response != nullptr && response->schema) now[e.id] = service;
  }
  Json gone = Json::array();
  for (const auto& [id, service] : services_) {
    if (!now.contains(id)) gone.push_back(id);
  }
  const auto definition = [](const ChannelEntry& e) {
    return Json{{"encoding", "json"},
                {"schemaName", e.type.name},
                {"schemaEncoding", "jsonschema"},
                {"schema", dump_json(e.schema->json_schema())}};
  };
  Json added = Json::array();
  for (const auto& [id, service] : now) {
    if (services_.contains(id)) continue;
    const ChannelEntry& request = *hub_.catalog().find(service_request_channel(service));
    const ChannelEntry& response = *hub_.catalog().find(service_response_channel(service));
    added.push_back(Json{{"id", id},
                         {"name", service},
                         {"type", service_type_of_request_type(request.type.name)},
                         {"request", definition(request)},
                         {"response", definition(response)}});
  }
  services_ = std::move(now);
  if (!gone.empty()) send_text(dump_json(Json{{"op", "unadvertiseServices"}, {"serviceIds", std::move(gone)}}));
  if (!added.empty()) send_text(dump_json(Json{{"op", "advertiseServices"}, {"services", std::move(added)}}));
}

void FoxgloveSession::graph_now(const BusGraph& graph) {
  using Ids = std::map<std::string, std::set<std::string>>;
  const auto changed = [](const Ids& now, const Ids* before, const char* ids_key) {
    Json out = Json::array();
    for (const auto& [name, ids] : now) {
      if (before != nullptr) {
        const auto it = before->find(name);
        if (it != before->end() && it->second == ids) continue;
      }
      out.push_back(Json{{"name", name}, {ids_key, ids}});
    }
    return out;
  };
  const BusGraph* before = graph_sent_ ? &*graph_sent_ : nullptr;
  Json removed_topics = Json::array();
  Json removed_services = Json::array();
  if (before != nullptr) {
    std::set<std::string> gone;
    for (const Ids* m : {&before->publishers, &before->subscribers}) {
      for (const auto& [topic, ids] : *m) {
        if (!graph.publishers.contains(topic) && !graph.subscribers.contains(topic)) gone.insert(topic);
      }
    }
    removed_topics = gone;
    for (const auto& [service, ids] : before->providers) {
      if (!graph.providers.contains(service)) removed_services.push_back(service);
    }
  }
  Json update{
      {"op", "connectionGraphUpdate"},
      {"publishedTopics", changed(graph.publishers, before ? &before->publishers : nullptr, "publisherIds")},
      {"subscribedTopics", changed(graph.subscribers, before ? &before->subscribers : nullptr, "subscriberIds")},
      {"advertisedServices", changed(graph.providers, before ? &before->providers : nullptr, "providerIds")},
      {"removedTopics", std::move(removed_topics)},
      {"removedServices", std::move(removed_services)}};
  const bool nothing = before != nullptr && update["publishedTopics"].empty() && update["subscribedTopics"].empty() &&
                       update["advertisedServices"].empty() && update["removedTopics"].empty() &&
                       update["removedServices"].empty();
  graph_sent_ = graph;
  if (!nothing) send_text(dump_json(update));
}

void FoxgloveSession::advertise(const std::vector<const ChannelEntry*>& channels) {
  Json list = Json::array();
  for (const ChannelEntry* e : channels) {
    if (!foxglove_visible(hub_, *e)) continue;
    for (const std::uint32_t id : channel_ids(*e)) {
      if (!advertised_.insert(id).second) continue;
      list.push_back(channel_json(*e, id));
    }
  }
  if (!list.empty()) send_text(dump_json(Json{{"op", "advertise"}, {"channels", std::move(list)}}));
}

void FoxgloveSession::channels_changed(const std::vector<const ChannelEntry*>& added,
                                       const std::vector<ChannelEntry>& removed) {
  if (closed_) return;
  Json gone = Json::array();
  for (const ChannelEntry& e : removed) {
    for (const std::uint32_t id : channel_ids(e)) {
      if (advertised_.erase(id) == 0) continue;
      gone.push_back(id);
      for (auto it = by_key_.begin(); it != by_key_.end();) {
        const auto sub = subs_.find(it->second);
        if (sub != subs_.end() && sub->second == id) {
          hub_.unsubscribe(e.name, this, it->first);
          subs_.erase(sub);
          it = by_key_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  if (!gone.empty()) send_text(dump_json(Json{{"op", "unadvertise"}, {"channelIds", std::move(gone)}}));
  advertise(added);
  update_services();
  if (!time_) return;
  for (const ChannelEntry& e : removed) {
    if (e.name == kClockChannel && clock_key_ != 0) {
      hub_.unsubscribe(e.name, this, clock_key_);
      clock_key_ = 0;
    }
  }
  for (const ChannelEntry* e : added) {
    if (e->name == kClockChannel && e->type.name == kClockType && clock_key_ == 0) follow_clock(*e);
  }
}

void FoxgloveSession::refuse(const std::string& message) {
  hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
  status(2, message);
}

const OpTable<FoxgloveSession>& FoxgloveSession::ops() {
  static const OpTable<FoxgloveSession> table{
      {"subscribe", &FoxgloveSession::subscribe_op},
      {"unsubscribe", &FoxgloveSession::unsubscribe_op},
      {"advertise", &FoxgloveSession::advertise_op},
      {"unadvertise", &FoxgloveSession::unadvertise_op},
      {"subscribeConnectionGraph", &FoxgloveSession::subscribe_graph},
      {"unsubscribeConnectionGraph", &FoxgloveSession::unsubscribe_graph},
  };
  return table;
}

void FoxgloveSession::subscribe_op(const Json& op) {
  for (const Json& s : op.at("subscriptions")) subscribe(s);
}

void FoxgloveSession::unsubscribe_op(const Json& op) {
  for (const Json& j : op.at("subscriptionIds"))
    unsubscribe(schema::unsigned_value<std::uint32_t>(j, "subscriptionIds[]"));
}

void FoxgloveSession::advertise_op(const Json& op) {
  for (const Json& c : op.at("channels")) client_advertise(c);
}

void FoxgloveSession::unadvertise_op(const Json& op) {
  for (const Json& j : op.at("channelIds")) {
    const auto it = client_channels_.find(schema::unsigned_value<std::uint32_t>(j, "channelIds[]"));
    if (it == client_channels_.end()) continue;
    created_.erase(it->second);
    hub_.release_outlet(it->second);
    client_channels_.erase(it);
  }
}

void FoxgloveSession::subscribe_graph(const Json& /*op*/) {
  graph_subscribed_ = true;
  graph_sent_.reset();
  graph_now(bus_graph(hub_.catalog(), [this](std::string_view n) { return hub_.allowed(n); }));
}

void FoxgloveSession::unsubscribe_graph(const Json& /*op*/) {
  graph_subscribed_ = false;
  graph_sent_.reset();
}

void FoxgloveSession::on_op(const Json& op) {
  if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) {
    refuse(R"(not a Foxglove operation: send a JSON object with an "op" field)");
    return;
  }
  const std::string name = op["op"].get<std::string>();
  const auto handler = ops().find(name);
  if (handler == nullptr) {
    refuse(
        fmt::format("op \"{}\" is not supported by this bridge (it takes {}, message data and service call "
                    "requests)",
                    name, ops().names()));
    return;
  }
  try {
    (this->*handler)(op);
  } catch (const Json::exception& e) {
    refuse(fmt::format("{}: {}", name, e.what()));
  } catch (const schema::JsonInputError& e) {
    refuse(fmt::format("{}: {}", name, e.what()));
  } catch (const Error& e) {
    refuse(fmt::format("{}: {}", name, e.what()));
  }
}

void FoxgloveSession::subscribe(const Json& s) {
  const auto id = schema::unsigned_value<std::uint32_t>(s.at("id"), "id");
  const auto channel_id = schema::unsigned_value<std::uint32_t>(s.at("channelId"), "channelId");
  const ChannelEntry* e = entry_of(channel_id);
  if (e == nullptr || !advertised_.contains(channel_id)) {
    refuse(fmt::format("subscribe: channel {} is not advertised", channel_id));
    return;
  }
  if (subs_.contains(id)) {
    refuse(fmt::format("subscribe: subscription id {} is already in use", id));
    return;
  }
  const std::uint64_t key = next_key();
  subs_[id] = channel_id;
  by_key_[key] = id;
  hub_.subscribe(*e,
                 Sink{weak_from_this(), this, key, is_cdr(channel_id) ? Encoding::kFoxgloveCdr : Encoding::kFoxglove});
}

void FoxgloveSession::unsubscribe(std::uint32_t id) {
  for (auto it = by_key_.begin(); it != by_key_.end(); ++it) {
    if (it->second != id) continue;
    if (const ChannelEntry* e = entry_of(subs_[id])) hub_.unsubscribe(e->name, this, it->first);
    by_key_.erase(it);
    break;
  }
  subs_.erase(id);
}

void FoxgloveSession::client_advertise(const Json& c) {
  const auto id = schema::unsigned_value<std::uint32_t>(c.at("id"), "id");
  const std::string topic = c.at("topic").get<std::string>();
  const std::string encoding = c.value("encoding", std::string{});
  const std::string type = c.value("schemaName", std::string{});
  if (encoding != "json") {
    refuse(fmt::format("advertise {}: encoding \"{}\" is not supported; use \"json\"", topic, encoding));
    return;
  }
  if (!hub_.allowed(topic)) {
    refuse(fmt::format("advertise {}: not allowed by this bridge's allow/deny lists", topic));
    return;
  }
  if (client_channels_.contains(id)) {
    refuse(fmt::format("advertise: client channel id {} is already in use", id));
    return;
  }
  hub_.refresh();
  const ChannelEntry* e = hub_.catalog().find(topic);
  ChannelEntry made;
  if (e == nullptr) {
    // A new channel of a known type, within what a client may make.
    made = hub_.plan_channel(topic, type, created_.size());
    e = &made;
  } else if (!e->schema) {
    refuse(
        fmt::format("advertise {}: channel {} carries {} without a schema; a client publishes JSON into typed "
                    "channels only",
                    topic, topic, e->type.name.empty() ? kBytesType : e->type.name));
    return;
  }
  if (const auto refusal = type_mismatch(topic, "the client", type, e->type.name, "nothing will be published")) {
    refuse(*refusal);
    return;
  }
  hub_.acquire_outlet(*e, e == &made);
  client_channels_[id] = topic;
  if (e == &made) created_.insert(topic);
}

void FoxgloveSession::on_binary(std::string_view data) {
  if (!data.empty() && static_cast<std::uint8_t>(data[0]) == 2) {
    call_service(data);
    return;
  }
  if (data.size() < 5 || static_cast<std::uint8_t>(data[0]) != 1) {
    refuse(
        "binary message: client message data (opcode 1, channel id, payload) or a service call request (opcode 2) "
        "is expected");
    return;
  }
  const std::uint32_t id = load_u32(data, 1);
  const auto it = client_channels_.find(id);
  if (it == client_channels_.end()) {
    refuse(fmt::format("message data for client channel {}, which was not advertised", id));
    return;
  }
  Outlet& out = hub_.outlet(it->second);
  try {
    const Json msg = schema::parse_json(data.substr(5));
    const std::vector<std::byte> bytes = out.schema->encode(out.schema->with_defaults(msg));
    const PublishResult r = out.publisher.publish(bytes);
    if (r == PublishResult::kOk) {
      hub_.counters().messages_published.fetch_add(1, std::memory_order_relaxed);
    } else {
      refuse(fmt::format("{}: not published: {}", it->second,
                         r == PublishResult::kTooLarge ? out.publisher.too_large(bytes.size())
                                                       : "a stuck writer held its slot (counted as dropped)"));
    }
  } catch (const schema::JsonInputError& e) {
    refuse(fmt::format("{}: the payload is not JSON: {}", it->second, e.what()));
  } catch (const Json::exception& e) {
    refuse(fmt::format("{}: {}", it->second, e.what()));
  } catch (const schema::CodecError& e) {
    refuse(fmt::format("{}: the message does not fit {}: {}; nothing was published", it->second,
                       out.schema->root().name, e.what()));
  }
}

void FoxgloveSession::service_failure(std::uint32_t service_id, std::uint32_t call_id, const std::string& why) {
  send_text(
      dump_json(Json{{"op", "serviceCallFailure"}, {"serviceId", service_id}, {"callId", call_id}, {"message", why}}));
}

void FoxgloveSession::call_service(std::string_view data) {
  // Opcode 2, service id, call id, encoding length (u32 each), encoding,
  // request.
  if (data.size() < 13) {
    refuse(fmt::format("service call request of {} bytes: shorter than its 13-byte header", data.size()));
    return;
  }
  const std::uint32_t service_id = load_u32(data, 1);
  const std::uint32_t call_id = load_u32(data, 5);
  const std::uint32_t encoding_length = load_u32(data, 9);
  if (encoding_length > data.size() - 13) {
    refuse(fmt::format("service call request: encoding length {} runs past the {}-byte frame", encoding_length,
                       data.size()));
    return;
  }
  const std::string_view encoding = data.substr(13, encoding_length);
  const auto it = services_.find(service_id);
  if (it == services_.end()) {
    service_failure(service_id, call_id, fmt::format("service id {} is not advertised", service_id));
    return;
  }
  if (encoding != "json") {
    service_failure(service_id, call_id,
                    fmt::format("{}: request encoding \"{}\" is not supported; use \"json\"", it->second, encoding));
    return;
  }
  Json args;
  try {
    args = schema::parse_json(data.substr(13 + encoding_length));
  } catch (const schema::JsonInputError& e) {
    service_failure(service_id, call_id, fmt::format("{}: the request is not JSON: {}", it->second, e.what()));
    return;
  }
  auto done = [weak = weak_from_this(), &io = hub_.io(), service_id, call_id](ServiceCaller::Result r) {
    asio::post(io, [weak, service_id, call_id, r = std::move(r)] {
      const auto self = std::static_pointer_cast<FoxgloveSession>(weak.lock());
      if (!self || self->closed_) return;
      if (r.status != CallStatus::kOk) {
        self->service_failure(service_id, call_id, r.error);
        return;
      }
      // Opcode 3, service id, call id, encoding length, "json", response.
      std::string body(13, '\0');
      body[0] = 3;
      store_le(body.data() + 1, service_id);
      store_le(body.data() + 5, call_id);
      body[9] = 4;
      body += "json" + dump_json(r.response);
      Frame f;
      f.body = std::make_shared<const std::string>(std::move(body));
      f.binary = true;
      self->enqueue(std::move(f));
    });
  };
  if (const auto refused = hub_.call_service(it->second, args, hub_.settings().service_timeout, std::move(done))) {
    service_failure(service_id, call_id, *refused);
  }
}

}  // namespace shmbus::bridge
