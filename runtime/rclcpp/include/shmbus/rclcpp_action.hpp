#pragma once
/// @file rclcpp_action.hpp
/// rclcpp_action's shape over shmbus's actions (shmbus/action.hpp), so
/// that an action server or client written for rclcpp_action runs with its
/// includes and namespaces changed:
///
///   #include "shmbus/rclcpp_action.hpp"
///   namespace rclcpp_action = shmbus::rclcpp_action;
///
///   server_ = rclcpp_action::create_server<Fibonacci>(this, "fibonacci", handle_goal, handle_cancel,
///                                                     handle_accepted);
///   client_ = rclcpp_action::create_client<Fibonacci>(this, "fibonacci");
///   client_->async_send_goal(goal, options);
///
/// The server's goal, cancel and accepted callbacks run on the node's
/// executor; a goal handle is used from any thread. The client's goal
/// response and result callbacks run on the client's own thread (its
/// service calls run there), its feedback callbacks on the node's executor.
/// docs/actions.md.

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "shmbus/action.hpp"
#include "shmbus/rclcpp.hpp"

namespace shmbus::rclcpp_action {

using GoalUUID = action::GoalId;
using GoalStatus = action::GoalStatus;

enum class GoalResponse { REJECT = 1, ACCEPT_AND_EXECUTE = 2, ACCEPT_AND_DEFER = 3 };
enum class CancelResponse { REJECT = 1, ACCEPT = 2 };
/// How a goal ended (action_msgs/GoalStatus's values).
enum class ResultCode : std::int8_t { UNKNOWN = 0, SUCCEEDED = 4, CANCELED = 5, ABORTED = 6 };

/// rclcpp_action's exceptions of a client.
struct UnknownGoalHandleError : std::invalid_argument {
  UnknownGoalHandleError() : std::invalid_argument("goal handle is not known to this client") {}
};

/// The node a create_* function is given: `this` in a node's constructor,
/// or a shared pointer to one.
inline rclcpp::Node& node_of(rclcpp::Node* node) { return *node; }
inline rclcpp::Node& node_of(const std::shared_ptr<rclcpp::Node>& node) { return *node; }
template <typename N>
requires std::is_base_of_v<rclcpp::Node, N> rclcpp::Node& node_of(const std::shared_ptr<N>& node) { return *node; }

// ---- The server.

template <action::ActionType A>
class Server;

/// One accepted goal on the server: read its goal, publish feedback, end it.
/// Thread-safe; the execute thread holds it.
template <action::ActionType A>
class ServerGoalHandle {
 public:
  using SharedPtr = std::shared_ptr<ServerGoalHandle>;
  using Goal = typename A::Goal;
  using Result = typename A::Result;
  using Feedback = typename A::Feedback;

  ServerGoalHandle(action::Server& server, const GoalUUID& id, std::shared_ptr<const Goal> goal)
      : server_(&server), id_(id), goal_(std::move(goal)) {}

  [[nodiscard]] const GoalUUID& get_goal_id() const noexcept { return id_; }
  [[nodiscard]] std::shared_ptr<const Goal> get_goal() const { return goal_; }
  [[nodiscard]] bool is_canceling() const { return server_->status(id_) == GoalStatus::kCanceling; }
  [[nodiscard]] bool is_executing() const { return server_->status(id_) == GoalStatus::kExecuting; }
  [[nodiscard]] bool is_active() const {
    const GoalStatus s = server_->status(id_);
    return s != GoalStatus::kUnknown && !action::is_terminal(s);
  }
  /// ACCEPTED -> EXECUTING, for a goal accepted with ACCEPT_AND_DEFER.
  void execute() { server_->execute(id_); }

