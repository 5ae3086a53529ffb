#include "shmbus/service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/node.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

namespace shmbus {

std::string_view to_string(CallStatus status) noexcept {
  switch (status) {
    case CallStatus::kOk:
      return "ok";
    case CallStatus::kTimeout:
      return "timeout";
    case CallStatus::kNoServer:
      return "no server";
    case CallStatus::kServerDied:
      return "server died";
    case CallStatus::kServerError:
      return "server error";
    case CallStatus::kTooLarge:
      return "request too large";
    case CallStatus::kBufferTooSmall:
      return "response buffer too small";
    case CallStatus::kDropped:
      return "request dropped";
    case CallStatus::kLost:
      return "lost";
    case CallStatus::kInterrupted:
      return "interrupted";
  }
  return "?";
}

namespace {

/// CLOCK_MONOTONIC `timeout` from now, saturated (nanoseconds::max() waits
/// for ever).
std::int64_t deadline_after(std::chrono::nanoseconds timeout) noexcept {
  const std::int64_t now = mono_now_ns();
  const std::int64_t t = std::max<std::int64_t>(timeout.count(), 0);
  return t > INT64_MAX - now ? INT64_MAX : now + t;
}

/// Refuses a second server: the first one's process is named.
void refuse_if_served(const std::string& domain, std::string_view service, const SegmentAccess& access) {
  std::optional<introspect::ServiceView> view;
  try {
    view = introspect::service_view(domain, service, access);
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) return;
    throw;
  }
  if (view->server) {
    throw Error(Errc::kResource, fmt::format("service {} is already served by pid {} (node {}); one server per "
                                             "service: stop that one first",
                                             service, view->server->pid, view->server->node));
  }
}

/// How long a client waits for a response slot the server claimed and is
/// still writing (descheduled) before it counts it lost. The server is the
/// only writer of the response channels and a client has one call in
/// flight, so such a slot holds up nothing behind it: the channel's
/// stall_timeout (2 ms by default) would turn a server preempted mid-publish
/// into a lost call. A server that dies mid-write is noticed by the call's
/// liveness check (kServerDied), one that hangs by the call's timeout.
constexpr std::chrono::seconds kResponseStallTimeout{1};

SubscriberOptions response_reader_options(const ServiceOptions& options) {
  return SubscriberOptions{.stall_timeout = kResponseStallTimeout, .node = options.node};
}

}  // namespace

// ---------------------------------------------------------------- server

struct ServiceServer::Impl {
  std::string name;
  Handler handler;
  std::unique_ptr<Node> own_node;  ///< standalone: the node that runs the handler
  Node* node = nullptr;
  TypeInfo response_type;
  Subscription* requests = nullptr;
  /// NAME/_response: the response type's home for the tools, where the
  /// server is seen (service_server), answers clients that have no channel
  /// of their own, and notices requests lost before it took them.
  Publisher* responses = nullptr;
  std::uint32_t request_index = 0;
  /// The request channel's endpoint table: a client's slot, by its request
  /// publisher's id (read once per client).
  std::optional<introspect::ChannelReader> request_reader;
  /// Per slot of the request channel's publisher table: the request
  /// publisher id last seen there, and the client response channel
  /// NAME/_response/<slot> (null: that client has none; answered on
  /// NAME/_response). At most kMaxChannelPublishers, one per slot, reused
  /// by the slot's next client.
  std::array<std::uint32_t, kMaxChannelPublishers> slot_client{};
  std::array<std::unique_ptr<Publisher>, kMaxChannelPublishers> client_responses;
  /// The response the handler writes: as large as the response channel
  /// may grow, left uninitialised so only the pages responses fill are
  /// backed by memory.
  std::unique_ptr<std::byte[]> buffer;
  std::size_t buffer_size = 0;
  /// Statistics written by the serving thread, read by any: relaxed, no
  /// ordering partner (nothing else is published through them).
  std::atomic<std::uint64_t> served{0};
  std::atomic<std::uint64_t> failed{0};

