#pragma once
// The no-loop check both gateway suites run: two domains whose gateways
// export and import "*" carry each message exactly once each way.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "shmbus/clock.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus_msgs/String.hpp"
#include "support/channel_checks.hpp"
#include "support/test_domain.hpp"

namespace shmbus::test {

/// Publishes /gw/x in `a` and /gw/y in `b` (their gateways already carry
/// "*" both ways): once both flow, 300 more each way arrive once on the other
/// side and nothing comes back. `logs()` is printed on a failure.
inline void expect_each_message_once_each_way(TestDomain& a, TestDomain& b, const std::function<std::string()>& logs) {
  using namespace std::chrono_literals;
  TypedPublisher<shmbus_msgs::String> x("/gw/x", a.context());
  TypedPublisher<shmbus_msgs::String> y("/gw/y", b.context());
  const auto text = [](const std::string& s) {
    shmbus_msgs::String m{};
    m.data.assign(s);
    return m;
  };
  // Warm up until both ways flow (discovery and matching take a moment;
  // what is published before the two sides matched is not carried).
  const std::int64_t deadline = mono_now_ns() + 15'000'000'000;
  while ((messages_of(b.domain(), "/gw/x") == 0 || messages_of(a.domain(), "/gw/y") == 0) && mono_now_ns() < deadline) {
    static_cast<void>(x.publish(text("warm")));
    static_cast<void>(y.publish(text("warm")));
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GT(messages_of(b.domain(), "/gw/x"), 0U) << logs();
  ASSERT_GT(messages_of(a.domain(), "/gw/y"), 0U) << logs();
  std::this_thread::sleep_for(300ms);  // the warm-up's last messages land, then the counts start
  const std::uint64_t x_a = messages_of(a.domain(), "/gw/x"), x_b = messages_of(b.domain(), "/gw/x");
  const std::uint64_t y_a = messages_of(a.domain(), "/gw/y"), y_b = messages_of(b.domain(), "/gw/y");
  constexpr int kCount = 300;
  for (int i = 0; i < kCount; ++i) {
    static_cast<void>(x.publish(text(std::string{"x"}.append(std::to_string(i)))));
    static_cast<void>(y.publish(text(std::string{"y"}.append(std::to_string(i)))));
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(wait_messages(b.domain(), "/gw/x", x_b + kCount, 10s)) << logs();
  ASSERT_TRUE(wait_messages(a.domain(), "/gw/y", y_a + kCount, 10s)) << logs();
  std::this_thread::sleep_for(500ms);  // an echo, if there were one, would land now
  EXPECT_EQ(messages_of(a.domain(), "/gw/x"), x_a + kCount) << "nothing came back to A's own channel";
  EXPECT_EQ(messages_of(b.domain(), "/gw/x"), x_b + kCount) << "each message once on B";
  EXPECT_EQ(messages_of(b.domain(), "/gw/y"), y_b + kCount);
  EXPECT_EQ(messages_of(a.domain(), "/gw/y"), y_a + kCount);
}

}  // namespace shmbus::test
