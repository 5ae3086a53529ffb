#pragma once
/// @file rclcpp.hpp
/// rclcpp's shape over shmbus's Node API, so that code written for rclcpp
/// runs with its includes and namespace changed:
///
///   #include "shmbus/rclcpp.hpp"
///   #include "std_msgs/msg/string.hpp"
///   namespace rclcpp = shmbus::rclcpp;
///
///   class Talker : public rclcpp::Node {
///    public:
///     Talker() : Node("talker") {
///       pub_ = create_publisher<std_msgs::msg::String>("chatter", 10);
///       timer_ = create_wall_timer(500ms, [this] { ... pub_->publish(m); });
///     }
///     ...
///   };
///   int main(int argc, char** argv) {
///     rclcpp::init(argc, argv);
///     rclcpp::spin(std::make_shared<Talker>());
///     rclcpp::shutdown();
///   }
///
/// Names are ROS 2's (relative, private `~/`, the node's namespace,
/// `--ros-args -r from:=to`), resolved to shmbus channels. What is taken and
/// what is not: docs/rclcpp.md. Target `shmbus::rclcpp`.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "builtin_interfaces/msg/duration.hpp"
#include "builtin_interfaces/msg/time.hpp"
#include "shmbus/node.hpp"
#include "shmbus/rclcpp/logging.hpp"
#include "shmbus/rclcpp/names.hpp"
#include "shmbus/rclcpp/parameter.hpp"
#include "shmbus/service.hpp"

namespace shmbus::rclcpp {

// ---- The process: init, ok, shutdown.

struct InitOptions {};

/// Reads the ROS 2 arguments of `argv` (names.hpp; a bad one throws
/// Error(kInvalidArgument) naming it) for every node made after, and makes
/// SIGINT and SIGTERM end ok() and every spin.
void init(int argc, const char* const argv[], const InitOptions& options = {});
/// Ends ok(), and every node's spin; nodes made after it do not spin.
void shutdown();
/// True between init() and shutdown(), until SIGINT or SIGTERM.
[[nodiscard]] bool ok();
/// `argv` without its ROS 2 sections.
[[nodiscard]] std::vector<std::string> remove_ros_arguments(int argc, const char* const argv[]);
/// What init() read (empty before).
[[nodiscard]] RosArguments global_arguments();
/// Sleeps `period`, or until shutdown() or a stop signal; false then.
bool sleep_for(std::chrono::nanoseconds period);

// ---- Time.

class Duration {
 public:
  constexpr Duration() = default;
  constexpr Duration(std::int32_t seconds, std::uint32_t nanoseconds)
      : ns_(std::int64_t{seconds} * 1'000'000'000 + nanoseconds) {}
  template <typename Rep, typename Period>
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp::Duration
  constexpr Duration(std::chrono::duration<Rep, Period> d)
      : ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) {}
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp::Duration
  Duration(const builtin_interfaces::msg::Duration& d) : Duration(d.sec, d.nanosec) {}
  [[nodiscard]] static Duration from_seconds(double s) {
    return Duration(std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9)));
  }
  [[nodiscard]] constexpr std::int64_t nanoseconds() const noexcept { return ns_; }
  [[nodiscard]] constexpr double seconds() const noexcept { return static_cast<double>(ns_) / 1e9; }
  [[nodiscard]] std::chrono::nanoseconds to_chrono() const noexcept { return std::chrono::nanoseconds(ns_); }
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp::Duration
  operator builtin_interfaces::msg::Duration() const;
  auto operator<=>(const Duration&) const = default;

 private:
  std::int64_t ns_ = 0;
};

