#pragma once
/// @file lineage.hpp
/// What a recording knows about where its messages came from: each
/// message's module and inputs (the provenance `shmtool record` writes on
/// /shmbus/provenance) and the modules' topology (the "shmbus.modules"
/// metadata), as a graph module -> channel -> module with a topological
/// order of the modules.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace shmbus::mcap {
struct FileInfo;
class Reader;
}  // namespace shmbus::mcap

namespace shmbus::lineage {

// The names of the recording format, defined once: the recorder writes
// them; Lineage, the bag commands and replay read them.
/// The file-only channel of shmbus_msgs/MessageProvenance records.
inline constexpr const char* kProvenanceChannel = "/shmbus/provenance";
/// Metadata: channel name -> registry index.
inline constexpr const char* kChannelIndexesMetadata = "shmbus.channel_indexes";
/// Metadata: channel name -> type name.
inline constexpr const char* kChannelTypesMetadata = "shmbus.channel_types";
/// Metadata: channel name -> {"first_publisher": id, "nodes": {"id": node}} (JSON).
inline constexpr const char* kWritersMetadata = "shmbus.writers";
/// Metadata: node -> {"reads": [...], "writes": [...]} (JSON).
inline constexpr const char* kModulesMetadata = "shmbus.modules";
/// Metadata: channel name -> messages lost while recording this file.
inline constexpr const char* kLostMetadata = "shmbus.lost";
/// Metadata: host, domain, start, recorder, part of a split.
inline constexpr const char* kRecordingMetadata = "shmbus.recording";
/// Metadata of a snapshot: why and when it was written.
inline constexpr const char* kSnapshotMetadata = "shmbus.snapshot";
/// Metadata of a step replay's output: source, live modules, frames,
/// failed frames, duration.
inline constexpr const char* kReplayMetadata = "shmbus.replay";

/// One recorded message: its channel and 64-bit sequence.
struct MessageId {
  std::string channel;
  std::uint64_t sequence = 0;
  bool operator==(const MessageId& o) const noexcept { return sequence == o.sequence && channel == o.channel; }
  bool operator<(const MessageId& o) const noexcept {
    return std::tie(channel, sequence) < std::tie(o.channel, o.sequence);
  }
};

/// Where one recorded message came from.
struct Origin {
  std::string node;  ///< the module that published it ("" when unknown)
  std::uint32_t publisher_id = 0;
  std::int64_t processing_ns = 0;
  std::vector<MessageId> inputs;
  /// The inputs' own inputs: (index in `inputs`, message).
  std::vector<std::pair<std::size_t, MessageId>> second_level;
  std::uint32_t inputs_cut = 0;
  std::uint32_t second_level_cut = 0;
};

struct ModuleNode {
  std::string name;
  std::vector<std::string> reads;   ///< sorted
  std::vector<std::string> writes;  ///< sorted
};

struct ChannelNode {
  std::string name;
  std::string type;                  ///< "" when the recording does not say
  std::vector<std::string> writers;  ///< modules, sorted
  std::vector<std::string> readers;  ///< modules, sorted
  std::uint64_t messages = 0;        ///< recorded on it (0: not recorded)
};

/// module -> channel (the module wrote `messages` of the channel's
/// recorded messages) or channel -> module (`messages` of the module's
/// recorded outputs cite the channel as an input; 0 when the module's
/// outputs were not recorded or cite nothing).
struct Edge {
  std::string from;
  std::string to;
  bool from_module = false;
  std::uint64_t messages = 0;
};

/// The modules and channels of a recording.
struct Graph {
  std::vector<ModuleNode> modules;    ///< by name
  std::vector<ChannelNode> channels;  ///< by name
  std::vector<Edge> edges;            ///< module -> channel first, then channel -> module
  /// The modules in topological order (a module after every module whose
  /// output it reads); ties by name. A cycle's members are kept together,
  /// by name, where the cycle as a whole falls in the order.
  std::vector<std::string> order;
  /// Groups of modules that feed each other (feedback loops), each sorted;
  /// a module that reads its own output is a group of one.
  std::vector<std::vector<std::string>> cycles;

  /// Graphviz (`dot -Tsvg`): modules as boxes, channels as ellipses, edges
  /// labelled with their message counts.
  [[nodiscard]] std::string dot() const;
  /// {modules: [{name, reads, writes}], channels: [{name, type, writers,
  /// readers, messages}], order, cycles, edges: [{from, to, messages}]}.
  [[nodiscard]] nlohmann::json json() const;
};

/// The topological order and the cycles of `modules` (module A before B
/// when A writes a channel B reads).
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> order_modules(
    const std::vector<ModuleNode>& modules);

/// A recording's lineage, read once from the file.
/// Thread-safety: const members may be called concurrently.
class Lineage {
 public:
  /// Reads `path`. Throws Error(kNotFound) when the file holds no topology
  /// (recorded by another tool, or before provenance was recorded), and
  /// the mcap::Reader's errors for a damaged file.
  explicit Lineage(const std::string& path);

  [[nodiscard]] const Graph& graph() const noexcept { return graph_; }
  /// The origin of a message of a recorded channel (a message with no
  /// provenance record came from the channel's first publisher, from no
  /// inputs); nullopt when the channel is not recorded.
  [[nodiscard]] std::optional<Origin> origin(const MessageId& id) const;
  /// The module that wrote channel `channel`'s publisher `publisher_id`.
  [[nodiscard]] std::string writer(const std::string& channel, std::uint32_t publisher_id) const;

 private:
  struct Record {
    std::uint32_t publisher_id = 0;
    std::int64_t processing_ns = 0;
    std::uint32_t inputs_cut = 0;
    std::uint32_t second_level_cut = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> inputs;                        ///< (channel index, sequence)
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>> second_level;  ///< (via, index, sequence)
  };
  /// What the metadata records say besides what the members keep: each
  /// module's reads and writes, each channel's type.
  struct Topology {
    std::map<std::string, std::set<std::string>> reads;
    std::map<std::string, std::set<std::string>> writes;
    std::map<std::string, std::string> types;
  };
  /// (module, channel) -> messages written, (channel, module) -> messages cited.
  using EdgeCounts = std::map<std::pair<std::string, std::string>, std::uint64_t>;
  Topology read_metadata(const mcap::FileInfo& info, const std::string& path);
  /// Fills records_; returns each recorded channel's message count.
  std::map<std::string, std::uint64_t> read_provenance(mcap::Reader& reader);
  [[nodiscard]] std::pair<EdgeCounts, EdgeCounts> edge_counts(const std::map<std::string, std::uint64_t>& counts) const;
  void build_graph(Topology& t, const std::map<std::string, std::uint64_t>& counts);
  [[nodiscard]] std::string channel_at(std::uint32_t index) const;

  Graph graph_;
  std::map<std::uint32_t, std::string> channel_names_;  ///< registry index -> name
  std::map<std::string, std::uint32_t> first_publisher_;
  std::map<std::string, std::map<std::uint32_t, std::string>> writer_nodes_;
  std::map<std::pair<std::string, std::uint64_t>, Record> records_;
};

}  // namespace shmbus::lineage
