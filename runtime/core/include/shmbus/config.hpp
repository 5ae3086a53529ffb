#pragma once
/// @file config.hpp
/// The TOML configuration every shmbus process loads at start
/// (`SHMBUS_CONFIG`), and the daemon too. docs/configuration.md lists the keys.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbus {

/// Which transport carries a channel's messages.
enum class Transport : std::uint32_t { kShm = 0, kIceoryx = 1 };

/// `shm` or `iceoryx`.
std::string_view to_string(Transport t) noexcept;

/// What a publisher does when the ring holds only messages some subscriber
/// has not taken yet.
enum class Overflow : std::uint32_t {
  kOverwrite = 0,  ///< overwrite the oldest: the slow subscriber counts it lost
  kBlock = 1,      ///< wait for the slowest live subscriber, up to block_timeout
};

/// `overwrite` or `block`.
std::string_view to_string(Overflow o) noexcept;

/// The settings in force for one channel, after [defaults] and every
/// matching [[channel]] entry have been applied.
struct ChannelSettings {
  Transport transport = Transport::kShm;
  /// The configuration names the transport ([defaults] or a [[channel]]
  /// entry): opening a channel created with the other one is refused. When
  /// it does not, an opener follows the channel's (tools, the recorder).
  bool transport_set = false;
  /// `overflow = "block"`: a publisher waits for its slowest subscriber
  /// instead of overwriting what it has not taken (ring channels only).
  Overflow overflow = Overflow::kOverwrite;
  bool overflow_set = false;  ///< the configuration names it: a mismatch is refused
  /// How long a publish waits for room on a block channel before it
  /// overtakes the subscribers holding it up (counted as block_timeouts;
  /// they count what they lose). Dead subscribers never hold anyone up.
  std::chrono::nanoseconds block_timeout = std::chrono::seconds(1);
  std::uint32_t capacity = 64;                                ///< ring slots, a power of two
  std::uint32_t max_message_size = 4096;                      ///< payload bytes
  std::uint32_t time_list_capacity = 1024;                    ///< stamps, a power of two
  std::chrono::nanoseconds window = std::chrono::seconds(1);  ///< frequency window W
  std::optional<std::array<double, 3>> thresholds_hz;         ///< f1 < f2 < f3
  /// How long a claimed but unfinished slot may hold up readers before the
  /// message is counted lost (a publisher killed mid-write, or descheduled).
  std::chrono::nanoseconds stall_timeout = std::chrono::milliseconds(2);
  /// How long a blocking wait spins before it sleeps on the futex.
  std::chrono::nanoseconds wait_spin = std::chrono::microseconds(50);
  /// A subscriber records the message age (take time - publish time) for
  /// the daemon every this many takes (1: every take; each costs a clock
  /// read, ~15-20 ns).
  std::uint32_t age_sample_every = 8;
  /// iceoryx channels: messages each publisher keeps for subscribers that
  /// join later and ask for history (SubscriberOptions::history, at most
  /// 16). Off by default: iceoryx then does per message what a history
  /// costs (~400 ns on a 2-vCPU VM). Ring channels ignore it: their ring
  /// is their history.
  std::uint32_t publisher_history = 0;
};

/// Settings of shmbusd (stored here so every process parses one schema).
struct MonitorSettings {
  std::chrono::nanoseconds scan_period = std::chrono::milliseconds(100);
  std::uint32_t debounce_scans = 3;
  std::string metrics_listen = "127.0.0.1:9464";
  std::chrono::nanoseconds statistics_period = std::chrono::seconds(1);
  std::string webhook;  ///< empty: none
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
  /// Browser Origins (globs, e.g. "https://ops.example.com") allowed to
  /// open a WebSocket; empty: loopback hosts only. Requests without an
  /// Origin (not from a browser) are always allowed.
  std::vector<std::string> allow_origins;
};

/// One [[gateway]] entry of shmbus-gateway: which channels cross to other
/// hosts over DDS, and with which QoS.
struct GatewayRule {
  enum class Reliability : std::uint8_t { kBestEffort, kReliable };
  std::vector<std::string> exports;  ///< local channel globs published to DDS
  std::vector<std::string> imports;  ///< DDS topics (channel globs) published into the local domain
  Reliability reliability = Reliability::kReliable;
  std::uint32_t history_depth = 16;  ///< DDS KEEP_LAST depth of writers and readers
  std::string partition;             ///< DDS partition; empty: the default partition
  std::string where;                 ///< "file:line:column" of the entry, for messages
};

