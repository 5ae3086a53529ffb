// The rosbridge v2 protocol (rosbridge.hpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <vector>

#include "rosbridge.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema/json_input.hpp"
#include "shmbus/service_shell.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

constexpr std::string_view kRosapi = "/rosapi/";
/// The rosapi services this bridge answers itself.
constexpr std::array<const char*, 13> kRosapiServices = {
    "topics",       "topic_type",      "topics_for_type", "topics_and_raw_types", "services",
    "service_type", "message_details", "nodes",           "node_details",         "get_param",
    "set_param",    "get_param_names", "action_servers"};

/// rcl_interfaces/ParameterValue (as JSON) as rosapi's JSON text of the
/// value ("5", "true", "\"text\"", "[1, 2]"); empty when not set.
std::string rosapi_value_text(const schema::Json& v) {
  static constexpr std::array<const char*, 10> kFields = {"",
                                                          "bool_value",
                                                          "integer_value",
                                                          "double_value",
                                                          "string_value",
                                                          "byte_array_value",
                                                          "bool_array_value",
                                                          "integer_array_value",
                                                          "double_array_value",
                                                          "string_array_value"};
  const auto type = v.value("type", 0);
  if (type < 1 || type >= static_cast<int>(kFields.size())) return {};
  const auto it = v.find(kFields[static_cast<std::size_t>(type)]);
  return it == v.end() ? std::string{} : it->dump();
}

/// rosapi's JSON text of a value as rcl_interfaces/ParameterValue JSON;
/// nullopt when it is none of ROS 2's parameter types.
std::optional<schema::Json> rosapi_parameter_value(const std::string& text) {
  const schema::Json v = schema::Json::parse(text, nullptr, false);
  const auto kind = [](const schema::Json& x) -> int {
    if (x.is_boolean()) return 1;
    if (x.is_number_integer()) return 2;
    if (x.is_number()) return 3;
    if (x.is_string()) return 4;
    return 0;
  };
  static constexpr std::array<const char*, 5> kScalar = {"", "bool_value", "integer_value", "double_value",
                                                         "string_value"};
  static constexpr std::array<const char*, 5> kArray = {"", "bool_array_value", "integer_array_value",
                                                        "double_array_value", "string_array_value"};
  if (v.is_discarded()) return schema::Json{{"type", 4}, {"string_value", text}};  // bare text: a string
  if (const int k = kind(v); k != 0) return schema::Json{{"type", k}, {kScalar[static_cast<std::size_t>(k)], v}};
  if (!v.is_array() || v.empty()) return std::nullopt;
  int k = kind(v.front());
  for (const auto& x : v) {
    const int kx = kind(x);
    if (kx == 0 || (kx != k && !(k >= 2 && k <= 3 && kx >= 2 && kx <= 3))) return std::nullopt;
    k = std::max(k, kx);  // integers among doubles are doubles
  }
  return schema::Json{{"type", k + 5}, {kArray[static_cast<std::size_t>(k)], v}};
}

/// "/node:param" split; nullopt without a ':'.
std::optional<std::pair<std::string, std::string>> node_and_param(const std::string& name) {
  const auto colon = name.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == name.size()) return std::nullopt;
  std::string node = name.substr(0, colon);
  if (!node.starts_with('/')) node.insert(node.begin(), '/');
  return std::pair{std::move(node), name.substr(colon + 1)};
}

/// "rosapi/topics" (roslib's spelling) -> "/rosapi/topics".
std::string absolute(const std::string& name) { return name.starts_with('/') ? name : "/" + name; }

std::string string_field(const Json& op, const char* key) {
  const auto it = op.find(key);
  return it != op.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// A number field, saturated to +-kMaxNumberField (1e15: a throttle of
/// thirty thousand years in ms; any count); 0 when absent or not a number.
constexpr std::int64_t kMaxNumberField = 1'000'000'000'000'000;
std::int64_t number_field(const Json& op, const char* key) {
  const auto it = op.find(key);
  if (it == op.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned())
    return static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), kMaxNumberField));
  if (it->is_number_integer())
    return std::clamp<std::int64_t>(it->get<std::int64_t>(), -kMaxNumberField, kMaxNumberField);
  const double v = it->get<double>();
  if (std::isnan(v)) return 0;
  return static_cast<std::int64_t>(std::clamp<double>(v, -kMaxNumberField, kMaxNumberField));
}

/// The smallest fragment_size served: smaller ones would cost a frame of
/// JSON per few bytes (a 64 KiB message in 65,536 frames).
constexpr std::int64_t kMinFragmentSize = 1024;

int level_of(std::string_view level) {
  if (level == "none") return 0;
  if (level == "error") return 1;
  if (level == "warning") return 2;
  if (level == "info") return 3;
  return -1;
}

/// The rosapi type of a field ("float64", "string", "std_msgs/Header").
std::string rosapi_field_type(const schema::Field& f) {
  switch (f.kind) {
    case schema::FieldKind::kPrimitive:
      return std::string{schema::to_string(f.primitive)};
    case schema::FieldKind::kString:
    case schema::FieldKind::kUnboundedString:
      return "string";
    case schema::FieldKind::kMessage:
      return f.message->name;
  }
  return "?";
}

std::string rosapi_example(const schema::Field& f) {
  if (f.array_length != 0 || f.unbounded) return "[]";
  if (f.kind == schema::FieldKind::kMessage) return "{}";
  if (f.kind == schema::FieldKind::kString || f.kind == schema::FieldKind::kUnboundedString) return "";
  return f.primitive == schema::Primitive::kBool ? "False" : "0";
}

