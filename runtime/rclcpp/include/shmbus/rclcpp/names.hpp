#pragma once
/// @file names.hpp
/// ROS 2's names and command-line arguments, as rcl reads them: a node's
/// namespace, relative (`topic`) and private (`~/topic`) names expanded to
/// shmbus channel names, remapping rules (`--ros-args -r from:=to`,
/// `node:from:=to`, `__ns:=`, `__node:=`), parameters given on the command
/// line (`-p name:=value`) and log levels (`--log-level`). Target
/// `shmbus::rclcpp`.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shmbus::rclcpp {

/// One remapping rule, `[node:]from:=to`.
struct RemapRule {
  std::string node;  ///< empty: every node
  std::string from;
  std::string to;
};

/// What `--ros-args ... [--]` sections of a command line say.
struct RosArguments {
  std::vector<RemapRule> remaps;      ///< topic and service rules, in order
  std::vector<RemapRule> node_names;  ///< `__node:=` rules (`from` empty)
  std::vector<RemapRule> namespaces;  ///< `__ns:=` rules (`from` empty)
  /// `-p name:=value` (and `-p node:name:=value`), the value as written.
  std::vector<RemapRule> parameters;
  std::string log_level;                          ///< `--log-level LEVEL`; empty: not given
  std::map<std::string, std::string> log_levels;  ///< `--log-level NAME:=LEVEL`
};

/// The largest command line read (arguments and bytes): what a process is
/// given, bounded before it is parsed.
inline constexpr std::size_t kMaxArguments = 4096;
inline constexpr std::size_t kMaxArgumentBytes = 1 << 20;

/// Reads the ROS 2 sections of `args` (argv without argv[0]): after
/// `--ros-args`, up to `--` or the next `--ros-args`. Throws
/// Error(kInvalidArgument) naming the argument and the fix for one that
/// rcl would refuse (a rule without `:=`, an unknown flag, `--params-file`
/// and `--enclave`, which shmbus does not read), and for a command line
/// over the bounds above.
[[nodiscard]] RosArguments parse_ros_arguments(const std::vector<std::string>& args);

/// `args` without its ROS 2 sections (rclcpp::remove_ros_arguments).
[[nodiscard]] std::vector<std::string> remove_ros_arguments(const std::vector<std::string>& args);

/// `name` as rcl expands it for node `node` in namespace `ns` (a
/// namespace starts with `/`): `/abs` stays, `rel` is `ns/rel`, `~` and
/// `~/rel` are `ns/node` and `ns/node/rel`; `{node}` and `{ns}` are
/// substituted. Throws Error(kInvalidArgument) naming the name and the
/// rule it breaks (tokens of letters, digits and `_`, not starting with a
/// digit; no `//`; no trailing `/`).
[[nodiscard]] std::string expand_name(std::string_view name, std::string_view node, std::string_view ns);

/// A node's namespace as written (`""`, `ns`, `/a/b/`) made absolute and
/// checked: `/`, `/ns`, `/a/b`.
[[nodiscard]] std::string normalize_namespace(std::string_view ns);

/// The fully qualified `name` after the first of `rules` that applies to
/// node `node` in `ns` (each rule's sides expanded for that node), or
/// `name` when none does.
[[nodiscard]] std::string remap_name(const std::string& name, const std::vector<RemapRule>& rules,
                                     std::string_view node, std::string_view ns);

}  // namespace shmbus::rclcpp
