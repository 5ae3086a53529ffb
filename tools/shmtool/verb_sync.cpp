// shmtool sync: a synchronizer stage on the bus. Aligns the inputs with a
// policy and publishes each set to the output channel as a
// shmbus_msgs/SyncSet that names its members (channel, sequence, stamp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "commands.hpp"
#include "format.hpp"
#include "shmbus/config_file.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/sync.hpp"
#include "shmbus/sync/stage_settings.hpp"
#include "shmbus_msgs/SyncSet.hpp"

namespace shmbus::tool {

namespace {

/// Drops per input and reason, as "/b too_old=3 no_match=1; /c ...".
std::string drops_text(const sync::Synchronizer& s) {
  std::string out;
  for (std::size_t i = 0; i < s.inputs().size(); ++i) {
    std::string line;
    for (std::size_t r = 0; r < sync::kDropReasons; ++r) {
      const auto reason = static_cast<sync::DropReason>(r);
      if (const std::uint64_t n = s.aligner().dropped(i, reason)) line += fmt::format(" {}={}", to_string(reason), n);
    }
    if (!line.empty()) out += fmt::format("{}{}{}", out.empty() ? "" : ";", s.inputs()[i], line);
  }
  return out.empty() ? "none" : out;
}

/// A [[sync]] entry of the configuration, with the command line on top.
SyncOptions with_config_entry(const ConfigFile& file, const SyncOptions& given) {
  SyncOptions o = given;
  if (given.name.empty()) return o;
  const std::vector<sync::StageSettings> stages = sync::read_stage_settings(file.reader(), file.section("sync"));
  const auto entry =
      std::find_if(stages.begin(), stages.end(), [&](const sync::StageSettings& s) { return s.name == given.name; });
  if (entry == stages.end()) {
    throw Error(Errc::kConfig, fmt::format("no [[sync]] entry named {} in {}; add one or give --inputs and --output",
                                           given.name, file.config().source));
  }
  if (o.inputs.empty()) o.inputs = entry->inputs;
  if (o.output.empty()) o.output = entry->output;
  if (o.policy.empty()) o.policy = entry->policy;
  if (o.threshold.empty() && entry->threshold) o.threshold = format_duration(*entry->threshold);
  if (o.stamp_field.empty()) o.stamp_field = entry->stamp_field;
  if (!o.queue_size) o.queue_size = entry->queue_size;
  if (o.master.empty()) o.master = entry->master;
  return o;
}

/// The stage's options from the command, each refusal naming the fix.
sync::SynchronizerOptions stage_options(SyncOptions& o) {
  if (o.inputs.empty() || o.output.empty()) {
    throw Error(Errc::kInvalidArgument,
                "give --inputs and --output, or the name of a [[sync]] entry of the configuration");
  }
  if (o.policy.empty()) o.policy = "bounded";
  const auto policy = sync::parse_policy(o.policy);
  if (!policy) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("--policy {} is unknown; use bounded, exact, approximate or latest", o.policy));
  }
  sync::SynchronizerOptions options;
  options.policy = *policy;
  options.queue_size = o.queue_size.value_or(64);
  options.stamp_field = o.stamp_field;
  if (!o.threshold.empty()) {
    const auto t = parse_duration(o.threshold);
    if (!t || t->count() <= 0) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("--threshold {} is not a duration > 0; write it with a unit, e.g. 10ms", o.threshold));
    }
    options.threshold = *t;
  } else if (*policy == sync::Policy::kBoundedDisparity) {
    throw Error(Errc::kInvalidArgument, "the bounded policy needs --threshold, the largest disparity a set may have");
  }
  if (o.inputs.size() > shmbus_msgs::SyncSet::MAX_MEMBERS) {
    throw Error(Errc::kInvalidArgument, fmt::format("{} inputs: a shmbus_msgs/SyncSet holds at most {}",
                                                    o.inputs.size(), shmbus_msgs::SyncSet::MAX_MEMBERS));
  }
  if (std::find(o.inputs.begin(), o.inputs.end(), o.output) != o.inputs.end()) {
    throw Error(Errc::kInvalidArgument, fmt::format("--output {} is also an input; publish sets elsewhere", o.output));
  }
  if (!o.master.empty()) {
    const auto m = std::find(o.inputs.begin(), o.inputs.end(), o.master);
    if (m == o.inputs.end()) {
      throw Error(Errc::kInvalidArgument, fmt::format("--master {} is not one of the --inputs", o.master));
    }
    options.master = static_cast<std::size_t>(m - o.inputs.begin());
  }
  validate_channel_name(o.output);
  return options;
}