  void open(Node& n, std::string_view service, const ServiceTypes& types) {
    validate_channel_name(service);
    node = &n;
    name = std::string{service};
    response_type = types.response;
    refuse_if_served(n.context().domain(), service, n.context().config().access());
    responses = &*n.publisher(service_response_channel(service), types.response);
    // Requests lost with none after them (a client stalled between its
    // claim and its commit, the last one in the ring) are noticed at once
    // too: their callers are waiting.
    SubscriptionOptions options;
    options.on_lost = [this](const LostRange& lost) { notice_lost(lost.first, lost.end); };
    requests = &n.subscribe_raw(
        service_request_channel(service), types.request,
        [this](std::span<const std::byte> request, const MessageInfo& info) { serve(request, info); }, options);
    request_index = requests->subscriber().channel_index();
  }

  /// reply_channel() under reply_mutex.
  Publisher& reply_for(std::uint32_t client) {
    const std::lock_guard lock(reply_mutex);
    return reply_channel(client);
  }

  /// Where the answer to a request from request publisher `client` goes:
  /// its client's own response channel, or NAME/_response when it has none
  /// (a name too long for one, a channel of another type, a client gone).
  Publisher& reply_channel(std::uint32_t client) {
    for (std::uint32_t s = 0; s < kMaxChannelPublishers; ++s) {
      if (slot_client[s] == client) return client_responses[s] ? *client_responses[s] : *responses;
    }
    std::optional<std::uint32_t> slot;
    try {
      if (!request_reader) {
        request_reader.emplace(node->context().domain(), service_request_channel(name), false,
                               node->context().config().access());
      }
      for (const introspect::EndpointView& p : request_reader->view().publishers) {
        if (p.id == client && p.slot < kMaxChannelPublishers) slot = p.slot;
      }
    } catch (const Error&) {
    }
    if (!slot) return *responses;  // gone already: nobody reads an answer
    slot_client[*slot] = client;
    if (!client_responses[*slot]) {
      try {
        client_responses[*slot] =
            std::make_unique<Publisher>(service_client_response_channel(name, *slot), response_type, node->context(),
                                        PublisherOptions{.node = node->name(), .create = false});
      } catch (const Error&) {
        return *responses;  // tried again when another client takes the slot
      }
    }
    return *client_responses[*slot];
  }

  /// Requests lost before the server took them (overwritten in the ring, or
  /// their writer stalled beyond stall_timeout): sequences [first, end) are
  /// noticed on NAME/_response, where their callers look (kLost).
  void notice_lost(std::uint64_t first, std::uint64_t end) noexcept {
    const std::array<Provenance, 2> range{Provenance{request_index, kServiceRequestsLost, first},
                                          Provenance{request_index, kServiceRequestsLost, end}};
    responses->set_provenance(range);
    // An empty notice cannot be too large; one dropped is counted by the
    // publisher (shmtool info), and the callers' own bound then ends their wait.
    static_cast<void>(responses->publish(nullptr, 0));
  }

  /// Answers one request. The handler writes into our buffer, not into a
  /// loan: a loan held while the handler runs would stall the response
  /// ring's readers beyond stall_timeout (they would count it lost). The
  /// response cites the request (channel, sequence) and whether it failed.
  void serve(std::span<const std::byte> request, const MessageInfo& info) {
    if (const LostRange lost = requests->subscriber().lost_before(info); !lost.empty()) {
      notice_lost(lost.first, lost.end);
    }
    Publisher& reply = reply_for(info.publisher_id);
    const std::size_t room = reply.size_ceiling();
    if (buffer_size < room) {
      buffer_size = room;
      buffer.reset(new std::byte[room]);  // NOLINT(cppcoreguidelines-owning-memory)
    }
    Provenance answer{request_index, kServiceResponseOk, info.sequence};
    std::size_t size = 0;
    std::exception_ptr error;
    try {
      size = handler(request, info, std::span<std::byte>(buffer.get(), room));
    } catch (...) {
      error = std::current_exception();
      answer.via = kServiceResponseFailed;
      size = 0;
    }
    if (!error && size == kDeferred) return;  // respond() answers it
    send(reply, answer, std::span<const std::byte>(buffer.get(), std::min(size, room)), error != nullptr);
    if (error) std::rethrow_exception(error);  // the node counts it (ERRORS in shmtool info) and logs it
  }

