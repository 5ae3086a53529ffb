#pragma once
/// @file service.hpp
/// Request/response over shared memory: one server and any number of
/// clients per service.
///
///   shmbus::TypedServiceServer<example_srvs::srv::AddTwoInts> server(
///       "/example/add", [](const auto& req, auto& rsp) { rsp.sum = req.a + req.b; });
///   server.spin();
///
///   shmbus::TypedServiceClient<example_srvs::srv::AddTwoInts> client("/example/add");
///   example_srvs::srv::AddTwoInts::Response rsp{};
///   if (client.call({.a = 2, .b = 3}, rsp, 1s).ok()) ...
///
/// A service NAME is ordinary channels (names.hpp): requests on
/// `NAME/_request`, and responses on each client's own channel
/// `NAME/_response/<slot>` (`slot`: the client's entry in the request
/// channel's publisher table, so at most kMaxChannelPublishers, reused by
/// the next client there). `NAME/_response` holds the response type for
/// the tools, answers a client without a channel of its own, and notices
/// requests lost before the server took them. Every request and response
/// stamps its channel's time list, so shmbusd and `shmtool hz` see service
/// rates like any other. Requests from all clients share one ring and are
/// served in arrival (sequence) order. A response cites the request it
/// answers as its first provenance input (request channel, request
/// sequence). Nothing is left behind by a client that dies before its
/// response (the next client in its slot starts after it). A response that
/// arrives after its call timed out is counted (ServiceClient::late_responses,
/// and the client's DISCARDED count on its response channel in `shmtool
/// info`) and discarded.

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/types.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus {

class Node;
class Subscriber;

/// A service's types: the request and response messages, and the service
/// type's own name (`pkg/Srv`, whose messages are `pkg/Srv_Request` and
/// `pkg/Srv_Response`).
struct ServiceTypes {
  std::string service_type;
  TypeInfo request;
  TypeInfo response;
};

/// What shmbus-msggen generates for a `.srv`: `kServiceType` and the
/// `Request` and `Response` message types.
template <typename S>
concept ServiceType = AnyMessageType<typename S::Request> && AnyMessageType<typename S::Response> && requires {
  std::string_view{S::kServiceType};
};

template <ServiceType S>
ServiceTypes service_types_of() {
  return {std::string{S::kServiceType}, type_info_of<typename S::Request>(), type_info_of<typename S::Response>()};
}

/// How a call ended.
enum class CallStatus {
  kOk,              ///< the response is in the caller's buffer
  kTimeout,         ///< no response within the timeout (a late one is counted, then discarded)
  kNoServer,        ///< no live server for the service within the timeout; nothing was sent
  kServerDied,      ///< the server that had the request died before it responded
  kServerError,     ///< the server's handler failed (threw) on this request
  kTooLarge,        ///< the request is larger than the request channel's max_message_size
  kBufferTooSmall,  ///< the response did not fit the caller's buffer (`size` says how large it is)
  kDropped,         ///< the request could not be published (a stuck writer held its slot)
  kLost,            ///< the request or its response was lost in a ring (noticed by the server, or skipped)
  kInterrupted,     ///< the caller's `interrupted()` said stop (a late response is counted, then discarded)
};

/// One lowercase word per status (`timeout`, `no server`, ...).
std::string_view to_string(CallStatus status) noexcept;

/// A call's status, the response's size and its header.
struct CallResult {
  CallStatus status = CallStatus::kTimeout;
  std::size_t size = 0;  ///< response bytes (copied, or needed for kBufferTooSmall)
  MessageInfo info;      ///< the response's header (kOk, kBufferTooSmall)
  [[nodiscard]] bool ok() const noexcept { return status == CallStatus::kOk; }
};

/// `via` of a response's first input: whether the handler succeeded.
inline constexpr std::uint32_t kServiceResponseOk = 0;
inline constexpr std::uint32_t kServiceResponseFailed = 1;
/// `via` of both inputs of an empty message on NAME/_response: requests
/// [inputs[0].sequence, inputs[1].sequence) were lost before the server
/// took them; their callers end with kLost.
inline constexpr std::uint32_t kServiceRequestsLost = 2;

/// Options of a server or a client.
struct ServiceOptions {
  /// The node name shown for its endpoints; empty: the context's node.
  std::string node{};
};

/// Serves one service. Only one server per service may live in a domain: a
/// second one is refused (Error kResource naming the first one's process).
/// Standalone, it owns its endpoints and serves in spin()/spin_once(); made
/// with a Node, the node's executor runs the handler like any callback.
/// Thread-safety: use from one thread (its node's callbacks, or spin).
class ServiceServer {
 public:
  /// Handles one request: writes the response into `response` (the
  /// response channel's max_message_size bytes; the server publishes it
  /// when the handler returns) and returns its size, or kDeferred to answer
  /// later with respond(). A handler that throws answers kServerError
  /// (counted in failed(), and in the request subscriber's ERRORS in
  /// shmtool info).
  using Handler = std::function<std::size_t(std::span<const std::byte> request, const MessageInfo& info,
                                            std::span<std::byte> response)>;
  /// What a handler returns to answer its request later (respond()).
  static constexpr std::size_t kDeferred = static_cast<std::size_t>(-1);
  /// A request answered later: its client (MessageInfo::publisher_id) and
  /// its sequence.
  struct Pending {
    std::uint32_t client = 0;
    std::uint64_t sequence = 0;
  };
  [[nodiscard]] static Pending pending(const MessageInfo& request) noexcept {
    return {request.publisher_id, request.sequence};
  }

  /// Opens or creates the service's channels. Throws Error: kInvalidArgument
  /// (bad name), kTypeMismatch (the channels have other types), kResource
  /// (already served).
  ServiceServer(std::string_view service, const ServiceTypes& types, Handler handler,
                Context& context = Context::process_default(), const ServiceOptions& options = {});
  /// Served by `node`'s executor (the node's name on its endpoints). The
  /// server must outlive the node's spinning; it cancels its subscription
  /// when destroyed.
  ServiceServer(Node& node, std::string_view service, const ServiceTypes& types, Handler handler);
  ~ServiceServer();
  ServiceServer(const ServiceServer&) = delete;
  ServiceServer& operator=(const ServiceServer&) = delete;

  /// Standalone: waits up to `timeout` for requests and serves every one
  /// that is there. Returns how many. Not for a server made with a Node.
  std::size_t spin_once(std::chrono::nanoseconds timeout);
  /// Standalone: serves until SIGINT/SIGTERM (or `stop()`).
  void spin();
  /// Ends spin() (from any thread or a signal handler).
  void stop() noexcept;

  /// Answers a request whose handler returned kDeferred, from any thread.
  /// The client waits as its call's timeout allows; one that gave up counts
  /// the answer late. A response larger than the response channel carries
  /// is said once on stderr and counted dropped (shmtool info).
  void respond(const Pending& request, std::span<const std::byte> response);

  [[nodiscard]] const std::string& name() const noexcept;
  /// Requests answered, and those whose handler failed.
  [[nodiscard]] std::uint64_t served() const noexcept;
  [[nodiscard]] std::uint64_t failed() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Calls one service. Several clients (in any processes) may call one
/// service at once. Thread-safety: one call at a time per client.
class ServiceClient {
 public:
  /// Opens or creates the service's channels (a client may start before
  /// its server). Throws Error like Publisher's constructor.
  ServiceClient(std::string_view service, const ServiceTypes& types, Context& context = Context::process_default(),
                const ServiceOptions& options = {});
  ~ServiceClient();
  ServiceClient(ServiceClient&&) noexcept;
  ServiceClient& operator=(ServiceClient&&) noexcept;

  /// Sends `request` and blocks (spinning for the channel's wait_spin, then
  /// on the futex) until the response, copied into `response`, or until
  /// `timeout`. Waits for a server first (within the same timeout); a server
  /// that dies with the request is noticed within the channel's
  /// stall_timeout (at least 1 ms). A request the server passed over
  /// because this client was descheduled between claiming its slot and
  /// committing it (longer than stall_timeout) is sent again (resent()).
  CallResult call(std::span<const std::byte> request, std::span<std::byte> response,
                  std::chrono::nanoseconds timeout) noexcept;
  /// The same, asking `interrupted()` (which must not throw) at least every
  /// 20 ms while it waits for a server or the response: once it returns
  /// true the call ends with kInterrupted. Bindings use it so that Ctrl-C
  /// ends a call at once rather than at its timeout.
  CallResult call(std::span<const std::byte> request, std::span<std::byte> response, std::chrono::nanoseconds timeout,
                  const std::function<bool()>& interrupted) noexcept;

  /// Whether a live server serves the service now.
  [[nodiscard]] bool server_ready() const;
  /// Waits up to `timeout` for a server; false when none came.
  bool wait_for_server(std::chrono::nanoseconds timeout);

  [[nodiscard]] const std::string& name() const noexcept;
  /// The request channel's max_message_size.
  [[nodiscard]] std::size_t max_request_size() const noexcept;
  /// The one line for a request of `size` bytes that does not fit
  /// (kTooLarge): Publisher::too_large of the request channel.
  [[nodiscard]] std::string request_too_large(std::size_t size) const;
  /// The response channel's max_message_size.
  /// The largest response: what the response channel may grow to.
  [[nodiscard]] std::size_t max_response_size() const noexcept;
  /// Calls made, calls that timed out, responses that came after their
  /// call's timeout (discarded).
  [[nodiscard]] std::uint64_t calls() const noexcept;
  [[nodiscard]] std::uint64_t timeouts() const noexcept;
  [[nodiscard]] std::uint64_t late_responses() const noexcept;
  /// Calls that ended kLost (their request or response was overwritten or
  /// stalled in its ring: also counted LOST in shmtool info).
  [[nodiscard]] std::uint64_t lost() const noexcept;
  /// Requests sent again because the server passed over them, never taken,
  /// while this client was descheduled mid-publish (the server's LOST in
  /// shmtool info counts them).
  [[nodiscard]] std::uint64_t resent() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A ServiceServer of one ServiceType.
template <ServiceType S>
class TypedServiceServer {
 public:
  using Request = typename S::Request;
  using Response = typename S::Response;
  using Handler = std::function<void(const Request&, Response&)>;

  TypedServiceServer(std::string_view service, Handler handler, Context& context = Context::process_default(),
                     const ServiceOptions& options = {})
      : server_(service, service_types_of<S>(), wrap(std::move(handler)), context, options) {}
  TypedServiceServer(Node& node, std::string_view service, Handler handler)
      : server_(node, service, service_types_of<S>(), wrap(std::move(handler))) {}

  std::size_t spin_once(std::chrono::nanoseconds timeout) { return server_.spin_once(timeout); }
  void spin() { server_.spin(); }
  void stop() noexcept { server_.stop(); }
  [[nodiscard]] ServiceServer& untyped() noexcept { return server_; }

 private:
  static ServiceServer::Handler wrap(Handler handler) {
    return [h = std::move(handler)](std::span<const std::byte> request, const MessageInfo&,
                                    std::span<std::byte> response) -> std::size_t {
      if constexpr (MessageType<Request>) {
        Request req{};  // a shorter request leaves the rest zero
        std::memcpy(&req, request.data(), std::min(request.size(), sizeof(Request)));
        return respond(h, req, response);
      } else {
        // A request that points outside its bytes throws: kServerError.
        return respond(h, Request::from(typename Request::View(request)), response);
      }
    };
  }
  static std::size_t respond(const Handler& h, const Request& req, std::span<std::byte> response) {
    if constexpr (MessageType<Response>) {
      Response* rsp = ::new (response.data()) Response{};
      h(req, *rsp);
      return sizeof(Response);
    } else {
      Response rsp{};
      h(req, rsp);
      // Larger than the response channel's slot: one line, kServerError.
      msg::Writer writer(response);
      rsp.build(typename Response::Builder(writer));
      return writer.size();
    }
  }
  ServiceServer server_;
};

/// A ServiceClient of one ServiceType.
template <ServiceType S>
class TypedServiceClient {
 public:
  using Request = typename S::Request;
  using Response = typename S::Response;

  explicit TypedServiceClient(std::string_view service, Context& context = Context::process_default(),
                              const ServiceOptions& options = {})
      : client_(service, service_types_of<S>(), context, options) {}

  /// Calls the service; `response` holds the answer when the result is ok().
  /// `interrupted`, when given, is asked as ServiceClient::call asks it.
  CallResult call(const Request& request, Response& response, std::chrono::nanoseconds timeout,
                  const std::function<bool()>& interrupted = {}) noexcept requires MessageType<Request> &&
      MessageType<Response> {
    return send(std::as_bytes(std::span{&request, 1}), std::as_writable_bytes(std::span{&response, 1}), timeout,
                interrupted);
  }
  /// The same where a message has strings or sequences: written through
  /// its Builder, read through its View. Throws Error(kInvalidArgument)
  /// when a sequence passes its bound, or the response points outside its
  /// bytes.
  CallResult call(const Request& request, Response& response, std::chrono::nanoseconds timeout,
                  const std::function<bool()>& interrupted = {}) requires(VariableMessageType<Request> ||
                                                                          VariableMessageType<Response>) {
    std::vector<std::byte> req;
    std::span<const std::byte> req_bytes;
    if constexpr (MessageType<Request>) {
      req_bytes = std::as_bytes(std::span{&request, 1});
    } else {
      req.resize(request.wire_size());
      msg::Writer writer(req);
      request.build(typename Request::Builder(writer));
      req_bytes = req;
    }
    if constexpr (MessageType<Response>) {
      return send(req_bytes, std::as_writable_bytes(std::span{&response, 1}), timeout, interrupted);
    } else {
      // As large as a response may grow; left uninitialised, so only the
      // pages a response fills are ever backed by memory.
      if (buffer_size_ < client_.max_response_size()) {
        buffer_size_ = client_.max_response_size();
        buffer_.reset(new std::byte[buffer_size_]);  // NOLINT(cppcoreguidelines-owning-memory)
      }
      const CallResult r = send(req_bytes, std::span<std::byte>(buffer_.get(), buffer_size_), timeout, interrupted);
      if (r.ok()) response = Response::from(typename Response::View(std::span<const std::byte>(buffer_.get(), r.size)));
      return r;
    }
  }
  bool wait_for_server(std::chrono::nanoseconds timeout) { return client_.wait_for_server(timeout); }
  [[nodiscard]] ServiceClient& untyped() noexcept { return client_; }

 private:
  CallResult send(std::span<const std::byte> request, std::span<std::byte> response, std::chrono::nanoseconds timeout,
                  const std::function<bool()>& interrupted) noexcept {
    return interrupted ? client_.call(request, response, timeout, interrupted)
                       : client_.call(request, response, timeout);
  }

  ServiceClient client_;
  std::unique_ptr<std::byte[]> buffer_;  ///< a variable response, before it is read
  std::size_t buffer_size_ = 0;
};

namespace introspect {

/// A service as the tools see it: its two channels, its server and its
/// clients (processes that publish requests and read responses).
struct ServiceView {
  std::string name;
  std::string service_type;  ///< from the request type (`pkg/Srv`)
  ChannelView requests;
  std::optional<ChannelView> responses;  ///< absent until a server or client made it
  std::optional<EndpointView> server;    ///< the live server, if any
  std::vector<EndpointView> clients;     ///< request publishers (one per client)
  /// Responses sent, on NAME/_response and the clients' own channels.
  std::uint64_t responses_sent = 0;
  /// The clients' own response channels (`NAME/_response/<slot>`), sorted.
  std::vector<std::string> client_channels;
  /// Responses clients discarded because their call had timed out.
  std::uint64_t late_responses = 0;
};

/// The live server among a service's endpoints: a live process that
/// subscribes to `requests` and publishes on `responses`.
std::optional<EndpointView> service_server(const ChannelView& requests, const ChannelView& responses);

/// The service names of a domain (every channel `NAME/_request`), sorted.
std::vector<std::string> service_names(const DomainView& domain);

/// One service's view. Throws Error(kNotFound) when it has no request
/// channel.
ServiceView service_view(const std::string& domain, std::string_view service, const SegmentAccess& access = {});

}  // namespace introspect

}  // namespace shmbus
