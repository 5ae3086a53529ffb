#include "shmbus/lineage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/schema/json_input.hpp"
#include "shmbus_msgs/MessageProvenance.hpp"

namespace shmbus::lineage {

namespace {

std::vector<std::string> sorted(const std::set<std::string>& s) { return {s.begin(), s.end()}; }

/// A string as a double-quoted Graphviz ID.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

}  // namespace

namespace {

using Edges = std::vector<std::set<std::size_t>>;

/// Module graph: A -> B when A writes a channel B reads.
Edges module_edges(const std::vector<ModuleNode>& modules) {
  const std::size_t n = modules.size();
  std::map<std::string, std::vector<std::size_t>> readers_of;
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& c : modules[i].reads) readers_of[c].push_back(i);
  }
  Edges next(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& c : modules[i].writes) {
      if (auto it = readers_of.find(c); it != readers_of.end()) next[i].insert(it->second.begin(), it->second.end());
    }
  }
  return next;
}

/// Strongly connected components (Tarjan) with an explicit stack of
/// frames, not recursion: the graph comes from a file, and a chain of a
/// million modules must not overflow the thread's stack. Returns each
/// vertex's component and the number of components.
std::pair<std::vector<std::size_t>, std::size_t> strongly_connected(const Edges& next) {
  const std::size_t n = next.size();
  std::vector<std::size_t> index(n, SIZE_MAX);
  std::vector<std::size_t> low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<std::size_t> stack;
  std::vector<std::size_t> component(n, 0);
  std::size_t components = 0;
  std::size_t counter = 0;
  std::vector<std::pair<std::size_t, std::set<std::size_t>::const_iterator>> frames;
  const auto enter = [&](std::size_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    frames.emplace_back(v, next[v].begin());
  };
  for (std::size_t root = 0; root < n; ++root) {
    if (index[root] != SIZE_MAX) continue;
    enter(root);
    while (!frames.empty()) {
      const std::size_t v = frames.back().first;
      auto& it = frames.back().second;
      if (it != next[v].end()) {
        const std::size_t w = *it++;
        if (index[w] == SIZE_MAX) {
          enter(w);  // invalidates `it`; the loop takes the new top
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::size_t w = 0;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
        } while (w != v);
        ++components;
      }
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[v]);
    }
  }
  return {component, components};
}

}  // namespace

std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> order_modules(
    const std::vector<ModuleNode>& modules) {
  const std::size_t n = modules.size();
  const Edges next = module_edges(modules);
  const auto [component, components] = strongly_connected(next);
  std::vector<std::vector<std::size_t>> members(components);
  for (std::size_t v = 0; v < n; ++v) members[component[v]].push_back(v);  // by name: modules are sorted
  std::vector<std::vector<std::string>> cycles;
  std::vector<std::set<std::size_t>> cnext(components);
  std::vector<std::size_t> indegree(components, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (const std::size_t w : next[v]) {
      if (component[v] != component[w] && cnext[component[v]].insert(component[w]).second) ++indegree[component[w]];
    }
  }
  for (std::size_t c = 0; c < components; ++c) {
    const auto& m = members[c];
    if (m.size() > 1 || next[m[0]].count(m[0]) != 0) {
      std::vector<std::string> names;
      for (const std::size_t v : m) names.push_back(modules[v].name);
      cycles.push_back(std::move(names));
    }
  }
  // Kahn on the components, the ready one with the first name first.
  const auto first_name = [&](std::size_t c) { return modules[members[c].front()].name; };
  const auto later = [&](std::size_t a, std::size_t b) { return first_name(a) > first_name(b); };
  std::vector<std::size_t> ready;
  for (std::size_t c = 0; c < components; ++c) {
    if (indegree[c] == 0) ready.push_back(c);
  }
  std::vector<std::string> order;
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), later);
    const std::size_t c = ready.back();
    ready.pop_back();
    for (const std::size_t v : members[c]) order.push_back(modules[v].name);
    for (const std::size_t d : cnext[c]) {
      if (--indegree[d] == 0) ready.push_back(d);
    }
  }
  std::sort(cycles.begin(), cycles.end());
  return {order, cycles};
}

Lineage::Lineage(const std::string& path) {
  mcap::Reader reader(path);
  Topology topology = read_metadata(reader.info(), path);
  const std::map<std::string, std::uint64_t> counts = read_provenance(reader);
  build_graph(topology, counts);
}

