#include "common.hpp"

#include <time.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "shmbus/error.hpp"
#include "shmbus/monitor/config_report.hpp"

namespace shmbus::tool {

Config load_config(const Globals& g) { return monitor::load_config(monitor::ConfigSource{g.config_path, g.domain}); }

bool sleep_until(std::int64_t deadline_ns) noexcept {
  const timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (!stop_requested()) {
    const int rc = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (rc == 0) return true;
    if (rc != EINTR) return true;
  }
  return false;
}

introspect::ChannelReader open_channel(const Config& config, std::string_view channel) {
  try {
    return introspect::ChannelReader(config.domain, channel, false, config.access());
  } catch (const Error& e) {
    if (e.code() != Errc::kNotFound) throw;
    throw Error(Errc::kNotFound,
                fmt::format("channel {} not found in domain \"{}\"; `shmtool list --domain {}` shows its channels",
                            channel, config.domain, config.domain));
  }
}

std::optional<introspect::ChannelReader> await_channel(const Config& config, std::string_view channel, bool no_wait) {
  if (no_wait) return open_channel(config, channel);
  bool said = false;
  while (!stop_requested()) {
    try {
      return introspect::ChannelReader(config.domain, channel, false, config.access());
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
    }
    if (!said) {
      std::fprintf(stderr, "waiting for %.*s to appear in domain \"%s\"\n", static_cast<int>(channel.size()),
                   channel.data(), config.domain.c_str());
      said = true;
    }
    sleep_until(mono_now_ns() + 20'000'000);
  }
  return std::nullopt;
}

std::optional<schema::Schema> schema_of(const TypeInfo& type) {
  if (type.schema.empty() || type.hash == TypeInfo::bytes().hash) return std::nullopt;
  return schema::Schema::from_canonical(type.schema);
}

std::optional<schema::Schema> schema_of(const introspect::ChannelView& view) {
  return schema_of(TypeInfo{view.type_name, view.type_hash, view.schema});
}

TypeCatalog::TypeCatalog(const std::vector<std::string>& msg_paths) : set_(std::make_shared<schema::MessageSet>()) {
  for (std::size_t i = 0; i < kShippedMessageCount; ++i) {
    const ShippedMessage& m = kShippedMessages[i];
    set_->add(m.package, m.name, m.text, fmt::format("<shipped>/{}/{}.msg", m.package, m.name));
  }
  std::vector<std::string> roots = msg_paths;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): shmtool reads its environment before any thread starts
  if (const char* env = std::getenv("SHMBUS_MSG_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (colon != 0) roots.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  for (const std::string& r : roots) set_->add_directory(r);
  set_->resolve();
}

schema::Schema TypeCatalog::find(std::string_view full_name) const {
  if (set_->find(full_name) != nullptr) return schema::Schema::from_set(set_, full_name);
  std::string known;
  for (const schema::MessageDef* m : set_->messages()) known += (known.empty() ? "" : ", ") + m->name;
  throw Error(Errc::kInvalidArgument,
              fmt::format("unknown message type '{}'; known: {}; add definitions with --msg-path DIR or "
                          "SHMBUS_MSG_PATH (DIR/<package>/<Name>.msg)",
                          full_name, known));
}

}  // namespace shmbus::tool
