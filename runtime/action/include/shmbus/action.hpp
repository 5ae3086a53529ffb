#pragma once
/// @file action.hpp
/// Actions as ROS 2 has them: a goal, sent to a server that accepts or
/// rejects it, pursued with feedback to a result, cancelable, its state on
/// a status channel. An action NAME is three services and two channels,
/// named and typed as rmw names and rosidl types them (names.hpp
/// action_part):
///
///   NAME/_action/send_goal    pkg/Name_SendGoal     goal id, goal -> accepted, stamp
///   NAME/_action/get_result   pkg/Name_GetResult    goal id -> status, result
///   NAME/_action/cancel_goal  action_msgs/CancelGoal
///   NAME/_action/feedback     pkg/Name_FeedbackMessage  goal id, feedback
///   NAME/_action/status       action_msgs/GoalStatusArray
///
/// This header is the untyped core that the typed APIs (shmbus/rclcpp_action.hpp,
/// Python's shmbus.rclpy ActionServer and ActionClient) are made of: goals
/// by id, requests and results as bytes of the derived types. docs/actions.md.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/service.hpp"
#include "shmbus/types.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus {

class Node;

namespace action {

/// A goal's id: unique_identifier_msgs/UUID's 16 bytes.
using GoalId = std::array<std::uint8_t, 16>;

/// A random (version 4) goal id.
[[nodiscard]] GoalId random_goal_id();
/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase hex.
[[nodiscard]] std::string to_string(const GoalId& id);
/// The id `text` writes (to_string's form, or 32 hex digits); nullopt when
/// it is not one.
[[nodiscard]] std::optional<GoalId> goal_id_from_string(std::string_view text);

/// action_msgs/GoalStatus's states.
enum class GoalStatus : std::int8_t {
  kUnknown = 0,
  kAccepted = 1,
  kExecuting = 2,
  kCanceling = 3,
  kSucceeded = 4,
  kCanceled = 5,
  kAborted = 6,
};
/// `accepted`, `executing`, ... (`unknown` for a value outside the states).
[[nodiscard]] std::string_view to_string(GoalStatus status) noexcept;
/// Succeeded, aborted or canceled.
[[nodiscard]] constexpr bool is_terminal(GoalStatus s) noexcept {
  return s == GoalStatus::kSucceeded || s == GoalStatus::kAborted || s == GoalStatus::kCanceled;
}

/// An action's types: the action type (`pkg/Name`), its two services and
/// its feedback message (what rosidl derives; names.hpp).
struct ActionTypes {
  std::string action_type;
  ServiceTypes send_goal;
  ServiceTypes get_result;
  TypeInfo feedback_message;
};

/// What shmbus-msggen generates for an `.action` (`pkg::action::Name`):
/// kActionType, Goal, Result, Feedback, and in Impl the derived services
/// and feedback message, as rosidl's C++ has them.
template <typename A>
concept ActionType = ServiceType<typename A::Impl::SendGoalService> &&
    ServiceType<typename A::Impl::GetResultService> && AnyMessageType<typename A::Impl::FeedbackMessage> && requires {
  std::string_view{A::kActionType};
};

template <ActionType A>
ActionTypes action_types_of() {
  return {std::string{A::kActionType}, service_types_of<typename A::Impl::SendGoalService>(),
          service_types_of<typename A::Impl::GetResultService>(), type_info_of<typename A::Impl::FeedbackMessage>()};
}

/// The bytes of `message` as a channel carries it.
template <AnyMessageType T>
std::vector<std::byte> bytes_of(const T& message) {
  if constexpr (MessageType<T>) {
    const auto b = std::as_bytes(std::span{&message, 1});
    return {b.begin(), b.end()};
  } else {
    return msg::to_bytes(message);
  }
}

/// The message `bytes` hold. Throws Error(kInvalidArgument) when they do
/// not decode as T (a fixed type's size differs; a string or sequence
/// points outside them).
template <AnyMessageType T>
T message_of(std::span<const std::byte> bytes) {
  if constexpr (MessageType<T>) {
    if (bytes.size() != sizeof(T)) {
      throw Error(Errc::kInvalidArgument, std::string(T::kTypeName) + ": " + std::to_string(bytes.size()) +
                                              " bytes; the type has " + std::to_string(sizeof(T)));
    }
    T m;
    std::memcpy(&m, bytes.data(), sizeof(T));
    return m;
  } else {
    return T::from(typename T::View(bytes));
  }
}

/// The types of action type `action_type` as `lookup` (a schema catalog)
/// gives them by name (`pkg/Name_SendGoal_Request` ...); nullopt when one
/// is not found.
[[nodiscard]] std::optional<ActionTypes> action_types_named(
    const std::string& action_type, const std::function<std::optional<TypeInfo>(const std::string&)>& lookup);

/// What a server says to a new goal (rclcpp_action's values).
enum class GoalResponse { kReject = 1, kAcceptAndExecute = 2, kAcceptAndDefer = 3 };
/// What a server says to a cancel request.
enum class CancelResponse { kReject = 1, kAccept = 2 };

struct ServerOptions {
  /// How long a finished goal's result is kept for get_result (ROS 2's
  /// default, 15 minutes). The goal stays on the status channel as long.
  std::chrono::nanoseconds result_timeout = std::chrono::minutes(15);
  /// Goals held at once, live and finished (kept results): a new goal
  /// beyond it first ends the keeping of the oldest finished result; when
  /// every goal held is live, it is rejected (counted, said once).
  std::size_t max_goals = 1024;
  /// How often the clients of live goals are checked: a live goal whose
  /// client's process is gone is canceled as if its client had asked (the
  /// cancel callback decides), within this bound.
  std::chrono::nanoseconds client_check_period = std::chrono::milliseconds(100);
};

/// Counters of a server: each refusal is also said on stderr, once per kind.
struct ServerCounters {
  std::uint64_t goals_accepted = 0;
  std::uint64_t goals_rejected = 0;   ///< by the goal callback
  std::uint64_t goals_refused = 0;    ///< malformed, a reused id, or over max_goals
  std::uint64_t results_expired = 0;  ///< forgotten after result_timeout, or for room
  std::uint64_t unknown_results = 0;  ///< get_result of a goal not held
  std::uint64_t cancels_refused = 0;  ///< of goals not held, or finished
  std::uint64_t goals_orphaned = 0;   ///< canceled because their client died
};

/// Serves one action on a Node: its services run on the node's executor.
/// Goals are handled from any thread: the typed handles call execute(),
/// publish_feedback() and finish() from the goal's own thread. Destroy it
/// when its node is not running its callbacks (as a ServiceServer).
class Server {
 public:
  struct Callbacks {
    /// A new goal: `request` is its send-goal request's bytes (goal id,
    /// goal). Throwing rejects it (as undecodable: counted refused).
    std::function<GoalResponse(const GoalId& id, std::span<const std::byte> request)> goal;
    /// A cancel request for a live goal.
    std::function<CancelResponse(const GoalId& id)> cancel;
    /// An accepted goal, after its acceptance was answered.
    std::function<void(const GoalId& id)> accepted;
    /// The get-result response of a goal not held: status UNKNOWN and a
    /// default result (the typed layer's bytes).
    std::vector<std::byte> unknown_result;
  };