  /// Publishes one answer on `reply`, citing the request: the serving
  /// thread and respond()'s (deferred answers) share the reply channels.
  void send(Publisher& reply, const Provenance& answer, std::span<const std::byte> response, bool failed_request) {
    const std::lock_guard lock(reply_mutex);
    (failed_request ? failed : served).fetch_add(1, std::memory_order_relaxed);
    reply.set_provenance(std::span{&answer, 1});
    // A publish that fails is counted dropped by the publisher (shmtool
    // info), or said on stderr when too large; the caller's bound ends its wait.
    static_cast<void>(reply.publish(response.data(), response.size()));
  }

  /// Held while a reply channel is looked up or published on.
  std::mutex reply_mutex;
};

ServiceServer::ServiceServer(std::string_view service, const ServiceTypes& types, Handler handler, Context& context,
                             const ServiceOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->own_node = std::make_unique<Node>(options.node, context);
  impl_->open(*impl_->own_node, service, types);
}

ServiceServer::ServiceServer(Node& node, std::string_view service, const ServiceTypes& types, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->open(node, service, types);
}

ServiceServer::~ServiceServer() {
  if (impl_ && impl_->requests != nullptr) impl_->requests->cancel();
}

std::size_t ServiceServer::spin_once(std::chrono::nanoseconds timeout) {
  if (!impl_->own_node) {
    throw Error(Errc::kInvalidArgument, "service " + impl_->name + " is served by its node: spin the node instead");
  }
  return impl_->own_node->spin_once(timeout);
}

void ServiceServer::spin() {
  if (!impl_->own_node) {
    throw Error(Errc::kInvalidArgument, "service " + impl_->name + " is served by its node: spin the node instead");
  }
  impl_->own_node->spin();
}

void ServiceServer::stop() noexcept {
  if (impl_->own_node) impl_->own_node->stop();
}

void ServiceServer::respond(const Pending& request, std::span<const std::byte> response) {
  Publisher& reply = impl_->reply_for(request.client);
  impl_->send(reply, Provenance{impl_->request_index, kServiceResponseOk, request.sequence}, response, false);
}

const std::string& ServiceServer::name() const noexcept { return impl_->name; }
std::uint64_t ServiceServer::served() const noexcept { return impl_->served.load(std::memory_order_relaxed); }
std::uint64_t ServiceServer::failed() const noexcept { return impl_->failed.load(std::memory_order_relaxed); }

// ---------------------------------------------------------------- client

struct ServiceClient::Impl {
  Context* context = nullptr;
  std::string name;
  std::string request_channel;
  std::string response_channel;
  Publisher requests;
  /// NAME/_response: answers the server could not send to `own`, and its
  /// notices of lost requests (read at each liveness check).
  Subscriber responses;
  /// NAME/_response/<slot>: this client's own responses (absent when it
  /// could not have one: then every answer comes on `responses`).
  std::optional<Subscriber> own;
  std::uint32_t request_index = 0;
  std::int64_t liveness_period_ns = 0;
  /// Read-only maps of both channels, to see the server (made at first use).
  std::optional<introspect::ChannelReader> request_reader;
  std::optional<introspect::ChannelReader> response_reader;
  /// Sequences of this client's requests whose call ended without their
  /// response (timeout, server died): their responses are late.
  std::array<std::uint64_t, 64> unanswered{};
  std::size_t unanswered_count = 0;
  std::uint64_t calls = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t late = 0;
  std::uint64_t lost = 0;
  std::uint64_t resent = 0;
  /// The last kLost came from the server's notice that it never took the
  /// request (not from a response lost on its way back).
  bool request_not_taken = false;

