// shmbus-bench-actions: one goal with feedback at 1 kHz between two
// processes, C++ to C++: an action (rclcpp_action's server and client over
// shmbus::action) against the same done by hand with two services and a
// channel (the send-goal service to start it, the feedback channel, the
// get-result service at its end: the same messages, no action layer).
//
//   first feedback: from sending the goal to its first feedback in the
//                   client's callback (the goal's acceptance on the way)
//   accepted:       from sending the goal to its acceptance (the send-goal
//                   round trip)
//   rate:           feedback received per second between the first and
//                   the last (the server publishes at `--rate`)
//   latency:        each feedback's publish (its stamp) to its callback, p50/p99
//   lost:           feedback published and not received
//
//   shmbus-bench-actions [--feedback 1000] [--rate 1000] [--repeat 3] [--json] [--smoke]
//
// Runs alternate between the two rows; each run's ratio action/by-hand is
// paired, and the medians reported.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_msgs/action/progress.hpp"
#include "peer_transports.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/rclcpp.hpp"
#include "shmbus/rclcpp_action.hpp"
#include "shmbus/service.hpp"

using namespace shmbus::bench;
namespace rclcpp = shmbus::rclcpp;
namespace rclcpp_action = shmbus::rclcpp_action;
using Progress = bench_msgs::action::Progress;

namespace {

constexpr std::uint32_t kMaxFeedback = 100'000;

/// What the two processes share: the server's readiness and its end.
struct Board {
  std::atomic<std::uint32_t> server_ready{0};
  std::atomic<std::uint32_t> client_done{0};
};

/// One run's figures, as the client measured them.
struct Figures {
  double first_feedback_ns = 0;
  double accepted_ns = 0;
  double rate_hz = 0;
  double latency_p50_ns = 0;
  double latency_p99_ns = 0;
  std::uint64_t lost = 0;
};

/// What the client saw: each feedback's arrival and stamp.
struct Received {
  std::mutex mutex;
  std::int64_t sent_ns = 0;
  std::int64_t accepted_ns = 0;
  std::vector<std::int64_t> arrival_ns;
  std::vector<double> latency_ns;
  bool done = false;
  void feedback(std::int64_t stamp_ns) {
    const std::int64_t now = now_ns();
    const std::lock_guard lock(mutex);
    arrival_ns.push_back(now);
    latency_ns.push_back(static_cast<double>(now - stamp_ns));
  }
  Figures figures(std::uint32_t count) {
    const std::lock_guard lock(mutex);
    Figures f;
    if (arrival_ns.empty()) return f;
    f.first_feedback_ns = static_cast<double>(arrival_ns.front() - sent_ns);
    f.accepted_ns = static_cast<double>(accepted_ns - sent_ns);
    if (arrival_ns.size() > 1) {
      f.rate_hz = static_cast<double>(arrival_ns.size() - 1) /
                  (static_cast<double>(arrival_ns.back() - arrival_ns.front()) / 1e9);
    }
    f.latency_p50_ns = percentile(latency_ns, 0.5);
    f.latency_p99_ns = percentile(latency_ns, 0.99);
    f.lost = count - arrival_ns.size();
    return f;
  }
};

/// Publishes `count` feedback messages, one every `period`, on its own
/// schedule (absolute deadlines: a late one does not shift the rest).
template <typename Publish>
void pace(std::uint32_t count, std::chrono::microseconds period, Publish&& publish) {
  const std::int64_t start = now_ns();
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::int64_t due = start + static_cast<std::int64_t>(i) * period.count() * 1000;
    while (now_ns() < due) std::this_thread::sleep_for(std::chrono::microseconds(50));
    publish(i);
  }
}

// ---- The action row.

[[noreturn]] void action_server(const std::string& domain, Board& b) {
  setenv("SHMBUS_DOMAIN", domain.c_str(), 1);
  auto node = std::make_shared<rclcpp::Node>("bench_action_server");
  std::vector<std::thread> goals;
  auto server = rclcpp_action::create_server<Progress>(
      node, "/bench/progress",
      [](const rclcpp_action::GoalUUID&, std::shared_ptr<const Progress::Goal>) {
        return rclcpp_action::GoalResponse::ACCEPT_AND_EXECUTE;
      },
      [](std::shared_ptr<rclcpp_action::ServerGoalHandle<Progress>>) { return rclcpp_action::CancelResponse::ACCEPT; },
      [&goals](std::shared_ptr<rclcpp_action::ServerGoalHandle<Progress>> h) {
        goals.emplace_back([h] {
          auto feedback = std::make_shared<Progress::Feedback>();
          const auto goal = h->get_goal();
          pace(goal->count, std::chrono::microseconds(goal->period_us), [&](std::uint32_t i) {
            feedback->index = i;
            feedback->stamp_ns = now_ns();
            h->publish_feedback(feedback);
          });
          auto result = std::make_shared<Progress::Result>();
          result->sent = goal->count;
          h->succeed(result);
        });
      });
  b.server_ready.store(1);
  while (b.client_done.load() == 0) node->shmbus_node().spin_once(std::chrono::milliseconds(10));
  for (auto& t : goals) t.join();
  ::_exit(0);
}

