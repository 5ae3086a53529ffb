#pragma once
/// @file publisher.hpp
/// Publishing into a channel: copy-in, typed, or loan/commit in place.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "shmbus/context.hpp"
#include "shmbus/types.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus {

/// What a publish did. [[nodiscard]]: a message not carried is the
/// caller's to handle (it is also said once per publisher on stderr).
enum class [[nodiscard]] PublishResult{
    kOk,        ///< committed; subscribers can take it
    kTooLarge,  ///< larger than the channel may carry (Publisher::too_large() says
                ///< why, on stderr once per publisher); nothing written
    kDropped,   ///< the claimed slot was overtaken or held by a stuck writer;
                ///< counted in the publisher's `dropped` (shmtool info)
};

/// Options of a publisher.
struct PublisherOptions {
  /// Stamp each publish into the channel's time list (the notify hook the
  /// daemon reads). Off only for benchmarks that measure the hook's cost:
  /// without it the daemon and `shmtool hz` see no rate for this publisher.
  bool notify_hook = true;
  /// The node name shown for this publisher; empty: the context's node.
  std::string node{};
  /// False: open the channel only if it exists (Error kNotFound otherwise),
  /// never create it; a service server opens its clients' response
  /// channels so.
  bool create = true;
  /// When this publisher creates the channel: its ring's sizes instead of
  /// the configuration's (0: the configuration's). Ignored by a channel
  /// that exists; its own sizes hold (a line on stderr says so).
  /// max_message_size: 1 to 2^30 bytes; capacity: a power of two to 2^20.
  std::uint32_t max_message_size = 0;
  std::uint32_t capacity = 0;
  /// When this publisher creates the channel: at least this many slots
  /// (rounded up to a power of two), when the capacity it would have is
  /// less (rclpy's history depth).
  std::uint32_t min_capacity = 0;
  /// When this publisher creates the channel: the largest slot its ring
  /// may grow to (0: the configuration's max_grow_size); it also bounds
  /// the grown rings to two such slots (docs/configuration.md).
  std::uint32_t max_grow_size = 0;
};

class Publisher;

/// A slot claimed for writing in place. Write into data(), then
/// Publisher::commit(). Destroyed without commit, it is given back as a
/// discarded slot that subscribers skip (not counted lost).
/// Commit within the channel's stall_timeout: readers count a loan held
/// longer as lost. A loan must not outlive, or be moved across, the
/// Publisher that gave it. Thread-safety: use from one thread.
class Loan {
 public:
  Loan() = default;
  Loan(Loan&& other) noexcept { *this = std::move(other); }
  Loan& operator=(Loan&& other) noexcept;
  Loan(const Loan&) = delete;
  Loan& operator=(const Loan&) = delete;
  ~Loan();

  /// False when the loan could not be had (size too large, or dropped).
  [[nodiscard]] bool valid() const noexcept { return data_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  /// The writable payload, `size()` bytes, 64-byte aligned.
  [[nodiscard]] std::span<std::byte> data() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The channel sequence this message gets when committed.
  [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }
  /// The payload as a T (placement-constructed by the caller or trivially
  /// writable).
  template <typename T>
  [[nodiscard]] T* as() const noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    return std::launder(reinterpret_cast<T*>(data_));
  }

 private:
  friend class Publisher;
  Publisher* owner_ = nullptr;
  void* slot_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint32_t room_ = 0;  ///< iceoryx: provenance entries the chunk's header holds
};

/// Publishes messages into one channel. Creates the channel (with the
/// configuration's settings for its name) when it does not exist.
/// Thread-safety: one Publisher per thread; several publishers, in any
/// processes, may publish into one channel at once.
class Publisher {
 public:
  /// Opens or creates `channel` of `type`. Throws Error: kInvalidArgument
  /// (bad name), kTypeMismatch (the channel has another type), kResource
  /// (publisher table full), kLayoutMismatch (a foreign segment).
  Publisher(std::string_view channel, const TypeInfo& type, Context& context = Context::process_default(),
            const PublisherOptions& options = {});
  ~Publisher();
  Publisher(Publisher&&) noexcept;
  Publisher& operator=(Publisher&&) noexcept;

  /// Copies `payload` into the next slot and commits it. On an
  /// `overflow = "overwrite"` channel (the default) it never waits for
  /// subscribers: wait-free unless another publisher is stuck mid-write in
  /// the same slot a whole lap behind (then bounded by stall_timeout). On
  /// an `overflow = "block"` channel it first waits while the next slot
  /// holds a message a live subscriber has not taken, at most
  /// block_timeout; then that subscriber is overtaken (block_timeouts())
  /// and counts what it loses. Subscribers of dead processes are
  /// reclaimed, never waited for.
  PublishResult publish(std::span<const std::byte> payload) noexcept;
  PublishResult publish(const void* data, std::size_t size) noexcept {
    return publish(std::span<const std::byte>{static_cast<const std::byte*>(data), size});
  }

  /// Claims the next slot for `size` bytes written in place. An invalid
  /// Loan when it cannot: too large (said once on stderr, as publish
  /// says it) or dropped (counted).
  [[nodiscard]] Loan loan(std::size_t size) noexcept;
  /// Commits a loan, optionally with fewer bytes than loaned.
  PublishResult commit(Loan& loan) noexcept;
  PublishResult commit(Loan& loan, std::size_t size) noexcept;

