// shmbus-gateway as real processes: two shmbus domains on this host, each
// with its gateway, joined by Cyclone DDS on loopback (unicast discovery,
// no multicast, a DDS domain id of the test's own).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/exactly_once.hpp"
#include "multiprocess/child_process.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/Header.hpp"
#include "shmbus_msgs/String.hpp"
#include "support/channel_checks.hpp"
#include "support/test_domain.hpp"
#include "support/unit_file.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using shmbus::test::ChildProcess;
using shmbus::test::messages_of;
using shmbus::test::take_strings;
using shmbus::test::wait_messages;

const std::string kGateway = SHMBUS_GATEWAY_PATH;
const std::string kShmtool = SHMTOOL_PATH;

/// Cyclone on loopback only: no multicast, peers found by unicast.
const std::string kLoopbackDds =
    "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>20</MaxAutoParticipantIndex><Peers><Peer address=\"127.0.0.1\"/></Peers>"
    "</Discovery></Domain></CycloneDDS>";

/// A DDS domain id no other test of this run uses (ids 1..230).
int fresh_dds_domain() {
  static int next = 0;
  return 1 + static_cast<int>((::getpid() * 7 + next++) % 230);
}

/// A gateway process for `domain` with `entries` as its [[gateway]] table.
struct GatewayProcess {
  GatewayProcess(const std::string& domain, const std::string& entries, int dds_domain) {
    path = std::filesystem::temp_directory_path() / (domain + "_gateway.toml");
    std::ofstream(path) << "domain = \"" << domain << "\"\n" << entries;
    start(dds_domain);
  }
  void start(int dds_domain) {
    process = std::make_unique<ChildProcess>(
        std::vector<std::string>{kGateway, "--config", path.string(), "--dds-domain", std::to_string(dds_domain)}, true,
        std::vector<std::string>{"CYCLONEDDS_URI=" + kLoopbackDds});
    EXPECT_TRUE(process->wait_for_output("carrying domain", 10s)) << process->output();
  }
  ~GatewayProcess() {
    if (process->pid() > 0) {
      process->signal(SIGTERM);
      const int status = process->wait(10s);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << process->output();
    }
    std::filesystem::remove(path);
  }
  std::filesystem::path path;
  std::unique_ptr<ChildProcess> process;
};

/// shmtool info --json of `channel` in `domain`.
json info_of(const std::string& domain, const std::string& channel) {
  ChildProcess info({kShmtool, "info", channel, "--json"}, false, std::vector<std::string>{"SHMBUS_DOMAIN=" + domain});
  info.wait(10s);
  try {
    return json::parse(info.output());
  } catch (const json::exception&) {
    ADD_FAILURE() << "shmtool info said: " << info.output();
    return json::object();
  }
}

shmbus_msgs::String text(const std::string& s) {
  shmbus_msgs::String m{};
  m.data.assign(s);
  return m;
}