/// A time on the system clock (ROS 2's default node clock without sim
/// time), in nanoseconds since the epoch.
class Time {
 public:
  constexpr Time() = default;
  explicit constexpr Time(std::int64_t nanoseconds) : ns_(nanoseconds) {}
  constexpr Time(std::int32_t seconds, std::uint32_t nanoseconds)
      : ns_(std::int64_t{seconds} * 1'000'000'000 + nanoseconds) {}
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp::Time
  Time(const builtin_interfaces::msg::Time& t) : Time(t.sec, t.nanosec) {}
  [[nodiscard]] constexpr std::int64_t nanoseconds() const noexcept { return ns_; }
  [[nodiscard]] constexpr double seconds() const noexcept { return static_cast<double>(ns_) / 1e9; }
  // NOLINTNEXTLINE(google-explicit-constructor): `msg.header.stamp = now();`, as rclcpp
  operator builtin_interfaces::msg::Time() const;
  Duration operator-(const Time& other) const { return Duration(std::chrono::nanoseconds(ns_ - other.ns_)); }
  Time operator+(const Duration& d) const { return Time(ns_ + d.nanoseconds()); }
  auto operator<=>(const Time&) const = default;

 private:
  std::int64_t ns_ = 0;
};

class Clock {
 public:
  using SharedPtr = std::shared_ptr<Clock>;
  [[nodiscard]] Time now() const;
};

/// Sleeps to keep a loop at a rate (rclcpp::Rate; WallRate is the same).
class Rate {
 public:
  explicit Rate(double hz);
  explicit Rate(std::chrono::nanoseconds period);
  /// Sleeps until one period after the last wake; false when a period was
  /// already over (the rate is then restarted from now), or on shutdown.
  bool sleep();
  void reset();
  [[nodiscard]] std::chrono::nanoseconds period() const noexcept { return period_; }

 private:
  std::chrono::nanoseconds period_;
  std::chrono::steady_clock::time_point last_;
};
using WallRate = Rate;

// ---- QoS: a history depth; what has no effect here is said once.

struct KeepLast {
  explicit KeepLast(std::size_t d) : depth(d) {}
  std::size_t depth;
};
struct KeepAll {};

/// rclcpp's QoS as shmbus carries it: the history depth makes a channel
/// this publisher creates keep at least that many messages, and
/// transient_local gives a late subscription the last `depth` of them.
/// Reliability is shmbus's own (no message is lost in flight; a slow
/// reader is overwritten and counts it, or a "block" channel waits):
/// best_effort and the rest are said once on stderr, with no effect.
class QoS {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): `create_publisher<T>("x", 10)`, as rclcpp
  QoS(std::size_t depth) : depth_(depth) {}
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp
  QoS(KeepLast k) : depth_(k.depth) {}
  // NOLINTNEXTLINE(google-explicit-constructor): as rclcpp
  QoS(KeepAll /*all*/) : keep_all_(true) {}
  QoS& keep_last(std::size_t depth) {
    depth_ = depth;
    keep_all_ = false;
    return *this;
  }
  QoS& keep_all();
  QoS& reliable() { return *this; }
  QoS& best_effort();
  QoS& transient_local() {
    transient_local_ = true;
    return *this;
  }
  QoS& durability_volatile() {
    transient_local_ = false;
    return *this;
  }
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
  [[nodiscard]] bool is_transient_local() const noexcept { return transient_local_; }

 private:
  std::size_t depth_ = 10;
  bool keep_all_ = false;
  bool transient_local_ = false;
};
/// rclcpp's named profiles, by their depths.
class SensorDataQoS : public QoS {
 public:
  SensorDataQoS() : QoS(5) {}
};
class SystemDefaultsQoS : public QoS {
 public:
  SystemDefaultsQoS() : QoS(10) {}
};
class ServicesQoS : public QoS {
 public:
  ServicesQoS() : QoS(10) {}
};
class ParametersQoS : public QoS {
 public:
  ParametersQoS() : QoS(1000) {}
};

// ---- Callback groups.

enum class CallbackGroupType { MutuallyExclusive, Reentrant };
using CallbackGroup = shmbus::CallbackGroup;

