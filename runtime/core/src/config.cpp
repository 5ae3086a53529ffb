#include "shmbus/config.hpp"
#include "shmbus/config_reader.hpp"

#include <fnmatch.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "process.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"

namespace shmbus {

std::string_view to_string(Transport t) noexcept { return t == Transport::kIceoryx ? "iceoryx" : "shm"; }

std::string_view to_string(Overflow o) noexcept { return o == Overflow::kBlock ? "block" : "overwrite"; }

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) noexcept {
  std::size_t unit_at = 0;
  while (unit_at < text.size() && ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.')) {
    ++unit_at;
  }
  if (unit_at == 0 || unit_at == text.size()) return std::nullopt;
  const std::string number{text.substr(0, unit_at)};
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  const std::string_view unit = text.substr(unit_at);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "min")
    scale = 60e9;
  else
    return std::nullopt;
  const double ns = value * scale;
  if (ns > 9.2e18) return std::nullopt;
  return std::chrono::nanoseconds{static_cast<std::int64_t>(std::llround(ns))};
}

std::string format_duration(std::chrono::nanoseconds d) {
  const std::int64_t ns = d.count();
  if (ns != 0 && ns % 60'000'000'000 == 0) return std::to_string(ns / 60'000'000'000) + "min";
  if (ns != 0 && ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns != 0 && ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns != 0 && ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

namespace {

/// Reads one TOML document into a Config, reporting every problem with the
/// position of the offending node.
class ConfigReader : public TomlReader {
 public:
  using TomlReader::TomlReader;

  std::array<double, 3> thresholds_of(const toml::node& n) const {
    const auto* arr = n.as_array();
    if (arr == nullptr || arr->size() != 3) fail(n, "thresholds_hz must be an array of three rates [f1, f2, f3]");
    std::array<double, 3> f{};
    for (std::size_t i = 0; i < 3; ++i) {
      const toml::node& e = *arr->get(i);
      if (const auto* d = e.as_floating_point())
        f[i] = d->get();
      else if (const auto* k = e.as_integer())
        f[i] = static_cast<double>(k->get());
      else
        fail(e, "thresholds_hz entries must be numbers (Hz)");
      if (!(f[i] >= 0) || !std::isfinite(f[i])) fail(e, "thresholds_hz entries must be finite and >= 0");
    }
    if (!(f[0] < f[1] && f[1] < f[2])) fail(n, "thresholds_hz must satisfy f1 < f2 < f3");
    return f;
  }

  Transport transport_of(const toml::node& n) const {
    const std::string t = string_of(n, "transport");
    if (t == "shm") return Transport::kShm;
    if (t == "iceoryx") return Transport::kIceoryx;
    fail(n, "transport = \"" + t + "\" is unknown; use \"shm\" or \"iceoryx\"");
  }

  Overflow overflow_of(const toml::node& n) const {
    const std::string t = string_of(n, "overflow");
    if (t == "overwrite") return Overflow::kOverwrite;
    if (t == "block") return Overflow::kBlock;
    fail(n, "overflow = \"" + t + "\" is unknown; use \"overwrite\" or \"block\"");
  }

  /// Applies one channel-level key; returns false when the key is not one.
  bool channel_key(std::string_view key, const toml::node& v, ChannelRule& r) const {
    if (key == "transport")
      r.transport = transport_of(v);
    else if (key == "overflow")
      r.overflow = overflow_of(v);
    else if (key == "block_timeout")
      r.block_timeout = duration_of(v, key);
    else if (key == "capacity")
      r.capacity = power_of_two(v, key, 1 << 20);
    else if (key == "max_message_size") {
      const std::int64_t m = integer_of(v, key);
      if (m < 1 || m > (std::int64_t{1} << 30)) fail(v, "max_message_size must be from 1 to 1073741824 bytes");
      r.max_message_size = static_cast<std::uint32_t>(m);
    } else if (key == "max_grow_size") {
      const std::int64_t m = integer_of(v, key);
      if (m < 1 || m > (std::int64_t{1} << 30)) fail(v, "max_grow_size must be from 1 to 1073741824 bytes");
      r.max_grow_size = static_cast<std::uint32_t>(m);
    } else if (key == "grow") {
      const auto* b = v.as_boolean();
      if (b == nullptr) fail(v, "grow must be true or false");
      r.grow = b->get();
    } else if (key == "time_list_capacity")
      r.time_list_capacity = power_of_two(v, key, 1 << 24);
    else if (key == "window")
      r.window = duration_of(v, key);
    else if (key == "thresholds_hz")
      r.thresholds_hz = thresholds_of(v);
    else if (key == "stall_timeout")
      r.stall_timeout = duration_of(v, key);
    else if (key == "wait_spin") {
      const std::string text = string_of(v, key);
      const auto d = parse_duration(text);
      if (!d) fail(v, "wait_spin = \"" + text + "\" is not a duration such as \"50us\" or \"0us\"");
      r.wait_spin = *d;
    } else if (key == "age_sample_every") {
      const std::int64_t n = integer_of(v, key);
      if (n < 1 || n > 1'000'000) fail(v, "age_sample_every must be from 1 (every take) to 1000000");
      r.age_sample_every = static_cast<std::uint32_t>(n);
    } else if (key == "publisher_history") {
      const std::int64_t n = integer_of(v, key);
      if (n < 0 || n > 16) fail(v, "publisher_history must be from 0 to 16 (iceoryx's limit)");
      r.publisher_history = static_cast<std::uint32_t>(n);
    } else {
      return false;
    }
    return true;
  }

  Config read(const toml::table& root) const {
    Config c;
    c.source = source();
    for (const auto& [k, v] : root) {
      const std::string_view key = k.str();
      if (key == "domain") {
        c.domain = string_of(v, key);
        try {
          validate_domain_name(c.domain);
        } catch (const Error& e) {
          fail(v, e.what());
        }
      } else if (key == "node") {
        c.node = string_of(v, key);
        try {
          validate_node_name(c.node);
        } catch (const Error& e) {
          fail(v, e.what());
        }
      } else if (key == "registry_capacity") {
        c.registry_capacity = power_of_two(v, key, kMaxRegistryCapacity);
      } else if (key == "grow_budget") {
        const std::int64_t b = integer_of(v, key);
        if (b < 0) fail(v, "grow_budget must be a number of bytes, 0 or more");
        c.grow_budget = static_cast<std::uint64_t>(b);
      } else if (key == "mode") {
        const std::string text = string_of(v, key);
        char* end = nullptr;
        const long mode = std::strtol(text.c_str(), &end, 8);
        if (text.empty() || *end != '\0' || mode <= 0 || mode > 0777) {
          fail(v, "mode = \"" + text + "\" must be octal permissions such as \"0660\"");
        }
        c.mode = static_cast<std::uint32_t>(mode);
      } else if (key == "group") {
        c.group = string_of(v, key);
        if (c.group.empty() || !detail::group_id(c.group)) {
          fail(v, "group = \"" + c.group + "\" is not a group of this system (see /etc/group)");
        }
      } else if (key == "defaults") {
        const auto* t = v.as_table();
        if (t == nullptr) fail(v, "defaults must be a table ([defaults])");
        ChannelRule r;
        c.defaults_where = position(v);
        r.where = c.defaults_where;
        for (const auto& [dk, dv] : *t) {
          if (!channel_key(dk.str(), dv, r)) fail(dk.source(), "unknown key defaults." + std::string{dk.str()});
        }
        apply(r, c.defaults);
      } else if (key == "channel") {
        const auto* arr = v.as_array();
        if (arr == nullptr) fail(v, "channel must be an array of tables ([[channel]])");
        for (const auto& e : *arr) {
          const auto* t = e.as_table();
          if (t == nullptr) fail(e, "each channel entry must be a table ([[channel]])");
          ChannelRule r;
          r.where = position(e);
          for (const auto& [ck, cv] : *t) {
            if (ck.str() == "name")
              r.pattern = string_of(cv, "name");
            else if (!channel_key(ck.str(), cv, r))
              fail(ck.source(), "unknown key channel." + std::string{ck.str()});
          }
          if (r.pattern.empty()) fail(e, "a [[channel]] entry needs name = \"/exact/name\" or a glob");
          c.channels.push_back(std::move(r));
        }
      } else if (std::find(Config::kProgramSections.begin(), Config::kProgramSections.end(), key) !=
                 Config::kProgramSections.end()) {
        // Read by the program that owns it (shmbus/config_file.hpp).
      } else {
        fail(k.source(), "unknown key " + std::string{key});
      }
    }
    return c;
  }

  static void apply(const ChannelRule& r, ChannelSettings& s) {
    if (r.transport) {
      s.transport = *r.transport;
      s.transport_set = true;
    }
    if (r.overflow) {
      s.overflow = *r.overflow;
      s.overflow_set = true;
    }
    if (r.block_timeout) s.block_timeout = *r.block_timeout;
    if (r.capacity || r.max_message_size || r.time_list_capacity) s.sizes_from = r.where;
    if (r.capacity) s.capacity = *r.capacity;
    if (r.max_message_size) s.max_message_size = *r.max_message_size;
    if (r.time_list_capacity) s.time_list_capacity = *r.time_list_capacity;
    if (r.max_grow_size) s.max_grow_size = *r.max_grow_size;
    if (r.grow) s.grow = *r.grow;
    if (r.window) s.window = *r.window;
    if (r.thresholds_hz) s.thresholds_hz = *r.thresholds_hz;
    if (r.stall_timeout) s.stall_timeout = *r.stall_timeout;
    if (r.wait_spin) s.wait_spin = *r.wait_spin;
    if (r.age_sample_every) s.age_sample_every = *r.age_sample_every;
    if (r.publisher_history) s.publisher_history = *r.publisher_history;
  }
};

}  // namespace

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw Error(Errc::kConfig, source_name + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                                   ": " + std::string{e.description()});
  }
}

