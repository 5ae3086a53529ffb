// A C++ publisher of 640x480 rgb8 shmbus_msgs/Image frames for the Python
// package's tests. Reads lines from stdin: each a count N; publishes N
// frames (header.seq counting from 0, pixel (y, x, c) = (y + 2x + 3c +
// seq) mod 256), then prints "published TOTAL". Exits at end of input.
//   image_publisher CHANNEL
#include <cstdio>
#include <iostream>
#include <string>

#include "shmbus/publisher.hpp"
#include "shmbus_msgs/Image.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: image_publisher CHANNEL\n");
    return 2;
  }
  constexpr std::uint32_t kWidth = 640;
  constexpr std::uint32_t kHeight = 480;
  constexpr std::uint32_t kStep = kWidth * 3;
  shmbus::TypedPublisher<shmbus_msgs::Image> pub(argv[1]);
  std::uint32_t seq = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    const unsigned long n = std::stoul(line);
    for (unsigned long i = 0; i < n; ++i, ++seq) {
      // Built in the loan: the fixed part, then the pixels after it.
      shmbus::Loan loan = pub.loan(shmbus_msgs::Image::View::kFixedSize + 8 + std::size_t{kStep} * kHeight);
      if (!loan) return 1;
      shmbus::msg::Writer writer(loan.data());
      shmbus_msgs::Image::Builder img(writer);
      img.header().seq = seq;
      img.set_height(kHeight);
      img.set_width(kWidth);
      img.set_encoding("rgb8");
      img.set_step(kStep);
      std::uint8_t* px = img.resize_data(std::size_t{kStep} * kHeight).data();
      for (std::uint32_t y = 0; y < kHeight; ++y) {
        for (std::uint32_t x = 0; x < kWidth; ++x) {
          for (std::uint32_t c = 0; c < 3; ++c)
            px[y * kStep + x * 3 + c] = static_cast<std::uint8_t>(y + 2 * x + 3 * c + seq);
        }
      }
      if (pub.commit(loan, writer.size()) != shmbus::PublishResult::kOk) return 1;
    }
    std::printf("published %u\n", seq);
    std::fflush(stdout);
  }
  return 0;
}
