// shmtool bag graph: a recording's modules and channels (shmbus::lineage).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/lineage.hpp"

namespace shmbus::tool {

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

}  // namespace shmbus::tool
