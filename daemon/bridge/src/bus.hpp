#pragma once
// The bus side of the bridge: what the domain holds (channels with their
// types and schemas) and the reader thread that takes every subscribed
// channel's messages and encodes each once for all the clients that want it.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/types.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus::bridge {

class Session;

/// The one refusal of a type that is not the channel's, for every protocol:
/// "type mismatch on TOPIC: SIDE says CLAIMED, the channel carries
/// CARRIED; CONSEQUENCE". Nothing when `claimed` is empty (no claim) or,
/// normalized, is `carried`.
std::optional<std::string> type_mismatch(std::string_view topic, std::string_view side, std::string_view claimed,
                                         std::string_view carried, std::string_view consequence);

/// One channel of the domain, as clients see it.
struct ChannelEntry {
  std::string name;
  std::uint32_t id = 0;  ///< the Foxglove channel id, stable while the bridge runs
  TypeInfo type;
  std::shared_ptr<const schema::Schema> schema;  ///< null: raw bytes or no schema stored
  bool service_channel = false;                  ///< a service's (names.hpp service_of_channel)
  /// The channel mapped once, when it is listed: the graph and the
  /// served/published checks read its endpoints without opening it again.
  std::shared_ptr<const introspect::ChannelReader> reader;
};

/// The channels of a domain, re-read when its registry changes. Used on the
/// network thread only.
class Catalog {
 public:
  Catalog(std::string domain, SegmentAccess access) : domain_(std::move(domain)), access_(std::move(access)) {}
  /// Re-reads the registry when it changed; returns true when the set of
  /// channels changed (`added` and `removed` name them).
  bool refresh(std::vector<const ChannelEntry*>& added, std::vector<ChannelEntry>& removed);
  [[nodiscard]] const ChannelEntry* find(std::string_view name) const;
  /// Why channel `name` is not bridged (its stored schema was refused), or
  /// empty.
  [[nodiscard]] std::string refused(std::string_view name) const;
  [[nodiscard]] const ChannelEntry* find_id(std::uint32_t id) const;
  [[nodiscard]] const std::map<std::string, ChannelEntry, std::less<>>& channels() const noexcept { return channels_; }
  /// The definition of a message type that some channel carries (nested
  /// types included) and the schema that keeps it alive; {null, null} when
  /// no channel has it.
  [[nodiscard]] std::pair<std::shared_ptr<const schema::Schema>, const schema::MessageDef*> find_type(
      std::string_view type) const;
  /// A live view of one channel (endpoints, counters), read through the
  /// mapping made when it was listed; nullopt when gone or not listed (as
  /// of the last refresh).
  [[nodiscard]] std::optional<introspect::ChannelView> view(std::string_view name) const;
  /// Whether a live process serves `service` now (subscribes to its
  /// request channel): a service only clients made, or whose server is
  /// gone, is not offered to clients.
  [[nodiscard]] bool served(std::string_view service) const;
  /// Whether a live process publishes channel `name` now.
  [[nodiscard]] bool published(std::string_view name) const;
  [[nodiscard]] const std::string& domain() const noexcept { return domain_; }
  [[nodiscard]] const SegmentAccess& access() const noexcept { return access_; }

 private:
  std::string domain_;
  SegmentAccess access_;
  std::optional<introspect::DomainView> view_;
  std::uint64_t generation_ = ~0ULL;
  std::uint32_t next_id_ = 1;
  std::map<std::string, ChannelEntry, std::less<>> channels_;
  std::map<std::uint64_t, std::shared_ptr<const schema::Schema>> schemas_;  ///< by type hash
  std::map<std::uint64_t, std::string> refused_schemas_;                    ///< by type hash: why
  std::map<std::string, std::string, std::less<>> refused_;                 ///< channel -> why (never bridged)
};

