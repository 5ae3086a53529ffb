#pragma once
/// @file node.hpp
/// Nodes and executors: declare what a module reacts to (messages, timers)
/// and let the runtime run it.
///
///   shmbus::Node node("fusion");
///   auto out = node.publisher<Pose>("/pose");   // a handle; `auto&` works too
///   node.subscribe<Imu>("/imu", [&](const Imu& m, const shmbus::MessageInfo&) { ... out.publish(p); });
///   node.every(100ms, [&] { ... });
///   node.spin();  // until node.stop(), SIGINT or SIGTERM

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/stop_signals.hpp"
#include "shmbus/subscriber.hpp"
#include "shmbus/wait_set.hpp"

namespace shmbus {

class Executor;
class Node;

namespace detail {

template <typename>
inline constexpr bool kAlwaysFalse = false;

/// A callback that takes a message by reference: `(const T&, const
/// MessageInfo&)` or `(const T&)`; T is T or a view.
template <typename T, typename F>
concept RefCallback = std::is_invocable_v < std::decay_t<F>
&, const T&, const MessageInfo& > || std::is_invocable_v<std::decay_t<F>&, const T&>;

/// A RefCallback as `(const T&, const MessageInfo&)`.
template <typename T, typename F>
std::function<void(const T&, const MessageInfo&)> ref_callback(F&& callback) {
  using Fn = std::decay_t<F>;
  if constexpr (std::is_invocable_v<Fn&, const T&, const MessageInfo&>) {
    return std::function<void(const T&, const MessageInfo&)>(std::forward<F>(callback));
  } else {
    return [f = Fn(std::forward<F>(callback))](const T& m, const MessageInfo&) mutable { f(m); };
  }
}

/// A subscription callback of any of rclcpp's shapes, as one that takes
/// the message it may keep (moved into a shared_ptr or unique_ptr when the
/// callback takes one) and its MessageInfo: `(const T&)`,
/// `(std::shared_ptr<const T>)`, `(std::shared_ptr<T>)`,
/// `(std::unique_ptr<T>)`, each also with `const MessageInfo&` after it.
template <typename T, typename F>
std::function<void(T&&, const MessageInfo&)> message_callback(F&& callback) {
  using Fn = std::decay_t<F>;
  using Info = const MessageInfo&;
  Fn f(std::forward<F>(callback));
  if constexpr (std::is_invocable_v<Fn&, const T&, Info>) {
    return [f](T&& m, Info i) mutable { f(static_cast<const T&>(m), i); };
  } else if constexpr (std::is_invocable_v<Fn&, const T&>) {
    return [f](T&& m, Info) mutable { f(static_cast<const T&>(m)); };
  } else if constexpr (std::is_invocable_v<Fn&, std::shared_ptr<T>, Info>) {
    return [f](T&& m, Info i) mutable { f(std::make_shared<T>(std::move(m)), i); };
  } else if constexpr (std::is_invocable_v<Fn&, std::shared_ptr<T>>) {
    return [f](T&& m, Info) mutable { f(std::make_shared<T>(std::move(m))); };
  } else if constexpr (std::is_invocable_v<Fn&, std::unique_ptr<T>, Info>) {
    return [f](T&& m, Info i) mutable { f(std::make_unique<T>(std::move(m)), i); };
  } else if constexpr (std::is_invocable_v<Fn&, std::unique_ptr<T>>) {
    return [f](T&& m, Info) mutable { f(std::make_unique<T>(std::move(m))); };
  } else {
    static_assert(kAlwaysFalse<Fn>,
                  "shmbus: a subscription callback takes (const T&), std::shared_ptr<const T>, std::shared_ptr<T> or "
                  "std::unique_ptr<T>, each optionally followed by const shmbus::MessageInfo&; for a type with "
                  "strings or sequences also (const T::View&)");
  }
}

}  // namespace detail

/// How the callbacks of one group may run on a multi-threaded executor.
enum class CallbackGroupKind {
  kMutuallyExclusive,  ///< one callback of the group at a time (the default group)
  kReentrant,          ///< callbacks of the group run in parallel
};

/// A set of callbacks with one concurrency rule (as ROS 2's callback
/// groups). Whatever the group, one subscription's callbacks never overlap
/// each other (its channel is handled in publish order) and one timer's
/// never overlap each other. Made by Node::create_callback_group.
class CallbackGroup {
 public:
  explicit CallbackGroup(CallbackGroupKind kind) noexcept : kind_(kind) {}
  [[nodiscard]] CallbackGroupKind kind() const noexcept { return kind_; }

