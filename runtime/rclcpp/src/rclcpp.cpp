#include "shmbus/rclcpp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <set>

#include "shmbus/stop_signals.hpp"

namespace shmbus::rclcpp {

namespace {

/// The process's state: what init() read, whether shutdown() came, and the
/// nodes to stop then.
struct Process {
  std::mutex mutex;
  RosArguments arguments;
  bool initialized = false;
  std::atomic<bool> shut_down{false};
  std::set<shmbus::Node*> nodes;
  std::set<std::string> said;  ///< QoS settings said once
};

Process& process() {
  static Process p;
  return p;
}

/// One line on stderr, once per process for each `what`.
void say_once(const std::string& what) {
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  if (p.said.insert(what).second) std::fprintf(stderr, "shmbus.rclcpp: %s\n", what.c_str());
}

std::vector<std::string> args_of(int argc, const char* const argv[]) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) out.emplace_back(argv[i]);
  return out;
}

/// The last rule of `rules` for node `node` (node-specific or not), or
/// `fallback`.
std::string last_rule(const std::vector<RemapRule>& rules, const std::string& node, const std::string& fallback) {
  std::string out = fallback;
  for (const RemapRule& r : rules) {
    if (r.node.empty() || r.node == node) out = r.to;
  }
  return out;
}

}  // namespace

// ---- The process.

void init(int argc, const char* const argv[], const InitOptions& /*options*/) {
  RosArguments a = parse_ros_arguments(args_of(argc, argv));
  // Levels checked now: a bad one is refused here, naming it.
  if (!a.log_level.empty()) static_cast<void>(detail::level_named(a.log_level));
  for (const auto& [name, level] : a.log_levels) static_cast<void>(detail::level_named(level));
  install_stop_signals();
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  p.arguments = std::move(a);
  p.initialized = true;
  p.shut_down.store(false);
}

void shutdown() {
  Process& p = process();
  p.shut_down.store(true);
  const std::lock_guard lock(p.mutex);
  for (shmbus::Node* n : p.nodes) n->stop();
}

bool ok() { return !process().shut_down.load() && !stop_signalled(); }

std::vector<std::string> remove_ros_arguments(int argc, const char* const argv[]) {
  std::vector<std::string> out{argc > 0 ? std::string(argv[0]) : std::string()};
  for (std::string& a : rclcpp::remove_ros_arguments(args_of(argc, argv))) out.push_back(std::move(a));
  return out;
}

RosArguments global_arguments() {
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  return p.arguments;
}

bool sleep_for(std::chrono::nanoseconds period) {
  const auto end = std::chrono::steady_clock::now() + period;
  while (ok()) {
    const auto left = end - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) return true;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(20)));
  }
  return false;
}

// ---- Time.

Duration::operator builtin_interfaces::msg::Duration() const {
  builtin_interfaces::msg::Duration d;
  const std::int64_t s = ns_ >= 0 ? ns_ / 1'000'000'000 : -((-ns_ + 999'999'999) / 1'000'000'000);
  d.sec = static_cast<std::int32_t>(s);
  d.nanosec = static_cast<std::uint32_t>(ns_ - s * 1'000'000'000);
  return d;
}

Time::operator builtin_interfaces::msg::Time() const {
  builtin_interfaces::msg::Time t;
  t.sec = static_cast<std::int32_t>(ns_ / 1'000'000'000);
  t.nanosec = static_cast<std::uint32_t>(ns_ % 1'000'000'000);
  return t;
}

Time Clock::now() const {
  return Time(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count());
}

Rate::Rate(double hz) : Rate(std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / hz))) {
  if (!(hz > 0)) throw Error(Errc::kInvalidArgument, fmt::format("rate {} Hz: give a rate above 0", hz));
}

Rate::Rate(std::chrono::nanoseconds period) : period_(period), last_(std::chrono::steady_clock::now()) {}

bool Rate::sleep() {
  const auto next = last_ + period_;
  const auto now = std::chrono::steady_clock::now();
  if (next <= now) {
    last_ = now;
    return false;
  }
  const bool slept = sleep_for(next - now);
  last_ = next;
  return slept;
}