/// A set as shmbus_msgs/SyncSet: its members, disparity, policy, threshold.
shmbus_msgs::SyncSet to_message(const sync::AlignedSet& s, const std::string& policy,
                                std::chrono::nanoseconds threshold, std::uint32_t seq) {
  shmbus_msgs::SyncSet m{};
  m.header.stamp_ns = static_cast<std::uint64_t>(wall_now_ns());
  m.header.seq = seq;
  m.policy.assign(policy);
  m.threshold_ns = static_cast<std::uint64_t>(threshold.count());
  m.disparity_ns = static_cast<std::uint64_t>(s.disparity_ns);
  m.count = static_cast<std::uint32_t>(s.members.size());
  for (std::size_t i = 0; i < s.members.size(); ++i) {
    m.members[i].channel.assign(s.members[i].channel);
    m.members[i].sequence = s.members[i].info().sequence;
    m.members[i].stamp_ns = s.members[i].stamp_ns;
  }
  return m;
}

}  // namespace

int run_sync(const Globals& g, const SyncOptions& given) {
  const ConfigFile file = ConfigFile::load(config_source(g));
  const Config& config = file.config();
  SyncOptions o = with_config_entry(file, given);
  const sync::SynchronizerOptions options = stage_options(o);

  install_stop_handlers();
  Config c = config;
  if (c.node.empty()) c.node = "shmtool-sync";
  Context ctx(std::move(c));
  // Every input from now on: those that exist start here, those that
  // appear later at their first message.
  std::vector<Subscriber> inputs;
  std::vector<Subscriber*> waiting;
  inputs.reserve(o.inputs.size());
  for (const std::string& in : o.inputs) {
    inputs.push_back(subscribe_reader(config, ctx, in, o.no_wait));
    waiting.push_back(&inputs.back());
  }
  if (!await_attached(config, waiting)) return 0;  // Ctrl-C while waiting
  sync::Synchronizer synchronizer(std::move(inputs), options);
  TypedPublisher<shmbus_msgs::SyncSet> out(o.output, ctx);
  print(fmt::format("aligning {} ({} policy, threshold {}, stamps from {}) into {}; Ctrl-C stops\n",
                    fmt::join(o.inputs, ", "), o.policy, format_duration(options.threshold),
                    o.stamp_field.empty() ? "the publish time" : o.stamp_field, o.output));

  std::uint64_t sets = 0;
  std::uint64_t within = 0;
  std::int64_t max_disparity = 0;
  auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!stop_requested() && (o.count == 0 || sets < o.count)) {
    if (auto s = synchronizer.next(std::chrono::milliseconds(100))) {
      // A drop is counted by the publisher (shmtool info); a size it cannot carry it says.
      static_cast<void>(out.publish(to_message(*s, o.policy, options.threshold, static_cast<std::uint32_t>(sets))));
      ++sets;
      within += s->disparity_ns <= options.threshold.count() ? 1 : 0;
      max_disparity = std::max(max_disparity, s->disparity_ns);
    }
    if (std::chrono::steady_clock::now() >= next_report) {
      next_report += std::chrono::seconds(1);
      print(fmt::format("sets {} (max disparity {}), dropped: {}\n", sets,
                        human_seconds(static_cast<double>(max_disparity) / 1e9), drops_text(synchronizer)));
    }
  }
  print(fmt::format("published {} sets to {}, {} within {}, max disparity {}; dropped: {}\n", sets, o.output, within,
                    format_duration(options.threshold), human_seconds(static_cast<double>(max_disparity) / 1e9),
                    drops_text(synchronizer)));
  return 0;
}

}  // namespace shmbus::tool
