#pragma once
// The rosbridge v2 protocol over a Session: JSON (or CBOR) operations with
// an "op" field; replies and errors as "status" and "service_response". The
// same class is the uplink's side of a link to a remote rosbridge server
// (client mode), where the peer's replies go to the operation that asked.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actions.hpp"
#include "session.hpp"

namespace shmbus::bridge {

/// A bus message as rosbridge's `publish` op on `topic`: the envelope
/// around its fields (`msg`) that every rosbridge client reads. The bus
/// reader encodes each message once into it for all sessions.
schema::Json rosbridge_publish(const std::string& topic, schema::Json msg);

class RosbridgeSession final : public Session {
 public:
  using Session::Session;
  ~RosbridgeSession() override;
  RosbridgeSession(const RosbridgeSession&) = delete;
  RosbridgeSession& operator=(const RosbridgeSession&) = delete;

  void deliver(const OutMessage& message, std::uint64_t key) override;
  /// Subscriptions waiting for a channel that appeared start delivering
  /// from its first message; those on a channel that went wait again.
  void channels_changed(const std::vector<const ChannelEntry*>& added,
                        const std::vector<ChannelEntry>& removed) override;

  /// Client mode: sends `op` to the peer; with `reply`, the peer's
  /// service_response or status of the same id is handed to it.
  void send_op(schema::Json op, std::function<void(const schema::Json&)> reply = {});
  /// Handles `op` as if the peer had sent it.
  void handle(const schema::Json& op) { on_op(op); }

 private:
  /// What one subscribe asked for (its id's settings).
  struct Request {
    std::int64_t throttle_ns = 0;
    std::size_t queue_length = 0;   ///< 0: the client's send queue only
    std::size_t fragment_size = 0;  ///< 0: whole messages
    bool cbor = false;
    bool int64_string = false;  ///< JSON with 64-bit integers as decimal strings
  };
  /// How a subscription's messages are sent: CBOR (numbers exact), else
  /// JSON with 64-bit integers as numbers or as strings.
  static Encoding encoding_of(const Request& r) noexcept {
    if (r.cbor) return Encoding::kRosCbor;
    return r.int64_string ? Encoding::kRosJsonExact : Encoding::kRosJson;
  }
  /// A topic this client subscribed to under one or more ids. It is sent
  /// once, at the most demanding of their settings (as rosbridge merges
  /// them): the least throttle, the longest queue, the smallest fragments,
  /// CBOR when any asked for it.
  struct TopicSubscription {
    std::uint64_t key = 0;  ///< the reader's key; 0 while the channel does not exist
    std::string topic;
    std::string type;                                      ///< the type the client named ("": none)
    std::map<std::string, Request, std::less<>> requests;  ///< by subscribe id ("" without one)
    Request merged;
    std::int64_t last_sent_ns = 0;
    std::size_t queued = 0;
  };
  struct Fragments {
    std::vector<std::string> parts;
    std::size_t received = 0;
    std::size_t bytes = 0;
  };

  [[nodiscard]] const char* protocol_name() const noexcept override { return "rosbridge v2"; }
  void on_frame(const std::string& data, bool text) override;
  void tell(const std::string& message, bool error) override { status(error ? "error" : "warning", message); }
  void data_queued(std::uint64_t key) override;
  void data_left(std::uint64_t key) override;
  void release() override;

