// Provenance in recordings and the module graph, end to end: the pipeline
// example's four modules as real processes, recorded by a real shmtool
// record, read back by shmtool bag graph (and Graphviz's dot).
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus_msgs/MessageProvenance.hpp"
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

/// The configuration every process of these tests runs with (recorder,
/// modules, player). A channel's stall_timeout is how long its readers let
/// a writer stay mid-message before they count the message lost: at the
/// default 2 ms, a module descheduled between claiming and committing
/// (two CPU hogs on two cores do that) lost a trigger for its reader, and
/// a frame then failed. The rings hold 10 s of frames, so a recorder
/// descheduled on a busy machine catches up instead of losing one.
const std::string& lineage_config() {
  static const std::string path = [] {
    std::string p = temp_path("lineage_config") + ".toml";
    std::ofstream(p) << "[defaults]\nstall_timeout = \"1s\"\ncapacity = 1024\n";
    return p;
  }();
  return path;
}

/// One recording of the live pipeline for the whole suite: the recorder
/// starts first (every channel then appears while it records and is read
/// from its first message), the modules subscribe, then the sensors send
/// kFrames frames.
class ShmtoolLineage : public ::testing::Test {
 protected:
  /// Records once, in the first test, so a failure to record fails that
  /// test (and the others say so) instead of skipping them all.
  void SetUp() override {
    if (!attempted_) {
      attempted_ = true;
      record();
      recorded_ = !HasFatalFailure();
    }
    ASSERT_TRUE(recorded_) << "recording the live pipeline failed (see the suite's first test)";
  }

  static void record() {
    domain_ = std::make_unique<DomainGuard>();
    recording_ = temp_path("lineage");
    const std::string& d = domain_->name;
    auto recorder = start_tool({"record", "--all", "-o", recording_}, d);
    ASSERT_TRUE(recorder->wait_for_output("recording", 20s)) << recorder->output();
    const std::vector<std::string> env{"SHMBUS_DOMAIN=" + d, "SHMBUS_CONFIG=" + lineage_config()};
    std::vector<std::unique_ptr<ChildProcess>> modules;
    for (const char* m : {"m1", "m2"}) {
      modules.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{kPipeline, "--module", m, "--rate", "100"}, true, env));
    }
    // m1, m2 and the recorder read each of their inputs before m3 starts
    // and a frame is sent. m3 writes c6 slowly (every 200 ms), so m2's first
    // frame takes few c6 messages (a callback cites at most 16 inputs).
    for (const char* c : {"/pipeline/c1", "/pipeline/c2", "/pipeline/c3", "/pipeline/c4", "/pipeline/c6"}) {
      shmbus::test::wait_for_subscribers(d, c, 2);
    }
    modules.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kPipeline, "--module", "m3", "--rate", "20"}, true, env));
    wait_for_stamps(d, "/pipeline/c6", 1);
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
    // What the replay tests compare with: a recording that lost nothing.
    const ToolRun info = shmtool({"bag", "info", recording_, "--json"});
    ASSERT_EQ(info.code, 0) << info.err;
    const json recorded = json::parse(info.out);
    for (const json& c : recorded["channels"]) {
      EXPECT_EQ(c["lost"], 0) << "the recorder lost messages of " << c["name"] << ": " << info.out;
    }
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(recording_);
    std::filesystem::remove(lineage_config());
    domain_.reset();
  }

  static std::unique_ptr<DomainGuard> domain_;
  static std::string recording_;
  static bool attempted_;
  static bool recorded_;
};
std::unique_ptr<DomainGuard> ShmtoolLineage::domain_;
std::string ShmtoolLineage::recording_;
bool ShmtoolLineage::attempted_ = false;
bool ShmtoolLineage::recorded_ = false;

std::string fmt_frames(int n) { return std::to_string(n); }

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

