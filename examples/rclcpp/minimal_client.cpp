// ROS 2's minimal client (examples_rclcpp_minimal_client), ported by
// changing its includes and namespace: asks add_two_ints for A + B
// (arguments, 41 and 1 by default) and logs the sum.
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <memory>

#include "example_srvs/srv/add_two_ints.hpp"
#include "shmbus/rclcpp.hpp"

namespace rclcpp = shmbus::rclcpp;
using AddTwoInts = example_srvs::srv::AddTwoInts;
using namespace std::chrono_literals;

int main(int argc, char* argv[]) {
  rclcpp::init(argc, argv);
  const auto args = rclcpp::remove_ros_arguments(argc, argv);
  auto node = rclcpp::Node::make_shared("minimal_client");
  auto client = node->create_client<AddTwoInts>("add_two_ints");
  while (!client->wait_for_service(1s)) {
    if (!rclcpp::ok()) {
      RCLCPP_ERROR(node->get_logger(), "client interrupted while waiting for service to appear.");
      return 1;
    }
    RCLCPP_INFO(node->get_logger(), "waiting for service to appear...");
  }
  auto request = std::make_shared<AddTwoInts::Request>();
  request->a = args.size() > 1 ? std::atoll(args[1].c_str()) : 41;
  request->b = args.size() > 2 ? std::atoll(args[2].c_str()) : 1;
  auto result_future = client->async_send_request(request);
  if (rclcpp::spin_until_future_complete(node, result_future) != rclcpp::FutureReturnCode::SUCCESS) {
    RCLCPP_ERROR(node->get_logger(), "service call failed :(");
    client->remove_pending_request(result_future);
    return 1;
  }
  auto result = result_future.get();
  RCLCPP_INFO(node->get_logger(), "result of %" PRId64 " + %" PRId64 " = %" PRId64, request->a, request->b,
              result->sum);
  rclcpp::shutdown();
  return 0;
}
