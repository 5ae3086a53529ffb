// Provenance in recordings and the module graph, end to end: the pipeline
// example's four modules as real processes, recorded by a real shmtool
// record, read back by shmtool bag graph (and Graphviz's dot).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "support/test_domain.hpp"
#include "tools/shmtool_harness.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using shmbus::test::ChildProcess;
using namespace shmbus::test::tool;

namespace {

const std::string kPipeline = SHMBUS_EXAMPLE_PIPELINE;
constexpr int kFrames = 60;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".mcap")).string();
}

/// One recording of the live pipeline for the whole suite: the recorder
/// starts first (every channel then appears while it records and is read
/// from its first message), the modules subscribe, then the sensors send
/// kFrames frames.
class ShmtoolLineage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    domain_ = std::make_unique<DomainGuard>();
    recording_ = temp_path("lineage");
    const std::string& d = domain_->name;
    auto recorder = start_tool({"record", "--all", "-o", recording_}, d);
    ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
    const std::vector<std::string> env{"SHMBUS_DOMAIN=" + d};
    std::vector<std::unique_ptr<ChildProcess>> modules;
    for (const char* m : {"m1", "m2", "m3"}) {
      modules.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{kPipeline, "--module", m, "--rate", "100"}, true, env));
    }
    // m1 and m2 and the recorder read each of their inputs before a frame
    // is sent; m3 writes c6 from the start.
    for (const char* c : {"/pipeline/c1", "/pipeline/c2", "/pipeline/c3", "/pipeline/c4", "/pipeline/c6"}) {
      shmbus::test::wait_for_subscribers(d, c, 2);
    }
    ChildProcess sensors({kPipeline, "--module", "sensors", "--rate", "100", "--count", std::to_string(kFrames)}, true,
                         env);
    ASSERT_TRUE(exited_zero(sensors.wait(30s))) << sensors.output();
    wait_for_stamps(d, "/pipeline/c5", kFrames);
    std::this_thread::sleep_for(1200ms);  // one endpoint scan after the last frame
    recorder->signal(SIGINT);
    ASSERT_TRUE(exited_zero(recorder->wait(30s))) << recorder->output();
    for (auto& m : modules) {
      m->signal(SIGTERM);
      EXPECT_TRUE(exited_zero(m->wait(10s))) << m->output();
    }
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(recording_);
    domain_.reset();
  }

  static std::unique_ptr<DomainGuard> domain_;
  static std::string recording_;
};
std::unique_ptr<DomainGuard> ShmtoolLineage::domain_;
std::string ShmtoolLineage::recording_;

std::size_t position(const json& order, const std::string& module) {
  const auto it = std::find(order.begin(), order.end(), module);
  return static_cast<std::size_t>(it - order.begin());
}

}  // namespace

