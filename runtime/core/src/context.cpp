#include "shmbus/context.hpp"

#include "channel.hpp"
#include "process.hpp"
#include "shmbus/names.hpp"

namespace shmbus {

Context::Context(Config config) : config_(std::move(config)) {
  validate_domain_name(config_.domain);
  node_ = config_.node.empty() ? detail::program_name() : config_.node;
  if (node_.size() > kMaxNodeName) node_.resize(kMaxNodeName);
  state_ = std::make_unique<detail::DomainState>(config_);
}

Context::~Context() = default;

Context& Context::process_default() {
  static Context context{Config::from_environment()};
  return context;
}

}  // namespace shmbus
