#pragma once
// What the multi-process tests ask of a channel from outside: its message
// count, the strings it carries, its rate as shmtool hz measures it beside
// its source's.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "multiprocess/child_process.hpp"
#include "shmbus/clock.hpp"
#include "shmbus/introspect.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus_msgs/String.hpp"

namespace shmbus::test {

/// Messages published into `channel` of `domain` so far (0: no channel).
inline std::uint64_t messages_of(const std::string& domain, const std::string& channel) {
  try {
    return introspect::ChannelReader(domain, channel).view().messages;
  } catch (const Error&) {
    return 0;
  }
}

/// Waits until `channel` of `domain` holds at least `n` messages.
inline bool wait_messages(const std::string& domain, const std::string& channel, std::uint64_t n,
                          std::chrono::milliseconds within) {
  const std::int64_t deadline = mono_now_ns() + within.count() * 1'000'000;
  while (mono_now_ns() < deadline) {
    if (messages_of(domain, channel) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// The `data` of the next `n` messages of a string type (shmbus_msgs/String
/// or ROS 2's std_msgs/String) within `within`, leaving out those that
/// start with `skip_prefix` (when given).
template <class StringType>
std::vector<std::string> take_strings(TypedSubscriber<StringType>& sub, std::size_t n, std::chrono::milliseconds within,
                                      std::string_view skip_prefix = {}) {
  std::vector<std::string> got;
  const std::int64_t deadline = mono_now_ns() + within.count() * 1'000'000;
  while (got.size() < n && mono_now_ns() < deadline) {
    if (auto m = sub.take()) {
      std::string text;
      if constexpr (requires { m->data.view(); }) {
        text = m->data.view();
      } else {
        text = std::move(m->data);
      }
      if (skip_prefix.empty() || !text.starts_with(skip_prefix)) got.push_back(std::move(text));
    } else {
      sub.wait(std::chrono::milliseconds(10));
    }
  }
  return got;
}

/// `shmtool hz` (at `shmtool`) on a source channel and on its copy (a
/// bridge's or a gateway's), measured at once over `window_s` windows
/// ending within milliseconds of each other: {source rate, copy rate}. A
/// test compares the copy with what the source really carried, never with
/// the rate asked of a publisher a busy machine may not have run on time.
struct ChannelAt {
  std::string domain;
  std::string channel;
};
inline std::pair<double, double> rates_at_once(const std::string& shmtool, const ChannelAt& source,
                                               const ChannelAt& copy, int window_s = 2) {
  const auto hz = [&](const ChannelAt& c) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{shmtool, "hz", c.channel, "--window", std::to_string(window_s), "-n", "1", "--json"},
        false, std::vector<std::string>{"SHMBUS_DOMAIN=" + c.domain});
  };
  auto a = hz(source);
  auto b = hz(copy);
  const auto rate = [](ChildProcess& p) {
    p.wait(std::chrono::seconds(15));
    try {
      return nlohmann::json::parse(p.output()).at("rate_hz").get<double>();
    } catch (const nlohmann::json::exception&) {
      ADD_FAILURE() << "shmtool hz said: " << p.output();
      return 0.0;
    }
  };
  const double ra = rate(*a);
  return {ra, rate(*b)};
}

}  // namespace shmbus::test