namespace {

/// The payloads of `channel` in a recording, in file order, by sequence.
std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> payloads(const std::string& path,
                                                                       const std::string& channel) {
  shmbus::mcap::Reader reader(path);
  std::optional<std::uint16_t> id;
  for (const auto& c : reader.info().channels) {
    if (c.topic == channel) id = c.id;
  }
  std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> out;
  reader.read_messages([&](const shmbus::mcap::MessageView& m) {
    if (id && m.channel_id == *id) out.emplace_back(m.sequence, std::vector<std::byte>(m.data.begin(), m.data.end()));
    return true;
  });
  return out;
}

/// pipeline_msgs/Sample's value.
double value_of(const std::vector<std::byte>& payload) {
  double v = 0;
  std::memcpy(&v, payload.data() + 8, sizeof v);
  return v;
}

/// Live modules of the pipeline in a fresh domain, for one step replay.
struct LiveModules {
  DomainGuard domain;
  std::vector<std::unique_ptr<ChildProcess>> procs;
  explicit LiveModules(const std::vector<std::vector<std::string>>& modules) {
    for (const auto& m : modules) {
      std::vector<std::string> args{kPipeline};
      args.insert(args.end(), m.begin(), m.end());
      procs.push_back(std::make_unique<ChildProcess>(
          args, true, std::vector<std::string>{"SHMBUS_DOMAIN=" + domain.name, "SHMBUS_CONFIG=" + lineage_config()}));
    }
  }
  ~LiveModules() {
    for (auto& p : procs) {
      p->signal(SIGCONT);
      p->signal(SIGTERM);
      p->wait(10s);
    }
  }
};

ToolRun step(const std::string& recording, const std::string& out, const std::string& domain,
             std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--config", lineage_config(), "play", recording, "--step", "--modules", "m1,m2", "-o",
                                out,        "--timeout",      "10s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return shmtool(tool_args(args, domain));
}

}  // namespace

TEST_F(ShmtoolLineage, StepReplayWithTheSameModulesReproducesEveryFrameByteForByte) {
  const std::string out1 = temp_path("step1");
  const std::string out2 = temp_path("step2");
  {
    LiveModules live({{"--module", "m1"}, {"--module", "m2"}});
    const ToolRun r = step(recording_, out1, live.domain.name);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(fmt_frames(kFrames) + " answered by the live modules, 0 failed"), std::string::npos) << r.out;
  }
  {
    // Deterministic: the same programs, started again, replayed again, give
    // the same payloads in the same order.
    LiveModules live({{"--module", "m1"}, {"--module", "m2"}});
    const ToolRun again = step(recording_, out2, live.domain.name);
    ASSERT_EQ(again.code, 0) << again.out << again.err;
  }
  const ToolRun diff = shmtool({"bag", "diff", recording_, out1, "--channel", "/pipeline/c5", "--json"});
  ASSERT_EQ(diff.code, 0) << diff.err;
  const json d = json::parse(diff.out);
  EXPECT_EQ(d["matched"], kFrames) << d.dump(2);
  EXPECT_EQ(d["equal"], kFrames);
  EXPECT_EQ(d["different"], 0);
  EXPECT_EQ(d["missing"], 0);
  EXPECT_EQ(payloads(out1, "/pipeline/c5").size(), static_cast<std::size_t>(kFrames));
  EXPECT_TRUE(payloads(out1, "/pipeline/c5") == payloads(out2, "/pipeline/c5"));
  EXPECT_TRUE(payloads(out1, "/pipeline/c3") == payloads(out2, "/pipeline/c3"));
  // The replayed run is a recording like any: same topology, and c5's
  // provenance names the frame's recorded inputs.
  const ToolRun graph = shmtool({"bag", "graph", out1, "--json"});
  ASSERT_EQ(graph.code, 0) << graph.err;
  EXPECT_EQ(json::parse(graph.out)["order"].size(), 4U);
  const shmbus::lineage::Lineage replayed(out1);
  const auto c5 = replayed.origin({"/pipeline/c5", 7});
  ASSERT_TRUE(c5.has_value());
  EXPECT_EQ(c5->node, "m2");
  ASSERT_FALSE(c5->inputs.empty());
  EXPECT_EQ(c5->inputs[0], (shmbus::lineage::MessageId{"/pipeline/c3", 7}));
  std::filesystem::remove(out1);
  std::filesystem::remove(out2);
}