TEST_F(ShmtoolLineage, GraphJsonIsThePipelinesTopology) {
  const ToolRun r = shmtool({"bag", "graph", recording_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json g = json::parse(r.out);
  const json expected_modules = json::parse(R"([
    {"name": "m1", "reads": ["/pipeline/c1", "/pipeline/c2"], "writes": ["/pipeline/c3"]},
    {"name": "m2", "reads": ["/pipeline/c3", "/pipeline/c4", "/pipeline/c6"], "writes": ["/pipeline/c5"]},
    {"name": "m3", "reads": [], "writes": ["/pipeline/c6"]},
    {"name": "sensors", "reads": [], "writes": ["/pipeline/c1", "/pipeline/c2", "/pipeline/c4"]}])");
  EXPECT_EQ(g["modules"], expected_modules) << g.dump(2);
  EXPECT_EQ(g["cycles"], json::array());
  const json& order = g["order"];
  ASSERT_EQ(order.size(), 4U);
  EXPECT_LT(position(order, "sensors"), position(order, "m1"));
  EXPECT_LT(position(order, "m1"), position(order, "m2"));
  EXPECT_LT(position(order, "m3"), position(order, "m2"));
  ASSERT_EQ(g["channels"].size(), 6U);
  for (const json& c : g["channels"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(c["type"], "pipeline_msgs/Sample");
    EXPECT_EQ(c["writers"].size(), 1U);
  }
  // Edge counts: every frame's c3 came from m1 and cites one c1 and one c2.
  const auto edge = [&](const std::string& from, const std::string& to) -> std::uint64_t {
    for (const json& e : g["edges"]) {
      if (e["from"] == from && e["to"] == to) return e["messages"].get<std::uint64_t>();
    }
    ADD_FAILURE() << "no edge " << from << " -> " << to;
    return 0;
  };
  EXPECT_EQ(edge("sensors", "/pipeline/c1"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("m1", "/pipeline/c3"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("m2", "/pipeline/c5"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("/pipeline/c1", "m1"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("/pipeline/c2", "m1"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("/pipeline/c3", "m2"), static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(edge("/pipeline/c4", "m2"), static_cast<std::uint64_t>(kFrames / 2));
}

TEST_F(ShmtoolLineage, EachRecordedMessageKnowsItsModuleAndBothLevelsOfInputs) {
  const shmbus::lineage::Lineage lineage(recording_);
  for (std::uint64_t seq = 0; seq < kFrames; ++seq) {
    const auto c5 = lineage.origin({"/pipeline/c5", seq});
    ASSERT_TRUE(c5.has_value());
    EXPECT_EQ(c5->node, "m2");
    ASSERT_GE(c5->inputs.size(), 1U);
    EXPECT_EQ(c5->inputs[0], (shmbus::lineage::MessageId{"/pipeline/c3", seq}));  // the trigger first
    EXPECT_GT(c5->processing_ns, 0);
    // c3's own inputs, one step further back: c1 and c2 of the same frame.
    std::vector<shmbus::lineage::MessageId> second;
    for (const auto& [via, id] : c5->second_level) {
      if (via == 0) second.push_back(id);
    }
    const std::vector<shmbus::lineage::MessageId> expected{{"/pipeline/c1", seq}, {"/pipeline/c2", seq}};
    EXPECT_EQ(second, expected) << "frame " << seq;
  }
  const auto c1 = lineage.origin({"/pipeline/c1", 3});
  ASSERT_TRUE(c1.has_value());
  EXPECT_EQ(c1->node, "sensors");
  EXPECT_TRUE(c1->inputs.empty());
  EXPECT_FALSE(lineage.origin({"/not/recorded", 0}).has_value());
}

TEST_F(ShmtoolLineage, DotRendersWithGraphviz) {
  const ToolRun r = shmtool({"bag", "graph", recording_, "--dot"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"m:m1\" -> \"c:/pipeline/c3\" [label=\"60\"]"), std::string::npos) << r.out;
  const std::string dot_file = temp_path("graph") + ".dot";
  const std::string svg_file = dot_file + ".svg";
  std::ofstream(dot_file) << r.out;
  ChildProcess dot({"/usr/bin/dot", "-Tsvg", dot_file, "-o", svg_file}, true);
  ASSERT_TRUE(exited_zero(dot.wait(30s))) << dot.output();
  std::ifstream svg(svg_file);
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("/pipeline/c5"), std::string::npos);
  std::filesystem::remove(dot_file);
  std::filesystem::remove(svg_file);
}

TEST(ShmtoolLineageInput, AFileWithoutTopologyIsNotFoundWithOneLine) {
  const std::string path = temp_path("no_topology");
  {
    shmbus::mcap::Writer w(path);
    w.close();
  }
  const ToolRun r = shmtool({"bag", "graph", path});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("no module topology"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove(path);
}

TEST(ShmtoolLineageInput, FeedbackLoopsAreReportedAndKeptTogetherInTheOrder) {
  using shmbus::lineage::ModuleNode;
  // planner and controller feed each other; logger reads the controller.
  const std::vector<ModuleNode> modules{{"controller", {"/plan"}, {"/cmd"}},
                                        {"logger", {"/cmd"}, {}},
                                        {"planner", {"/cmd", "/map"}, {"/plan"}},
                                        {"mapper", {}, {"/map"}}};
  const auto [order, cycles] = shmbus::lineage::order_modules(modules);
  EXPECT_EQ(order, (std::vector<std::string>{"mapper", "controller", "planner", "logger"}));
  ASSERT_EQ(cycles.size(), 1U);
  EXPECT_EQ(cycles[0], (std::vector<std::string>{"controller", "planner"}));
}
