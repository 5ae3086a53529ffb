#pragma once
/// @file input_scope.hpp
/// Provenance without code in the module: what a thread took is what it
/// publishes from.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "shmbus/clock.hpp"
#include "shmbus/types.hpp"

namespace shmbus {

namespace detail {

/// Copies provenance entries [0, n) between two arrays of kMaxProvenance
/// 16-byte entries, four at a time, so entries up to the next multiple of
/// four are copied too (both arrays have room for them). A memcpy of a
/// variable few entries compiled to `rep movsq` or a call to memmove: some
/// 10 ns of start-up for the two entries a module's message usually cites.
inline void copy_provenance(void* dst, const void* src, std::size_t n) noexcept {
  static_assert(sizeof(Provenance) == 16 && kMaxProvenance % 4 == 0);
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  for (std::size_t i = 0; i < n; i += 4) std::memcpy(d + i * 16, s + i * 16, 64);
}

/// One message a thread took, with that message's own inputs (which become
/// the second level of what the thread publishes).
struct TakenInput {
  Provenance input;
  std::uint32_t parent_count;
  std::array<Provenance, kMaxProvenance> parents;  ///< [0, parent_count) valid
};

/// The inputs a thread (or a callback) took, in order. `taken` counts all
/// of them; the ring keeps kMaxProvenance: the first ones (keep_first, a
/// Node callback) or the latest ones (a plain thread).
struct InputLog {
  std::array<TakenInput, kMaxProvenance> ring;
  std::uint64_t taken = 0;
  /// `taken` at the thread's last publish: the next take starts a run.
  std::uint64_t run_start = 0;
  /// CLOCK_MONOTONIC at the first take of the current run (0: none yet).
  std::int64_t run_ns = 0;
  bool keep_first = false;

  /// Records one taken message (called by Subscriber on every take).
  void add(std::uint32_t channel_index, const MessageInfo& info) noexcept {
    if (taken == run_start) run_ns = stamp_now_ns();  // one clock read per run of takes
    const std::uint64_t i = taken++;
    if (keep_first && i >= kMaxProvenance) return;  // cut: counted at publish
    TakenInput& t = ring[i % kMaxProvenance];
    t.input = Provenance{channel_index, 0, info.sequence};
    t.parent_count = info.input_count;
    copy_provenance(t.parents.data(), info.provenance.data(), info.input_count);
  }
};

/// Plain threads' inputs (outside any InputScope).
inline thread_local InputLog thread_inputs{};

}  // namespace detail

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
/// and are counted as cut. Scopes nest; the innermost records. Outside any
/// scope, a thread's publish cites what the thread took since that
/// publisher's previous publish on it (the latest kMaxProvenance).
/// Thread-safety: belongs to the thread that made it.
class InputScope {
 public:
  InputScope() noexcept : previous_(detail::current_input_scope) {
    log_.keep_first = true;
    detail::current_input_scope = this;
  }
  ~InputScope() { detail::current_input_scope = previous_; }
  InputScope(const InputScope&) = delete;
  InputScope& operator=(const InputScope&) = delete;

  /// The inputs recorded so far (all of them count; the first
  /// kMaxProvenance are kept).
  [[nodiscard]] const detail::InputLog& log() const noexcept { return log_; }
  [[nodiscard]] detail::InputLog& log() noexcept { return log_; }
  /// Inputs recorded beyond kMaxProvenance, so not cited.
  [[nodiscard]] std::uint64_t cut() const noexcept {
    return log_.taken > kMaxProvenance ? log_.taken - kMaxProvenance : 0;
  }
  /// Forgets the inputs recorded so far.
  void clear() noexcept {
    log_.taken = 0;
    log_.run_start = 0;
    log_.run_ns = 0;
  }

  /// This thread's innermost scope, or nullptr.
  [[nodiscard]] static InputScope* current() noexcept { return detail::current_input_scope; }

 private:
  InputScope* previous_;
  detail::InputLog log_;
};

namespace detail {
/// Where this thread's takes are recorded: its innermost scope, or the
/// thread's own log.
inline InputLog& input_log() noexcept {
  InputScope* scope = current_input_scope;
  return scope != nullptr ? scope->log() : thread_inputs;
}
}  // namespace detail

}  // namespace shmbus
