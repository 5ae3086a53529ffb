// A client's WebSocket, whatever its protocol: reading frames (bounded in
// size and rate), writing through a bounded queue that drops the oldest data
// first; make_session picks the protocol.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "foxglove.hpp"
#include "rosbridge.hpp"
#include "session.hpp"
#include "shmbus/clock.hpp"

namespace shmbus::bridge {

Session::Session(Hub& hub, Stream stream) : hub_(hub), ws_(std::move(stream)) {
  beast::error_code ec;
  const auto remote = tcp_layer().socket().remote_endpoint(ec);
  peer_ = ec ? std::string{"?"} : fmt::format("{}:{}", remote.address().to_string(), remote.port());
  // Each message is one small write: without TCP_NODELAY, Nagle's algorithm
  // holds it back until the previous one is acknowledged (milliseconds).
  tcp_layer().socket().set_option(tcp::no_delay(true), ec);
  tokens_ = hub_.settings().max_ops_per_second;
  tokens_at_ns_ = mono_now_ns();
  authenticated_ = hub_.token().empty();
}

Session::~Session() = default;

std::shared_ptr<Session> make_session(Hub& hub, Stream stream, Protocol protocol) {
  if (protocol == Protocol::kFoxglove) return std::make_shared<FoxgloveSession>(hub, std::move(stream));
  return std::make_shared<RosbridgeSession>(hub, std::move(stream));
}

template <typename Decorator>
void Session::prepare(beast::role_type role, Decorator decorator) {
  hub_.join(*this);
  tcp_layer().expires_never();
  // A peer from which nothing arrives (not even the pong to the ping sent
  // at half the time) for idle_timeout is gone: closed.
  auto timeout = websocket::stream_base::timeout::suggested(role);
  timeout.idle_timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(hub_.settings().idle_timeout);
  timeout.keep_alive_pings = true;
  ws_.set_option(timeout);
  ws_.set_option(websocket::stream_base::decorator(std::move(decorator)));
  // read() bounds a message at max_frame_bytes itself and closes with 1009
  // through a closing handshake. Beast's own bound (1.74) closes the socket
  // with the rest of the message unread: a client still writing it gets a
  // reset instead of the close code.
  ws_.read_message_max(0);
}

void Session::start(const http::request<http::string_body>& request, const std::string& subprotocol) {
  prepare(beast::role_type::server, [subprotocol](websocket::response_type& res) {
    res.set(http::field::server, "shmbus-bridge");
    if (!subprotocol.empty()) res.set(http::field::sec_websocket_protocol, subprotocol);
  });
  auto on_accept = [self = shared_from_this()](beast::error_code ec) {
    if (ec) {
      self->finish();
      return;
    }
    spdlog::info("client {} connected ({}{})", self->peer_, self->protocol_name(),
                 self->ws_.next_layer().tls() ? ", TLS" : "");
    self->opened();
    self->read();
  };
  ws_.async_accept(request, std::move(on_accept));
}

void Session::start_auth_timer() {
  if (authenticated_ || client_mode_ || finished_) return;
  counted_pending_auth_ = true;
  hub_.auth_started();
  auth_timer_.emplace(hub_.io());
  auth_timer_->expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(hub_.settings().auth_timeout));
  auth_timer_->async_wait([weak = weak_from_this()](beast::error_code ec) {
    const auto self = weak.lock();
    if (ec || !self || self->authenticated_ || self->closed_) return;
    self->hub_.counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
    self->tell("no auth within auth_timeout: closing", true);
    self->close(websocket::close_code::policy_error, "not authenticated in time");
  });
}

void Session::authenticated() {
  authenticated_ = true;
  if (counted_pending_auth_) {
    counted_pending_auth_ = false;
    hub_.auth_ended();
  }
  if (auth_timer_) auth_timer_->cancel();
}

void Session::start_client(const std::string& host, const std::string& target, std::function<void()> on_open) {
  client_mode_ = true;
  prepare(beast::role_type::client,
          [](websocket::request_type& req) { req.set(http::field::user_agent, "shmbus-bridge connect"); });
  auto on_handshake = [self = shared_from_this(), on_open = std::move(on_open)](beast::error_code ec) {
    if (ec) {
      spdlog::warn("remote {}: WebSocket handshake failed: {}", self->peer_, ec.message());
      self->finish();
      return;
    }
    on_open();
    self->read();
  };
  ws_.async_handshake(host, target, std::move(on_handshake));
}

void Session::read() {
  // At most one byte over the bound is buffered: enough to know a message
  // is over it.
  const std::size_t room = std::size_t{hub_.settings().max_frame_bytes} + 1 - buffer_.size();
  auto on_read = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) {
      self->finish();
      return;
    }
    if (!self->ws_.is_message_done()) {
      if (self->buffer_.size() <= self->hub_.settings().max_frame_bytes) {
        self->read();
        return;
      }
      self->hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
      self->buffer_.clear();
      self->close(websocket::close_code::too_big,
                  fmt::format("a message over max_frame_bytes ({})", self->hub_.settings().max_frame_bytes));
      return;
    }
    std::string data = beast::buffers_to_string(self->buffer_.data());
    self->buffer_.consume(self->buffer_.size());
    const bool text = self->ws_.got_text();
    if (self->admit_op()) self->on_frame(data, text);
    if (!self->closed_) self->read();
  };
  ws_.async_read_some(buffer_, room, std::move(on_read));
}

