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

namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// `%XX` decoded, `+` as a space (a value in a query string).
std::string percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int high = text[i] == '%' && i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    const int low = high >= 0 ? hex_digit(text[i + 2]) : -1;
    if (low >= 0) {
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else {
      out.push_back(text[i] == '+' ? ' ' : text[i]);
    }
  }
  return out;
}

}  // namespace

bool carries_token(std::string_view target, std::string_view authorization, std::string_view token) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.starts_with(kBearer) && same_token(authorization.substr(kBearer.size()), token)) return true;
  const auto query = target.find('?');
  if (query == std::string_view::npos) return false;
  std::string_view rest = target.substr(query + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    if (pair.starts_with("token=") && same_token(percent_decoded(pair.substr(6)), token)) return true;
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
  }
  return false;
}

}  // namespace shmbus::service_shell
