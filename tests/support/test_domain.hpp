#pragma once
// A unique domain per test, so suites run in parallel, and its segments
// removed afterwards.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "shmbus/config.hpp"
#include "shmbus/context.hpp"
#include "shmbus/introspect.hpp"
#include "support/sanitizers.hpp"

namespace shmbus::test {

/// A domain name no live process uses (it holds our pid). Segments under
/// it are left-overs of a dead process that had our pid, possibly of an
/// older layout: they are removed first, so they cannot fail the test.
inline std::string unique_domain(const std::string& tag) {
  static std::atomic<int> counter{0};
  std::string domain = "t" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1));
  introspect::clean_domain(domain, false);
  return domain;
}

/// Owns a Context on a fresh domain; removes the domain's segments at the
/// end (after the endpoints, which the test destroys first).
class TestDomain {
 public:
  explicit TestDomain(Config config = {}, const std::string& tag = "d") {
    config.domain = unique_domain(tag);
    // Under emulation a publish takes tens of times longer, and a publisher
    // preempted inside one for the default 2 ms has its message skipped by
    // readers: the default becomes 100 ms there, as for the programs the
    // tests start (tests/support/emulated.toml).
    if (emulated() != nullptr && config.defaults.stall_timeout == Config{}.defaults.stall_timeout) {
      config.defaults.stall_timeout = std::chrono::milliseconds(100);
    }
    if (config.node.empty()) config.node = "test";
    context_ = std::make_unique<Context>(std::move(config));
  }
  ~TestDomain() { introspect::clean_domain(context_->domain(), false); }
  TestDomain(const TestDomain&) = delete;
  TestDomain& operator=(const TestDomain&) = delete;

  Context& context() { return *context_; }
  const std::string& domain() const { return context_->domain(); }

 private:
  std::unique_ptr<Context> context_;
};

/// Removes a domain's segments when it goes out of scope: declare it before
/// the test's own endpoints, so it runs after they are gone (a live
/// endpoint keeps its channel's segment).
struct DomainCleanup {
  std::string domain;
  ~DomainCleanup() { introspect::clean_domain(domain, false); }
};

}  // namespace shmbus::test
