#pragma once
// Actions for one rosbridge client (rosbridge v2's action ops, as roslib's
// Action speaks them): the goals it sends (send_action_goal,
// cancel_action_goal) through shmbus action clients, and the actions it
// serves (advertise_action) through shmbus action servers whose goals go
// to it as send_action_goal and come back as action_feedback and
// action_result. On a node of their own, spun on a thread of their own.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "shmbus/action.hpp"
#include "shmbus/node.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::bridge {

class Hub;

class SessionActions {
 public:
  /// Hands an op to the client: from any thread (the session posts it).
  using Send = std::function<void(schema::Json op)>;

  /// The most actions a client may use or serve at once, and goals it may
  /// have in flight: more is refused in one line (Error kResource).
  static constexpr std::size_t kMaxActions = 16;
  static constexpr std::size_t kMaxGoals = 64;

  SessionActions(Hub& hub, std::string peer, Send send);
  ~SessionActions();
  SessionActions(const SessionActions&) = delete;
  SessionActions& operator=(const SessionActions&) = delete;

  /// send_action_goal: `request_id` names the goal in the ops that follow
  /// (action_feedback when `feedback`, then action_result). Throws Error.
  void send_goal(const std::string& request_id, const std::string& action, const std::string& type,
                 const schema::Json& args, bool feedback);
  /// cancel_action_goal of a goal this client sent. Throws Error.
  void cancel_goal(const std::string& request_id, const std::string& action);

  /// advertise_action: serves `action` of `type` for this client. Throws
  /// Error (kResource: served already).
  void advertise(const std::string& action, const std::string& type);
  void unadvertise(const std::string& action);
  /// The client's action_feedback and action_result for a goal of an
  /// action it serves (`goal` is the id the bridge gave it). Throws Error.
  void feedback(const std::string& goal, const std::string& action, const schema::Json& values);
  void result(const std::string& goal, const std::string& action, const schema::Json& values, int status, bool ok);

 private:
  /// An action's derived types and the schemas the JSON goes through.
  struct Typed {
    action::ActionTypes types;
    std::shared_ptr<const schema::Schema> send_goal_request;
    std::shared_ptr<const schema::Schema> get_result_response;
    std::shared_ptr<const schema::Schema> feedback_message;
  };
  struct Served {
    Typed typed;
    std::unique_ptr<action::Server> server;
  };
  struct Sent {
    std::string action;
    action::GoalId id{};
  };

  [[nodiscard]] Typed typed(const std::string& action, const std::string& type) const;
  [[nodiscard]] std::size_t actions_in_use() const;
  void goal_ended(const std::string& request_id, const std::string& action, const action::GoalOutcome& outcome,
                  const Typed& typed);

  Hub& hub_;
  std::string peer_;
  Send send_;
  bool int64_as_string_ = false;
  Node node_;
  mutable std::mutex mutex_;  ///< the maps: the io thread, the node's and the clients' threads
  std::map<std::string, std::unique_ptr<action::Client>> clients_;  ///< by action
  std::map<std::string, Typed> client_types_;
  std::map<std::string, Sent> goals_;     ///< this client's goals in flight, by its request id
  std::map<std::string, Served> served_;  ///< by action
  std::thread spinner_;                   ///< last: runs the node once the rest is made
};

}  // namespace shmbus::bridge