  /// Opens or creates the action's channels. Throws Error like
  /// ServiceServer (a second server of the action: kResource).
  Server(Node& node, std::string_view name, const ActionTypes& types, Callbacks callbacks,
         const ServerOptions& options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// ACCEPTED -> EXECUTING; false when the goal is not accepted-and-waiting.
  bool execute(const GoalId& id);
  /// Publishes `feedback_message` (the bytes of pkg/Name_FeedbackMessage)
  /// for a live goal; false for a goal not live (nothing published).
  bool publish_feedback(const GoalId& id, std::span<const std::byte> feedback_message);
  /// Ends a live goal in terminal `status` with `result_response` (the
  /// bytes of pkg/Name_GetResult_Response); answers the get-result calls
  /// waiting for it. False (nothing changed) when the goal is not live,
  /// `status` is not terminal, or CANCELED of a goal not canceling.
  bool finish(const GoalId& id, GoalStatus status, std::span<const std::byte> result_response);
  /// A goal's state (kUnknown when not held).
  [[nodiscard]] GoalStatus status(const GoalId& id) const;
  /// Goals held (live and kept).
  [[nodiscard]] std::size_t goals() const;
  [[nodiscard]] ServerCounters counters() const;
  [[nodiscard]] const std::string& name() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// How a client's goal ended, or why it cannot say.
struct GoalOutcome {
  GoalStatus status = GoalStatus::kUnknown;
  std::vector<std::byte> result_response;  ///< bytes of pkg/Name_GetResult_Response (when a server answered)
  std::string error;                       ///< empty, or why no result came (server gone, ...)
};

struct ClientOptions {
  /// How often the server is checked while goals are live: a server gone
  /// ends them with GoalOutcome::error within about this bound.
  std::chrono::nanoseconds server_check_period = std::chrono::milliseconds(100);
};

/// Calls one action. Its service calls run on its own thread in the order
/// asked; feedback and status are read by subscriptions on the node (their
/// callbacks run in its spin). A goal's result is asked for once the
/// status channel says it ended (answered at once, the server keeps it).
class Client {
 public:
  struct GoalCallbacks {
    /// Accepted or not, with the server's stamp (ns since the epoch);
    /// `error` set when the request failed (no server, server died).
    std::function<void(bool accepted, std::int64_t stamp_ns, const std::string& error)> response;
    /// Each feedback message of the goal (bytes of FeedbackMessage).
    std::function<void(std::span<const std::byte> feedback_message)> feedback;
    /// The outcome, once.
    std::function<void(const GoalOutcome& outcome)> result;
  };

  Client(Node& node, std::string_view name, const ActionTypes& types, const ClientOptions& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends a goal: `request` is the bytes of the send-goal request, goal id
  /// first (as the id given). Returns at once; the callbacks say the rest.
  void send_goal(const GoalId& id, std::vector<std::byte> request, GoalCallbacks callbacks);
  /// Asks the server to cancel `id` (zero: every goal), and goals accepted
  /// at or before `stamp_ns` (0: none by stamp); `done` gets the bytes of
  /// the action_msgs/CancelGoal response, or an error.
  void cancel_goal(const GoalId& id, std::int64_t stamp_ns,
                   std::function<void(std::span<const std::byte> response, const std::string& error)> done);
  /// Whether the action's send-goal service has a live server.
  [[nodiscard]] bool server_ready() const;
  /// Waits up to `timeout` for a server.
  bool wait_for_server(std::chrono::nanoseconds timeout);
  /// Goals sent whose outcome has not come.
  [[nodiscard]] std::size_t live_goals() const;
  [[nodiscard]] const std::string& name() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

namespace introspect {

using shmbus::introspect::EndpointView;

/// An action as the tools see it.
struct ActionView {
  std::string name;
  std::string action_type;             ///< `pkg/Name`, from the send-goal request type
  std::optional<EndpointView> server;  ///< the live server
  std::vector<EndpointView> clients;   ///< send-goal request publishers
  /// The last status message's goals: id, state, accepted at (ns).
  struct Goal {
    GoalId id{};
    GoalStatus status = GoalStatus::kUnknown;
    std::int64_t stamp_ns = 0;
  };
  std::vector<Goal> goals;
};

/// The actions of a domain (every `NAME/_action/send_goal` service), sorted.
std::vector<std::string> action_names(const shmbus::introspect::DomainView& domain);
/// One action's view in `context`'s domain, its goals from the status
/// channel's last message (read by a subscriber of `context`). Throws
/// Error(kNotFound) when it has no send-goal service.
ActionView action_view(Context& context, std::string_view action);

}  // namespace introspect

}  // namespace action
}  // namespace shmbus