/// rosapi/MessageDetails: the type and every type it uses, once each.
Json typedefs_of(const schema::MessageDef& root) {
  Json out = Json::array();
  std::set<std::string> seen;
  const auto visit = [&](const auto& self, const schema::MessageDef& m) -> void {
    if (!seen.insert(m.name).second) return;
    Json names = Json::array(), types = Json::array(), lens = Json::array(), examples = Json::array();
    Json constnames = Json::array(), constvalues = Json::array();
    for (const schema::Field& f : m.fields) {
      names.push_back(f.name);
      types.push_back(rosapi_field_type(f));
      lens.push_back(f.unbounded ? 0 : (f.array_length != 0 ? static_cast<std::int64_t>(f.array_length) : -1));
      examples.push_back(rosapi_example(f));
    }
    for (const schema::Constant& c : m.constants) {
      constnames.push_back(c.name);
      constvalues.push_back(c.value);
    }
    out.push_back(Json{{"type", m.name},
                       {"fieldnames", std::move(names)},
                       {"fieldtypes", std::move(types)},
                       {"fieldarraylen", std::move(lens)},
                       {"examples", std::move(examples)},
                       {"constnames", std::move(constnames)},
                       {"constvalues", std::move(constvalues)}});
    for (const schema::Field& f : m.fields) {
      if (f.message != nullptr) self(self, *f.message);
    }
  };
  visit(visit, root);
  return out;
}

/// Raw byte channels: {"data": [0..255, ...]} -> bytes.
std::vector<std::byte> bytes_of(const Json& msg) {
  const auto it = msg.is_object() ? msg.find("data") : msg.end();
  if (it == msg.end() || !it->is_array()) {
    throw schema::CodecError("data: a raw channel's message is {\"data\": [bytes]}");
  }
  std::vector<std::byte> out;
  out.reserve(it->size());
  for (const Json& b : *it) {
    if (!b.is_number_unsigned() || b.get<std::uint64_t>() > 255) {
      throw schema::CodecError("data: each element must be an integer from 0 to 255");
    }
    out.push_back(static_cast<std::byte>(b.get<std::uint64_t>()));
  }
  return out;
}

}  // namespace

RosbridgeSession::~RosbridgeSession() = default;

void RosbridgeSession::on_frame(const std::string& data, bool text) {
  Json op;
  try {
    // rosbridge clients send JSON text; a binary frame is taken as CBOR.
    op = text ? schema::parse_json(data) : schema::parse_cbor(data);
  } catch (const schema::JsonInputError& e) {
    hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
    status("error", fmt::format("malformed {}: {}", text ? "JSON" : "CBOR", e.what()));
    return;
  }
  on_op(op);
}

void RosbridgeSession::data_queued(std::uint64_t key) {
  if (const auto it = by_key_.find(key); it != by_key_.end()) ++it->second->queued;
}

void RosbridgeSession::data_left(std::uint64_t key) {
  if (const auto it = by_key_.find(key); it != by_key_.end() && it->second->queued > 0) --it->second->queued;
}

void RosbridgeSession::release() {
  for (const auto& [topic, ids] : advertised_) hub_.release_outlet(topic);
  advertised_.clear();
  // The services it served: their waiting callers fail at once, then the
  // servers stop (their threads end within one spin).
  fail_served_calls("", "its WebSocket client disconnected");
  served_.clear();
  // Its goals and the actions it served end with their node (its own
  // goals' servers learn the client is gone and cancel them).
  actions_.reset();
}

void RosbridgeSession::send_op(Json op, std::function<void(const Json&)> reply) {
  if (reply) {
    const std::string id = fmt::format("shmbus-bridge:{}", next_call_++);
    op["id"] = id;
    pending_calls_[id] = std::move(reply);
  }
  send_text(dump_json(op));
}

void RosbridgeSession::status(const std::string& level, const std::string& message, const Json& id) {
  if (client_mode_) {
    // The peer is a server: what goes wrong here is for this side's log.
    spdlog::log(level == "error" ? spdlog::level::err : spdlog::level::warn, "remote link: {}", message);
    return;
  }
  // What a client is told goes to the log too (a client such as roslib
  // shows no status message): one line naming the client.
  spdlog::warn("client {}: {}: {}", peer_, level, message);
  if (level_of(level) > status_level_) return;
  Json op{{"op", "status"}, {"level", level}, {"msg", message}};
  if (!id.is_null()) op["id"] = id;
  send_text(dump_json(op));
}

schema::Json rosbridge_publish(const std::string& topic, schema::Json msg) {
  return Json{{"op", "publish"}, {"topic", topic}, {"msg", std::move(msg)}};
}

const OpTable<RosbridgeSession>& RosbridgeSession::ops() {
  static const OpTable<RosbridgeSession> table{
      {"subscribe", &RosbridgeSession::subscribe},
      {"unsubscribe", &RosbridgeSession::unsubscribe},
      {"advertise", &RosbridgeSession::advertise},
      {"unadvertise", &RosbridgeSession::unadvertise},
      {"publish", &RosbridgeSession::publish},
      {"call_service", &RosbridgeSession::call_service},
      {"advertise_service", &RosbridgeSession::advertise_service},
      {"unadvertise_service", &RosbridgeSession::unadvertise_service_op},
      {"service_response", &RosbridgeSession::service_answer},
      {"fragment", &RosbridgeSession::fragment},
      {"send_action_goal", &RosbridgeSession::send_action_goal},
      {"cancel_action_goal", &RosbridgeSession::cancel_action_goal},
      {"advertise_action", &RosbridgeSession::advertise_action},
      {"unadvertise_action", &RosbridgeSession::unadvertise_action},
      {"action_feedback", &RosbridgeSession::action_feedback},
      {"action_result", &RosbridgeSession::action_result},
      {"set_level", &RosbridgeSession::set_level},
      // Already authenticated; a client's status is informational.
      {"auth", &RosbridgeSession::ignore},
      {"status", &RosbridgeSession::ignore},
  };
  return table;
}

SessionActions& RosbridgeSession::actions() {
  if (!actions_) {
    // Made at first use: a client that never uses an action costs no node.
    auto send = [weak = weak_from_this(), &io = hub_.io()](Json op) {
      asio::post(io, [weak, op = std::move(op)] {
        const auto self = std::static_pointer_cast<RosbridgeSession>(weak.lock());
        if (self && !self->closed_) self->send_text(dump_json(op));
      });
    };
    actions_ = std::make_unique<SessionActions>(hub_, peer_, std::move(send));
  }
  return *actions_;
}

