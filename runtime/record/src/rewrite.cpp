#include "shmbus/record/rewrite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "progress.hpp"
#include "shmbus/error.hpp"
#include "shmbus/record/recording.hpp"
#include "shmbus/schema/json_input.hpp"

namespace shmbus::record {

namespace {

using Json = nlohmann::json;

bool is_topology(const std::string& name) {
  return name == kChannelIndexesMetadata || name == kChannelTypesMetadata || name == kWritersMetadata ||
         name == kModulesMetadata;
}

/// The module topology of several recordings as one: channel names keep the
/// registry index they had first; a channel whose index another channel
/// already holds gets the next free one (its provenance is renumbered to
/// match); types, writers and modules are the union.
class MergedTopology {
 public:
  /// Adds one file's topology; returns its index renumbering (old -> new,
  /// only where they differ).
  std::map<std::uint32_t, std::uint32_t> add(const mcap::FileInfo& info) {
    std::map<std::string, std::uint32_t> file_indexes;
    for (const mcap::Metadata& m : info.metadata) {
      if (!is_topology(m.name)) continue;
      any_ = true;
      try {
        add_record(m, file_indexes);
      } catch (const std::exception& e) {
        throw Error(Errc::kLayoutMismatch, fmt::format("{}: metadata record \"{}\" is malformed ({}); the file is "
                                                       "damaged or was not written by shmtool record",
                                                       info.path, m.name, e.what()));
      }
    }
    std::map<std::uint32_t, std::uint32_t> renumber;
    for (const auto& [name, index] : file_indexes) {
      std::uint32_t to = index;
      if (const auto it = indexes_.find(name); it != indexes_.end()) {
        to = it->second;
      } else {
        if (used_.contains(index)) to = *used_.rbegin() + 1;
        indexes_[name] = to;
        used_.insert(to);
      }
      if (to != index) renumber[index] = to;
    }
    renumbered_ += renumber.size();
    return renumber;
  }

  /// The merged records (none when no input had a topology).
  [[nodiscard]] std::vector<mcap::Metadata> records() const {
    if (!any_) return {};
    mcap::KeyValues indexes;
    mcap::KeyValues types(types_.begin(), types_.end());
    mcap::KeyValues writers;
    mcap::KeyValues modules;
    for (const auto& [name, index] : indexes_) indexes.emplace_back(name, std::to_string(index));
    for (const auto& [name, w] : writers_) writers.emplace_back(name, w.dump());
    for (const auto& [node, rw] : modules_) {
      modules.emplace_back(node, Json{{"reads", rw.first}, {"writes", rw.second}}.dump());
    }
    return {{kChannelIndexesMetadata, std::move(indexes)},
            {kChannelTypesMetadata, std::move(types)},
            {kWritersMetadata, std::move(writers)},
            {kModulesMetadata, std::move(modules)}};
  }

  [[nodiscard]] std::uint64_t renumbered() const noexcept { return renumbered_; }

 private:
  void add_record(const mcap::Metadata& m, std::map<std::string, std::uint32_t>& file_indexes) {
    for (const auto& [key, value] : m.values) {
      if (m.name == kChannelIndexesMetadata) {
        // A split recording repeats it in every part: the last one counts.
        file_indexes[key] = static_cast<std::uint32_t>(std::stoul(value));
      } else if (m.name == kChannelTypesMetadata) {
        types_.emplace(key, value);
      } else if (m.name == kWritersMetadata) {
        const auto j = schema::parse_json<Json>(value);
        auto [it, fresh] = writers_.emplace(key, j);
        if (!fresh) {
          for (const auto& [id, node] : j.at("nodes").items()) {
            if (!it->second["nodes"].contains(id)) it->second["nodes"][id] = node;
          }
        }
      } else {
        const auto j = schema::parse_json<Json>(value);
        auto& [reads, writes] = modules_[key];
        for (const auto& c : j.at("reads")) reads.insert(c.get<std::string>());
        for (const auto& c : j.at("writes")) writes.insert(c.get<std::string>());
      }
    }
  }

  bool any_ = false;
  std::uint64_t renumbered_ = 0;
  std::map<std::string, std::uint32_t> indexes_;
  std::set<std::uint32_t> used_;
  std::map<std::string, std::string> types_;
  std::map<std::string, Json> writers_;
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> modules_;
};

/// One input file and where its channels go.
struct Input {
  std::unique_ptr<mcap::Reader> reader;
  std::map<std::uint16_t, std::uint16_t> channel_out;  ///< selected channels: input id -> output id
  std::optional<std::uint16_t> provenance;             ///< its provenance channel's id
  std::map<std::uint32_t, std::uint32_t> renumber;     ///< registry indexes that change
  mcap::MessageView head;                              ///< its next message
  bool has_head = false;

