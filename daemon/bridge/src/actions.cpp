#include "actions.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "hub.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus::bridge {

using schema::Json;

namespace {

/// The fields of `message` (decoded JSON) under `field`: the goal, the
/// feedback, the result.
Json field_of(const Json& message, const char* field) {
  const auto it = message.find(field);
  return it == message.end() ? Json::object() : *it;
}

Json uuid_json(const action::GoalId& id) { return Json{{"uuid", std::vector<int>(id.begin(), id.end())}}; }

}  // namespace

SessionActions::SessionActions(Hub& hub, std::string peer, Send send)
    : hub_(hub),
      peer_(std::move(peer)),
      send_(std::move(send)),
      int64_as_string_(hub.settings().json_int64 == JsonInt64::kString),
      node_("shmbus-bridge", hub.context(), NodeOptions{.handle_signals = false}),
      spinner_([this] { node_.spin(); }) {}

SessionActions::~SessionActions() {
  node_.stop();
  spinner_.join();
  // Before the node (they end their subscriptions on it), and outside the
  // lock: a client's thread may be in a callback that takes it.
  std::map<std::string, std::unique_ptr<action::Client>> clients;
  std::map<std::string, Served> served;
  {
    const std::lock_guard lock(mutex_);
    clients.swap(clients_);
    served.swap(served_);
  }
  clients.clear();
  served.clear();
}

SessionActions::Typed SessionActions::typed(const std::string& action, const std::string& type) const {
  const std::string short_type = short_type_name(type);
  if (short_type.empty()) {
    throw Error(Errc::kInvalidArgument, fmt::format("{}: give its action type (package/action/Name)", action));
  }
  const std::string send_goal = short_type + std::string{kActionSendGoalSuffix};
  const std::string get_result = short_type + std::string{kActionGetResultSuffix};
  Typed t;
  t.send_goal_request = hub_.schema_of_type(service_request_type(send_goal));
  t.get_result_response = hub_.schema_of_type(service_response_type(get_result));
  t.feedback_message = hub_.schema_of_type(short_type + std::string{kActionFeedbackMessageSuffix});
  t.types = {
      short_type,
      {send_goal, t.send_goal_request->type_info(), hub_.schema_of_type(service_response_type(send_goal))->type_info()},
      {get_result, hub_.schema_of_type(service_request_type(get_result))->type_info(),
       t.get_result_response->type_info()},
      t.feedback_message->type_info()};
  return t;
}

std::size_t SessionActions::actions_in_use() const { return clients_.size() + served_.size(); }

void SessionActions::send_goal(const std::string& request_id, const std::string& action, const std::string& type,
                               const Json& args, bool feedback) {
  if (!hub_.allowed(action)) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not allowed by this bridge's allow/deny lists", action));
  }
  std::unique_lock lock(mutex_);
  if (goals_.contains(request_id)) {
    throw Error(Errc::kInvalidArgument, fmt::format("a goal of id \"{}\" is in flight already", request_id));
  }
  if (goals_.size() >= kMaxGoals) {
    throw Error(Errc::kResource, fmt::format("{} goals of this client are in flight, the most a client may have; "
                                             "wait for one to end",
                                             kMaxGoals));
  }
  auto it = clients_.find(action);
  if (it == clients_.end()) {
    if (actions_in_use() >= kMaxActions) {
      throw Error(Errc::kResource, fmt::format("this client uses {} actions, the most it may", kMaxActions));
    }
    lock.unlock();
    Typed t = typed(action, type);
    auto client = std::make_unique<action::Client>(node_, action, t.types, action::ClientOptions{});
    lock.lock();
    client_types_[action] = std::move(t);
    it = clients_.emplace(action, std::move(client)).first;
  }
  const Typed& t = client_types_.at(action);
  if (!type.empty() && short_type_name(type) != t.types.action_type) {
    throw Error(Errc::kTypeMismatch,
                fmt::format("{} is used as {} by this client, not {}", action, t.types.action_type, type));
  }
  const action::GoalId id = action::random_goal_id();
  Json request = t.send_goal_request->with_defaults(Json{{"goal", args.is_object() ? args : Json::object()}});
  request["goal_id"] = uuid_json(id);
  std::vector<std::byte> bytes = t.send_goal_request->encode(request);  // a bad field throws: said to the client
  goals_[request_id] = Sent{action, id};
  action::Client::GoalCallbacks cb;
  cb.response = [this, request_id, action](bool accepted, std::int64_t, const std::string& error) {
    if (accepted) return;
    // Rejected, or the request failed: the goal's end, as rosbridge says it.
    {
      const std::lock_guard l(mutex_);
      goals_.erase(request_id);
    }
    send_(Json{{"op", "action_result"},
               {"id", request_id},
               {"action", action},
               {"values", error.empty() ? Json("the goal was rejected") : Json(error)},
               {"status", static_cast<int>(action::GoalStatus::kAborted)},
               {"result", false}});
  };
  if (feedback) {
    cb.feedback = [this, request_id, action, schema = t.feedback_message](std::span<const std::byte> message) {
      send_(Json{{"op", "action_feedback"},
                 {"id", request_id},
                 {"action", action},
                 {"values", field_of(schema->decode(message, int64_as_string_), "feedback")}});
    };
  }
  cb.result = [this, request_id, action, t](const action::GoalOutcome& outcome) {
    goal_ended(request_id, action, outcome, t);
  };
  it->second->send_goal(id, std::move(bytes), std::move(cb));
}

