// The Foxglove WebSocket protocol (foxglove.websocket.v1): the server
// advertises channels with a JSON Schema, clients subscribe by channel id
// and receive binary message-data frames; clients may advertise channels of
// their own and publish into them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/schema/json_input.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

bool foxglove_visible(const Hub& hub, const ChannelEntry& e) {
  return !e.service_channel && e.schema != nullptr && hub.allowed(e.name);
}

std::uint32_t load_u32(std::string_view data, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(data[at + static_cast<std::size_t>(i)]);
  return v;
}

}  // namespace

void Session::fox_status(int level, const std::string& message) {
  send_text(dump_json(Json{{"op", "status"}, {"level", level}, {"message", message}}));
}

Json Session::fox_channel(const ChannelEntry& e) const {
  return Json{{"id", e.id},
              {"topic", e.name},
              {"encoding", "json"},
              {"schemaName", e.type.name},
              {"schema", dump_json(e.schema->json_schema())},
              {"schemaEncoding", "jsonschema"}};
}

void Session::fox_server_info() {
  send_text(dump_json(Json{{"op", "serverInfo"},
                           {"name", "shmbus-bridge"},
                           {"capabilities", Json::array({"clientPublish"})},
                           {"supportedEncodings", Json::array({"json"})},
                           {"metadata", Json{{"domain", hub_.catalog.domain()}}},
                           {"sessionId", std::to_string(wall_now_ns())}}));
  hub_.refresh();
  std::vector<const ChannelEntry*> all;
  for (const auto& [name, e] : hub_.catalog.channels()) all.push_back(&e);
  fox_advertise(all);
}

void Session::fox_advertise(const std::vector<const ChannelEntry*>& channels) {
  Json list = Json::array();
  for (const ChannelEntry* e : channels) {
    if (!foxglove_visible(hub_, *e) || fox_advertised_.contains(e->id)) continue;
    list.push_back(fox_channel(*e));
    fox_advertised_.insert(e->id);
  }
  if (!list.empty()) send_text(dump_json(Json{{"op", "advertise"}, {"channels", std::move(list)}}));
}

