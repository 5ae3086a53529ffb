#pragma once
/// @file context.hpp
/// A process's view of one domain: its configuration, its node name and the
/// shared-memory objects it has mapped.

#include <memory>
#include <string>

#include "shmbus/config.hpp"

namespace shmbus {

namespace detail {
class DomainState;
}

/// The domain, node identity and configuration publishers and subscribers
/// are created in. Most programs use process_default(); tests and tools make
/// their own to use several domains in one process.
/// Thread-safety: all members may be called from any thread.
class Context {
 public:
  /// Uses `config` (domain, node, channel settings). Throws
  /// Error(kInvalidArgument) for a bad domain or node name.
  explicit Context(Config config = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The context made from the environment at first use: SHMBUS_CONFIG,
  /// SHMBUS_DOMAIN. Throws Error(kConfig) when that file is bad.
  static Context& process_default();

  [[nodiscard]] const Config& config() const noexcept { return config_; }
  [[nodiscard]] const std::string& domain() const noexcept { return config_.domain; }
  /// The node name: the configuration's `node`, else the program's name.
  [[nodiscard]] const std::string& node() const noexcept { return node_; }

  /// Internal: the mapped registry and channels of this context's domain.
  [[nodiscard]] detail::DomainState& state() const { return *state_; }

 private:
  Config config_;
  std::string node_;
  std::unique_ptr<detail::DomainState> state_;
};

}  // namespace shmbus
