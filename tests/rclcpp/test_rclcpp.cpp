// The rclcpp-shaped surface (shmbus/rclcpp.hpp): ROS 2's name rules and
// arguments as rcl reads them, parameters, callbacks of each of rclcpp's
// shapes, services through futures, the RCLCPP_* output; and ROS 2's four
// minimal examples ported to it (examples/rclcpp), run as processes with
// real signals: every message and response exact.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "example_srvs/srv/add_two_ints.hpp"
#include "multiprocess/child_process.hpp"
#include "rcl_interfaces/msg/parameter_event.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/rclcpp.hpp"
#include "std_msgs/msg/string.hpp"
#include "support/test_domain.hpp"

namespace rclcpp = shmbus::rclcpp;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using shmbus::test::TestDomain;

namespace {

std::vector<std::string> words(std::initializer_list<const char*> a) { return {a.begin(), a.end()}; }

rclcpp::NodeOptions in(TestDomain& d) { return rclcpp::NodeOptions().context(d.context()).use_global_arguments(false); }

/// Spins `node` until `done` or 5 s (a bound, not a rate).
template <typename F>
bool spin_until(const std::shared_ptr<rclcpp::Node>& node, F done) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (!done() && std::chrono::steady_clock::now() < end) node->shmbus_node().spin_once(10ms);
  return done();
}

}  // namespace

// rcl's expansion: absolute, relative, private, substitutions; and what it
// refuses, with the rule named.
TEST(RclcppNamesTest, NamesExpandAsRclExpandsThem) {
  EXPECT_EQ(rclcpp::expand_name("/chatter", "talker", "/"), "/chatter");
  EXPECT_EQ(rclcpp::expand_name("chatter", "talker", "/"), "/chatter");
  EXPECT_EQ(rclcpp::expand_name("chatter", "talker", "/robot/arm"), "/robot/arm/chatter");
  EXPECT_EQ(rclcpp::expand_name("~/state", "talker", "/robot"), "/robot/talker/state");
  EXPECT_EQ(rclcpp::expand_name("~", "talker", "/"), "/talker");
  EXPECT_EQ(rclcpp::expand_name("{node}/x", "talker", "/ns"), "/ns/talker/x");
  EXPECT_EQ(rclcpp::expand_name("{ns}/x", "talker", "/ns"), "/ns/x");
  EXPECT_EQ(rclcpp::normalize_namespace("robot/"), "/robot");
  EXPECT_EQ(rclcpp::normalize_namespace(""), "/");
  for (const char* bad : {"2d", "a//b", "a/", "a-b", "~x", "/a b"}) {
    try {
      static_cast<void>(rclcpp::expand_name(bad, "n", "/"));
      ADD_FAILURE() << bad << " was taken";
    } catch (const shmbus::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("name '") + bad + "' is not a ROS name: "), std::string::npos)
          << e.what();
    }
  }
}

