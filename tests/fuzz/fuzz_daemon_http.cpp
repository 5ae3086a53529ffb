// What reaches shmbusd's HTTP listener (and the bridge's): a request head
// parsed with the listener's bounds (Beast's parser, 8 KiB of head, 1 KiB
// of body), then the token check of its target and Authorization header
// (service_shell::carries_token, percent-decoding of the query). Anything
// is refused or answered; nothing crashes, hangs or reads out of bounds.
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shmbus/service_shell.hpp"

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
    (void)shmbus::service_shell::carries_token(raw, raw, "s3cr%t");
    return 0;
  }
  const auto& request = parser.get();
  const auto t = request.target();
  const auto a = request[http::field::authorization];
  const std::string_view target{t.data(), t.size()};
  const std::string_view authorization{a.data(), a.size()};
  (void)shmbus::service_shell::carries_token(target, authorization, "s3cr%t");
  (void)shmbus::service_shell::carries_token(target, authorization, "");
  return 0;
}
