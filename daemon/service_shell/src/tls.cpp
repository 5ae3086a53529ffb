// TLS contexts: a server's certificate and key (https://, wss://), and a
// client's trusted authorities (shmbus-bridge connect wss://).
#include "shmbus/service_shell/tls.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/ssl/error.hpp>

#include <filesystem>

#include "shmbus/error.hpp"

namespace shmbus::service_shell {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

namespace {

/// OpenSSL's reason for a failure, which asio's error text leaves generic.
std::string reason(const boost::system::error_code& ec) {
  std::string text = ec.message();
  if (ec.category() == asio::error::get_ssl_category()) {
    if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(ec.value())); r != nullptr) text = r;
  }
  return text;
}

void require_file(const std::string& path, std::string_view what, std::string_view option) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(Errc::kConfig,
                fmt::format("{} {} does not exist or is not a file; give a PEM file ({})", what, path, option));
  }
}

void modern_only(ssl::context& ctx) {
  ctx.set_options(ssl::context::default_workarounds);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
}

}  // namespace

std::optional<ssl::context> server_tls(const std::string& cert, const std::string& key, std::string_view section) {
  if (cert.empty() && key.empty()) return std::nullopt;
  if (cert.empty() || key.empty()) {
    throw Error(Errc::kConfig, fmt::format("TLS needs a certificate and its key: give both --tls-cert FILE and "
                                           "--tls-key FILE ({}.tls_cert and {}.tls_key)",
                                           section, section));
  }
  require_file(cert, "TLS certificate", "--tls-cert");
  require_file(key, "TLS key", "--tls-key");
  std::optional<ssl::context> ctx(std::in_place, ssl::context::tls_server);
  modern_only(*ctx);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) {
    throw Error(Errc::kConfig, fmt::format("TLS certificate {} cannot be used: {}; give a PEM certificate chain "
                                           "(--tls-cert)",
                                           cert, reason(ec)));
  }
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  if (ec) {
    throw Error(Errc::kConfig, fmt::format("TLS key {} cannot be used: {}; give the certificate's PEM private key, "
                                           "readable by this user (--tls-key)",
                                           key, reason(ec)));
  }
  return ctx;
}

ssl::context client_tls(const std::string& ca_file) {
  ssl::context ctx(ssl::context::tls_client);
  modern_only(ctx);
  ctx.set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx.set_default_verify_paths(ec);
    if (ec) throw Error(Errc::kConfig, fmt::format("the system's certificate authorities: {}", reason(ec)));
  } else {
    require_file(ca_file, "certificate authority file", "--tls-ca");
    ctx.load_verify_file(ca_file, ec);
    if (ec) {
      throw Error(Errc::kConfig, fmt::format("certificate authority file {} cannot be used: {}; give PEM "
                                             "certificates (--tls-ca)",
                                             ca_file, reason(ec)));
    }
  }
  return ctx;
}

std::string tls_failure(const boost::system::error_code& ec) { return reason(ec); }

}  // namespace shmbus::service_shell
