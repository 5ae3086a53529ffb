#pragma once
// One WebSocket client (Session), which each protocol derives from
// (rosbridge.hpp, foxglove.hpp), and the frames it sends.

#include <boost/asio/steady_timer.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hub.hpp"

namespace shmbus::bridge {

/// One frame waiting to be written to a client.
struct Frame {
  std::shared_ptr<const std::string> body;
  std::array<char, 16> head{};  ///< a Foxglove message-data header before `body`
  std::uint8_t head_len = 0;
  bool binary = false;
  std::uint64_t subscription = 0;  ///< 0: a reply or status (never dropped)
  std::uint64_t group = 0;         ///< the fragments of one message share it (dropped together); 0: none
  [[nodiscard]] std::size_t bytes() const noexcept { return head_len + (body ? body->size() : 0); }
};

enum class Protocol : std::uint8_t { kRosbridge, kFoxglove };

/// A protocol's operations by name (a JSON frame's "op"): the one place a
/// new op is added, which the dispatch and the refusal of an unknown op
/// (names()) both read.
template <typename S>
class OpTable {
 public:
  using Handler = void (S::*)(const schema::Json& op);
  OpTable(std::initializer_list<std::pair<std::string_view, Handler>> ops) : ops_(ops) {}
  /// The handler of `name`, or nullptr.
  [[nodiscard]] Handler find(std::string_view name) const noexcept {
    for (const auto& [n, h] : ops_) {
      if (n == name) return h;
    }
    return nullptr;
  }
  /// "a, b, c": every op, in the table's order.
  [[nodiscard]] std::string names() const {
    std::string out;
    for (const auto& [n, h] : ops_) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
  }

