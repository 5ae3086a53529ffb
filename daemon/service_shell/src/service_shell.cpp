#include "shmbus/service_shell.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "shmbus/clock.hpp"
#include "shmbus/error.hpp"
#include "shmbus/stop_signals.hpp"

namespace shmbus::service_shell {

std::shared_ptr<spdlog::logger> make_logger(const std::string& program, bool to_journal) {
  std::shared_ptr<spdlog::logger> logger;
  if (to_journal) {
    logger = std::make_shared<spdlog::logger>(program, std::make_shared<spdlog::sinks::systemd_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>(program, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  return logger;
}

// NOLINTNEXTLINE(concurrency-mt-unsafe): documented: before any thread starts
bool stderr_is_journal() { return std::getenv("JOURNAL_STREAM") != nullptr; }

void run_until_stopped(const std::function<std::string()>& status) {
  sd_notify(0, "READY=1");
  std::uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  std::int64_t next_status = 0, next_watchdog = 0;
  while (!stop_signalled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::int64_t now = mono_now_ns();
    if (now >= next_status) {
      sd_notify(0, ("STATUS=" + status()).c_str());
      next_status = now + 1'000'000'000;
    }
    if (watchdog && now >= next_watchdog) {
      sd_notify(0, "WATCHDOG=1");
      next_watchdog = now + static_cast<std::int64_t>(watchdog_usec) * 1000 / 2;
    }
  }
  sd_notify(0, "STOPPING=1");
}

std::string read_token(const std::string& path, std::string_view option) {
  if (path.empty()) return {};
  std::ifstream in(path);
  if (!in) {
    throw Error(Errc::kConfig, fmt::format("token file {} cannot be read; give a readable file ({})", path, option));
  }
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) throw Error(Errc::kConfig, fmt::format("token file {} is empty; put the token in it", path));
  return token;
}

bool same_token(std::string_view a, std::string_view b) noexcept {
  unsigned diff = a.size() != b.size() ? 1U : 0U;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace shmbus::service_shell