struct SubscriptionOptions {
  std::shared_ptr<CallbackGroup> callback_group;
  /// shmbus's own: a callback taking `const T::View&` (or `const T&` of a
  /// fixed-layout type) reads the message where it lies in shared memory,
  /// no copy (shmbus::SubscriptionOptions::in_place).
  bool in_place = false;
  /// shmbus's own: messages handled per wakeup before the executor looks
  /// at its other sources (shmbus::SubscriptionOptions::batch).
  std::uint32_t batch = 32;
};
struct PublisherOptions {
  std::shared_ptr<CallbackGroup> callback_group;  ///< taken for rclcpp's signature; a publisher has no callback
};

class Node;

// ---- Publishers, subscriptions, timers.

template <AnyMessageType T>
class Publisher {
 public:
  using SharedPtr = std::shared_ptr<Publisher>;
  Publisher(shmbus::Node& node, const std::string& topic, shmbus::PublisherOptions options)
      : topic_(topic), publisher_(node.publisher<T>(topic, std::move(options))) {}
  /// Publishes `message`. A message the channel cannot carry is said once
  /// on stderr and one dropped is counted (shmtool info), as rclcpp
  /// returns nothing.
  void publish(const T& message) { static_cast<void>(publisher_.publish(message)); }
  void publish(const std::unique_ptr<T>& message) { publish(*message); }
  [[nodiscard]] const char* get_topic_name() const noexcept { return topic_.c_str(); }
  /// The shmbus publisher (loans, counters).
  [[nodiscard]] TypedPublisher<T>& shmbus_publisher() noexcept { return *publisher_; }

 private:
  std::string topic_;
  NodePublisher<TypedPublisher<T>> publisher_;
};

/// The node an entity was made by, to end the entity when it is dropped:
/// a node held by a shared_ptr may go first (the entity then has nothing
/// to end); one that is not must outlive its entities.
class NodeLink {
 public:
  explicit NodeLink(std::weak_ptr<const void> node) : node_(std::move(node)), shared_(!node_.expired()) {}
  /// Calls `end` unless the node is gone.
  template <typename F>
  void end(F&& end) const {
    const auto alive = node_.lock();  // held while `end` runs
    if (!shared_ || alive) end();
  }

 private:
  std::weak_ptr<const void> node_;
  bool shared_;
};

/// A subscription: its callback runs while it is held (dropping the
/// SharedPtr ends it, as in rclcpp).
template <AnyMessageType T>
class Subscription {
 public:
  using SharedPtr = std::shared_ptr<Subscription>;
  Subscription(std::string topic, shmbus::Subscription& subscription, NodeLink node)
      : topic_(std::move(topic)), subscription_(&subscription), node_(std::move(node)) {}
  ~Subscription() {
    node_.end([this] { subscription_->cancel(); });
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  [[nodiscard]] const char* get_topic_name() const noexcept { return topic_.c_str(); }
  [[nodiscard]] shmbus::Subscription& shmbus_subscription() noexcept { return *subscription_; }

 private:
  std::string topic_;
  shmbus::Subscription* subscription_;
  NodeLink node_;
};

/// A timer: runs while it is held, until cancel().
class TimerBase {
 public:
  using SharedPtr = std::shared_ptr<TimerBase>;
  TimerBase(Timer& timer, NodeLink node) : timer_(&timer), node_(std::move(node)) {}
  ~TimerBase() {
    node_.end([this] { timer_->cancel(); });
  }
  TimerBase(const TimerBase&) = delete;
  TimerBase& operator=(const TimerBase&) = delete;
  void cancel() noexcept { timer_->cancel(); }
  [[nodiscard]] bool is_canceled() const noexcept { return timer_->cancelled(); }

