// shmbus-bench-image-node: the C++ side of bench_python.py's image row. A
// Node subscribes in place to shmbus_msgs/Image frames on CHANNEL and, after
// FRAMES of them, prints the median delay from publish to callback (ns), so
// that the Python Node's figure is paired with the C++ Node's in one run.
//   shmbus-bench-image-node CHANNEL FRAMES
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "shmbus/clock.hpp"
#include "shmbus/node.hpp"
#include "shmbus_msgs/Image.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: shmbus-bench-image-node CHANNEL FRAMES\n");
    return 2;
  }
  const std::size_t frames = std::stoul(argv[2]);
  shmbus::Node node("image_viewer_cpp");
  std::vector<std::int64_t> delays;
  delays.reserve(frames);
  shmbus::SubscriptionOptions o;
  o.in_place = true;
  node.subscribe<shmbus_msgs::Image>(
      argv[1],
      [&](const shmbus_msgs::Image::View& img, const shmbus::MessageInfo& info) {
        // The same work as the Python callback: the pixels' last byte.
        volatile std::uint8_t last = img.data().back();
        (void)last;
        delays.push_back(shmbus::mono_now_ns() - info.publish_time_ns);
        if (delays.size() == frames) node.stop();
      },
      o);
  std::printf("ready\n");
  std::fflush(stdout);
  node.spin();
  std::vector<std::int64_t> kept(delays.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(10, delays.size())),
                                 delays.end());
  if (kept.empty()) return 1;
  std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(kept.size() / 2), kept.end());
  std::printf("p50_ns %lld\n", static_cast<long long>(kept[kept.size() / 2]));
  return 0;
}