Figures action_client(Received& r, std::uint32_t count, std::uint32_t period_us) {
  auto node = std::make_shared<rclcpp::Node>("bench_action_client");
  auto client = rclcpp_action::create_client<Progress>(node, "/bench/progress");
  if (!client->wait_for_action_server(std::chrono::seconds(10))) throw std::runtime_error("no action server");
  rclcpp_action::Client<Progress>::SendGoalOptions o;
  o.goal_response_callback = [&r](const auto&) {
    const std::lock_guard lock(r.mutex);
    r.accepted_ns = now_ns();
  };
  o.feedback_callback = [&r](auto, const std::shared_ptr<const Progress::Feedback>& f) { r.feedback(f->stamp_ns); };
  o.result_callback = [&r](const auto&) {
    const std::lock_guard lock(r.mutex);
    r.done = true;
  };
  Progress::Goal g;
  g.count = count;
  g.period_us = period_us;
  r.sent_ns = now_ns();
  client->async_send_goal(g, o);
  const std::int64_t deadline = now_ns() + 60'000'000'000;
  for (;;) {
    node->shmbus_node().spin_once(std::chrono::milliseconds(10));
    const std::lock_guard lock(r.mutex);
    if (r.done || now_ns() > deadline) break;
  }
  return r.figures(count);
}

// ---- By hand: two services and a channel, the same messages.

using SendGoal = Progress::Impl::SendGoalService;
using GetResult = Progress::Impl::GetResultService;
using FeedbackMessage = Progress::Impl::FeedbackMessage;

[[noreturn]] void hand_server(const std::string& domain, Board& b) {
  setenv("SHMBUS_DOMAIN", domain.c_str(), 1);
  shmbus::Node node("bench_hand_server");
  auto& feedback = node.publisher<FeedbackMessage>("/bench/hand/feedback");
  std::thread goal;
  std::atomic<std::uint32_t> sent{0};
  shmbus::TypedServiceServer<SendGoal> start(
      node, "/bench/hand/start", [&](const SendGoal::Request& req, SendGoal::Response& rsp) {
        rsp.accepted = true;
        goal = std::thread([&feedback, &sent, req] {
          FeedbackMessage m{};
          m.goal_id = req.goal_id;
          pace(req.goal.count, std::chrono::microseconds(req.goal.period_us), [&](std::uint32_t i) {
            m.feedback.index = i;
            m.feedback.stamp_ns = now_ns();
            static_cast<void>(feedback.publish(m));
          });
          sent.store(req.goal.count);
        });
      });
  shmbus::TypedServiceServer<GetResult> result(node, "/bench/hand/result",
                                               [&](const GetResult::Request&, GetResult::Response& rsp) {
                                                 rsp.status = 4;
                                                 rsp.result.sent = sent.load();
                                               });
  b.server_ready.store(1);
  while (b.client_done.load() == 0) node.spin_once(std::chrono::milliseconds(10));
  if (goal.joinable()) goal.join();
  ::_exit(0);
}

Figures hand_client(Received& r, std::uint32_t count, std::uint32_t period_us) {
  shmbus::Node node("bench_hand_client");
  node.subscribe<FeedbackMessage>("/bench/hand/feedback",
                                  [&r](const FeedbackMessage& m) { r.feedback(m.feedback.stamp_ns); });
  shmbus::TypedServiceClient<SendGoal> start("/bench/hand/start");
  shmbus::TypedServiceClient<GetResult> result("/bench/hand/result");
  if (!start.wait_for_server(std::chrono::seconds(10))) throw std::runtime_error("no start server");
  SendGoal::Request req{};
  req.goal_id.uuid = shmbus::action::random_goal_id();
  req.goal.count = count;
  req.goal.period_us = period_us;
  SendGoal::Response rsp{};
  r.sent_ns = now_ns();
  if (!start.call(req, rsp, std::chrono::seconds(10)).ok()) throw std::runtime_error("start failed");
  r.accepted_ns = now_ns();
  const std::int64_t deadline = now_ns() + 60'000'000'000;
  for (;;) {
    node.spin_once(std::chrono::milliseconds(10));
    const std::lock_guard lock(r.mutex);
    if (r.arrival_ns.size() >= count || now_ns() > deadline) break;
  }
  GetResult::Request q{};
  q.goal_id = req.goal_id;
  GetResult::Response a{};
  static_cast<void>(result.call(q, a, std::chrono::seconds(10)));
  return r.figures(count);
}

