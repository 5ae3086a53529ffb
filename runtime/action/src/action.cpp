#include "shmbus/action.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "action_msgs/msg/goal_status_array.hpp"
#include "action_msgs/srv/cancel_goal.hpp"
#include "builtin_interfaces/msg/time.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/node.hpp"
#include "shmbus/subscriber.hpp"

namespace shmbus::action {

namespace {

using CancelGoal = action_msgs::srv::CancelGoal;
using GoalStatusArray = action_msgs::msg::GoalStatusArray;

/// pkg/Name_SendGoal_Response: as rosidl derives it, one layout for every
/// action (a bool, then builtin_interfaces/Time).
struct SendGoalResponse {
  bool accepted = false;
  builtin_interfaces::msg::Time stamp{};
};
static_assert(sizeof(SendGoalResponse) == 12 && offsetof(SendGoalResponse, stamp) == 4);

constexpr std::size_t kGoalIdSize = sizeof(GoalId);
static_assert(kGoalIdSize == 16);

/// The goal id a request starts with (every request of an action but the
/// cancel's), or nullopt when it is shorter.
std::optional<GoalId> leading_goal_id(std::span<const std::byte> request) {
  if (request.size() < kGoalIdSize) return std::nullopt;
  GoalId id{};
  std::memcpy(id.data(), request.data(), kGoalIdSize);
  return id;
}

std::int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

builtin_interfaces::msg::Time time_of(std::int64_t ns) {
  builtin_interfaces::msg::Time t{};
  t.sec = static_cast<std::int32_t>(ns / 1'000'000'000);
  t.nanosec = static_cast<std::uint32_t>(ns % 1'000'000'000);
  return t;
}

std::int64_t ns_of(const builtin_interfaces::msg::Time& t) { return std::int64_t{t.sec} * 1'000'000'000 + t.nanosec; }

constexpr GoalId kZeroId{};

/// Says `text` on stderr once per `said` flag: every refusal is counted,
/// and its first is said.
void say_once(bool& said, const std::string& text) {
  if (said) return;
  said = true;
  std::fprintf(stderr, "shmbus: %s (said once; counted in the action's counters)\n", text.c_str());
}

}  // namespace

GoalId random_goal_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  GoalId id{};
  for (std::size_t i = 0; i < id.size(); i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(id.data() + i, &r, 8);
  }
  id[6] = static_cast<std::uint8_t>((id[6] & 0x0F) | 0x40);  // version 4
  id[8] = static_cast<std::uint8_t>((id[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return id;
}

std::string to_string(const GoalId& id) {
  std::string s;
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", id[i]);
  }
  return s;
}

std::optional<GoalId> goal_id_from_string(std::string_view text) {
  std::string hex;
  for (const char c : text) {
    if (c != '-') hex += c;
  }
  if (hex.size() != 32) return std::nullopt;
  GoalId id{};
  for (std::size_t i = 0; i < id.size(); ++i) {
    unsigned v = 0;
    for (const char c : hex.substr(i * 2, 2)) {
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    id[i] = static_cast<std::uint8_t>(v);
  }
  return id;
}

std::string_view to_string(GoalStatus status) noexcept {
  switch (status) {
    case GoalStatus::kAccepted:
      return "accepted";
    case GoalStatus::kExecuting:
      return "executing";
    case GoalStatus::kCanceling:
      return "canceling";
    case GoalStatus::kSucceeded:
      return "succeeded";
    case GoalStatus::kAborted:
      return "aborted";
    case GoalStatus::kCanceled:
      return "canceled";
    case GoalStatus::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<ActionTypes> action_types_named(
    const std::string& action_type, const std::function<std::optional<TypeInfo>(const std::string&)>& lookup) {
  const std::string send_goal = action_type + std::string{kActionSendGoalSuffix};
  const std::string get_result = action_type + std::string{kActionGetResultSuffix};
  auto a = lookup(service_request_type(send_goal));
  auto b = lookup(service_response_type(send_goal));
  auto c = lookup(service_request_type(get_result));
  auto d = lookup(service_response_type(get_result));
  auto e = lookup(action_type + std::string{kActionFeedbackMessageSuffix});
  if (!a || !b || !c || !d || !e) return std::nullopt;
  return ActionTypes{action_type, {send_goal, *a, *b}, {get_result, *c, *d}, *e};
}

// ---------------------------------------------------------------- server

struct Server::Impl {
  /// One goal held: live, or finished with its result kept.
  struct Goal {
    GoalStatus status = GoalStatus::kAccepted;
    std::int64_t stamp_ns = 0;  ///< accepted at (system clock)
    std::int64_t ended_ns = 0;  ///< finished at (steady clock; 0 while live)
    std::uint32_t client = 0;   ///< its send-goal request publisher
    bool orphaned = false;      ///< its client died; canceled once
    std::vector<std::byte> result;
    std::vector<ServiceServer::Pending> waiting;  ///< get-result calls deferred until it ends
  };

  std::string name;
  ServerOptions options;
  Callbacks callbacks;
  Node* node = nullptr;
  mutable std::mutex mutex;  ///< goals, counters, the status publisher
  std::map<GoalId, Goal> goals;
  ServerCounters counters;
  struct Said {
    bool malformed = false, undecodable = false, reused = false, full = false, unknown = false, cancel = false,
         orphan = false, expired = false;
  } said;
  NodePublisher<TypedPublisher<GoalStatusArray>>* status = nullptr;
  NodePublisher<Publisher>* feedback = nullptr;
  std::mutex feedback_mutex;  ///< one feedback publish at a time (goals run on their own threads)
  std::unique_ptr<ServiceServer> send_goal;
  std::unique_ptr<ServiceServer> get_result;
  std::unique_ptr<ServiceServer> cancel_goal;
  Timer* check = nullptr;
  std::optional<shmbus::introspect::ChannelReader> clients;  ///< the send-goal request channel's endpoints

  [[nodiscard]] static bool live(GoalStatus s) noexcept { return !is_terminal(s) && s != GoalStatus::kUnknown; }

  /// Publishes every goal held and its state (under `mutex`).
  void publish_status() {
    GoalStatusArray out;
    out.status_list.reserve(goals.size());
    for (const auto& [id, g] : goals) {
      action_msgs::msg::GoalStatus s{};
      s.goal_info.goal_id.uuid = id;
      s.goal_info.stamp = time_of(g.stamp_ns);
      s.status = static_cast<std::int8_t>(g.status);
      out.status_list.push_back(s);
    }
    // A status the channel cannot carry is said once and counted dropped
    // by the publisher; the next change publishes the whole state again.
    static_cast<void>((*status)->publish(out));
  }

  /// Makes room for a new goal: forgets the oldest finished one when
  /// max_goals are held. False when every goal held is live.
  bool make_room() {
    if (goals.size() < options.max_goals) return true;
    auto oldest = goals.end();
    for (auto it = goals.begin(); it != goals.end(); ++it) {
      if (it->second.ended_ns != 0 && (oldest == goals.end() || it->second.ended_ns < oldest->second.ended_ns)) {
        oldest = it;
      }
    }
    if (oldest == goals.end()) return false;
    goals.erase(oldest);
    ++counters.results_expired;
    say_once(said.expired, fmt::format("action {}: a finished goal's result was forgotten before its result_timeout "
                                       "to make room for a new goal (max_goals {})",
                                       name, options.max_goals));
    return true;
  }

  void answer_goal(const ServiceServer::Pending& request, bool accepted, std::int64_t stamp_ns) {
    SendGoalResponse r;
    r.accepted = accepted;
    r.stamp = time_of(stamp_ns);
    send_goal->respond(request, std::as_bytes(std::span{&r, 1}));
  }

  /// Refuses a goal request before its callback sees it: counted, said once.
  void refuse_goal(const ServiceServer::Pending& request, bool& said_flag, const std::string& why) {
    {
      const std::lock_guard lock(mutex);
      ++counters.goals_refused;
      say_once(said_flag, fmt::format("action {}: a goal was refused: {}", name, why));
    }
    answer_goal(request, false, 0);
  }

  std::size_t on_send_goal(std::span<const std::byte> request, const MessageInfo& info) {
    const ServiceServer::Pending pending = ServiceServer::pending(info);
    const std::optional<GoalId> id = leading_goal_id(request);
    if (!id) {
      refuse_goal(pending, said.malformed, fmt::format("its request of {} bytes has no goal id", request.size()));
      return ServiceServer::kDeferred;
    }
    {
      const std::lock_guard lock(mutex);
      if (goals.contains(*id)) {
        ++counters.goals_refused;
        say_once(said.reused, fmt::format("action {}: goal {} was refused: its id is in use (a goal id is used once)",
                                          name, to_string(*id)));
        answer_goal(pending, false, 0);
        return ServiceServer::kDeferred;
      }
    }
    GoalResponse response = GoalResponse::kReject;
    try {
      response = callbacks.goal(*id, request);
    } catch (const std::exception& e) {
      refuse_goal(pending, said.undecodable, fmt::format("goal {} does not decode: {}", to_string(*id), e.what()));
      return ServiceServer::kDeferred;
    }
    const std::int64_t stamp = system_now_ns();
    {
      const std::lock_guard lock(mutex);
      if (response == GoalResponse::kReject) {
        ++counters.goals_rejected;
      } else if (goals.contains(*id) || !make_room()) {
        ++counters.goals_refused;
        say_once(said.full, fmt::format("action {}: a goal was refused: {} live goals are held (max_goals)", name,
                                        options.max_goals));
        response = GoalResponse::kReject;
      } else {
        Goal& g = goals[*id];
        g.stamp_ns = stamp;
        g.client = info.publisher_id;
        g.status = response == GoalResponse::kAcceptAndExecute ? GoalStatus::kExecuting : GoalStatus::kAccepted;
        ++counters.goals_accepted;
        publish_status();
      }
    }
    answer_goal(pending, response != GoalResponse::kReject, stamp);
    if (response != GoalResponse::kReject && callbacks.accepted) callbacks.accepted(*id);
    return ServiceServer::kDeferred;
  }

  std::size_t on_get_result(std::span<const std::byte> request, const MessageInfo& info) {
    const ServiceServer::Pending pending = ServiceServer::pending(info);
    const std::optional<GoalId> id = leading_goal_id(request);
    std::vector<std::byte> answer;
    {
      const std::lock_guard lock(mutex);
      const auto it = id ? goals.find(*id) : goals.end();
      if (it != goals.end() && live(it->second.status)) {
        it->second.waiting.push_back(pending);  // answered by finish()
        return ServiceServer::kDeferred;
      }
      if (it == goals.end()) {
        ++counters.unknown_results;
        say_once(said.unknown, fmt::format("action {}: a result was asked for goal {}, which is not held (never "
                                           "accepted, or its result expired): answered status unknown",
                                           name, id ? to_string(*id) : std::string("<no id>")));
        answer = callbacks.unknown_result;
      } else {
        answer = it->second.result;
      }
    }
    get_result->respond(pending, answer);
    return ServiceServer::kDeferred;
  }

  /// The live goals a cancel request names (CancelGoal's policy), and its
  /// return code when it names none.
  std::vector<GoalId> cancel_targets(const CancelGoal::Request& request, std::int8_t& code) {
    const GoalId id = request.goal_info.goal_id.uuid;
    const std::int64_t stamp = ns_of(request.goal_info.stamp);
    std::vector<GoalId> out;
    code = CancelGoal::Response::ERROR_NONE;
    if (id != kZeroId) {
      const auto it = goals.find(id);
      if (it == goals.end()) {
        code = CancelGoal::Response::ERROR_UNKNOWN_GOAL_ID;
      } else if (!live(it->second.status)) {
        code = CancelGoal::Response::ERROR_GOAL_TERMINATED;
      } else {
        out.push_back(id);
      }
    }
    if (id == kZeroId || stamp != 0) {
      for (const auto& [gid, g] : goals) {
        if (gid != id && live(g.status) && ((id == kZeroId && stamp == 0) || g.stamp_ns <= stamp)) out.push_back(gid);
      }
    }
    return out;
  }

  /// Asks the cancel callback about each of `ids`; those it accepts go to
  /// CANCELING (one already canceling stays). Returns those canceling.
  std::vector<GoalId> cancel(const std::vector<GoalId>& ids) {
    std::vector<GoalId> canceling;
    for (const GoalId& id : ids) {
      {
        const std::lock_guard lock(mutex);
        const auto it = goals.find(id);
        if (it == goals.end() || !live(it->second.status)) continue;
        if (it->second.status == GoalStatus::kCanceling) {
          canceling.push_back(id);
          continue;
        }
      }
      const CancelResponse r = callbacks.cancel ? callbacks.cancel(id) : CancelResponse::kReject;
      const std::lock_guard lock(mutex);
      const auto it = goals.find(id);
      if (r == CancelResponse::kAccept && it != goals.end() && live(it->second.status)) {
        it->second.status = GoalStatus::kCanceling;
        canceling.push_back(id);
      }
    }
    if (!canceling.empty()) {
      const std::lock_guard lock(mutex);
      publish_status();
    }
    return canceling;
  }

  std::size_t on_cancel(std::span<const std::byte> request, const MessageInfo& info, std::span<std::byte> out) {
    CancelGoal::Request req{};
    if (request.size() != sizeof req) {
      throw Error(Errc::kInvalidArgument, fmt::format("a cancel request of {} bytes; action_msgs/CancelGoal's is {}",
                                                      request.size(), sizeof req));
    }
    std::memcpy(&req, request.data(), sizeof req);
    std::int8_t code = 0;
    std::vector<GoalId> targets;
    {
      const std::lock_guard lock(mutex);
      targets = cancel_targets(req, code);
    }
    CancelGoal::Response rsp;
    rsp.return_code = code;
    const std::vector<GoalId> canceling = cancel(targets);
    {
      const std::lock_guard lock(mutex);
      for (const GoalId& id : canceling) {
        action_msgs::msg::GoalInfo gi{};
        gi.goal_id.uuid = id;
        gi.stamp = time_of(goals.contains(id) ? goals[id].stamp_ns : 0);
        rsp.goals_canceling.push_back(gi);
      }
      if (code == CancelGoal::Response::ERROR_NONE && canceling.empty()) {
        rsp.return_code = CancelGoal::Response::ERROR_REJECTED;
      }
      if (code != CancelGoal::Response::ERROR_NONE) {
        ++counters.cancels_refused;
        say_once(
            said.cancel,
            fmt::format("action {}: a cancel of goal {} was refused: {}", name, to_string(req.goal_info.goal_id.uuid),
                        code == CancelGoal::Response::ERROR_UNKNOWN_GOAL_ID ? "no such goal is held"
                                                                            : "the goal has finished"));
      }
    }
    const std::vector<std::byte> bytes = msg::to_bytes(rsp);
    if (bytes.size() > out.size()) {
      cancel_goal->respond(ServiceServer::pending(info), bytes);
      return ServiceServer::kDeferred;
    }
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return bytes.size();
  }

  /// Every client_check_period: forgets results past result_timeout, and
  /// cancels the live goals whose client died.
  void check_goals() {
    std::vector<GoalId> orphans;
    {
      const std::lock_guard lock(mutex);
      const std::int64_t now = mono_now_ns();
      bool changed = false;
      for (auto it = goals.begin(); it != goals.end();) {
        if (it->second.ended_ns != 0 && now - it->second.ended_ns >= options.result_timeout.count()) {
          it = goals.erase(it);
          ++counters.results_expired;
          changed = true;
        } else {
          ++it;
        }
      }
      if (changed) publish_status();
      std::vector<std::uint32_t> alive;
      bool have_live = false;
      for (const auto& [id, g] : goals) have_live = have_live || (live(g.status) && !g.orphaned);
      if (!have_live) return;
      try {
        if (!clients) {
          clients.emplace(node->context().domain(), service_request_channel(action_part(name, "send_goal")), false,
                          node->context().config().access());
        }
        for (const auto& p : clients->view().publishers) {
          if (p.alive) alive.push_back(p.id);
        }
      } catch (const Error&) {
        return;  // the channel is gone: checked again next time
      }
      for (auto& [id, g] : goals) {
        if (!live(g.status) || g.orphaned) continue;
        if (std::find(alive.begin(), alive.end(), g.client) != alive.end()) continue;
        g.orphaned = true;
        ++counters.goals_orphaned;
        say_once(said.orphan,
                 fmt::format("action {}: the client of goal {} is gone; the goal is canceled", name, to_string(id)));
        orphans.push_back(id);
      }
    }
    if (!orphans.empty()) static_cast<void>(cancel(orphans));
  }
};

Server::Server(Node& node, std::string_view name, const ActionTypes& types, Callbacks callbacks,
               const ServerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  validate_channel_name(name);
  if (options.max_goals == 0) throw Error(Errc::kInvalidArgument, "action server: max_goals must be at least 1");
  m.name = std::string{name};
  m.options = options;
  m.callbacks = std::move(callbacks);
  m.node = &node;
  m.status = &node.publisher<GoalStatusArray>(action_part(name, "status"));
  m.feedback = &node.publisher(action_part(name, "feedback"), types.feedback_message);
  m.send_goal = std::make_unique<ServiceServer>(node, action_part(name, "send_goal"), types.send_goal,
                                                [&m](std::span<const std::byte> request, const MessageInfo& info,
                                                     std::span<std::byte>) { return m.on_send_goal(request, info); });
  m.get_result = std::make_unique<ServiceServer>(node, action_part(name, "get_result"), types.get_result,
                                                 [&m](std::span<const std::byte> request, const MessageInfo& info,
                                                      std::span<std::byte>) { return m.on_get_result(request, info); });
  m.cancel_goal =
      std::make_unique<ServiceServer>(node, action_part(name, "cancel_goal"), service_types_of<CancelGoal>(),
                                      [&m](std::span<const std::byte> request, const MessageInfo& info,
                                           std::span<std::byte> out) { return m.on_cancel(request, info, out); });
  m.check = &node.every(options.client_check_period, [&m] { m.check_goals(); });
  const std::lock_guard lock(m.mutex);
  m.publish_status();  // no goals: a late client learns there are none
}

Server::~Server() {
  if (impl_ && impl_->check != nullptr) impl_->check->cancel();
}

bool Server::execute(const GoalId& id) {
  const std::lock_guard lock(impl_->mutex);
  const auto it = impl_->goals.find(id);
  if (it == impl_->goals.end() || it->second.status != GoalStatus::kAccepted) return false;
  it->second.status = GoalStatus::kExecuting;
  impl_->publish_status();
  return true;
}

bool Server::publish_feedback(const GoalId& id, std::span<const std::byte> feedback_message) {
  {
    const std::lock_guard lock(impl_->mutex);
    const auto it = impl_->goals.find(id);
    if (it == impl_->goals.end() || !Impl::live(it->second.status)) return false;
  }
  const std::lock_guard lock(impl_->feedback_mutex);
  // One the channel cannot carry is said once and counted dropped by the publisher.
  return (*impl_->feedback)->publish(feedback_message.data(), feedback_message.size()) == PublishResult::kOk;
}

bool Server::finish(const GoalId& id, GoalStatus status, std::span<const std::byte> result_response) {
  std::vector<ServiceServer::Pending> waiting;
  std::vector<std::byte> result(result_response.begin(), result_response.end());
  {
    const std::lock_guard lock(impl_->mutex);
    const auto it = impl_->goals.find(id);
    if (it == impl_->goals.end() || !Impl::live(it->second.status) || !is_terminal(status)) return false;
    if (status == GoalStatus::kCanceled && it->second.status != GoalStatus::kCanceling) return false;
    it->second.status = status;
    it->second.ended_ns = mono_now_ns();
    it->second.result = result;
    waiting.swap(it->second.waiting);
    impl_->publish_status();
  }
  for (const ServiceServer::Pending& p : waiting) impl_->get_result->respond(p, result);
  return true;
}

GoalStatus Server::status(const GoalId& id) const {
  const std::lock_guard lock(impl_->mutex);
  const auto it = impl_->goals.find(id);
  return it == impl_->goals.end() ? GoalStatus::kUnknown : it->second.status;
}

std::size_t Server::goals() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->goals.size();
}

ServerCounters Server::counters() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->counters;
}

const std::string& Server::name() const noexcept { return impl_->name; }

// ---------------------------------------------------------------- client

struct Client::Impl {
  struct Goal {
    GoalCallbacks callbacks;
    bool accepted = false;
    bool result_asked = false;
    /// Feedback that came before the server's acceptance did (the server
    /// publishes it at once; its answer comes on another channel): given
    /// to the feedback callback right after the response callback.
    std::vector<std::vector<std::byte>> early_feedback;
  };
  /// Feedback held per goal before its acceptance is known, at most: more
  /// is dropped, counted and said once.
  static constexpr std::size_t kMaxEarlyFeedback = 256;
  bool said_feedback_dropped = false;
  bool said_feedback_malformed = false;

  std::string name;
  ClientOptions options;
  ServiceClient send_goal;
  ServiceClient get_result;
  ServiceClient cancel_goal;
  Subscription* feedback = nullptr;
  Subscription* status = nullptr;
  mutable std::mutex mutex;  ///< goals, jobs
  std::map<GoalId, Goal> goals;
  std::deque<std::function<void()>> jobs;
  std::condition_variable wake;
  bool closing = false;
  /// Response buffers, as large as a response may grow, uninitialised: only
  /// the pages a response fills are backed by memory.
  std::unique_ptr<std::byte[]> buffer;
  std::size_t buffer_size = 0;
  std::thread worker;

  Impl(Node& n, std::string_view action, const ActionTypes& types, const ClientOptions& o)
      : name(action),
        options(o),
        // Its endpoints are shown under its node's name.
        send_goal(action_part(action, "send_goal"), types.send_goal, n.context(), ServiceOptions{n.name()}),
        get_result(action_part(action, "get_result"), types.get_result, n.context(), ServiceOptions{n.name()}),
        cancel_goal(action_part(action, "cancel_goal"), service_types_of<CancelGoal>(), n.context(),
                    ServiceOptions{n.name()}) {}

  [[nodiscard]] bool is_closing() {
    const std::lock_guard lock(mutex);
    return closing;
  }

  std::span<std::byte> response_buffer(const ServiceClient& client) {
    if (buffer_size < client.max_response_size()) {
      buffer_size = client.max_response_size();
      buffer.reset(new std::byte[buffer_size]);  // NOLINT(cppcoreguidelines-owning-memory)
    }
    return {buffer.get(), buffer_size};
  }

  /// Calls `client` until a server answers (a missing server is waited
  /// for, as rclcpp_action's requests wait), the call fails, or the client
  /// closes.
  CallResult call(ServiceClient& client, std::span<const std::byte> request) {
    const std::span<std::byte> out = response_buffer(client);
    for (;;) {
      const CallResult r = client.call(request, out, std::chrono::seconds(1), [this] { return is_closing(); });
      if (r.status != CallStatus::kNoServer || is_closing()) return r;
    }
  }

  void post(std::function<void()> job) {
    {
      const std::lock_guard lock(mutex);
      jobs.push_back(std::move(job));
    }
    wake.notify_one();
  }

  /// Runs jobs in order; while goals are live, checks the server every
  /// server_check_period.
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex);
        const bool waiting = !goals.empty();
        const auto ready = [this] { return closing || !jobs.empty(); };
        if (waiting) {
          wake.wait_for(lock, options.server_check_period, ready);
        } else {
          wake.wait(lock, ready);
        }
        if (closing) return;
        if (!jobs.empty()) {
          job = std::move(jobs.front());
          jobs.pop_front();
        }
      }
      if (job) {
        job();
      } else {
        check_server();
      }
    }
  }

  /// Ends every live goal whose outcome cannot come: its server is gone.
  void check_server() {
    if (send_goal.server_ready()) return;
    std::map<GoalId, Goal> ended;
    {
      const std::lock_guard lock(mutex);
      for (auto it = goals.begin(); it != goals.end();) {
        if (it->second.accepted) {
          ended.insert(goals.extract(it++));
        } else {
          ++it;
        }
      }
    }
    for (auto& [id, g] : ended) {
      GoalOutcome o;
      o.status = GoalStatus::kAborted;
      o.error = fmt::format("the server of action {} is gone: goal {} ended without a result", name, to_string(id));
      std::fprintf(stderr, "shmbus: %s\n", o.error.c_str());
      if (g.callbacks.result) g.callbacks.result(o);
    }
  }

  void do_send_goal(const GoalId& id, const std::vector<std::byte>& request) {
    const CallResult r = call(send_goal, request);
    GoalCallbacks callbacks;
    bool accepted = false;
    std::int64_t stamp = 0;
    std::string error;
    if (r.ok() && r.size >= sizeof(SendGoalResponse)) {
      SendGoalResponse rsp;
      std::memcpy(&rsp, buffer.get(), sizeof rsp);
      accepted = rsp.accepted;
      stamp = ns_of(rsp.stamp);
    } else {
      error = r.ok() ? fmt::format("a send-goal response of {} bytes", r.size)
                     : fmt::format("the send-goal call ended: {}", shmbus::to_string(r.status));
    }
    {
      const std::lock_guard lock(mutex);
      const auto it = goals.find(id);
      if (it == goals.end()) return;
      callbacks = it->second.callbacks;
      if (!accepted) goals.erase(it);
    }
    if (callbacks.response) callbacks.response(accepted, stamp, error);
    if (accepted) deliver_early_feedback(id, callbacks.feedback);
  }

  /// Gives a goal's early feedback to its callback, in order, then lets
  /// feedback through at once: what comes while it is given is given next.
  void deliver_early_feedback(const GoalId& id, const std::function<void(std::span<const std::byte>)>& on_feedback) {
    for (;;) {
      std::vector<std::vector<std::byte>> early;
      {
        const std::lock_guard lock(mutex);
        const auto it = goals.find(id);
        if (it == goals.end()) return;
        if (it->second.early_feedback.empty()) {
          it->second.accepted = true;
          return;
        }
        early.swap(it->second.early_feedback);
      }
      if (on_feedback) {
        for (const auto& f : early) on_feedback(f);
      }
    }
  }

  void do_get_result(const GoalId& id) {
    const CallResult r = call(get_result, std::as_bytes(std::span{id}));
    GoalOutcome o;
    if (r.ok() && r.size >= 1) {
      o.status = static_cast<GoalStatus>(static_cast<std::int8_t>(buffer[0]));
      o.result_response.assign(buffer.get(), buffer.get() + r.size);
      if (o.status == GoalStatus::kUnknown) o.error = "the server does not hold the goal (its result expired)";
    } else {
      o.status = GoalStatus::kAborted;
      o.error = fmt::format("the get-result call ended: {}", shmbus::to_string(r.status));
    }
    GoalCallbacks callbacks;
    {
      const std::lock_guard lock(mutex);
      const auto it = goals.find(id);
      if (it == goals.end()) return;
      callbacks = std::move(it->second.callbacks);
      goals.erase(it);
    }
    if (callbacks.result) callbacks.result(o);
  }

  /// A feedback message passed over: counted on the feedback subscriber
  /// (DISCARDED in shmtool info) and said once (under `mutex`).
  void discard_feedback(bool& said_flag, const std::string& why) {
    feedback->subscriber().count_discarded();
    say_once(said_flag, fmt::format("action {}: feedback dropped: {}", name, why));
  }

  void on_feedback(std::span<const std::byte> message) {
    const std::optional<GoalId> id = leading_goal_id(message);
    if (!id) {
      const std::lock_guard lock(mutex);
      discard_feedback(said_feedback_malformed, fmt::format("a message of {} bytes has no goal id", message.size()));
      return;
    }
    std::function<void(std::span<const std::byte>)> cb;
    {
      const std::lock_guard lock(mutex);
      const auto it = goals.find(*id);
      if (it == goals.end()) return;
      if (!it->second.accepted) {
        if (it->second.early_feedback.size() < kMaxEarlyFeedback) {
          it->second.early_feedback.emplace_back(message.begin(), message.end());
        } else {
          discard_feedback(said_feedback_dropped, fmt::format("goal {}: {} messages came before the server's "
                                                              "acceptance did",
                                                              to_string(*id), kMaxEarlyFeedback));
        }
        return;
      }
      cb = it->second.callbacks.feedback;
    }
    if (cb) cb(message);
  }

  void on_status(const GoalStatusArray& s) {
    std::vector<GoalId> ended;
    {
      const std::lock_guard lock(mutex);
      for (const auto& st : s.status_list) {
        const auto it = goals.find(st.goal_info.goal_id.uuid);
        if (it == goals.end() || it->second.result_asked || !is_terminal(static_cast<GoalStatus>(st.status))) continue;
        it->second.result_asked = true;
        ended.push_back(it->first);
      }
    }
    for (const GoalId& id : ended) post([this, id] { do_get_result(id); });
  }
};

Client::Client(Node& node, std::string_view name, const ActionTypes& types, const ClientOptions& options)
    : impl_(std::make_unique<Impl>(node, name, types, options)) {
  Impl& m = *impl_;
  SubscriptionOptions history;
  history.subscriber.history = 1;  // the last status: goals of this client that ended before it looked
  m.feedback = &node.subscribe_raw(action_part(name, "feedback"), types.feedback_message,
                                   [&m](std::span<const std::byte> p, const MessageInfo&) { m.on_feedback(p); });
  m.status = &node.subscribe<GoalStatusArray>(
      action_part(name, "status"), [&m](const GoalStatusArray& s) { m.on_status(s); }, history);
  m.worker = std::thread([&m] { m.work(); });
}

Client::~Client() {
  if (!impl_) return;
  impl_->feedback->cancel();
  impl_->status->cancel();
  {
    const std::lock_guard lock(impl_->mutex);
    impl_->closing = true;
  }
  impl_->wake.notify_all();
  impl_->worker.join();
}

void Client::send_goal(const GoalId& id, std::vector<std::byte> request, GoalCallbacks callbacks) {
  if (request.size() < kGoalIdSize || std::memcmp(request.data(), id.data(), kGoalIdSize) != 0) {
    throw Error(Errc::kInvalidArgument, "action " + impl_->name + ": a send-goal request starts with its goal id");
  }
  {
    const std::lock_guard lock(impl_->mutex);
    if (!impl_->goals.try_emplace(id, Impl::Goal{std::move(callbacks), false, false, {}}).second) {
      throw Error(Errc::kInvalidArgument, "action " + impl_->name + ": goal " + to_string(id) + " was sent already");
    }
  }
  Impl* m = impl_.get();
  m->post([m, id, r = std::move(request)] { m->do_send_goal(id, r); });
}

void Client::cancel_goal(const GoalId& id, std::int64_t stamp_ns,
                         std::function<void(std::span<const std::byte>, const std::string&)> done) {
  CancelGoal::Request req{};
  req.goal_info.goal_id.uuid = id;
  req.goal_info.stamp = time_of(stamp_ns);
  Impl* m = impl_.get();
  m->post([m, req, done = std::move(done)] {
    const CallResult r = m->call(m->cancel_goal, std::as_bytes(std::span{&req, 1}));
    if (!done) return;
    if (r.ok()) {
      done(std::span<const std::byte>(m->buffer.get(), r.size), {});
    } else {
      done({}, fmt::format("the cancel call ended: {}", shmbus::to_string(r.status)));
    }
  });
}

bool Client::server_ready() const { return impl_->send_goal.server_ready(); }
bool Client::wait_for_server(std::chrono::nanoseconds timeout) { return impl_->send_goal.wait_for_server(timeout); }

std::size_t Client::live_goals() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->goals.size();
}

const std::string& Client::name() const noexcept { return impl_->name; }

// ---------------------------------------------------------------- views

namespace introspect {

std::vector<std::string> action_names(const shmbus::introspect::DomainView& domain) {
  std::vector<std::string> out;
  for (const std::string& service : shmbus::introspect::service_names(domain)) {
    const std::string a = action_of_channel(service_request_channel(service));
    if (!a.empty() && service == action_part(a, "send_goal")) out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ActionView action_view(Context& context, std::string_view action) {
  ActionView v;
  v.name = std::string{action};
  const std::string& domain = context.domain();
  const SegmentAccess access = context.config().access();
  const shmbus::introspect::ServiceView send =
      shmbus::introspect::service_view(domain, action_part(action, "send_goal"), access);
  v.action_type = action_type_of_send_goal_request(send.requests.type_name);
  v.server = send.server;
  v.clients = send.clients;
  const std::string status_channel = action_part(action, "status");
  try {
    static_cast<void>(shmbus::introspect::ChannelReader(domain, status_channel, false, access));
  } catch (const Error&) {
    return v;  // no status yet: no goals (a view makes no channel)
  }
  SubscriberOptions o;
  o.history = 1;
  TypedSubscriber<GoalStatusArray> status(status_channel, context, o);
  std::optional<GoalStatusArray> last;
  while (auto s = status.take()) last = std::move(s);
  if (last) {
    for (const auto& s : last->status_list) {
      v.goals.push_back({s.goal_info.goal_id.uuid, static_cast<GoalStatus>(s.status), ns_of(s.goal_info.stamp)});
    }
  }
  return v;
}

}  // namespace introspect

}  // namespace shmbus::action
