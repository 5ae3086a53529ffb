// The listening socket (WebSocket upgrades, /metrics and /healthz on one
// port), the hub the sessions share, and the program.
#include "shmbus/bridge/bridge.hpp"
#include "shmbus/names.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <thread>

#include "server.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/cli/config_file.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/service_shell/tls.hpp"

namespace shmbus::bridge {

namespace {

constexpr std::string_view kFoxgloveSubprotocol = "foxglove.websocket.v1";

Config with_node(Config c) {
  if (c.node.empty()) c.node = "shmbus-bridge";
  return c;
}

std::pair<asio::ip::address, std::uint16_t> parse_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    throw Error(Errc::kConfig, fmt::format("listen address \"{}\" is not ADDRESS:PORT (e.g. 127.0.0.1:9090)", text));
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) bad();
  const std::string port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
    bad();
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    throw Error(Errc::kConfig,
                fmt::format("listen address \"{}\": \"{}\" is not an IP address (e.g. 127.0.0.1)", text, host));
  }
  return {address, static_cast<std::uint16_t>(std::stoul(port))};
}

/// The token a client shows in its upgrade request: `Authorization: Bearer
/// TOKEN` or `?token=TOKEN`.
std::string presented_token(const http::request<http::string_body>& req) {
  const std::string auth{req[http::field::authorization]};
  if (auth.starts_with("Bearer ")) return auth.substr(7);
  const std::string target{req.target()};
  const std::string_view t = target;
  const auto q = t.find("token=");
  if (q != std::string_view::npos && q > 0 && (t[q - 1] == '?' || t[q - 1] == '&')) {
    const std::string_view rest = t.substr(q + 6);
    return std::string{rest.substr(0, rest.find('&'))};
  }
  return {};
}