Lineage::Topology Lineage::read_metadata(const mcap::FileInfo& info, const std::string& path) {
  Topology t;
  auto& reads = t.reads;
  auto& writes = t.writes;
  auto& types = t.types;
  bool has_topology = false;
  for (const mcap::Metadata& m : info.metadata) {
    try {
      // A split recording repeats them in every part; the last one is the
      // most complete.
      if (m.name == kChannelIndexesMetadata) {
        for (const auto& [name, index] : m.values) channel_names_[static_cast<std::uint32_t>(std::stoul(index))] = name;
      } else if (m.name == kChannelTypesMetadata) {
        for (const auto& [name, type] : m.values) types[name] = type;
      } else if (m.name == kWritersMetadata) {
        for (const auto& [name, value] : m.values) {
          const auto j = schema::parse_json<nlohmann::json>(value);
          first_publisher_[name] = schema::unsigned_value<std::uint32_t>(j.at("first_publisher"), "first_publisher");
          for (const auto& [id, node] : j.at("nodes").items()) {
            writer_nodes_[name][static_cast<std::uint32_t>(std::stoul(id))] = node.get<std::string>();
          }
        }
      } else if (m.name == kModulesMetadata) {
        has_topology = true;
        for (const auto& [node, value] : m.values) {
          const auto j = schema::parse_json<nlohmann::json>(value);
          for (const auto& c : j.at("reads")) reads[node].insert(c.get<std::string>());
          for (const auto& c : j.at("writes")) writes[node].insert(c.get<std::string>());
        }
      }
    } catch (const std::exception& e) {
      // Another writer's file, or a damaged one: std::stoul, the JSON
      // parser and at() all end here, with the record named.
      throw Error(Errc::kLayoutMismatch, fmt::format("{}: metadata record \"{}\" is malformed ({}); the file is "
                                                     "damaged or was not written by shmtool record",
                                                     path, m.name, e.what()));
    }
  }
  if (!has_topology) {
    throw Error(Errc::kNotFound, fmt::format("{} holds no module topology (metadata {}); record it with shmtool "
                                             "record, which writes it",
                                             path, kModulesMetadata));
  }
  return t;
}

std::map<std::string, std::uint64_t> Lineage::read_provenance(mcap::Reader& reader) {
  const mcap::FileInfo& info = reader.info();
  std::map<std::uint16_t, std::string> recorded;  // MCAP channel id -> name
  std::optional<std::uint16_t> provenance_id;
  for (const mcap::Channel& c : info.channels) {
    if (c.topic == kProvenanceChannel) {
      provenance_id = c.id;
    } else {
      recorded[c.id] = c.topic;
    }
  }
  std::map<std::string, std::uint64_t> counts;
  for (const auto& [id, n] : info.statistics.channel_message_counts) {
    if (auto it = recorded.find(id); it != recorded.end()) counts[it->second] += n;
  }
  if (provenance_id) {
    reader.read_messages([&](const mcap::MessageView& m) {
      if (m.channel_id != *provenance_id || m.data.size() != sizeof(shmbus_msgs::MessageProvenance)) return true;
      shmbus_msgs::MessageProvenance p{};
      std::memcpy(&p, m.data.data(), sizeof p);
      Record r;
      r.publisher_id = p.publisher_id;
      r.processing_ns = p.processing_ns;
      r.inputs_cut = p.inputs_cut;
      r.second_level_cut = p.second_level_cut;
      const std::size_t entries = std::min<std::size_t>(p.entry_count, p.entries.size());
      const std::size_t inputs = std::min<std::size_t>(p.input_count, entries);
      for (std::size_t k = 0; k < entries; ++k) {
        const auto& e = p.entries[k];
        if (k < inputs) {
          r.inputs.emplace_back(e.channel_index, e.sequence);
        } else {
          r.second_level.emplace_back(e.via, e.channel_index, e.sequence);
        }
      }
      records_[{channel_at(p.channel_index), p.sequence}] = std::move(r);
      return true;
    });
  }
  return counts;
}

std::pair<Lineage::EdgeCounts, Lineage::EdgeCounts> Lineage::edge_counts(
    const std::map<std::string, std::uint64_t>& counts) const {
  // Edges with their counts: a message's module is its record's publisher,
  // else the channel's first publisher.
  std::map<std::pair<std::string, std::string>, std::uint64_t> written;  // (module, channel)
  std::map<std::pair<std::string, std::string>, std::uint64_t> cited;    // (channel, module)
  std::map<std::string, std::uint64_t> not_first;                        // channel -> messages
  for (const auto& [id, r] : records_) {
    const std::string node = writer(id.first, r.publisher_id);
    if (auto it = first_publisher_.find(id.first); it == first_publisher_.end() || it->second != r.publisher_id) {
      ++written[{node, id.first}];
      ++not_first[id.first];
    }
    std::set<std::string> cited_channels;
    for (const auto& [index, seq] : r.inputs) cited_channels.insert(channel_at(index));
    for (const auto& c : cited_channels) ++cited[{c, node}];
  }
  for (const auto& [channel, first] : first_publisher_) {
    const auto n = counts.find(channel);
    written[{writer(channel, first), channel}] += (n != counts.end() ? n->second : 0) - not_first[channel];
  }
  return {written, cited};
}

