#pragma once
/// @file subscriber.hpp
/// Taking messages out of a channel, with loss accounting and blocking waits.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/types.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus {

/// Outcome of a take.
enum class TakeStatus {
  kOk,              ///< a message was copied out
  kNoData,          ///< nothing new (yet)
  kBufferTooSmall,  ///< the next message has info.size bytes; nothing consumed
};

/// A take's status and the message's header.
struct TakeResult {
  TakeStatus status = TakeStatus::kNoData;
  MessageInfo info;
  [[nodiscard]] bool ok() const noexcept { return status == TakeStatus::kOk; }
};

/// Ring sequences [first, end) that a subscriber counted lost.
struct LostRange {
  std::uint64_t first = 0;
  std::uint64_t end = 0;
  [[nodiscard]] bool empty() const noexcept { return first == end; }
};

/// Options of a subscriber.
struct SubscriberOptions {
  /// Also deliver up to this many messages already in the ring when the
  /// subscriber starts (late joiners); 0 = only new ones.
  std::uint32_t history = 0;
  /// Untyped subscribers: when the channel does not exist yet, construct
  /// anyway and attach when it appears (processes start in any order).
  /// Until then take() finds nothing, and wait() and WaitSet::wait() look
  /// for the channel every 10 ms. Once attached it delivers every message
  /// published since the channel appeared (those already overwritten are
  /// counted lost). Without it the constructor throws Error(kNotFound).
  bool wait_for_channel = false;
  /// Start at the channel's first message (sequence 0) instead of now:
  /// for a subscriber that learns of a channel after it appeared but knows
  /// the channel is newer than its own interest (a recorder finding a
  /// channel made while it records). What the ring no longer holds is
  /// counted lost. Overrides `history`.
  bool from_first = false;
  /// How long a slot claimed by a live publisher and not yet committed is
  /// waited for before it is counted lost; 0: the channel's stall_timeout.
  /// A longer bound suits a reader of a channel with one writer whose every
  /// message it needs (a service client's responses): a stalled slot there
  /// holds up nothing behind it. A writer that died is judged as always.
  std::chrono::nanoseconds stall_timeout{0};
  /// The node name shown for this subscriber (shmtool info, the monitor);
  /// empty: the context's node. A shmbus::Node sets its own name.
  std::string node{};
};

class WaitSet;

/// Given to a Subscriber::reread() reader: whether the message it reads is
/// still the one it asked for.
class RingCheck {
 public:
  /// True when no publisher overwrote the message since reread() found it
  /// (an acquire fence, then the slot's state compared).
  [[nodiscard]] bool unchanged() const noexcept;

 private:
  friend class Subscriber;
  RingCheck(const std::atomic<std::uint64_t>* state, std::uint64_t expected) noexcept
      : state_(state), expected_(expected) {}
  const std::atomic<std::uint64_t>* state_;
  std::uint64_t expected_;
};

/// Takes messages out of one channel in sequence order. A slow subscriber
/// never slows publishers: it loses the oldest messages and is told how many
/// (MessageInfo::lost_before, lost()). A torn message is never delivered.
/// Thread-safety: one Subscriber per thread.
class Subscriber {
 public:
  /// Opens (or, with a type, creates) `channel`. With `type` nullopt any
  /// type is accepted and the channel must exist (Error kNotFound), unless
  /// `options.wait_for_channel`.
  /// Throws Error like Publisher's constructor.
  Subscriber(std::string_view channel, const std::optional<TypeInfo>& type,
             Context& context = Context::process_default(), const SubscriberOptions& options = {});
  ~Subscriber();
  Subscriber(Subscriber&&) noexcept;
  Subscriber& operator=(Subscriber&&) noexcept;

  /// Copies the next message into `buffer`. Never blocks (except to finish
  /// a copy) and never delivers a torn message: one overwritten while copied
  /// is counted lost and skipped.
  TakeResult take(std::span<std::byte> buffer) noexcept;

  /// Zero-copy take: calls `reader(payload, info)` on the message where it
  /// lies in shared memory, then checks that no publisher overwrote it
  /// meanwhile (optimistic read). Only when the result is kOk may what the
  /// reader derived be used; a message overwritten during the read is
  /// counted lost and the reader is called again with the next one. So the
  /// reader must only read (copy out, decode, checksum), may see torn bytes
  /// on a call whose message is then discarded, and must not keep the span.
  /// For large messages (images, point clouds) this saves the copy-out.
  /// The span is aligned for any type of its size: on the ring 64-byte
  /// aligned, or (a message of at most 24 bytes that cites nothing, which
  /// travels in the slot's header line) 16-byte aligned up to 16 bytes and
  /// 8-byte aligned above; over iceoryx 16-byte aligned.
  template <typename F>
  TakeResult read(F&& reader) noexcept {
    return read_in_place(
        [](void* ctx, std::span<const std::byte> payload, const MessageInfo& info) {
          (*static_cast<std::remove_reference_t<F>*>(ctx))(payload, info);
        },
        &reader);
  }

