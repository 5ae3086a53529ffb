#include "shmbus/rclcpp/logging.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "shmbus/error.hpp"
#include "shmbus/rclcpp.hpp"

namespace shmbus::rclcpp {

namespace {

struct Levels {
  std::mutex mutex;
  std::map<std::string, Logger::Level> set;  ///< by Logger::set_level
};

Levels& levels() {
  static Levels l;
  return l;
}

const char* severity(Logger::Level level) {
  switch (level) {
    case Logger::Level::Debug:
      return "DEBUG";
    case Logger::Level::Info:
      return "INFO";
    case Logger::Level::Warn:
      return "WARN";
    case Logger::Level::Error:
      return "ERROR";
    case Logger::Level::Fatal:
      return "FATAL";
    case Logger::Level::Unset:
      break;
  }
  return "UNSET";
}

}  // namespace

Logger get_logger(const std::string& name) { return Logger(name); }

Logger Logger::get_child(std::string_view suffix) const {
  return Logger(name_.empty() ? std::string(suffix) : name_ + "." + std::string(suffix));
}

void Logger::set_level(Level level) const {
  Levels& l = levels();
  const std::lock_guard lock(l.mutex);
  l.set[name_] = level;
}

Logger::Level Logger::get_effective_level() const {
  // Set here or on an ancestor (a.b.c, a.b, a), then the command line's
  // level for the name, then its level for all, then INFO.
  {
    Levels& l = levels();
    const std::lock_guard lock(l.mutex);
    for (std::string n = name_;;) {
      if (const auto it = l.set.find(n); it != l.set.end() && it->second != Level::Unset) return it->second;
      const auto dot = n.rfind('.');
      if (dot == std::string::npos) break;
      n.resize(dot);
    }
  }
  const RosArguments a = global_arguments();
  if (const auto it = a.log_levels.find(name_); it != a.log_levels.end()) return detail::level_named(it->second);
  if (!a.log_level.empty()) return detail::level_named(a.log_level);
  return Level::Info;
}

namespace detail {

Logger::Level level_named(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "debug") return Logger::Level::Debug;
  if (t == "info") return Logger::Level::Info;
  if (t == "warn" || t == "warning") return Logger::Level::Warn;
  if (t == "error") return Logger::Level::Error;
  if (t == "fatal") return Logger::Level::Fatal;
  if (t == "unset") return Logger::Level::Unset;
  throw Error(Errc::kInvalidArgument,
              fmt::format("log level '{}': give debug, info, warn, error, fatal or unset", text));
}

void log_text(const Logger& logger, Logger::Level level, std::string_view text) {
  if (!logger.enabled(level)) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  // One write per line: lines of several threads do not interleave.
  const std::string line = fmt::format("[{}] [{}.{:09}] [{}]: {}\n", severity(level), ns / 1'000'000'000,
                                       ns % 1'000'000'000, logger.get_name(), text);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void log(const Logger& logger, Logger::Level level, const char* format, ...) {
  if (!logger.enabled(level)) return;
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  log_text(logger, level, text);
}

bool throttle(std::chrono::steady_clock::time_point& last, double period_ms) {
  const auto now = std::chrono::steady_clock::now();
  if (last != std::chrono::steady_clock::time_point{} &&
      now - last < std::chrono::duration<double, std::milli>(period_ms)) {
    return false;
  }
  last = now;
  return true;
}

}  // namespace detail

}  // namespace shmbus::rclcpp
