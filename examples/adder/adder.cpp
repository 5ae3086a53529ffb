// shmbus-example-adder: serves example_srvs/AddTwoInts on /example/add.
//
//   shmbus-example-adder [--service NAME] [--delay DUR]
//
// Answers sum = a + b; a sum that overflows int64 fails the call (the
// client gets "server error"). --delay holds each answer back (a slow
// server, for the timeout and crash tests). Ctrl-C or SIGTERM ends it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "example_srvs/srv/add_two_ints.hpp"
#include "shmbus/cli.hpp"
#include "shmbus/node.hpp"
#include "shmbus/service.hpp"

int main(int argc, char** argv) {
  return shmbus::cli::guarded("shmbus-example-adder", [&] {
    CLI::App app{"serve example_srvs/AddTwoInts: sum = a + b", "shmbus-example-adder"};
    std::string service = "/example/add";
    std::string delay_text = "0ms";
    app.add_option("--service", service, "the service name")->capture_default_str();
    app.add_option("--delay", delay_text, "hold each answer back this long (100ms, 1s)")->capture_default_str();
    if (auto rc = shmbus::cli::parse(app, argc, argv)) return *rc;
    const auto delay = shmbus::parse_duration(delay_text);
    if (!delay)
      throw shmbus::Error(shmbus::Errc::kInvalidArgument,
                          "--delay " + delay_text + " is not a duration; use e.g. 100ms or 1s");

    shmbus::Node node("adder");
    shmbus::TypedServiceServer<example_srvs::srv::AddTwoInts> server(
        node, service,
        [&](const example_srvs::srv::AddTwoInts::Request& req, example_srvs::srv::AddTwoInts::Response& rsp) {
          if (*delay > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(*delay);
          if (__builtin_add_overflow(req.a, req.b, &rsp.sum)) throw std::overflow_error("a + b overflows int64");
        });
    std::printf("serving %s (example_srvs/AddTwoInts)\n", service.c_str());
    std::fflush(stdout);
    node.spin();  // until Ctrl-C or SIGTERM
    std::printf("served %llu requests\n", static_cast<unsigned long long>(server.untyped().served()));
    return 0;
  });
}