 private:
  Timer* timer_;
  NodeLink node_;
};
using WallTimer = TimerBase;

// ---- Services and clients.

/// A service server served by its node's executor; it serves while held,
/// and must not outlive its node (drop it first, or hold it in the node).
template <ServiceType S>
class Service {
 public:
  using SharedPtr = std::shared_ptr<Service>;
  using Handler = typename TypedServiceServer<S>::Handler;
  Service(shmbus::Node& node, const std::string& name, Handler handler)
      : name_(name), server_(node, name, std::move(handler)) {}
  [[nodiscard]] const char* get_service_name() const noexcept { return name_.c_str(); }

 private:
  std::string name_;
  TypedServiceServer<S> server_;
};

enum class FutureReturnCode { SUCCESS, INTERRUPTED, TIMEOUT };

/// A service client whose calls run on its own thread, one at a time in
/// the order sent: async_send_request returns at once with a future of
/// the response. A call waits for a server as long as it takes (as
/// rclcpp's does) and ends with an exception in the future when the
/// server fails, dies, or the client is destroyed or shut down.
template <ServiceType S>
class Client {
 public:
  using SharedPtr = std::shared_ptr<Client>;
  using Request = typename S::Request;
  using Response = typename S::Response;
  using SharedRequest = std::shared_ptr<Request>;
  using SharedResponse = std::shared_ptr<Response>;
  using SharedFuture = std::shared_future<SharedResponse>;
  using CallbackType = std::function<void(SharedFuture)>;

  /// The future of one request, and its number (rclcpp's FutureAndRequestId).
  struct FutureAndRequestId {
    SharedFuture future;
    std::int64_t request_id = 0;
    [[nodiscard]] SharedResponse get() const { return future.get(); }
    [[nodiscard]] bool valid() const noexcept { return future.valid(); }
    void wait() const { future.wait(); }
    template <typename Rep, typename Period>
    [[nodiscard]] std::future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
      return future.wait_for(d);
    }
    [[nodiscard]] SharedFuture share() const noexcept { return future; }
  };

  Client(const std::string& name, Context& context, const std::string& node)
      : name_(name), client_(name, context, ServiceOptions{node}), worker_([this] { work(); }) {}
  ~Client() {
    {
      const std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  [[nodiscard]] const char* get_service_name() const noexcept { return name_.c_str(); }
  /// Whether a server serves the service now. It and wait_for_service
  /// wait while a call of this client is in flight (one call at a time).
  [[nodiscard]] bool service_is_ready() const {
    const std::lock_guard lock(call_mutex_);
    return client_.untyped().server_ready();
  }
  /// Waits up to `timeout` (negative: for ever) for a server; false when
  /// none came, or on shutdown.
  template <typename Rep = std::int64_t, typename Period = std::milli>
  bool wait_for_service(std::chrono::duration<Rep, Period> timeout = std::chrono::duration<Rep, Period>(-1)) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout);
    while (ok()) {
      std::chrono::nanoseconds step = std::chrono::milliseconds(20);
      if (timeout.count() >= 0) step = std::min(step, end - std::chrono::steady_clock::now());
      {
        const std::lock_guard lock(call_mutex_);
        if (client_.wait_for_server(std::max(step, std::chrono::nanoseconds(0)))) return true;
      }
      if (timeout.count() >= 0 && std::chrono::steady_clock::now() >= end) return false;
    }
    return false;
  }
  FutureAndRequestId async_send_request(SharedRequest request) { return send(std::move(request), {}); }
  /// Forgets a request not yet sent (its future then holds
  /// std::future_error, a broken promise); false when it was sent already
  /// or is unknown.
  bool remove_pending_request(const FutureAndRequestId& sent) {
    const std::lock_guard lock(mutex_);
    const auto it =
        std::find_if(queue_.begin(), queue_.end(), [&](const Pending& p) { return p.id == sent.request_id; });
    if (it == queue_.end()) return false;
    queue_.erase(it);
    return true;
  }
  /// The same; `callback(future)` runs on the client's thread once the
  /// response (or its failure) is there.
  template <typename F>
  FutureAndRequestId async_send_request(SharedRequest request, F&& callback) {
    return send(std::move(request), CallbackType(std::forward<F>(callback)));
  }