  void on_op(const schema::Json& op);
  /// The ops a client may send once authenticated (and this side, as a
  /// link's client, answers): the one list of them.
  static const OpTable<RosbridgeSession>& ops();
  void set_level(const schema::Json& op);
  void unadvertise_service_op(const schema::Json& op);
  void ignore(const schema::Json& /*op*/) {}
  void status(const std::string& level, const std::string& message, const schema::Json& id = nullptr);
  void subscribe(const schema::Json& op);
  /// The settings of one subscribe op (warnings for what is adjusted).
  Request request_of(const schema::Json& op, const std::string& topic);
  /// Hands the channel's messages to `sub` (from the ring's oldest with
  /// `from_first`: the subscription waited for the channel).
  void start_delivery(TopicSubscription& sub, const ChannelEntry& channel, bool from_first);
  void stop_delivery(TopicSubscription& sub);
  /// Subscribe and advertise ids held, waiting subscriptions included.
  [[nodiscard]] std::size_t subscription_count() const noexcept;
  void unsubscribe(const schema::Json& op);
  void advertise(const schema::Json& op);
  void unadvertise(const schema::Json& op);
  void publish(const schema::Json& op);
  void call_service(const schema::Json& op);
  void service_response(const schema::Json& op, bool result, schema::Json values);
  bool rosapi(const std::string& service, const schema::Json& args, schema::Json& values);
  /// rosapi's nodes and node_details, from the bus graph.
  bool rosapi_nodes(const std::string& api, const schema::Json& args, schema::Json& values);
  /// rosapi's get_param, set_param and get_param_names (ROS 2's rosapi:
  /// names "/node:param", values as JSON text), through each node's
  /// rcl_interfaces parameter services; answered when they answer. False
  /// when `api` is none of them.
  bool rosapi_params(const std::string& api, const schema::Json& op, const schema::Json& args);
  /// A function that answers `op` from any thread (posted to the io thread).
  std::function<void(bool, schema::Json)> answerer(const schema::Json& op);
  void rosapi_param_names(const schema::Json& op);
  /// Start `node`'s call for get_param or set_param; why it could not start.
  std::optional<std::string> rosapi_get_param(const schema::Json& op, const std::string& node, const std::string& param,
                                              const std::string& fallback);
  std::optional<std::string> rosapi_set_param(const schema::Json& op, const std::string& name, const std::string& node,
                                              const std::string& param, const std::string& text);
  void fragment(const schema::Json& op);
  /// rosbridge's action ops (roslib's Action): goals this client sends,
  /// and actions it serves.
  SessionActions& actions();
  void send_action_goal(const schema::Json& op);
  void cancel_action_goal(const schema::Json& op);
  void advertise_action(const schema::Json& op);
  void unadvertise_action(const schema::Json& op);
  void action_feedback(const schema::Json& op);
  void action_result(const schema::Json& op);
  /// rosapi's action_servers: the actions whose send-goal service is served.
  [[nodiscard]] schema::Json served_actions() const;
  void advertise_service(const schema::Json& op);
  void unadvertise_service(const std::string& service);
  void service_answer(const schema::Json& op);
  /// Fails the calls waiting for this client's answer whose id starts with
  /// `prefix` (all with "").
  void fail_served_calls(const std::string& prefix, const std::string& why);
  void send(const TopicSubscription& sub, const OutMessage& message);
  /// Checks a client's type against a channel's; false (and an error
  /// status naming both) on a mismatch.
  bool check_type(const std::string& topic, const ChannelEntry& channel, const schema::Json& type,
                  const schema::Json& id);

  int status_level_ = 1;  ///< set_level: 0 none, 1 error, 2 warning, 3 info
  std::uint64_t next_call_ = 1;
  std::map<std::string, std::function<void(const schema::Json&)>> pending_calls_;  ///< client mode, by id
  std::map<std::string, TopicSubscription, std::less<>> subs_;                     ///< by topic
  std::map<std::uint64_t, TopicSubscription*> by_key_;
  /// advertise: topic (its channel's name) -> the advertise ids that hold it
  /// ("" without one); the outlet is released with the last.
  std::map<std::string, std::set<std::string>, std::less<>> advertised_;
  std::map<std::string, std::unique_ptr<ClientService>> served_;  ///< advertise_service: service -> server
  std::map<std::string, ClientService::Answer> served_calls_;     ///< requests sent to the client, by id
  std::uint64_t next_served_call_ = 1;
  std::map<std::string, Fragments> fragments_;
  std::unique_ptr<SessionActions> actions_;  ///< made at the first action op
};

}  // namespace shmbus::bridge