  void publish_feedback(std::shared_ptr<Feedback> feedback) {
    typename A::Impl::FeedbackMessage m{};
    m.goal_id.uuid = id_;
    m.feedback = *feedback;
    server_->publish_feedback(id_, action::bytes_of(m));
  }
  /// Ends the goal. Throws std::runtime_error when it is over already, or
  /// (canceled) when it was not asked to cancel, as rclcpp_action does.
  void succeed(std::shared_ptr<Result> result) { end(GoalStatus::kSucceeded, std::move(result)); }
  void abort(std::shared_ptr<Result> result) { end(GoalStatus::kAborted, std::move(result)); }
  void canceled(std::shared_ptr<Result> result) { end(GoalStatus::kCanceled, std::move(result)); }

 private:
  void end(GoalStatus status, std::shared_ptr<Result> result) {
    typename A::Impl::GetResultService::Response r{};
    r.status = static_cast<std::int8_t>(status);
    if (result) r.result = *result;
    if (!server_->finish(id_, status, action::bytes_of(r))) {
      throw std::runtime_error("goal " + action::to_string(id_) + " cannot become " +
                               std::string(action::to_string(status)) + " now (it is " +
                               std::string(action::to_string(server_->status(id_))) + ")");
    }
  }

  action::Server* server_;
  GoalUUID id_;
  std::shared_ptr<const Goal> goal_;
};

template <action::ActionType A>
class Server {
 public:
  using SharedPtr = std::shared_ptr<Server>;
  using GoalHandle = ServerGoalHandle<A>;
  using GoalCallback = std::function<GoalResponse(const GoalUUID&, std::shared_ptr<const typename A::Goal>)>;
  using CancelCallback = std::function<CancelResponse(std::shared_ptr<GoalHandle>)>;
  using AcceptedCallback = std::function<void(std::shared_ptr<GoalHandle>)>;

  Server(shmbus::Node& node, const std::string& name, GoalCallback on_goal, CancelCallback on_cancel,
         AcceptedCallback on_accepted, const action::ServerOptions& options)
      : on_goal_(std::move(on_goal)), on_cancel_(std::move(on_cancel)), on_accepted_(std::move(on_accepted)) {
    action::Server::Callbacks cb;
    cb.goal = [this](const GoalUUID& id, std::span<const std::byte> request) { return goal(id, request); };
    cb.cancel = [this](const GoalUUID& id) { return cancel(id); };
    cb.accepted = [this](const GoalUUID& id) { accepted(id); };
    cb.unknown_result = action::bytes_of(typename A::Impl::GetResultService::Response{});
    server_.emplace(node, name, action::action_types_of<A>(), std::move(cb), options);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// The untyped server (counters, goals held).
  [[nodiscard]] action::Server& shmbus_server() noexcept { return *server_; }

 private:
  action::GoalResponse goal(const GoalUUID& id, std::span<const std::byte> request) {
    using Request = typename A::Impl::SendGoalService::Request;
    auto goal = std::make_shared<const typename A::Goal>(action::message_of<Request>(request).goal);
    const GoalResponse r = on_goal_(id, goal);
    if (r != GoalResponse::REJECT) {
      const std::lock_guard lock(mutex_);
      handles_[id] = std::make_shared<GoalHandle>(*server_, id, std::move(goal));
    }
    return static_cast<action::GoalResponse>(r);
  }
  action::CancelResponse cancel(const GoalUUID& id) {
    const auto handle = find(id);
    if (!handle || !on_cancel_) return action::CancelResponse::kReject;
    return static_cast<action::CancelResponse>(on_cancel_(handle));
  }
  void accepted(const GoalUUID& id) {
    if (const auto handle = find(id); handle && on_accepted_) on_accepted_(handle);
  }
  /// The handle of a live goal (those of ended goals are let go here).
  std::shared_ptr<GoalHandle> find(const GoalUUID& id) {
    const std::lock_guard lock(mutex_);
    std::erase_if(handles_, [this](const auto& h) { return action::is_terminal(server_->status(h.first)); });
    const auto it = handles_.find(id);
    return it == handles_.end() ? nullptr : it->second;
  }

  GoalCallback on_goal_;
  CancelCallback on_cancel_;
  AcceptedCallback on_accepted_;
  std::mutex mutex_;
  std::map<GoalUUID, std::shared_ptr<GoalHandle>> handles_;
  std::optional<action::Server> server_;  ///< last: its callbacks use the rest
};

/// rclcpp_action::create_server: `node` is `this` in a node or a shared
/// pointer to one; `name` is resolved as the node resolves names.
template <action::ActionType A, typename NodeT>
typename Server<A>::SharedPtr create_server(NodeT&& node, const std::string& name,
                                            typename Server<A>::GoalCallback handle_goal,
                                            typename Server<A>::CancelCallback handle_cancel,
                                            typename Server<A>::AcceptedCallback handle_accepted,
                                            const action::ServerOptions& options = {},
                                            const std::shared_ptr<rclcpp::CallbackGroup>& group = nullptr) {
  static_cast<void>(group);
  rclcpp::Node& n = node_of(node);
  return std::make_shared<Server<A>>(n.shmbus_node(), n.get_resolved_name(name), std::move(handle_goal),
                                     std::move(handle_cancel), std::move(handle_accepted), options);
}

// ---- The client.

/// One goal as its client sees it.
template <action::ActionType A>
class ClientGoalHandle {
 public:
  using SharedPtr = std::shared_ptr<ClientGoalHandle>;
  using Feedback = typename A::Feedback;
  using Result = typename A::Result;
  using FeedbackCallback = std::function<void(SharedPtr, const std::shared_ptr<const Feedback>)>;
  /// A goal's outcome: its code, its result, and its id.
  struct WrappedResult {
    GoalUUID goal_id{};
    ResultCode code = ResultCode::UNKNOWN;
    std::shared_ptr<Result> result;
  };
  using ResultCallback = std::function<void(const WrappedResult&)>;