 private:
  struct Pending {
    std::int64_t id = 0;
    SharedRequest request;
    std::promise<SharedResponse> promise;
    SharedFuture future;
    CallbackType callback;
  };

  FutureAndRequestId send(SharedRequest request, CallbackType callback) {
    Pending p{0, std::move(request), {}, {}, std::move(callback)};
    p.future = p.promise.get_future().share();
    FutureAndRequestId out{p.future, 0};
    {
      const std::lock_guard lock(mutex_);
      out.request_id = p.id = next_id_++;
      queue_.push_back(std::move(p));
    }
    wake_.notify_one();
    return out;
  }

  void work() {
    for (;;) {
      Pending p;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      answer(p);
      if (p.callback) p.callback(p.future);
    }
  }

  /// Calls until a server answers (a missing server is waited for, as
  /// rclcpp's request waits in DDS), the call fails, or the client closes.
  void answer(Pending& p) {
    const auto closing = [this] {
      const std::lock_guard lock(mutex_);
      return closing_ || !ok();
    };
    auto response = std::make_shared<Response>();
    for (;;) {
      CallResult r;
      {
        const std::lock_guard lock(call_mutex_);
        r = client_.call(*p.request, *response, std::chrono::seconds(1), closing);
      }
      if (r.ok()) {
        p.promise.set_value(std::move(response));
        return;
      }
      if (r.status != CallStatus::kNoServer || closing()) {
        p.promise.set_exception(std::make_exception_ptr(
            Error(Errc::kResource, "service " + name_ + ": the call ended: " + std::string(to_string(r.status)))));
        return;
      }
    }
  }

  std::string name_;
  mutable std::mutex call_mutex_;  ///< one call at a time (ServiceClient's rule)
  mutable TypedServiceClient<S> client_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  std::int64_t next_id_ = 1;
  bool closing_ = false;
  std::thread worker_;  ///< last: started once the rest is made
};

// ---- The node.

/// rclcpp::NodeOptions: arguments as on a command line (`--ros-args ...`),
/// whether init()'s apply, and parameters.
class NodeOptions {
 public:
  NodeOptions& arguments(std::vector<std::string> a) {
    arguments_ = std::move(a);
    return *this;
  }
  NodeOptions& use_global_arguments(bool use) {
    use_global_arguments_ = use;
    return *this;
  }
  NodeOptions& parameter_overrides(std::vector<Parameter> p) {
    parameter_overrides_ = std::move(p);
    return *this;
  }
  NodeOptions& allow_undeclared_parameters(bool allow) {
    allow_undeclared_parameters_ = allow;
    return *this;
  }
  NodeOptions& automatically_declare_parameters_from_overrides(bool declare) {
    automatically_declare_ = declare;
    return *this;
  }
  /// Serve the node's parameters (`NODE/get_parameters` and the other
  /// rcl_interfaces services) and publish their changes on
  /// /parameter_events, as rclcpp does (true by default).
  NodeOptions& start_parameter_services(bool start) {
    start_parameter_services_ = start;
    return *this;
  }
  NodeOptions& start_parameter_event_publisher(bool start) {
    start_parameter_event_publisher_ = start;
    return *this;
  }
  /// The shmbus context the node's endpoints live in (the process's by default).
  NodeOptions& context(Context& c) {
    context_ = &c;
    return *this;
  }
  [[nodiscard]] const std::vector<std::string>& arguments() const noexcept { return arguments_; }
  [[nodiscard]] bool use_global_arguments() const noexcept { return use_global_arguments_; }
  [[nodiscard]] const std::vector<Parameter>& parameter_overrides() const noexcept { return parameter_overrides_; }
  [[nodiscard]] bool allow_undeclared_parameters() const noexcept { return allow_undeclared_parameters_; }
  [[nodiscard]] bool automatically_declare_parameters_from_overrides() const noexcept { return automatically_declare_; }
  [[nodiscard]] Context& context() const noexcept { return context_ ? *context_ : Context::process_default(); }
  [[nodiscard]] bool start_parameter_services() const noexcept { return start_parameter_services_; }
  [[nodiscard]] bool start_parameter_event_publisher() const noexcept { return start_parameter_event_publisher_; }