Config config_from_toml(const toml::table& root, const std::string& source_name) {
  return ConfigReader{source_name}.read(root);
}

Config Config::parse(std::string_view text, const std::string& source_name) {
  return config_from_toml(parse_toml(text, source_name), source_name);
}

std::string Config::read_file(const std::string& path) {
  // A directory opens as an empty stream, and a FIFO or device could be
  // read forever: only a regular file of bounded size is a configuration.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && status.type() != std::filesystem::file_type::regular) {
    throw Error(Errc::kConfig,
                path + ":1:1: not a regular file (a " +
                    (status.type() == std::filesystem::file_type::directory ? "directory" : "special file") +
                    "); give the path of a TOML file (SHMBUS_CONFIG or --config)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(Errc::kConfig, path +
                                   ":1:1: cannot read the configuration file; check the path and "
                                   "its permissions (SHMBUS_CONFIG or --config)");
  }
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    throw Error(Errc::kConfig, path + ":1:1: larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                   " MiB; a configuration is a few KiB: check that this is the right file");
  }
  return text;
}

Config Config::load_file(const std::string& path) { return parse(read_file(path), path); }

Config::Environment Config::environment() {
  // getenv is safe here: nothing in shmbus sets the environment.
  Environment e;
  if (const char* path = std::getenv("SHMBUS_CONFIG");  // NOLINT(concurrency-mt-unsafe)
      path != nullptr) {
    e.config_path = path;
  }
  if (const char* domain = std::getenv("SHMBUS_DOMAIN");  // NOLINT(concurrency-mt-unsafe)
      domain != nullptr && *domain != '\0') {
    try {
      validate_domain_name(domain);
    } catch (const Error& err) {
      throw Error(Errc::kConfig, std::string{"SHMBUS_DOMAIN: "} + err.what());
    }
    e.domain = domain;
  }
  return e;
}

