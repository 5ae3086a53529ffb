// Plain TCP or TLS over it behind one stream type: the TCP and the TLS
// operations, each compiled once for every caller.
#include "shmbus/service_shell/stream.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <variant>

namespace shmbus::service_shell {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Stream::Impl {
  explicit Impl(asio::ip::tcp::socket socket) : layers(std::in_place_type<beast::tcp_stream>, std::move(socket)) {}
  Impl(asio::ip::tcp::socket socket, ssl::context& tls)
      : layers(std::in_place_type<TlsStream>, beast::tcp_stream(std::move(socket)), tls) {}
  beast::tcp_stream& tcp() noexcept {
    if (auto* s = std::get_if<TlsStream>(&layers)) return s->next_layer();
    return *std::get_if<beast::tcp_stream>(&layers);
  }
  std::variant<beast::tcp_stream, TlsStream> layers;
};

Stream::Stream(asio::ip::tcp::socket socket) : impl_(std::make_unique<Impl>(std::move(socket))) {}
Stream::Stream(asio::ip::tcp::socket socket, ssl::context& tls)
    : impl_(std::make_unique<Impl>(std::move(socket), tls)) {}
Stream::Stream(Stream&& other) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept = default;
Stream::~Stream() = default;

Stream::executor_type Stream::get_executor() noexcept { return tcp().get_executor(); }

beast::tcp_stream& Stream::tcp() noexcept { return impl_->tcp(); }

bool Stream::tls() const noexcept { return std::holds_alternative<TlsStream>(impl_->layers); }

void Stream::verify_host(const std::string& host) {
  auto& s = std::get<TlsStream>(impl_->layers);
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  if (ec) SSL_set_tlsext_host_name(s.native_handle(), host.c_str());  // SNI: names only
  s.set_verify_callback(ssl::host_name_verification(host));
}

void Stream::async_handshake(beast::role_type role, std::function<void(boost::system::error_code)> done) {
  if (auto* s = std::get_if<TlsStream>(&impl_->layers)) {
    s->async_handshake(role == beast::role_type::server ? ssl::stream_base::server : ssl::stream_base::client,
                       std::move(done));
    return;
  }
  asio::post(get_executor(), [done = std::move(done)] { done({}); });
}

void Stream::async_shutdown(std::function<void()> done) {
  // The layers stay where they are when a Stream is moved: `impl` outlives
  // a move of this object while the close_notify is under way.
  auto tcp_end = [impl = impl_.get(), done = std::move(done)](boost::system::error_code) {
    boost::system::error_code ignored;
    impl->tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    done();
  };
  if (auto* s = std::get_if<TlsStream>(&impl_->layers)) {
    s->async_shutdown(std::move(tcp_end));
    return;
  }
  tcp_end({});
}

void Stream::read_some(const detail::BufferList<asio::mutable_buffer>& buffers, detail::IoHandler handler) {
  std::visit([&](auto& s) { s.async_read_some(buffers, std::move(handler)); }, impl_->layers);
}

void Stream::write_some(const detail::BufferList<asio::const_buffer>& buffers, detail::IoHandler handler) {
  std::visit([&](auto& s) { s.async_write_some(buffers, std::move(handler)); }, impl_->layers);
}

void Stream::teardown_async(beast::role_type role, detail::DoneHandler handler) {
  std::visit(
      [&](auto& s) {
        using beast::websocket::async_teardown;
        async_teardown(role, s, std::move(handler));
      },
      impl_->layers);
}

void teardown(beast::role_type role, Stream& stream, boost::system::error_code& ec) {
  std::visit(
      [&](auto& s) {
        using beast::websocket::teardown;
        teardown(role, s, ec);
      },
      stream.impl_->layers);
}

void beast_close_socket(Stream& stream) {
  boost::system::error_code ignored;
  stream.tcp().socket().close(ignored);
}

}  // namespace shmbus::service_shell