void RosbridgeSession::send_action_goal(const Json& op) {
  const std::string action = absolute(string_field(op, "action"));
  const std::string id = string_field(op, "id");
  if (action == "/" || id.empty()) throw Error(Errc::kInvalidArgument, "needs \"action\" and \"id\"");
  const Json args = op.contains("args") && !op["args"].is_null() ? op["args"] : Json::object();
  actions().send_goal(id, action, string_field(op, "action_type"), args, op.value("feedback", false));
}

void RosbridgeSession::cancel_action_goal(const Json& op) {
  actions().cancel_goal(string_field(op, "id"), absolute(string_field(op, "action")));
}

void RosbridgeSession::advertise_action(const Json& op) {
  const std::string action = absolute(string_field(op, "action"));
  const std::string type = string_field(op, "type");
  if (action == "/" || type.empty()) throw Error(Errc::kInvalidArgument, "needs \"action\" and \"type\"");
  hub_.refresh();
  actions().advertise(action, type);
}

void RosbridgeSession::unadvertise_action(const Json& op) {
  if (actions_) actions_->unadvertise(absolute(string_field(op, "action")));
}

void RosbridgeSession::action_feedback(const Json& op) {
  actions().feedback(string_field(op, "id"), absolute(string_field(op, "action")),
                     op.contains("values") ? op["values"] : Json::object());
}

void RosbridgeSession::action_result(const Json& op) {
  actions().result(string_field(op, "id"), absolute(string_field(op, "action")),
                   op.contains("values") ? op["values"] : Json::object(), static_cast<int>(number_field(op, "status")),
                   op.value("result", true));
}

void RosbridgeSession::unadvertise_service_op(const Json& op) {
  unadvertise_service(absolute(string_field(op, "service")));
}

void RosbridgeSession::set_level(const Json& op) {
  const int level = level_of(string_field(op, "level"));
  if (level < 0) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("level \"{}\" is unknown; use none, error, warning or info", string_field(op, "level")));
  }
  status_level_ = level;
}

void RosbridgeSession::on_op(const Json& op) {
  const auto refuse = [&](const std::string& message) {
    hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
    status("error", message, op.is_object() && op.contains("id") ? op["id"] : Json());
  };
  if (!op.is_object() || !op.contains("op") || !op["op"].is_string()) {
    refuse(R"(not a rosbridge operation: send a JSON object with an "op" field, e.g. {"op": "subscribe", ...})");
    return;
  }
  const std::string name = op["op"].get<std::string>();
  if (!authenticated_) {
    if (name != "auth") {
      refuse(fmt::format("{} before auth: this bridge needs {{\"op\": \"auth\", \"mac\": TOKEN}} first", name));
      close(websocket::close_code::policy_error, "not authenticated");
      return;
    }
    if (!service_shell::same_token(string_field(op, "mac"), hub_.token())) {
      hub_.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      refuse("auth: wrong token");
      close(websocket::close_code::policy_error, "wrong token");
      return;
    }
    authenticated();
    return;
  }
  if (client_mode_ && (name == "service_response" || name == "status")) {
    // Replies of the peer (a rosbridge server) to what this side sent.
    const std::string id = string_field(op, "id");
    if (const auto it = pending_calls_.find(id); it != pending_calls_.end()) {
      auto reply = std::move(it->second);
      pending_calls_.erase(it);
      reply(op);
    } else if (name == "status") {
      spdlog::warn("remote {} says ({}): {}", peer_, string_field(op, "level"), string_field(op, "msg"));
    }
    return;
  }
  const auto handler = ops().find(name);
  if (handler == nullptr) {
    refuse(fmt::format("unknown op \"{}\"; this bridge speaks rosbridge v2: {}", name, ops().names()));
    return;
  }
  try {
    (this->*handler)(op);
  } catch (const Error& e) {
    refuse(fmt::format("{}: {}", name, e.what()));
  } catch (const Json::exception& e) {
    refuse(fmt::format("{}: {}", name, e.what()));
  }
}

bool RosbridgeSession::check_type(const std::string& topic, const ChannelEntry& channel, const Json& type,
                                  const Json& id) {
  if (!type.is_string()) return true;
  const auto refusal = type_mismatch(topic, "the client", type.get<std::string>(), channel.type.name,
                                     "nothing was subscribed or published");
  if (!refusal) return true;
  hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
  status("error", *refusal, id);
  return false;
}

RosbridgeSession::Request RosbridgeSession::request_of(const Json& op, const std::string& topic) {
  const Json id = op.value("id", Json());
  Request r;
  // ms -> ns; 9e12 ms (285 years: never again) is the most that fits.
  r.throttle_ns = std::clamp<std::int64_t>(number_field(op, "throttle_rate"), 0, 9'000'000'000'000) * 1'000'000;
  r.queue_length = static_cast<std::size_t>(std::max<std::int64_t>(0, number_field(op, "queue_length")));
  const std::int64_t fragment_size = std::max<std::int64_t>(0, number_field(op, "fragment_size"));
  if (fragment_size != 0 && fragment_size < kMinFragmentSize) {
    status("warning",
           fmt::format("subscribe {}: fragment_size {} is under this bridge's least, {}; fragments of {} bytes "
                       "are sent",
                       topic, fragment_size, kMinFragmentSize, kMinFragmentSize),
           id);
  }
  r.fragment_size = static_cast<std::size_t>(fragment_size == 0 ? 0 : std::max(fragment_size, kMinFragmentSize));
  const std::string compression = string_field(op, "compression");
  if (!compression.empty() && compression != "none" && compression != "cbor") {
    status("warning",
           fmt::format("subscribe {}: compression \"{}\" is not supported; sending JSON", topic, compression), id);
  }
  r.cbor = compression == "cbor";
  // 64-bit integers as numbers (rosbridge's form) or decimal strings.
  r.int64_string = hub_.settings().json_int64 == JsonInt64::kString;
  if (const auto field = op.find("json_int64"); field != op.end()) {
    const auto form = field->is_string() ? json_int64_of(field->get<std::string>()) : std::nullopt;
    if (form) {
      r.int64_string = *form == JsonInt64::kString;
    } else {
      status("warning",
             fmt::format("subscribe {}: json_int64 {} is not \"number\" or \"string\"; using {}", topic,
                         dump_json(*field), r.int64_string ? "string" : "number"),
             id);
    }
  }
  return r;
}