  Impl(Context& ctx, std::string_view service, const ServiceTypes& types, const ServiceOptions& options)
      : context(&ctx),
        name(service),
        request_channel(service_request_channel(service)),
        response_channel(service_response_channel(service)),
        requests(request_channel, types.request, ctx, PublisherOptions{.node = options.node}),
        responses(response_channel, types.response, ctx, response_reader_options(options)),
        request_index(requests.channel_index()) {
    const std::int64_t stall = ctx.config().channel(response_channel).stall_timeout.count();
    liveness_period_ns = std::max<std::int64_t>(stall, 1'000'000);
    open_own(types, options);
  }

  /// Opens NAME/_response/<slot>, `slot` being our request publisher's
  /// entry. Without it (a service name too long for it, a channel of
  /// another type) the client is answered on NAME/_response, as before
  /// clients had their own; it works, and wakes for everyone's answers.
  void open_own(const ServiceTypes& types, const ServiceOptions& options) {
    try {
      request_reader.emplace(context->domain(), request_channel, false, context->config().access());
      for (const introspect::EndpointView& p : request_reader->view().publishers) {
        if (p.id != requests.id()) continue;
        own.emplace(service_client_response_channel(name, p.slot), types.response, *context,
                    response_reader_options(options));
      }
    } catch (const Error&) {
      own.reset();
    }
  }

  /// Where this client's answers come (and its calls wait).
  Subscriber& answers() noexcept { return own ? *own : responses; }

  /// The last server seen and when (a call trusts it for one liveness
  /// period instead of reading both channels' endpoint tables again).
  std::optional<introspect::EndpointView> last_server;
  std::int64_t last_server_ns = 0;

  /// The server now, or nullopt.
  std::optional<introspect::EndpointView> server() {
    const SegmentAccess access = context->config().access();
    if (!request_reader) request_reader.emplace(context->domain(), request_channel, false, access);
    if (!response_reader) response_reader.emplace(context->domain(), response_channel, false, access);
    last_server = introspect::service_server(request_reader->view(), response_reader->view());
    last_server_ns = mono_now_ns();
    return last_server;
  }

  /// server(), or the one seen less than 100 ms ago: a call need not read
  /// both endpoint tables each time. A server that died since is noticed
  /// in the call's own liveness checks (kServerDied).
  std::optional<introspect::EndpointView> recent_server() {
    constexpr std::int64_t kTrustNs = 100'000'000;
    if (last_server && mono_now_ns() - last_server_ns < kTrustNs) return last_server;
    return server();
  }