 private:
  std::vector<std::string> arguments_;
  bool use_global_arguments_ = true;
  std::vector<Parameter> parameter_overrides_;
  bool allow_undeclared_parameters_ = false;
  bool automatically_declare_ = false;
  bool start_parameter_services_ = true;
  bool start_parameter_event_publisher_ = true;
  Context* context_ = nullptr;
};

/// rclcpp::Node over a shmbus::Node: its names resolved as ROS 2 resolves
/// them, its parameters, and rclcpp's create_* functions.
/// Thread-safety: as shmbus::Node; parameters from any thread.
class Node : public std::enable_shared_from_this<Node> {
 public:
  using SharedPtr = std::shared_ptr<Node>;

  /// Throws Error(kInvalidArgument) for a name or namespace ROS 2 refuses,
  /// or a bad argument in options.arguments().
  explicit Node(const std::string& node_name, const NodeOptions& options = NodeOptions());
  Node(const std::string& node_name, const std::string& namespace_, const NodeOptions& options = NodeOptions());
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  template <typename... Args>
  [[nodiscard]] static SharedPtr make_shared(Args&&... args) {
    return std::make_shared<Node>(std::forward<Args>(args)...);
  }

  [[nodiscard]] const char* get_name() const noexcept { return name_.c_str(); }
  [[nodiscard]] const char* get_namespace() const noexcept { return namespace_.c_str(); }
  [[nodiscard]] std::string get_fully_qualified_name() const;
  [[nodiscard]] Logger get_logger() const { return logger_; }
  [[nodiscard]] Clock::SharedPtr get_clock() const { return clock_; }
  [[nodiscard]] Time now() const { return clock_->now(); }
  /// A topic or service name as this node resolves it: expanded in its
  /// namespace, then remapped. `only_expand`: not remapped.
  [[nodiscard]] std::string get_resolved_name(const std::string& name, bool only_expand = false) const;

  template <AnyMessageType T>
  typename Publisher<T>::SharedPtr create_publisher(const std::string& topic, const QoS& qos,
                                                    const PublisherOptions& options = {}) {
    static_cast<void>(options);
    shmbus::PublisherOptions o;
    o.min_capacity = static_cast<std::uint32_t>(std::min<std::size_t>(qos.depth(), 1U << 20));
    return std::make_shared<Publisher<T>>(node_, get_resolved_name(topic), std::move(o));
  }

  /// `callback` takes `const T&`, a `std::shared_ptr<const T>` (T's
  /// ConstSharedPtr), `std::shared_ptr<T>` (SharedPtr), `std::unique_ptr<T>`,
  /// each optionally with `const shmbus::MessageInfo&`, or a `const
  /// T::View&` (read in place) for a type with strings or sequences.
  template <AnyMessageType T, typename F>
  typename Subscription<T>::SharedPtr create_subscription(const std::string& topic, const QoS& qos, F&& callback,
                                                          const SubscriptionOptions& options = {}) {
    const std::string name = get_resolved_name(topic);
    shmbus::SubscriptionOptions o;
    o.group = options.callback_group.get();
    o.in_place = options.in_place;
    o.batch = options.batch;
    if (qos.is_transient_local())
      o.subscriber.history = static_cast<std::uint32_t>(std::min<std::size_t>(qos.depth(), 1U << 20));
    return std::make_shared<Subscription<T>>(name, node_.subscribe<T>(name, std::forward<F>(callback), o),
                                             NodeLink(weak_from_this()));
  }