/// One run of `row` in a fresh domain: the server forked, the client here.
Figures run_once(const std::string& row, std::uint32_t count, std::uint32_t period_us, unsigned n) {
  const std::string domain = fmt::format("bench_action_{}_{}_{}", ::getpid(), row, n);
  void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("cannot map the run's board");
  Board& b = *new (p) Board();
  const pid_t server = fork_side();
  if (server == 0) row == "action" ? action_server(domain, b) : hand_server(domain, b);
  while (b.server_ready.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  setenv("SHMBUS_DOMAIN", domain.c_str(), 1);
  Figures f;
  {
    shmbus::Context ctx(shmbus::Config{.domain = domain});
    Received r;
    f = row == "action" ? action_client(r, count, period_us) : hand_client(r, count, period_us);
  }
  b.client_done.store(1);
  int status = 0;
  ::waitpid(server, &status, 0);
  ::munmap(p, sizeof(Board));
  shmbus::introspect::clean_domain(domain, false);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One goal with feedback at a rate, action against two services and a channel", "shmbus-bench-actions"};
  std::uint32_t count = 1000;
  double rate = 1000;
  unsigned repeat = 3;
  bool json = false;
  bool smoke = false;
  app.add_option("--feedback", count, "feedback messages per goal (default 1000)")->check(CLI::Range(2U, kMaxFeedback));
  app.add_option("--rate", rate, "feedback per second (default 1000)")->check(CLI::Range(1.0, 100000.0));
  app.add_option("--repeat", repeat, "runs per row, alternating; medians and paired ratios")->check(CLI::Range(1, 50));
  app.add_flag("--json", json, "one JSON object");
  app.add_flag("--smoke", smoke, "one short run (CI)");
  CLI11_PARSE(app, argc, argv);
  if (smoke) {
    count = 50;
    repeat = 1;
  }
  const auto period_us = static_cast<std::uint32_t>(1e6 / rate);
  std::map<std::string, std::vector<Figures>> runs;
  std::vector<double> first_ratio, rate_ratio, latency_ratio;
  for (unsigned k = 0; k < repeat; ++k) {
    const Figures a = run_once("action", count, period_us, k);
    const Figures h = run_once("by_hand", count, period_us, k);
    runs["action"].push_back(a);
    runs["by_hand"].push_back(h);
    first_ratio.push_back(a.first_feedback_ns / h.first_feedback_ns);
    rate_ratio.push_back(a.rate_hz / h.rate_hz);
    latency_ratio.push_back(a.latency_p50_ns / h.latency_p50_ns);
  }
  const auto med = [&](const std::string& row, double Figures::*m) {
    std::vector<double> v;
    for (const Figures& f : runs[row]) v.push_back(f.*m);
    return median(v);
  };
  const auto lost = [&](const std::string& row) {
    std::uint64_t n = 0;
    for (const Figures& f : runs[row]) n += f.lost;
    return n;
  };
  if (json) {
    nlohmann::json out;
    for (const char* row : {"action", "by_hand"}) {
      out[row] = {{"first_feedback_ns", med(row, &Figures::first_feedback_ns)},
                  {"accepted_ns", med(row, &Figures::accepted_ns)},
                  {"rate_hz", med(row, &Figures::rate_hz)},
                  {"latency_p50_ns", med(row, &Figures::latency_p50_ns)},
                  {"latency_p99_ns", med(row, &Figures::latency_p99_ns)},
                  {"lost", lost(row)}};
    }
    out["ratio"] = {
        {"first_feedback", median(first_ratio)}, {"rate", median(rate_ratio)}, {"latency_p50", median(latency_ratio)}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("one goal, {} feedback at {} Hz, {} runs per row (medians)\n", count, rate, repeat);
  fmt::print("{:<9} {:>15} {:>10} {:>10} {:>12} {:>12} {:>6}\n", "row", "first feedback", "accepted", "rate",
             "latency p50", "latency p99", "lost");
  for (const char* row : {"action", "by_hand"}) {
    fmt::print("{:<9} {:>15} {:>10} {:>9.1f} {:>12} {:>12} {:>6}\n", row,
               format_ns(med(row, &Figures::first_feedback_ns)), format_ns(med(row, &Figures::accepted_ns)),
               med(row, &Figures::rate_hz), format_ns(med(row, &Figures::latency_p50_ns)),
               format_ns(med(row, &Figures::latency_p99_ns)), lost(row));
  }
  fmt::print("action / by hand (paired, median): first feedback {:.3f}x, rate {:.3f}x, latency p50 {:.3f}x\n",
             median(first_ratio), median(rate_ratio), median(latency_ratio));
  return lost("action") + lost("by_hand") == 0 ? 0 : 1;
}