/// Whether a browser page at `origin` may open a WebSocket: no Origin (not
/// a browser) always; else one of `allowed` (globs), or with none given a
/// loopback host (the operator's own machine).
bool origin_allowed(const std::string& origin, const BridgeSettings& settings) {
  if (origin.empty()) return true;
  if (std::any_of(settings.allow_origins.begin(), settings.allow_origins.end(), [&](const std::string& glob) {
        return glob == origin || ::fnmatch(glob.c_str(), origin.c_str(), 0) == 0;
      })) {
    return true;
  }
  if (!settings.loopback_origins) return false;
  // scheme://host[:port]: the host, brackets and all.
  const auto scheme = origin.find("://");
  if (scheme == std::string::npos) return false;
  std::string host = origin.substr(scheme + 3);
  if (host.starts_with('[')) {
    host = host.substr(1, host.find(']') - 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (host == "localhost" || host.ends_with(".localhost")) return true;
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

}  // namespace

// -------------------------------------------------------------------- Hub

Hub::Hub(const Config& c, BridgeSettings bridge_settings, asio::io_context& context_io)
    : config(with_node(c)),
      settings(std::move(bridge_settings)),
      io(context_io),
      context(config),
      token(service_shell::read_token(settings.token_file)),
      catalog(config.domain, config.access()),
      types(settings.msg_path),
      services(std::make_unique<ServiceCaller>(context)) {}

void Hub::start_reader() {
  reader =
      std::make_unique<BusReader>(context, [this](std::shared_ptr<const OutMessage> message, std::vector<Sink> sinks) {
        // To the network thread, where the sessions live. What waits there
        // is bounded in bytes: a network thread that falls behind (a client
        // that asks for much work per message) drops, counted, instead of
        // queueing without end.
        std::size_t bytes = 0;
        for (const auto& e : message->encoded) bytes += e ? e->size() : 0;
        if (in_flight_bytes.load(std::memory_order_relaxed) + bytes > kMaxInFlightBytes) {
          counters.messages_dropped.fetch_add(sinks.size(), std::memory_order_relaxed);
          return;
        }
        // Relaxed, here and in the handler's fetch_sub: a byte count that
        // bounds, synchronizing nothing (the message itself reaches the
        // network thread through asio::post, which orders it).
        in_flight_bytes.fetch_add(bytes, std::memory_order_relaxed);
        asio::post(io, [this, bytes, message = std::move(message), sinks = std::move(sinks)] {
          in_flight_bytes.fetch_sub(bytes, std::memory_order_relaxed);
          for (const Sink& s : sinks) {
            if (auto session = s.session.lock()) session->deliver(*message, s.key);
          }
        });
      });
}

void Hub::shutdown_sessions() {
  const std::vector<Session*> all(sessions.begin(), sessions.end());
  for (Session* s : all) s->shutdown();
}

BridgeStats Hub::stats() const noexcept {
  BridgeStats s;
  s.connections_refused = counters.connections_refused.load(std::memory_order_relaxed);
  s.messages_sent = counters.messages_sent.load(std::memory_order_relaxed);
  s.messages_dropped = counters.messages_dropped.load(std::memory_order_relaxed);
  s.messages_published = counters.messages_published.load(std::memory_order_relaxed);
  s.ops_refused = counters.ops_refused.load(std::memory_order_relaxed);
  s.bus_messages = reader ? reader->taken() : 0;
  s.bus_lost = reader ? reader->lost() : 0;
  s.service_calls = counters.service_calls.load(std::memory_order_relaxed);
  s.service_failures = counters.service_failures.load(std::memory_order_relaxed);
  return s;
}

bool Hub::allowed(std::string_view name) const {
  const std::string n{name};
  const auto matches = [&](const std::string& glob) { return glob == n || ::fnmatch(glob.c_str(), n.c_str(), 0) == 0; };
  const auto& b = settings;
  if (!b.allow.empty() && std::none_of(b.allow.begin(), b.allow.end(), matches)) return false;
  return std::none_of(b.deny.begin(), b.deny.end(), matches);
}

void Hub::refresh() {
  std::vector<const ChannelEntry*> added;
  std::vector<ChannelEntry> removed;
  if (!catalog.refresh(added, removed)) return;
  std::vector<std::shared_ptr<Session>> all;
  all.reserve(sessions.size());
  for (Session* s : sessions) all.push_back(s->shared_from_this());
  for (const auto& s : all) s->channels_changed(added, removed);
}

void Hub::services_tick() {
  std::vector<std::shared_ptr<Session>> all;
  all.reserve(sessions.size());
  for (Session* s : sessions) all.push_back(s->shared_from_this());
  for (const auto& s : all) s->services_tick();
}

void Hub::graph_tick() {
  std::vector<std::shared_ptr<Session>> watchers;
  for (Session* s : sessions) {
    if (s->wants_graph()) watchers.push_back(s->shared_from_this());
  }
  if (watchers.empty()) return;
  const BusGraph graph = bus_graph(catalog, [this](std::string_view name) { return allowed(name); });
  for (const auto& s : watchers) s->graph_now(graph);
}

std::optional<std::string> Hub::call_service(const std::string& service, const schema::Json& args,
                                             std::chrono::nanoseconds timeout, ServiceCaller::Done done) {
  counters.service_calls.fetch_add(1, std::memory_order_relaxed);
  const auto fail = [&](std::string why) {
    counters.service_failures.fetch_add(1, std::memory_order_relaxed);
    return std::optional<std::string>(std::move(why));
  };
  if (!allowed(service)) return fail(fmt::format("{} is not allowed by this bridge's allow/deny lists", service));
  refresh();
  const ChannelEntry* requests = catalog.find(service_request_channel(service));
  const ChannelEntry* responses = catalog.find(service_response_channel(service));
  if (requests == nullptr || responses == nullptr || !requests->schema || !responses->schema) {
    return fail(fmt::format("no service {} in domain \"{}\" (/rosapi/services lists them)", service, catalog.domain()));
  }
  std::vector<std::byte> request;
  try {
    request = requests->schema->encode(requests->schema->with_defaults(args));
  } catch (const schema::CodecError& e) {
    return fail(fmt::format("{}: the request does not fit {}: {}", service, requests->type.name, e.what()));
  }
  const ServiceTypes service_types{service_type_of_request_type(requests->type.name), requests->type, responses->type};
  auto counted = [&counters = counters, done = std::move(done)](ServiceCaller::Result r) {
    if (r.status != CallStatus::kOk) counters.service_failures.fetch_add(1, std::memory_order_relaxed);
    done(std::move(r));
  };
  if (!services->call(service, service_types, std::move(request), responses->schema, timeout,
                      settings.json_int64 == JsonInt64::kString, std::move(counted))) {
    return fail(fmt::format("{}: {} calls are already waiting for this service; try again later", service,
                            ServiceCaller::kMaxQueued));
  }
  return std::nullopt;
}

ChannelEntry Hub::plan_channel(const std::string& topic, const std::string& type, std::size_t client_made) const {
  if (type.empty()) {
    throw Error(Errc::kInvalidArgument, fmt::format("cannot create {}: name its type (package/Name)", topic));
  }
  if (client_made >= settings.max_created_channels) {
    throw Error(Errc::kResource,
                fmt::format("cannot create {}: this client made {} channels already, the most this bridge allows "
                            "(max_created_channels); unadvertise one first",
                            topic, client_made));
  }
  // All clients together make at most a quarter of the domain's registry,
  // so the robot's own processes always find room.
  if (const std::size_t most = config.registry_capacity / 4; created.size() >= most) {
    throw Error(Errc::kResource,
                fmt::format("cannot create {}: the bridge made {} channels for its clients, a quarter of the "
                            "domain's registry ({} entries); clients must unadvertise some first",
                            topic, created.size(), config.registry_capacity));
  }
  const ChannelSettings channel = config.channel(topic);
  const std::uint64_t bytes = std::uint64_t{channel.capacity} * channel.max_message_size;
  if (bytes > settings.max_created_channel_bytes) {
    throw Error(
        Errc::kResource,
        fmt::format("cannot create {}: its configuration ({} slots of {} bytes) reserves {} bytes, over "
                    "the {} a client may create (max_created_channel_bytes)",
                    topic, channel.capacity, channel.max_message_size, bytes, settings.max_created_channel_bytes));
  }
  // The schema a process of the domain already uses for the type wins (the
  // channel then agrees with it); else the type catalog's.
  std::shared_ptr<const schema::Schema> schema;
  if (const auto [owner, def] = catalog.find_type(type); def != nullptr) {
    schema = std::make_shared<const schema::Schema>(
        schema::Schema::from_canonical(schema::MessageSet::canonical_text(*def)));
  } else {
    try {
      schema = std::make_shared<const schema::Schema>(types.find(short_type_name(type)));
    } catch (const Error& e) {
      throw Error(Errc::kNotFound, fmt::format("cannot create {}: {}", topic, e.what()));
    }
  }
  ChannelEntry entry;
  entry.name = topic;
  entry.type = TypeInfo{schema->root().name, schema->hash(), schema->text()};
  entry.schema = std::move(schema);
  return entry;
}

Outlet& Hub::acquire_outlet(const ChannelEntry& entry) {
  auto it = outlets.find(entry.name);
  if (it == outlets.end()) {
    it = outlets.emplace(entry.name, Outlet{Publisher(entry.name, entry.type, context), entry.schema, 0}).first;
  }
  ++it->second.users;
  return it->second;
}

void Hub::release_outlet(const std::string& channel) {
  const auto it = outlets.find(channel);
  if (it == outlets.end() || --it->second.users != 0) return;
  outlets.erase(it);
  // A channel the bridge made for a client goes with its last user of the
  // bridge, unless some process (or the bridge's own reader) uses it.
  if (const auto made = created.find(channel); made != created.end()) {
    try {
      if (introspect::remove_unused_channel(config.domain, channel, config.access())) {
        spdlog::info("removed {}, which a client created and no one uses now", channel);
      }
    } catch (const Error& e) {
      spdlog::warn("could not remove {}, which a client created: {}", channel, e.what());
    }
    created.erase(made);
  }
}

// ------------------------------------------------------------- Connection

namespace {

/// A new TCP connection: its TLS handshake when the bridge serves TLS, one
/// HTTP request, then a WebSocket session or an HTTP answer.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Bridge::Impl& bridge, tcp::socket socket, ssl::context* tls)
      : bridge_(bridge),
        stream_(tls != nullptr ? Stream(std::in_place_type<TlsStream>, PlainStream(std::move(socket)), *tls)
                               : Stream(std::in_place_type<PlainStream>, std::move(socket))) {}
  void start() {
    parser_.body_limit(std::uint64_t{16} * 1024);
    tcp_layer().expires_after(std::chrono::seconds(10));  // the handshake and the request
    if (auto* tls = std::get_if<TlsStream>(&stream_)) {
      tls->async_handshake(ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
        if (ec) {
          self->refuse_handshake(ec);
          return;
        }
        self->read_request();
      });
    } else {
      read_request();
    }
  }

 private:
  beast::tcp_stream& tcp_layer() {
    return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); }, stream_);
  }
  void read_request() {
    std::visit(
        [&](auto& s) {
          http::async_read(s, buffer_, parser_,
                           [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
        },
        stream_);
  }
  void refuse_handshake(beast::error_code ec);
  void on_request(beast::error_code ec);
  void answer(http::status status, const std::string& content_type, std::string body) {
    response_.result(status);
    response_.version(11);
    response_.set(http::field::server, "shmbus-bridge");
    response_.set(http::field::content_type, content_type);
    response_.keep_alive(false);
    response_.body() = std::move(body);
    response_.prepare_payload();
    std::visit(
        [&](auto& s) {
          http::async_write(s, response_, [self = shared_from_this()](beast::error_code, std::size_t) { self->end(); });
        },
        stream_);
  }
  /// After the answer: TLS's close_notify, then the TCP shutdown.
  void end() {
    if (auto* tls = std::get_if<TlsStream>(&stream_)) {
      tls->async_shutdown([self = shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        self->tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
      });
      return;
    }
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  Bridge::Impl& bridge_;
  Stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

struct Bridge::Impl {
  Impl(const Config& config, BridgeSettings settings)
      : hub(config, std::move(settings), io),
        tls(service_shell::server_tls(hub.settings.tls_cert, hub.settings.tls_key, "bridge")),
        acceptor(io),
        timer(io) {
    hub.start_reader();
    const auto [address, port] = parse_listen(hub.settings.listen);
    const tcp::endpoint endpoint(address, port);
    beast::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw Error(Errc::kResource, fmt::format("cannot listen on {}: {}; choose another address (--listen)",
                                               hub.settings.listen, ec.message()));
    }
    accept();
    tick();
    thread = std::thread([this] { io.run(); });
  }

  ~Impl() {
    asio::post(io, [this] {
      beast::error_code ignored;
      acceptor.close(ignored);
      timer.cancel();
    });
    io.stop();
    thread.join();
    // The sessions outlive the hub inside the io_context's handlers: what
    // they hold of the hub's context (publishers, served services) goes now.
    hub.shutdown_sessions();
    hub.reader.reset();    // no more dispatches
    hub.services.reset();  // its workers finish their calls
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed
      std::make_shared<Connection>(*this, std::move(socket), tls ? &*tls : nullptr)->start();
      accept();
    });
  }

  /// Channels come and go: Foxglove clients hear of it within 200 ms.
  std::uint64_t ticks = 0;
  void tick() {
    timer.expires_after(std::chrono::milliseconds(200));
    timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      try {
        hub.refresh();
        // Who publishes what changes without the registry changing: the
        // graph is read again once a second for the clients that follow it.
        if (++ticks % 5 == 0) {
          hub.graph_tick();
          hub.services_tick();
        }
      } catch (const std::exception& e) {
        spdlog::warn("reading domain \"{}\": {}", hub.config.domain, e.what());
      }
      tick();
    });
  }

  [[nodiscard]] BridgeStats stats() const noexcept {
    BridgeStats s = hub.stats();
    s.clients = clients.load(std::memory_order_relaxed);
    return s;
  }

  [[nodiscard]] std::string metrics() const {
    const BridgeStats s = stats();
    std::string out;
    const auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t value) {
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{domain=\"{}\"}} {}\n", name, help, name, type, name,
                         hub.config.domain, value);
    };
    metric("shmbus_bridge_clients", "gauge", "Connected WebSocket clients.", s.clients);
    metric("shmbus_bridge_connections_refused_total", "counter",
           "Connections refused (max_clients, token, TLS handshake).", s.connections_refused);
    metric("shmbus_bridge_messages_sent_total", "counter", "Bus messages written to clients.", s.messages_sent);
    metric("shmbus_bridge_messages_dropped_total", "counter",
           "Bus messages dropped from full client send queues (slow clients).", s.messages_dropped);
    metric("shmbus_bridge_messages_published_total", "counter", "Client messages published into the bus.",
           s.messages_published);
    metric("shmbus_bridge_ops_refused_total", "counter", "Client operations refused (malformed, unknown, over rate).",
           s.ops_refused);
    metric("shmbus_bridge_bus_messages_total", "counter", "Messages taken from subscribed channels.", s.bus_messages);
    metric("shmbus_bridge_bus_lost_total", "counter", "Messages the bridge's subscribers lost in their rings.",
           s.bus_lost);
    metric("shmbus_bridge_service_calls_total", "counter", "call_service operations for shmbus services.",
           s.service_calls);
    metric("shmbus_bridge_service_failures_total", "counter", "Service calls not answered with a response.",
           s.service_failures);
    return out;
  }

  asio::io_context io{1};
  Hub hub;
  std::optional<ssl::context> tls;  ///< serving wss:// and https:// only
  tcp::acceptor acceptor;
  asio::steady_timer timer;
  std::atomic<std::uint64_t> clients{0};
  std::int64_t last_tls_warning_ns = 0;  ///< network thread
  std::thread thread;
};