TEST(GatewayTest, TwoDomainsCarryTypedChannelsBothWaysDecodableAndNamedAfterTheirOrigin) {
  shmbus::test::TestDomain a, b;
  const int dds = fresh_dds_domain();
  shmbus::TypedPublisher<shmbus_msgs::String> a_out("/gw/a_out", a.context());
  shmbus::TypedPublisher<shmbus_msgs::String> b_out("/gw/b_out", b.context());
  GatewayProcess ga(a.domain(), "[[gateway]]\nexport = [\"/gw/a_out\"]\nimport = [\"/gw/b_out\"]\n", dds);
  GatewayProcess gb(b.domain(), "[[gateway]]\nexport = [\"/gw/b_out\"]\nimport = [\"/gw/a_out\"]\n", dds);
  // The receiving side has no such channel, nor its type: the gateway
  // creates it with the sender's schema.
  std::optional<shmbus::TypedSubscriber<shmbus_msgs::String>> b_in, a_in;
  const std::int64_t deadline = shmbus::mono_now_ns() + 15'000'000'000;
  std::uint64_t i = 0;
  while ((messages_of(b.domain(), "/gw/a_out") == 0 || messages_of(a.domain(), "/gw/b_out") == 0) &&
         shmbus::mono_now_ns() < deadline) {
    EXPECT_EQ(a_out.publish(text(std::string{"from a "}.append(std::to_string(i)))), shmbus::PublishResult::kOk);
    EXPECT_EQ(b_out.publish(text(std::string{"from b "}.append(std::to_string(i++)))), shmbus::PublishResult::kOk);
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GT(messages_of(b.domain(), "/gw/a_out"), 0U) << ga.process->output() << gb.process->output();
  ASSERT_GT(messages_of(a.domain(), "/gw/b_out"), 0U) << ga.process->output() << gb.process->output();
  b_in.emplace("/gw/a_out", b.context());
  a_in.emplace("/gw/b_out", a.context());
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(a_out.publish(text(std::string{"a"}.append(std::to_string(k)))), shmbus::PublishResult::kOk);
    EXPECT_EQ(b_out.publish(text(std::string{"b"}.append(std::to_string(k)))), shmbus::PublishResult::kOk);
  }
  // What the loop above sent may still be on its way (DDS on a busy
  // machine): those arrive first, and are not these.
  EXPECT_EQ(take_strings(*b_in, 5, 5s, "from "), (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4"}));
  EXPECT_EQ(take_strings(*a_in, 5, 5s, "from "), (std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));

  // On B the channel is an ordinary typed channel: shmtool decodes it and
  // names its publisher after the gateway and the origin host.
  ChildProcess echo({kShmtool, "echo", "/gw/a_out", "-n", "1", "--json"}, false,
                    std::vector<std::string>{"SHMBUS_DOMAIN=" + b.domain()});
  for (int k = 0; k < 200 && !echo.wait_for_output("\n", 50ms); ++k)
    EXPECT_EQ(a_out.publish(text("decoded")), shmbus::PublishResult::kOk);
  ASSERT_EQ(echo.wait(10s), 0) << echo.output();
  const json m = json::parse(echo.output());
  EXPECT_EQ(m["data"]["data"], "decoded");
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  EXPECT_EQ(m["node"], std::string("shmbus-gateway@") + host.data());
  const auto view = shmbus::introspect::ChannelReader(b.domain(), "/gw/a_out").view();
  EXPECT_EQ(view.type_name, "shmbus_msgs/String");
  EXPECT_EQ(view.type_hash, shmbus_msgs::String::kTypeHash);
  // Each message's transit (receive minus the origin's wall stamp) is on
  // the gateway's publisher: shmtool info shows it.
  const json info = info_of(b.domain(), "/gw/a_out");
  ASSERT_EQ(info["publishers"].size(), 1U) << info.dump();
  const json& gw = info["publishers"][0];
  EXPECT_EQ(gw["node"], std::string("shmbus-gateway@") + host.data());
  ASSERT_TRUE(gw["transit_mean_s"].is_number()) << gw.dump();
  EXPECT_GT(gw["transit_mean_s"].get<double>(), 0.0);
  EXPECT_LT(gw["transit_mean_s"].get<double>(), 1.0);
  EXPECT_EQ(gw["upstream_lost"], 0);
}

TEST(GatewayTest, WildcardsBothWaysCarryEachMessageExactlyOnce) {
  shmbus::test::TestDomain a, b;
  const int dds = fresh_dds_domain();
  const std::string all = "[[gateway]]\nexport = [\"*\"]\nimport = [\"*\"]\n";
  GatewayProcess ga(a.domain(), all, dds);
  GatewayProcess gb(b.domain(), all, dds);
  shmbus::test::expect_each_message_once_each_way(
      a, b, [&] { return ga.process->poll_output() + gb.process->poll_output(); });
}

TEST(GatewayTest, ATypeMismatchBetweenHostsIsRefusedNamingBothTypes) {
  shmbus::test::TestDomain a, b;
  const int dds = fresh_dds_domain();
  shmbus::TypedPublisher<shmbus_msgs::String> a_clash("/gw/clash", a.context());
  shmbus::TypedPublisher<shmbus_msgs::Header> b_clash("/gw/clash", b.context());
  GatewayProcess ga(a.domain(), "[[gateway]]\nexport = [\"/gw/*\"]\n", dds);
  GatewayProcess gb(b.domain(), "[[gateway]]\nimport = [\"/gw/*\"]\n", dds);
  const std::int64_t deadline = shmbus::mono_now_ns() + 15'000'000'000;
  while (gb.process->poll_output().find("refused") == std::string::npos && shmbus::mono_now_ns() < deadline) {
    EXPECT_EQ(a_clash.publish(text("clash")), shmbus::PublishResult::kOk);
    std::this_thread::sleep_for(10ms);
  }
  const std::string out = gb.process->output();
  EXPECT_NE(out.find("import /gw/clash from"), std::string::npos) << out;
  EXPECT_NE(out.find("has type shmbus_msgs/Header"), std::string::npos) << out;
  EXPECT_NE(out.find("you asked for shmbus_msgs/String"), std::string::npos) << out;
  EXPECT_EQ(messages_of(b.domain(), "/gw/clash"), 0U) << "nothing of A's /gw/clash reached B's";
}

TEST(GatewayTest, EitherGatewayRestartsResumesAndTheLossIsCounted) {
  shmbus::test::TestDomain a, b;
  const int dds = fresh_dds_domain();
  auto pub = std::make_unique<ChildProcess>(
      std::vector<std::string>{kShmtool, "pub", "/gw/steady", "--type", "shmbus_msgs/String", R"({"data": "s"})",
                               "--rate", "200"},
      true, std::vector<std::string>{"SHMBUS_DOMAIN=" + a.domain()});
  ASSERT_TRUE(wait_messages(a.domain(), "/gw/steady", 1, 10s)) << pub->output();
  GatewayProcess ga(a.domain(), "[[gateway]]\nexport = [\"/gw/*\"]\n", dds);
  GatewayProcess gb(b.domain(), "[[gateway]]\nimport = [\"/gw/*\"]\n", dds);
  ASSERT_TRUE(wait_messages(b.domain(), "/gw/steady", 50, 15s)) << ga.process->output() << gb.process->output();

  // A's gateway dies; B's channel stops growing; A's restarts and it resumes.
  ga.process->signal(SIGKILL);
  ga.process->wait(5s);
  std::this_thread::sleep_for(1s);  // ~200 messages published with no gateway
  const std::uint64_t before = messages_of(b.domain(), "/gw/steady");
  ga.start(dds);
  const std::int64_t t0 = shmbus::mono_now_ns();
  ASSERT_TRUE(wait_messages(b.domain(), "/gw/steady", before + 50, 15s)) << gb.process->output();
  EXPECT_LT(shmbus::mono_now_ns() - t0, 5'000'000'000) << "resumed within a few seconds";
  ASSERT_TRUE(gb.process->wait_for_output("its gateway restarted;", 5s)) << gb.process->output();
  // The messages published meanwhile: counted, about 200.
  const std::string out = gb.process->output();
  const auto at = out.find("its gateway restarted; ");
  const std::uint64_t lost = std::stoull(out.substr(at + 23));
  EXPECT_GE(lost, 150U) << out;
  EXPECT_LE(lost, 1200U) << out;
  // Shown where shmtool looks: on the gateway's publisher of the channel.
  const json info = info_of(b.domain(), "/gw/steady");
  ASSERT_FALSE(info["publishers"].empty()) << info.dump();
  EXPECT_EQ(info["publishers"][0]["upstream_lost"], lost) << info.dump();

  // B's gateway stops and comes back: A's counts what reached no reader
  // meanwhile (discarded by its subscriber: shmtool info) and says so.
  gb.process->signal(SIGTERM);
  ASSERT_EQ(gb.process->wait(10s), 0) << gb.process->output();
  std::this_thread::sleep_for(1s);
  const std::uint64_t b_before = messages_of(b.domain(), "/gw/steady");
  gb.start(dds);
  ASSERT_TRUE(wait_messages(b.domain(), "/gw/steady", b_before + 50, 15s)) << gb.process->output();
  ASSERT_TRUE(ga.process->wait_for_output("messages found no remote reader while none was matched", 5s))
      << ga.process->output();
  const std::string a_out = ga.process->output();
  const auto at_a = a_out.find("export /gw/steady: ");
  ASSERT_NE(at_a, std::string::npos) << a_out;
  const std::uint64_t unread = std::stoull(a_out.substr(at_a + 19));
  EXPECT_GE(unread, 150U) << a_out;
  const json a_info = info_of(a.domain(), "/gw/steady");
  std::uint64_t discarded = 0;
  for (const auto& sub : a_info["subscribers"]) {
    if (sub["node"] == "shmbus-gateway") discarded = sub["discarded"].get<std::uint64_t>();
  }
  EXPECT_EQ(discarded, unread) << a_info.dump();
  pub->signal(SIGTERM);
  pub->wait(5s);
}

TEST(GatewayTest, ABurstCrossesInBatchesInOrderWithEveryMessageOnce) {
  // Rings and DDS history large enough to hold the whole burst: nothing may
  // be lost, so every message must arrive, once, in order, equal. Messages
  // up to 128 KiB: the receiving side delivers them off Cyclone's receive
  // thread (the path of large channels).
  constexpr int kCount = 3000;
  // A 100 ms stall_timeout: the burst's publisher is this test's thread on a
  // loaded 2-core machine; preempted mid-message for over the default 2 ms,
  // its message is judged stalled and counted lost by the exporter (by
  // design), which this exactly-once test would report as a missing message.
  const std::string sizes = "[defaults]\ncapacity = 4096\nmax_message_size = 131072\nstall_timeout = \"100ms\"\n";
  shmbus::test::TestDomain a(shmbus::Config::parse(sizes, "burst.toml")), b;
  const int dds = fresh_dds_domain();
  shmbus::Publisher out("/gw/burst", shmbus::TypeInfo::bytes(), a.context());
  GatewayProcess ga(a.domain(), sizes + "[[gateway]]\nexport = [\"/gw/*\"]\nhistory_depth = 4096\n", dds);
  GatewayProcess gb(b.domain(), sizes + "[[gateway]]\nimport = [\"/gw/*\"]\nhistory_depth = 4096\n", dds);
  // Short messages with a long one (over a batch's byte bound) now and then.
  const auto body = [](int i) {
    std::string s = std::to_string(i);
    if (i % 250 == 0) s.append(20000, 'x');
    return s;
  };
  const auto publish = [&](const std::string& s) {
    EXPECT_EQ(out.publish(s.data(), s.size()), shmbus::PublishResult::kOk);
  };
  const std::int64_t deadline = shmbus::mono_now_ns() + 15'000'000'000;
  while (messages_of(b.domain(), "/gw/burst") == 0 && shmbus::mono_now_ns() < deadline) {
    publish("warm");
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GT(messages_of(b.domain(), "/gw/burst"), 0U) << ga.process->output() << gb.process->output();
  shmbus::Subscriber in("/gw/burst", std::nullopt, b.context());
  std::this_thread::sleep_for(300ms);  // the warm-up's last messages land
  for (int i = 0; i < kCount; ++i) publish(body(i));

  std::vector<std::byte> buffer(131072);
  const auto take = [&]() -> std::optional<std::string> {
    const shmbus::TakeResult r = in.take(buffer);
    if (!r.ok()) return std::nullopt;
    EXPECT_EQ(r.info.lost_before, 0U);
    return std::string(reinterpret_cast<const char*>(buffer.data()), r.info.size);
  };
  int next = 0;
  std::int64_t quiet_until = shmbus::mono_now_ns() + 10'000'000'000;
  while (next < kCount && shmbus::mono_now_ns() < quiet_until) {
    const auto got = take();
    if (!got) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    if (*got == "warm") continue;
    ASSERT_EQ(*got, body(next)) << "message " << next << " arrives once, in order, equal";
    ++next;
    quiet_until = shmbus::mono_now_ns() + 5'000'000'000;
  }
  ASSERT_EQ(next, kCount) << ga.process->output() << gb.process->output();
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(take().has_value()) << "nothing more: no duplicates";

  // The exporter wrote them in far fewer DDS samples than messages.
  ga.process->signal(SIGTERM);
  ASSERT_EQ(ga.process->wait(10s), 0) << ga.process->output();
  const std::string log = ga.process->output();
  const auto at = log.find("messages sent in ");
  ASSERT_NE(at, std::string::npos) << log;
  const auto sent_at = log.rfind("stopping: ", at);
  ASSERT_NE(sent_at, std::string::npos) << log;
  const std::uint64_t sent = std::stoull(log.substr(sent_at + 10));
  const std::uint64_t samples = std::stoull(log.substr(at + 17));
  EXPECT_GE(sent, static_cast<std::uint64_t>(kCount)) << log;
  EXPECT_LT(samples * 4, sent) << "a burst shares DDS samples\n" << log;
}

TEST(GatewayTest, UnitFilePassesSystemdAnalyzeVerify) {
  EXPECT_EQ(shmbus::test::verify_unit("shmbus-gateway.service", "/usr/bin/shmbus-gateway", kGateway), "");
}

TEST(GatewayTest, BadSettingsExitTwoWithOneLine) {
  const auto run = [](const std::string& config_text, std::vector<std::string> extra = {}) {
    const auto path = std::filesystem::temp_directory_path() / ("gw_bad_" + std::to_string(::getpid()) + ".toml");
    std::ofstream(path) << config_text;
    std::vector<std::string> args{kGateway, "--config", path.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    ChildProcess p(args, true, std::vector<std::string>{"CYCLONEDDS_URI=" + kLoopbackDds});
    const int status = p.wait(10s);
    std::filesystem::remove(path);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, p.output());
  };
  auto [code, out] = run("domain = \"gwbad\"\n");
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out,
            "shmbus-gateway: no [[gateway]] entries in the configuration: add one with export = [\"/glob\"] and/or "
            "import = [\"/glob\"]\n");
  std::tie(code, out) = run("domain = \"gwbad\"\n[[gateway]]\nexport = [\"*\"]\nreliability = \"maybe\"\n");
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find(":4:15: reliability = \"maybe\" must be \"reliable\" or \"best_effort\""), std::string::npos)
      << out;
  std::tie(code, out) = run("domain = \"gwbad\"\n[[gateway]]\nexport = [\"*\"]\n", {"--dds-domain", "999"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--dds-domain"), std::string::npos) << out;
}

}  // namespace