TEST_F(ShmtoolLineage, StepReplayOfANewM1VersionChangesEveryFrameAsItsGainPredicts) {
  const std::string out = temp_path("step_gain");
  ToolRun r;
  {
    LiveModules live({{"--module", "m1", "--gain", "2"}, {"--module", "m2"}});
    r = step(recording_, out, live.domain.name);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
  }
  EXPECT_NE(r.out.find(fmt_frames(kFrames) + " answered by the live modules, 0 failed"), std::string::npos) << r.out;
  // c3' = 2 c3, so c5' = c5 + c3 in every frame (frame 0 has c3 = 0).
  const auto recorded_c3 = payloads(recording_, "/pipeline/c3");
  const auto recorded_c5 = payloads(recording_, "/pipeline/c5");
  const auto replayed_c5 = payloads(out, "/pipeline/c5");
  ASSERT_EQ(recorded_c5.size(), static_cast<std::size_t>(kFrames));
  ASSERT_EQ(replayed_c5.size(), recorded_c5.size()) << "the replay said: " << r.out << r.err;
  std::uint64_t changed = 0;
  for (std::size_t k = 0; k < recorded_c5.size(); ++k) {
    ASSERT_EQ(replayed_c5[k].first, recorded_c5[k].first);
    EXPECT_DOUBLE_EQ(value_of(replayed_c5[k].second) - value_of(recorded_c5[k].second), value_of(recorded_c3[k].second))
        << "frame " << k;
    changed += value_of(recorded_c3[k].second) != 0 ? 1 : 0;
  }
  EXPECT_EQ(changed, static_cast<std::uint64_t>(kFrames - 1));
  const ToolRun diff = shmtool({"bag", "diff", recording_, out, "--channel", "/pipeline/c5", "--json"});
  ASSERT_EQ(diff.code, 0) << diff.err;
  const json d = json::parse(diff.out);
  EXPECT_EQ(d["matched"], kFrames);
  EXPECT_EQ(d["different"], changed);
  ASSERT_EQ(d["differences"].size(), changed);
  EXPECT_EQ(d["differences"][0]["field"], "value");
  const ToolRun text = shmtool({"bag", "diff", recording_, out, "--channel", "/pipeline/c5"});
  EXPECT_NE(text.out.find(fmt_frames(kFrames) + " frames matched, 1 equal"), std::string::npos) << text.out;
  std::filesystem::remove(out);
}

namespace {

/// A copy of recording `in` without message `channel`#`sequence` (as a
/// recorder that lost it would have written it).
void copy_without(const std::string& in, const std::string& out, const std::string& channel, std::uint32_t sequence) {
  shmbus::mcap::Reader reader(in);
  shmbus::mcap::Writer writer(out);
  std::map<std::uint16_t, std::uint16_t> schemas;
  std::map<std::uint16_t, std::uint16_t> channels;
  std::optional<std::uint16_t> dropped;
  for (const auto& sc : reader.info().schemas) schemas[sc.id] = writer.add_schema(sc.name, sc.encoding, sc.data);
  for (const auto& c : reader.info().channels) {
    channels[c.id] =
        writer.add_channel(c.schema_id == 0 ? 0 : schemas.at(c.schema_id), c.topic, c.message_encoding, c.metadata);
    if (c.topic == channel) dropped = c.id;
  }
  reader.read_messages([&](const shmbus::mcap::MessageView& m) {
    if (!(dropped && m.channel_id == *dropped && m.sequence == sequence)) {
      writer.write({channels.at(m.channel_id), m.sequence, m.log_time, m.publish_time, m.data});
    }
    return true;
  });
  for (const auto& md : reader.info().metadata) writer.write_metadata(md);
  writer.close();
}

}  // namespace

