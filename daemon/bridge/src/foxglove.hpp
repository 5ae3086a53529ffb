#pragma once
// The Foxglove WebSocket protocol (foxglove.websocket.v1) over a Session:
// the server advertises channels (ROS 2 CDR with a ros2msg schema, or JSON
// with a JSON Schema), clients subscribe by channel id and receive binary
// message-data frames; clients may advertise channels of their own and
// publish into them, call services, follow the connection graph and, during
// a replay, its clock.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "session.hpp"

namespace shmbus::bridge {

class FoxgloveSession final : public Session {
 public:
  using Session::Session;
  ~FoxgloveSession() override;
  FoxgloveSession(const FoxgloveSession&) = delete;
  FoxgloveSession& operator=(const FoxgloveSession&) = delete;

  void deliver(const OutMessage& message, std::uint64_t key) override;
  void channels_changed(const std::vector<const ChannelEntry*>& added,
                        const std::vector<ChannelEntry>& removed) override;
  [[nodiscard]] bool wants_graph() const noexcept override { return graph_subscribed_; }
  /// Sends what changed since the graph last sent (connectionGraphUpdate).
  void graph_now(const BusGraph& graph) override;
  void services_tick() override { update_services(); }

 private:
  [[nodiscard]] const char* protocol_name() const noexcept override { return "foxglove.websocket.v1"; }
  void opened() override;
  void on_frame(const std::string& data, bool text) override;
  void tell(const std::string& message, bool error) override { status(error ? 2 : 1, message); }
  void release() override;

  void on_op(const schema::Json& op);
  /// The JSON ops a client may send: the one list of them.
  static const OpTable<FoxgloveSession>& ops();
  void subscribe_op(const schema::Json& op);
  void unsubscribe_op(const schema::Json& op);
  void advertise_op(const schema::Json& op);
  void unadvertise_op(const schema::Json& op);
  void subscribe_graph(const schema::Json& op);
  void unsubscribe_graph(const schema::Json& op);
  void refuse(const std::string& message);  ///< status level 2, counted refused
  void subscribe(const schema::Json& subscription);
  void unsubscribe(std::uint32_t id);
  void client_advertise(const schema::Json& channel);
  void on_binary(std::string_view data);
  void status(int level, const std::string& message);
  void advertise(const std::vector<const ChannelEntry*>& channels);
  /// The Foxglove channels of a bus channel: one per encoding offered.
  [[nodiscard]] std::vector<std::uint32_t> channel_ids(const ChannelEntry& e) const;
  [[nodiscard]] bool is_cdr(std::uint32_t channel_id) const noexcept;
  [[nodiscard]] const ChannelEntry* entry_of(std::uint32_t channel_id) const;
  [[nodiscard]] schema::Json channel_json(const ChannelEntry& e, std::uint32_t channel_id) const;
  /// Advertises the services served now and withdraws those gone.
  void update_services();
  /// A service call request (binary opcode 2), answered when the service
  /// answers (opcode 3) or failed (serviceCallFailure).
  void call_service(std::string_view data);
  void service_failure(std::uint32_t service_id, std::uint32_t call_id, const std::string& why);
  /// The time capability: follows the clock channel a replay publishes.
  void follow_clock(const ChannelEntry& e);
  /// A clock message as a Foxglove time frame (binary opcode 2).
  void send_time(const OutMessage& message, std::uint64_t key);

  std::set<std::uint32_t> advertised_;                    ///< channel ids told to the client
  std::map<std::uint32_t, std::uint32_t> subs_;           ///< subscription id -> channel id
  std::map<std::uint64_t, std::uint32_t> by_key_;         ///< reader key -> subscription id
  std::map<std::uint32_t, std::string> client_channels_;  ///< client channel id -> channel
  std::map<std::uint32_t, std::string> services_;         ///< advertised service id -> service
  bool graph_subscribed_ = false;
  std::optional<BusGraph> graph_sent_;  ///< what the client was told of the graph
  bool time_ = false;                   ///< the time capability was announced
  std::uint64_t clock_key_ = 0;         ///< the clock channel's subscription, 0: none
};

}  // namespace shmbus::bridge