Config Config::from_environment() {
  const Environment e = environment();
  Config c;
  if (!e.config_path.empty()) c = load_file(e.config_path);
  if (e.domain) c.domain = *e.domain;
  return c;
}

namespace {

/// Config::channel for `name`, starting from `alias`'s settings (empty:
/// the defaults).
ChannelSettings settings_for(const Config& c, std::string_view name, const std::string& alias) {
  // A service client's own response channel is configured as the service's
  // response channel (its max_message_size above all), then by the rules
  // that match it; it has no rate thresholds unless a rule names it alone
  // (its rate is one client's calls: a glob's thresholds for the service's
  // rate would alert on every idle client).
  ChannelSettings s = alias.empty() ? c.defaults : settings_for(c, alias, {});
  if (!alias.empty()) s.thresholds_hz.reset();
  const std::string n{name};
  for (const ChannelRule& r : c.channels) {
    const bool named = r.pattern == n;
    if (!named && ::fnmatch(r.pattern.c_str(), n.c_str(), 0) != 0) continue;
    const std::optional<std::array<double, 3>> kept = s.thresholds_hz;
    ConfigReader::apply(r, s);
    if (!alias.empty() && !named) s.thresholds_hz = kept;
  }
  return s;
}

}  // namespace

ChannelSettings Config::channel(std::string_view channel_name) const {
  return settings_for(*this, channel_name, settings_alias(channel_name));
}

ChannelSettings Config::channel(const ChannelName& name) const {
  return settings_for(*this, name.view(), name.settings_alias());
}

}  // namespace shmbus
