// shmtool action list | info NAME | send_goal NAME [TYPE] GOAL [--feedback]:
// the domain's actions, as `ros2 action` shows and drives them.
#include <fmt/format.h>

#include <mutex>
#include <optional>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/action.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/node.hpp"

namespace shmbus::tool {
namespace {

using schema::Json;
namespace aintro = action::introspect;

/// `text`, each line indented by `spaces` (ros2 action's layout).
std::string indent(const std::string& text, std::size_t spaces) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    out += std::string(spaces, ' ') + text.substr(pos, eol - pos) + "\n";
    pos = eol + 1;
  }
  return out;
}

std::string server_text(const aintro::ActionView& v) {
  return v.server ? fmt::format("pid {} ({})", v.server->pid, v.server->node) : "none";
}

Json goal_json(const aintro::ActionView::Goal& g) {
  return Json{{"id", action::to_string(g.id)},
              {"status", std::string(action::to_string(g.status))},
              {"accepted_ns", g.stamp_ns}};
}

Json action_json(const aintro::ActionView& v) {
  Json clients = Json::array();
  for (const auto& c : v.clients) clients.push_back(Json{{"pid", c.pid}, {"node", c.node}});
  Json goals = Json::array();
  for (const auto& g : v.goals) goals.push_back(goal_json(g));
  return Json{{"name", v.name},
              {"type", v.action_type},
              {"server", v.server ? Json{{"pid", v.server->pid}, {"node", v.server->node}} : Json(nullptr)},
              {"clients", clients},
              {"goals", goals}};
}

std::size_t live_goals(const aintro::ActionView& v) {
  std::size_t n = 0;
  for (const auto& g : v.goals) n += action::is_terminal(g.status) ? 0 : 1;
  return n;
}

std::optional<aintro::ActionView> view_of(Context& ctx, std::string_view name) {
  try {
    return aintro::action_view(ctx, name);
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
    return std::nullopt;
  }
}

aintro::ActionView open_action(Context& ctx, const Config& config, std::string_view name) {
  validate_channel_name(name);
  auto v = view_of(ctx, name);
  if (!v) {
    throw Error(Errc::kNotFound,
                fmt::format("action {} not found in domain \"{}\"; `shmtool action list --domain {}` shows its actions",
                            name, config.domain, config.domain));
  }
  return *v;
}

/// The action's types as its channels store them, and their schemas;
/// nullopt until all its channels exist.
struct Typed {
  action::ActionTypes types;
  schema::Schema send_goal;
  schema::Schema result;
  schema::Schema feedback;
  bool served = false;  ///< a live server serves its send-goal service
};

std::optional<Typed> typed(const Config& config, std::string_view name) {
  try {
    const auto send = introspect::service_view(config.domain, action_part(name, "send_goal"), config.access());
    const auto get = introspect::service_view(config.domain, action_part(name, "get_result"), config.access());
    const auto fb =
        introspect::ChannelReader(config.domain, action_part(name, "feedback"), false, config.access()).view();
    if (!send.responses || !get.responses) return std::nullopt;
    const auto a = schema_of(send.requests);
    const auto b = schema_of(*get.responses);
    const auto c = schema_of(fb);
    if (!a || !b || !c) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("action {} has no stored schema; shmtool can only drive typed actions", name));
    }
    const std::string type = action_type_of_send_goal_request(send.requests.type_name);
    return Typed{{type,
                  {type + std::string{kActionSendGoalSuffix}, send.requests.type(), send.responses->type()},
                  {type + std::string{kActionGetResultSuffix}, get.requests.type(), get.responses->type()},
                  fb.type()},
                 *a,
                 *b,
                 *c,
                 send.server.has_value()};
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
    return std::nullopt;
  }
}

/// One goal's life as the client sees it, filled from the client's threads.
struct GoalState {
  std::mutex mutex;
  std::optional<bool> accepted;
  std::string error;
  std::vector<Json> feedback;
  std::optional<action::GoalOutcome> outcome;
};

/// The action's typed channels, waiting up to `deadline` for them and a server.
std::optional<Typed> await_action(const Config& config, std::string_view name, std::int64_t deadline) {
  for (;;) {
    if (auto t = typed(config, name); t && t->served) return t;
    if (mono_now_ns() >= deadline || !sleep_until(std::min(deadline, mono_now_ns() + 10'000'000))) return std::nullopt;
  }
}

int report_outcome(const Globals& g, const ActionGoalOptions& o, const Typed& t, const GoalState& s,
                   const action::GoalId& id) {
  const action::GoalOutcome& out = *s.outcome;
  Json result;
  if (!out.result_response.empty()) {
    result = t.result.decode(out.result_response).value("result", Json::object());
  }
  const std::string status = std::string(action::to_string(out.status));
  if (g.json) {
    print_json(Json{{"action", o.name},
                    {"goal_id", action::to_string(id)},
                    {"status", status},
                    {"result", result},
                    {"feedback", s.feedback},
                    {"error", out.error}});
  } else {
    print(fmt::format("Result:\n{}\nGoal finished with status: {}\n", indent(to_yaml(result), 4),
                      status == "succeeded"  ? "SUCCEEDED"
                      : status == "aborted"  ? "ABORTED"
                      : status == "canceled" ? "CANCELED"
                                             : "UNKNOWN"));
  }
  if (!out.error.empty()) throw Error(Errc::kResource, fmt::format("action {}: {}", o.name, out.error));
  return out.status == action::GoalStatus::kSucceeded ? 0 : 1;
}

}  // namespace

