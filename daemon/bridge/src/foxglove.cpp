// The Foxglove WebSocket protocol (foxglove.hpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "foxglove.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/schema/json_input.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

bool foxglove_visible(const Hub& hub, const ChannelEntry& e) { return !e.service_channel && hub.allowed(e.name); }

/// With both encodings, a channel's CDR form has this bit in its id.
constexpr std::uint32_t kCdrBit = 0x8000'0000U;

/// What a channel without a schema is offered as: its bytes.
constexpr const char* kBytesType = "shmbus/Bytes";

/// `pkg/Type` -> `pkg/msg/Type`, the name ROS 2 tools give a CDR schema.
std::string ros2_name(const std::string& type) {
  const auto slash = type.find('/');
  if (slash == std::string::npos || type.find('/', slash + 1) != std::string::npos) return type;
  return type.substr(0, slash) + "/msg" + type.substr(slash);
}

std::uint32_t load_u32(std::string_view data, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(data[at + static_cast<std::size_t>(i)]);
  return v;
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
    hub_.counters.ops_refused.fetch_add(1, std::memory_order_relaxed);
    status(2, fmt::format("malformed JSON: {}", e.what()));
    return;
  }
  on_op(op);
}

void FoxgloveSession::deliver(const OutMessage& message, std::uint64_t key) {
  if (closed_) return;
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
  const std::uint32_t sub = it->second;
  const auto stamp = static_cast<std::uint64_t>(message.receive_wall_ns);
  for (std::size_t i = 0; i < 4; ++i) f.head[1 + i] = static_cast<char>((sub >> (8 * i)) & 0xff);
  for (std::size_t i = 0; i < 8; ++i) f.head[5 + i] = static_cast<char>((stamp >> (8 * i)) & 0xff);
  f.head_len = 13;
  enqueue(std::move(f));
}

void FoxgloveSession::release() {
  for (const auto& [id, channel] : client_channels_) hub_.release_outlet(channel);
  client_channels_.clear();
}

void FoxgloveSession::status(int level, const std::string& message) {
  send_text(dump_json(Json{{"op", "status"}, {"level", level}, {"message", message}}));
}

std::vector<std::uint32_t> FoxgloveSession::channel_ids(const ChannelEntry& e) const {
  switch (hub_.settings.foxglove_encoding) {
    case FoxgloveEncoding::kCdr:
    case FoxgloveEncoding::kJson:
      return {e.id};
    case FoxgloveEncoding::kBoth:
      return {e.id, e.id | kCdrBit};
  }
  return {};
}

bool FoxgloveSession::is_cdr(std::uint32_t channel_id) const noexcept {
  const FoxgloveEncoding mode = hub_.settings.foxglove_encoding;
  return mode == FoxgloveEncoding::kCdr || (mode == FoxgloveEncoding::kBoth && (channel_id & kCdrBit) != 0);
}

const ChannelEntry* FoxgloveSession::entry_of(std::uint32_t channel_id) const {
  return hub_.catalog.find_id(hub_.settings.foxglove_encoding == FoxgloveEncoding::kBoth ? channel_id & ~kCdrBit
                                                                                         : channel_id);
}

Json FoxgloveSession::channel_json(const ChannelEntry& e, std::uint32_t channel_id) const {
  if (is_cdr(channel_id)) {
    // ROS 2 CDR with its .msg text, as foxglove_bridge offers ROS 2 topics;
    // bytes without a schema as a message of one uint8[].
    return Json{{"id", channel_id},
                {"topic", e.name},
                {"encoding", "cdr"},
                {"schemaName", ros2_name(e.schema ? e.type.name : kBytesType)},
                {"schema", e.schema ? schema::ros2msg_text(e.schema->root()) : std::string{"uint8[] data\n"}},
                {"schemaEncoding", "ros2msg"}};
  }
  const Json bytes_schema{
      {"type", "object"},
      {"properties",
       {{"data", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}, {"maximum", 255}}}}}}},
      {"required", Json::array({"data"})}};
  return Json{{"id", channel_id},
              {"topic", e.name},
              {"encoding", "json"},
              {"schemaName", e.schema ? e.type.name : kBytesType},
              {"schema", dump_json(e.schema ? e.schema->json_schema() : bytes_schema)},
              {"schemaEncoding", "jsonschema"}};
}