/// Who publishes, subscribes and serves what, read live from the
/// endpoints of the catalog's channels (node names as each process gave
/// them). rosapi's nodes and Foxglove's connection graph are this.
struct BusGraph {
  struct Node {
    std::set<std::string> publishing, subscribing;  ///< topics
    std::set<std::string> serving, calling;         ///< services
    std::set<std::int32_t> pids;
    bool operator==(const Node&) const = default;
  };
  std::map<std::string, Node> nodes;                         ///< by node name
  std::map<std::string, std::set<std::string>> publishers;   ///< topic -> nodes
  std::map<std::string, std::set<std::string>> subscribers;  ///< topic -> nodes
  std::map<std::string, std::set<std::string>> providers;    ///< service -> nodes serving it
  bool operator==(const BusGraph&) const = default;
};
/// The graph of the channels `allowed` lets through (services by their
/// service name); endpoints of processes that are gone are left out.
BusGraph bus_graph(const Catalog& catalog, const std::function<bool(std::string_view)>& allowed);

/// How a client wants a channel's messages.
enum class Encoding : std::uint8_t {
  kRosJson,       ///< rosbridge `publish` op as a JSON text frame
  kRosJsonExact,  ///< the same with 64-bit integers as decimal strings
  kRosCbor,       ///< the same op as CBOR in a binary frame
  kFoxglove,      ///< the message as JSON, the payload of a Foxglove message-data frame
  kFoxgloveCdr,   ///< the message as ROS 2 CDR, idem
};
inline constexpr std::size_t kEncodings = 5;

/// Where a channel's messages go: one subscription of one session.
struct Sink {
  std::weak_ptr<Session> session;
  const Session* owner = nullptr;  ///< identity, for removal
  std::uint64_t key = 0;           ///< the session's subscription
  Encoding encoding = Encoding::kRosJson;
};

/// `j` as JSON text, never throwing: a string that is not UTF-8 (a
/// client's CBOR, nlohmann's quote of a malformed frame) has each bad byte
/// replaced by U+FFFD.
inline std::string dump_json(const schema::Json& j) {
  return j.dump(-1, ' ', false, schema::Json::error_handler_t::replace);
}

/// One message taken from the bus, encoded as its sinks want it.
struct OutMessage {
  std::string topic;
  std::uint64_t sequence = 0;
  std::int64_t receive_wall_ns = 0;
  std::array<std::shared_ptr<const std::string>, kEncodings> encoded;
};

/// The reader thread. add/remove may be called from any thread; the
/// dispatch function runs on the reader thread with each message and the
/// sinks that want it.
class BusReader {
 public:
  using Dispatch = std::function<void(std::shared_ptr<const OutMessage>, std::vector<Sink>)>;
  BusReader(Context& context, Dispatch dispatch);
  ~BusReader();
  BusReader(const BusReader&) = delete;
  BusReader& operator=(const BusReader&) = delete;

  /// Hands `channel`'s messages to `sink`; with `from_first`, a channel the
  /// reader does not follow yet is read from the oldest message its ring
  /// still holds (a subscription that waited for the channel).
  void add(const ChannelEntry& channel, Sink sink, bool from_first = false);
  void remove(const std::string& channel, const Session* owner, std::uint64_t key);
  void remove_all(const Session* owner);

  [[nodiscard]] std::uint64_t taken() const noexcept { return taken_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t lost() const noexcept { return lost_.load(std::memory_order_relaxed); }

 private:
  struct Topic;
  struct Command {
    enum Kind : std::uint8_t { kAdd, kRemove, kRemoveAll } kind;
    std::string channel;
    std::shared_ptr<const schema::Schema> schema;
    Sink sink;
    bool from_first = false;
  };
  void run();
  void apply(std::vector<Command>& commands);
  void drain(Topic& topic);
  /// Fills `out.encoded` with the encodings `wanted`; throws
  /// schema::CodecError for a message its schema does not decode.
  static void encode(const Topic& t, std::span<const std::byte> payload, const std::array<bool, kEncodings>& wanted,
                     OutMessage& out);

  Context& context_;
  Dispatch dispatch_;
  std::mutex mutex_;
  std::vector<Command> commands_;
  bool stop_ = false;
  GuardCondition wake_;
  std::map<std::string, std::unique_ptr<Topic>, std::less<>> topics_;  ///< reader thread only
  std::atomic<std::uint64_t> taken_{0};
  std::atomic<std::uint64_t> lost_{0};
  std::thread thread_;
};

}  // namespace shmbus::bridge