 private:
  friend class Executor;
  CallbackGroupKind kind_;
  std::atomic<bool> busy_{false};  ///< a mutually exclusive group's callback runs
};

/// What a node does when a callback throws.
enum class OnException {
  kContinue,  ///< log one line to stderr, count it, keep running
  kStop,      ///< count it, stop spinning and rethrow it from spin()
};

/// Options of a node.
struct NodeOptions {
  OnException on_exception = OnException::kContinue;
  /// spin() ends on SIGINT or SIGTERM: the first spin installs one handler
  /// per process, chained to the handlers installed before it (a handler
  /// installed after it replaces it: install yours first).
  bool handle_signals = true;
};

/// Options of one subscription.
struct SubscriptionOptions {
  /// History, wait_for_channel (the node sets `node`).
  SubscriberOptions subscriber{};
  /// nullptr: the node's default, mutually exclusive group.
  CallbackGroup* group = nullptr;
  /// Deliver a read-only view of the message where it lies in shared memory
  /// instead of a copy (images, point clouds). The view is valid only during
  /// the callback; the message is validated after it (as Subscriber::read):
  /// when a publisher overwrote it meanwhile, what the callback saw may be
  /// torn, `on_overwritten` is called with its header and it is counted
  /// (Subscription::overwritten, and lost in shmtool info).
  bool in_place = false;
  std::function<void(const MessageInfo&)> on_overwritten;
  /// Called, in the callback's turn, when messages were counted lost
  /// (overwritten, or claimed by a publisher that stalled beyond
  /// stall_timeout) and no message came after them to tell it in its
  /// MessageInfo::lost_before: with their sequences, which the next
  /// message then does not count again. rclcpp's message-lost event; ring
  /// channels only (on iceoryx the next message tells).
  std::function<void(const LostRange&)> on_lost;
  /// Messages handled per wakeup before the executor looks at its other
  /// sources again (fairness between a busy channel and the rest).
  std::uint32_t batch = 32;
};

/// Options of one timer.
struct TimerOptions {
  /// nullptr: the node's default, mutually exclusive group.
  CallbackGroup* group = nullptr;
};

/// One subscription of a node: its callback and its counters.
/// Thread-safety: the counters may be read from any thread.
class Subscription {
 public:
  using Dispatch = std::function<TakeStatus(Subscription&)>;