TEST(RclcppNamesTest, RemapRulesApplyAsRclAppliesThem) {
  const rclcpp::RosArguments a = rclcpp::parse_ros_arguments(
      words({"positional", "--ros-args", "-r", "chatter:=/talk", "--remap", "listener:~/in:=/x", "-r", "__ns:=/r1",
             "-r", "talker:__node:=speaker", "-p", "rate:=20", "--log-level", "debug", "--", "tail"}));
  ASSERT_EQ(a.remaps.size(), 2U);
  EXPECT_EQ(rclcpp::remap_name("/chatter", a.remaps, "talker", "/"), "/talk");
  EXPECT_EQ(rclcpp::remap_name("/r1/chatter", a.remaps, "talker", "/r1"), "/talk");  // `chatter` in its namespace
  EXPECT_EQ(rclcpp::remap_name("/r1/listener/in", a.remaps, "listener", "/r1"), "/x");
  EXPECT_EQ(rclcpp::remap_name("/r1/talker/in", a.remaps, "talker", "/r1"), "/r1/talker/in");  // another node's rule
  ASSERT_EQ(a.namespaces.size(), 1U);
  EXPECT_EQ(a.namespaces[0].to, "/r1");
  ASSERT_EQ(a.node_names.size(), 1U);
  EXPECT_EQ(a.node_names[0].node, "talker");
  ASSERT_EQ(a.parameters.size(), 1U);
  EXPECT_EQ(a.parameters[0].from, "rate");
  EXPECT_EQ(a.log_level, "debug");
  EXPECT_EQ(
      rclcpp::remove_ros_arguments(words({"a", "--ros-args", "-r", "x:=y", "--", "b", "--ros-args", "-p", "q:=1"})),
      words({"a", "b"}));
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {words({"--ros-args", "-r", "nothing"}), "a rule is [node:]from:=to"},
           {words({"--ros-args", "-r"}), "needs a value after it"},
           {words({"--ros-args", "--frobnicate"}), "unknown ROS argument '--frobnicate'"},
           {words({"--ros-args", "--params-file", "p.yaml"}), "give parameters with -p name:=value"},
           {words({"--ros-args", "-r", "__frob:=1"}), "not a rule shmbus knows"}}) {
    try {
      static_cast<void>(rclcpp::parse_ros_arguments(args));
      ADD_FAILURE() << says;
    } catch (const shmbus::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST(RclcppParametersTest, CommandLineValuesReadAsRos2ReadsThem) {
  EXPECT_EQ(rclcpp::parse_parameter_value("true"), rclcpp::ParameterValue(true));
  EXPECT_EQ(rclcpp::parse_parameter_value("42"), rclcpp::ParameterValue(std::int64_t{42}));
  EXPECT_EQ(rclcpp::parse_parameter_value("-1.5"), rclcpp::ParameterValue(-1.5));
  EXPECT_EQ(rclcpp::parse_parameter_value("hello"), rclcpp::ParameterValue("hello"));
  EXPECT_EQ(rclcpp::parse_parameter_value("'42'"), rclcpp::ParameterValue("42"));
  EXPECT_EQ(rclcpp::parse_parameter_value("[1, 2, 3]"), rclcpp::ParameterValue(std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(rclcpp::parse_parameter_value("[1.0, 2]"), rclcpp::ParameterValue(std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(rclcpp::parse_parameter_value("[a, 'b c']"), rclcpp::ParameterValue(std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(rclcpp::to_string(rclcpp::ParameterValue(std::vector<bool>{true, false})), "[true, false]");
}

TEST(RclcppParametersTest, DeclaredParametersTakeOverridesKeepTheirTypeAndAskTheCallbacks) {
  TestDomain d{{}, "rclcpp_params"};
  auto node = std::make_shared<rclcpp::Node>(
      "tuned", in(d).arguments(words({"--ros-args", "-p", "rate:=20", "-p", "other:name:=x", "-p", "label:=left"})));
  EXPECT_EQ(node->declare_parameter<int>("rate", 10), 20);  // the command line's
  EXPECT_EQ(node->declare_parameter<double>("gain", 0.5), 0.5);
  EXPECT_EQ(node->declare_parameter<std::string>("label"), "left");
  EXPECT_THROW(static_cast<void>(node->declare_parameter<std::string>("name")), shmbus::Error);  // another node's
  EXPECT_THROW(static_cast<void>(node->declare_parameter<int>("rate", 1)), shmbus::Error);       // twice
  EXPECT_FALSE(node->set_parameter(rclcpp::Parameter("rate", "fast")).successful);               // another type
  EXPECT_FALSE(node->set_parameter(rclcpp::Parameter("unknown", 1)).successful);
  auto guard = node->add_on_set_parameters_callback([](const std::vector<rclcpp::Parameter>& ps) {
    return rclcpp::SetParametersResult{ps[0].as_int() <= 100, "at most 100"};
  });
  const rclcpp::SetParametersResult refused = node->set_parameter(rclcpp::Parameter("rate", 1000));
  EXPECT_FALSE(refused.successful);
  EXPECT_EQ(refused.reason, "at most 100");
  EXPECT_TRUE(node->set_parameter(rclcpp::Parameter("rate", 50)).successful);
  EXPECT_EQ(node->get_parameter("rate").as_int(), 50);
  int rate = 0;
  EXPECT_TRUE(node->get_parameter("rate", rate));
  EXPECT_EQ(rate, 50);
  EXPECT_FALSE(node->get_parameter("missing", rate));
  EXPECT_THROW(static_cast<void>(node->get_parameter("missing")), shmbus::Error);
}

// Each of rclcpp's callback shapes gets every message, exact; the names
// resolve in the node's namespace and through its remapping rules.
TEST(RclcppNodeTest, EveryCallbackShapeGetsEveryMessageUnderTheResolvedName) {
  using String = std_msgs::msg::String;
  TestDomain d{{}, "rclcpp_shapes"};
  auto pub_node = std::make_shared<rclcpp::Node>("talker", "/robot", in(d));
  auto sub_node = std::make_shared<rclcpp::Node>("listener", "/robot",
                                                 in(d).arguments(words({"--ros-args", "-r", "heard:=chatter"})));
  EXPECT_EQ(sub_node->get_resolved_name("heard"), "/robot/chatter");
  EXPECT_EQ(sub_node->get_resolved_name("~/state"), "/robot/listener/state");
  EXPECT_EQ(sub_node->get_fully_qualified_name(), "/robot/listener");
  std::vector<std::vector<std::string>> got(7);
  std::vector<rclcpp::Subscription<String>::SharedPtr> subs;
  subs.push_back(
      sub_node->create_subscription<String>("heard", 10, [&](const String& m) { got[0].push_back(m.data); }));
  subs.push_back(
      sub_node->create_subscription<String>("heard", 10, [&](String::ConstSharedPtr m) { got[1].push_back(m->data); }));
  subs.push_back(sub_node->create_subscription<String>("heard", 10,
                                                       [&](const String::SharedPtr& m) { got[2].push_back(m->data); }));
  subs.push_back(sub_node->create_subscription<String>(
      "heard", 10, [&](String::UniquePtr m) { got[3].push_back(std::move(m->data)); }));
  subs.push_back(
      sub_node->create_subscription<String>("heard", 10, [&](const String& m, const shmbus::MessageInfo& info) {
        got[4].push_back(m.data + "#" + std::to_string(info.sequence));
      }));
  subs.push_back(sub_node->create_subscription<String>(
      "heard", 10, [&](const String::View& v) { got[5].push_back(std::string(v.data())); }));
  subs.push_back(sub_node->create_subscription<String>("/robot/chatter", 10,
                                                       [&](String::ConstSharedPtr m) { got[6].push_back(m->data); }));
  auto pub = pub_node->create_publisher<String>("chatter", 10);
  EXPECT_STREQ(pub->get_topic_name(), "/robot/chatter");
  std::vector<std::string> sent;
  for (int i = 0; i < 5; ++i) {
    String m;
    m.data = "hello " + std::to_string(i) + std::string(static_cast<std::size_t>(i) * 300, 'x');
    sent.push_back(m.data);
    pub->publish(m);
  }
  ASSERT_TRUE(spin_until(sub_node, [&] { return got[6].size() == sent.size(); }));
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (k == 4) continue;
    EXPECT_EQ(got[k], sent) << "shape " << k;
  }
  ASSERT_EQ(got[4].size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[4][i], sent[i] + "#" + std::to_string(i));
  // A subscription dropped gets nothing more.
  subs[0].reset();
  pub->publish(String{.data = "after"});
  ASSERT_TRUE(spin_until(sub_node, [&] { return got[6].size() == sent.size() + 1; }));
  EXPECT_EQ(got[0].size(), sent.size());
  EXPECT_EQ(got[1].back(), "after");
}

// transient_local: a subscription made after the publishes gets the last
// `depth` of them, as a late-joining ROS 2 subscription does.
TEST(RclcppNodeTest, ATransientLocalSubscriptionGetsTheLastDepthMessages) {
  using String = std_msgs::msg::String;
  TestDomain d{{}, "rclcpp_latched"};
  auto node = std::make_shared<rclcpp::Node>("latch", in(d));
  auto pub = node->create_publisher<String>("map", rclcpp::QoS(3).transient_local());
  for (int i = 0; i < 5; ++i) pub->publish(String{.data = std::to_string(i)});
  std::vector<std::string> got;
  auto sub = node->create_subscription<String>("map", rclcpp::QoS(3).transient_local(),
                                               [&](const String& m) { got.push_back(m.data); });
  ASSERT_TRUE(spin_until(node, [&] { return got.size() == 3; }));
  EXPECT_EQ(got, words({"2", "3", "4"}));
}

// A service made with either callback shape answers through a client's
// future; a request to a service nobody serves ends in the future when
// the client goes.
TEST(RclcppServiceTest, AFutureCarriesTheResponseAndAClientThatGoesFailsWhatItHeld) {
  using AddTwoInts = example_srvs::srv::AddTwoInts;
  TestDomain d{{}, "rclcpp_service"};
  auto node = std::make_shared<rclcpp::Node>("adder", in(d));
  auto shared = node->create_service<AddTwoInts>(
      "add", [](const std::shared_ptr<AddTwoInts::Request> req, std::shared_ptr<AddTwoInts::Response> rsp) {
        rsp->sum = req->a + req->b;
      });
  auto plain = node->create_service<AddTwoInts>(
      "~/times", [](const AddTwoInts::Request& req, AddTwoInts::Response& rsp) { rsp.sum = req.a * req.b; });
  EXPECT_STREQ(plain->get_service_name(), "/adder/times");
  auto client = node->create_client<AddTwoInts>("add");
  auto times = node->create_client<AddTwoInts>("/adder/times");
  ASSERT_TRUE(client->wait_for_service(5s));
  auto request = std::make_shared<AddTwoInts::Request>();
  request->a = 40;
  request->b = 2;
  auto sum = client->async_send_request(request);
  std::atomic<std::int64_t> product{0};
  auto product_future =
      times->async_send_request(request, [&](rclcpp::Client<AddTwoInts>::SharedFuture f) { product = f.get()->sum; });
  // Spun here: the servers answer in this node's callbacks.
  ASSERT_EQ(rclcpp::spin_until_future_complete(node, sum, 5s), rclcpp::FutureReturnCode::SUCCESS);
  EXPECT_EQ(sum.get()->sum, 42);
  ASSERT_EQ(rclcpp::spin_until_future_complete(node, product_future, 5s), rclcpp::FutureReturnCode::SUCCESS);
  EXPECT_EQ(product_future.get()->sum, 80);
  ASSERT_TRUE(spin_until(node, [&] { return product.load() == 80; }));
  std::shared_future<std::shared_ptr<AddTwoInts::Response>> orphan;
  {
    auto nobody = node->create_client<AddTwoInts>("nobody");
    EXPECT_FALSE(nobody->wait_for_service(50ms));
    orphan = nobody->async_send_request(request).future;
    EXPECT_EQ(rclcpp::spin_until_future_complete(node, orphan, 100ms), rclcpp::FutureReturnCode::TIMEOUT);
  }
  ASSERT_EQ(orphan.wait_for(0s), std::future_status::ready);
  EXPECT_THROW(static_cast<void>(orphan.get()), shmbus::Error);
}

// RCLCPP_* write rcutils' line on stderr, under the logger's level.
TEST(RclcppLoggingTest, LinesAreRcutilsLinesUnderTheLevel) {
  const rclcpp::Logger logger = rclcpp::get_logger("lines").get_child("test");
  testing::internal::CaptureStderr();
  RCLCPP_INFO(logger, "value %d of %s", 7, "seven");
  RCLCPP_DEBUG(logger, "not shown");
  RCLCPP_WARN_STREAM(logger, "stream " << 1.5);
  for (int i = 0; i < 3; ++i) RCLCPP_ERROR_ONCE(logger, "once");
  logger.set_level(rclcpp::Logger::Level::Debug);
  RCLCPP_DEBUG(logger, "shown");
  const std::string said = testing::internal::GetCapturedStderr();
  const std::regex line(R"(\[(INFO|WARN|ERROR|DEBUG)\] \[[0-9]+\.[0-9]{9}\] \[lines\.test\]: (.*))");
  std::vector<std::string> texts;
  std::istringstream in(said);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    texts.push_back(m[1].str() + " " + m[2].str());
  }
  EXPECT_EQ(texts, words({"INFO value 7 of seven", "WARN stream 1.5", "ERROR once", "DEBUG shown"}));
}

namespace {

/// Waits up to `timeout` until `channel` is listed in `domain`.
bool wait_for_channel(const std::string& domain, const std::string& channel, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    try {
      const shmbus::introspect::DomainView view(domain);
      const std::vector<std::string> names = view.channel_names();
      if (std::find(names.begin(), names.end(), channel) != names.end()) return true;
    } catch (const shmbus::Error&) {  // no registry yet
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::vector<std::string> lines_after(const std::string& out, const std::string& marker) {
  std::vector<std::string> found;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    const auto at = l.find(marker);
    if (at != std::string::npos) found.push_back(l.substr(at + marker.size()));
  }
  return found;
}

}  // namespace

// ROS 2's minimal publisher and subscriber, ported: every message the
// publisher logged it published, the subscriber logged it heard, in order,
// once each; SIGINT ends both with exit 0. Then the same with both remapped
// and moved into a namespace from the command line.
TEST(RclcppExamplesTest, TheMinimalPublisherAndSubscriberAgreeOnEveryMessage) {
  for (const std::vector<std::string>& ros :
       {words({}), words({"--ros-args", "-r", "topic:=chatter", "-r", "__ns:=/robot"})}) {
    const std::string domain = shmbus::test::unique_domain("rclcpp_ex");
    shmbus::test::DomainCleanup cleanup{domain};
    const std::vector<std::string> env{"SHMBUS_DOMAIN=" + domain};
    std::vector<std::string> sub_args{SHMBUS_EXAMPLE_MINIMAL_SUBSCRIBER};
    sub_args.insert(sub_args.end(), ros.begin(), ros.end());
    std::vector<std::string> pub_args{SHMBUS_EXAMPLE_MINIMAL_PUBLISHER};
    pub_args.insert(pub_args.end(), ros.begin(), ros.end());
    if (ros.empty()) pub_args.emplace_back("--ros-args");
    for (const char* a : {"-p", "period_ms:=5"}) pub_args.emplace_back(a);
    ChildProcess sub(sub_args, true, env);
    // The subscriber's channel exists before the first publish: none missed.
    ASSERT_TRUE(wait_for_channel(domain, ros.empty() ? "/topic" : "/robot/chatter", 5s));
    ChildProcess pub(pub_args, true, env);
    ASSERT_TRUE(sub.wait_for_output("I heard: 'Hello, world! 30'", 10s)) << sub.poll_output();
    pub.signal(SIGINT);
    EXPECT_EQ(pub.wait(5s), 0) << pub.poll_output();
    ASSERT_TRUE(sub.wait_for_output(
        "I heard: 'Hello, world! " + std::to_string(lines_after(pub.poll_output(), "Publishing: ").size() - 1) + "'",
        5s));
    sub.signal(SIGINT);
    EXPECT_EQ(sub.wait(5s), 0) << sub.poll_output();
    // rclcpp's logger names: the namespace's tokens, then the node's name.
    const std::string ns = ros.empty() ? "" : "robot.";
    const std::vector<std::string> published =
        lines_after(pub.poll_output(), "[" + ns + "minimal_publisher]: Publishing: ");
    const std::vector<std::string> heard = lines_after(sub.poll_output(), "[" + ns + "minimal_subscriber]: I heard: ");
    ASSERT_GT(published.size(), 30U);
    EXPECT_EQ(heard, published);
    for (std::size_t i = 0; i < published.size(); ++i)
      EXPECT_EQ(published[i], "'Hello, world! " + std::to_string(i) + "'");
  }
}

// ROS 2's minimal service and client, ported: the client waits for the
// service, sends its arguments, and logs the exact sum.
TEST(RclcppExamplesTest, TheMinimalClientGetsItsSumFromTheMinimalService) {
  const std::string domain = shmbus::test::unique_domain("rclcpp_srv");
  shmbus::test::DomainCleanup cleanup{domain};
  const std::vector<std::string> env{"SHMBUS_DOMAIN=" + domain};
  // The client first: it waits for the service, as ROS 2's does.
  ChildProcess client({SHMBUS_EXAMPLE_MINIMAL_CLIENT, "-7", "1000000000000"}, true, env);
  ASSERT_TRUE(client.wait_for_output("waiting for service to appear...", 10s)) << client.poll_output();
  ChildProcess server({SHMBUS_EXAMPLE_MINIMAL_SERVICE}, true, env);
  EXPECT_EQ(client.wait(10s), 0) << client.poll_output();
  EXPECT_NE(client.poll_output().find("[minimal_client]: result of -7 + 1000000000000 = 999999999993"),
            std::string::npos)
      << client.poll_output();
  ASSERT_TRUE(server.wait_for_output("request: -7 + 1000000000000", 5s)) << server.poll_output();
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(5s), 0) << server.poll_output();
  EXPECT_NE(server.poll_output().find("serving /add_two_ints"), std::string::npos);
}

namespace {

/// Runs shmtool with `args` in `domain`; its exit code and output.
std::pair<int, std::string> shmtool(const std::string& domain, std::vector<std::string> args) {
  args.insert(args.begin(), SHMTOOL_PATH);
  ChildProcess p(args, true, {"SHMBUS_DOMAIN=" + domain});
  const int status = p.wait(20s);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, p.poll_output()};
}

}  // namespace

// A node's parameters through its rcl_interfaces services, as `ros2 param`
// reaches them: shmtool lists, gets and sets the minimal publisher's
// period_ms; the set reaches the node (its get answers the new value) and
// /parameter_events; a value of another type is refused with the node's
// reason and exit 1.
TEST(RclcppExamplesTest, ShmtoolListsGetsAndSetsANodesParametersAndTheEventsTellIt) {
  const std::string domain = shmbus::test::unique_domain("rclcpp_param");
  shmbus::test::DomainCleanup cleanup{domain};
  shmbus::Config config;
  config.domain = domain;
  shmbus::Context context(config);
  auto watcher = std::make_shared<rclcpp::Node>(
      "watcher", rclcpp::NodeOptions().context(context).use_global_arguments(false).start_parameter_services(false));
  std::vector<rcl_interfaces::msg::ParameterEvent> events;
  auto sub = watcher->create_subscription<rcl_interfaces::msg::ParameterEvent>(
      "/parameter_events", 10, [&](const rcl_interfaces::msg::ParameterEvent& e) {
        if (e.node == "/minimal_publisher") events.push_back(e);
      });
  ChildProcess pub({SHMBUS_EXAMPLE_MINIMAL_PUBLISHER, "--ros-args", "-p", "period_ms:=50"}, true,
                   {"SHMBUS_DOMAIN=" + domain});
  ASSERT_TRUE(spin_until(watcher, [&] { return !events.empty(); })) << pub.poll_output();
  ASSERT_EQ(events[0].new_parameters.size(), 1U);
  EXPECT_EQ(events[0].new_parameters[0].name, "period_ms");
  EXPECT_EQ(events[0].new_parameters[0].value.integer_value, 50);

  auto [rc, out] = shmtool(domain, {"param", "list", "minimal_publisher"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "  period_ms\n");
  std::tie(rc, out) = shmtool(domain, {"param", "get", "/minimal_publisher", "period_ms"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "Integer value is: 50\n");
  std::tie(rc, out) = shmtool(domain, {"param", "set", "minimal_publisher", "period_ms", "20"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "Set parameter successful\n");
  std::tie(rc, out) = shmtool(domain, {"param", "get", "minimal_publisher", "period_ms"});
  EXPECT_EQ(out, "Integer value is: 20\n");
  ASSERT_TRUE(spin_until(watcher, [&] { return events.size() == 2; }));
  ASSERT_EQ(events[1].changed_parameters.size(), 1U);
  EXPECT_EQ(events[1].changed_parameters[0].value.integer_value, 20);
  std::tie(rc, out) = shmtool(domain, {"param", "set", "minimal_publisher", "period_ms", "fast"});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out,
            "shmtool: setting parameter 'period_ms' of minimal_publisher failed: parameter 'period_ms' is "
            "integer, not string\n");
  std::tie(rc, out) = shmtool(domain, {"param", "get", "minimal_publisher", "nothing"});
  EXPECT_EQ(rc, 3) << out;
  std::tie(rc, out) = shmtool(domain, {"param", "list", "nobody", "--timeout", "0.2"});
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("no node /nobody serves parameters"), std::string::npos) << out;
  pub.signal(SIGINT);
  EXPECT_EQ(pub.wait(5s), 0) << pub.poll_output();
}

// A subscription or timer held past its node (rclcpp allows it) ends
// nothing when dropped: no use of the node that is gone.
TEST(RclcppNodeTest, ASubscriptionAndATimerMayOutliveTheirNode) {
  TestDomain d{{}, "rclcpp_outlive"};
  rclcpp::Subscription<std_msgs::msg::String>::SharedPtr sub;
  rclcpp::TimerBase::SharedPtr timer;
  {
    auto node = std::make_shared<rclcpp::Node>("short_lived", in(d));
    sub = node->create_subscription<std_msgs::msg::String>("x", 1, [](const std_msgs::msg::String&) {});
    timer = node->create_wall_timer(1s, [] {});
  }
  EXPECT_STREQ(sub->get_topic_name(), "/x");
  sub.reset();  // ASan: no read of the node's freed subscription
  timer.reset();
}
