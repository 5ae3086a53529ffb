#pragma once
// A small HTTP/1.1 server for /metrics and /healthz, and a client for the
// webhook, both on Boost.Beast.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace shmbus::daemon {

/// What a handler answers.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Serves GET requests on its own thread; answers each with the handler's
/// response and closes. Thread-safety: the handler runs on the server thread.
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& target)>;
  /// Listens on "ADDRESS:PORT" (PORT 0: any free port). Throws Error:
  /// kConfig for an address that does not parse, kResource when it cannot
  /// bind (with the address and the reason).
  HttpServer(const std::string& listen, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  /// The port actually bound.
  [[nodiscard]] std::uint16_t port() const noexcept;

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

}  // namespace shmbus::daemon