  template <typename Rep, typename Period, typename F>
  TimerBase::SharedPtr create_wall_timer(std::chrono::duration<Rep, Period> period, F&& callback,
                                         const std::shared_ptr<CallbackGroup>& group = nullptr) {
    TimerOptions o;
    o.group = group.get();
    return std::make_shared<TimerBase>(node_.every(std::chrono::duration_cast<std::chrono::nanoseconds>(period),
                                                   std::function<void()>(std::forward<F>(callback)), o),
                                       NodeLink(weak_from_this()));
  }
  template <typename Rep, typename Period, typename F>
  TimerBase::SharedPtr create_timer(std::chrono::duration<Rep, Period> period, F&& callback,
                                    const std::shared_ptr<CallbackGroup>& group = nullptr) {
    return create_wall_timer(period, std::forward<F>(callback), group);
  }

  /// `callback(std::shared_ptr<Request>, std::shared_ptr<Response>)` as
  /// rclcpp's (the request read, the response filled), or `(const
  /// Request&, Response&)`.
  template <ServiceType S, typename F>
  typename Service<S>::SharedPtr create_service(const std::string& name, F&& callback) {
    using Req = typename S::Request;
    using Rsp = typename S::Response;
    typename Service<S>::Handler handler;
    if constexpr (std::is_invocable_v<F&, const Req&, Rsp&>) {
      handler = std::forward<F>(callback);
    } else {
      static_assert(std::is_invocable_v<F&, std::shared_ptr<Req>, std::shared_ptr<Rsp>>,
                    "shmbus: a service callback takes (std::shared_ptr<Request>, std::shared_ptr<Response>) or "
                    "(const Request&, Response&)");
      handler = [f = std::forward<F>(callback)](const Req& request, Rsp& response) mutable {
        auto rsp = std::make_shared<Rsp>();
        f(std::make_shared<Req>(request), rsp);
        response = std::move(*rsp);
      };
    }
    return std::make_shared<Service<S>>(node_, get_resolved_name(name), std::move(handler));
  }

  template <ServiceType S>
  typename Client<S>::SharedPtr create_client(const std::string& name) {
    return std::make_shared<Client<S>>(get_resolved_name(name), node_.context(), name_);
  }

  std::shared_ptr<CallbackGroup> create_callback_group(CallbackGroupType type) {
    CallbackGroup& g = node_.create_callback_group(
        type == CallbackGroupType::Reentrant ? CallbackGroupKind::kReentrant : CallbackGroupKind::kMutuallyExclusive);
    return {shared_from_this(), &g};  // owned by the node
  }

  // ---- Parameters: declared, read and set in this process.

  /// Declares `name` with the value an override gives (the command line's
  /// `-p`, NodeOptions::parameter_overrides) or else `default_value`.
  /// Throws Error(kInvalidArgument) when it is declared already.
  const ParameterValue& declare_parameter(const std::string& name, const ParameterValue& default_value);
  template <typename T>
  T declare_parameter(const std::string& name, const T& default_value) {
    return declare_parameter(name, ParameterValue(default_value)).template get<T>();
  }
  /// Declared without a default: an override must give it (else
  /// Error(kNotFound) naming it), of type T (else Error(kTypeMismatch)).
  template <typename T>
  T declare_parameter(const std::string& name) {
    return declare_parameter_overridden(name).template get<T>();
  }
  [[nodiscard]] bool has_parameter(const std::string& name) const;
  void undeclare_parameter(const std::string& name);
  /// Throws Error(kNotFound) for a parameter not declared (unless
  /// allow_undeclared_parameters: then one not set).
  [[nodiscard]] Parameter get_parameter(const std::string& name) const;
  /// False (and `value` untouched) when not declared.
  template <typename T>
  bool get_parameter(const std::string& name, T& value) const {
    if (!has_parameter(name)) return false;
    value = get_parameter(name).template get_value<T>();
    return true;
  }
  [[nodiscard]] std::vector<Parameter> get_parameters(const std::vector<std::string>& names) const;
  /// Sets one: refused (successful false, with the reason) when not
  /// declared, of another type than declared, or refused by a callback.
  SetParametersResult set_parameter(const Parameter& parameter);
  std::vector<SetParametersResult> set_parameters(const std::vector<Parameter>& parameters);
  /// All of `parameters`, or none (the first refusal's reason).
  SetParametersResult set_parameters_atomically(const std::vector<Parameter>& parameters);