void FoxgloveSession::opened() {
  send_text(dump_json(Json{{"op", "serverInfo"},
                           {"name", "shmbus-bridge"},
                           {"capabilities", Json::array({"clientPublish"})},
                           {"supportedEncodings", Json::array({"json"})},
                           {"metadata", Json{{"domain", hub_.catalog.domain()}}},
                           {"sessionId", std::to_string(wall_now_ns())}}));
  hub_.refresh();
  std::vector<const ChannelEntry*> all;
  for (const auto& [name, e] : hub_.catalog.channels()) all.push_back(&e);
  advertise(all);
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
          hub_.reader->remove(e.name, this, it->first);
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
}

void FoxgloveSession::refuse(const std::string& message) {
  hub_.counters.ops_refused.fetch_add(1, std::memory_order_relaxed);
  status(2, message);
}

void FoxgloveSession::on_op(const Json& op) {
  if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) {
    refuse(R"(not a Foxglove operation: send a JSON object with an "op" field)");
    return;
  }
  const std::string name = op["op"].get<std::string>();
  try {
    if (name == "subscribe") {
      for (const Json& s : op.at("subscriptions")) subscribe(s);
    } else if (name == "unsubscribe") {
      for (const Json& j : op.at("subscriptionIds")) {
        unsubscribe(schema::unsigned_value<std::uint32_t>(j, "subscriptionIds[]"));
      }
    } else if (name == "advertise") {
      for (const Json& c : op.at("channels")) client_advertise(c);
    } else if (name == "unadvertise") {
      for (const Json& j : op.at("channelIds")) {
        const auto it = client_channels_.find(schema::unsigned_value<std::uint32_t>(j, "channelIds[]"));
        if (it == client_channels_.end()) continue;
        created_.erase(it->second);
        hub_.release_outlet(it->second);
        client_channels_.erase(it);
      }
    } else {
      refuse(
          fmt::format("op \"{}\" is not supported by this bridge (it takes subscribe, unsubscribe, advertise, "
                      "unadvertise and message data)",
                      name));
    }
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
  hub_.reader->add(
      *e, Sink{weak_from_this(), this, key, is_cdr(channel_id) ? Encoding::kFoxgloveCdr : Encoding::kFoxglove});
}

void FoxgloveSession::unsubscribe(std::uint32_t id) {
  for (auto it = by_key_.begin(); it != by_key_.end(); ++it) {
    if (it->second != id) continue;
    if (const ChannelEntry* e = entry_of(subs_[id])) hub_.reader->remove(e->name, this, it->first);
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
  const ChannelEntry* e = hub_.catalog.find(topic);
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
  hub_.acquire_outlet(*e);
  client_channels_[id] = topic;
  if (e == &made) {
    hub_.created.insert(topic);
    created_.insert(topic);
  }
}

void FoxgloveSession::on_binary(std::string_view data) {
  if (data.size() < 5 || static_cast<std::uint8_t>(data[0]) != 1) {
    refuse("binary message: only client message data (opcode 1, channel id, payload) is supported");
    return;
  }
  const std::uint32_t id = load_u32(data, 1);
  const auto it = client_channels_.find(id);
  if (it == client_channels_.end()) {
    refuse(fmt::format("message data for client channel {}, which was not advertised", id));
    return;
  }
  Outlet& out = hub_.outlets.at(it->second);
  try {
    const Json msg = schema::parse_json(data.substr(5));
    const std::vector<std::byte> bytes = out.schema->encode(out.schema->with_defaults(msg));
    if (out.publisher.publish(bytes) == PublishResult::kOk) {
      hub_.counters.messages_published.fetch_add(1, std::memory_order_relaxed);
    } else {
      refuse(fmt::format("{}: not published ({} bytes; max_message_size {})", it->second, bytes.size(),
                         out.publisher.max_message_size()));
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

}  // namespace shmbus::bridge