bool Session::admit_op() {
  // A token bucket of max_ops_per_second, refilled continuously.
  const double rate = hub_.settings().max_ops_per_second;
  const std::int64_t now = mono_now_ns();
  tokens_ = std::min(rate, tokens_ + rate * static_cast<double>(now - tokens_at_ns_) * 1e-9);
  tokens_at_ns_ = now;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  ++over_rate_;
  hub_.counters().ops_refused.fetch_add(1, std::memory_order_relaxed);
  if (now - last_rate_report_ns_ >= 1'000'000'000) {
    last_rate_report_ns_ = now;
    const std::string text =
        fmt::format("rate limit: {} operations refused so far (this bridge takes at most {} per second per client)",
                    over_rate_, hub_.settings().max_ops_per_second);
    tell(text, false);
  }
  return false;
}

void Session::send_text(std::string text) {
  Frame f;
  f.body = std::make_shared<const std::string>(std::move(text));
  enqueue(std::move(f));
}

void Session::enqueue(Frame frame) {
  if (closed_) return;
  if (frame.subscription == 0) {
    // Replies pile up only when the client sends requests and never reads.
    const auto& b = hub_.settings();
    if (queue_.size() >= 2 * std::size_t{b.send_queue} + 64 || queued_bytes_ > 2 * std::size_t{b.max_client_bytes}) {
      close(websocket::close_code::policy_error, "client does not read its replies");
      return;
    }
  } else if (!make_room(1, frame.bytes())) {
    return;
  }
  push(std::move(frame));
}

void Session::push(Frame frame) {
  if (frame.subscription != 0 && frame.group == 0) data_queued(frame.subscription);
  queued_bytes_ += frame.bytes();
  queue_.push_back(std::move(frame));
  if (dropped_ != dropped_reported_) report_drops();
  write_next();
}

bool Session::make_room(std::size_t frames, std::size_t bytes) {
  const auto& b = hub_.settings();
  const auto over = [&] { return queue_.size() + frames > b.send_queue || queued_bytes_ + bytes > b.max_client_bytes; };
  const auto is_data = [](const Frame& f) { return f.subscription != 0; };
  while (over()) {
    // The oldest data message gives way (never the one being written,
    // never a reply).
    if (!drop_data(std::find_if(first_droppable(), queue_.end(), is_data))) break;
  }
  const bool alone = std::none_of(first_droppable(), queue_.end(), is_data);
  if (!over() || alone) return true;
  ++dropped_;
  hub_.counters().messages_dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Session::drop_oldest_of(std::uint64_t key) {
  return drop_data(
      std::find_if(first_droppable(), queue_.end(), [&](const Frame& f) { return f.subscription == key; }));
}

bool Session::drop_data(const std::deque<Frame>::iterator& it) {
  if (it == queue_.end() || (writing_ && it == queue_.begin())) return false;
  const std::uint64_t key = it->subscription;
  const std::uint64_t group = it->group;
  const auto remove = [&](const std::deque<Frame>::iterator& at) {
    queued_bytes_ -= at->bytes();
    return queue_.erase(at);
  };
  if (group == 0) {
    remove(it);
  } else {
    // Every fragment of the message still queued (those already written
    // leave the client with a part it discards).
    for (auto f = first_droppable(); f != queue_.end();) {
      f = f->group == group ? remove(f) : f + 1;
    }
  }
  data_left(key);
  ++dropped_;
  hub_.counters().messages_dropped.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Session::report_drops() {
  const std::int64_t now = mono_now_ns();
  if (now - last_drop_report_ns_ < 1'000'000'000) return;
  last_drop_report_ns_ = now;
  const std::uint64_t fresh = dropped_ - dropped_reported_;
  dropped_reported_ = dropped_;
  const std::string text = fmt::format(
      "dropped {} messages for this client ({} in all): its send queue ({} messages) was full; it reads slower "
      "than its topics publish (subscribe with throttle_rate or fewer topics)",
      fresh, dropped_, hub_.settings().send_queue);
  tell(text, false);
}

void Session::write_next() {
  if (writing_ || queue_.empty() || closed_) return;
  writing_ = true;
  const Frame& f = queue_.front();
  auto on_written = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->writing_ = false;
    if (ec) {
      self->finish();
      return;
    }
    Frame& done = self->queue_.front();
    // A fragmented message counts once, with its last fragment.
    const bool last_of_message = done.group == 0 || self->queue_.size() == 1 || self->queue_[1].group != done.group;
    if (done.subscription != 0 && last_of_message) {
      self->hub_.counters().messages_sent.fetch_add(1, std::memory_order_relaxed);
      self->data_left(done.subscription);
    }
    self->queued_bytes_ -= done.bytes();
    self->queue_.pop_front();
    self->write_next();
  };
  ws_.binary(f.binary);
  const std::array<asio::const_buffer, 2> buffers{asio::buffer(f.head.data(), f.head_len), asio::buffer(*f.body)};
  ws_.async_write(buffers, std::move(on_written));
}

void Session::close(websocket::close_code code, const std::string& reason) {
  if (closed_) return;
  spdlog::warn("client {}: closing ({})", peer_, reason);
  closed_ = true;
  ws_.async_close(websocket::close_reason(code, reason), [self = shared_from_this()](beast::error_code) {});
  finish();
}

void Session::finish() {
  if (finished_) return;
  if (!closed_) spdlog::info("client {} disconnected", peer_);
  finished_ = true;
  closed_ = true;
  hub_.leave(*this);
  release();
  created_.clear();
  if (!writing_) {
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (counted_pending_auth_) {
    counted_pending_auth_ = false;
    hub_.auth_ended();
  }
  if (auth_timer_) auth_timer_->cancel();
  if (on_close_) std::exchange(on_close_, nullptr)();
}

}  // namespace shmbus::bridge
