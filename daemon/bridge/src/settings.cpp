// The [bridge] section of the configuration file.
#include <string>

#include "shmbus/bridge/bridge.hpp"
#include "shmbus/config_file.hpp"

namespace shmbus::bridge {

namespace {

/// One key of [bridge]; false when it is not one.
bool read_limit(const TomlReader& r, std::string_view key, const toml::node& v, BridgeSettings& b) {
  if (key == "max_clients") {
    b.max_clients = r.bounded(v, key, 1, 100'000);
  } else if (key == "max_frame_bytes") {
    b.max_frame_bytes = r.bounded(v, key, 1024, 1 << 30);
  } else if (key == "send_queue") {
    b.send_queue = r.bounded(v, key, 1, 1'000'000);
  } else if (key == "max_subscriptions") {
    b.max_subscriptions = r.bounded(v, key, 1, 100'000);
  } else if (key == "max_ops_per_second") {
    b.max_ops_per_second = r.bounded(v, key, 1, 10'000'000);
  } else if (key == "service_timeout") {
    b.service_timeout = r.duration_of(v, key);
  } else if (key == "max_client_bytes") {
    b.max_client_bytes = r.bounded(v, key, 65536, 1 << 30);
  } else if (key == "max_created_channels") {
    b.max_created_channels = r.bounded(v, key, 0, 10'000);
  } else if (key == "max_created_channel_bytes") {
    b.max_created_channel_bytes = std::uint64_t{r.bounded(v, key, 1, 1 << 30)};
  } else if (key == "auth_timeout") {
    b.auth_timeout = r.duration_of(v, key);
  } else if (key == "max_pending_auth") {
    b.max_pending_auth = r.bounded(v, key, 1, 100'000);
  } else if (key == "idle_timeout") {
    b.idle_timeout = r.duration_of(v, key);
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::optional<FoxgloveEncoding> foxglove_encoding_of(std::string_view text) {
  if (text == "cdr") return FoxgloveEncoding::kCdr;
  if (text == "json") return FoxgloveEncoding::kJson;
  if (text == "both") return FoxgloveEncoding::kBoth;
  return std::nullopt;
}

std::optional<JsonInt64> json_int64_of(std::string_view text) {
  if (text == "number") return JsonInt64::kNumber;
  if (text == "string") return JsonInt64::kString;
  return std::nullopt;
}

BridgeSettings read_bridge_settings(const ConfigFile& file) {
  BridgeSettings b;
  const toml::node* section = file.section("bridge");
  if (section == nullptr) return b;
  const TomlReader r = file.reader();
  for (const auto& [k, v] : r.table_of(*section, "bridge")) {
    const std::string_view key = k.str();
    if (key == "listen") {
      b.listen = r.string_of(v, key);
    } else if (key == "allow") {
      b.allow = r.strings_of(v, key);
    } else if (key == "deny") {
      b.deny = r.strings_of(v, key);
    } else if (key == "token_file") {
      b.token_file = r.string_of(v, key);
    } else if (key == "tls_cert") {
      b.tls_cert = r.string_of(v, key);
    } else if (key == "tls_key") {
      b.tls_key = r.string_of(v, key);
    } else if (key == "allow_origins") {
      b.allow_origins = r.strings_of(v, key);
    } else if (key == "loopback_origins") {
      const auto* flag = v.as_boolean();
      if (flag == nullptr) r.fail(v, "bridge.loopback_origins must be true or false");
      b.loopback_origins = flag->get();
    } else if (key == "msg_path") {
      b.msg_path = r.strings_of(v, key);
    } else if (key == "foxglove_encoding") {
      const auto e = foxglove_encoding_of(r.string_of(v, key));
      if (!e) r.fail(v, "bridge.foxglove_encoding is unknown; use \"cdr\", \"json\" or \"both\"");
      b.foxglove_encoding = *e;
    } else if (key == "json_int64") {
      const auto e = json_int64_of(r.string_of(v, key));
      if (!e) r.fail(v, "bridge.json_int64 is unknown; use \"number\" or \"string\"");
      b.json_int64 = *e;
    } else if (!read_limit(r, key, v, b)) {
      r.fail(k.source(), "unknown key bridge." + std::string{key});
    }
  }
  return b;
}

}  // namespace shmbus::bridge