namespace {

/// The most demanding of a topic's requests (rosbridge's merge).
template <typename Requests>
auto merged_request(const Requests& requests) {
  auto m = requests.begin()->second;
  for (const auto& [id, r] : requests) {
    m.throttle_ns = std::min(m.throttle_ns, r.throttle_ns);
    m.queue_length = m.queue_length == 0 || r.queue_length == 0 ? 0 : std::max(m.queue_length, r.queue_length);
    if (r.fragment_size != 0) {
      m.fragment_size = m.fragment_size == 0 ? r.fragment_size : std::min(m.fragment_size, r.fragment_size);
    }
    m.cbor = m.cbor || r.cbor;
    m.int64_string = m.int64_string || r.int64_string;
  }
  return m;
}

}  // namespace

std::size_t RosbridgeSession::subscription_count() const noexcept {
  std::size_t n = 0;
  for (const auto& [topic, sub] : subs_) n += sub.requests.size();
  for (const auto& [topic, ids] : advertised_) n += ids.size();
  return n;
}

void RosbridgeSession::subscribe(const Json& op) {
  const std::string topic = string_field(op, "topic");
  const Json id = op.contains("id") ? op["id"] : Json();
  const std::string key = string_field(op, "id");
  if (topic.empty()) throw Error(Errc::kInvalidArgument, "needs \"topic\"");
  if (!hub_.allowed(topic)) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not allowed by this bridge's allow/deny lists", topic));
  }
  auto it = subs_.find(topic);
  const bool known = it != subs_.end() && it->second.requests.contains(key);
  if (!known && subscription_count() >= hub_.settings().max_subscriptions) {
    throw Error(Errc::kResource, fmt::format("this client holds {} subscriptions, the most this bridge allows "
                                             "(max_subscriptions); unsubscribe some first",
                                             subscription_count()));
  }
  hub_.refresh();
  const ChannelEntry* channel = hub_.catalog().find(topic);
  if (channel == nullptr) {
    if (const std::string why = hub_.catalog().refused(topic); !why.empty()) {
      throw Error(Errc::kInvalidArgument, fmt::format("{} is not bridged: {}", topic, why));
    }
  } else if (!check_type(topic, *channel, op.value("type", Json()), id)) {
    return;
  }
  const std::string type = string_field(op, "type");
  if (channel == nullptr && it != subs_.end() && !type.empty() && !it->second.type.empty() &&
      short_type_name(type) != short_type_name(it->second.type)) {
    // Waiting: the types asked for must agree with each other.
    throw Error(Errc::kInvalidArgument,
                fmt::format("type {} differs from {}, which an earlier subscribe of {} named; nothing was subscribed",
                            type, it->second.type, topic));
  }
  const Request request = request_of(op, topic);
  if (it == subs_.end()) {
    it = subs_.emplace(topic, TopicSubscription{}).first;
    it->second.topic = topic;
  }
  TopicSubscription& sub = it->second;
  if (sub.type.empty()) sub.type = type;
  sub.requests[key] = request;
  const Encoding was = encoding_of(sub.merged);
  sub.merged = merged_request(sub.requests);
  if (channel == nullptr) {
    if (sub.key == 0) {
      status("info",
             fmt::format("subscribe {}: no channel {} in domain \"{}\" yet; waiting for it", topic, topic,
                         hub_.catalog().domain()),
             id);
    }
    return;
  }
  if (sub.key != 0 && was != encoding_of(sub.merged)) stop_delivery(sub);  // the encoding changes
  if (sub.key == 0) start_delivery(sub, *channel, false);
}

void RosbridgeSession::start_delivery(TopicSubscription& sub, const ChannelEntry& channel, bool from_first) {
  sub.key = next_key();
  sub.queued = 0;
  by_key_[sub.key] = &sub;
  hub_.subscribe(channel, Sink{weak_from_this(), this, sub.key, encoding_of(sub.merged)}, from_first);
}

void RosbridgeSession::stop_delivery(TopicSubscription& sub) {
  if (sub.key == 0) return;
  hub_.unsubscribe(sub.topic, this, sub.key);
  by_key_.erase(sub.key);
  sub.key = 0;
}

void RosbridgeSession::channels_changed(const std::vector<const ChannelEntry*>& added,
                                        const std::vector<ChannelEntry>& removed) {
  if (closed_) return;
  for (const ChannelEntry& e : removed) {
    if (const auto it = subs_.find(e.name); it != subs_.end()) stop_delivery(it->second);
  }
  for (const ChannelEntry* e : added) {
    const auto it = subs_.find(e->name);
    if (it == subs_.end() || it->second.key != 0) continue;
    if (const auto refusal =
            type_mismatch(e->name, "the client", it->second.type, e->type.name, "the subscription is dropped")) {
      hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
      for (const auto& [id, request] : it->second.requests) {
        status("error", *refusal, id.empty() ? Json() : Json(id));
      }
      subs_.erase(it);
      continue;
    }
    start_delivery(it->second, *e, true);
  }
}

void RosbridgeSession::unsubscribe(const Json& op) {
  const std::string topic = string_field(op, "topic");
  const auto it = subs_.find(topic);
  if (it == subs_.end()) {
    status("warning", fmt::format("unsubscribe {}: not subscribed", topic), op.value("id", Json()));
    return;
  }
  TopicSubscription& sub = it->second;
  if (op.contains("id")) {
    // One subscription of the topic: the others keep theirs.
    const std::string id = string_field(op, "id");
    if (sub.requests.erase(id) == 0) {
      status("warning", fmt::format("unsubscribe {}: no subscription with id \"{}\"", topic, id), op["id"]);
      return;
    }
    if (!sub.requests.empty()) {
      const Encoding was = encoding_of(sub.merged);
      sub.merged = merged_request(sub.requests);
      if (sub.key != 0 && was != encoding_of(sub.merged)) {
        const ChannelEntry* channel = hub_.catalog().find(topic);
        stop_delivery(sub);
        if (channel != nullptr) start_delivery(sub, *channel, false);
      }
      return;
    }
  }
  stop_delivery(sub);
  subs_.erase(it);
}

