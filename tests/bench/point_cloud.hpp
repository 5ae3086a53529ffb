#pragma once
// The PointCloud2-shaped message the benchmarks build (ROS 2's fields,
// generated C++): a frame, four float32 fields x, y, z, intensity, 16
// bytes a point.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ros2_test_msgs/PointCloud.hpp"

namespace shmbus::bench {

/// Writes a cloud with `bytes` of points and `width` through `w`, its
/// points' block claimed, not written (a driver fills it): the points.
inline std::span<std::uint8_t> build_cloud(msg::Writer& w, std::size_t bytes, std::uint32_t width) {
  ros2_test_msgs::PointCloud::Builder b(w);
  b.header().set_frame_id("lidar_top");
  b.set_height(1);
  b.set_width(width);
  b.resize_fields(4);
  for (std::size_t i = 0; i < 4; ++i) {
    auto f = b.fields(i);
    f.set_name(std::string_view("xyzi").substr(i, 1));
    f.set_offset(static_cast<std::uint32_t>(4 * i));
    f.set_datatype(ros2_test_msgs::PointField::FLOAT32);
    f.set_count(1);
  }
  b.set_point_step(16);
  b.set_row_step(static_cast<std::uint32_t>(bytes));
  const std::span<std::uint8_t> points = b.resize_data(bytes);
  b.set_is_dense(true);
  return points;
}

}  // namespace shmbus::bench