  ClientGoalHandle(const GoalUUID& id, std::int64_t stamp_ns) : id_(id), stamp_ns_(stamp_ns) {}
  [[nodiscard]] const GoalUUID& get_goal_id() const noexcept { return id_; }
  [[nodiscard]] rclcpp::Time get_goal_stamp() const noexcept { return rclcpp::Time(stamp_ns_); }
  /// The last state the client knows: ACCEPTED until the goal's outcome.
  [[nodiscard]] std::int8_t get_status() const {
    const std::lock_guard lock(mutex_);
    return static_cast<std::int8_t>(status_);
  }
  [[nodiscard]] bool is_result_aware() const noexcept { return true; }

 private:
  template <action::ActionType>
  friend class Client;
  GoalUUID id_;
  std::int64_t stamp_ns_;
  mutable std::mutex mutex_;
  GoalStatus status_ = GoalStatus::kAccepted;
  std::promise<WrappedResult> result_promise_;
  std::shared_future<WrappedResult> result_future_{result_promise_.get_future().share()};
  ResultCallback result_callback_;
};

template <action::ActionType A>
class Client {
 public:
  using SharedPtr = std::shared_ptr<Client>;
  using Goal = typename A::Goal;
  using Feedback = typename A::Feedback;
  using Result = typename A::Result;
  using GoalHandle = ClientGoalHandle<A>;
  using WrappedResult = typename GoalHandle::WrappedResult;
  using CancelResponse = typename A::Impl::CancelGoalService::Response;

  struct SendGoalOptions {
    /// The goal's handle, or nullptr when the server rejected it.
    std::function<void(typename GoalHandle::SharedPtr)> goal_response_callback;
    typename GoalHandle::FeedbackCallback feedback_callback;
    typename GoalHandle::ResultCallback result_callback;
  };