void RosbridgeSession::advertise(const Json& op) {
  const std::string topic = string_field(op, "topic");
  const std::string type = string_field(op, "type");
  if (topic.empty() || type.empty()) throw Error(Errc::kInvalidArgument, "needs \"topic\" and \"type\"");
  if (!hub_.allowed(topic)) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not allowed by this bridge's allow/deny lists", topic));
  }
  const std::string id = string_field(op, "id");
  const auto held = advertised_.find(topic);
  if (held != advertised_.end() && held->second.contains(id)) return;
  if (subscription_count() >= hub_.settings().max_subscriptions) {
    throw Error(Errc::kResource, fmt::format("this client holds {} subscribe and advertise ids, the most this bridge "
                                             "allows (max_subscriptions); unadvertise some first",
                                             subscription_count()));
  }
  if (held != advertised_.end()) {
    // Another id of a topic this client publishes: the type must agree.
    const auto& out = hub_.outlet(topic);
    const std::string carried = out.schema ? out.schema->root().name : std::string{"shmbus/Bytes"};
    if (const auto refusal = type_mismatch(topic, "the client", type, carried, "nothing was advertised")) {
      hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
      status("error", *refusal, op.value("id", Json()));
      return;
    }
    held->second.insert(id);
    return;
  }
  hub_.refresh();
  const ChannelEntry* channel = hub_.catalog().find(topic);
  if (const std::string why = hub_.catalog().refused(topic); !why.empty()) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not bridged: {}", topic, why));
  }
  ChannelEntry made;
  if (channel == nullptr) {
    // A new channel, within what a client may make.
    made = hub_.plan_channel(topic, type, created_.size());
    channel = &made;
  }
  if (!check_type(topic, *channel, op["type"], op.value("id", Json()))) return;
  hub_.acquire_outlet(*channel, channel == &made);
  advertised_[topic].insert(id);
  if (channel == &made) created_.insert(topic);
}

void RosbridgeSession::unadvertise(const Json& op) {
  const std::string topic = string_field(op, "topic");
  const auto it = advertised_.find(topic);
  if (it == advertised_.end()) return;
  // With an id, that advertisement only; without, every one of the topic.
  if (op.contains("id")) {
    it->second.erase(string_field(op, "id"));
    if (!it->second.empty()) return;
  }
  created_.erase(topic);
  hub_.release_outlet(topic);
  advertised_.erase(it);
}

void RosbridgeSession::publish(const Json& op) {
  const std::string topic = string_field(op, "topic");
  if (topic.empty() || !op.contains("msg")) throw Error(Errc::kInvalidArgument, "needs \"topic\" and \"msg\"");
  if (!advertised_.contains(topic)) {
    // rosbridge advertises on first publish; the type is the channel's.
    hub_.refresh();
    const ChannelEntry* channel = hub_.catalog().find(topic);
    if (channel == nullptr) {
      throw Error(Errc::kNotFound,
                  fmt::format("no channel {}: advertise it first with its type ({{\"op\": \"advertise\", \"topic\": "
                              "\"{}\", \"type\": \"pkg/Type\"}})",
                              topic, topic));
    }
    advertise(Json{{"op", "advertise"}, {"topic", topic}, {"type", channel->type.name}});
  }
  Outlet& out = hub_.outlet(topic);
  std::vector<std::byte> bytes;
  try {
    bytes = out.schema ? out.schema->encode(out.schema->with_defaults(op["msg"])) : bytes_of(op["msg"]);
  } catch (const schema::CodecError& e) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("{}: the message does not fit {}: {}; nothing was published", topic,
                            out.schema ? out.schema->root().name : std::string{"shmbus/Bytes"}, e.what()));
  }
  switch (out.publisher.publish(bytes)) {
    case PublishResult::kOk:
      hub_.counters().messages_published.fetch_add(1, std::memory_order_relaxed);
      break;
    case PublishResult::kTooLarge:
      throw Error(Errc::kInvalidArgument, fmt::format("{}: {}", topic, out.publisher.too_large(bytes.size())));
    case PublishResult::kDropped:
      status("warning", fmt::format("{}: the message was dropped (a stuck writer held its slot)", topic));
      break;
  }
}

void RosbridgeSession::service_response(const Json& op, bool result, Json values) {
  Json reply{{"op", "service_response"}, {"service", string_field(op, "service")}, {"result", result}};
  if (op.contains("id")) reply["id"] = op["id"];
  reply["values"] = std::move(values);
  send_text(dump_json(reply));
}

