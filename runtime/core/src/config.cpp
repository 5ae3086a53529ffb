#include "shmbus/config.hpp"

#include <fnmatch.h>

#include <toml++/toml.h>
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
class ConfigReader {
 public:
  explicit ConfigReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const toml::node& at, const std::string& what) const { fail(at.source(), what); }

  [[noreturn]] void fail(const toml::source_region& region, const std::string& what) const {
    const auto& where = region.begin;
    throw Error(Errc::kConfig,
                source_ + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " + what);
  }

  std::string position(const toml::node& n) const {
    return source_ + ":" + std::to_string(n.source().begin.line) + ":" + std::to_string(n.source().begin.column);
  }

  std::string string_of(const toml::node& n, std::string_view key) const {
    if (const auto* s = n.as_string()) return s->get();
    fail(n, std::string{key} + " must be a string");
  }

  std::int64_t integer_of(const toml::node& n, std::string_view key) const {
    if (const auto* i = n.as_integer()) return i->get();
    fail(n, std::string{key} + " must be an integer");
  }

  std::uint32_t power_of_two(const toml::node& n, std::string_view key, std::int64_t max) const {
    const std::int64_t v = integer_of(n, key);
    if (v < 2 || v > max || (v & (v - 1)) != 0) {
      fail(n,
           std::string{key} + " = " + std::to_string(v) + " must be a power of two from 2 to " + std::to_string(max));
    }
    return static_cast<std::uint32_t>(v);
  }

  std::chrono::nanoseconds duration_of(const toml::node& n, std::string_view key) const {
    const std::string text = string_of(n, key);
    const auto d = parse_duration(text);
    if (!d || d->count() <= 0) {
      fail(n, std::string{key} + " = \"" + text +
                  "\" is not a positive duration; write a number and a unit (ns, us, ms, s, min), "
                  "e.g. \"100ms\"");
    }
    return *d;
  }

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

  void read_sync(const toml::node& v, std::vector<SyncStageSettings>& out) const {
    const auto* arr = v.as_array();
    if (arr == nullptr) fail(v, "sync must be an array of tables ([[sync]])");
    for (const auto& e : *arr) {
      const auto* t = e.as_table();
      if (t == nullptr) fail(e, "each sync entry must be a table ([[sync]])");
      SyncStageSettings s;
      s.where = position(e);
      for (const auto& [k, val] : *t) {
        const std::string_view key = k.str();
        if (key == "name") {
          s.name = string_of(val, "name");
        } else if (key == "inputs") {
          const auto* list = val.as_array();
          if (list == nullptr) fail(val, "inputs must be an array of channel names");
          for (const auto& i : *list) s.inputs.push_back(string_of(i, "inputs"));
        } else if (key == "output") {
          s.output = string_of(val, "output");
        } else if (key == "policy") {
          s.policy = string_of(val, "policy");
          if (s.policy != "bounded" && s.policy != "exact" && s.policy != "approximate" && s.policy != "latest") {
            fail(val, "policy = \"" + s.policy + "\" is unknown; use bounded, exact, approximate or latest");
          }
        } else if (key == "threshold") {
          s.threshold = duration_of(val, "threshold");
        } else if (key == "stamp_field") {
          s.stamp_field = string_of(val, "stamp_field");
        } else if (key == "queue_size") {
          const std::int64_t n = integer_of(val, "queue_size");
          if (n < 1 || n > 1'000'000) fail(val, "queue_size must be from 1 to 1000000");
          s.queue_size = static_cast<std::uint32_t>(n);
        } else if (key == "master") {
          s.master = string_of(val, "master");
        } else {
          fail(k.source(), "unknown key sync." + std::string{key});
        }
      }
      if (s.name.empty()) fail(e, "a [[sync]] entry needs name = \"...\" (shmtool sync NAME runs it)");
      if (s.inputs.size() < 2) fail(e, "sync " + s.name + " needs inputs = [\"/a\", \"/b\", ...], at least 2");
      if (s.output.empty()) fail(e, "sync " + s.name + " needs output = \"/channel\" for its sets");
      for (const auto& other : out) {
        if (other.name == s.name) fail(e, "sync " + s.name + " is defined twice (first at " + other.where + ")");
      }
      out.push_back(std::move(s));
    }
  }

  void read_monitor(const toml::table& t, MonitorSettings& m) const {
    for (const auto& [k, v] : t) {
      const std::string_view key = k.str();
      if (key == "scan_period")
        m.scan_period = duration_of(v, key);
      else if (key == "debounce_scans") {
        const std::int64_t n = integer_of(v, key);
        if (n < 1 || n > 1000) fail(v, "debounce_scans must be from 1 to 1000");
        m.debounce_scans = static_cast<std::uint32_t>(n);
      } else if (key == "metrics_listen")
        m.metrics_listen = string_of(v, key);
      else if (key == "statistics_period")
        m.statistics_period = duration_of(v, key);
      else if (key == "webhook")
        m.webhook = string_of(v, key);
      else
        fail(k.source(), "unknown key monitor." + std::string{key});
    }
  }

  std::vector<std::string> strings_of(const toml::node& n, std::string_view key) const {
    const auto* list = n.as_array();
    if (list == nullptr) fail(n, std::string{key} + " must be an array of strings");
    std::vector<std::string> out;
    for (const auto& e : *list) out.push_back(string_of(e, key));
    return out;
  }

  std::uint32_t bounded(const toml::node& n, std::string_view key, std::int64_t lo, std::int64_t hi) const {
    const std::int64_t v = integer_of(n, key);
    if (v < lo || v > hi) {
      fail(n, std::string{key} + " = " + std::to_string(v) + " must be from " + std::to_string(lo) + " to " +
                  std::to_string(hi));
    }
    return static_cast<std::uint32_t>(v);
  }

  void read_bridge(const toml::table& t, BridgeSettings& b) const {
    for (const auto& [k, v] : t) {
      const std::string_view key = k.str();
      if (key == "listen")
        b.listen = string_of(v, key);
      else if (key == "allow")
        b.allow = strings_of(v, key);
      else if (key == "deny")
        b.deny = strings_of(v, key);
      else if (key == "token_file")
        b.token_file = string_of(v, key);
      else if (key == "tls_cert")
        b.tls_cert = string_of(v, key);
      else if (key == "tls_key")
        b.tls_key = string_of(v, key);
      else if (key == "max_clients")
        b.max_clients = bounded(v, key, 1, 100'000);
      else if (key == "max_frame_bytes")
        b.max_frame_bytes = bounded(v, key, 1024, 1 << 30);
      else if (key == "send_queue")
        b.send_queue = bounded(v, key, 1, 1'000'000);
      else if (key == "max_ops_per_second")
        b.max_ops_per_second = bounded(v, key, 1, 10'000'000);
      else if (key == "service_timeout")
        b.service_timeout = duration_of(v, key);
      else if (key == "max_client_bytes")
        b.max_client_bytes = bounded(v, key, 65536, 1 << 30);
      else if (key == "max_created_channels")
        b.max_created_channels = bounded(v, key, 0, 10'000);
      else if (key == "max_created_channel_bytes")
        b.max_created_channel_bytes = std::uint64_t{bounded(v, key, 1, 1 << 30)};
      else if (key == "auth_timeout")
        b.auth_timeout = duration_of(v, key);
      else if (key == "max_pending_auth")
        b.max_pending_auth = bounded(v, key, 1, 100'000);
      else if (key == "idle_timeout")
        b.idle_timeout = duration_of(v, key);
      else if (key == "allow_origins")
        b.allow_origins = strings_of(v, key);
      else
        fail(k.source(), "unknown key bridge." + std::string{key});
    }
  }

  void read_gateways(const toml::node& v, std::vector<GatewayRule>& out) const {
    const auto* arr = v.as_array();
    if (arr == nullptr) fail(v, "gateway must be an array of tables ([[gateway]])");
    for (const auto& e : *arr) {
      const auto* t = e.as_table();
      if (t == nullptr) fail(e, "each gateway entry must be a table ([[gateway]])");
      GatewayRule r;
      r.where = position(e);
      for (const auto& [k, gv] : *t) {
        const std::string_view key = k.str();
        if (key == "export") {
          r.exports = strings_of(gv, key);
        } else if (key == "import") {
          r.imports = strings_of(gv, key);
        } else if (key == "reliability") {
          const std::string text = string_of(gv, key);
          if (text == "reliable") {
            r.reliability = GatewayRule::Reliability::kReliable;
          } else if (text == "best_effort") {
            r.reliability = GatewayRule::Reliability::kBestEffort;
          } else {
            fail(gv, "reliability = \"" + text + "\" must be \"reliable\" or \"best_effort\"");
          }
        } else if (key == "history_depth") {
          r.history_depth = bounded(gv, key, 1, 100'000);
        } else if (key == "partition") {
          r.partition = string_of(gv, key);
        } else {
          fail(k.source(), "unknown key gateway." + std::string{key});
        }
      }
      if (r.exports.empty() && r.imports.empty()) {
        fail(e, "a [[gateway]] entry carries nothing: give export = [\"/glob\"] and/or import = [\"/glob\"]");
      }
      out.push_back(std::move(r));
    }
  }

  Config read(const toml::table& root) const {
    Config c;
    c.source = source_;
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
        c.registry_capacity = power_of_two(v, key, 1 << 20);
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
      } else if (key == "sync") {
        read_sync(v, c.sync_stages);
      } else if (key == "monitor") {
        const auto* t = v.as_table();
        if (t == nullptr) fail(v, "monitor must be a table ([monitor])");
        read_monitor(*t, c.monitor);
      } else if (key == "bridge") {
        const auto* t = v.as_table();
        if (t == nullptr) fail(v, "bridge must be a table ([bridge])");
        read_bridge(*t, c.bridge);
      } else if (key == "gateway") {
        read_gateways(v, c.gateways);
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
    if (r.capacity) s.capacity = *r.capacity;
    if (r.max_message_size) s.max_message_size = *r.max_message_size;
    if (r.time_list_capacity) s.time_list_capacity = *r.time_list_capacity;
    if (r.window) s.window = *r.window;
    if (r.thresholds_hz) s.thresholds_hz = *r.thresholds_hz;
    if (r.stall_timeout) s.stall_timeout = *r.stall_timeout;
    if (r.wait_spin) s.wait_spin = *r.wait_spin;
    if (r.age_sample_every) s.age_sample_every = *r.age_sample_every;
    if (r.publisher_history) s.publisher_history = *r.publisher_history;
  }

 private:
  std::string source_;
};

}  // namespace

Config Config::parse(std::string_view text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw Error(Errc::kConfig, source_name + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                                   ": " + std::string{e.description()});
  }
  return ConfigReader{source_name}.read(root);
}

Config Config::load_file(const std::string& path) {
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
  return parse(text, path);
}

Config Config::from_environment() {
  // getenv is safe here: nothing in shmbus sets the environment.
  Config c;
  if (const char* path = std::getenv("SHMBUS_CONFIG");  // NOLINT(concurrency-mt-unsafe)
      path != nullptr && *path != '\0') {
    c = load_file(path);
  }
  if (const char* domain = std::getenv("SHMBUS_DOMAIN");  // NOLINT(concurrency-mt-unsafe)
      domain != nullptr && *domain != '\0') {
    try {
      validate_domain_name(domain);
    } catch (const Error& e) {
      throw Error(Errc::kConfig, std::string{"SHMBUS_DOMAIN: "} + e.what());
    }
    c.domain = domain;
  }
  return c;
}

ChannelSettings Config::channel(std::string_view channel_name) const {
  ChannelSettings s = defaults;
  const std::string name{channel_name};
  for (const ChannelRule& r : channels) {
    if (r.pattern == name || ::fnmatch(r.pattern.c_str(), name.c_str(), 0) == 0) {
      ConfigReader::apply(r, s);
    }
  }
  return s;
}

}  // namespace shmbus
