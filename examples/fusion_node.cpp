// A whole module: two subscriptions, a fused output, a 10 Hz report; Ctrl-C ends it.
#include <cstdio>
#include <shmbus/node.hpp>

// clang-format off
struct Imu { static constexpr const char* kTypeName = "example/Imu"; static constexpr std::uint64_t kTypeHash = 1; double accel; };
struct Odom { static constexpr const char* kTypeName = "example/Odom"; static constexpr std::uint64_t kTypeHash = 2; double x; };
struct Pose { static constexpr const char* kTypeName = "example/Pose"; static constexpr std::uint64_t kTypeHash = 3; double x, v; };
// clang-format on

int main(int argc, char** argv) try {
  if (auto rc = shmbus::module_arguments(argc, argv, "fusion-node", "fuses /imu and /odom into /pose")) return *rc;
  shmbus::Node node("fusion");  // the name shmtool and shmbusd show
  auto& out = node.publisher<Pose>("/pose");
  Pose pose{};
  node.subscribe<Imu>("/imu", [&](const Imu& m, const shmbus::MessageInfo&) {
    pose.v += m.accel * 0.001;  // integrate at the IMU's rate
  });
  node.subscribe<Odom>("/odom", [&](const Odom& m, const shmbus::MessageInfo&) {
    pose.x = 0.9 * pose.x + 0.1 * m.x;  // fuse
    out.publish(pose);                  // cites this /odom message as its input
  });
  node.every(std::chrono::milliseconds(100), [&] {  // 10 Hz on absolute deadlines
    std::printf("x=%.3f v=%.3f\n", pose.x, pose.v);
  });
  node.spin();  // until Ctrl-C; endpoints unregistered
} catch (const shmbus::Error& e) {
  std::fprintf(stderr, "fusion: %s\n", e.what());
  return e.exit_code();
}