bool RosbridgeSession::rosapi(const std::string& service, const Json& args, Json& values) {
  hub_.refresh();
  const auto& channels = hub_.catalog().channels();
  const std::string api = service.substr(kRosapi.size());
  if (api == "topics") {
    Json topics = Json::array(), types = Json::array();
    for (const auto& [name, e] : channels) {
      if (e.service_channel || !hub_.allowed(name)) continue;
      topics.push_back(name);
      types.push_back(e.type.name);
    }
    values = Json{{"topics", std::move(topics)}, {"types", std::move(types)}};
  } else if (api == "topic_type") {
    const std::string topic = string_field(args, "topic");
    const ChannelEntry* e = hub_.catalog().find(topic);
    values = Json{{"type", e != nullptr && !e->service_channel && hub_.allowed(topic) ? e->type.name : ""}};
  } else if (api == "topics_for_type") {
    const std::string type = short_type_name(string_field(args, "type"));
    Json topics = Json::array();
    for (const auto& [name, e] : channels) {
      if (!e.service_channel && hub_.allowed(name) && e.type.name == type) topics.push_back(name);
    }
    values = Json{{"topics", std::move(topics)}};
  } else if (api == "services") {
    Json services = Json::array();
    for (const char* own : kRosapiServices) {
      services.push_back(std::string{kRosapi} + own);
    }
    for (const auto& [name, e] : channels) {
      const std::string s = service_of_request_channel(name);
      if (!s.empty() && hub_.allowed(s) && hub_.catalog().served(s)) services.push_back(s);
    }
    values = Json{{"services", std::move(services)}};
  } else if (api == "service_type") {
    const std::string s = absolute(string_field(args, "service"));
    std::string type;
    if (s.starts_with(kRosapi)) {
      type = "rosapi/" + s.substr(kRosapi.size());
    } else if (const ChannelEntry* e = hub_.catalog().find(service_request_channel(s));
               e != nullptr && hub_.allowed(s)) {
      type = service_type_of_request_type(e->type.name);
    }
    values = Json{{"type", type}};
  } else if (api == "message_details") {
    const std::string type = string_field(args, "type");
    const auto [owner, def] = hub_.catalog().find_type(type);
    if (def == nullptr) {
      values = fmt::format("message_details: no channel of domain \"{}\" carries {}", hub_.catalog().domain(), type);
      return false;
    }
    values = Json{{"typedefs", typedefs_of(*def)}};
  } else if (api == "topics_and_raw_types") {
    Json topics = Json::array(), types = Json::array(), texts = Json::array();
    for (const auto& [name, e] : channels) {
      if (e.service_channel || !hub_.allowed(name)) continue;
      topics.push_back(name);
      types.push_back(e.type.name);
      // Raw bytes: the one uint8[] Foxglove's clients are told of too.
      texts.push_back(e.schema ? schema::ros2msg_text(e.schema->root()) : std::string{schema::kBytesRos2msgText});
    }
    values = Json{{"topics", std::move(topics)}, {"types", std::move(types)}, {"typedefs_full_text", std::move(texts)}};
  } else if (api == "nodes" || api == "node_details") {
    return rosapi_nodes(api, args, values);
  } else if (api == "action_servers") {
    values = Json{{"action_servers", served_actions()}};
  } else {
    values =
        fmt::format("{} is not a rosapi service of this bridge (it has {})", service, fmt::join(kRosapiServices, ", "));
    return false;
  }
  return true;
}

Json RosbridgeSession::served_actions() const {
  Json out = Json::array();
  for (const auto& [name, e] : hub_.catalog().channels()) {
    const std::string a = action_of_channel(name);
    if (a.empty() || name != service_request_channel(action_part(a, "send_goal")) || !hub_.allowed(a)) continue;
    if (hub_.catalog().served(action_part(a, "send_goal"))) out.push_back(a);
  }
  return out;
}

bool RosbridgeSession::rosapi_nodes(const std::string& api, const Json& args, Json& values) {
  const BusGraph graph = bus_graph(hub_.catalog(), [this](std::string_view name) { return hub_.allowed(name); });
  // ROS names nodes from the root: "/camera"; shmbus's "camera" is the same node.
  const auto ros_name = [](const std::string& node) { return node.starts_with('/') ? node : "/" + node; };
  if (api == "nodes") {
    Json nodes = Json::array();
    for (const auto& [node, n] : graph.nodes) nodes.push_back(ros_name(node));
    values = Json{{"nodes", std::move(nodes)}};
    return true;
  }
  const std::string wanted = string_field(args, "node");
  for (const auto& [node, n] : graph.nodes) {
    if (ros_name(node) != ros_name(wanted)) continue;
    values =
        Json{{"subscribing", n.subscribing}, {"publishing", n.publishing}, {"services", n.serving}, {"pids", n.pids}};
    return true;
  }
  values = fmt::format("no node {} in domain \"{}\" (/rosapi/nodes lists them)", wanted, hub_.catalog().domain());
  return false;
}

bool RosbridgeSession::rosapi_params(const std::string& api, const Json& op, const Json& args) {
  if (api == "get_param_names") {
    rosapi_param_names(op);
    return true;
  }
  if (api != "get_param" && api != "set_param") return false;
  const std::string name = string_field(args, "name");
  const auto where = node_and_param(name);
  if (!where) {
    service_response(op, false, fmt::format("{}: name '{}' is not /node:parameter", api, name));
    return true;
  }
  std::optional<std::string> refused =
      api == "get_param" ? rosapi_get_param(op, where->first, where->second, string_field(args, "default_value"))
                         : rosapi_set_param(op, name, where->first, where->second, string_field(args, "value"));
  if (refused) service_response(op, false, *refused);
  return true;
}

std::function<void(bool, Json)> RosbridgeSession::answerer(const Json& op) {
  // Each answer comes on a service's worker thread: handed to the io
  // thread, where this session answers (if it is still there).
  return [weak = weak_from_this(), &io = hub_.io(), op](bool ok, Json values) {
    asio::post(io, [weak, op, ok, values = std::move(values)]() mutable {
      if (const auto self = std::static_pointer_cast<RosbridgeSession>(weak.lock())) {
        self->service_response(op, ok, std::move(values));
      }
    });
  };
}

void RosbridgeSession::rosapi_param_names(const Json& op) {
  const std::chrono::nanoseconds timeout = hub_.settings().service_timeout;
  const auto answer = answerer(op);
  // Every node that serves list_parameters, asked at once; answered when
  // the last has answered (or failed: its names are left out).
  hub_.refresh();
  std::vector<std::string> nodes;
  for (const auto& [name, e] : hub_.catalog().channels()) {
    const std::string s = service_of_request_channel(name);
    if (s.ends_with("/list_parameters") && hub_.allowed(s) && hub_.catalog().served(s)) {
      nodes.push_back(s.substr(0, s.size() - std::string_view("/list_parameters").size()));
    }
  }
  struct Gather {
    std::mutex mutex;
    std::size_t pending = 0;
    std::vector<std::string> names;
  };
  auto gather = std::make_shared<Gather>();
  gather->pending = nodes.size() + 1;  // + this loop, done below
  const auto one_done = [gather, answer](std::vector<std::string> found) {
    std::vector<std::string> all;
    {
      const std::lock_guard lock(gather->mutex);
      gather->names.insert(gather->names.end(), found.begin(), found.end());
      if (--gather->pending != 0) return;
      all = gather->names;
    }
    std::sort(all.begin(), all.end());
    answer(true, Json{{"names", all}});
  };
  for (const std::string& node : nodes) {
    const auto refused = hub_.call_service(node + "/list_parameters", Json::object(), timeout,
                                           [node, one_done](ServiceCaller::Result r) {
                                             std::vector<std::string> found;
                                             if (r.status == CallStatus::kOk) {
                                               for (const auto& n : r.response["result"]["names"]) {
                                                 found.push_back(node + ":" + n.get<std::string>());
                                               }
                                             }
                                             one_done(std::move(found));
                                           });
    if (refused) one_done({});
  }
  one_done({});
}