void Session::channels_changed(const std::vector<const ChannelEntry*>& added,
                               const std::vector<ChannelEntry>& removed) {
  if (protocol_ != Protocol::kFoxglove || closed_) return;
  Json gone = Json::array();
  for (const ChannelEntry& e : removed) {
    if (fox_advertised_.erase(e.id) == 0) continue;
    gone.push_back(e.id);
    for (auto it = fox_by_key_.begin(); it != fox_by_key_.end();) {
      const auto sub = fox_subs_.find(it->second);
      if (sub != fox_subs_.end() && sub->second == e.id) {
        hub_.reader->remove(e.name, this, it->first);
        fox_subs_.erase(sub);
        it = fox_by_key_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!gone.empty()) send_text(dump_json(Json{{"op", "unadvertise"}, {"channelIds", std::move(gone)}}));
  fox_advertise(added);
}

void Session::fox_refuse(const std::string& message) {
  hub_.counters.ops_refused.fetch_add(1, std::memory_order_relaxed);
  fox_status(2, message);
}

void Session::fox_op(const Json& op) {
  if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) {
    fox_refuse(R"(not a Foxglove operation: send a JSON object with an "op" field)");
    return;
  }
  const std::string name = op["op"].get<std::string>();
  try {
    if (name == "subscribe") {
      for (const Json& s : op.at("subscriptions")) fox_subscribe(s);
    } else if (name == "unsubscribe") {
      for (const Json& j : op.at("subscriptionIds")) {
        fox_unsubscribe(schema::unsigned_value<std::uint32_t>(j, "subscriptionIds[]"));
      }
    } else if (name == "advertise") {
      for (const Json& c : op.at("channels")) fox_client_advertise(c);
    } else if (name == "unadvertise") {
      for (const Json& j : op.at("channelIds")) {
        const auto it = fox_client_channels_.find(schema::unsigned_value<std::uint32_t>(j, "channelIds[]"));
        if (it == fox_client_channels_.end()) continue;
        hub_.release_outlet(it->second);
        fox_client_channels_.erase(it);
      }
    } else {
      fox_refuse(
          fmt::format("op \"{}\" is not supported by this bridge (it takes subscribe, unsubscribe, advertise, "
                      "unadvertise and message data)",
                      name));
    }
  } catch (const Json::exception& e) {
    fox_refuse(fmt::format("{}: {}", name, e.what()));
  } catch (const schema::JsonInputError& e) {
    fox_refuse(fmt::format("{}: {}", name, e.what()));
  } catch (const Error& e) {
    fox_refuse(fmt::format("{}: {}", name, e.what()));
  }
}

void Session::fox_subscribe(const Json& s) {
  const auto id = schema::unsigned_value<std::uint32_t>(s.at("id"), "id");
  const auto channel_id = schema::unsigned_value<std::uint32_t>(s.at("channelId"), "channelId");
  const ChannelEntry* e = hub_.catalog.find_id(channel_id);
  if (e == nullptr || !fox_advertised_.contains(channel_id)) {
    fox_refuse(fmt::format("subscribe: channel {} is not advertised", channel_id));
    return;
  }
  if (fox_subs_.contains(id)) {
    fox_refuse(fmt::format("subscribe: subscription id {} is already in use", id));
    return;
  }
  const std::uint64_t key = next_key_++;
  fox_subs_[id] = channel_id;
  fox_by_key_[key] = id;
  hub_.reader->add(*e, Sink{weak_from_this(), this, key, Encoding::kFoxglove});
}

void Session::fox_unsubscribe(std::uint32_t id) {
  for (auto it = fox_by_key_.begin(); it != fox_by_key_.end(); ++it) {
    if (it->second != id) continue;
    if (const ChannelEntry* e = hub_.catalog.find_id(fox_subs_[id])) hub_.reader->remove(e->name, this, it->first);
    fox_by_key_.erase(it);
    break;
  }
  fox_subs_.erase(id);
}

void Session::fox_client_advertise(const Json& c) {
  const auto id = schema::unsigned_value<std::uint32_t>(c.at("id"), "id");
  const std::string topic = c.at("topic").get<std::string>();
  const std::string encoding = c.value("encoding", std::string{});
  const std::string type = c.value("schemaName", std::string{});
  if (encoding != "json") {
    fox_refuse(fmt::format("advertise {}: encoding \"{}\" is not supported; use \"json\"", topic, encoding));
    return;
  }
  if (!hub_.allowed(topic)) {
    fox_refuse(fmt::format("advertise {}: not allowed by this bridge's allow/deny lists", topic));
    return;
  }
  hub_.refresh();
  const ChannelEntry* e = hub_.catalog.find(topic);
  if (e == nullptr || !e->schema) {
    fox_refuse(fmt::format("advertise {}: no typed channel {} in domain \"{}\"; a shmbus process makes it", topic,
                           topic, hub_.catalog.domain()));
    return;
  }
  if (const auto refusal = type_mismatch(topic, "the client", type, e->type.name, "nothing will be published")) {
    fox_refuse(*refusal);
    return;
  }
  if (fox_client_channels_.contains(id)) {
    fox_refuse(fmt::format("advertise: client channel id {} is already in use", id));
    return;
  }
  hub_.acquire_outlet(*e);
  fox_client_channels_[id] = topic;
}

void Session::fox_binary(std::string_view data) {
  const auto refuse = [this](const std::string& message) { fox_refuse(message); };
  if (data.size() < 5 || static_cast<std::uint8_t>(data[0]) != 1) {
    refuse("binary message: only client message data (opcode 1, channel id, payload) is supported");
    return;
  }
  const std::uint32_t id = load_u32(data, 1);
  const auto it = fox_client_channels_.find(id);
  if (it == fox_client_channels_.end()) {
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
