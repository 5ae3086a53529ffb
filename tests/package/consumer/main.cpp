// A program outside the shmbus tree, built against the installed package.
#include <shmbus/introspect.hpp>
#include <shmbus/shmbus.hpp>

#include <unistd.h>
#include <cstdio>
#include <string>

int main() {
  shmbus::Config config;
  config.domain = "consumer_" + std::to_string(::getpid());
  shmbus::Context ctx{config};
  int value = 0;
  {
    shmbus::Publisher pub("/answer", shmbus::TypeInfo::bytes(), ctx);
    shmbus::Subscriber sub("/answer", shmbus::TypeInfo::bytes(), ctx);
    const int sent = 42;
    pub.publish(&sent, sizeof(sent));
    sub.take(std::as_writable_bytes(std::span{&value, 1}));
  }
  shmbus::introspect::clean_domain(config.domain, false);
  std::printf("consumer: received %d\n", value);
  return value == 42 ? 0 : 1;
}