std::optional<std::string> RosbridgeSession::rosapi_get_param(const Json& op, const std::string& node,
                                                              const std::string& param, const std::string& fallback) {
  const auto answer = answerer(op);
  return hub_.call_service(node + "/get_parameters", Json{{"names", {param}}}, hub_.settings().service_timeout,
                           [answer, fallback](ServiceCaller::Result r) {
                             if (r.status != CallStatus::kOk) return answer(false, Json(r.error));
                             const Json& values = r.response["values"];
                             const std::string text = values.empty() ? std::string{} : rosapi_value_text(values[0]);
                             // As rosapi answers: the default when not set; successful false
                             // when there is neither.
                             const std::string value = text.empty() ? fallback : text;
                             answer(true, Json{{"value", value},
                                               {"successful", !value.empty()},
                                               {"reason", value.empty() ? "parameter not set" : ""}});
                           });
}

std::optional<std::string> RosbridgeSession::rosapi_set_param(const Json& op, const std::string& name,
                                                              const std::string& node, const std::string& param,
                                                              const std::string& text) {
  const auto value = rosapi_parameter_value(text);
  if (!value) {
    return fmt::format(
        "set_param {}: the value is not a ROS 2 parameter (a bool, number, string, or a list of one "
        "of those)",
        name);
  }
  const auto answer = answerer(op);
  return hub_.call_service(
      node + "/set_parameters", Json{{"parameters", {Json{{"name", param}, {"value", *value}}}}},
      hub_.settings().service_timeout, [answer, name](ServiceCaller::Result r) {
        if (r.status != CallStatus::kOk) return answer(false, Json(r.error));
        // A refusal is the node's answer, said as rosapi says it.
        const Json& results = r.response["results"];
        const bool ok = !results.empty() && results[0].value("successful", false);
        std::string reason;
        if (!ok) {
          reason = fmt::format("set_param {}: refused: {}", name,
                               results.empty() ? std::string("no result") : results[0].value("reason", std::string{}));
        }
        answer(true, Json{{"successful", ok}, {"reason", reason}});
      });
}

void RosbridgeSession::call_service(const Json& op) {
  const std::string service = absolute(string_field(op, "service"));
  const Json args = op.contains("args") && !op["args"].is_null() ? op["args"] : Json::object();
  if (service == "/") throw Error(Errc::kInvalidArgument, "needs \"service\"");
  if (service.starts_with(kRosapi)) {
    if (rosapi_params(service.substr(kRosapi.size()), op, args)) return;
    Json values;
    const bool ok = rosapi(service, args, values);
    service_response(op, ok, std::move(values));
    return;
  }
  std::chrono::nanoseconds timeout = hub_.settings().service_timeout;
  if (const auto t = op.find("timeout"); t != op.end() && t->is_number() && t->get<double>() > 0) {
    timeout = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(t->get<double>(), 3600.0) * 1e9));
  }
  auto done = [weak = weak_from_this(), &io = hub_.io(), op](ServiceCaller::Result r) {
    asio::post(io, [weak, op, r = std::move(r)]() mutable {
      if (const auto self = std::static_pointer_cast<RosbridgeSession>(weak.lock())) {
        const bool ok = r.status == CallStatus::kOk;
        self->service_response(op, ok, ok ? std::move(r.response) : Json(r.error));
      }
    });
  };
  if (const auto refused = hub_.call_service(service, args, timeout, std::move(done))) {
    service_response(op, false, *refused);
  }
}

void RosbridgeSession::advertise_service(const Json& op) {
  const std::string service = absolute(string_field(op, "service"));
  const std::string type = short_type_name(string_field(op, "type"));
  if (service == "/" || type.empty()) throw Error(Errc::kInvalidArgument, "needs \"service\" and \"type\"");
  if (!hub_.allowed(service)) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not allowed by this bridge's allow/deny lists", service));
  }
  if (served_.contains(service)) return;
  hub_.refresh();
  // The request and response schemas: the service's channels', else those
  // of a channel of the domain that carries the types.
  const auto schema_for = [&](const std::string& channel, const std::string& type_name) {
    if (const ChannelEntry* e = hub_.catalog().find(channel)) {
      if (e->type.name != type_name || !e->schema) {
        throw Error(Errc::kTypeMismatch,
                    fmt::format("type mismatch on {}: the client says {}, the service carries {}; not advertised",
                                service, type, service_type_of_request_type(e->type.name)));
      }
      return e->schema;
    }
    const auto [owner, def] = hub_.catalog().find_type(type_name);
    if (def == nullptr) {
      throw Error(Errc::kNotFound,
                  fmt::format("cannot serve {}: no channel of domain \"{}\" carries {}, so the bridge has no schema "
                              "for it",
                              service, hub_.catalog().domain(), type_name));
    }
    return std::make_shared<const schema::Schema>(
        schema::Schema::from_canonical(schema::MessageSet::canonical_text(*def)));
  };
  auto request = schema_for(service_request_channel(service), service_request_type(type));
  auto response = schema_for(service_response_channel(service), service_response_type(type));
  const ServiceTypes types{type, request->type_info(), response->type_info()};
  auto ask = [weak = weak_from_this(), &io = hub_.io(), service](Json args, ClientService::Answer answer) {
    asio::post(io, [weak, service, args = std::move(args), answer = std::move(answer)]() mutable {
      const auto self = std::static_pointer_cast<RosbridgeSession>(weak.lock());
      if (!self || self->closed_) {
        answer(false, "its WebSocket client disconnected");
        return;
      }
      const std::string id = fmt::format("{}:{}", service, self->next_served_call_++);
      self->served_calls_[id] = std::move(answer);
      self->send_text(
          dump_json(Json{{"op", "call_service"}, {"id", id}, {"service", service}, {"args", std::move(args)}}));
    });
  };
  served_[service] = std::make_unique<ClientService>(hub_.context(), service, types, std::move(request),
                                                     std::move(response), hub_.settings().service_timeout,
                                                     hub_.settings().json_int64 == JsonInt64::kString, std::move(ask));
  spdlog::info("client {} serves {} ({})", peer_, service, type);
}