void Rate::reset() { last_ = std::chrono::steady_clock::now(); }

// ---- QoS settings with no effect here, said once.

QoS& QoS::keep_all() {
  say_once(
      "QoS keep_all has no bound here: a channel keeps its capacity (the configuration's), and a subscriber "
      "that falls behind it counts what it loses");
  keep_all_ = true;
  return *this;
}

QoS& QoS::best_effort() {
  say_once(
      "QoS best_effort has no effect: shmbus loses no message in flight; a reader that falls behind is "
      "overwritten and counts it");
  return *this;
}

// ---- The node.

Node::Node(const std::string& node_name, const NodeOptions& options) : Node(node_name, "", options) {}

namespace {

/// The arguments that apply to a node: init()'s (unless not used), then its own.
RosArguments node_arguments(const NodeOptions& options) {
  RosArguments a = options.use_global_arguments() ? global_arguments() : RosArguments{};
  const RosArguments own = parse_ros_arguments(options.arguments());
  a.remaps.insert(a.remaps.begin(), own.remaps.begin(), own.remaps.end());  // its own rules first
  a.node_names.insert(a.node_names.end(), own.node_names.begin(), own.node_names.end());
  a.namespaces.insert(a.namespaces.end(), own.namespaces.begin(), own.namespaces.end());
  a.parameters.insert(a.parameters.end(), own.parameters.begin(), own.parameters.end());
  return a;
}

std::string logger_name(const std::string& ns, const std::string& node) {
  std::string out;
  for (const char c : ns.substr(1)) out += c == '/' ? '.' : c;
  return out.empty() ? node : out + "." + node;
}

}  // namespace

Node::Node(const std::string& node_name, const std::string& namespace_arg, const NodeOptions& options)
    : logger_(""),
      clock_(std::make_shared<Clock>()),
      node_(
          [&] {
            const RosArguments a = node_arguments(options);
            name_ = last_rule(a.node_names, node_name, node_name);
            namespace_ = last_rule(a.namespaces, node_name, normalize_namespace(namespace_arg));
            remaps_ = a.remaps;
            for (const RemapRule& p : a.parameters) {
              if (p.node.empty() || p.node == node_name || p.node == name_) {
                overrides_[p.from] = parse_parameter_value(p.to);
              }
            }
            return name_;
          }(),
          options.context()) {
  logger_ = rclcpp::get_logger(logger_name(namespace_, name_));
  allow_undeclared_ = options.allow_undeclared_parameters();
  for (const Parameter& p : options.parameter_overrides()) overrides_[p.get_name()] = p.get_parameter_value();
  if (options.automatically_declare_parameters_from_overrides()) parameters_ = overrides_;
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  p.nodes.insert(&node_);
}

Node::~Node() {
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  p.nodes.erase(&node_);
}

std::string Node::get_fully_qualified_name() const {
  return namespace_ == "/" ? "/" + name_ : namespace_ + "/" + name_;
}

std::string Node::get_resolved_name(const std::string& name, bool only_expand) const {
  const std::string expanded = expand_name(name, name_, namespace_);
  return only_expand ? expanded : remap_name(expanded, remaps_, name_, namespace_);
}

// ---- Parameters.

const ParameterValue& Node::declare_parameter(const std::string& name, const ParameterValue& default_value) {
  const std::lock_guard lock(parameters_mutex_);
  if (parameters_.contains(name)) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("parameter '{}' of node {} is declared already", name, get_fully_qualified_name()));
  }
  const auto o = overrides_.find(name);
  ParameterValue value = o != overrides_.end() ? o->second : default_value;
  if (o != overrides_.end() && default_value.get_type() != PARAMETER_NOT_SET &&
      value.get_type() != default_value.get_type()) {
    throw Error(Errc::kTypeMismatch, fmt::format("parameter '{}' of node {} is given as {} ({}), but declared as {}",
                                                 name, get_fully_qualified_name(), to_string(value.get_type()),
                                                 to_string(value), to_string(default_value.get_type())));
  }
  return parameters_.emplace(name, std::move(value)).first->second;
}

