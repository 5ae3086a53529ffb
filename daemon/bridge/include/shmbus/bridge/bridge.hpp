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

#include <cstdint>
#include <memory>
#include <string>

#include "shmbus/config.hpp"

namespace shmbus::bridge {

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
  /// Binds `config.bridge.listen` (port 0: any free port) and starts.
  /// Throws Error: kConfig for a bad address or an unreadable/empty token
  /// file, kResource when the address cannot be bound.
  explicit Bridge(const Config& config);
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

/// The program: `shmbus-bridge [--listen A:P] [--domain D] ...`.
int bridge_main(int argc, char** argv);

}  // namespace shmbus::bridge
