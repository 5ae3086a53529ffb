// The pipeline example: four modules whose graph is
//
//   sensors --c1,c2--> m1 --c3--> m2 --c5-->
//   sensors --c4-----------------> m2
//   m3 --c6----------------------> m2
//
// One program, one module per process: shmbus-example-pipeline --module
// sensors|m1|m2|m3. Each module computes something checkable from its
// inputs only, so a replay that feeds it the same inputs gets the same
// output, and --gain (m1) changes it in a known way (a "new version").
//   m1: c3 = {c1.seq, gain * (c1.value + c2.value)}, c2 of the same frame
//   m2: c5 = {c3.seq, c3.value + c4.value + c6.value + c3.seq + c4.seq + c6.seq},
//       c4 and c6 the latest taken
// Inputs come from Node callbacks (c1, c3) and from what the callback takes
// (c2, c4, c6): provenance records all of them with no code here.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <shmbus/cli.hpp>
#include <shmbus/node.hpp>
#include <shmbus/subscriber.hpp>

#include "pipeline_msgs/Sample.hpp"

namespace {

using pipeline_msgs::Sample;
using namespace std::chrono_literals;

struct Options {
  std::string module;
  double gain = 1.0;
  double rate_hz = 50.0;
  std::uint64_t count = 0;  ///< sensors, m3: stop after this many c1 (c6) messages; 0: until Ctrl-C
};

/// Takes `sub`'s messages in order up to the one of frame `seq` (default:
/// every one waiting). A frame's message its publisher sent before the
/// trigger is found; a later frame's stays queued for that frame (a module
/// running late pairs the frames all the same). The last one taken stays in
/// `latest`.
void take_until(shmbus::TypedSubscriber<Sample>& sub, Sample& latest,
                std::uint64_t seq = std::numeric_limits<std::uint64_t>::max()) {
  while (const std::optional<Sample> s = sub.take()) {
    latest = *s;
    if (s->seq >= seq) return;
  }
}

int run(const Options& o) {
  shmbus::Node node(o.module);
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / o.rate_hz));
  // Side inputs, taken inside a callback: registered under the module's name.
  const shmbus::SubscriberOptions side{.node = o.module};
  if (o.module == "sensors") {
    auto& c1 = node.publisher<Sample>("/pipeline/c1");
    auto& c2 = node.publisher<Sample>("/pipeline/c2");
    auto& c4 = node.publisher<Sample>("/pipeline/c4");
    // The timers outlive this block: they own their counters.
    node.every(period, [&c1, &c2, &c4, &node, count = o.count, n = std::uint64_t{0}]() mutable {
      c2.publish(Sample{n, 2.0 * static_cast<double>(n)});  // before c1: m1 finds it when c1 arrives
      if (n % 2 == 0) c4.publish(Sample{n / 2, 10.0 * static_cast<double>(n / 2)});
      c1.publish(Sample{n, static_cast<double>(n)});
      if (++n == count) node.stop();
    });
  } else if (o.module == "m3") {
    auto& c6 = node.publisher<Sample>("/pipeline/c6");
    node.every(period * 4, [&c6, &node, count = o.count, n = std::uint64_t{0}]() mutable {
      c6.publish(Sample{n, 100.0 + static_cast<double>(n)});
      if (++n == count) node.stop();
    });
  } else if (o.module == "m1") {
    auto& c3 = node.publisher<Sample>("/pipeline/c3");
    auto c2 = std::make_shared<shmbus::TypedSubscriber<Sample>>("/pipeline/c2", node.context(), side);
    auto latest_c2 = std::make_shared<Sample>();
    node.subscribe<Sample>("/pipeline/c1",
                           [&c3, c2, latest_c2, gain = o.gain](const Sample& c1, const shmbus::MessageInfo&) {
                             take_until(*c2, *latest_c2, c1.seq);
                             c3.publish(Sample{c1.seq, gain * (c1.value + latest_c2->value)});
                           });
  } else if (o.module == "m2") {
    auto& c5 = node.publisher<Sample>("/pipeline/c5");
    auto c4 = std::make_shared<shmbus::TypedSubscriber<Sample>>("/pipeline/c4", node.context(), side);
    auto c6 = std::make_shared<shmbus::TypedSubscriber<Sample>>("/pipeline/c6", node.context(), side);
    auto latest = std::make_shared<std::pair<Sample, Sample>>();
    node.subscribe<Sample>("/pipeline/c3", [&c5, c4, c6, latest](const Sample& c3, const shmbus::MessageInfo&) {
      take_until(*c4, latest->first);
      take_until(*c6, latest->second);
      const Sample& s4 = latest->first;
      const Sample& s6 = latest->second;
      c5.publish(Sample{c3.seq, c3.value + s4.value + s6.value + static_cast<double>(c3.seq + s4.seq + s6.seq)});
    });
  }
  std::printf("%s running\n", o.module.c_str());
  std::fflush(stdout);
  node.spin();  // until Ctrl-C, SIGTERM or --count
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"one module of the pipeline example (sensors, m1, m2, m3) per process", "shmbus-example-pipeline"};
  Options o;
  app.add_option("--module", o.module, "the module to run")
      ->required()
      ->check(CLI::IsMember({"sensors", "m1", "m2", "m3"}));
  app.add_option("--gain", o.gain, "m1: the factor of its output (default 1)");
  app.add_option("--rate", o.rate_hz, "sensors, m3: messages per second (default 50)")->check(CLI::PositiveNumber);
  app.add_option("--count", o.count, "sensors, m3: stop after this many messages (default: until Ctrl-C)");
  if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
  return shmbus::cli::guarded("shmbus-example-pipeline", [&] { return run(o); });
}