 private:
  std::vector<std::pair<std::string_view, Handler>> ops_;
};

/// One WebSocket client, whatever its protocol: the connection, the bounded
/// send queue that drops the oldest data first, the operation rate limit,
/// authentication and the release of what the client held. A protocol
/// (RosbridgeSession, FoxgloveSession) derives from it and handles the
/// frames read, the bus messages delivered and the channels that change.
/// Lives on the network thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  /// A client on `stream` (connected; its TLS handshake, if any, done).
  Session(Hub& hub, Stream stream);
  virtual ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Completes the WebSocket handshake of `request` and starts reading.
  void start(const http::request<http::string_body>& request, const std::string& subprotocol);
  /// A bus message for subscription `key`, in the form that subscription's
  /// sink asked the reader for (network thread).
  virtual void deliver(const OutMessage& message, std::uint64_t key) = 0;
  /// Channels appeared or went away (the protocols that advertise them).
  virtual void channels_changed(const std::vector<const ChannelEntry*>& added,
                                const std::vector<ChannelEntry>& removed) {
    (void)added;
    (void)removed;
  }
  /// Whether the client follows the bus graph (graph_now is then called
  /// about once a second with the current one).
  [[nodiscard]] virtual bool wants_graph() const noexcept { return false; }
  virtual void graph_now(const BusGraph& graph) { (void)graph; }
  /// About once a second: servers come and go without the channels
  /// changing (the protocols that advertise services).
  virtual void services_tick() {}
  /// Client mode (shmbus-bridge connect): the handshake as the client of a
  /// remote server at `host` (the Host header) and `target`; `on_open` runs
  /// once it is done. The remote side is then this session's peer.
  void start_client(const std::string& host, const std::string& target, std::function<void()> on_open);
  /// Handles one frame as if it had been read from the peer (the rate limit
  /// first): the read loop's work without a socket, for the fuzz target.
  void receive(const std::string& data, bool text) {
    if (admit_op()) on_frame(data, text);
  }
  /// Takes the client side (as start_client does), so receive() goes the
  /// way a remote server's frames go.
  void as_uplink() noexcept { client_mode_ = true; }
  /// Releases what the session holds in the hub and the bus (its
  /// subscriptions, publishers, served services) now: for shutdown, once
  /// the network thread has stopped, before the hub goes.
  void shutdown() { finish(); }
  /// The client showed the token in its upgrade request.
  void authenticate() noexcept { authenticated_ = true; }
  /// With a token and no auth yet: counted in the hub's pending_auth, and
  /// closed unless auth arrives within auth_timeout. After start().
  void start_auth_timer();
  /// Runs once when the session ends.
  void on_close(std::function<void()> f) { on_close_ = std::move(f); }
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }

 protected:
  /// The protocol's name in the log ("rosbridge v2").
  [[nodiscard]] virtual const char* protocol_name() const noexcept = 0;
  /// The handshake is done: what the protocol says first.
  virtual void opened() {}
  /// One frame from the peer, admitted by the rate limit.
  virtual void on_frame(const std::string& data, bool text) = 0;
  /// Tells the client something went wrong for it (a warning, or an error
  /// with `error`), in the protocol's status message.
  virtual void tell(const std::string& message, bool error) = 0;
  /// A data frame of subscription `key` joined the queue / left it (written
  /// or dropped): for protocols with a queue bound per subscription.
  virtual void data_queued(std::uint64_t key) { (void)key; }
  virtual void data_left(std::uint64_t key) { (void)key; }
  /// Releases the protocol's subscriptions, publishers and services (once).
  virtual void release() = 0;

  void send_text(std::string text);
  void enqueue(Frame frame);
  /// Room for one data message of `frames` frames and `bytes` bytes: the
  /// oldest queued data gives way (counted) while the client's queue is
  /// over send_queue messages or max_client_bytes. False (the message is
  /// dropped, counted) when nothing is left to give way and it still does
  /// not fit; a message alone in the queue always fits.
  bool make_room(std::size_t frames, std::size_t bytes);
  /// Drops the oldest queued data message of subscription `key` (all its
  /// fragments) unless it is being written; false when there was none.
  bool drop_oldest_of(std::uint64_t key);
  void push(Frame frame);
  /// The auth op showed the token.
  void authenticated();
  void close(websocket::close_code code, const std::string& reason);
  /// A number for the next subscription (unique in this session), and for
  /// the next fragmented message's frames.
  std::uint64_t next_key() noexcept { return next_key_++; }
  std::uint64_t next_group() noexcept { return next_group_++; }

  Hub& hub_;
  std::string peer_;
  std::set<std::string> created_;  ///< channels this client made (advertised, no process had them)
  bool closed_ = false;            ///< no more reads or writes
  bool authenticated_ = false;
  bool client_mode_ = false;

 private:
  [[nodiscard]] beast::tcp_stream& tcp_layer() { return ws_.next_layer().tcp(); }
  /// The options both roles share, then the handshake's decorator.
  template <typename Decorator>
  void prepare(beast::role_type role, Decorator decorator);
  void read();
  /// Drops the queued data message at `it` (all its fragments) unless it is
  /// being written; false when there was none to drop.
  bool drop_data(const std::deque<Frame>::iterator& it);
  /// The queued frames that may still be dropped: all but the one being
  /// written.
  [[nodiscard]] std::deque<Frame>::iterator first_droppable() { return queue_.begin() + (writing_ ? 1 : 0); }
  void write_next();
  void finish();
  bool admit_op();
  void report_drops();

  std::function<void()> on_close_;
  websocket::stream<Stream> ws_;
  beast::flat_buffer buffer_;
  std::deque<Frame> queue_;
  std::size_t queued_bytes_ = 0;
  std::uint64_t next_group_ = 1;
  std::optional<asio::steady_timer> auth_timer_;
  bool counted_pending_auth_ = false;
  bool writing_ = false;
  bool finished_ = false;  ///< its subscriptions and publishers released
  std::uint64_t next_key_ = 1;
  std::uint64_t dropped_ = 0;
  std::uint64_t dropped_reported_ = 0;
  std::int64_t last_drop_report_ns_ = 0;
  double tokens_ = 0;
  std::int64_t tokens_at_ns_ = 0;
  std::uint64_t over_rate_ = 0;
  std::int64_t last_rate_report_ns_ = 0;
};

/// A client speaking `protocol` on `stream`.
std::shared_ptr<Session> make_session(Hub& hub, Stream stream, Protocol protocol);

}  // namespace shmbus::bridge