  void advance() { has_head = reader->next_message(head); }
};

/// A provenance record with its registry indexes renumbered (in `out`).
std::span<const std::byte> renumbered(std::span<const std::byte> data,
                                      const std::map<std::uint32_t, std::uint32_t>& renumber,
                                      shmbus_msgs::MessageProvenance& out) {
  if (data.size() != sizeof out) return data;  // not one the recorder wrote: as it is
  std::memcpy(&out, data.data(), sizeof out);
  auto map = [&](std::uint32_t& index) {
    if (const auto it = renumber.find(index); it != renumber.end()) index = it->second;
  };
  map(out.channel_index);
  for (std::size_t k = 0; k < std::min<std::size_t>(out.entry_count, out.entries.size()); ++k) {
    map(out.entries[k].channel_index);
  }
  return std::as_bytes(std::span{&out, 1});
}

/// Output channels, one per (topic, schema, encoding) of the inputs.
class ChannelMap {
 public:
  explicit ChannelMap(mcap::Writer& w) : w_(w) {}

  std::uint16_t channel(const mcap::FileInfo& info, const mcap::Channel& c) {
    const mcap::Schema* s = info.schema(c.schema_id);
    std::uint16_t schema_id = 0;
    if (s != nullptr) {
      const auto key = std::make_tuple(s->name, s->encoding, s->data);
      auto it = schemas_.find(key);
      if (it == schemas_.end()) it = schemas_.emplace(key, w_.add_schema(s->name, s->encoding, s->data)).first;
      schema_id = it->second;
    }
    const auto key = std::make_tuple(c.topic, schema_id, c.message_encoding);
    auto it = channels_.find(key);
    if (it == channels_.end()) {
      it = channels_.emplace(key, w_.add_channel(schema_id, c.topic, c.message_encoding, c.metadata)).first;
    }
    return it->second;
  }

  [[nodiscard]] std::size_t size() const noexcept { return channels_.size(); }

 private:
  mcap::Writer& w_;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint16_t> schemas_;
  std::map<std::tuple<std::string, std::uint16_t, std::string>, std::uint16_t> channels_;
};

/// The input whose next message comes first (the earlier file on a tie).
Input* earliest(std::vector<Input>& inputs) {
  Input* first = nullptr;
  for (Input& in : inputs) {
    if (in.has_head && (first == nullptr || in.head.log_time < first->head.log_time)) first = &in;
  }
  return first;
}

void refuse_same_file(const std::vector<std::string>& inputs, const std::string& output) {
  std::error_code ec;
  for (const std::string& in : inputs) {
    if (in == output || std::filesystem::equivalent(in, output, ec)) {
      throw Error(Errc::kInvalidArgument, "-o " + output + " is one of the inputs; name a new file");
    }
  }
}

}  // namespace

RewriteReport rewrite(const std::vector<std::string>& inputs, const std::string& output, const RewriteOptions& o) {
  if (inputs.empty()) throw Error(Errc::kInvalidArgument, "no input recording to write " + output + " from");
  refuse_same_file(inputs, output);
  std::vector<Input> in(inputs.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in[i].reader = std::make_unique<mcap::Reader>(inputs[i]);
    total += in[i].reader->info().statistics.message_count;
  }
  ProgressReporter progress(o.progress, total);
  const mcap::FileInfo& first = in.front().reader->info();
  mcap::WriterOptions w;
  w.profile = first.profile;
  w.library = o.library;
  w.compression = o.compression.value_or(mcap::parse_compression(first.compression).value_or(mcap::Compression::kZstd));
  w.chunk_size = o.chunk_size;
  mcap::Writer writer(output, w);
  ChannelMap channels(writer);
  MergedTopology topology;
  for (Input& input : in) {
    const mcap::FileInfo& info = input.reader->info();
    input.renumber = topology.add(info);
    for (const mcap::Channel& c : info.channels) {
      if (c.topic == kProvenanceChannel) input.provenance = c.id;
      if (selected(o.channels, o.exclude, c.topic)) input.channel_out[c.id] = channels.channel(info, c);
    }
    for (const mcap::Metadata& m : info.metadata) {
      if (!is_topology(m.name)) writer.write_metadata(m);
    }
    input.advance();
  }
  for (const mcap::Metadata& m : topology.records()) writer.write_metadata(m);

  RewriteReport report;
  shmbus_msgs::MessageProvenance scratch{};
  while (Input* next = earliest(in)) {
    const mcap::MessageView& m = next->head;
    const auto out = next->channel_out.find(m.channel_id);
    if (out != next->channel_out.end() && m.log_time >= o.begin_ns && m.log_time < o.end_ns) {
      std::span<const std::byte> data = m.data;
      if (!next->renumber.empty() && m.channel_id == next->provenance) data = renumbered(data, next->renumber, scratch);
      writer.write({out->second, m.sequence, m.log_time, m.publish_time, data});
      ++report.messages;
    }
    progress.read_one(writer);
    next->advance();
  }
  writer.close();
  report.channels = channels.size();
  report.bytes = writer.bytes();
  report.renumbered = topology.renumbered();
  progress.done(report.bytes);
  return report;
}

}  // namespace shmbus::record
