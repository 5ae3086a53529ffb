#pragma once
// The bridge's state on its network thread, shared by its sessions
// (session.hpp) behind the calls they make: the bus reader, the outlets,
// the services it calls, the channels its clients created.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

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

class Session;

/// Everything the sessions share, behind the calls they make. Network
/// thread only, except counters(), the reader and the service caller
/// (thread-safe).
class Hub {
 public:
  Hub(const Config& config, BridgeSettings settings, asio::io_context& io);

  // The program's: the hub's threads and sessions.
  /// Starts the reader thread, which hands each message to the sessions on
  /// the network thread.
  void start_reader();
  /// Shuts every session down (Session::shutdown), the network thread
  /// stopped.
  void shutdown_sessions();
  /// Stops the reader (no more dispatches) and the service caller (its
  /// workers finish their calls): after shutdown_sessions.
  void stop();
  /// The counters (clients: those in the program's own count).
  [[nodiscard]] BridgeStats stats() const noexcept;
  /// Re-reads the domain's channels; tells Foxglove clients what changed.
  void refresh();
  /// The bus graph to the sessions that follow it (computed once for all).
  void graph_tick();
  /// Each session's offered services against those served now.
  void services_tick();

  // What a session reads.
  [[nodiscard]] const Config& config() const noexcept { return config_; }
  /// [bridge], with the command line on top.
  [[nodiscard]] const BridgeSettings& settings() const noexcept { return settings_; }
  [[nodiscard]] asio::io_context& io() const noexcept { return io_; }
  [[nodiscard]] Context& context() noexcept { return context_; }
  /// Empty: no authentication.
  [[nodiscard]] const std::string& token() const noexcept { return token_; }
  /// The domain's channels as of the last refresh().
  [[nodiscard]] const Catalog& catalog() const noexcept { return catalog_; }
  [[nodiscard]] Counters& counters() noexcept { return counters_; }
  /// Whether clients may use a channel or service (allow, then deny globs).
  [[nodiscard]] bool allowed(std::string_view name) const;

  // The sessions.
  void join(Session& session);
  /// The session is gone: its subscriptions to the bus go too.
  void leave(Session& session);
  [[nodiscard]] std::size_t sessions() const noexcept { return sessions_.size(); }
  /// A session waits for its auth op (counted) / no longer does.
  void auth_started() noexcept { ++pending_auth_; }
  void auth_ended() noexcept { --pending_auth_; }
  [[nodiscard]] std::size_t pending_auth() const noexcept { return pending_auth_; }

  // The bus, for a session.
  /// Delivers `channel`'s messages to `sink` (BusReader::add).
  void subscribe(const ChannelEntry& channel, Sink sink, bool from_first = false);
  void unsubscribe(const std::string& channel, const Session* owner, std::uint64_t key);
  /// A channel a client may create, `topic` of `type` (package/Name), when
  /// that client made `client_made` already: within the limits of
  /// [bridge] and the domain's registry, its schema that of a channel of
  /// the domain carrying `type`, else resolved by the msg path. Throws
  /// Error naming what is over or the type and where it was looked for.
  /// The schema of `type` (package/Name): a channel's of the domain that
  /// carries it, else the type catalog's. Throws Error(kNotFound) naming
  /// where it was looked for.
  [[nodiscard]] std::shared_ptr<const schema::Schema> schema_of_type(const std::string& type) const;
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
  /// created with `entry`'s type and schema; `made`: by this call, for a
  /// client, and removed with its last user). Throws Error.
  Outlet& acquire_outlet(const ChannelEntry& entry, bool made);
  /// The publisher of a channel acquired (acquire_outlet) and not yet
  /// released.
  [[nodiscard]] Outlet& outlet(const std::string& channel) { return outlets_.at(channel); }
  void release_outlet(const std::string& channel);

  /// Bus messages posted to the network thread and not yet handed to the
  /// sessions: over this, the reader drops (counted).
  static constexpr std::size_t kMaxInFlightBytes = std::size_t{16} << 20;

 private:
  Config config_;
  BridgeSettings settings_;
  asio::io_context& io_;
  Context context_;
  std::string token_;
  Catalog catalog_;
  schema::TypeCatalog types_;  ///< shipped types, settings.msg_path, SHMBUS_MSG_PATH
  Counters counters_;
  std::atomic<std::size_t> in_flight_bytes_{0};
  std::set<Session*> sessions_;
  std::size_t pending_auth_ = 0;                ///< sessions waiting for their auth op
  std::set<std::string, std::less<>> created_;  ///< channels the bridge made for clients
  std::map<std::string, Outlet, std::less<>> outlets_;
  std::unique_ptr<BusReader> reader_;
  std::unique_ptr<ServiceCaller> services_;
};

}  // namespace shmbus::bridge