  /// Waits until the service has a live server, set in `server`: kOk, or
  /// kNoServer at `deadline` (or when its channels go), or kInterrupted
  /// when `stop()` says so.
  CallStatus await_server(std::int64_t deadline, const std::function<bool()>& stop,
                          std::optional<introspect::EndpointView>& server) noexcept {
    try {
      while (!(server = recent_server())) {
        const std::int64_t left = deadline - mono_now_ns();
        if (left <= 0) return CallStatus::kNoServer;
        if (stop()) return CallStatus::kInterrupted;
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left, 10'000'000)));
      }
    } catch (const std::exception&) {  // a channel removed under us: nobody serves it
      return CallStatus::kNoServer;
    }
    return CallStatus::kOk;
  }

  void remember_unanswered(std::uint64_t sequence) noexcept {
    unanswered[unanswered_count % unanswered.size()] = sequence;
    ++unanswered_count;
  }

  [[nodiscard]] bool was_unanswered(std::uint64_t sequence) const noexcept {
    const std::size_t n = std::min(unanswered_count, unanswered.size());
    return std::find(unanswered.begin(), unanswered.begin() + static_cast<std::ptrdiff_t>(n), sequence) !=
           unanswered.begin() + static_cast<std::ptrdiff_t>(n);
  }

  /// What one message on a response channel is to this client.
  enum class Kind { kOther, kMine, kLate, kLost, kNotTaken };

  /// Takes every message there is on `from`; returns true once the call
  /// for `sequence` has ended (its result in `result`): its response
  /// (copied into `out`), or a notice that its request was lost. Late
  /// responses are counted and discarded; others' are passed over.
  bool take_responses(Subscriber& from, std::uint64_t sequence, bool waiting, std::span<std::byte> out,
                      CallResult& result) noexcept {
    // On a channel that carries every client's answers, one to a later
    // request says ours was passed over: the server answers in order.
    const bool shared_only = !own;
    for (;;) {
      Kind kind = Kind::kOther;
      std::uint32_t via = 0;
      std::size_t size = 0;
      const TakeResult r = from.read([&](std::span<const std::byte> payload, const MessageInfo& info) {
        kind = Kind::kOther;
        if (info.input_count == 0 || info.provenance[0].channel_index != request_index) return;
        const Provenance& cite = info.provenance[0];
        if (cite.via == kServiceRequestsLost) {
          if (waiting && info.input_count >= 2 && cite.sequence <= sequence && sequence < info.provenance[1].sequence) {
            kind = Kind::kNotTaken;
          }
        } else if (waiting && cite.sequence == sequence) {
          kind = Kind::kMine;
          via = cite.via;
          size = payload.size();
          if (size <= out.size()) Subscriber::copy_in_place(payload, out.data());
        } else if (was_unanswered(cite.sequence)) {
          kind = Kind::kLate;
        } else if (waiting && shared_only && cite.sequence > sequence) {
          kind = Kind::kLost;
        }
      });
      if (!r.ok()) return false;
      if (kind == Kind::kLate) {
        ++late;
        from.count_discarded();
      } else if (kind == Kind::kLost || kind == Kind::kNotTaken) {
        // The request, or its response, was lost in a ring (overwritten, or
        // a writer stalled beyond stall_timeout); counted where shmtool
        // info shows it.
        request_not_taken = kind == Kind::kNotTaken;
        result.status = CallStatus::kLost;
        return true;
      } else if (kind == Kind::kMine) {
        result.info = r.info;
        result.size = size;
        result.status = via != kServiceResponseOk ? CallStatus::kServerError
                        : size > out.size()       ? CallStatus::kBufferTooSmall
                                                  : CallStatus::kOk;
        return true;
      }
    }
  }

  /// What NAME/_response says about this call (an answer the server could
  /// not send to `own`, a notice that the request was lost), and whether
  /// `own` lost a message since `own_lost`: read at each liveness check.
  bool check_shared(std::uint64_t sequence, std::uint64_t own_lost, std::span<std::byte> out,
                    CallResult& result) noexcept {
    if (!own) return false;  // `responses` is read all the time
    if (take_responses(responses, sequence, true, out, result)) return true;
    if (own->lost() == own_lost) return false;
    // A response stalled beyond stall_timeout: ours, as we have no other in flight.
    request_not_taken = false;
    result.status = CallStatus::kLost;
    return true;
  }

  /// Publishes `request`: its sequence, or nullopt when it could not be
  /// (kDropped).
  std::optional<std::uint64_t> send(std::span<const std::byte> request) noexcept {
    Loan loan = requests.loan(request.size());
    if (!loan) return std::nullopt;
    const std::uint64_t sequence = loan.sequence();
    if (!request.empty()) std::memcpy(loan.data().data(), request.data(), request.size());  // data() may be null
    if (requests.commit(loan) != PublishResult::kOk) return std::nullopt;
    return sequence;
  }

  /// Whether request `sequence`, which the last kLost says the server
  /// never took, was passed over rather than overwritten: this client was
  /// descheduled between its claim and its commit for longer than
  /// stall_timeout, and the server's reader gave up on the slot. An
  /// overwrite needs a claim of `sequence + capacity`, which the write
  /// cursor would show. Such a request is sent again: no handler ran on it.
  /// (iceoryx has no claims: its losses are a full queue's.)
  bool passed_over(std::uint64_t sequence) noexcept {
    if (!request_not_taken || !request_reader) return false;
    try {
      const introspect::ChannelView v = request_reader->view();
      return v.transport == Transport::kShm && v.messages <= sequence + v.capacity;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// Waits for the answer to request `sequence` until `deadline` (asking
  /// `stop` every `stop_check_ns` when it is not 0), checking every
  /// liveness period that `server` still serves.
  CallResult await_response(std::uint64_t sequence, std::uint64_t own_lost, std::int64_t deadline,
                            const introspect::EndpointView& server, std::span<std::byte> response,
                            const std::function<bool()>& stop, std::int64_t stop_check_ns) noexcept {
    CallResult result;
    std::int64_t next_check = mono_now_ns() + liveness_period_ns;
    for (;;) {
      if (take_responses(answers(), sequence, true, response, result)) return result;
      const std::int64_t now = mono_now_ns();
      if (now >= deadline) {
        ++timeouts;
        remember_unanswered(sequence);
        result.status = CallStatus::kTimeout;
        return result;
      }
      if (now >= next_check) {
        next_check = now + liveness_period_ns;
        if (check_shared(sequence, own_lost, response, result)) return result;
        std::optional<introspect::EndpointView> now_serving;
        try {
          now_serving = this->server();
        } catch (const std::exception&) {
        }
        if (!now_serving || now_serving->pid != server.pid || now_serving->id != server.id) {
          // Its last words, if any.
          if (take_responses(answers(), sequence, true, response, result) ||
              check_shared(sequence, own_lost, response, result)) {
            return result;
          }
          remember_unanswered(sequence);
          result.status = CallStatus::kServerDied;
          return result;
        }
      }
      if (stop()) {
        remember_unanswered(sequence);
        result.status = CallStatus::kInterrupted;
        return result;
      }
      const std::int64_t until = std::min(deadline, next_check);
      answers().wait(std::chrono::nanoseconds(stop_check_ns != 0 ? std::min(until - now, stop_check_ns) : until - now));
    }
  }
};

ServiceClient::ServiceClient(std::string_view service, const ServiceTypes& types, Context& context,
                             const ServiceOptions& options) {
  validate_channel_name(service);
  impl_ = std::make_unique<Impl>(context, service, types, options);
}

ServiceClient::~ServiceClient() = default;
ServiceClient::ServiceClient(ServiceClient&&) noexcept = default;
ServiceClient& ServiceClient::operator=(ServiceClient&&) noexcept = default;

bool ServiceClient::server_ready() const { return impl_->server().has_value(); }

bool ServiceClient::wait_for_server(std::chrono::nanoseconds timeout) {
  const std::int64_t deadline = deadline_after(timeout);
  for (;;) {
    if (server_ready()) return true;
    const std::int64_t left = deadline - mono_now_ns();
    if (left <= 0) return false;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left, 10'000'000)));
  }
}