/// One [[channel]] entry: a name or glob and the keys it sets.
struct ChannelRule {
  std::string pattern;
  std::string where;  ///< "file:line:column" of the entry, for messages
  std::optional<Transport> transport;
  std::optional<Overflow> overflow;
  std::optional<std::chrono::nanoseconds> block_timeout;
  std::optional<std::uint32_t> capacity;
  std::optional<std::uint32_t> max_message_size;
  std::optional<std::uint32_t> time_list_capacity;
  std::optional<std::chrono::nanoseconds> window;
  std::optional<std::array<double, 3>> thresholds_hz;
  std::optional<std::chrono::nanoseconds> stall_timeout;
  std::optional<std::chrono::nanoseconds> wait_spin;
  std::optional<std::uint32_t> age_sample_every;
  std::optional<std::uint32_t> publisher_history;
};

/// One [[sync]] entry: a synchronizer stage (`shmtool sync NAME`).
struct SyncStageSettings {
  std::string name;
  std::string where;  ///< "file:line:column" of the entry
  std::vector<std::string> inputs;
  std::string output;
  std::string policy = "bounded";  ///< bounded, exact, approximate, latest
  std::optional<std::chrono::nanoseconds> threshold;
  std::string stamp_field;  ///< empty: the publish time
  std::uint32_t queue_size = 64;
  std::string master;  ///< latest: the triggering input
};

/// Whose shared-memory segments a process accepts. /dev/shm is
/// world-writable: another local user could create a domain's segments
/// first. A segment is opened only when it belongs to this process's user
/// (or, with `group`, to that group) and its mode grants nothing beyond
/// `mode`; segments this process creates get `mode` (and `group`).
struct SegmentAccess {
  std::uint32_t mode = 0660;
  std::string group;  ///< empty: only this user's segments
};

/// A parsed configuration. Thread-safety: immutable after load; share freely.
class Config {
 public:
  std::string source = "<embedded default>";  ///< file it came from
  std::string domain = "default";
  std::string node;                        ///< empty: the program's name
  std::uint32_t registry_capacity = 4096;  ///< channels per domain
  std::uint32_t mode = 0660;               ///< permissions of created segments
  std::string group;  ///< a group whose segments are accepted and given to created ones (multi-user systems)
  ChannelSettings defaults;
  std::string defaults_where;  ///< "file:line:column" of [defaults], if present
  std::vector<ChannelRule> channels;
  MonitorSettings monitor;
  BridgeSettings bridge;
  std::vector<GatewayRule> gateways;  ///< [[gateway]] entries, in file order
  std::vector<SyncStageSettings> sync_stages;

  /// Parses TOML text. Throws Error(kConfig) "source:line:column: what is wrong".
  static Config parse(std::string_view text, const std::string& source_name);
  /// The largest configuration file load_file() reads.
  static constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
  /// Loads a file. Throws Error(kConfig) as parse(), or when it is
  /// unreadable, not a regular file or over kMaxConfigBytes.
  static Config load_file(const std::string& path);
  /// The file named by SHMBUS_CONFIG, or the embedded default; then
  /// SHMBUS_DOMAIN, when set, overrides the domain.
  static Config from_environment();

  /// The settings for `channel_name`: [defaults], then each matching
  /// [[channel]] entry in file order, key by key (the last match wins).
  /// Patterns are fnmatch(3) globs without flags (`*` also matches `/`).
  [[nodiscard]] ChannelSettings channel(std::string_view channel_name) const;
  /// The access rule for segments: `mode` and `group`.
  [[nodiscard]] SegmentAccess access() const { return SegmentAccess{mode, group}; }
};

/// Parses "100ms", "1.5s", "250us", "2min", "40ns". Returns nullopt when
/// the text is not a number followed by one of those units.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) noexcept;

/// Formats a duration with the largest unit that keeps it exact ("1500us").
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace shmbus
