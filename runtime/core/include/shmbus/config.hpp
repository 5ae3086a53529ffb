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

#include "shmbus/names.hpp"

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
  std::uint32_t capacity = 64;              ///< ring slots, a power of two
  std::uint32_t max_message_size = 4096;    ///< payload bytes
  std::uint32_t time_list_capacity = 1024;  ///< stamps, a power of two
  /// A ring channel grows when a bigger message comes: a publish or loan
  /// over the slots makes a ring of larger slots (max_message_size is the
  /// size it starts with), up to max_grow_size. false: it never changes.
  bool grow = true;
  std::uint32_t max_grow_size = 256U << 20;
  /// Where the three sizes above were set: the `file:line:column` of the
  /// last [defaults] or [[channel]] entry naming one, or a publisher's
  /// options; empty: the built-in defaults. A channel stores it (with its
  /// creator) so that a message that does not fit can say where to look,
  /// and an opener whose configuration names other sizes says so.
  std::string sizes_from;
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
  std::optional<std::uint32_t> max_grow_size;
  std::optional<bool> grow;
  std::optional<std::chrono::nanoseconds> window;
  std::optional<std::array<double, 3>> thresholds_hz;
  std::optional<std::chrono::nanoseconds> stall_timeout;
  std::optional<std::chrono::nanoseconds> wait_spin;
  std::optional<std::uint32_t> age_sample_every;
  std::optional<std::uint32_t> publisher_history;
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

/// The largest registry_capacity (a power of two from 1 up to this).
inline constexpr std::uint32_t kMaxRegistryCapacity = 1U << 20;

/// A parsed configuration. Thread-safety: immutable after load; share freely.
class Config {
 public:
  std::string source = "<embedded default>";  ///< file it came from
  std::string domain = "default";
  std::string node;                        ///< empty: the program's name
  std::uint32_t registry_capacity = 4096;  ///< channels per domain
  /// Bytes all the domain's grown rings may hold together (their segments
  /// in /dev/shm); a growth past it is refused.
  std::uint64_t grow_budget = std::uint64_t{4} << 30;
  std::uint32_t mode = 0660;  ///< permissions of created segments
  std::string group;          ///< a group whose segments are accepted and given to created ones (multi-user systems)
  ChannelSettings defaults;
  std::string defaults_where;  ///< "file:line:column" of [defaults], if present
  std::vector<ChannelRule> channels;

  /// The top-level tables the transport leaves to the programs that own
  /// them: each program's library reads its own (shmbus/config_file.hpp);
  /// any other unknown key is refused.
  static constexpr std::array<std::string_view, 4> kProgramSections{"monitor", "bridge", "gateway", "sync"};

  /// Parses TOML text. Throws Error(kConfig) "source:line:column: what is wrong".
  static Config parse(std::string_view text, const std::string& source_name);
  /// The largest configuration file load_file() reads.
  static constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
  /// A configuration file's text. Throws Error(kConfig) when it is
  /// unreadable, not a regular file or over kMaxConfigBytes.
  static std::string read_file(const std::string& path);
  /// Loads a file: parse(read_file(path), path).
  static Config load_file(const std::string& path);

  /// What the environment says: SHMBUS_CONFIG (a file; empty: none) and
  /// SHMBUS_DOMAIN (validated; Error(kConfig) naming it when bad). The one
  /// place either is read.
  struct Environment {
    std::string config_path;
    std::optional<std::string> domain;
  };
  static Environment environment();
  /// The file named by SHMBUS_CONFIG, or the embedded default; then
  /// SHMBUS_DOMAIN, when set, overrides the domain.
  static Config from_environment();

  /// The settings for `channel_name`: [defaults], then each matching
  /// [[channel]] entry in file order, key by key (the last match wins).
  /// Patterns are fnmatch(3) globs without flags (`*` also matches `/`).
  /// A service client's response channel (`NAME/_response/<slot>`) starts
  /// from `NAME/_response`'s settings, and takes rate thresholds only from
  /// an entry that names it exactly.
  [[nodiscard]] ChannelSettings channel(std::string_view channel_name) const;
  /// The same for a name already resolved (no name is looked at twice).
  [[nodiscard]] ChannelSettings channel(const ChannelName& name) const;
  /// The access rule for segments: `mode` and `group`.
  [[nodiscard]] SegmentAccess access() const { return SegmentAccess{mode, group}; }
};

/// Parses "100ms", "1.5s", "250us", "2min", "40ns". Returns nullopt when
/// the text is not a number followed by one of those units.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) noexcept;

/// Formats a duration with the largest unit that keeps it exact ("1500us").
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace shmbus