CallResult ServiceClient::call(std::span<const std::byte> request, std::span<std::byte> response,
                               std::chrono::nanoseconds timeout) noexcept {
  return call(request, response, timeout, {});
}

CallResult ServiceClient::call(std::span<const std::byte> request, std::span<std::byte> response,
                               std::chrono::nanoseconds timeout, const std::function<bool()>& interrupted) noexcept {
  constexpr std::int64_t kInterruptCheckNs = 20'000'000;
  const std::function<bool()> stop = [&interrupted] { return interrupted && interrupted(); };
  Impl& c = *impl_;
  CallResult result;
  ++c.calls;
  const std::int64_t deadline = deadline_after(timeout);
  // Late responses of earlier calls: counted now.
  c.take_responses(c.answers(), 0, false, {}, result);
  if (c.own) c.take_responses(c.responses, 0, false, {}, result);
  std::optional<introspect::EndpointView> server;
  result.status = c.await_server(deadline, stop, server);
  if (result.status != CallStatus::kOk) return result;
  if (request.size() > c.requests.size_ceiling()) {
    result.status = CallStatus::kTooLarge;
    return result;
  }
  // A request the server passed over while this client was descheduled
  // mid-publish is sent again (see passed_over); the deadline bounds it.
  for (;;) {
    const std::uint64_t own_lost = c.own ? c.own->lost() : 0;
    const std::optional<std::uint64_t> sequence = c.send(request);
    if (!sequence) {
      result.status = CallStatus::kDropped;
      return result;
    }
    result =
        c.await_response(*sequence, own_lost, deadline, *server, response, stop, interrupted ? kInterruptCheckNs : 0);
    if (result.status != CallStatus::kLost || !c.passed_over(*sequence)) break;
    ++c.resent;
  }
  if (result.status == CallStatus::kLost) ++c.lost;  // counted where shmtool info shows it, too
  return result;
}

