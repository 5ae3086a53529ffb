#include "shmbus/shmbusd/http.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <array>
#include <atomic>
#include <cctype>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/service_shell/stream.hpp"
#include "shmbus/service_shell/tls.hpp"

namespace shmbus::shmbusd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

std::pair<std::string, std::uint16_t> parse_host_port(const std::string& text, const std::string& what) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    throw Error(Errc::kConfig, fmt::format("{} \"{}\" is not ADDRESS:PORT (e.g. 127.0.0.1:9464)", what, text));
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) bad();
  const std::string port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5) bad();
  const unsigned long port = std::stoul(port_text);
  if (port > 65535) bad();
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, static_cast<std::uint16_t>(port)};
}

HttpUrl parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    throw Error(Errc::kConfig, fmt::format("webhook \"{}\" must be an http:// URL (e.g. "
                                           "http://127.0.0.1:9093/api/v2/alerts)",
                                           url));
  }
  HttpUrl u;
  std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    u.target = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  if (rest.find(':') != std::string::npos) {
    std::tie(u.host, u.port) = parse_host_port(rest, "webhook address");
  } else {
    u.host = rest;
  }
  if (u.host.empty()) throw Error(Errc::kConfig, fmt::format("webhook \"{}\" has no host", url));
  return u;
}

namespace {

/// Connections served at once, event streams included; more are closed on
/// accept (a scraper needs one, a person's browser a few).
constexpr int kMaxConnections = 64;
/// Event streams (open pages) at once: the rest of the connections stay
/// for scrapes and the API. More are answered 503.
constexpr int kMaxStreams = 48;
/// A request head must arrive, and each response be written, within this.
constexpr auto kIoTimeout = std::chrono::seconds(10);

/// An open page's event stream, over TCP or TLS.
class EventStream {
 public:
  EventStream() = default;
  virtual ~EventStream() = default;
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;
  /// Written unless the previous event still is (then skipped, counted).
  virtual void send_event(const std::shared_ptr<const std::string>& event) = 0;
};

/// What the sessions share with the server. Declared before the
/// io_context, so it outlives the handlers the context destroys.
struct Shared {
  HttpServer::Handler handler;
  std::atomic<int> open{0};
  std::atomic<int> streams{0};
  std::atomic<std::uint64_t> skipped{0};
  std::int64_t last_tls_warning_ns = 0;                     ///< the server thread's
  std::vector<std::shared_ptr<EventStream>> event_streams;  ///< the server thread's
};

using service_shell::Stream;

/// One connection, plain (http://, ws://) or TLS (https://, wss://): a
/// request answered and closed, or an event stream.
class Session : public EventStream, public std::enable_shared_from_this<Session> {
 public:
  Session(Shared& shared, Stream stream) : stream_(std::move(stream)), shared_(shared) {
    shared_.open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Session() override {
    shared_.open.fetch_sub(1, std::memory_order_relaxed);
    if (streaming_) shared_.streams.fetch_sub(1, std::memory_order_relaxed);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    // The handshake and the request head, within the timeout together.
    stream_.tcp().expires_after(kIoTimeout);
    stream_.async_handshake(beast::role_type::server, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->handshake_failed(ec);
      } else {
        self->read_request();
      }
    });
  }