void SessionActions::goal_ended(const std::string& request_id, const std::string& action,
                                const action::GoalOutcome& outcome, const Typed& t) {
  {
    const std::lock_guard lock(mutex_);
    goals_.erase(request_id);
  }
  Json values = outcome.error.empty() && !outcome.result_response.empty()
                    ? field_of(t.get_result_response->decode(outcome.result_response, int64_as_string_), "result")
                    : Json(outcome.error);
  send_(Json{{"op", "action_result"},
             {"id", request_id},
             {"action", action},
             {"values", std::move(values)},
             {"status", static_cast<int>(outcome.status)},
             {"result", outcome.error.empty()}});
}

void SessionActions::cancel_goal(const std::string& request_id, const std::string& action) {
  const std::lock_guard lock(mutex_);
  const auto it = goals_.find(request_id);
  if (it == goals_.end() || it->second.action != action) {
    throw Error(Errc::kNotFound,
                fmt::format("no goal \"{}\" of {} is in flight for this client (it ended, or was never sent)",
                            request_id, action));
  }
  clients_.at(action)->cancel_goal(it->second.id, 0, nullptr);
}

void SessionActions::advertise(const std::string& action, const std::string& type) {
  if (!hub_.allowed(action)) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} is not allowed by this bridge's allow/deny lists", action));
  }
  {
    const std::lock_guard lock(mutex_);
    if (served_.contains(action)) return;
    if (actions_in_use() >= kMaxActions) {
      throw Error(Errc::kResource, fmt::format("this client uses {} actions, the most it may", kMaxActions));
    }
  }
  Typed t = typed(action, type);
  action::Server::Callbacks cb;
  cb.goal = [this, action, schema = t.send_goal_request](const action::GoalId& id, std::span<const std::byte> request) {
    // The client cannot refuse a goal in rosbridge's protocol: accepted,
    // then handed to it.
    send_(Json{{"op", "send_action_goal"},
               {"id", action::to_string(id)},
               {"action", action},
               {"args", field_of(schema->decode(request, int64_as_string_), "goal")},
               {"feedback", true}});
    return action::GoalResponse::kAcceptAndExecute;
  };
  cb.cancel = [this, action](const action::GoalId& id) {
    send_(Json{{"op", "cancel_action_goal"}, {"id", action::to_string(id)}, {"action", action}});
    return action::CancelResponse::kAccept;
  };
  cb.unknown_result = t.get_result_response->encode(t.get_result_response->with_defaults(Json::object()));
  auto server = std::make_unique<action::Server>(node_, action, t.types, std::move(cb), action::ServerOptions{});
  const std::lock_guard lock(mutex_);
  served_[action] = Served{std::move(t), std::move(server)};
  spdlog::info("client {} serves action {} ({})", peer_, action, type);
}

void SessionActions::unadvertise(const std::string& action) {
  std::unique_ptr<action::Server> gone;
  {
    const std::lock_guard lock(mutex_);
    const auto it = served_.find(action);
    if (it == served_.end()) return;
    gone = std::move(it->second.server);
    served_.erase(it);
  }
}

void SessionActions::feedback(const std::string& goal, const std::string& action, const Json& values) {
  const std::optional<action::GoalId> id = action::goal_id_from_string(goal);
  const std::lock_guard lock(mutex_);
  const auto it = served_.find(action);
  if (it == served_.end() || !id) {
    throw Error(Errc::kNotFound,
                fmt::format("action_feedback for goal \"{}\" of {}, which this client does not serve", goal, action));
  }
  const auto& schema = *it->second.typed.feedback_message;
  Json message = schema.with_defaults(Json{{"feedback", values.is_object() ? values : Json::object()}});
  message["goal_id"] = uuid_json(*id);
  if (!it->second.server->publish_feedback(*id, schema.encode(message))) {
    throw Error(Errc::kNotFound, fmt::format("action_feedback for goal {} of {}, which is not live", goal, action));
  }
}

void SessionActions::result(const std::string& goal, const std::string& action, const Json& values, int status,
                            bool ok) {
  const std::optional<action::GoalId> id = action::goal_id_from_string(goal);
  const std::lock_guard lock(mutex_);
  const auto it = served_.find(action);
  if (it == served_.end() || !id) {
    throw Error(Errc::kNotFound,
                fmt::format("action_result for goal \"{}\" of {}, which this client does not serve", goal, action));
  }
  const auto end = ok ? static_cast<action::GoalStatus>(status) : action::GoalStatus::kAborted;
  const auto& schema = *it->second.typed.get_result_response;
  Json response = schema.with_defaults(Json{{"result", values.is_object() ? values : Json::object()}});
  response["status"] = static_cast<int>(end);
  if (!it->second.server->finish(*id, end, schema.encode(response))) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("action_result for goal {} of {}: it cannot end {} now (it is {})", goal, action,
                            action::to_string(end), action::to_string(it->second.server->status(*id))));
  }
}

}  // namespace shmbus::bridge
