// A program outside the shmbus tree, built against the installed package:
// a generated message of its own, published, taken and decoded to JSON.
#include <unistd.h>

#include <consumer_msgs/Reading.hpp>
#include <cstdio>
#include <shmbus/introspect.hpp>
#include <shmbus/schema.hpp>
#include <shmbus/shmbus.hpp>
#include <string>

int main() {
  shmbus::Config config;
  config.domain = "consumer_" + std::to_string(::getpid());
  shmbus::Context ctx{config};
  double value = 0;
  std::string json;
  {
    shmbus::TypedPublisher<consumer_msgs::Reading> pub("/answer", ctx);
    shmbus::TypedSubscriber<consumer_msgs::Reading> sub("/answer", ctx);
    consumer_msgs::Reading r{};
    r.header.frame_id.assign("here");
    r.value = 42;
    pub.publish(r);
    if (auto got = sub.take()) {
      value = got->value;
      const auto schema = shmbus::schema::Schema::from_canonical(sub.untyped().type().schema);
      json = schema.decode(std::as_bytes(std::span{&*got, 1})).dump();
    }
  }
  shmbus::introspect::clean_domain(config.domain, false);
  std::printf("consumer: received %g as %s\n", value, json.c_str());
  return value == 42 ? 0 : 1;
}
