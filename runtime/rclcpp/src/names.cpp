#include "shmbus/rclcpp/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "shmbus/error.hpp"

namespace shmbus::rclcpp {

namespace {

[[noreturn]] void refuse(const std::string& what) { throw Error(Errc::kInvalidArgument, what); }

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// Why fully qualified `name` is not a ROS 2 name, or nothing.
std::optional<std::string> name_fault(std::string_view name) {
  if (name.empty() || name[0] != '/') return "it does not start with '/'";
  if (name.size() > 1 && name.back() == '/') return "it ends with '/'";
  std::size_t start = 1;
  while (start < name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view token = name.substr(start, end - start);
    if (token.empty()) return "it has an empty token ('//')";
    if (token[0] >= '0' && token[0] <= '9') return fmt::format("token '{}' starts with a digit", token);
    if (!std::all_of(token.begin(), token.end(), is_token_char)) {
      return fmt::format("token '{}' has a character other than letters, digits and '_'", token);
    }
    start = end + 1;
  }
  return std::nullopt;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

/// `-r [node:]from:=to` (or `-p`, `--log-level NAME:=LEVEL`) split; the
/// node prefix is what precedes a ':' before `:=`.
RemapRule split_rule(const std::string& flag, const std::string& rule) {
  const auto assign = rule.find(":=");
  if (assign == std::string::npos || assign == 0) {
    refuse(fmt::format("ROS argument '{} {}': a rule is [node:]from:=to; write it so", flag, rule));
  }
  std::string left = rule.substr(0, assign);
  RemapRule r{{}, {}, rule.substr(assign + 2)};
  if (const auto colon = left.find(':'); colon != std::string::npos) {
    r.node = left.substr(0, colon);
    left = left.substr(colon + 1);
  }
  r.from = std::move(left);
  if (r.from.empty() || r.to.empty()) {
    refuse(fmt::format("ROS argument '{} {}': both sides of ':=' must be given", flag, rule));
  }
  return r;
}

void add_remap(RosArguments& out, const std::string& flag, const std::string& rule) {
  RemapRule r = split_rule(flag, rule);
  if (r.from == "__ns") {
    out.namespaces.push_back({r.node, {}, normalize_namespace(r.to)});
  } else if (r.from == "__node" || r.from == "__name") {
    out.node_names.push_back({r.node, {}, r.to});
  } else if (r.from.starts_with("__")) {
    refuse(fmt::format("ROS argument '{} {}': '{}' is not a rule shmbus knows (__ns, __node)", flag, rule, r.from));
  } else {
    out.remaps.push_back(std::move(r));
  }
}

/// One flag of a --ros-args section at args[i] (its value, if any, after
/// it): read into `out`; returns the index of the last argument used.
std::size_t read_flag(const std::vector<std::string>& args, std::size_t i, RosArguments& out) {
  const std::string& flag = args[i];
  const auto value = [&]() -> const std::string& {
    if (i + 1 >= args.size()) refuse(fmt::format("ROS argument '{}' needs a value after it", flag));
    return args[i + 1];
  };
  if (flag == "-r" || flag == "--remap") {
    add_remap(out, flag, value());
    return i + 1;
  }
  if (flag == "-p" || flag == "--param") {
    out.parameters.push_back(split_rule(flag, value()));
    return i + 1;
  }
  if (flag == "--log-level") {
    const std::string& v = value();
    if (v.find(":=") == std::string::npos) {
      out.log_level = v;
    } else {
      const RemapRule r = split_rule(flag, v);
      out.log_levels[r.node.empty() ? r.from : r.node + ":" + r.from] = r.to;
    }
    return i + 1;
  }
  // Logging outputs shmbus has one of (stderr): accepted, no effect.
  for (const char* accepted : {"--enable-rosout-logs", "--disable-rosout-logs", "--enable-stdout-logs",
                               "--disable-stdout-logs", "--enable-external-lib-logs", "--disable-external-lib-logs"}) {
    if (flag == accepted) return i;
  }
  if (flag == "--params-file" || flag == "-e" || flag == "--enclave" || flag == "--log-config-file") {
    refuse(fmt::format("ROS argument '{}' is not read by shmbus; give parameters with -p name:=value", flag));
  }
  refuse(fmt::format("unknown ROS argument '{}'; shmbus reads -r/--remap, -p/--param and --log-level", flag));
}

void check_bounds(const std::vector<std::string>& args) {
  std::size_t bytes = 0;
  for (const std::string& a : args) bytes += a.size();
  if (args.size() > kMaxArguments || bytes > kMaxArgumentBytes) {
    refuse(fmt::format("a command line of {} arguments and {} bytes is over shmbus's bound ({} and {})", args.size(),
                       bytes, kMaxArguments, kMaxArgumentBytes));
  }
}

}  // namespace

RosArguments parse_ros_arguments(const std::vector<std::string>& args) {
  check_bounds(args);
  RosArguments out;
  bool in_ros = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--ros-args") {
      in_ros = true;
    } else if (in_ros && args[i] == "--") {
      in_ros = false;
    } else if (in_ros) {
      i = read_flag(args, i, out);
    }
  }
  return out;
}

std::vector<std::string> remove_ros_arguments(const std::vector<std::string>& args) {
  check_bounds(args);
  std::vector<std::string> out;
  bool in_ros = false;
  for (const std::string& a : args) {
    if (a == "--ros-args") {
      in_ros = true;
    } else if (in_ros && a == "--") {
      in_ros = false;
    } else if (!in_ros) {
      out.push_back(a);
    }
  }
  return out;
}

std::string normalize_namespace(std::string_view ns) {
  std::string n(ns);
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  if (n.empty() || n[0] != '/') n = std::string("/").append(n);
  if (n != "/") {
    if (auto fault = name_fault(n)) refuse(fmt::format("namespace '{}' is not a ROS name: {}", ns, *fault));
  }
  return n;
}

std::string expand_name(std::string_view name, std::string_view node, std::string_view ns) {
  std::string n(name);
  const std::string prefix = ns == "/" ? std::string() : std::string(ns);
  replace_all(n, "{node}", node);
  replace_all(n, "{namespace}", prefix);
  replace_all(n, "{ns}", prefix);
  if (n == "~" || n.starts_with("~/")) {
    n = fmt::format("{}/{}{}", prefix, node, n.substr(1));
  } else if (n.starts_with("~")) {
    refuse(fmt::format("name '{}' is not a ROS name: '~' is followed by '/' or nothing", name));
  } else if (!n.starts_with("/")) {
    n = fmt::format("{}/{}", prefix, n);
  }
  if (auto fault = name_fault(n)) refuse(fmt::format("name '{}' is not a ROS name: {}", name, *fault));
  return n;
}

std::string remap_name(const std::string& name, const std::vector<RemapRule>& rules, std::string_view node,
                       std::string_view ns) {
  for (const RemapRule& r : rules) {
    if (!r.node.empty() && r.node != node) continue;
    if (expand_name(r.from, node, ns) == name) return expand_name(r.to, node, ns);
  }
  return name;
}

}  // namespace shmbus::rclcpp
