// ROS 2's minimal service (examples_rclcpp_minimal_service), ported by
// changing its includes and namespace: serves add_two_ints.
#include <cinttypes>
#include <memory>

#include "example_srvs/srv/add_two_ints.hpp"
#include "shmbus/rclcpp.hpp"

namespace rclcpp = shmbus::rclcpp;
using AddTwoInts = example_srvs::srv::AddTwoInts;

void handle_service(const std::shared_ptr<AddTwoInts::Request> request,
                    std::shared_ptr<AddTwoInts::Response> response) {
  response->sum = request->a + request->b;
  RCLCPP_INFO(rclcpp::get_logger("minimal_service"), "request: %" PRId64 " + %" PRId64, request->a, request->b);
}

int main(int argc, char* argv[]) {
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("minimal_service");
  auto server = node->create_service<AddTwoInts>("add_two_ints", handle_service);
  RCLCPP_INFO(node->get_logger(), "serving %s", server->get_service_name());
  rclcpp::spin(node);
  rclcpp::shutdown();
  return 0;
}