const ParameterValue& Node::declare_parameter_overridden(const std::string& name) {
  {
    const std::lock_guard lock(parameters_mutex_);
    if (!overrides_.contains(name)) {
      throw Error(Errc::kNotFound, fmt::format("parameter '{}' of node {} has no default and no value given; give one "
                                               "with --ros-args -p {}:=VALUE",
                                               name, get_fully_qualified_name(), name));
    }
  }
  return declare_parameter(name, ParameterValue());
}

bool Node::has_parameter(const std::string& name) const {
  const std::lock_guard lock(parameters_mutex_);
  return parameters_.contains(name);
}

void Node::undeclare_parameter(const std::string& name) {
  const std::lock_guard lock(parameters_mutex_);
  if (parameters_.erase(name) == 0) {
    throw Error(Errc::kNotFound,
                fmt::format("parameter '{}' of node {} is not declared", name, get_fully_qualified_name()));
  }
}

Parameter Node::get_parameter(const std::string& name) const {
  const std::lock_guard lock(parameters_mutex_);
  const auto it = parameters_.find(name);
  if (it != parameters_.end()) return {name, it->second};
  if (allow_undeclared_) return Parameter(name);
  throw Error(Errc::kNotFound, fmt::format("parameter '{}' of node {} is not declared; declare_parameter() it first",
                                           name, get_fully_qualified_name()));
}

std::vector<Parameter> Node::get_parameters(const std::vector<std::string>& names) const {
  std::vector<Parameter> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(get_parameter(n));
  return out;
}

SetParametersResult Node::set_parameter(const Parameter& parameter) {
  std::vector<std::shared_ptr<OnSetParametersCallback>> callbacks;
  {
    const std::lock_guard lock(parameters_mutex_);
    const auto it = parameters_.find(parameter.get_name());
    if (it == parameters_.end() && !allow_undeclared_) {
      return {false, fmt::format("parameter '{}' is not declared", parameter.get_name())};
    }
    if (it != parameters_.end() && it->second.get_type() != PARAMETER_NOT_SET &&
        parameter.get_type() != it->second.get_type()) {
      return {false, fmt::format("parameter '{}' is {}, not {}", parameter.get_name(), to_string(it->second.get_type()),
                                 to_string(parameter.get_type()))};
    }
    for (auto& w : on_set_) {
      if (auto cb = w.lock()) callbacks.push_back(std::move(cb));
    }
  }
  for (const auto& cb : callbacks) {
    SetParametersResult r = (*cb)({parameter});
    if (!r.successful) return r;
  }
  const std::lock_guard lock(parameters_mutex_);
  parameters_[parameter.get_name()] = parameter.get_parameter_value();
  return {true, {}};
}

std::vector<SetParametersResult> Node::set_parameters(const std::vector<Parameter>& parameters) {
  std::vector<SetParametersResult> out;
  out.reserve(parameters.size());
  for (const Parameter& p : parameters) out.push_back(set_parameter(p));
  return out;
}

std::shared_ptr<Node::OnSetParametersCallback> Node::add_on_set_parameters_callback(OnSetParametersCallback callback) {
  auto handle = std::make_shared<OnSetParametersCallback>(std::move(callback));
  const std::lock_guard lock(parameters_mutex_);
  on_set_.push_back(handle);
  return handle;
}

// ---- Spinning.

void spin(const std::shared_ptr<Node>& node) {
  if (ok()) node->shmbus_node().spin();
}

void spin_some(const std::shared_ptr<Node>& node) {
  if (ok()) node->shmbus_node().spin_once(std::chrono::nanoseconds(0));
}

namespace executors {

MultiThreadedExecutor::MultiThreadedExecutor(std::size_t threads)
    : executor_(threads != 0 ? threads : std::max(2U, std::thread::hardware_concurrency())) {}

void MultiThreadedExecutor::add_node(const std::shared_ptr<Node>& node) {
  executor_.add(node->shmbus_node());
  nodes_.push_back(node);
}

void MultiThreadedExecutor::spin() {
  if (ok()) executor_.spin();
}

void MultiThreadedExecutor::spin_some() {
  if (ok()) executor_.spin_once(std::chrono::nanoseconds(0));
}

}  // namespace executors

}  // namespace shmbus::rclcpp
