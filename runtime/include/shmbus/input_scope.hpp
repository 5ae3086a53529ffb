#pragma once
/// @file input_scope.hpp
/// Provenance without code in the module: what a thread took is what it
/// publishes from.

#include <array>
#include <cstdint>
#include <span>

#include "shmbus/types.hpp"

namespace shmbus {

class InputScope;

namespace detail {
/// The innermost InputScope of this thread (nullptr: none).
inline thread_local InputScope* current_input_scope = nullptr;
}  // namespace detail

/// While an InputScope lives on a thread, every message the thread takes
/// (Subscriber::take, read) is recorded as an input, and every message the
/// thread publishes cites the inputs recorded so far as its provenance,
/// unless its Publisher was given provenance explicitly (set_provenance).
/// The Node executor opens one around every callback, with the triggering
/// message first. Beyond kMaxProvenance inputs the later ones are not cited
/// and are counted in cut(). Scopes nest; the innermost records.
/// Thread-safety: belongs to the thread that made it.
class InputScope {
 public:
  InputScope() noexcept : previous_(detail::current_input_scope) { detail::current_input_scope = this; }
  ~InputScope() { detail::current_input_scope = previous_; }
  InputScope(const InputScope&) = delete;
  InputScope& operator=(const InputScope&) = delete;

  /// Records one input.
  void add(const Provenance& input) noexcept {
    if (count_ < inputs_.size()) {
      inputs_[count_++] = input;
    } else {
      ++cut_;
    }
  }
  [[nodiscard]] std::span<const Provenance> inputs() const noexcept { return {inputs_.data(), count_}; }
  /// Inputs recorded beyond kMaxProvenance, so not cited.
  [[nodiscard]] std::uint32_t cut() const noexcept { return cut_; }
  /// Forgets the inputs recorded so far.
  void clear() noexcept {
    count_ = 0;
    cut_ = 0;
  }

  /// This thread's innermost scope, or nullptr.
  [[nodiscard]] static InputScope* current() noexcept { return detail::current_input_scope; }

 private:
  InputScope* previous_;
  std::array<Provenance, kMaxProvenance> inputs_{};
  std::uint32_t count_ = 0;
  std::uint32_t cut_ = 0;
};

}  // namespace shmbus