  Client(shmbus::Node& node, const std::string& name, const action::ClientOptions& options)
      : client_(node, name, action::action_types_of<A>(), options) {}
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  [[nodiscard]] bool action_server_is_ready() const { return client_.server_ready(); }
  /// Waits up to `timeout` (negative: for ever) for a server; false when
  /// none came, or on shutdown.
  template <typename Rep = std::int64_t, typename Period = std::milli>
  bool wait_for_action_server(std::chrono::duration<Rep, Period> timeout = std::chrono::duration<Rep, Period>(-1)) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout);
    while (rclcpp::ok()) {
      std::chrono::nanoseconds step = std::chrono::milliseconds(20);
      if (timeout.count() >= 0) step = std::min(step, end - std::chrono::steady_clock::now());
      if (client_.wait_for_server(std::max(step, std::chrono::nanoseconds(0)))) return true;
      if (timeout.count() >= 0 && std::chrono::steady_clock::now() >= end) return false;
    }
    return false;
  }

  /// Sends `goal`; the future holds its handle once the server answered
  /// (nullptr: rejected; an exception: the request failed).
  std::shared_future<typename GoalHandle::SharedPtr> async_send_goal(const Goal& goal,
                                                                     const SendGoalOptions& options = {}) {
    auto promise = std::make_shared<std::promise<typename GoalHandle::SharedPtr>>();
    auto future = promise->get_future().share();
    typename A::Impl::SendGoalService::Request request{};
    request.goal_id.uuid = action::random_goal_id();
    request.goal = goal;
    const GoalUUID id = request.goal_id.uuid;
    auto handle = std::make_shared<std::shared_ptr<GoalHandle>>();  // set once accepted
    action::Client::GoalCallbacks cb;
    cb.response = [this, id, options, promise, handle](bool accepted, std::int64_t stamp, const std::string& error) {
      if (!error.empty()) {
        promise->set_exception(std::make_exception_ptr(std::runtime_error(error)));
        return;
      }
      if (accepted) {
        *handle = std::make_shared<GoalHandle>(id, stamp);
        (*handle)->result_callback_ = options.result_callback;
        remember(*handle);
      }
      if (options.goal_response_callback) options.goal_response_callback(accepted ? *handle : nullptr);
      promise->set_value(accepted ? *handle : nullptr);
    };
    cb.feedback = [options, handle](std::span<const std::byte> bytes) {
      if (!options.feedback_callback || !*handle) return;
      auto m = action::message_of<typename A::Impl::FeedbackMessage>(bytes);
      options.feedback_callback(*handle, std::make_shared<const Feedback>(std::move(m.feedback)));
    };
    cb.result = [this, id](const action::GoalOutcome& outcome) { deliver(id, outcome); };
    client_.send_goal(id, action::bytes_of(request), std::move(cb));
    return future;
  }

  /// The future of an accepted goal's outcome; `callback`, when given,
  /// replaces the one the goal was sent with.
  std::shared_future<WrappedResult> async_get_result(const typename GoalHandle::SharedPtr& goal_handle,
                                                     typename GoalHandle::ResultCallback callback = nullptr) {
    known(goal_handle);
    if (callback) {
      const std::lock_guard lock(goal_handle->mutex_);
      goal_handle->result_callback_ = std::move(callback);
    }
    return goal_handle->result_future_;
  }

  /// Asks the server to cancel a goal; the future holds its answer.
  std::shared_future<std::shared_ptr<CancelResponse>> async_cancel_goal(
      const typename GoalHandle::SharedPtr& goal_handle,
      std::function<void(std::shared_ptr<CancelResponse>)> callback = nullptr) {
    known(goal_handle);
    return cancel(goal_handle->get_goal_id(), 0, std::move(callback));
  }
  /// Every goal of the action's server (rclcpp_action's cancel_all_goals).
  std::shared_future<std::shared_ptr<CancelResponse>> async_cancel_all_goals(
      std::function<void(std::shared_ptr<CancelResponse>)> callback = nullptr) {
    return cancel(GoalUUID{}, 0, std::move(callback));
  }
  /// Goals accepted at or before `stamp`.
  std::shared_future<std::shared_ptr<CancelResponse>> async_cancel_goals_before(
      const rclcpp::Time& stamp, std::function<void(std::shared_ptr<CancelResponse>)> callback = nullptr) {
    return cancel(GoalUUID{}, stamp.nanoseconds(), std::move(callback));
  }