  /// Provenance given explicitly (batching, several outputs): these inputs
  /// are cited by every following publish instead of what the thread took
  /// (at most kMaxProvenance; more are cut and counted), with their `via`
  /// as given. Pass {} to go back to automatic provenance (input_scope.hpp).
  void set_provenance(std::span<const Provenance> inputs) noexcept;

  /// For a publisher that carries messages from elsewhere (a gateway): one
  /// message's transit, its receive time here minus its origin's publish
  /// time (wall clocks), shown with the publisher (shmtool info) and in the
  /// monitor's statistics. Negative values (clocks apart) count as 0.
  void record_transit(std::int64_t ns) noexcept;
  /// For the same: `n` messages lost before they reached this publisher.
  void count_upstream_lost(std::uint64_t n) noexcept;

  /// Unique id of this publisher on the channel (MessageInfo::publisher_id).
  [[nodiscard]] std::uint32_t id() const noexcept;
  [[nodiscard]] const std::string& channel() const noexcept;
  /// The channel's index in the domain registry (used in Provenance).
  [[nodiscard]] std::uint32_t channel_index() const noexcept;
  /// The channel's slot size now (a ring channel's grows when a larger
  /// message is published: see size_ceiling()).
  [[nodiscard]] std::size_t max_message_size() const noexcept;
  /// The largest message this publisher may send: what the channel may
  /// grow to (max_grow_size), or its slots when it does not grow. A larger
  /// one is refused (PublishResult::kTooLarge), as is one the channel
  /// cannot grow for (the domain's grow_budget): too_large() says why.
  [[nodiscard]] std::size_t size_ceiling() const noexcept;
  /// The one line to show for a message of `size` bytes that does not fit
  /// (PublishResult::kTooLarge): the channel's max_message_size, where it
  /// came from (the configuration entry or defaults of the process that
  /// created the channel, and its pid) and what to do.
  [[nodiscard]] std::string too_large(std::size_t size) const;
  /// Refuses a message of `size` bytes over size_ceiling() that a caller
  /// sized before loaning (a typed publisher): counted and said as publish
  /// says it (once per publisher, on stderr). Returns kTooLarge.
  PublishResult refuse(std::size_t size) noexcept;
  /// overflow = block: while a publish or loan waits for room, `interrupted`
  /// is asked every 20 ms (from the waiting thread); when it returns true
  /// the wait ends and nothing is published: publish returns kDropped and
  /// loan an invalid Loan, counted in dropped(). For a caller whose user
  /// may cancel (Ctrl-C in Python). Empty (the default): the wait runs to
  /// block_timeout. Not while a publish is in flight.
  void set_interrupt(std::function<bool()> interrupted);
  /// True on an overflow = block channel: a publish or loan may wait.
  [[nodiscard]] bool may_wait() const noexcept;
  /// Messages published and dropped by this publisher.
  [[nodiscard]] std::uint64_t published() const noexcept;
  [[nodiscard]] std::uint64_t dropped() const noexcept;
  /// overflow = block: waits that reached block_timeout, and the time
  /// spent waiting for room in all.
  [[nodiscard]] std::uint64_t block_timeouts() const noexcept;
  [[nodiscard]] std::chrono::nanoseconds blocked() const noexcept;

  struct Impl;

 private:
  friend class Loan;
  void discard(Loan& loan) noexcept;
  std::unique_ptr<Impl> impl_;
};

/// A Publisher of one message type. A fixed-layout type is copied in as it
/// is; a type with strings or sequences (VariableMessageType) is written
/// through its Builder into a loan of its wire_size().
template <AnyMessageType T>
class TypedPublisher {
 public:
  explicit TypedPublisher(std::string_view channel, Context& context = Context::process_default(),
                          const PublisherOptions& options = {})
      : publisher_(channel, type_info_of<T>(), context, options) {}

  /// Copies `message` into the channel.
  PublishResult publish(const T& message) noexcept requires MessageType<T> {
    return publisher_.publish(&message, sizeof(T));
  }
  /// Writes `message` into a slot of its wire_size() and commits it. Throws
  /// Error(kInvalidArgument) when a sequence passes its bound.
  PublishResult publish(const T& message) requires VariableMessageType<T> {
    const std::size_t size = message.wire_size();
    if (size > publisher_.size_ceiling()) return publisher_.refuse(size);
    Loan loan = publisher_.loan(size);
    if (!loan) return PublishResult::kDropped;
    msg::Writer writer(loan.data());
    message.build(typename T::Builder(writer));
    return publisher_.commit(loan, writer.size());
  }
  /// A slot to construct a T in place; see Loan.
  [[nodiscard]] Loan loan() noexcept requires MessageType<T> { return publisher_.loan(sizeof(T)); }
  /// A slot of `size` bytes to write a message into: a msg::Writer over
  /// loan.data(), a T::Builder over the writer, then commit(loan,
  /// writer.size()).
  [[nodiscard]] Loan loan(std::size_t size) noexcept { return publisher_.loan(size); }
  PublishResult commit(Loan& loan) noexcept { return publisher_.commit(loan); }
  PublishResult commit(Loan& loan, std::size_t size) noexcept { return publisher_.commit(loan, size); }
  [[nodiscard]] Publisher& untyped() noexcept { return publisher_; }

 private:
  Publisher publisher_;
};

}  // namespace shmbus
