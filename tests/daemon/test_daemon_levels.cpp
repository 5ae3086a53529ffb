// The formula, the level table, the debounce, the metrics text and the
// webhook body, on synthetic inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/monitor/config_report.hpp"
#include "shmbus/monitor/frequency.hpp"
#include "shmbus/monitor/levels.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/service_shell.hpp"
#include "shmbus/shmbusd/daemon.hpp"
#include "shmbus/shmbusd/metrics.hpp"
#include "shmbus/shmbusd/outputs.hpp"
#include "support/test_domain.hpp"

using namespace shmbus;
using namespace shmbus::shmbusd;
using namespace shmbus::monitor;

namespace {
constexpr std::array<double, 3> kT{25.0, 35.0, 60.0};

std::vector<std::int64_t> stamps_every(std::int64_t start, std::int64_t period, int n) {
  std::vector<std::int64_t> s;
  for (int i = 0; i < n; ++i) s.push_back(start + i * period);
  return s;
}
}  // namespace

TEST(FrequencyTest, FormulaIsNMinusOneOverTheSpanOfTheWindow) {
  // 11 stamps 10 ms apart inside a 1 s window: f = 10 / 0.1 s = 100 Hz.
  const auto s = stamps_every(5'000'000'000, 10'000'000, 11);
  const WindowMeasure m = measure_window(s, 5'500'000'000, 1'000'000'000, false);
  EXPECT_EQ(m.n, 11U);
  EXPECT_DOUBLE_EQ(m.frequency_hz, 100.0);
  EXPECT_DOUBLE_EQ(m.period.mean, 0.01);
  EXPECT_DOUBLE_EQ(m.period.min, 0.01);
  EXPECT_NEAR(m.period.stddev, 0.0, 1e-12);
  EXPECT_EQ(m.period.count, 10U);
}

TEST(FrequencyTest, OnlyStampsInsideTheWindowCountAndTheLowerEdgeIsOpen) {
  const auto s = stamps_every(0, 100'000'000, 30);  // 0 .. 2.9 s
  // Window (1.9 s, 2.9 s]: 2.0 .. 2.9 = 10 stamps; 1.9 s itself is out.
  const WindowMeasure m = measure_window(s, 2'900'000'000, 1'000'000'000, false);
  EXPECT_EQ(m.n, 10U);
  EXPECT_EQ(m.first_ns, 2'000'000'000);
  EXPECT_DOUBLE_EQ(m.frequency_hz, 9.0 / 0.9);
}

TEST(FrequencyTest, FewerThanTwoStampsIsNoRateAndNanStatistics) {
  const std::vector<std::int64_t> one{1'000};
  const WindowMeasure m = measure_window(one, 2'000, 1'000'000'000, false);
  EXPECT_EQ(m.n, 1U);
  EXPECT_EQ(m.frequency_hz, 0.0);
  EXPECT_TRUE(std::isnan(m.period.mean));
  EXPECT_EQ(m.period.count, 0U);
  const WindowMeasure none = measure_window({}, 2'000, 1'000, false);
  EXPECT_EQ(none.frequency_hz, 0.0);
  EXPECT_TRUE(std::isnan(none.period.stddev));
}

TEST(FrequencyTest, FullListWhoseOldestStampIsInsideTheWindowIsReportedTruncated) {
  const auto s = stamps_every(9'500'000'000, 1'000'000, 500);  // 0.5 s of 1 kHz, list full
  const WindowMeasure m = measure_window(s, 10'000'000'000, 1'000'000'000, true);
  EXPECT_TRUE(m.truncated);
  EXPECT_NEAR(m.frequency_hz, 1000.0, 1e-9) << "computed from what is there";
  EXPECT_FALSE(measure_window(s, 10'000'000'000, 1'000'000'000, false).truncated);
}

TEST(LevelTest, EveryBoundaryOfTheTable) {
  EXPECT_EQ(classify(24.999, kT), Level::kCritical);  // f < f1
  EXPECT_EQ(classify(25.0, kT), Level::kNominal);     // f1 <= f
  EXPECT_EQ(classify(30.0, kT), Level::kNominal);
  EXPECT_EQ(classify(35.0, kT), Level::kNominal);     // f <= f2
  EXPECT_EQ(classify(35.001, kT), Level::kDegraded);  // f2 < f
  EXPECT_EQ(classify(60.0, kT), Level::kDegraded);    // f <= f3
  EXPECT_EQ(classify(60.001, kT), Level::kCritical);  // f > f3
  EXPECT_EQ(classify(0.0, kT), Level::kCritical) << "no data: stalled";
  EXPECT_EQ(classify(0.0, std::nullopt), Level::kUnmonitored);
  EXPECT_EQ(classify(100.0, std::nullopt), Level::kUnmonitored);
  EXPECT_EQ(classify(0.0, std::array<double, 3>{0.0, 1.0, 2.0}), Level::kNominal) << "f1 = 0 accepts silence";
}

TEST(DebounceTest, ChangeIsBelievedAfterNConsecutiveScans) {
  Debouncer d(3, Level::kNominal);
  EXPECT_EQ(d.observe(Level::kCritical), Level::kNominal);
  EXPECT_EQ(d.observe(Level::kCritical), Level::kNominal);
  EXPECT_EQ(d.observe(Level::kCritical), Level::kCritical);
  EXPECT_EQ(d.observe(Level::kCritical), Level::kCritical);
}

TEST(DebounceTest, AnInterruptedRunStartsOverSoNothingFlaps) {
  Debouncer d(3, Level::kNominal);
  d.observe(Level::kCritical);
  d.observe(Level::kCritical);
  EXPECT_EQ(d.observe(Level::kNominal), Level::kNominal);  // run broken
  d.observe(Level::kCritical);
  d.observe(Level::kDegraded);  // another candidate: starts over
  d.observe(Level::kDegraded);
  EXPECT_EQ(d.believed(), Level::kNominal);
  EXPECT_EQ(d.observe(Level::kDegraded), Level::kDegraded);
  Debouncer once(1, Level::kNominal);
  EXPECT_EQ(once.observe(Level::kDegraded), Level::kDegraded);
}

TEST(MetricsTest, ExpositionHasEveryFamilyWithDomainAndChannelLabels) {
  ChannelStatus c;
  c.name = "/cam\"era";
  c.level = Level::kDegraded;
  c.thresholds_hz = kT;
  c.measure.frequency_hz = 40.5;
  c.measure.n = 41;
  c.messages = 1000;
  c.lost = 3;
  c.publishers = 1;
  c.subscribers = 2;
  c.window_ns = 1'000'000'000;
  SubscriberStatus s;
  s.node = "fusion";
  s.pid = 77;
  s.age.count = 10;
  s.age.mean = 0.001;
  c.subscriber_stats.push_back(s);
  PublisherStatus gw;  // a gateway's import
  gw.node = "shmbus-gateway@host-a";
  gw.pid = 78;
  gw.published = 500;
  gw.upstream_lost = 3;
  gw.transit.count = 20;
  gw.transit.mean = 0.0004;
  c.publisher_stats.push_back(gw);
  const std::string text = render_metrics("robot", {c}, DaemonFigures{0.0002, 5, 1, 0});
  for (const char* family :
       {"shmbus_channel_frequency_hz", "shmbus_channel_alert_level", "shmbus_channel_messages_total",
        "shmbus_channel_publishers", "shmbus_channel_subscribers", "shmbus_channel_lost_messages_total",
        "shmbus_channel_period_seconds", "shmbus_subscriber_age_seconds", "shmbus_daemon_scan_duration_seconds"}) {
    EXPECT_NE(text.find(std::string{"# TYPE "} + family + " "), std::string::npos) << family;
  }
  EXPECT_NE(text.find("shmbus_channel_frequency_hz{domain=\"robot\",channel=\"/cam\\\"era\"} 40.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("shmbus_channel_alert_level{domain=\"robot\",channel=\"/cam\\\"era\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("shmbus_channel_period_seconds{domain=\"robot\",channel=\"/cam\\\"era\",stat=\"mean\"} NaN\n"),
            std::string::npos);
  EXPECT_NE(text.find("shmbus_subscriber_age_seconds{domain=\"robot\",channel=\"/cam\\\"era\",stat=\"mean\",node="
                      "\"fusion\",pid=\"77\"} 0.001\n"),
            std::string::npos);
  EXPECT_NE(text.find("shmbus_daemon_scan_duration_seconds{domain=\"robot\"} 0.0002\n"), std::string::npos);
  const std::string gw_labels = "{domain=\"robot\",channel=\"/cam\\\"era\",node=\"shmbus-gateway@host-a\",pid=\"78\"}";
  EXPECT_NE(text.find("shmbus_publisher_published_total" + gw_labels + " 500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shmbus_publisher_upstream_lost_total" + gw_labels + " 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shmbus_publisher_transit_seconds{domain=\"robot\",channel=\"/cam\\\"era\",stat=\"mean\",node="
                      "\"shmbus-gateway@host-a\",pid=\"78\"} 0.0004\n"),
            std::string::npos)
      << text;
}

TEST(WebhookTest, BodyIsAnAlertmanagerV2PostableAlertsArray) {
  const Transition t{"/imu", Level::kNominal, Level::kCritical, 12.5, {190, 210, 400}, 1'000'000'000};
  const auto firing = nlohmann::json::parse(AlertmanagerWebhook::body_for(t, "robot", "2026-11-22T04:00:00.000Z", ""));
  ASSERT_TRUE(firing.is_array());
  ASSERT_EQ(firing.size(), 1U);
  const auto& a = firing[0];
  EXPECT_EQ(a["labels"]["alertname"], "ShmbusChannelFrequency");
  EXPECT_EQ(a["labels"]["channel"], "/imu");
  EXPECT_EQ(a["labels"]["domain"], "robot");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_TRUE(a["annotations"]["summary"].is_string());
  EXPECT_EQ(a["startsAt"], "2026-11-22T04:00:00.000Z");
  EXPECT_FALSE(a.contains("endsAt"));
  EXPECT_TRUE(a["generatorURL"].is_string());
  // Every label and annotation value is a string, as the v2 schema requires.
  for (const auto& [k, v] : a["labels"].items()) EXPECT_TRUE(v.is_string()) << k;
  for (const auto& [k, v] : a["annotations"].items()) EXPECT_TRUE(v.is_string()) << k;
  const auto resolved = nlohmann::json::parse(
      AlertmanagerWebhook::body_for(t, "robot", "2026-11-22T04:00:00.000Z", "2026-11-22T04:01:00Z"));
  EXPECT_EQ(resolved[0]["endsAt"], "2026-11-22T04:01:00Z");
  EXPECT_EQ(resolved[0]["labels"], a["labels"]) << "a resolve names the same alert";
}

TEST(CheckConfigTest, WindowTheTimeListCanNeverCoverIsWarnedWithItsPosition) {
  const Config c = Config::parse(
      "[defaults]\nwindow = \"10s\"\ntime_list_capacity = 256\n\n[[channel]]\nname = \"/cam\"\nthresholds_hz = [25.0, "
      "35.0, 60.0]\n\n[[channel]]\nname = \"/slow\"\nthresholds_hz = [1.0, 2.0, 3.0]\n",
      "w.toml");
  const auto warnings = config_warnings(c);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0],
            "w.toml:5:1: warning: channel /cam: window 10s at f3 = 60 Hz needs 600 stamps but time_list_capacity is "
            "256: the time list can never cover the window; raise time_list_capacity to 1024 or shorten the window");
  EXPECT_NE(describe_config({c, {}}).find("[[channel]] /cam -> transport=shm capacity=64 max_message_size=4096 "
                                          "time_list_capacity=256 window=10s thresholds f1=25 f2=35 f3=60 Hz"),
            std::string::npos);
}

TEST(CheckConfigTest, BadListenAddressAndWebhookAreConfigErrors) {
  Options o;
  o.metrics_listen = "localhost";
  try {
    (void)load_config(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_STREQ(e.what(), "metrics_listen \"localhost\" is not ADDRESS:PORT (e.g. 127.0.0.1:9464)");
  }
  EXPECT_THROW((void)parse_http_url("https://x/api"), Error);
  EXPECT_EQ(parse_http_url("http://127.0.0.1:9093/api/v2/alerts").port, 9093);
}

// The token rule of shmbusd's listener and the bridge's: a Bearer header,
// or any token= pair of the query, percent-decoded; nothing else.
TEST(TokenTest, ABearerHeaderOrAQueryPairCarriesTheToken) {
  using shmbus::service_shell::carries_token;
  const std::string token = "s3cr%t&x";
  EXPECT_TRUE(carries_token("/", "Bearer s3cr%t&x", token));
  EXPECT_TRUE(carries_token("/api?token=s3cr%25t%26x", "", token));
  EXPECT_TRUE(carries_token("/?a=1&token=s3cr%25t%26x&b=2", "", token));
  EXPECT_TRUE(carries_token("/?token=wrong&token=s3cr%25t%26x", "", token)) << "any pair";
  EXPECT_FALSE(carries_token("/?token=s3cr%t&x", "", token)) << "undecoded: the & ends the pair";
  EXPECT_FALSE(carries_token("/?xtoken=s3cr%25t%26x", "", token));
  EXPECT_FALSE(carries_token("/token=s3cr%25t%26x", "", token)) << "not in a query";
  EXPECT_FALSE(carries_token("/", "Basic s3cr%t&x", token));
  EXPECT_FALSE(carries_token("/", "Bearer s3cr%t&", token));
  EXPECT_FALSE(carries_token("/?token=%", "", token)) << "a cut escape is kept as it is";
}

TEST(MonitorTest, ChannelsAppearingAndDisappearingAreFollowed) {
  Config c;
  c.domain = shmbus::test::unique_domain("mon");
  Monitor monitor(c);
  EXPECT_TRUE(monitor.scan(1).empty());
  EXPECT_EQ(monitor.channel_count(), 0U) << "no domain yet: nothing to watch, no error";
  {
    Context ctx(c);
    auto a = std::make_unique<Publisher>("/a", TypeInfo::bytes(), ctx);
    Publisher b("/b", TypeInfo::bytes(), ctx);
    monitor.scan(2);
    EXPECT_EQ(monitor.channel_count(), 2U);
    a.reset();
    introspect::clean_domain(c.domain, false);  // removes /a, keeps /b (live)
    monitor.scan(3);
    ASSERT_EQ(monitor.channel_count(), 1U);
    EXPECT_EQ(monitor.statuses()[0].name, "/b");
  }
  introspect::clean_domain(c.domain, false);
}