  /// The untyped client.
  [[nodiscard]] action::Client& shmbus_client() noexcept { return client_; }

 private:
  std::shared_future<std::shared_ptr<CancelResponse>> cancel(const GoalUUID& id, std::int64_t stamp,
                                                             std::function<void(std::shared_ptr<CancelResponse>)> cb) {
    auto promise = std::make_shared<std::promise<std::shared_ptr<CancelResponse>>>();
    auto future = promise->get_future().share();
    client_.cancel_goal(id, stamp, [promise, cb](std::span<const std::byte> bytes, const std::string& error) {
      if (!error.empty()) {
        promise->set_exception(std::make_exception_ptr(std::runtime_error(error)));
        return;
      }
      try {
        auto r = std::make_shared<CancelResponse>(action::message_of<CancelResponse>(bytes));
        if (cb) cb(r);
        promise->set_value(std::move(r));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
    return future;
  }

  void remember(const typename GoalHandle::SharedPtr& handle) {
    const std::lock_guard lock(mutex_);
    handles_[handle->get_goal_id()] = handle;
  }
  /// A handle this client made: one accepted (held until its outcome),
  /// or one whose outcome came.
  void known(const typename GoalHandle::SharedPtr& handle) {
    if (!handle) throw UnknownGoalHandleError();
  }

  /// A goal's outcome to its handle: its future, then its callback.
  void deliver(const GoalUUID& id, const action::GoalOutcome& outcome) {
    typename GoalHandle::SharedPtr handle;
    {
      const std::lock_guard lock(mutex_);
      const auto it = handles_.find(id);
      if (it == handles_.end()) return;
      handle = it->second;
      handles_.erase(it);  // its handle holds the outcome from here
    }
    WrappedResult w;
    w.goal_id = id;
    w.code = static_cast<ResultCode>(outcome.status);
    w.result = std::make_shared<Result>();
    if (outcome.error.empty()) {
      try {
        w.result = std::make_shared<Result>(
            action::message_of<typename A::Impl::GetResultService::Response>(outcome.result_response).result);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shmbus: action %s: goal %s: its result does not decode: %s\n", client_.name().c_str(),
                     action::to_string(id).c_str(), e.what());
        w.code = ResultCode::ABORTED;
      }
    } else if (outcome.status == GoalStatus::kUnknown) {
      w.code = ResultCode::UNKNOWN;
    }
    typename GoalHandle::ResultCallback callback;
    {
      const std::lock_guard lock(handle->mutex_);
      handle->status_ = static_cast<GoalStatus>(w.code);
      // Taken, not copied: a callback that holds what holds the handle
      // would otherwise keep both alive for ever.
      callback = std::move(handle->result_callback_);
      handle->result_callback_ = nullptr;
    }
    handle->result_promise_.set_value(w);
    if (callback) callback(w);
  }

  std::mutex mutex_;
  std::map<GoalUUID, typename GoalHandle::SharedPtr> handles_;  ///< accepted goals until their outcome
  action::Client client_;                                       ///< last: its thread calls into the rest
};

/// rclcpp_action::create_client: `node` is `this` in a node or a shared
/// pointer to one; `name` is resolved as the node resolves names.
template <action::ActionType A, typename NodeT>
typename Client<A>::SharedPtr create_client(NodeT&& node, const std::string& name,
                                            const std::shared_ptr<rclcpp::CallbackGroup>& group = nullptr) {
  static_cast<void>(group);
  rclcpp::Node& n = node_of(node);
  return std::make_shared<Client<A>>(n.shmbus_node(), n.get_resolved_name(name), action::ClientOptions{});
}

}  // namespace shmbus::rclcpp_action
