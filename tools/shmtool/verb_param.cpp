// shmtool param list|get|set NODE ...: a node's parameters through its
// rcl_interfaces services (NODE/list_parameters, get_parameters,
// set_parameters), as `ros2 param` reads and sets them.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "commands.hpp"
#include "rcl_interfaces/srv/get_parameters.hpp"
#include "rcl_interfaces/srv/list_parameters.hpp"
#include "rcl_interfaces/srv/set_parameters.hpp"
#include "shmbus/rclcpp/names.hpp"
#include "shmbus/rclcpp/parameter_messages.hpp"
#include "shmbus/service.hpp"

namespace shmbus::tool {

namespace {

/// What `ros2 param get` calls a type.
std::string type_word(rclcpp::ParameterType t) {
  switch (t) {
    case rclcpp::PARAMETER_BOOL:
      return "Boolean";
    case rclcpp::PARAMETER_INTEGER:
      return "Integer";
    case rclcpp::PARAMETER_DOUBLE:
      return "Double";
    case rclcpp::PARAMETER_STRING:
      return "String";
    case rclcpp::PARAMETER_BYTE_ARRAY:
      return "Byte values";
    case rclcpp::PARAMETER_BOOL_ARRAY:
      return "Boolean values";
    case rclcpp::PARAMETER_INTEGER_ARRAY:
      return "Integer values";
    case rclcpp::PARAMETER_DOUBLE_ARRAY:
      return "Double values";
    case rclcpp::PARAMETER_STRING_ARRAY:
      return "String values";
    default:
      return "Not set";
  }
}

/// Calls NODE's parameter service `suffix` with `request`.
template <typename S>
typename S::Response call(const Globals& g, const ParamOptions& o, const std::string& suffix,
                          const typename S::Request& request) {
  const Config config = load_config(g);
  const std::string node = rclcpp::expand_name(o.node, "shmtool", "/");
  const std::string name = node + "/" + suffix;
  Context ctx = make_context(config);
  TypedServiceClient<S> client(name, ctx);
  const auto timeout = std::chrono::nanoseconds(static_cast<std::int64_t>(o.timeout_s * 1e9));
  typename S::Response response;
  const CallResult r = client.call(request, response, timeout, [] { return stop_requested(); });
  if (r.status == CallStatus::kNoServer) {
    throw Error(Errc::kNotFound, fmt::format("no node {} serves parameters in domain \"{}\" within {}; is it running "
                                             "(`shmtool service list` shows {}/{})?",
                                             node, config.domain, seconds_text(o.timeout_s), node, suffix));
  }
  if (!r.ok()) {
    throw Error(Errc::kResource, fmt::format("{}: the call ended: {}", name, to_string(r.status)));
  }
  return response;
}

}  // namespace

int run_param(const Globals& g, const ParamOptions& o) {
  install_stop_handlers();
  if (o.action == "list") {
    const auto rsp = call<rcl_interfaces::srv::ListParameters>(g, o, "list_parameters", {});
    std::vector<std::string> names = rsp.result.names;
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) std::printf("  %s\n", n.c_str());
    return 0;
  }
  if (o.action == "get") {
    rcl_interfaces::srv::GetParameters::Request req;
    req.names = {o.name};
    const auto rsp = call<rcl_interfaces::srv::GetParameters>(g, o, "get_parameters", req);
    const rclcpp::ParameterValue v =
        rsp.values.empty() ? rclcpp::ParameterValue() : rclcpp::from_message(rsp.values.front());
    if (v.get_type() == rclcpp::PARAMETER_NOT_SET) {
      throw Error(Errc::kNotFound, fmt::format("node {} has no parameter '{}' (`shmtool param list {}` lists them)",
                                               o.node, o.name, o.node));
    }
    std::printf("%s value is: %s\n", type_word(v.get_type()).c_str(), rclcpp::to_string(v).c_str());
    return 0;
  }
  rcl_interfaces::srv::SetParameters::Request req;
  req.parameters.push_back(rclcpp::to_message(rclcpp::Parameter(o.name, rclcpp::parse_parameter_value(o.value))));
  const auto rsp = call<rcl_interfaces::srv::SetParameters>(g, o, "set_parameters", req);
  if (rsp.results.empty() || !rsp.results.front().successful) {
    std::fprintf(stderr, "shmtool: setting parameter '%s' of %s failed: %s\n", o.name.c_str(), o.node.c_str(),
                 rsp.results.empty() ? "no result" : rsp.results.front().reason.c_str());
    return 1;
  }
  std::printf("Set parameter successful\n");
  return 0;
}

}  // namespace shmbus::tool