  Subscription(Subscriber subscriber, CallbackGroup* group, std::uint32_t batch);
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  [[nodiscard]] const std::string& channel() const noexcept { return subscriber_.channel(); }
  /// The underlying subscriber (received, lost, type); do not take from it
  /// while the node spins.
  [[nodiscard]] Subscriber& subscriber() noexcept { return subscriber_; }
  [[nodiscard]] const Subscriber& subscriber() const noexcept { return subscriber_; }
  /// Callbacks run, callbacks that threw, in-place views overwritten.
  [[nodiscard]] std::uint64_t calls() const noexcept { return calls_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t overwritten() const noexcept { return overwritten_.load(std::memory_order_relaxed); }
  /// No more callbacks (takes effect before the next message); the
  /// subscription stays registered until its node is destroyed.
  void cancel() noexcept;

 private:
  friend class Executor;
  friend class Node;
  /// Takes one message and runs the callback on it.
  TakeStatus dispatch() { return dispatch_(*this); }
  void count(std::atomic<std::uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  Subscriber subscriber_;
  Node* node_ = nullptr;
  CallbackGroup* group_;
  std::uint32_t batch_;
  Dispatch dispatch_;
  std::function<void(const LostRange&)> on_lost_;
  std::vector<std::byte> buffer_;      ///< raw copies
  std::exception_ptr in_place_error_;  ///< thrown inside an in-place read
  std::atomic<bool> in_flight_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> overwritten_{0};
};

/// A periodic or one-shot timer of a node. Periodic timers fire on absolute
/// deadlines start + k * period (no drift); a tick later than a whole period
/// is skipped and counted in missed(), never bursted.
class Timer {
 public:
  Timer(std::chrono::nanoseconds period, bool periodic, std::function<void()> callback, CallbackGroup* group);
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void cancel() noexcept { cancelled_.store(true, std::memory_order_release); }
  [[nodiscard]] bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  [[nodiscard]] std::chrono::nanoseconds period() const noexcept { return std::chrono::nanoseconds(period_ns_); }
  [[nodiscard]] std::uint64_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t missed() const noexcept { return missed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  /// Inside the callback: the CLOCK_MONOTONIC deadline this run is for
  /// (its lateness is mono_now_ns() - deadline_ns()).
  [[nodiscard]] std::int64_t deadline_ns() const noexcept { return deadline_ns_.load(std::memory_order_relaxed); }

 private:
  friend class Executor;
  friend class Node;
  Node* node_ = nullptr;
  std::int64_t period_ns_;
  bool periodic_;
  std::function<void()> callback_;
  CallbackGroup* group_;
  std::atomic<std::int64_t> next_ns_;         ///< CLOCK_MONOTONIC deadline
  std::atomic<std::int64_t> deadline_ns_{0};  ///< of the run in progress (or the last)
  std::atomic<bool> in_flight_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<std::uint64_t> runs_{0};
  std::atomic<std::uint64_t> missed_{0};
  std::atomic<std::uint64_t> errors_{0};
};

/// What Node::publisher() returns a reference to: a handle on a publisher
/// the node owns. A copy is cheap and shares the one publisher (as rclcpp's
/// Publisher::SharedPtr does), so `auto& out = node.publisher<T>(...)` and
/// `auto out = node.publisher<T>(...)` both work. `out.publish(m)`,
/// `out.loan()` and `out.commit(loan)` are the publisher's own; `out->`
/// reaches the rest (counters, untyped()), and the handle converts to
/// `P&` where a function takes the publisher. A copy that outlives its
/// node keeps the publisher (and needs the node's context alive).
template <typename P>
class NodePublisher {
 public:
  explicit NodePublisher(std::shared_ptr<P> publisher) noexcept : publisher_(std::move(publisher)) {}

  template <typename... Args>
  decltype(auto) publish(Args&&... args) const {
    return publisher_->publish(std::forward<Args>(args)...);
  }
  template <typename... Args>
  [[nodiscard]] decltype(auto) loan(Args&&... args) const {
    return publisher_->loan(std::forward<Args>(args)...);
  }
  template <typename... Args>
  decltype(auto) commit(Args&&... args) const {
    return publisher_->commit(std::forward<Args>(args)...);
  }
  P* operator->() const noexcept { return publisher_.get(); }
  P& operator*() const noexcept { return *publisher_; }
  // NOLINTNEXTLINE(google-explicit-constructor): a handle passes where the publisher is taken
  operator P&() const noexcept { return *publisher_; }

 private:
  std::shared_ptr<P> publisher_;
};

/// A module: a name (the node identity shmtool and the monitor show on its
/// endpoints), its subscriptions, publishers and timers. Callbacks run when
/// the node spins (spin, spin_once, or an Executor it was added to).
/// Thread-safety: subscribe/publisher/every/after may be called from the
/// node's own callbacks and from the thread that owns it; stop() from any
/// thread and from callbacks. A publisher from publisher() may be used by
/// one thread at a time (the callbacks of one mutually exclusive group).
class Node {
 public:
  /// `name` empty: the context's node name. Throws Error(kInvalidArgument)
  /// for a bad name.
  explicit Node(std::string_view name = {}, Context& context = Context::process_default(), NodeOptions options = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] Context& context() const noexcept { return *context_; }

  /// Calls `callback` for every message on `channel` (created with T's
  /// type if absent): `callback(message, info)`, `callback(message)`, or
  /// rclcpp's shapes taking a `std::shared_ptr` or `std::unique_ptr` of a
  /// copy (detail::message_callback). With options.in_place a callback
  /// taking `const T&` gets the message where it lies in shared memory.
  template <MessageType T, typename F>
  Subscription& subscribe(std::string_view channel, F&& callback, const SubscriptionOptions& options = {}) {
    // Only a message of exactly sizeof(T) bytes is a T (read_exact,
    // take_exact); a channel whose slots cannot hold one is refused here.
    if constexpr (detail::RefCallback<T, F>) {
      auto cb = detail::ref_callback<T>(std::forward<F>(callback));
      return add_subscription(
          channel, type_info_of<T>(), options,
          options.in_place
              ? dispatch_in_place(
                    [cb](std::span<const std::byte> p, const MessageInfo& info) {
                      cb(*std::launder(reinterpret_cast<const T*>(p.data())), info);
                    },
                    options.on_overwritten, sizeof(T))
              : Subscription::Dispatch([cb](Subscription& s) {
                  T value;
                  const TakeResult r = s.subscriber().take_exact(std::as_writable_bytes(std::span{&value, 1}));
                  if (r.ok()) cb(value, r.info);
                  return r.status;
                }),
          sizeof(T));
    } else {
      auto cb = detail::message_callback<T>(std::forward<F>(callback));
      return add_subscription(
          channel, type_info_of<T>(), options,
          options.in_place
              ? dispatch_in_place(
                    [cb](std::span<const std::byte> p, const MessageInfo& info) {
                      T copy = *std::launder(reinterpret_cast<const T*>(p.data()));
                      cb(std::move(copy), info);
                    },
                    options.on_overwritten, sizeof(T))
              : Subscription::Dispatch([cb](Subscription& s) {
                  T value;
                  const TakeResult r = s.subscriber().take_exact(std::as_writable_bytes(std::span{&value, 1}));
                  if (r.ok()) cb(std::move(value), r.info);
                  return r.status;
                }),
          sizeof(T));
    }
  }

  /// The same for a type with strings or sequences: `callback(view, info)`
  /// or `callback(view)` with a T::View over the message (read in place
  /// with options.in_place; each string and sequence is checked when
  /// reached), or any shape above with an owning T made from it.
  template <VariableMessageType T, typename F>
  Subscription& subscribe(std::string_view channel, F&& callback, const SubscriptionOptions& options = {}) {
    using View = typename T::View;
    if constexpr (detail::RefCallback<View, F>) {
      auto cb = detail::ref_callback<View>(std::forward<F>(callback));
      return subscribe_raw(
          channel, type_info_of<T>(),
          [cb](std::span<const std::byte> p, const MessageInfo& info) { cb(View(p), info); }, options);
    } else {
      auto cb = detail::message_callback<T>(std::forward<F>(callback));
      return subscribe_raw(
          channel, type_info_of<T>(),
          [cb](std::span<const std::byte> p, const MessageInfo& info) { cb(T::from(View(p)), info); }, options);
    }
  }

  /// The raw form: `callback(payload, info)` on any channel type (`type`
  /// nullopt: the channel must exist, or options.subscriber.wait_for_channel).
  using RawCallback = std::function<void(std::span<const std::byte>, const MessageInfo&)>;
  Subscription& subscribe_raw(std::string_view channel, const std::optional<TypeInfo>& type, RawCallback callback,
                              const SubscriptionOptions& options = {});

  /// A publisher owned by the node (registered under the node's name).
  template <AnyMessageType T>
  NodePublisher<TypedPublisher<T>>& publisher(std::string_view channel, PublisherOptions options = {}) {
    options.node = name_;
    auto handle = std::make_shared<NodePublisher<TypedPublisher<T>>>(
        std::make_shared<TypedPublisher<T>>(channel, *context_, std::move(options)));
    const std::lock_guard lock(mutex_);
    publishers_.push_back(handle);
    return *handle;
  }
  NodePublisher<Publisher>& publisher(std::string_view channel, const TypeInfo& type, PublisherOptions options = {});

  /// Calls `callback` every `period`, first one period from now.
  Timer& every(std::chrono::nanoseconds period, std::function<void()> callback, TimerOptions options = {});
  /// Calls `callback` once, `delay` from now.
  Timer& after(std::chrono::nanoseconds delay, std::function<void()> callback, TimerOptions options = {});

  /// A callback group for subscribe/every options (owned by the node).
  CallbackGroup& create_callback_group(CallbackGroupKind kind);

  /// Runs callbacks until stop(), SIGINT/SIGTERM (options.handle_signals)
  /// or, with OnException::kStop, a callback throws (rethrown here).
  void spin();
  /// Waits up to `timeout` for work and runs what is ready once. Returns
  /// the number of callbacks run.
  std::size_t spin_once(std::chrono::nanoseconds timeout);
  /// Ends the spin that serves this node (from any thread, a callback, or a
  /// signal handler); a stop before the spin ends it at once.
  void stop() noexcept;
  /// False once stop() was called (until a spin ends) or a stop signal came.
  [[nodiscard]] bool ok() const noexcept;

  /// Callbacks run and callbacks that threw, over all subscriptions and timers.
  [[nodiscard]] std::uint64_t calls() const;
  [[nodiscard]] std::uint64_t errors() const;

 private:
  friend class Executor;
  friend class Subscription;
  /// `fixed_size`: a fixed-layout type's size, which the channel's slots
  /// must hold (0: any type).
  Subscription& add_subscription(std::string_view channel, const std::optional<TypeInfo>& type,
                                 const SubscriptionOptions& options, Subscription::Dispatch dispatch,
                                 std::size_t fixed_size = 0);
  /// `exact_size`: only messages of that size are read (0: all).
  static Subscription::Dispatch dispatch_in_place(RawCallback callback,
                                                  std::function<void(const MessageInfo&)> on_overwritten,
                                                  std::size_t exact_size = 0);
  Timer& add_timer(std::chrono::nanoseconds period, bool periodic, std::function<void()> callback,
                   TimerOptions options);
  /// Tells the executors that the lists changed: bumps generation_ (release;
  /// Executor::refresh acquires it and rebuilds its wait set) and wakes them.
  void announce_change() noexcept;

  std::string name_;
  Context* context_;
  NodeOptions options_;
  mutable std::mutex mutex_;  ///< guards the lists below against callbacks adding to them
  std::vector<std::unique_ptr<Subscription>> subscriptions_;
  std::vector<std::unique_ptr<Timer>> timers_;
  std::vector<std::shared_ptr<void>> publishers_;
  std::vector<std::unique_ptr<CallbackGroup>> groups_;
  CallbackGroup default_group_{CallbackGroupKind::kMutuallyExclusive};
  std::atomic<std::uint64_t> generation_{0};  ///< bumped by announce_change()
  std::atomic<bool> stop_requested_{false};
  GuardCondition wake_;            ///< additions and stop()
  std::unique_ptr<Executor> own_;  ///< spin_once's executor, kept between calls
};

/// Runs the callbacks of one or more nodes, on the calling thread (threads
/// = 1) or on `threads` threads that serve the nodes together, under the
/// callback groups' rules. Built on WaitSet: an idle executor sleeps in one
/// futex_waitv until a message, a timer deadline, a stop or a signal.
/// Thread-safety: add() before spinning; stop() from anywhere.
class Executor {
 public:
  explicit Executor(std::size_t threads = 1);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Serves `node` (which must outlive the executor's spins).
  void add(Node& node);
  /// Runs until stop(), a node's stop(), a stop signal (when a node handles
  /// them) or an exception under OnException::kStop (rethrown here).
  void spin();
  /// Waits up to `timeout` for work, runs what is ready once (on the calling
  /// thread), returns the number of callbacks run.
  std::size_t spin_once(std::chrono::nanoseconds timeout);
  void stop() noexcept;

 private:
  struct Work;
  bool refresh();
  void reset_wakes() noexcept;
  [[nodiscard]] bool fatal_pending() const noexcept;
  void rethrow_fatal();
  [[nodiscard]] bool stopping() const noexcept;
  std::int64_t run_due_timers(std::int64_t now, std::size_t& ran);
  void fire(Timer& t, std::int64_t now);
  std::size_t drain(Subscription& s);
  void report_lost(Subscription& s);
  void callback_threw(Subscription& s);
  void handle_exception(Node& node, const std::string& source, const std::exception_ptr& error);
  void wait_for_work(std::vector<std::size_t>& ready);
  void spin_single();
  void worker();
  bool next_work(Work& w);
  void run(Work& w);

  std::size_t threads_;
  std::vector<Node*> nodes_;
  std::vector<std::uint64_t> seen_;  ///< each node's generation at the last refresh
  std::vector<Subscription*> subscriptions_;
  std::vector<Timer*> timers_;
  bool signals_ = false;        ///< some node handles SIGINT/SIGTERM
  std::size_t next_start_ = 0;  ///< multi-threaded: round robin over subscriptions
  WaitSet wait_set_;
  std::vector<std::size_t> wait_index_;  ///< wait-set index -> subscription index
  std::vector<std::size_t> ready_;
  GuardCondition stop_guard_;
  GuardCondition work_done_;  ///< a worker finished: the waiter re-evaluates
  std::atomic<bool> stop_requested_{false};
  std::mutex wait_mutex_;  ///< multi-threaded: one thread looks for work at a time
  std::mutex error_mutex_;
  std::exception_ptr fatal_;            ///< an exception under OnException::kStop
  std::atomic<bool> has_fatal_{false};  ///< fatal_ is set (checked without the lock)
};

/// What a module's main answers with no parser of its own:
/// `--help`/`-h` prints `program`'s usage and `about` (exit 0), `--version`
/// the project's version (exit 0), anything else one line naming it (exit
/// 2). Returns the exit code to leave with, or nullopt to run.
[[nodiscard]] std::optional<int> module_arguments(int argc, char** argv, std::string_view program,
                                                  std::string_view about);

}  // namespace shmbus
