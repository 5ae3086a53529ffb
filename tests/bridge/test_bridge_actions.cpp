// Actions through shmbus-bridge, as roslib 2.x's Action uses them
// (rosbridge v2's send_action_goal, action_feedback, action_result,
// cancel_action_goal, advertise_action): a roslib client against ROS 2's
// Fibonacci tutorial server (ported, examples/rclcpp), and an action that a
// roslib client serves, called from C++ through rclcpp_action's client.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "action_tutorials_interfaces/action/fibonacci.hpp"
#include "bridge/bridge_harness.hpp"
#include "multiprocess/child_process.hpp"
#include "shmbus/rclcpp.hpp"
#include "shmbus/rclcpp_action.hpp"
#include "support/test_domain.hpp"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using shmbus::test::ChildProcess;
using namespace shmbus::test::bridge;
namespace rclcpp = shmbus::rclcpp;
namespace rclcpp_action = shmbus::rclcpp_action;
using Fibonacci = action_tutorials_interfaces::action::Fibonacci;

const std::string kActionMsgPath = std::string(SHMBUS_SOURCE_DIR) + "/examples/rclcpp/action";

std::vector<std::int32_t> fibonacci(std::size_t n) {
  std::vector<std::int32_t> s{0, 1};
  while (s.size() < n) s.push_back(s[s.size() - 1] + s[s.size() - 2]);
  s.resize(n);
  return s;
}

}  // namespace

// roslib sends a goal to the tutorial server through the bridge: every
// feedback in order and the exact result; a long goal canceled mid-way
// fails saying CANCELED; rosapi's action_servers lists the action.
TEST(BridgeActionTest, RoslibSendsAGoalWithFeedbackAndCancelsAnother) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  ChildProcess server({SHMBUS_EXAMPLE_FIBONACCI_SERVER, "10"}, true, {"SHMBUS_DOMAIN=" + domain});
  BridgeProcess bridge(domain);
  ASSERT_NE(bridge.port, 0);
  // Its services are up once the first goal is served: the script waits
  // for none, so wait here.
  shmbus::ServiceClient probe(shmbus::action_part("/fibonacci", "send_goal"),
                              shmbus::service_types_of<Fibonacci::Impl::SendGoalService>(), d.context());
  ASSERT_TRUE(probe.wait_for_server(10s));
  const json r = run_node({kJs + "/bridge_roslib_action.mjs", "client", "ws://127.0.0.1:" + std::to_string(bridge.port),
                           "/fibonacci", "action_tutorials_interfaces/action/Fibonacci", "7"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["errors"], json::array()) << r;
  EXPECT_EQ(r["servers"], json({"/fibonacci"}));
  json expected = json::array();
  for (std::size_t n = 3; n <= 8; ++n) expected.push_back(fibonacci(n));
  EXPECT_EQ(r["feedback"], expected);
  EXPECT_EQ(r["result"], json({{"sequence", fibonacci(8)}}));
  // Canceled at the second feedback; more may come while the cancel is on
  // its way (a busy machine), none after the goal ended.
  EXPECT_GE(r["canceledFeedback"].get<int>(), 2) << r;
  ASSERT_TRUE(r["canceled"].is_string()) << r;
  EXPECT_NE(r["canceled"].get<std::string>().find("canceled"), std::string::npos) << r;
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(10s), 0) << server.poll_output();
}

// A roslib client serves /js/fibonacci (advertise_action); rclcpp_action's
// client here sends two goals through the bridge: each gets its feedback in
// order and its result; the roslib server sees them as send_action_goal.
TEST(BridgeActionTest, ARoslibServedActionAnswersARclcppActionClient) {
  shmbus::test::TestDomain d;
  const std::string domain = d.context().domain();
  BridgeProcess bridge(domain, {"--msg-path", kActionMsgPath});
  ASSERT_NE(bridge.port, 0);
  ChildProcess js({"/usr/bin/env", "node", kJs + "/bridge_roslib_action.mjs", "serve",
                   "ws://127.0.0.1:" + std::to_string(bridge.port), "/js/fibonacci",
                   "action_tutorials_interfaces/action/Fibonacci", "2"},
                  false);
  ASSERT_TRUE(js.wait_for_output("advertised", 20s)) << js.output();
  auto node = std::make_shared<rclcpp::Node>("bridge_action_client",
                                             rclcpp::NodeOptions().context(d.context()).use_global_arguments(false));
  auto client = rclcpp_action::create_client<Fibonacci>(node, "/js/fibonacci");
  ASSERT_TRUE(client->wait_for_action_server(10s)) << bridge.process->poll_output();
  struct Seen {
    std::mutex mutex;
    std::vector<std::vector<std::int32_t>> feedback;
    std::optional<rclcpp_action::ClientGoalHandle<Fibonacci>::WrappedResult> result;
  };
  std::vector<std::shared_ptr<Seen>> seen;
  for (const int order : {5, 9}) {
    auto s = std::make_shared<Seen>();
    seen.push_back(s);
    rclcpp_action::Client<Fibonacci>::SendGoalOptions o;
    o.feedback_callback = [s](auto, const std::shared_ptr<const Fibonacci::Feedback>& f) {
      const std::lock_guard lock(s->mutex);
      s->feedback.push_back(f->partial_sequence);
    };
    o.result_callback = [s](const auto& r) {
      const std::lock_guard lock(s->mutex);
      s->result = r;
    };
    Fibonacci::Goal g;
    g.order = order;
    client->async_send_goal(g, o);
  }
  const auto done = [&] {
    for (auto& s : seen) {
      const std::lock_guard lock(s->mutex);
      if (!s->result) return false;
    }
    return true;
  };
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (!done() && std::chrono::steady_clock::now() < end) node->shmbus_node().spin_once(10ms);
  ASSERT_TRUE(done()) << js.output() << bridge.process->poll_output();
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const std::size_t order = i == 0 ? 5 : 9;
    EXPECT_EQ(seen[i]->result->code, rclcpp_action::ResultCode::SUCCEEDED);
    EXPECT_EQ(seen[i]->result->result->sequence, fibonacci(order + 1));
    ASSERT_EQ(seen[i]->feedback.size(), order - 1);
    for (std::size_t k = 0; k < seen[i]->feedback.size(); ++k) EXPECT_EQ(seen[i]->feedback[k], fibonacci(k + 3));
  }
  EXPECT_EQ(js.wait(10s), 0) << js.output();
}