namespace {

void Connection::refuse_handshake(beast::error_code ec) {
  // A plain ws:// or http:// client at a TLS port, or a client that does
  // not trust the certificate: counted, and said at most once a second.
  Hub& hub = bridge_.hub;
  hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t now = mono_now_ns();
  if (now - bridge_.last_tls_warning_ns >= 1'000'000'000) {
    bridge_.last_tls_warning_ns = now;
    beast::error_code ignored;
    const auto remote = tcp_layer().socket().remote_endpoint(ignored);
    spdlog::warn("client {}: TLS handshake failed: {} (this bridge serves wss:// and https:// only)",
                 remote.address().to_string(), service_shell::tls_failure(ec));
  }
}

void Connection::on_request(beast::error_code ec) {
  if (ec) return;
  http::request<http::string_body> req = parser_.release();
  Hub& hub = bridge_.hub;
  const std::string token = presented_token(req);
  if (websocket::is_upgrade(req)) {
    const std::string offered{req[http::field::sec_websocket_protocol]};
    const bool foxglove = offered.find(kFoxgloveSubprotocol) != std::string::npos;
    if (const std::string origin{req[http::field::origin]}; !origin_allowed(origin, hub.settings)) {
      // A page of another site in an operator's browser: refused.
      hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
      beast::error_code ignored;
      spdlog::warn("client {}: WebSocket from Origin \"{}\" refused (allow it with --allow-origin)",
                   tcp_layer().socket().remote_endpoint(ignored).address().to_string(), origin);
      answer(http::status::forbidden, "text/plain",
             "shmbus-bridge: this Origin may not connect; the bridge's --allow-origin lists those that may\n");
      return;
    }
    const bool needs_auth = !hub.token.empty() && !service_shell::same_token(token, hub.token);
    if (needs_auth && !foxglove && hub.pending_auth >= hub.settings.max_pending_auth) {
      hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::service_unavailable, "text/plain",
             fmt::format("shmbus-bridge: {} clients are waiting to authenticate (max_pending_auth); try later\n",
                         hub.pending_auth));
      return;
    }
    if (hub.sessions.size() >= hub.settings.max_clients) {
      hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::service_unavailable, "text/plain",
             fmt::format("shmbus-bridge: {} clients already (max_clients); try later\n", hub.sessions.size()));
      return;
    }
    if (needs_auth && foxglove) {
      hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::unauthorized, "text/plain",
             "shmbus-bridge: a token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)\n");
      return;
    }
    auto session = make_session(hub, std::move(stream_), foxglove ? Protocol::kFoxglove : Protocol::kRosbridge);
    if (!hub.token.empty() && !needs_auth) session->authenticate();
    session->on_close([&clients = bridge_.clients] { clients.fetch_sub(1, std::memory_order_relaxed); });
    bridge_.clients.fetch_add(1, std::memory_order_relaxed);
    session->start(req, foxglove ? std::string{kFoxgloveSubprotocol} : std::string{});
    session->start_auth_timer();
    return;
  }
  const std::string target{req.target()};
  if (req.method() != http::verb::get) {
    answer(http::status::method_not_allowed, "text/plain", "only GET (or a WebSocket upgrade)\n");
  } else if (target == "/metrics") {
    // With a token, the counters are the token's too (Prometheus sends it
    // as authorization.credentials); /healthz stays open for probes.
    if (!hub.token.empty() && !service_shell::same_token(token, hub.token)) {
      hub.counters.connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::unauthorized, "text/plain",
             "shmbus-bridge: /metrics needs the token (Authorization: Bearer TOKEN)\n");
      return;
    }
    answer(http::status::ok, "text/plain; version=0.0.4; charset=utf-8", bridge_.metrics());
  } else if (target == "/healthz") {
    answer(http::status::ok, "text/plain", "ok\n");
  } else {
    answer(http::status::not_found, "text/plain",
           "shmbus-bridge: WebSocket (rosbridge v2, foxglove.websocket.v1), /metrics, /healthz\n");
  }
}

}  // namespace