void RosbridgeSession::unadvertise_service(const std::string& service) {
  const auto it = served_.find(service);
  if (it == served_.end()) return;
  fail_served_calls(service + ":", "the service was unadvertised");
  served_.erase(it);
}

void RosbridgeSession::service_answer(const Json& op) {
  const std::string id = string_field(op, "id");
  const auto it = served_calls_.find(id);
  if (it == served_calls_.end()) {
    status("warning",
           fmt::format("service_response for id \"{}\", which no call is waiting for (late, or unknown)", id));
    return;
  }
  auto answer = std::move(it->second);
  served_calls_.erase(it);
  answer(op.value("result", true), op.contains("values") ? op["values"] : Json::object());
}

void RosbridgeSession::fail_served_calls(const std::string& prefix, const std::string& why) {
  for (auto it = served_calls_.begin(); it != served_calls_.end();) {
    if (it->first.starts_with(prefix)) {
      it->second(false, why);
      it = served_calls_.erase(it);
    } else {
      ++it;
    }
  }
}

void RosbridgeSession::fragment(const Json& op) {
  const std::string id = string_field(op, "id");
  const std::string data = string_field(op, "data");
  const std::int64_t num = number_field(op, "num");
  const std::int64_t total = number_field(op, "total");
  if (id.empty() || total < 1 || num < 0 || num >= total || total > 100'000) {
    throw Error(Errc::kInvalidArgument, "needs \"id\", \"data\", 0 <= \"num\" < \"total\" <= 100000");
  }
  if (!fragments_.contains(id) && fragments_.size() >= 16) {
    throw Error(Errc::kResource, "more than 16 fragmented messages in progress; finish one first");
  }
  Fragments& f = fragments_[id];
  if (f.parts.empty()) f.parts.resize(static_cast<std::size_t>(total));
  if (f.parts.size() != static_cast<std::size_t>(total)) {
    fragments_.erase(id);
    throw Error(Errc::kInvalidArgument, fmt::format("fragment {}: total changed; the message is dropped", id));
  }
  auto& part = f.parts[static_cast<std::size_t>(num)];
  if (part.empty() && !data.empty()) ++f.received;
  f.bytes += data.size() - part.size();
  part = data;
  if (f.bytes > hub_.settings().max_frame_bytes) {
    fragments_.erase(id);
    throw Error(Errc::kInvalidArgument, fmt::format("fragment {}: the message is over max_frame_bytes ({}); dropped",
                                                    id, hub_.settings().max_frame_bytes));
  }
  if (f.received < f.parts.size()) return;
  std::string whole;
  whole.reserve(f.bytes);
  for (const std::string& p : f.parts) whole += p;
  fragments_.erase(id);
  on_frame(whole, true);
}

void RosbridgeSession::send(const TopicSubscription& sub, const OutMessage& message) {
  const Request& r = sub.merged;
  const auto& body = message.encoded[static_cast<std::size_t>(encoding_of(r))];
  if (!body) return;
  if (r.fragment_size != 0 && !r.cbor && body->size() > r.fragment_size) {
    // Pieces of at most fragment_size bytes, each ending on a character
    // boundary (a UTF-8 sequence cut in two is not text; rosbridge cuts
    // between characters too).
    std::vector<std::size_t> ends;
    for (std::size_t start = 0; start < body->size();) {
      std::size_t end = std::min(start + r.fragment_size, body->size());
      while (end < body->size() && end > start + 1 && (static_cast<unsigned char>((*body)[end]) & 0xC0) == 0x80) --end;
      ends.push_back(end);
      start = end;
    }
    const std::size_t total = ends.size();
    const std::string id = fmt::format("{}#{}", sub.topic, message.sequence);
    // The whole message's room first (the fragments' JSON adds about 80
    // bytes each, escapes up to 6 per byte): it is queued or dropped whole.
    if (closed_ || !make_room(total, body->size() + total * 80)) return;
    const std::uint64_t group = next_group();
    if (const auto it = by_key_.find(sub.key); it != by_key_.end()) ++it->second->queued;
    for (std::size_t i = 0; i < total; ++i) {
      const std::size_t start = i == 0 ? 0 : ends[i - 1];
      Frame f;
      f.body = std::make_shared<const std::string>(dump_json(Json{{"op", "fragment"},
                                                                  {"id", id},
                                                                  {"data", body->substr(start, ends[i] - start)},
                                                                  {"num", i},
                                                                  {"total", total}}));
      f.subscription = sub.key;
      f.group = group;
      push(std::move(f));
    }
    return;
  }
  Frame f;
  f.body = body;
  f.binary = r.cbor;
  f.subscription = sub.key;
  enqueue(std::move(f));
}

void RosbridgeSession::deliver(const OutMessage& message, std::uint64_t key) {
  if (closed_) return;
  const auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  TopicSubscription& sub = *it->second;
  if (sub.merged.throttle_ns != 0) {
    const std::int64_t now = mono_now_ns();
    // The first message always goes (a throttle longer than the uptime
    // would hold it back otherwise).
    if (sub.last_sent_ns != 0 && now - sub.last_sent_ns < sub.merged.throttle_ns) return;  // asked for: not a loss
    sub.last_sent_ns = now;
  }
  if (sub.merged.queue_length != 0 && sub.queued >= sub.merged.queue_length) {
    // The subscription's own bound: its oldest queued message gives way.
    drop_oldest_of(sub.key);
  }
  send(sub, message);
}

}  // namespace shmbus::bridge
