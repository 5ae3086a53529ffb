// The listening socket (WebSocket upgrades, /metrics and /healthz on one
// port) and its connections; the Bridge.
#include "shmbus/bridge/bridge.hpp"
#include "shmbus/names.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <thread>

#include "session.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/service_shell/tls.hpp"

namespace shmbus::bridge {

namespace {

constexpr std::string_view kFoxgloveSubprotocol = "foxglove.websocket.v1";

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

// ------------------------------------------------------------- Connection

namespace {

/// A new TCP connection: its TLS handshake when the bridge serves TLS, one
/// HTTP request, then a WebSocket session or an HTTP answer.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Bridge::Impl& bridge, tcp::socket socket, ssl::context* tls)
      : bridge_(bridge), stream_(tls != nullptr ? Stream(std::move(socket), *tls) : Stream(std::move(socket))) {}
  void start() {
    parser_.body_limit(std::uint64_t{16} * 1024);
    tcp_layer().expires_after(std::chrono::seconds(10));  // the handshake and the request
    stream_.async_handshake(beast::role_type::server, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->refuse_handshake(ec);
        return;
      }
      self->read_request();
    });
  }

 private:
  beast::tcp_stream& tcp_layer() { return stream_.tcp(); }
  void read_request() {
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
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
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, std::size_t) {
      // TLS's close_notify, then the TCP shutdown.
      self->stream_.async_shutdown([self] {});
    });
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
        tls(service_shell::server_tls(hub.settings().tls_cert, hub.settings().tls_key, "bridge")),
        acceptor(io),
        timer(io) {
    hub.start_reader();
    const auto [address, port] = parse_listen(hub.settings().listen);
    const tcp::endpoint endpoint(address, port);
    beast::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw Error(Errc::kResource, fmt::format("cannot listen on {}: {}; choose another address (--listen)",
                                               hub.settings().listen, ec.message()));
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
    hub.stop();
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
        spdlog::warn("reading domain \"{}\": {}", hub.config().domain, e.what());
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
                         hub.config().domain, value);
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
  hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
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
  const auto raw_target = req.target();
  const auto authorization = req[http::field::authorization];
  const bool has_token = service_shell::carries_token({raw_target.data(), raw_target.size()},
                                                      {authorization.data(), authorization.size()}, hub.token());
  if (websocket::is_upgrade(req)) {
    const std::string offered{req[http::field::sec_websocket_protocol]};
    const bool foxglove = offered.find(kFoxgloveSubprotocol) != std::string::npos;
    if (const std::string origin{req[http::field::origin]}; !origin_allowed(origin, hub.settings())) {
      // A page of another site in an operator's browser: refused.
      hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      beast::error_code ignored;
      spdlog::warn("client {}: WebSocket from Origin \"{}\" refused (allow it with --allow-origin)",
                   tcp_layer().socket().remote_endpoint(ignored).address().to_string(), origin);
      answer(http::status::forbidden, "text/plain",
             "shmbus-bridge: this Origin may not connect; the bridge's --allow-origin lists those that may\n");
      return;
    }
    const bool needs_auth = !hub.token().empty() && !has_token;
    if (needs_auth && !foxglove && hub.pending_auth() >= hub.settings().max_pending_auth) {
      hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::service_unavailable, "text/plain",
             fmt::format("shmbus-bridge: {} clients are waiting to authenticate (max_pending_auth); try later\n",
                         hub.pending_auth()));
      return;
    }
    if (hub.sessions() >= hub.settings().max_clients) {
      hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::service_unavailable, "text/plain",
             fmt::format("shmbus-bridge: {} clients already (max_clients); try later\n", hub.sessions()));
      return;
    }
    if (needs_auth && foxglove) {
      hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      answer(http::status::unauthorized, "text/plain",
             "shmbus-bridge: a token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)\n");
      return;
    }
    auto session = make_session(hub, std::move(stream_), foxglove ? Protocol::kFoxglove : Protocol::kRosbridge);
    if (!hub.token().empty() && !needs_auth) session->authenticate();
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
    if (!hub.token().empty() && !has_token) {
      hub.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace shmbus::bridge
