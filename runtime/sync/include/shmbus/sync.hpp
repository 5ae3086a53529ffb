#pragma once
/// @file sync.hpp
/// Aligning messages from several channels: sets of one message per
/// channel whose timestamps lie close together (sensor fusion).
///
/// Two layers: `Aligner` is the policy alone, a deterministic state machine
/// fed with (channel, timestamp) arrivals, with no I/O and no clock (what
/// the property tests and the policy benchmark drive); `Synchronizer` runs an
/// Aligner on real subscribers, taking each message's timestamp from its
/// header or from a schema field.
///
/// The policies:
/// - kBoundedDisparity: every set satisfies max(ts) - min(ts) <= T. Each
///   channel has a FIFO queue. When an arrival makes all queues non-empty
///   (its own was empty), it is the pivot: every other queue drops head
///   messages older than pivot - T. When arrival order and timestamp order
///   differ between channels, a head may still be newer than the pivot by
///   more than T, or heads on both sides of the pivot may span more than T;
///   so the heads form a set only if max - min <= T, and otherwise the
///   oldest head is dropped and the check repeats. Dropping it loses no
///   valid set: the newest head's channel only has messages at least as new
///   to come (a channel's own messages arrive in timestamp order; one that
///   does not is dropped as out of order), all more than T after it.
/// - kExactTime: sets of identical timestamps (the same rule with T = 0).
/// - kApproximateTime: in the manner of ROS message_filters' ApproximateTime:
///   per-channel queues of `queue_size`; the pivot is the newest of the
///   queue heads; each other channel contributes its message nearest to the
///   pivot, chosen once a message at or after the pivot has arrived on it
///   (so no nearer one can come); each message is used at most once, and
///   messages before a chosen one are dropped. No threshold: a set's spread
///   is whatever the streams give (T is only reported against).
/// - kAllLatest: in the manner of Apollo Cyber RT's fusion: each message of
///   the master channel triggers a set with the latest message of every
///   other channel (which may serve several sets); a master message that
///   arrives before every other channel has a message is dropped.
///
/// Every message that leaves without being part of a set is counted, per
/// channel and per reason, and passed to the drop callback.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/types.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus::sync {

enum class Policy : std::uint8_t { kBoundedDisparity, kExactTime, kApproximateTime, kAllLatest };

/// "bounded", "exact", "approximate", "latest".
std::string_view to_string(Policy p) noexcept;
/// The policy of a name as to_string() spells it; nullopt otherwise.
std::optional<Policy> parse_policy(std::string_view name) noexcept;

/// Why a message was discarded.
enum class DropReason : std::uint8_t {
  kTooOld,      ///< older than another channel's message by more than T
  kNoMatch,     ///< no partner: no identical (exact) or nearer (approximate) stamp; a master without partners
  kQueueFull,   ///< its channel's queue was full (the oldest goes)
  kOutOfOrder,  ///< older than a message its channel delivered before
  kSuperseded,  ///< all-latest: replaced by a newer one before any set used it
};
inline constexpr std::size_t kDropReasons = 5;
std::string_view to_string(DropReason r) noexcept;

/// Parameters of a policy.
struct Options {
  Policy policy = Policy::kBoundedDisparity;
  /// T: the bound of kBoundedDisparity (must be > 0); the others report
  /// against it.
  std::chrono::nanoseconds threshold{0};
  std::size_t queue_size = 64;  ///< per channel, >= 1
  std::size_t master = 0;       ///< kAllLatest: the channel that triggers
};

/// A message as taken from its channel: its header and its bytes, owned
/// and immutable once taken. Sets share it (all-latest puts one partner in
/// several sets), so it is never copied after the take.
struct TakenMessage {
  MessageInfo info;
  std::vector<std::byte> payload;
};

/// One message as the aligner sees it. The aligner reads channel, stamp
/// and sequence and only carries `message` along (null where the caller
/// keeps no message, as the policy tests do).
struct Item {
  std::size_t channel = 0;
  std::int64_t stamp_ns = 0;
  std::uint64_t sequence = 0;
  std::shared_ptr<const TakenMessage> message;
};

/// An aligned set: one item per channel, in channel order.
struct Set {
  std::vector<Item> members;
  std::int64_t disparity_ns = 0;  ///< max(stamp) - min(stamp)
};

/// A policy as a deterministic state machine. Thread-safety: one thread.
class Aligner {
 public:
  using DropCallback = std::function<void(const Item&, DropReason)>;

  /// Throws Error(kInvalidArgument): fewer than 2 channels, T <= 0 for
  /// kBoundedDisparity, queue_size 0, master out of range.
  Aligner(std::size_t channels, const Options& options);

