// ROS 2's minimal publisher (examples_rclcpp_minimal_publisher), written for
// rclcpp and ported by changing its includes and namespace: a timer
// publishes "Hello, world! N" on `topic`. The period is the parameter
// period_ms (500 ms, as ROS 2's; `--ros-args -p period_ms:=20`).
#include <chrono>
#include <memory>
#include <string>

#include "shmbus/rclcpp.hpp"
#include "std_msgs/msg/string.hpp"

namespace rclcpp = shmbus::rclcpp;

class MinimalPublisher : public rclcpp::Node {
 public:
  MinimalPublisher() : Node("minimal_publisher") {
    publisher_ = this->create_publisher<std_msgs::msg::String>("topic", 10);
    const auto period = std::chrono::milliseconds(this->declare_parameter<int>("period_ms", 500));
    timer_ = this->create_wall_timer(period, [this] { timer_callback(); });
  }

 private:
  void timer_callback() {
    auto message = std_msgs::msg::String();
    message.data = "Hello, world! " + std::to_string(count_++);
    RCLCPP_INFO(this->get_logger(), "Publishing: '%s'", message.data.c_str());
    publisher_->publish(message);
  }
  rclcpp::TimerBase::SharedPtr timer_;
  rclcpp::Publisher<std_msgs::msg::String>::SharedPtr publisher_;
  std::size_t count_ = 0;
};

int main(int argc, char* argv[]) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<MinimalPublisher>());
  rclcpp::shutdown();
  return 0;
}
