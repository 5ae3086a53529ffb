// The configuration file as every program reads it: the transport's keys
// (Config::parse through ConfigFile) and each program's section,
// read by its library. Anything is refused with Error(kConfig) or read;
// nothing crashes, hangs or recurses without bound (toml++ stops nesting
// at 256 levels; the file is at most 1 MiB before it is parsed).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shmbus/bridge/bridge.hpp"
#include "shmbus/config.hpp"
#include "shmbus/config_file.hpp"
#include "shmbus/error.hpp"
#include "shmbus/gateway/gateway.hpp"
#include "shmbus/monitor/settings.hpp"
#include "shmbus/sync/stage_settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > shmbus::Config::kMaxConfigBytes) return 0;  // load_file refuses it before parsing
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const shmbus::ConfigFile file = shmbus::ConfigFile::parse(text, "fuzz.toml");
    (void)file.config().channel("/camera/front");
    const auto read = [&](auto&& section) {
      try {
        section();
      } catch (const shmbus::Error&) {
        // refused with its position: what a bad section gets
      }
    };
    read([&] { (void)shmbus::monitor::read_monitor_settings(file); });
    read([&] { (void)shmbus::bridge::read_bridge_settings(file); });
    read([&] { (void)shmbus::gateway::read_gateway_rules(file); });
    read([&] { (void)shmbus::sync::read_stage_settings(file.reader(), file.section("sync")); });
  } catch (const shmbus::Error&) {
    // refused with its position
  }
  return 0;
}
