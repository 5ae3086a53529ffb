#pragma once
// TLS contexts of the long-running programs' listeners and links, on
// Boost.Asio's OpenSSL layer: a server's certificate and key (https://,
// wss://) and a client's trusted authorities.

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace shmbus::service_shell {

/// A server's TLS context from a PEM certificate chain and its key; none
/// when both paths are empty (plain TCP). TLS 1.2 and later only. Throws
/// Error(kConfig) naming the file and the fix: one of the two missing
/// (`section`.tls_cert and `section`.tls_key name the configuration keys),
/// a file that does not exist, or one OpenSSL refuses.
std::optional<boost::asio::ssl::context> server_tls(const std::string& cert, const std::string& key,
                                                    std::string_view section);

/// A client's TLS context that verifies servers against `ca_file` (PEM), or
/// the system's authorities when it is empty. Throws Error(kConfig).
boost::asio::ssl::context client_tls(const std::string& ca_file);

/// A TLS failure as OpenSSL words it (e.g. "certificate verify failed").
std::string tls_failure(const boost::system::error_code& ec);

}  // namespace shmbus::service_shell