  /// Copies a message read in place (by a read() or reread() reader) to
  /// `out`: the seqlock's optimistic copy, which may race with the next
  /// lap's writer by design and which ThreadSanitizer is told to ignore, as
  /// take's own copy. The read's check decides whether the copy may be used.
  static void copy_in_place(std::span<const std::byte> payload, std::byte* out) noexcept;

  /// The function-pointer form of read().
  using InPlaceReader = void (*)(void* context, std::span<const std::byte> payload, const MessageInfo& info);
  TakeResult read_in_place(InPlaceReader reader, void* context) noexcept;

  /// take() for a fixed-layout type: copies the next message of exactly
  /// buffer.size() bytes. A message of another size is not one (a peer
  /// publishing other bytes under the type's name): it is skipped, counted
  /// as discarded (shmtool info) and said once on stderr. kNoData once a
  /// ring's worth of them was skipped in one call.
  TakeResult take_exact(std::span<std::byte> buffer) noexcept;
  /// read() for a fixed-layout type of `size` bytes: the reader sees only
  /// messages of exactly that size; others are skipped as take_exact does.
  template <typename F>
  TakeResult read_exact(std::size_t size, F&& reader) noexcept {
    return read_exact_in_place(
        size,
        [](void* ctx, std::span<const std::byte> payload, const MessageInfo& info) {
          (*static_cast<std::remove_reference_t<F>*>(ctx))(payload, info);
        },
        &reader);
  }
  TakeResult read_exact_in_place(std::size_t size, InPlaceReader reader, void* context) noexcept;
  /// Throws Error(kTypeMismatch), one line naming the fix, when the
  /// channel's slots cannot hold a message of `size` bytes: those of
  /// `type`, a fixed-layout type (checked when attached).
  void require_room(std::size_t size, std::string_view type) const;

  /// The ring sequences counted lost before `info`, the message this
  /// subscriber took last: [first lost, info.sequence), discarded loans
  /// between them included. Empty when none were (info.lost_before == 0),
  /// and on iceoryx channels (no channel-wide sequences there).
  [[nodiscard]] LostRange lost_before(const MessageInfo& info) const noexcept;

  /// Reads again, where it lies, a message this subscriber already took
  /// (by its sequence), if it is still in the ring: calls
  /// `reader(payload, check)`, then checks that no publisher overwrote it
  /// meanwhile. Returns true when what the reader derived is valid, false
  /// when the message is no longer there (overwritten before or during the
  /// read; nothing is counted: the caller decides what that loss is). The
  /// reader follows read()'s rules, and may ask `check.unchanged()` itself
  /// before it commits to what it derived (a file writer takes back what it
  /// wrote). It changes no state of this subscriber, so another thread may
  /// call it while this one takes: a recorder's writer thread writes a large
  /// message into its file from the ring, which the reader thread took
  /// without copying.
  template <typename F>
  bool reread(std::uint64_t sequence, F&& reader) const noexcept {
    return reread_in_place(
        sequence,
        [](void* ctx, std::span<const std::byte> payload, const RingCheck& check) {
          (*static_cast<std::remove_reference_t<F>*>(ctx))(payload, check);
        },
        &reader);
  }
  /// The function-pointer form of reread().
  using InPlaceRereader = void (*)(void* context, std::span<const std::byte> payload, const RingCheck& check);
  bool reread_in_place(std::uint64_t sequence, InPlaceRereader reader, void* context) const noexcept;

  /// The channel's ring slots (0 while waiting for the channel).
  [[nodiscard]] std::uint32_t capacity() const noexcept;
  /// The channel's transport (kShm until attached). On iceoryx channels
  /// reread() finds nothing: a message leaves iceoryx once taken.
  [[nodiscard]] Transport transport() const noexcept;

  /// Blocks until take() may return a message or `timeout` passes: spins for
  /// the channel's wait_spin first, then sleeps on the channel's futex.
  /// Returns false on timeout. A take() after true may still find nothing
  /// (a publisher was mid-write); call wait() again then.
  bool wait(std::chrono::nanoseconds timeout) noexcept;

