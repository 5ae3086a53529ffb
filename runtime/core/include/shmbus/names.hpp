#pragma once
/// @file names.hpp
/// Rules for channel and domain names, and the shared-memory object names
/// they become.

#include <cstdint>
#include <string>
#include <string_view>

namespace shmbus {

/// Longest channel name, in bytes.
inline constexpr std::size_t kMaxChannelName = 100;
/// Longest domain name, in bytes.
inline constexpr std::size_t kMaxDomainName = 32;
/// Longest node name, in bytes (longer ones are refused).
inline constexpr std::size_t kMaxNodeName = 63;

/// Throws Error(kInvalidArgument) unless `name` is `/seg[/seg...]`, each
/// segment made of [A-Za-z0-9_-], at most kMaxChannelName bytes.
void validate_channel_name(std::string_view name);
/// A channel name that has passed validate_channel_name, resolved once
/// into what the name alone decides: its segment's object name in its
/// domain, and the channel whose settings it starts from (a service
/// client's response channel: the service's). The public entry points
/// (Publisher, Subscriber, ChannelReader) make one, and what they call
/// below takes it, so a name enters this file once.
class ChannelName {
 public:
  /// Throws Error(kInvalidArgument) as validate_channel_name.
  ChannelName(std::string_view name, std::string_view domain);
  [[nodiscard]] const std::string& str() const noexcept { return name_; }
  [[nodiscard]] std::string_view view() const noexcept { return name_; }
  /// The shared-memory object (channel_object_name).
  [[nodiscard]] const std::string& object() const noexcept { return object_; }
  /// settings_alias(): Config::channel's starting point.
  [[nodiscard]] const std::string& settings_alias() const noexcept { return alias_; }

 private:
  std::string name_;
  std::string object_;
  std::string alias_;
};

/// Throws Error(kInvalidArgument) unless `domain` is 1..32 of [A-Za-z0-9_-].
void validate_domain_name(std::string_view domain);
/// Throws Error(kInvalidArgument) unless `node` is 1..63 printable ASCII
/// characters without spaces.
void validate_node_name(std::string_view node);

/// A name read from elsewhere (shared memory, a file) as it may be
/// printed: unchanged when it is valid UTF-8 without control characters;
/// else with each control character, invalid byte and backslash written as
/// \xNN (so a terminal never sees an escape sequence, JSON always dumps,
/// and the result never passes validate_channel_name: it shows, flagged as
/// invalid, where it is listed).
std::string escape_name(std::string_view name);

/// A type's name as shmbus writes it, `pkg/Type`: ROS 2's `pkg/msg/Type`,
/// `pkg/srv/Type` and `pkg/action/Type` name the same type. Other names
/// are returned unchanged.
std::string short_type_name(std::string_view type);

/// A service NAME is two channels: requests on `NAME/_request` (type
/// `pkg/Srv_Request`), responses on `NAME/_response` (type
/// `pkg/Srv_Response`). These give the names; `_request` and `_response` as
/// a channel's last segment are meant for services.
std::string service_request_channel(std::string_view service);
std::string service_response_channel(std::string_view service);
std::string service_request_type(std::string_view service_type);
std::string service_response_type(std::string_view service_type);
/// The service a request channel serves (`/a/b/_request` -> `/a/b`), or
/// empty when `channel` is not a request channel.
std::string service_of_request_channel(std::string_view channel);
/// The service type of a request type (`pkg/Srv_Request` -> `pkg/Srv`), or
/// empty.
std::string service_type_of_request_type(std::string_view request_type);
/// A client's own response channel, `NAME/_response/<slot>`: `slot` is its
/// request publisher's entry in the request channel's endpoint table
/// (EndpointView::slot), so a service has at most kMaxChannelPublishers of
/// them, each reused by the next client in that entry.
std::string service_client_response_channel(std::string_view service, std::uint32_t slot);
/// The service of a client response channel (`/a/b/_response/3` -> `/a/b`),
/// or empty when `channel` is not one.
std::string service_of_client_response_channel(std::string_view channel);
/// The channel whose settings `channel` starts from: `NAME/_response` for
/// a client's response channel (`NAME/_response/<slot>`), else empty.
std::string settings_alias(std::string_view channel);
/// The service any of its channels belongs to (`NAME/_request`,
/// `NAME/_response`, `NAME/_response/<slot>` -> `NAME`), or empty.
std::string service_of_channel(std::string_view channel);

/// An action NAME is three services and two channels, named as ROS 2
/// names them: `NAME/_action/send_goal`, `NAME/_action/get_result` and
/// `NAME/_action/cancel_goal`, and the channels `NAME/_action/feedback`
/// and `NAME/_action/status`. `part` is one of those last words.
std::string action_part(std::string_view action, std::string_view part);
/// The action a name of one of its services or channels belongs to
/// (`/a/_action/status` -> `/a`; a service channel's too:
/// `/a/_action/send_goal/_request` -> `/a`), or empty.
std::string action_of_channel(std::string_view channel);
/// The types ROS 2 derives from an action type `pkg/Name`: its services
/// `pkg/Name_SendGoal` and `pkg/Name_GetResult`, and the feedback channel's
/// `pkg/Name_FeedbackMessage` (with `pkg/Name_Goal`, `_Result` and
/// `_Feedback`, written in the `.action`).
inline constexpr std::string_view kActionSendGoalSuffix = "_SendGoal";
inline constexpr std::string_view kActionGetResultSuffix = "_GetResult";
inline constexpr std::string_view kActionFeedbackMessageSuffix = "_FeedbackMessage";
/// The action type of a send-goal request type (`pkg/Name_SendGoal_Request`
/// -> `pkg/Name`), or empty.
std::string action_type_of_send_goal_request(std::string_view request_type);

/// The shared-memory object name of a domain's registry (`shmbus.D.registry`).
std::string registry_object_name(std::string_view domain);
/// The shared-memory object name of a channel (`shmbus.D.c.camera.front`).
std::string channel_object_name(std::string_view domain, std::string_view channel);
/// The shared-memory object name of a channel's ring of generation `g`
/// (>= 1) after it grew (`shmbus.D.g3.camera.front`).
std::string ring_object_name(std::string_view domain, std::string_view channel, std::uint32_t generation);
/// The channel a ring object name (ring_object_name) belongs to, or empty
/// when `object` is not one of `domain`'s ring objects.
std::string channel_of_ring_object(std::string_view domain, std::string_view object);
/// The prefix every object of a domain starts with (`shmbus.D.`).
std::string domain_object_prefix(std::string_view domain);

/// This machine's host name (gethostname), or "unknown".
std::string host_name();

namespace detail {
/// How many times this process has called channel_object_name: a channel
/// is resolved to its object once per mapping (tests count it).
std::uint64_t channel_object_name_calls() noexcept;
}  // namespace detail

}  // namespace shmbus