  /// Feeds one arrival; appends the sets it completes to `out`.
  void push(Item item, std::vector<Set>& out);

  /// Called for every discarded item, after it is counted.
  void on_drop(DropCallback callback) { on_drop_ = std::move(callback); }

  [[nodiscard]] std::size_t channels() const noexcept { return queues_.size(); }
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  [[nodiscard]] std::uint64_t sets() const noexcept { return sets_; }
  [[nodiscard]] std::uint64_t dropped(std::size_t channel, DropReason reason) const noexcept;
  /// All reasons of one channel.
  [[nodiscard]] std::uint64_t dropped(std::size_t channel) const noexcept;
  /// Items waiting in the queues (not yet in a set, not dropped).
  [[nodiscard]] std::size_t pending() const noexcept;

 private:
  void drop(const Item& item, DropReason reason);
  void drop_front(std::size_t channel, DropReason reason);
  void emit_heads(std::vector<Set>& out);
  void align_bounded(std::size_t pivot_channel, std::int64_t threshold_ns, DropReason mismatch, std::vector<Set>& out);
  void align_approximate(std::vector<Set>& out);
  void align_latest(Item item, std::vector<Set>& out);

  Options options_;
  std::vector<std::deque<Item>> queues_;
  std::vector<std::optional<std::int64_t>> last_stamp_;  ///< per channel, the newest accepted
  std::vector<std::optional<Item>> latest_;              ///< kAllLatest
  std::vector<bool> latest_used_;
  std::vector<std::array<std::uint64_t, kDropReasons>> dropped_;
  std::uint64_t sets_ = 0;
  DropCallback on_drop_;
};

/// Options of a Synchronizer.
struct SynchronizerOptions : Options {
  /// Where a message's timestamp is: empty for the publish time in its
  /// header (CLOCK_MONOTONIC), else a path to an int64 or uint64 field of
  /// nanoseconds in every input's schema, e.g. "header.stamp_ns", or to a
  /// builtin_interfaces/Time (sec, nanosec), e.g. a ROS 2 header's
  /// "header.stamp".
  std::string stamp_field;
};

/// One member of a set as the Synchronizer delivers it.
struct Member {
  std::string channel;
  std::int64_t stamp_ns = 0;
  std::shared_ptr<const TakenMessage> message;  ///< never null in a delivered set

  [[nodiscard]] const MessageInfo& info() const noexcept { return message->info; }
  [[nodiscard]] std::span<const std::byte> payload() const noexcept { return message->payload; }
};

/// A set of messages, one per input, in input order.
struct AlignedSet {
  std::vector<Member> members;
  std::int64_t disparity_ns = 0;
};

/// Subscribes to the inputs, reads timestamps and aligns with a policy.
/// Messages a policy discards are also counted in the subscriber's entry
/// (`discarded`, shown by `shmtool info`). Thread-safety: one thread.
class Synchronizer {
 public:
  /// Throws Error: kInvalidArgument (as Aligner; duplicate inputs; a stamp
  /// field missing from an input's schema or not an integer), kNotFound (an
  /// input channel that does not exist).
  Synchronizer(const std::vector<std::string>& inputs, const SynchronizerOptions& options,
               Context& context = Context::process_default());
  /// The same on subscribers the caller made (of any type, with any
  /// options); the synchronizer takes them over.
  Synchronizer(std::vector<Subscriber> inputs, const SynchronizerOptions& options);
  ~Synchronizer();
  Synchronizer(const Synchronizer&) = delete;
  Synchronizer& operator=(const Synchronizer&) = delete;

  /// The next aligned set, waiting up to `timeout` for messages; nullopt
  /// when none was completed in that time.
  std::optional<AlignedSet> next(std::chrono::nanoseconds timeout);

  /// Called for every discarded message (channel name, reason).
  void on_drop(std::function<void(const std::string& channel, DropReason)> callback);

  [[nodiscard]] const std::vector<std::string>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const Aligner& aligner() const noexcept { return aligner_; }
  /// Messages the transport lost on an input before they were taken.
  [[nodiscard]] std::uint64_t lost(std::size_t input) const noexcept;

 private:
  struct Input;
  void take_all(std::size_t input, std::vector<Set>& sets);
  std::vector<std::string> inputs_;
  std::vector<std::unique_ptr<Input>> in_;
  Aligner aligner_;
  WaitSet wait_set_;
  std::deque<AlignedSet> ready_;
  std::vector<std::size_t> ready_inputs_;
  std::function<void(const std::string&, DropReason)> on_drop_;
};

}  // namespace shmbus::sync
