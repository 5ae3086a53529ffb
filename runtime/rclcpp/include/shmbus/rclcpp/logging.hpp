#pragma once
/// @file logging.hpp
/// rclcpp's loggers and RCLCPP_* macros, written where a node writes (one
/// line on stderr per message, as rcutils' default output:
/// `[INFO] [1700000000.123456789] [node]: text`). Levels from
/// `--ros-args --log-level LEVEL` (or `NAME:=LEVEL`) and
/// Logger::set_level. Target `shmbus::rclcpp`.

#include <chrono>
#include <sstream>
#include <string>
#include <string_view>

namespace shmbus::rclcpp {

/// A logger: a name, and a level under which it writes nothing.
class Logger {
 public:
  enum class Level { Unset = 0, Debug = 10, Info = 20, Warn = 30, Error = 40, Fatal = 50 };

  explicit Logger(std::string name) : name_(std::move(name)) {}
  [[nodiscard]] const char* get_name() const noexcept { return name_.c_str(); }
  /// A logger named `name.suffix` (rclcpp's child loggers).
  [[nodiscard]] Logger get_child(std::string_view suffix) const;
  /// This logger's level (and its children's, unless set).
  void set_level(Level level) const;
  [[nodiscard]] Level get_effective_level() const;
  [[nodiscard]] bool enabled(Level level) const { return level >= get_effective_level(); }

 private:
  std::string name_;
};

/// A logger of that name (rclcpp::get_logger).
[[nodiscard]] Logger get_logger(const std::string& name);

namespace detail {
/// Writes one line at `level` for `logger`, if enabled.
void log_text(const Logger& logger, Logger::Level level, std::string_view text);
/// The same, printf-style (what RCLCPP_INFO takes).
[[gnu::format(printf, 3, 4)]] void log(const Logger& logger, Logger::Level level, const char* format, ...);
/// The level `text` names (debug, info, warn, error, fatal, unset; any
/// case). Throws Error(kInvalidArgument) naming it and the levels.
[[nodiscard]] Logger::Level level_named(std::string_view text);
/// RCLCPP_*_THROTTLE: true when `last` is `period` ago or never (and sets it).
bool throttle(std::chrono::steady_clock::time_point& last, double period_ms);
}  // namespace detail

}  // namespace shmbus::rclcpp

// The macros take the logger and a printf format, as rclcpp's do. The
// _STREAM forms take a stream expression; _ONCE writes once per call site;
// _THROTTLE(logger, clock, period_ms, ...) at most once per period (its
// clock argument is taken for rclcpp's signature; steady time decides).
#define SHMBUS_RCLCPP_LOG(level, logger, ...) \
  ::shmbus::rclcpp::detail::log((logger), ::shmbus::rclcpp::Logger::Level::level, __VA_ARGS__)
#define SHMBUS_RCLCPP_LOG_STREAM(level, logger, stream)                                                             \
  do {                                                                                                              \
    const ::shmbus::rclcpp::Logger& shmbus_logger_ = (logger);                                                      \
    if (shmbus_logger_.enabled(::shmbus::rclcpp::Logger::Level::level)) {                                           \
      std::stringstream shmbus_ss_;                                                                                 \
      shmbus_ss_ << stream; /* NOLINT(bugprone-macro-parentheses): a << chain */                                    \
      ::shmbus::rclcpp::detail::log_text(shmbus_logger_, ::shmbus::rclcpp::Logger::Level::level, shmbus_ss_.str()); \
    }                                                                                                               \
  } while (false)
#define SHMBUS_RCLCPP_LOG_ONCE(level, logger, ...)   \
  do {                                               \
    static bool shmbus_once_ = false;                \
    if (!shmbus_once_) {                             \
      shmbus_once_ = true;                           \
      SHMBUS_RCLCPP_LOG(level, logger, __VA_ARGS__); \
    }                                                \
  } while (false)
#define SHMBUS_RCLCPP_LOG_THROTTLE(level, logger, clock, period_ms, ...) \
  do {                                                                   \
    static_cast<void>(clock);                                            \
    static std::chrono::steady_clock::time_point shmbus_last_{};         \
    if (::shmbus::rclcpp::detail::throttle(shmbus_last_, (period_ms))) { \
      SHMBUS_RCLCPP_LOG(level, logger, __VA_ARGS__);                     \
    }                                                                    \
  } while (false)

#define RCLCPP_DEBUG(logger, ...) SHMBUS_RCLCPP_LOG(Debug, logger, __VA_ARGS__)
#define RCLCPP_INFO(logger, ...) SHMBUS_RCLCPP_LOG(Info, logger, __VA_ARGS__)
#define RCLCPP_WARN(logger, ...) SHMBUS_RCLCPP_LOG(Warn, logger, __VA_ARGS__)
#define RCLCPP_ERROR(logger, ...) SHMBUS_RCLCPP_LOG(Error, logger, __VA_ARGS__)
#define RCLCPP_FATAL(logger, ...) SHMBUS_RCLCPP_LOG(Fatal, logger, __VA_ARGS__)
#define RCLCPP_DEBUG_STREAM(logger, stream) SHMBUS_RCLCPP_LOG_STREAM(Debug, logger, stream)
#define RCLCPP_INFO_STREAM(logger, stream) SHMBUS_RCLCPP_LOG_STREAM(Info, logger, stream)
#define RCLCPP_WARN_STREAM(logger, stream) SHMBUS_RCLCPP_LOG_STREAM(Warn, logger, stream)
#define RCLCPP_ERROR_STREAM(logger, stream) SHMBUS_RCLCPP_LOG_STREAM(Error, logger, stream)
#define RCLCPP_FATAL_STREAM(logger, stream) SHMBUS_RCLCPP_LOG_STREAM(Fatal, logger, stream)
#define RCLCPP_DEBUG_ONCE(logger, ...) SHMBUS_RCLCPP_LOG_ONCE(Debug, logger, __VA_ARGS__)
#define RCLCPP_INFO_ONCE(logger, ...) SHMBUS_RCLCPP_LOG_ONCE(Info, logger, __VA_ARGS__)
#define RCLCPP_WARN_ONCE(logger, ...) SHMBUS_RCLCPP_LOG_ONCE(Warn, logger, __VA_ARGS__)
#define RCLCPP_ERROR_ONCE(logger, ...) SHMBUS_RCLCPP_LOG_ONCE(Error, logger, __VA_ARGS__)
#define RCLCPP_DEBUG_THROTTLE(logger, clock, ms, ...) SHMBUS_RCLCPP_LOG_THROTTLE(Debug, logger, clock, ms, __VA_ARGS__)
#define RCLCPP_INFO_THROTTLE(logger, clock, ms, ...) SHMBUS_RCLCPP_LOG_THROTTLE(Info, logger, clock, ms, __VA_ARGS__)
#define RCLCPP_WARN_THROTTLE(logger, clock, ms, ...) SHMBUS_RCLCPP_LOG_THROTTLE(Warn, logger, clock, ms, __VA_ARGS__)
#define RCLCPP_ERROR_THROTTLE(logger, clock, ms, ...) SHMBUS_RCLCPP_LOG_THROTTLE(Error, logger, clock, ms, __VA_ARGS__)
