#pragma once
/// @file bridge.hpp
/// shmbus-bridge as a library: a WebSocket server on Boost.Beast that
/// speaks the rosbridge v2 protocol (JSON, and CBOR on request) and the
/// Foxglove WebSocket protocol (`foxglove.websocket.v1`) on one port, over
/// the channels and services of one domain, with /metrics on the same port.
///
/// Threads: one runs the network (every session, every publish into the
/// bus, the discovery of channels); one reads the subscribed channels and
/// encodes each message once for all its clients; one per called service
/// waits for its responses. A client's messages go through its own bounded
/// send queue: a slow client loses its oldest messages (counted, told in a
/// status message, shown in /metrics), never slowing publishers or other
/// clients.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/config_source.hpp"

namespace shmbus::bridge {

/// How Foxglove clients are offered each typed channel.
enum class FoxgloveEncoding : std::uint8_t {
  kCdr,   ///< ROS 2 CDR with a ros2msg schema: binary, 64-bit values exact (foxglove_bridge's form)
  kJson,  ///< JSON with a JSON Schema
  kBoth,  ///< each channel twice, once per encoding (Foxglove's app flags a topic advertised twice)
};

/// How rosbridge JSON carries 64-bit integers.
enum class JsonInt64 : std::uint8_t {
  kNumber,  ///< numbers, as rosbridge sends them (JavaScript rounds those past 2^53)
  kString,  ///< decimal strings: exact, but a client must parse them
};

/// Settings of shmbus-bridge, the WebSocket bridge ([bridge]).
struct BridgeSettings {
  std::string listen = "127.0.0.1:9090";  ///< ADDRESS:PORT; loopback unless told otherwise
  std::vector<std::string> allow;         ///< channel/service globs clients may use; empty: all
  std::vector<std::string> deny;          ///< globs refused even when allowed
  std::string token_file;                 ///< a file holding the token clients must present; empty: none
  std::string tls_cert;                   ///< PEM certificate chain: serve wss:// and https://; empty: plain
  std::string tls_key;                    ///< PEM private key of tls_cert
  std::uint32_t max_clients = 64;
  std::uint32_t max_frame_bytes = 1U << 20;  ///< largest incoming WebSocket message
  std::uint32_t send_queue = 1024;           ///< messages queued per client before the oldest is dropped
  std::uint32_t max_ops_per_second = 2000;   ///< per client; more are refused
  /// rosbridge subscribe ids one client holds at once (those waiting for
  /// their channel included); more are refused.
  std::uint32_t max_subscriptions = 256;
  std::chrono::nanoseconds service_timeout = std::chrono::seconds(5);  ///< call_service without a timeout
  /// Bytes queued for one client (its send queue, fragments included)
  /// before its oldest messages are dropped and counted.
  std::uint32_t max_client_bytes = 4U << 20;
  /// Channels one client may create (advertise of a channel no process
  /// has), each of at most max_created_channel_bytes (capacity times
  /// max_message_size, from the [[channel]] rules). A created channel with
  /// no other endpoint left is removed when its client leaves.
  std::uint32_t max_created_channels = 4;
  std::uint64_t max_created_channel_bytes = std::uint64_t{16} << 20;
  /// With a token: a rosbridge client that has not sent auth within this
  /// time is closed, and at most max_pending_auth wait at once.
  std::chrono::nanoseconds auth_timeout = std::chrono::seconds(5);
  std::uint32_t max_pending_auth = 8;
  /// A client from which nothing arrives for this long is closed; a ping
  /// goes out at half of it, so a live idle client (which answers) stays.
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(60);
  /// Browser Origins (globs, e.g. "https://app.foxglove.dev") allowed to
  /// open a WebSocket, besides loopback hosts' (localhost, 127.0.0.0/8,
  /// [::1]) while `loopback_origins`. Requests without an Origin (not from
  /// a browser) are always allowed.
  std::vector<std::string> allow_origins;
  bool loopback_origins = true;
  /// Roots of `<package>/<Name>.msg` files for the types clients name when
  /// they create a channel, searched after the shipped definitions and
  /// before SHMBUS_MSG_PATH (the order shmtool uses).
  std::vector<std::string> msg_path;
  FoxgloveEncoding foxglove_encoding = FoxgloveEncoding::kCdr;
  /// The default of every rosbridge subscription (a subscribe's own
  /// "json_int64" field overrides it).
  JsonInt64 json_int64 = JsonInt64::kNumber;
};

/// "cdr", "json", "both" / "number", "string"; nullopt for anything else.
std::optional<FoxgloveEncoding> foxglove_encoding_of(std::string_view text);
std::optional<JsonInt64> json_int64_of(std::string_view text);

/// The [bridge] section of `file` (its defaults when it has none). Throws
/// Error(kConfig) "file:line:column: what" for a bad or unknown key.
BridgeSettings read_bridge_settings(const ConfigFile& file);

/// Totals since start (the /metrics counters).
struct BridgeStats {
  std::uint64_t clients = 0;              ///< connected WebSocket clients
  std::uint64_t connections_refused = 0;  ///< over max_clients, bad token
  std::uint64_t messages_sent = 0;        ///< data messages written to clients
  std::uint64_t messages_dropped = 0;     ///< data messages dropped from full send queues
  std::uint64_t messages_published = 0;   ///< client messages published into the bus
  std::uint64_t ops_refused = 0;          ///< malformed, unknown, refused or over-rate operations
  std::uint64_t bus_messages = 0;         ///< messages taken from subscribed channels
  std::uint64_t bus_lost = 0;             ///< messages the bridge's subscribers lost in their rings
  std::uint64_t service_calls = 0;        ///< call_service operations forwarded to shmbus services
  std::uint64_t service_failures = 0;     ///< of those, not answered with a response
};

/// The WebSocket bridge of one domain. Runs its own threads from
/// construction to destruction.
class Bridge {
 public:
  /// Binds `settings.listen` (port 0: any free port) and starts;
  /// with `tls_cert` and `tls_key`, serves wss:// and https:// only.
  /// Throws Error: kConfig for a bad address, an unreadable/empty token
  /// file or an unusable certificate or key, kResource when the address
  /// cannot be bound.
  Bridge(const Config& config, BridgeSettings settings);
  ~Bridge();
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  /// The port actually bound.
  [[nodiscard]] std::uint16_t port() const noexcept;
  [[nodiscard]] BridgeStats stats() const noexcept;
  /// The Prometheus text served at /metrics.
  [[nodiscard]] std::string metrics() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// What `shmbus-bridge connect` carries over its link.
struct UplinkOptions {
  std::string url;                   ///< ws://HOST[:PORT][/PATH] or wss://... of a rosbridge v2 server
  std::vector<std::string> exports;  ///< local channels published on the remote side
  std::vector<std::string> imports;  ///< remote topics published into the local bus
  std::string tls_ca;                ///< wss://: PEM authorities to trust; empty: the system's
};

/// Counters of the link (besides the bridge's own).
struct UplinkStats {
  std::uint64_t connects = 0;        ///< links made (the first and each reconnect)
  std::uint64_t refused_topics = 0;  ///< topics refused (type mismatch, missing on one side)
  std::uint64_t link_lost = 0;       ///< messages of exported channels published while the link was down
  bool connected = false;
  BridgeStats bridge;
};

/// The bridge as a client of a remote rosbridge v2 server (the robot's
/// link to a cloud, or to another shmbus-bridge): for each topic it asks
/// the remote side for its type (`/rosapi/topic_type`) and compares it with
/// the local channel's before anything flows; a mismatch refuses that topic
/// only. Exports are subscribed locally and published there; imports are
/// subscribed there and published locally. A dropped link is retried with
/// backoff (0.25 s doubling to 5 s), and what the exported channels
/// published meanwhile is counted lost.
class Uplink {
 public:
  /// Throws Error(kConfig) for a URL that is not ws:// or wss://, or an
  /// unusable tls_ca.
  Uplink(const Config& config, UplinkOptions options);
  ~Uplink();
  Uplink(const Uplink&) = delete;
  Uplink& operator=(const Uplink&) = delete;
  [[nodiscard]] UplinkStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::bridge
