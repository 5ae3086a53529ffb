#include "shmbus/rclcpp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <set>

#include "rcl_interfaces/msg/parameter_event.hpp"
#include "rcl_interfaces/srv/describe_parameters.hpp"
#include "rcl_interfaces/srv/get_parameter_types.hpp"
#include "rcl_interfaces/srv/get_parameters.hpp"
#include "rcl_interfaces/srv/list_parameters.hpp"
#include "rcl_interfaces/srv/set_parameters.hpp"
#include "rcl_interfaces/srv/set_parameters_atomically.hpp"
#include "shmbus/rclcpp/parameter_messages.hpp"
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

// ---- Parameters as rcl_interfaces carries them.

namespace {

/// list_parameters' rule: `name` is under one of `prefixes` (all when none
/// is given) at most `depth` levels of '.' below it (0: any).
bool listed(const std::string& name, const std::vector<std::string>& prefixes, std::uint64_t depth) {
  const auto deep_enough = [&](std::string_view rest) {
    return depth == 0 || static_cast<std::uint64_t>(std::count(rest.begin(), rest.end(), '.')) < depth;
  };
  if (prefixes.empty()) return deep_enough(name);
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) {
    return name == p || (name.starts_with(p + ".") && deep_enough(std::string_view(name).substr(p.size() + 1)));
  });
}

}  // namespace

/// A node's parameter services and its /parameter_events publisher.
struct Node::ParameterServer {
  std::mutex events_mutex;  ///< set_parameter may come from any thread
  std::optional<NodePublisher<TypedPublisher<rcl_interfaces::msg::ParameterEvent>>> events;
  std::vector<std::shared_ptr<void>> servers;

  template <typename S, typename F>
  void serve(shmbus::Node& node, const std::string& name, F handler) {
    servers.push_back(std::make_shared<TypedServiceServer<S>>(node, name, std::move(handler)));
  }
};

void Node::parameter_event(const Parameter& changed, int kind) {
  if (!parameter_server_ || !parameter_server_->events) return;
  rcl_interfaces::msg::ParameterEvent e;
  e.stamp = now();
  e.node = get_fully_qualified_name();
  (kind == 0   ? e.new_parameters
   : kind == 1 ? e.changed_parameters
               : e.deleted_parameters)
      .push_back(to_message(changed));
  const std::lock_guard lock(parameter_server_->events_mutex);
  // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
  static_cast<void>(parameter_server_->events->publish(e));
}

void Node::start_parameter_server(const NodeOptions& options) {
  namespace srv = rcl_interfaces::srv;
  parameter_server_ = std::make_unique<ParameterServer>();
  if (options.start_parameter_event_publisher()) {
    parameter_server_->events.emplace(node_.publisher<rcl_interfaces::msg::ParameterEvent>("/parameter_events"));
  }
  if (!options.start_parameter_services()) return;
  const std::string base = get_fully_qualified_name();
  ParameterServer& server = *parameter_server_;
  try {
    server.serve<srv::GetParameters>(node_, base + "/get_parameters", [this](const auto& req, auto& rsp) {
      for (const std::string& n : req.names) {
        rsp.values.push_back(has_parameter(n) ? to_message(get_parameter(n).get_parameter_value())
                                              : rcl_interfaces::msg::ParameterValue{});
      }
    });
    server.serve<srv::GetParameterTypes>(node_, base + "/get_parameter_types", [this](const auto& req, auto& rsp) {
      for (const std::string& n : req.names) {
        rsp.types.push_back(has_parameter(n) ? get_parameter(n).get_type() : PARAMETER_NOT_SET);
      }
    });
    server.serve<srv::SetParameters>(node_, base + "/set_parameters", [this](const auto& req, auto& rsp) {
      for (const rcl_interfaces::msg::Parameter& p : req.parameters) {
        const SetParametersResult r = set_parameter(Parameter(p.name, from_message(p.value)));
        rsp.results.push_back(rcl_interfaces::msg::SetParametersResult{.successful = r.successful, .reason = r.reason});
      }
    });
    server.serve<srv::SetParametersAtomically>(
        node_, base + "/set_parameters_atomically", [this](const auto& req, auto& rsp) {
          std::vector<Parameter> ps;
          ps.reserve(req.parameters.size());
          for (const rcl_interfaces::msg::Parameter& p : req.parameters) ps.emplace_back(p.name, from_message(p.value));
          const SetParametersResult r = set_parameters_atomically(ps);
          rsp.result = rcl_interfaces::msg::SetParametersResult{.successful = r.successful, .reason = r.reason};
        });
    server.serve<srv::ListParameters>(node_, base + "/list_parameters", [this](const auto& req, auto& rsp) {
      const std::lock_guard lock(parameters_mutex_);
      std::set<std::string> prefixes;
      for (const auto& [name, value] : parameters_) {
        if (!listed(name, req.prefixes, req.depth)) continue;
        rsp.result.names.push_back(name);
        if (const auto dot = name.rfind('.'); dot != std::string::npos) prefixes.insert(name.substr(0, dot));
      }
      rsp.result.prefixes.assign(prefixes.begin(), prefixes.end());
    });
    server.serve<srv::DescribeParameters>(node_, base + "/describe_parameters", [this](const auto& req, auto& rsp) {
      for (const std::string& n : req.names) {
        rcl_interfaces::msg::ParameterDescriptor d;
        d.name = n;
        d.type = has_parameter(n) ? get_parameter(n).get_type() : PARAMETER_NOT_SET;
        rsp.descriptors.push_back(std::move(d));
      }
    });
  } catch (const Error& e) {
    // Another process serves a node of this name (ROS 2 allows two).
    server.servers.clear();
    say_once(fmt::format("node {}: its parameters are not served to other processes: {}", base, e.what()));
  }
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
  start_parameter_server(options);
  Process& p = process();
  const std::lock_guard lock(p.mutex);
  p.nodes.insert(&node_);
}

