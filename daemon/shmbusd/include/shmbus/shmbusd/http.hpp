#pragma once
// A small HTTP/1.1 server for /metrics, /healthz, the web page and its
// event stream (a WebSocket), and a client for the webhook, both on
// Boost.Beast.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace boost::asio::ssl {
class context;  // NOLINT(readability-identifier-naming): Asio's name
}  // namespace boost::asio::ssl

namespace shmbus::shmbusd {

/// What a handler is asked.
struct HttpRequest {
  std::string target;         ///< path and query, as sent
  std::string authorization;  ///< the Authorization header ("" when none)
};

/// What a handler answers.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /// An event stream: a WebSocket upgrade of the request, whose first
  /// message is `body`, then every event of HttpServer::publish_event
  /// (426 to a request that is not an upgrade).
  bool event_stream = false;
};

/// TLS for a listener: the context made once from a PEM certificate chain
/// and its key (service_shell::server_tls); null: plain HTTP.
using HttpTls = std::shared_ptr<boost::asio::ssl::context>;

/// Serves GET requests on its own thread; answers each with the handler's
/// response and closes, or keeps an event stream open. At most 64
/// connections at once, of which at most 48 event streams (more: 503); a
/// request head over 8 KiB or not complete within 10 s (TLS handshake
/// included) is dropped; a stream's client that answers no ping for 30 s is
/// closed. With TLS it speaks https:// and wss:// only (TLS 1.2 and later).
/// Thread-safety: the handler runs on the server thread; publish_event and
/// streams() may be called from any thread.
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest& request)>;
  /// Listens on "ADDRESS:PORT" (PORT 0: any free port), with TLS when
  /// `tls` is given. Throws Error: kConfig for an address that does not
  /// parse, kResource when it cannot bind (with the address and the
  /// reason).
  HttpServer(const std::string& listen, Handler handler, HttpTls tls = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  /// The port actually bound.
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// Sends `event` (one text message) to every open event stream. A stream
  /// still writing an earlier event skips this one (a slow client gets
  /// fewer updates, never a growing queue; counted in skipped_events()).
  void publish_event(std::string event);
  /// Event streams open now.
  [[nodiscard]] int streams() const noexcept;
  /// Events not sent to a stream because its previous write was pending.
  [[nodiscard]] std::uint64_t skipped_events() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// "host:port" -> (host, port); throws Error(kConfig) naming `what`.
std::pair<std::string, std::uint16_t> parse_host_port(const std::string& text, const std::string& what);

/// The parts of an http:// URL.
struct HttpUrl {
  std::string host;
  std::uint16_t port = 80;
  std::string target = "/";
};
/// Parses "http://host[:port][/path]"; throws Error(kConfig).
HttpUrl parse_http_url(const std::string& url);

/// One synchronous request (used by the webhook worker and by tests).
/// Returns the status code and body; throws Error(kResource) when the
/// server cannot be reached within `timeout_ms`.
std::pair<int, std::string> http_request(const HttpUrl& url, const std::string& method, const std::string& body,
                                         const std::string& content_type, int timeout_ms = 2000);

}  // namespace shmbus::shmbusd