  /// True when a message is ready or being written.
  [[nodiscard]] bool pending() const noexcept;

  /// False while a wait_for_channel subscriber waits for its channel to
  /// appear; type(), max_message_size() and the counters are known once
  /// attached. attach() tries now (wait() and take() try by themselves).
  [[nodiscard]] bool attached() const noexcept;
  bool attach() noexcept;

  [[nodiscard]] std::uint64_t received() const noexcept;
  [[nodiscard]] std::uint64_t lost() const noexcept;
  /// The ring sequences counted lost since the last message delivered
  /// (overwritten, or claimed by a writer that stalled beyond
  /// stall_timeout), handed over now: the next message's lost_before no
  /// longer counts them. For a reader that must learn of a loss when no
  /// message follows it (a service server). Empty when there is none, and
  /// on iceoryx channels, whose losses only the next message shows.
  [[nodiscard]] LostRange take_lost() noexcept;

  /// Counts `n` messages this subscriber took and then discarded (a
  /// synchronizer that found no partner for them), so that `shmtool info`
  /// shows them beside received and lost: nothing is dropped unseen.
  void count_discarded(std::uint64_t n = 1) noexcept;
  [[nodiscard]] std::uint64_t discarded() const noexcept;
  /// Counts `n` exceptions thrown by callbacks that handled this
  /// subscriber's messages (a Node does), shown by `shmtool info`.
  void count_error(std::uint64_t n = 1) noexcept;
  [[nodiscard]] std::uint64_t errors() const noexcept;
  [[nodiscard]] std::uint32_t id() const noexcept;
  [[nodiscard]] const std::string& channel() const noexcept;
  [[nodiscard]] std::uint32_t channel_index() const noexcept;
  [[nodiscard]] std::size_t max_message_size() const noexcept;
  /// The largest message the channel may carry: what its ring may grow to
  /// (max_message_size() is its slots now, and follows a growth).
  [[nodiscard]] std::size_t size_ceiling() const noexcept;
  /// The channel's type (name, hash, schema).
  [[nodiscard]] TypeInfo type() const;

  struct Impl;

 private:
  friend class WaitSet;
  std::unique_ptr<Impl> impl_;
};

/// A Subscriber of one message type.
template <AnyMessageType T>
class TypedSubscriber {
 public:
  explicit TypedSubscriber(std::string_view channel, Context& context = Context::process_default(),
                           const SubscriberOptions& options = {})
      : subscriber_(channel, type_info_of<T>(), context, options) {
    if constexpr (MessageType<T>) subscriber_.require_room(sizeof(T), T::kTypeName);
  }

  /// The next message and its header, or nullopt when there is none. A
  /// message of another size than T's is skipped (Subscriber::take_exact).
  std::optional<T> take(MessageInfo* info = nullptr) noexcept requires MessageType<T> {
    T value;
    const TakeResult r = subscriber_.take_exact(std::as_writable_bytes(std::span{&value, 1}));
    if (!r.ok()) return std::nullopt;
    if (info != nullptr) *info = r.info;
    return value;
  }
  /// The next message copied out of its slot and made an owning T, or
  /// nullopt when there is none. Throws Error(kInvalidArgument) naming the
  /// field when the message's strings or sequences point outside it.
  std::optional<T> take(MessageInfo* info = nullptr) requires VariableMessageType<T> {
    if (buffer_.size() < subscriber_.max_message_size()) buffer_.resize(subscriber_.max_message_size());
    TakeResult r = subscriber_.take(buffer_);
    if (r.status == TakeStatus::kBufferTooSmall) {
      // The channel grew: its larger message is taken into a larger buffer.
      buffer_.resize(std::max<std::size_t>(r.info.size, subscriber_.max_message_size()));
      r = subscriber_.take(buffer_);
    }
    if (!r.ok()) return std::nullopt;
    if (info != nullptr) *info = r.info;
    return T::from(typename T::View(std::span<const std::byte>(buffer_.data(), r.info.size)));
  }
  bool wait(std::chrono::nanoseconds timeout) noexcept { return subscriber_.wait(timeout); }
  [[nodiscard]] Subscriber& untyped() noexcept { return subscriber_; }

 private:
  Subscriber subscriber_;
  std::vector<std::byte> buffer_;  ///< a variable type's take (aligned as new gives, 16 bytes)
};

}  // namespace shmbus