// ----------------------------------------------------------------- Bridge

Bridge::Bridge(const Config& config, BridgeSettings settings)
    : impl_(std::make_unique<Impl>(config, std::move(settings))) {}
Bridge::~Bridge() = default;

std::uint16_t Bridge::port() const noexcept {
  // Asio may throw when the address it reads does not fit an endpoint
  // (never for a TCP socket): 0 then, as for a closed one.
  try {
    beast::error_code ec;
    return impl_->acceptor.local_endpoint(ec).port();
  } catch (const std::exception&) {
    return 0;
  }
}

BridgeStats Bridge::stats() const noexcept { return impl_->stats(); }
std::string Bridge::metrics() const { return impl_->metrics(); }

// ---------------------------------------------------------------- program

namespace {

/// What the command line may set of the [bridge] table.
struct BridgeArgs {
  cli::ConfigSource source;
  std::string domain;
  std::optional<std::string> listen, token_file, tls_cert, tls_key, foxglove_encoding, json_int64;
  std::vector<std::string> allow, deny, allow_origins, msg_path;
  std::optional<std::uint32_t> max_clients, max_frame_bytes, send_queue, max_ops, max_client_bytes;
  bool no_loopback_origins = false;
};

void add_bridge_options(CLI::App& app, BridgeArgs& a) {
  app.add_option("-c,--config", a.source.path, "configuration file (default: SHMBUS_CONFIG); its [bridge] table");
  app.add_option("--domain", a.domain, "domain to bridge (overrides the file and SHMBUS_DOMAIN)");
  app.add_option("--listen", a.listen, "ADDRESS:PORT (default 127.0.0.1:9090; port 0: any free port)");
  app.add_option("--allow", a.allow, "channel/service globs clients may use (default: all)");
  app.add_option("--deny", a.deny, "channel/service globs refused even when allowed");
  app.add_option("--token-file", a.token_file, "file holding the token clients must present");
  app.add_option("--tls-cert", a.tls_cert, "PEM certificate chain: serve wss:// and https:// only (with --tls-key)");
  app.add_option("--tls-key", a.tls_key, "PEM private key of --tls-cert");
  app.add_option("--max-clients", a.max_clients, "clients at once (default 64)");
  app.add_option("--max-frame-bytes", a.max_frame_bytes, "largest incoming WebSocket message (default 1 MiB)");
  app.add_option("--send-queue", a.send_queue, "messages queued per client before the oldest is dropped (1024)");
  app.add_option("--max-ops-per-second", a.max_ops, "operations per second per client (default 2000)");
  app.add_option("--max-client-bytes", a.max_client_bytes,
                 "bytes queued per client before its oldest messages are dropped (default 4 MiB)");
  app.add_option("--allow-origin", a.allow_origins,
                 "browser Origins (globs) that may connect besides loopback hosts' (no Origin: always)");
  app.add_flag("--no-loopback-origins", a.no_loopback_origins,
               "refuse pages from loopback hosts unless --allow-origin names them");
  app.add_option("--msg-path", a.msg_path,
                 "root of <package>/<Name>.msg files for the types clients create channels of (repeatable; "
                 "after the shipped types, before SHMBUS_MSG_PATH)");
  app.add_option("--foxglove-encoding", a.foxglove_encoding,
                 "how Foxglove clients get typed channels: cdr (default), json, or both (each channel twice)")
      ->check(CLI::IsMember({"cdr", "json", "both"}));
  app.add_option("--json-int64", a.json_int64,
                 "how rosbridge JSON carries 64-bit integers: number (default, as rosbridge) or string (exact)")
      ->check(CLI::IsMember({"number", "string"}));
}

CLI::App* add_connect_command(CLI::App& app, UplinkOptions& u) {
  CLI::App* connect = app.add_subcommand(
      "connect", "be the client of a remote rosbridge v2 server: export local channels to it, import its topics");
  connect->add_option("url", u.url, "ws://HOST:PORT or wss://HOST[:PORT] of the remote server")->required();
  connect->add_option("--tls-ca", u.tls_ca, "wss://: PEM certificate authorities to trust (default: the system's)");
  connect->add_option("--export", u.exports, "local channels to publish there (comma-separated)")->delimiter(',');
  connect->add_option("--import", u.imports, "remote topics to publish here (comma-separated)")->delimiter(',');
  return connect;
}

/// The command line over the file's [bridge] table.
void apply_bridge_args(const BridgeArgs& a, BridgeSettings& b) {
  if (a.listen) b.listen = *a.listen;
  if (!a.allow.empty()) b.allow = a.allow;
  if (!a.deny.empty()) b.deny = a.deny;
  if (a.token_file) b.token_file = *a.token_file;
  if (a.tls_cert) b.tls_cert = *a.tls_cert;
  if (a.tls_key) b.tls_key = *a.tls_key;
  if (a.max_clients) b.max_clients = std::max<std::uint32_t>(1, *a.max_clients);
  if (a.max_frame_bytes) b.max_frame_bytes = std::max<std::uint32_t>(1024, *a.max_frame_bytes);
  if (a.send_queue) b.send_queue = std::max<std::uint32_t>(1, *a.send_queue);
  if (a.max_ops) b.max_ops_per_second = std::max<std::uint32_t>(1, *a.max_ops);
  if (a.max_client_bytes) b.max_client_bytes = std::max<std::uint32_t>(64 * 1024, *a.max_client_bytes);
  if (!a.allow_origins.empty()) b.allow_origins = a.allow_origins;
  if (a.no_loopback_origins) b.loopback_origins = false;
  if (!a.msg_path.empty()) b.msg_path = a.msg_path;
  if (a.foxglove_encoding) b.foxglove_encoding = *foxglove_encoding_of(*a.foxglove_encoding);
  if (a.json_int64) b.json_int64 = *json_int64_of(*a.json_int64);
}

int run_uplink(const Config& config, const UplinkOptions& options) {
  Uplink uplink(config, options);
  service_shell::run_until_stopped([&] {
    const UplinkStats s = uplink.stats();
    return fmt::format(
        "{} to {}; {} messages sent, {} published here, {} dropped, {} lost while down, "
        "{} topics refused",
        s.connected ? "connected" : "not connected", options.url, s.bridge.messages_sent, s.bridge.messages_published,
        s.bridge.messages_dropped, s.link_lost, s.refused_topics);
  });
  const UplinkStats s = uplink.stats();
  spdlog::info(
      "stopping: {} links made, {} messages sent, {} published here, {} dropped, {} lost while the link "
      "was down, {} topics refused",
      s.connects, s.bridge.messages_sent, s.bridge.messages_published, s.bridge.messages_dropped, s.link_lost,
      s.refused_topics);
  return 0;
}

int run_server(const Config& config, const BridgeSettings& b) {
  Bridge bridge(config, b);
  spdlog::info("listening on {}://{}:{} for domain \"{}\" (rosbridge v2; foxglove.websocket.v1; /metrics)",
               b.tls_cert.empty() ? "ws" : "wss", b.listen.substr(0, b.listen.rfind(':')), bridge.port(),
               config.domain);
  service_shell::run_until_stopped([&] {
    const BridgeStats st = bridge.stats();
    return fmt::format("{} clients, {} messages sent, {} dropped", st.clients, st.messages_sent, st.messages_dropped);
  });
  spdlog::info("stopping");
  return 0;
}

}  // namespace

int bridge_main(int argc, char** argv) {
  CLI::App app{"shmbus WebSocket bridge: rosbridge v2 and Foxglove clients on the channels and services of a domain",
               "shmbus-bridge"};
  BridgeArgs args;
  add_bridge_options(app, args);
  UplinkOptions uplink_options;
  CLI::App* connect = add_connect_command(app, uplink_options);
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  if (!args.domain.empty()) args.source.domain = args.domain;
  if (connect->parsed() && uplink_options.exports.empty() && uplink_options.imports.empty()) {
    std::fprintf(stderr, "shmbus-bridge connect: nothing to carry; give --export /a,/b and/or --import /c,/d\n");
    return 2;
  }
  return cli::guarded("shmbus-bridge", [&] {
    const cli::ConfigFile file = cli::ConfigFile::load(args.source);
    const Config& config = file.config();
    BridgeSettings settings = read_bridge_settings(file);
    apply_bridge_args(args, settings);
    spdlog::set_default_logger(service_shell::make_logger("shmbus-bridge", service_shell::stderr_is_journal()));
    cli::install_stop_handlers();
    return connect->parsed() ? run_uplink(config, uplink_options) : run_server(config, settings);
  });
}

}  // namespace shmbus::bridge
