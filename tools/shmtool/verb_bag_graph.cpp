// shmtool bag graph and bag diff: a recording's modules and channels
// (shmbus::lineage), and two recordings of one channel compared frame by
// frame.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/error.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/record/recording.hpp"

namespace shmbus::tool {

using namespace record;  // NOLINT(google-build-using-namespace): the recording names

int run_bag_graph(const Globals& g, const std::string& path, bool dot) {
  const lineage::Lineage lineage(path);
  const lineage::Graph& graph = lineage.graph();
  if (g.json) {
    print(graph.json().dump(2) + "\n");
    return 0;
  }
  if (dot) {
    print(graph.dot());
    return 0;
  }
  std::string out =
      fmt::format("{} modules, {} channels; in topological order:\n", graph.modules.size(), graph.channels.size());
  for (const std::string& name : graph.order) {
    const auto& m = *std::find_if(graph.modules.begin(), graph.modules.end(),
                                  [&](const lineage::ModuleNode& n) { return n.name == name; });
    out += fmt::format("  {}: reads {}, writes {}\n", m.name,
                       m.reads.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(m.reads, " ")),
                       m.writes.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(m.writes, " ")));
  }
  for (const auto& cycle : graph.cycles) {
    out += fmt::format("feedback loop: {} (replayed in that order, each reading the others' previous outputs)\n",
                       fmt::join(cycle, " -> "));
  }
  Table t({"FROM", "TO", "MESSAGES>"});
  for (const lineage::Edge& e : graph.edges) t.add({e.from, e.to, std::to_string(e.messages)});
  out += "edges:\n" + t.render(2);
  print(out);
  return 0;
}

namespace {

/// One channel of a recording: sequence -> payload, and its type.
struct ChannelFrames {
  std::map<std::uint64_t, std::vector<std::byte>> frames;
  std::optional<TypeInfo> type;
};

ChannelFrames frames_of(const std::string& path, const std::string& channel) {
  mcap::Reader reader(path);
  ChannelFrames out;
  std::optional<std::uint16_t> id;
  for (const mcap::Channel& c : reader.info().channels) {
    if (c.topic == channel) {
      id = c.id;
      out.type = recorded_type(reader.info(), c);
    }
  }
  if (!id) return out;
  reader.read_messages([&](const mcap::MessageView& m) {
    if (m.channel_id == *id) out.frames[m.sequence].assign(m.data.begin(), m.data.end());
    return true;
  });
  return out;
}

/// The first field where `a` and `b` differ ("" when they do not), as a
/// path: "pose.position.x", "ranges[3]".
std::string first_difference(const schema::Json& a, const schema::Json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items()) {
      std::string p = path;
      if (!p.empty()) p += '.';
      p += key;
      if (!b.contains(key)) return p;
      if (std::string d = first_difference(value, b.at(key), p); !d.empty()) return d;
    }
    return a.size() == b.size() ? "" : path;
  }
  if (a.is_array() && b.is_array()) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (std::string d = first_difference(a[i], b[i], fmt::format("{}[{}]", path, i)); !d.empty()) return d;
    }
    return a.size() == b.size() ? "" : path;
  }
  return a == b ? "" : (path.empty() ? "(message)" : path);
}

/// The value at `path` (as first_difference names it).
schema::Json value_at(const schema::Json& j, const std::string& path) {
  try {
    std::string pointer;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const char c = path[i];
      pointer += c == '.' || c == '[' ? '/' : c;
      if (c == '[') {
        const std::size_t end = path.find(']', i);
        pointer += path.substr(i + 1, end - i - 1);
        i = end;
      }
    }
    return j.at(schema::Json::json_pointer("/" + pointer));
  } catch (const std::exception&) {
    return j;
  }
}

}  // namespace

int run_bag_diff(const Globals& g, const std::string& a_path, const std::string& b_path, const std::string& channel) {
  const ChannelFrames a = frames_of(a_path, channel);
  const ChannelFrames b = frames_of(b_path, channel);
  if (!a.type && !b.type) {
    throw Error(Errc::kNotFound,
                fmt::format("bag diff: neither {} nor {} recorded {}; see shmtool bag info", a_path, b_path, channel));
  }
  const std::optional<schema::Schema> schema = schema::Schema::of(a.type ? *a.type : *b.type);
  std::uint64_t matched = 0;
  std::uint64_t equal = 0;
  std::uint64_t missing = 0;
  schema::Json differences = schema::Json::array();
  for (const auto& [seq, bytes] : a.frames) {
    auto it = b.frames.find(seq);
    if (it == b.frames.end()) {
      ++missing;
      continue;
    }
    ++matched;
    if (bytes == it->second) {
      ++equal;
      continue;
    }
    schema::Json d{{"sequence", seq}};
    if (schema) {
      try {
        const schema::Json ja = schema->decode(bytes);
        const schema::Json jb = schema->decode(it->second);
        const std::string field = first_difference(ja, jb, "");
        d["field"] = field;
        d["a"] = value_at(ja, field);
        d["b"] = value_at(jb, field);
      } catch (const schema::CodecError& e) {
        d["field"] = fmt::format("(undecodable: {})", e.what());
      }
    } else {
      d["field"] = "(bytes)";
    }
    differences.push_back(std::move(d));
  }
  std::uint64_t extra = 0;
  for (const auto& [seq, bytes] : b.frames) extra += a.frames.count(seq) == 0 ? 1 : 0;
  const std::uint64_t different = matched - equal;
  if (g.json) {
    print(schema::Json{{"channel", channel},
                       {"matched", matched},
                       {"equal", equal},
                       {"different", different},
                       {"missing", missing},
                       {"extra", extra},
                       {"differences", differences}}
              .dump(2) +
          "\n");
    return 0;
  }
  std::string out = fmt::format("{}: {} frames matched, {} equal, {} different, {} missing from {}, {} only in {}\n",
                                channel, matched, equal, different, missing, b_path, extra, b_path);
  std::size_t shown = 0;
  for (const schema::Json& d : differences) {
    if (++shown > 20) {
      out += fmt::format("  ... and {} more (--json lists all)\n", differences.size() - 20);
      break;
    }
    out += fmt::format("  #{}: {}: {} -> {}\n", d["sequence"].get<std::uint64_t>(), d.value("field", ""),
                       d.value("a", schema::Json()).dump(), d.value("b", schema::Json()).dump());
  }
  print(out);
  return 0;
}

}  // namespace shmbus::tool