Node::~Node() {
  {
    Process& p = process();
    const std::lock_guard lock(p.mutex);
    p.nodes.erase(&node_);
  }
  parameter_server_.reset();  // its handlers use the node: they go first
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
  const ParameterValue& declared = parameters_.emplace(name, std::move(value)).first->second;
  parameter_event(Parameter(name, declared), 0);
  return declared;
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
  Parameter gone;
  {
    const std::lock_guard lock(parameters_mutex_);
    const auto it = parameters_.find(name);
    if (it == parameters_.end()) {
      throw Error(Errc::kNotFound,
                  fmt::format("parameter '{}' of node {} is not declared", name, get_fully_qualified_name()));
    }
    gone = Parameter(name, it->second);
    parameters_.erase(it);
  }
  parameter_event(gone, 2);
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

SetParametersResult Node::set_parameter(const Parameter& parameter) { return set_parameters_atomically({parameter}); }

SetParametersResult Node::set_parameters_atomically(const std::vector<Parameter>& parameters) {
  std::vector<std::shared_ptr<OnSetParametersCallback>> callbacks;
  {
    const std::lock_guard lock(parameters_mutex_);
    for (const Parameter& parameter : parameters) {
      const auto it = parameters_.find(parameter.get_name());
      if (it == parameters_.end() && !allow_undeclared_) {
        return {false, fmt::format("parameter '{}' is not declared", parameter.get_name())};
      }
      if (it != parameters_.end() && it->second.get_type() != PARAMETER_NOT_SET &&
          parameter.get_type() != it->second.get_type()) {
        return {false, fmt::format("parameter '{}' is {}, not {}", parameter.get_name(),
                                   to_string(it->second.get_type()), to_string(parameter.get_type()))};
      }
    }
    for (auto& w : on_set_) {
      if (auto cb = w.lock()) callbacks.push_back(std::move(cb));
    }
  }
  for (const auto& cb : callbacks) {
    SetParametersResult r = (*cb)(parameters);
    if (!r.successful) return r;
  }
  std::vector<std::pair<Parameter, bool>> done;  // each, and whether it is new
  {
    const std::lock_guard lock(parameters_mutex_);
    for (const Parameter& parameter : parameters) {
      const bool fresh = !parameters_.contains(parameter.get_name());
      parameters_[parameter.get_name()] = parameter.get_parameter_value();
      done.emplace_back(parameter, fresh);
    }
  }
  for (const auto& [parameter, fresh] : done) parameter_event(parameter, fresh ? 0 : 1);
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
