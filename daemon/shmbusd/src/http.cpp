#include "shmbus/daemon/http.hpp"

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <thread>

#include "shmbus/error.hpp"

namespace shmbus::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
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

/// Connections served at once; more are closed on accept (a scraper needs
/// one, a person's browser a few).
constexpr int kMaxConnections = 64;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServer::Handler& handler, std::atomic<int>& open)
      : stream_(std::move(socket)), handler_(handler), open_(open) {
    open_.fetch_add(1, std::memory_order_relaxed);
  }
  ~Session() { open_.fetch_sub(1, std::memory_order_relaxed); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    // A GET has no body; the head is bounded by Beast (8 KiB), the whole
    // exchange by the timeout.
    parser_.body_limit(1024);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec) return;
    const http::request<http::string_body>& request = parser_.get();
    HttpResponse r;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      r = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
      r = handler_(std::string{request.target()});
    }
    response_.version(request.version());
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::server, "shmbusd");
    response_.set(http::field::content_type, r.content_type);
    response_.keep_alive(false);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  const HttpServer::Handler& handler_;
  std::atomic<int>& open_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

struct HttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  Handler handler;
  std::atomic<int> open{0};
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed
      if (open.load(std::memory_order_relaxed) < kMaxConnections) {
        std::make_shared<Session>(std::move(socket), handler, open)->start();
      }  // else: the socket closes here; the client retries
      accept();
    });
  }
};

HttpServer::HttpServer(const std::string& listen, Handler handler) : impl_(std::make_unique<Impl>()) {
  const auto [host, port] = parse_host_port(listen, "metrics_listen");
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    throw Error(
        Errc::kConfig,
        fmt::format("metrics_listen \"{}\": \"{}\" is not an IP address (use e.g. 127.0.0.1 or ::1)", listen, host));
  }
  impl_->handler = std::move(handler);
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
}

std::uint16_t HttpServer::port() const noexcept { return impl_->acceptor.local_endpoint().port(); }

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

}  // namespace shmbus::daemon