  void send_event(const std::shared_ptr<const std::string>& event) override {
    if (closed_ || !ws_) return;
    if (writing_) {
      shared_.skipped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    writing_ = true;
    ws_->async_write(asio::buffer(*event), [self = shared_from_this(), event](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      if (ec) self->close();
    });
  }

 private:
  void read_request() {
    // A GET has no body; the head is bounded by Beast (8 KiB).
    parser_.body_limit(1024);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  /// A client that does not speak TLS to a TLS listener (http:// to an
  /// https:// address, most often): said at most once a second.
  void handshake_failed(const beast::error_code& ec) {
    const std::int64_t now = mono_now_ns();
    if (now - shared_.last_tls_warning_ns < 1'000'000'000) return;
    shared_.last_tls_warning_ns = now;
    beast::error_code ignored;
    const auto remote = stream_.tcp().socket().remote_endpoint(ignored);
    spdlog::warn("TLS handshake from {} failed: {} (a client speaking http:// to this https:// listener?)",
                 remote.address().to_string(), service_shell::tls_failure(ec));
  }

  void on_read(beast::error_code ec) {
    if (ec) return;
    const http::request<http::string_body>& request = parser_.get();
    HttpResponse r;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      r = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
      r = shared_.handler(HttpRequest{std::string{request.target()}, std::string{request[http::field::authorization]}});
    }
    if (r.event_stream && r.status == 200) {
      if (!websocket::is_upgrade(request)) {
        r = {426, "text/plain; charset=utf-8",
             "this is a WebSocket of the page's updates; a script polls the same JSON at /api/channels\n"};
      } else if (shared_.streams.load(std::memory_order_relaxed) >= kMaxStreams) {
        r = {503, "text/plain; charset=utf-8", "too many pages open at once; close one\n"};
      } else {
        upgrade(std::move(r.body));
        return;
      }
    }
    response_.version(request.version());
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::server, "shmbusd");
    response_.set(http::field::content_type, r.content_type);
    response_.set(http::field::cache_control, "no-store");
    response_.keep_alive(false);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    // After the response: TLS says close_notify first (within the same
    // timeout), then the socket ends.
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, std::size_t) {
      self->stream_.async_shutdown([self] {});
    });
  }

  /// The request asked for the event stream: a WebSocket whose first
  /// message is `first`, then every published event.
  void upgrade(std::string first) {
    // Counted from now (the handshake too), so upgrades in flight at once
    // cannot pass the bound together; the destructor gives the place back.
    streaming_ = true;
    shared_.streams.fetch_add(1, std::memory_order_relaxed);
    stream_.tcp().expires_never();
    ws_.emplace(std::move(stream_));
    websocket::stream_base::timeout t{};
    t.handshake_timeout = kIoTimeout;
    t.idle_timeout = std::chrono::seconds(30);  // pinged after 15 s of silence; a page answers
    t.keep_alive_pings = true;
    ws_->set_option(t);
    ws_->set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "shmbusd"); }));
    ws_->read_message_max(4096);
    ws_->text(true);
    ws_->async_accept(parser_.get(), [self = shared_from_this(), first = std::move(first)](beast::error_code ec) {
      if (ec) return;
      self->shared_.event_streams.push_back(self);
      self->send_event(std::make_shared<const std::string>(first));
      self->watch();
    });
  }

  /// Reads and discards what the page sends (nothing, normally); a close
  /// or an error ends the stream.
  void watch() {
    buffer_.clear();
    ws_->async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        self->close();
      } else {
        self->watch();
      }
    });
  }

  /// Called from completion handlers only (they hold a reference, so
  /// leaving the list does not end this object under our feet).
  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    auto& socket = ws_ ? ws_->next_layer().tcp().socket() : stream_.tcp().socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    std::erase(shared_.event_streams, shared_from_this());
  }

  Stream stream_;
  std::optional<websocket::stream<Stream>> ws_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
  bool streaming_ = false;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace

struct HttpServer::Impl {
  Shared shared;
  HttpTls tls;  ///< serving https:// and wss:// only
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed
      if (shared.open.load(std::memory_order_relaxed) < kMaxConnections) {
        std::make_shared<Session>(shared, tls ? Stream(std::move(socket), *tls) : Stream(std::move(socket)))->start();
      }  // else: the socket closes here; the client retries
      accept();
    });
  }
};

HttpServer::HttpServer(const std::string& listen, Handler handler, HttpTls tls) : impl_(std::make_unique<Impl>()) {
  impl_->tls = std::move(tls);
  const auto [host, port] = parse_host_port(listen, "metrics_listen");
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    throw Error(
        Errc::kConfig,
        fmt::format("metrics_listen \"{}\": \"{}\" is not an IP address (use e.g. 127.0.0.1 or ::1)", listen, host));
  }
  impl_->shared.handler = std::move(handler);
  const tcp::endpoint endpoint(address, port);
  auto& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw Error(Errc::kResource, fmt::format("cannot listen on {} for /metrics: {}; choose another metrics_listen "
                                             "(or \"off\")",
                                             listen, ec.message()));
  }
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

HttpServer::~HttpServer() {
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->shared.event_streams.clear();
}

std::uint16_t HttpServer::port() const noexcept {
  // Asio may throw when the address it reads does not fit an endpoint
  // (never for a TCP socket): 0 then, as for a closed one.
  try {
    beast::error_code ec;
    return impl_->acceptor.local_endpoint(ec).port();
  } catch (const std::exception&) {
    return 0;
  }
}

void HttpServer::publish_event(std::string event) {
  auto shared_event = std::make_shared<const std::string>(std::move(event));
  asio::post(impl_->io, [this, shared_event] {
    // A copy: a stream may leave the list while we go through it.
    const std::vector<std::shared_ptr<EventStream>> list = impl_->shared.event_streams;
    for (const auto& s : list) s->send_event(shared_event);
  });
}

int HttpServer::streams() const noexcept { return impl_->shared.streams.load(std::memory_order_relaxed); }

std::uint64_t HttpServer::skipped_events() const noexcept {
  return impl_->shared.skipped.load(std::memory_order_relaxed);
}

std::pair<int, std::string> http_request(const HttpUrl& url, const std::string& method, const std::string& body,
                                         const std::string& content_type, int timeout_ms) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec) throw Error(Errc::kResource, fmt::format("cannot resolve {}: {}", url.host, ec.message()));
  stream.expires_after(std::chrono::milliseconds(timeout_ms));
  stream.connect(endpoints, ec);
  if (ec) throw Error(Errc::kResource, fmt::format("cannot connect to {}:{}: {}", url.host, url.port, ec.message()));
  http::request<http::string_body> req{http::string_to_verb(method), url.target, 11};
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "shmbusd");
  if (!body.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (!ec) http::read(stream, buffer, res, ec);
  if (ec)
    throw Error(Errc::kResource, fmt::format("{} {}:{}{}: {}", method, url.host, url.port, url.target, ec.message()));
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return {static_cast<int>(res.result_int()), res.body()};
}

}  // namespace shmbus::shmbusd