void Lineage::build_graph(Topology& t, const std::map<std::string, std::uint64_t>& counts) {
  auto& reads = t.reads;
  auto& writes = t.writes;
  auto [written, cited] = edge_counts(counts);
  // Writers seen in the traffic belong to the topology even when the
  // endpoint scans missed them (a module that lived less than a second).
  for (const auto& [key, n] : written) {
    if (!key.first.empty() && n != 0) writes[key.first].insert(key.second);
  }
  std::set<std::string> module_names;
  for (const auto& [node, _] : reads) module_names.insert(node);
  for (const auto& [node, _] : writes) module_names.insert(node);
  std::map<std::string, ChannelNode> channels;
  for (const auto& node : module_names) {
    ModuleNode mn{node, sorted(reads[node]), sorted(writes[node])};
    for (const auto& c : mn.reads) channels[c].readers.push_back(node);
    for (const auto& c : mn.writes) channels[c].writers.push_back(node);
    graph_.modules.push_back(std::move(mn));
  }
  for (const auto& [name, n] : counts) channels[name].messages = n;
  for (const auto& [name, _] : first_publisher_) channels.try_emplace(name);  // written, none recorded: 0
  for (auto& [name, c] : channels) {
    c.name = name;
    if (auto it = t.types.find(name); it != t.types.end()) c.type = it->second;
    graph_.channels.push_back(std::move(c));
  }
  for (const ModuleNode& m : graph_.modules) {
    for (const auto& c : m.writes) graph_.edges.push_back({m.name, c, true, written[{m.name, c}]});
  }
  for (const ModuleNode& m : graph_.modules) {
    for (const auto& c : m.reads) graph_.edges.push_back({c, m.name, false, cited[{c, m.name}]});
  }
  std::tie(graph_.order, graph_.cycles) = order_modules(graph_.modules);
}

std::string Lineage::channel_at(std::uint32_t index) const {
  auto it = channel_names_.find(index);
  return it != channel_names_.end() ? it->second : fmt::format("#{}", index);
}

std::string Lineage::writer(const std::string& channel, std::uint32_t publisher_id) const {
  auto c = writer_nodes_.find(channel);
  if (c == writer_nodes_.end()) return "";
  auto it = c->second.find(publisher_id);
  return it != c->second.end() ? it->second : "";
}

std::optional<Origin> Lineage::origin(const MessageId& id) const {
  auto first = first_publisher_.find(id.channel);
  if (first == first_publisher_.end()) return std::nullopt;
  Origin o;
  auto it = records_.find({id.channel, id.sequence});
  if (it == records_.end()) {
    o.publisher_id = first->second;
    o.node = writer(id.channel, o.publisher_id);
    return o;
  }
  const Record& r = it->second;
  o.publisher_id = r.publisher_id;
  o.node = writer(id.channel, r.publisher_id);
  o.processing_ns = r.processing_ns;
  o.inputs_cut = r.inputs_cut;
  o.second_level_cut = r.second_level_cut;
  for (const auto& [index, seq] : r.inputs) o.inputs.push_back({channel_at(index), seq});
  for (const auto& [via, index, seq] : r.second_level)
    o.second_level.emplace_back(via, MessageId{channel_at(index), seq});
  return o;
}

std::string Graph::dot() const {
  std::string out = "digraph shmbus {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n";
  for (const ModuleNode& m : modules) {
    out += fmt::format("  {} [label={}, shape=box, style=\"rounded,filled\", fillcolor=\"#dbe9f6\"];\n",
                       quoted("m:" + m.name), quoted(m.name));
  }
  for (const ChannelNode& c : channels) {
    out += fmt::format("  {} [label={}, shape=ellipse];\n", quoted("c:" + c.name),
                       quoted(c.type.empty() ? c.name : c.name + "\\n" + c.type));
  }
  for (const Edge& e : edges) {
    out += fmt::format("  {} -> {} [label=\"{}\"];\n", quoted((e.from_module ? "m:" : "c:") + e.from),
                       quoted((e.from_module ? "c:" : "m:") + e.to), e.messages);
  }
  return out + "}\n";
}

nlohmann::json Graph::json() const {
  nlohmann::json j;
  j["modules"] = nlohmann::json::array();
  for (const ModuleNode& m : modules)
    j["modules"].push_back({{"name", m.name}, {"reads", m.reads}, {"writes", m.writes}});
  j["channels"] = nlohmann::json::array();
  for (const ChannelNode& c : channels) {
    j["channels"].push_back(
        {{"name", c.name}, {"type", c.type}, {"writers", c.writers}, {"readers", c.readers}, {"messages", c.messages}});
  }
  j["order"] = order;
  j["cycles"] = cycles;
  j["edges"] = nlohmann::json::array();
  for (const Edge& e : edges) j["edges"].push_back({{"from", e.from}, {"to", e.to}, {"messages", e.messages}});
  return j;
}

}  // namespace shmbus::lineage