int run_action_list(const Globals& g) {
  const Config config = load_config(g);
  Context ctx = make_context(config);
  std::vector<aintro::ActionView> actions;
  try {
    const introspect::DomainView domain(config.domain, config.access());
    for (const std::string& name : aintro::action_names(domain)) {
      if (auto v = view_of(ctx, name)) actions.push_back(std::move(*v));
    }
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;  // no domain yet: no actions
  }
  if (g.json) {
    Json out = Json::array();
    for (const auto& v : actions) out.push_back(action_json(v));
    print_json(out);
    return 0;
  }
  if (actions.empty()) {
    print(fmt::format("no actions in domain \"{}\"\n", config.domain));
    return 0;
  }
  Table t({"ACTION", "TYPE", "SERVER", "CLIENTS>", "LIVE GOALS>", "GOALS>"});
  for (const auto& v : actions) {
    t.add({v.name, v.action_type, server_text(v), std::to_string(v.clients.size()), std::to_string(live_goals(v)),
           std::to_string(v.goals.size())});
  }
  print(t.render());
  return 0;
}

int run_action_info(const Globals& g, const std::string& name) {
  const Config config = load_config(g);
  Context ctx = make_context(config);
  const aintro::ActionView v = open_action(ctx, config, name);
  if (g.json) {
    print_json(action_json(v));
    return 0;
  }
  std::string out = fmt::format("action:  {}\ntype:    {}\nserver:  {}\nclients ({}):\n", v.name, v.action_type,
                                server_text(v), v.clients.size());
  if (!v.clients.empty()) {
    Table t({"PID>", "NODE"});
    for (const auto& c : v.clients) t.add({std::to_string(c.pid), c.node});
    out += t.render(2);
  }
  out += fmt::format("goals ({} live, {} held):\n", live_goals(v), v.goals.size());
  if (!v.goals.empty()) {
    Table t({"GOAL", "STATUS", "ACCEPTED"});
    for (const auto& goal : v.goals) {
      t.add({action::to_string(goal.id), std::string(action::to_string(goal.status)),
             fmt::format("{:.3f}", static_cast<double>(goal.stamp_ns) / 1e9)});
    }
    out += t.render(2);
  }
  print(out);
  return 0;
}

int run_action_send_goal(const Globals& g, const ActionGoalOptions& o) {
  const Config config = load_config(g);
  validate_channel_name(o.name);
  install_stop_handlers();
  Context ctx = make_context(config);
  const std::int64_t deadline = mono_now_ns() + static_cast<std::int64_t>(o.timeout_s * 1e9);
  if (!g.json) print("Waiting for an action server to become available...\n");
  const std::optional<Typed> t = await_action(config, o.name, deadline);
  if (!t) {
    if (stop_requested()) return 1;
    throw Error(Errc::kNotFound, fmt::format("no server for action {} in domain \"{}\" within {}; start one "
                                             "(`shmtool action list` shows the actions)",
                                             o.name, config.domain, seconds_text(o.timeout_s)));
  }
  if (!o.type.empty() && short_type_name(o.type) != t->types.action_type) {
    throw Error(Errc::kTypeMismatch,
                fmt::format("action {} is of type {}, not {}", o.name, t->types.action_type, short_type_name(o.type)));
  }
  const action::GoalId id = action::random_goal_id();
  // The goal as JSON, over a request of zeros and the definition's defaults.
  Json request =
      message_from_json_text(t->send_goal, fmt::format("{{\"goal\": {}}}", o.goal.empty() ? "{}" : o.goal), "GOAL");
  request["goal_id"]["uuid"] = Json(std::vector<int>(id.begin(), id.end()));
  const std::vector<std::byte> request_bytes = t->send_goal.encode(request);  // a bad field is said here
  if (!g.json) print(fmt::format("Sending goal:\n{}\n", indent(to_yaml(request["goal"]), 5)));

  // Ctrl-C cancels the goal; the node goes on to bring its outcome.
  Node node("shmtool", ctx, NodeOptions{.handle_signals = false});
  action::Client client(node, o.name, t->types, action::ClientOptions{});
  GoalState s;
  action::Client::GoalCallbacks cb;
  cb.response = [&](bool accepted, std::int64_t, const std::string& error) {
    // Said here, before the feedback that may have come first (the client
    // gives that right after this).
    if (accepted && !g.json) print(fmt::format("Goal accepted with ID: {}\n\n", action::to_string(id)));
    const std::lock_guard lock(s.mutex);
    s.accepted = accepted;
    s.error = error;
  };
  cb.feedback = [&](std::span<const std::byte> bytes) {
    const Json f = t->feedback.decode(bytes).value("feedback", Json::object());
    if (!o.feedback) return;
    if (g.json) {
      const std::lock_guard lock(s.mutex);
      s.feedback.push_back(f);
    } else {
      print(fmt::format("Feedback:\n{}\n", indent(to_yaml(f), 4)));
    }
  };
  cb.result = [&s](const action::GoalOutcome& outcome) {
    const std::lock_guard lock(s.mutex);
    s.outcome = outcome;
  };
  client.send_goal(id, request_bytes, std::move(cb));
  bool canceled = false;
  for (;;) {
    node.spin_once(std::chrono::milliseconds(20));
    const std::lock_guard lock(s.mutex);
    if (!s.error.empty()) throw Error(Errc::kResource, fmt::format("action {}: {}", o.name, s.error));
    if (s.accepted && !*s.accepted) {
      if (!g.json) print("Goal was rejected.\n");
      return 1;
    }
    if (s.outcome) return report_outcome(g, o, *t, s, id);
    if (stop_requested() && !s.accepted) return 1;
    if (stop_requested() && !canceled) {
      // Ctrl-C: the goal is canceled, as ros2 action send_goal does.
      canceled = true;
      if (!g.json) print("Canceling goal...\n");
      client.cancel_goal(id, 0, nullptr);
    }
  }
}

}  // namespace shmbus::tool
