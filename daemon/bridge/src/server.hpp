#pragma once
// The bridge's state on its network thread (Hub) and one WebSocket client
// (Session), which each protocol derives from (rosbridge.hpp, foxglove.hpp).

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bus.hpp"
#include "services.hpp"
#include "shmbus/bridge/bridge.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "shmbus/service_shell/stream.hpp"

namespace shmbus::bridge {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

/// A connection's bytes: plain TCP, or TLS over it (wss://, https://).
using Stream = service_shell::Stream;

/// Counters shared by every thread (relaxed: totals for /metrics).
struct Counters {
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> messages_dropped{0};
  std::atomic<std::uint64_t> messages_published{0};
  std::atomic<std::uint64_t> ops_refused{0};
  std::atomic<std::uint64_t> service_calls{0};
  std::atomic<std::uint64_t> service_failures{0};
};

/// A channel the bridge publishes into for its clients (shared by them).
struct Outlet {
  Publisher publisher;
  std::shared_ptr<const schema::Schema> schema;
  std::size_t users = 0;
};

/// Everything the sessions share. Network thread only, except `counters`,
/// `reader` and `services` (thread-safe).
struct Hub {
  Hub(const Config& config, BridgeSettings settings, asio::io_context& io);

  /// Shuts every session down (Session::shutdown), the network thread
  /// stopped.
  void shutdown_sessions();
  /// Starts the reader thread, which hands each message to the sessions on
  /// the network thread.
  void start_reader();
  /// The counters (clients: those in `sessions`, read off the network
  /// thread by the caller's own count).
  [[nodiscard]] BridgeStats stats() const noexcept;
  /// Whether clients may use a channel or service (allow, then deny globs).
  [[nodiscard]] bool allowed(std::string_view name) const;
  /// Re-reads the domain's channels; tells Foxglove clients what changed.
  void refresh();
  /// The bus graph to the sessions that follow it (computed once for all).
  void graph_tick();
  /// Each session's offered services against those served now.
  void services_tick();

  /// A channel a client may create, `topic` of `type` (package/Name), when
  /// that client made `client_made` already: within the limits of
  /// [bridge] and the domain's registry, its schema that of a channel of
  /// the domain carrying `type`, else resolved by `types`. Throws Error
  /// naming what is over or the type and where it was looked for.
  [[nodiscard]] ChannelEntry plan_channel(const std::string& topic, const std::string& type,
                                          std::size_t client_made) const;
  /// Calls shmbus service `service` with the JSON `args` (fields left out
  /// are zero), for any protocol: `done` runs on the service's worker
  /// thread, with the response's 64-bit integers as json_int64 says.
  /// Returns why the call could not start (not allowed, no such service, a
  /// request that does not fit, too many waiting), counted as a failure,
  /// or nothing. Counts the call.
  std::optional<std::string> call_service(const std::string& service, const schema::Json& args,
                                          std::chrono::nanoseconds timeout, ServiceCaller::Done done);
  /// Takes a share of the publisher of `channel` (which exists, or is
  /// created with `entry`'s type and schema). Throws Error.
  Outlet& acquire_outlet(const ChannelEntry& entry);
  void release_outlet(const std::string& channel);

  /// Bus messages posted to the network thread and not yet handed to the
  /// sessions: over this, the reader drops (counted).
  static constexpr std::size_t kMaxInFlightBytes = std::size_t{16} << 20;

  Config config;
  BridgeSettings settings;  ///< [bridge], with the command line on top
  asio::io_context& io;
  Context context;
  std::string token;  ///< empty: no authentication
  Catalog catalog;
  schema::TypeCatalog types;  ///< shipped types, settings.msg_path, SHMBUS_MSG_PATH
  Counters counters;
  std::atomic<std::size_t> in_flight_bytes{0};
  std::set<Session*> sessions;
  std::size_t pending_auth = 0;                ///< sessions waiting for their auth op
  std::set<std::string, std::less<>> created;  ///< channels the bridge made for clients
  std::map<std::string, Outlet, std::less<>> outlets;
  std::unique_ptr<BusReader> reader;
  std::unique_ptr<ServiceCaller> services;
};

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