const std::string& ServiceClient::name() const noexcept { return impl_->name; }
std::size_t ServiceClient::max_request_size() const noexcept { return impl_->requests.size_ceiling(); }
std::string ServiceClient::request_too_large(std::size_t size) const { return impl_->requests.too_large(size); }
std::size_t ServiceClient::max_response_size() const noexcept { return impl_->answers().size_ceiling(); }
std::uint64_t ServiceClient::calls() const noexcept { return impl_->calls; }
std::uint64_t ServiceClient::timeouts() const noexcept { return impl_->timeouts; }
std::uint64_t ServiceClient::late_responses() const noexcept { return impl_->late; }
std::uint64_t ServiceClient::lost() const noexcept { return impl_->lost; }
std::uint64_t ServiceClient::resent() const noexcept { return impl_->resent; }

// ---------------------------------------------------------------- views

namespace introspect {

std::optional<EndpointView> service_server(const ChannelView& requests, const ChannelView& responses) {
  for (const EndpointView& s : requests.subscribers) {
    if (!s.alive) continue;
    for (const EndpointView& p : responses.publishers) {
      if (p.alive && p.pid == s.pid) return s;
    }
  }
  return std::nullopt;
}

std::vector<std::string> service_names(const DomainView& domain) {
  std::vector<std::string> out;
  for (const std::string& channel : domain.channel_names()) {
    std::string service = service_of_request_channel(channel);
    if (!service.empty()) out.push_back(std::move(service));
  }
  return out;
}

ServiceView service_view(const std::string& domain, std::string_view service, const SegmentAccess& access) {
  ServiceView v;
  v.name = std::string{service};
  v.requests = ChannelReader(domain, service_request_channel(service), false, access).view();
  v.service_type = service_type_of_request_type(v.requests.type_name);
  try {
    v.responses = ChannelReader(domain, service_response_channel(service), false, access).view();
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
  }
  if (v.responses) {
    v.server = service_server(v.requests, *v.responses);
    v.responses_sent = v.responses->messages;
    for (const EndpointView& s : v.responses->subscribers) v.late_responses += s.discarded;
  }
  // The clients' own response channels (NAME/_response/<slot>).
  for (const std::string& channel : DomainView(domain, access).channel_names()) {
    if (service_of_client_response_channel(channel) != service) continue;
    try {
      const ChannelView c = ChannelReader(domain, channel, false, access).view();
      v.responses_sent += c.messages;
      for (const EndpointView& s : c.subscribers) v.late_responses += s.discarded;
      v.client_channels.push_back(channel);
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;  // removed since it was listed
    }
  }
  for (const EndpointView& p : v.requests.publishers) {
    if (p.alive) v.clients.push_back(p);
  }
  return v;
}

}  // namespace introspect

}  // namespace shmbus
