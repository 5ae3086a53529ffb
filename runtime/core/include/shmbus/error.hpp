#pragma once
/// @file error.hpp
/// Errors raised by shmbus set-up calls. The hot path (publish, take) never
/// throws; it returns a status value instead.

#include <stdexcept>
#include <string>

namespace shmbus {

/// What kind of failure an Error is; maps onto the programs' exit codes.
enum class Errc {
  kInvalidArgument,  ///< a bad name, size or option given in code (exit 2)
  kConfig,           ///< a configuration file that cannot be used (exit 2)
  kNotFound,         ///< a channel or domain that does not exist (exit 3)
  kTypeMismatch,     ///< a channel opened with another type than it has (exit 2)
  kLayoutMismatch,   ///< a segment of another layout, corrupt or truncated (exit 1)
  kResource,         ///< a full table, a failed system call (exit 1)
  kPermission,       ///< a segment owned by someone else, or too widely open (exit 1)
};

/// The exception every set-up call throws. `what()` is one line that names
/// the object and the fix. Thread-safety: an immutable value.
class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}

  /// The kind of failure.
  [[nodiscard]] Errc code() const noexcept { return code_; }

  /// The exit code a program should use for this error (1, 2 or 3).
  [[nodiscard]] int exit_code() const noexcept {
    switch (code_) {
      case Errc::kInvalidArgument:
      case Errc::kConfig:
      case Errc::kTypeMismatch:
        return 2;
      case Errc::kNotFound:
        return 3;
      default:
        return 1;
    }
  }

 private:
  Errc code_;
};

}  // namespace shmbus