// A recording that lost a root output (c3#17): m2's c5#17 cites it, so no
// frame reaches c5#17. The replay names it and fails, instead of exiting 0
// with a frame silently missing.
TEST_F(ShmtoolLineage, ARecordedOutputNoFrameReachesIsNamedAndTheReplayFails) {
  const std::string damaged = temp_path("lost_c3");
  const std::string out = temp_path("step_lost_c3");
  copy_without(recording_, damaged, "/pipeline/c3", 17);
  LiveModules live({{"--module", "m1"}, {"--module", "m2"}});
  const ToolRun r = step(damaged, out, live.domain.name);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("recorded /pipeline/c5#17: its trigger /pipeline/c3#17 is not in the recording (lost while "
                       "recording?) is in no frame and is not replayed"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(fmt_frames(kFrames - 1) + " answered by the live modules, 0 failed"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 recorded outputs in no frame"), std::string::npos) << r.out;
  std::filesystem::remove(damaged);
  std::filesystem::remove(out);
}

// Step replay is deterministic on a busy machine: with two processes
// spinning on the two cores, 20 replays each answer every frame and give
// the same c3 and c5 payloads as the recording.
TEST_F(ShmtoolLineage, StepReplayUnderTwoCpuHogsReproducesEveryFrame20Times) {
  std::vector<std::unique_ptr<ChildProcess>> hogs;
  for (int i = 0; i < 2; ++i) {
    hogs.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sh", "-c", "while :; do :; done"}));
  }
  const auto recorded_c3 = payloads(recording_, "/pipeline/c3");
  const auto recorded_c5 = payloads(recording_, "/pipeline/c5");
  for (int run = 0; run < 20; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::string out = temp_path("step_hog");
    ToolRun r;
    {
      LiveModules live({{"--module", "m1"}, {"--module", "m2"}});
      r = step(recording_, out, live.domain.name);
    }
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(fmt_frames(kFrames) + " answered by the live modules, 0 failed"), std::string::npos) << r.out;
    EXPECT_TRUE(payloads(out, "/pipeline/c3") == recorded_c3);
    EXPECT_TRUE(payloads(out, "/pipeline/c5") == recorded_c5);
    std::filesystem::remove(out);
    if (HasFailure()) break;
  }
}

TEST_F(ShmtoolLineage, AModuleThatDoesNotAnswerIsNamedAndItsFramesFailWithoutStoppingTheReplay) {
  const std::string out = temp_path("step_stalled");
  LiveModules live({{"--module", "m1"}, {"--module", "m2"}});
  shmbus::test::wait_for_subscribers(live.domain.name, "/pipeline/c3", 1);
  // m1 is stopped (SIGSTOP) once it reads its inputs: it never answers.
  for (const char* c : {"/pipeline/c1", "/pipeline/c2"}) shmbus::test::wait_for_subscribers(live.domain.name, c, 1);
  live.procs[0]->signal(SIGSTOP);
  ASSERT_TRUE(live.procs[0]->wait_stopped(10s));
  const ToolRun r = shmtool(tool_args(
      {"play", recording_, "--step", "--modules", "m1,m2", "-o", out, "--timeout", "20ms"}, live.domain.name));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("frame 0: module m1 did not answer within 0.02 s (inputs /pipeline/c1#0, /pipeline/c2#0)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(fmt_frames(kFrames) + " failed"), std::string::npos) << r.out;
  // m2 still ran every frame, on the recorded c3 published in m1's place:
  // c5 is as recorded.
  const ToolRun diff = shmtool({"bag", "diff", recording_, out, "--channel", "/pipeline/c5", "--json"});
  ASSERT_EQ(diff.code, 0) << diff.err;
  EXPECT_EQ(json::parse(diff.out)["equal"], kFrames) << diff.out;
  shmbus::mcap::Reader reader(out);
  bool marked = false;
  for (const auto& m : reader.info().metadata) {
    if (m.name != "shmbus.replay") continue;
    for (const auto& [k, v] : m.values) {
      if (k == "failed") marked = v == std::to_string(kFrames);
    }
  }
  EXPECT_TRUE(marked) << "OUT marks the failed frames";
  std::filesystem::remove(out);
}

TEST_F(ShmtoolLineage, StepReplayRefusesWhatCannotBeReplayedWithOneLine) {
  DomainGuard d;
  const std::string out = temp_path("step_refused");
  const auto one_line = [](const ToolRun& r) { return std::count(r.err.begin(), r.err.end(), '\n') == 1; };
  ToolRun r = shmtool(tool_args({"play", recording_, "--step", "--modules", "m9", "-o", out}, d.name));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("no module 'm9'; it has m1, m2, m3, sensors"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;
  r = shmtool(tool_args({"play", recording_, "--step", "--modules", "m3", "-o", out}, d.name));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("'m3' reads nothing"), std::string::npos) << r.err;
  r = shmtool(tool_args({"play", recording_, "--step", "--modules", "m1", "-o", out, "--timeout", "200ms"}, d.name));
  EXPECT_EQ(r.code, 3) << r.err;  // m1 was not started
  EXPECT_NE(r.err.find("module 'm1' does not read /pipeline/c1"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;
  r = shmtool(tool_args({"play", recording_, "--step", "-o", out}, d.name));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--modules"), std::string::npos) << r.err;
  std::filesystem::remove(out);
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

TEST(ShmtoolLineageInput, DamagedMetadataIsOneLineNamingTheRecord) {
  // Before: "shmtool: stoul", or nlohmann's raw words, and for a metadata
  // value nested past 64 levels a recursion of its own.
  const std::vector<std::pair<std::string, std::string>> damaged{
      {shmbus::lineage::kChannelIndexesMetadata, "not a number"},
      {shmbus::lineage::kModulesMetadata, "{not json"},
      {shmbus::lineage::kModulesMetadata, std::string(100'000, '[') + std::string(100'000, ']')},
      {shmbus::lineage::kWritersMetadata, R"({"first_publisher": "x"})"}};
  for (const auto& [record, value] : damaged) {
    const std::string path = temp_path("damaged");
    {
      shmbus::mcap::Writer w(path);
      w.write_metadata({shmbus::lineage::kModulesMetadata, {{"m", R"({"reads": [], "writes": []})"}}});
      w.write_metadata({record, {{"/a", value}}});
      w.close();
    }
    const ToolRun r = shmtool({"bag", "graph", path});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("metadata record \"" + record + "\" is malformed"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    std::filesystem::remove(path);
  }
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

TEST(ShmtoolLineageInput, AChainOfAMillionModulesIsOrderedWithoutOverflowingTheStack) {
  // The module graph comes from a file: a chain this long overflowed the
  // stack of a recursive component search (about 100 bytes a level).
  using shmbus::lineage::ModuleNode;
  constexpr std::size_t kModules = 1'000'000;
  std::vector<ModuleNode> modules(kModules);
  for (std::size_t i = 0; i < kModules; ++i) {
    modules[i].name = fmt::format("m{:07}", i);
    modules[i].reads = {i == 0 ? std::string("/loop") : fmt::format("/c{:07}", i - 1)};
    modules[i].writes = {fmt::format("/c{:07}", i)};
  }
  modules.back().writes.push_back("/loop");  // the last feeds the first: one loop of them all
  const auto [order, cycles] = shmbus::lineage::order_modules(modules);
  ASSERT_EQ(order.size(), kModules);
  EXPECT_EQ(order.front(), "m0000000");
  ASSERT_EQ(cycles.size(), 1U);
  EXPECT_EQ(cycles[0].size(), kModules);
}

namespace {

/// A copy of `in` as another run of the same pipeline could have recorded
/// it: /pipeline/c1 and /pipeline/c3 hold each other's registry index (in
/// the metadata and in every provenance record), as when the processes
/// created the channels in another order.
void write_as_another_run(const std::string& in, const std::string& out) {
  shmbus::mcap::Reader reader(in);
  const auto& info = reader.info();
  std::map<std::string, std::uint32_t> index;
  for (const auto& m : info.metadata) {
    if (m.name != shmbus::lineage::kChannelIndexesMetadata) continue;
    for (const auto& [name, i] : m.values) index[name] = static_cast<std::uint32_t>(std::stoul(i));
  }
  const std::uint32_t c1 = index.at("/pipeline/c1");
  const std::uint32_t c3 = index.at("/pipeline/c3");
  auto swap = [&](std::uint32_t i) { return i == c1 ? c3 : i == c3 ? c1 : i; };
  shmbus::mcap::Writer writer(out);
  std::map<std::uint16_t, std::uint16_t> ids;
  std::uint16_t provenance = 0;
  for (const auto& c : info.channels) {
    const auto* s = info.schema(c.schema_id);
    ids[c.id] = writer.add_channel(s != nullptr ? writer.add_schema(s->name, s->encoding, s->data) : 0, c.topic,
                                   c.message_encoding, c.metadata);
    if (c.topic == shmbus::lineage::kProvenanceChannel) provenance = c.id;
  }
  for (auto m : info.metadata) {
    if (m.name == shmbus::lineage::kChannelIndexesMetadata) {
      for (auto& [name, i] : m.values) i = std::to_string(swap(static_cast<std::uint32_t>(std::stoul(i))));
    }
    writer.write_metadata(m);
  }
  reader.read_messages([&](const shmbus::mcap::MessageView& m) {
    shmbus_msgs::MessageProvenance p{};
    std::span<const std::byte> data = m.data;
    if (m.channel_id == provenance && data.size() == sizeof p) {
      std::memcpy(&p, data.data(), sizeof p);
      p.channel_index = swap(p.channel_index);
      for (std::size_t k = 0; k < p.entry_count && k < p.entries.size(); ++k) {
        p.entries[k].channel_index = swap(p.entries[k].channel_index);
      }
      data = std::as_bytes(std::span{&p, 1});
    }
    writer.write({ids.at(m.channel_id), m.sequence, m.log_time, m.publish_time, data});
    return true;
  });
  writer.close();
}

}  // namespace

// bag merge of two runs of the pipeline whose registries numbered the
// channels differently: the second run's indexes are renumbered to the
// first's, in the metadata and in its provenance, so the merged graph is
// the pipeline's, not edges between the wrong channels. Module -> channel
// edges count both runs' messages; channel -> module edges count the cited
// messages by identity (channel, sequence), which the two runs share.
TEST_F(ShmtoolLineage, MergeOfTwoRunsKeepsThePipelinesGraph) {
  const std::string other = temp_path("lineage_other");
  const std::string merged = temp_path("lineage_merged");
  write_as_another_run(recording_, other);
  const ToolRun r = shmtool({"bag", "merge", recording_, other, "-o", merged});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 channels got a new registry index"), std::string::npos) << r.out;
  const json one = json::parse(shmtool({"bag", "graph", recording_, "--json"}).out);
  const json both = json::parse(shmtool({"bag", "graph", merged, "--json"}).out);
  EXPECT_EQ(both["modules"], one["modules"]);
  EXPECT_EQ(both["order"], one["order"]);
  ASSERT_EQ(both["edges"].size(), one["edges"].size()) << both.dump();
  for (std::size_t i = 0; i < one["edges"].size(); ++i) {
    const json& e = one["edges"][i];
    const bool written = e["from"].get<std::string>().front() != '/';
    const std::uint64_t n = e["messages"].get<std::uint64_t>();
    EXPECT_EQ(both["edges"][i], json({{"from", e["from"]}, {"to", e["to"]}, {"messages", written ? 2 * n : n}}))
        << e.dump();
  }
  const json info_one = json::parse(shmtool({"bag", "info", recording_, "--json"}).out);
  const json info_both = json::parse(shmtool({"bag", "info", merged, "--json"}).out);
  EXPECT_EQ(info_both["messages"], 2 * info_one["messages"].get<std::uint64_t>());
  std::filesystem::remove(other);
  std::filesystem::remove(merged);
}
