// What reaches shmbusd's HTTP listener: a request head parsed with the
// listener's bounds (Beast's parser, 8 KiB of head, 1 KiB of body), then
// the token check of its target and Authorization header (percent-decoding
// of the query). Anything is refused or answered; nothing crashes, hangs
// or reads out of bounds.
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "shmbus/daemon/http.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace http = boost::beast::http;
  http::request_parser<http::string_body> parser;
  parser.header_limit(8192);
  parser.body_limit(1024);
  boost::beast::error_code ec;
  (void)parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_header_done()) {
    // A raw target as well: the check must hold for any bytes.
    const std::string raw(reinterpret_cast<const char*>(data), size);
    (void)shmbus::daemon::carries_token({raw, raw}, "s3cr%t");
    return 0;
  }
  const auto& request = parser.get();
  const shmbus::daemon::HttpRequest r{std::string{request.target()}, std::string{request[http::field::authorization]}};
  (void)shmbus::daemon::carries_token(r, "s3cr%t");
  (void)shmbus::daemon::carries_token(r, "");
  return 0;
}