  using OnSetParametersCallback = std::function<SetParametersResult(const std::vector<Parameter>&)>;
  /// Asked before a set takes effect; the handle keeps it registered.
  [[nodiscard]] std::shared_ptr<OnSetParametersCallback> add_on_set_parameters_callback(
      OnSetParametersCallback callback);

  /// The shmbus node under this one (spin, counters, loans).
  [[nodiscard]] shmbus::Node& shmbus_node() noexcept { return node_; }

 private:
  struct ParameterServer;
  const ParameterValue& declare_parameter_overridden(const std::string& name);
  /// Publishes on /parameter_events that `changed` (a new, changed or
  /// deleted parameter: `kind` 0, 1, 2) happened.
  void parameter_event(const Parameter& changed, int kind);
  void start_parameter_server(const NodeOptions& options);

  // Set while node_ is made (its name is the resolved one): before it.
  std::string name_;
  std::string namespace_;
  std::vector<RemapRule> remaps_;
  std::map<std::string, ParameterValue> overrides_;  ///< the command line's, then NodeOptions'
  Logger logger_;
  Clock::SharedPtr clock_;
  shmbus::Node node_;
  mutable std::mutex parameters_mutex_;
  std::map<std::string, ParameterValue> parameters_;
  bool allow_undeclared_ = false;
  std::vector<std::weak_ptr<OnSetParametersCallback>> on_set_;
  std::unique_ptr<ParameterServer> parameter_server_;  ///< last: its handlers use the rest
};

// ---- Spinning.

/// Runs `node`'s callbacks until shutdown(), SIGINT or SIGTERM.
void spin(const std::shared_ptr<Node>& node);
/// Runs what is ready now.
void spin_some(const std::shared_ptr<Node>& node);

/// Spins `node` until `future` is ready, `timeout` passes (negative: none),
/// or shutdown.
template <typename FutureT, typename Rep = std::int64_t, typename Period = std::milli>
FutureReturnCode spin_until_future_complete(
    const std::shared_ptr<Node>& node, const FutureT& future,
    std::chrono::duration<Rep, Period> timeout = std::chrono::duration<Rep, Period>(-1)) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout);
  while (ok()) {
    if (future.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return FutureReturnCode::SUCCESS;
    std::chrono::nanoseconds step = std::chrono::milliseconds(10);
    if (timeout.count() >= 0) {
      const auto left = end - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) return FutureReturnCode::TIMEOUT;
      step = std::min<std::chrono::nanoseconds>(step, left);
    }
    node->shmbus_node().spin_once(step);
  }
  return FutureReturnCode::INTERRUPTED;
}

namespace executors {

/// Runs the callbacks of the nodes added, on `threads` threads
/// (shmbus::Executor).
class MultiThreadedExecutor {
 public:
  explicit MultiThreadedExecutor(std::size_t threads = 0);
  void add_node(const std::shared_ptr<Node>& node);
  /// Until shutdown(), SIGINT, SIGTERM or cancel().
  void spin();
  void spin_some();
  void cancel() noexcept { executor_.stop(); }

 private:
  shmbus::Executor executor_;
  std::vector<std::shared_ptr<Node>> nodes_;
};

class SingleThreadedExecutor : public MultiThreadedExecutor {
 public:
  SingleThreadedExecutor() : MultiThreadedExecutor(1) {}
};

}  // namespace executors

}  // namespace shmbus::rclcpp
