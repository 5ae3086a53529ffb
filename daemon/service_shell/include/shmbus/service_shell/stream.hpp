#pragma once
// A connection's bytes, plain TCP or TLS over it, chosen at run time: one
// type under Beast's HTTP and WebSocket operations whichever a listener or
// a link serves, so each of those is compiled once. Reads and writes pass
// to the TCP or the TLS stream with their completion handler type-erased
// (one heap block per operation), so the TLS operations too are compiled
// once, in this library.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace shmbus::service_shell {

namespace detail {

/// A completion handler of any type taking `Args...`, with its associated
/// executor kept (asio runs it there). Its memory is freed before it runs.
template <class... Args>
class ErasedHandler {
 public:
  using executor_type = boost::asio::any_io_executor;

  template <class Handler>
  ErasedHandler(Handler&& handler, const executor_type& fallback)
      : impl_(new Impl<std::decay_t<Handler>>(std::forward<Handler>(handler), fallback)) {}

  [[nodiscard]] executor_type get_executor() const noexcept { return impl_->executor; }

  void operator()(Args... args) { impl_.release()->run(args...); }

 private:
  struct Base {
    explicit Base(executor_type e) : executor(std::move(e)) {}
    Base(const Base&) = delete;
    Base& operator=(const Base&) = delete;
    virtual ~Base() = default;
    /// Moves the handler out, frees this, then calls the handler.
    virtual void run(Args... args) = 0;
    executor_type executor;
  };
  template <class Handler>
  struct Impl final : Base {
    Impl(Handler h, const executor_type& fallback)
        : Base(boost::asio::get_associated_executor(h, fallback)), handler(std::move(h)) {}
    void run(Args... args) override {
      Handler h(std::move(handler));
      delete this;
      h(args...);
    }
    Handler handler;
  };
  std::unique_ptr<Base> impl_;
};

using IoHandler = ErasedHandler<boost::system::error_code, std::size_t>;
using DoneHandler = ErasedHandler<boost::system::error_code>;

/// The first non-empty buffers of a sequence, at most 16: a read_some or a
/// write_some may move fewer bytes than it was given, so the rest waits for
/// the next call.
template <class Buffer>
class BufferList {
 public:
  template <class Sequence>
  explicit BufferList(const Sequence& sequence) {
    for (auto it = boost::asio::buffer_sequence_begin(sequence), end = boost::asio::buffer_sequence_end(sequence);
         it != end && size_ < items_.size(); ++it) {
      const Buffer b(*it);
      if (b.size() != 0) items_[size_++] = b;
    }
  }
  [[nodiscard]] const Buffer* begin() const noexcept { return items_.data(); }
  [[nodiscard]] const Buffer* end() const noexcept { return items_.data() + size_; }

 private:
  std::array<Buffer, 16> items_{};
  std::size_t size_ = 0;
};

}  // namespace detail

/// Plain TCP or TLS over it, as the connection was made. An AsyncStream for
/// Beast's http:: and websocket:: operations, with WebSocket's teardown and
/// close customisation points.
class Stream {
 public:
  using executor_type = boost::asio::any_io_executor;

  /// Plain TCP.
  explicit Stream(boost::asio::ip::tcp::socket socket);
  /// TLS over `socket` with `tls` (a server's or a client's context); its
  /// handshake is still to make (async_handshake).
  Stream(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  [[nodiscard]] executor_type get_executor() noexcept;
  /// The TCP layer: its socket, and the expiry that bounds every operation.
  [[nodiscard]] boost::beast::tcp_stream& tcp() noexcept;
  [[nodiscard]] bool tls() const noexcept;

  /// A TLS client's check of the server: its certificate must name `host`,
  /// which the handshake also names (SNI) unless it is an address.
  void verify_host(const std::string& host);
  /// TLS's handshake in `role`; plain TCP: `done` with no error at once
  /// (posted).
  void async_handshake(boost::beast::role_type role, std::function<void(boost::system::error_code)> done);
  /// The end of an answered connection: TLS's close_notify (within the TCP
  /// expiry), then TCP's shutdown of sending; `done` after both.
  void async_shutdown(std::function<void()> done);

  template <class MutableBuffers, class Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return boost::asio::async_initiate<Handler, void(boost::system::error_code, std::size_t)>(
        [this](auto&& h, const MutableBuffers& b) {
          read_some(detail::BufferList<boost::asio::mutable_buffer>(b),
                    detail::IoHandler(std::forward<decltype(h)>(h), get_executor()));
        },
        handler, buffers);
  }

  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return boost::asio::async_initiate<Handler, void(boost::system::error_code, std::size_t)>(
        [this](auto&& h, const ConstBuffers& b) {
          write_some(detail::BufferList<boost::asio::const_buffer>(b),
                     detail::IoHandler(std::forward<decltype(h)>(h), get_executor()));
        },
        handler, buffers);
  }

  /// WebSocket's end of the connection (Beast's customisation points):
  /// TLS's close_notify, or TCP's shutdown and close.
  friend void teardown(boost::beast::role_type role, Stream& stream, boost::system::error_code& ec);
  template <class Handler>
  friend void async_teardown(boost::beast::role_type role, Stream& stream, Handler&& handler) {
    stream.teardown_async(role, detail::DoneHandler(std::forward<Handler>(handler), stream.get_executor()));
  }
  /// What a WebSocket timing out does to its connection: closes the socket.
  friend void beast_close_socket(Stream& stream);

 private:
  void read_some(const detail::BufferList<boost::asio::mutable_buffer>& buffers, detail::IoHandler handler);
  void write_some(const detail::BufferList<boost::asio::const_buffer>& buffers, detail::IoHandler handler);
  void teardown_async(boost::beast::role_type role, detail::DoneHandler handler);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::service_shell
