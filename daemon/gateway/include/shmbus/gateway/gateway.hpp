#pragma once
/// @file gateway.hpp
/// shmbus-gateway as a library: carries channels between hosts over
/// Eclipse Cyclone DDS. Each exported channel is one DDS topic ("shmbus" +
/// the channel name) of a fixed envelope: a batch of the messages the ring
/// held at once (type name and hash, origin host, domain and gateway; per
/// message its sequence, the origin's wall stamp, the payload bytes).
/// Schemas travel on a topic of their own, so the receiving gateway creates
/// each channel with the sender's schema and remote channels are typed and
/// decodable.
///
/// No loops: a gateway never exports what its own publishers put into a
/// channel, and ignores samples from its own participant, so two gateways
/// exporting and importing `*` carry each message exactly once each way.
///
/// Threads: one exports (a WaitSet over the subscribers of the exported
/// channels, discovery every 200 ms); one discovers imports (a DDS waitset
/// over DDS's built-in publications and the schema topic); imported
/// messages are published from Cyclone's receive thread, in a listener.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shmbus/config.hpp"
#include "shmbus/config_source.hpp"

namespace shmbus::gateway {

/// Totals since start.
struct GatewayStats {
  std::uint64_t exported_channels = 0;  ///< local channels published to DDS
  std::uint64_t imported_channels = 0;  ///< DDS topics published into the local domain
  std::uint64_t messages_sent = 0;      ///< messages written to DDS
  std::uint64_t batches_sent = 0;       ///< DDS samples they were written in (a burst shares one)
  std::uint64_t messages_received = 0;  ///< messages published into the local domain
  std::uint64_t ring_lost = 0;          ///< messages overwritten in a ring before the gateway read them
  std::uint64_t transit_lost = 0;       ///< messages the origin sent that never arrived (sequence gaps)
  std::uint64_t not_reexported = 0;     ///< messages of its own imports it did not send back
  std::uint64_t unmatched = 0;          ///< exported messages taken while no remote reader was matched (after one was)
  std::uint64_t refused = 0;            ///< samples refused (type mismatch, schema never seen, too large)
  std::uint64_t latency_samples = 0;    ///< received samples with a cross-host latency
  std::int64_t latency_sum_ns = 0;      ///< receive wall time minus the origin's wall stamp, summed
  std::int64_t latency_max_ns = 0;
};

/// One [[gateway]] entry: which channels cross to other hosts over DDS,
/// and with which QoS.
struct GatewayRule {
  enum class Reliability : std::uint8_t { kBestEffort, kReliable };
  std::vector<std::string> exports;  ///< local channel globs published to DDS
  std::vector<std::string> imports;  ///< DDS topics (channel globs) published into the local domain
  Reliability reliability = Reliability::kReliable;
  std::uint32_t history_depth = 16;  ///< DDS KEEP_LAST depth of writers and readers
  std::string partition;             ///< DDS partition; empty: the default partition
  std::string where;                 ///< "file:line:column" of the entry, for messages
};

/// The [[gateway]] entries of a configuration file, in file order. Throws
/// Error(kConfig) "file:line:column: what".
std::vector<GatewayRule> read_gateway_rules(const ConfigFile& file);

/// What the gateway carries and where it speaks DDS.
struct GatewayOptions {
  std::vector<GatewayRule> rules;  ///< the [[gateway]] entries
  std::uint32_t dds_domain = 0;    ///< the DDS domain id (Cyclone's configuration: CYCLONEDDS_URI)
};

/// The gateway of one shmbus domain. Runs its own threads from
/// construction to destruction.
class Gateway {
 public:
  /// Starts carrying what `options.rules` names in `config.domain`.
  /// Throws Error: kConfig without rules, kResource when DDS cannot start.
  Gateway(const Config& config, const GatewayOptions& options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  [[nodiscard]] GatewayStats stats() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shmbus::gateway
