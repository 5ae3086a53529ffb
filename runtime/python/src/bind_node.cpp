// shmbus._shmbus, nodes: a Node whose callbacks are Python callables (run
// by the C++ executor, the GIL taken only while Python runs), its timers,
// and services (a server on a node, a client).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "binding.hpp"
#include "shmbus/action.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/node.hpp"
#include "shmbus/service.hpp"

namespace shmbus::python {

namespace {

/// Memory a callback may read only while it runs (an in-place delivery):
/// it keeps the node, so the channel stays mapped under NumPy.
class Transient {
 public:
  Transient(std::shared_ptr<Node> node, std::span<const std::byte> payload)
      : node_(std::move(node)), payload_(payload) {}
  [[nodiscard]] py::buffer_info buffer() const {
    return py::buffer_info(const_cast<std::byte*>(payload_.data()), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                           {static_cast<py::ssize_t>(payload_.size())}, {1}, true);
  }
  [[nodiscard]] std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(payload_.data()); }

 private:
  std::shared_ptr<Node> node_;
  std::span<const std::byte> payload_;
};

/// A Python callable shared with C++ callbacks: its last reference may drop
/// on a thread without the GIL, so its deleter takes it.
std::shared_ptr<py::function> shared_callable(py::function f) {
  return {new py::function(std::move(f)), [](py::function* p) {
            const py::gil_scoped_acquire gil;
            delete p;
          }};
}

class PyNode;

/// A subscription or timer of a node, as Python holds it: usable while its
/// node is open (Node.close() ends them, though a publisher of the node
/// may keep the C++ node alive).
template <typename T>
struct Handle {
  std::weak_ptr<Node> node;
  T* item;
  std::shared_ptr<const std::atomic<bool>> open;
  T& get() const {
    if (node.expired() || !open->load()) {
      throw Error(Errc::kInvalidArgument, "its node is closed; make a new node");
    }
    return *item;
  }
};
using PySubscription = Handle<Subscription>;
using PyTimer = Handle<Timer>;

class PyNode {
 public:
  explicit PyNode(const std::string& name) {
    NodeOptions o;
    o.handle_signals = false;  // Python's own SIGINT handler raises KeyboardInterrupt in spin()
    node_ = std::make_shared<Node>(name, Context::process_default(), o);
  }
  ~PyNode() { close(); }

  /// Stops the node, drops its Python callbacks (a callback that refers to
  /// its node would otherwise keep both alive) and releases the node: its
  /// subscriptions leave their channels once no publisher of the node is
  /// held. Called with the GIL.
  void close() {
    if (!node_) return;
    open_->store(false);
    node_->stop();
    for (const auto& f : callables_) *f = py::function();
    callables_.clear();
    node_.reset();
  }
  PyNode(const PyNode&) = delete;
  PyNode& operator=(const PyNode&) = delete;
  [[nodiscard]] bool is_open() const { return node_ != nullptr; }

  PySubscription subscribe(const std::string& channel, const std::optional<TypeTuple>& type, py::function callback,
                           bool in_place, std::uint32_t history, bool wait_for_channel,
                           std::optional<py::function> on_overwritten) {
    SubscriptionOptions o;
    o.in_place = in_place;
    o.subscriber.history = history;
    o.subscriber.wait_for_channel = wait_for_channel;
    Node& node = live();
    o.subscriber.node = node.name();
    if (on_overwritten) {
      o.on_overwritten = [this, f = guarded(std::move(*on_overwritten))](const MessageInfo& info) {
        const py::gil_scoped_acquire gil;
        run([&] {
          if (*f) (*f)(info);
        });
      };
    }
    std::optional<TypeInfo> t;
    if (type) t = type_of(*type);
    auto f = guarded(std::move(callback));
    Node::RawCallback cb;
    if (in_place) {
      cb = [this, f](std::span<const std::byte> payload, const MessageInfo& info) {
        const py::gil_scoped_acquire gil;
        run([&] {
          if (*f) (*f)(Transient(node_, payload), info);
        });
      };
    } else {
      cb = [this, f](std::span<const std::byte> payload, const MessageInfo& info) {
        const py::gil_scoped_acquire gil;
        run([&] {
          if (*f) (*f)(copy_bytes(payload), info);
        });
      };
    }
    return {node_, &node.subscribe_raw(channel, t, std::move(cb), o), open_};
  }

  PyTimer timer(double period_s, py::function callback, bool periodic) {
    if (!(period_s > 0)) {
      throw Error(Errc::kInvalidArgument, fmt::format("a timer's period must be above 0 s, not {}", period_s));
    }
    Node& node = live();
    auto f = guarded(std::move(callback));
    std::function<void()> cb = [this, f] {
      const py::gil_scoped_acquire gil;
      run([&] {
        if (*f) (*f)();
      });
    };
    Timer& t = periodic ? node.every(seconds_to_ns(period_s), std::move(cb))
                        : node.after(seconds_to_ns(period_s), std::move(cb));
    return {node_, &t, open_};
  }

  py::object publisher(const std::string& channel, const TypeTuple& type, std::uint32_t max_message_size,
                       std::uint32_t capacity, std::uint32_t depth) {
    NodePublisher<Publisher>& p =
        live().publisher(channel, type_of(type), sized_options(max_message_size, capacity, depth));
    return wrap_publisher(std::shared_ptr<Publisher>(node_, &*p), open_);  // shares the node's ownership
  }

  /// Runs the node until stop(), a callback's exception (re-raised here)
  /// or a signal's Python exception (Ctrl-C: KeyboardInterrupt). The
  /// executor waits without the GIL; Python signal handlers run between
  /// waits of at most 20 ms (as every blocking call's slices in
  /// shmbus/__init__.py).
  void spin() {
    const std::shared_ptr<Node> node = node_;  // close() from a callback ends the loop, not the node
    if (!node) throw Error(Errc::kInvalidArgument, "the node is closed; make a new one");
    while (node->ok()) {
      {
        const py::gil_scoped_release unlocked;
        node->spin_once(std::chrono::milliseconds(20));
      }
      after_work();
    }
    after_work();
  }

  std::size_t spin_once(double timeout_s) {
    const std::shared_ptr<Node> node = node_;
    if (!node) throw Error(Errc::kInvalidArgument, "the node is closed; make a new one");
    std::size_t n = 0;
    {
      const py::gil_scoped_release unlocked;
      n = node->spin_once(seconds_to_ns(timeout_s));
    }
    after_work();
    return n;
  }

  void stop() {
    if (node_) node_->stop();
  }
  [[nodiscard]] bool ok() const { return node_ && node_->ok(); }
  [[nodiscard]] Node& node() const { return live(); }
  /// The node, shared: what outlives Python's order of destruction (an
  /// action server or client holds its node while it lives).
  [[nodiscard]] std::shared_ptr<Node> shared_node() const {
    live();
    return node_;
  }

  Node& live() const {
    if (!node_) throw Error(Errc::kInvalidArgument, "the node is closed; make a new one");
    return *node_;
  }

  /// Runs Python code from a callback: its exception is kept (the first
  /// one), the node stopped, and spin() raises it.
  template <typename F>
  void run(F&& f) {
    if (error_ || !node_) return;
    try {
      f();
    } catch (py::error_already_set& e) {
      error_.emplace(std::move(e));
      if (node_) node_->stop();
    }
  }

 private:
  /// A callable whose last reference may drop on a thread without the GIL;
  /// close() empties it.
  std::shared_ptr<py::function> guarded(py::function f) {
    callables_.push_back(shared_callable(std::move(f)));
    return callables_.back();
  }

  void after_work() {
    if (error_) {
      py::error_already_set e = std::move(*error_);
      error_.reset();
      throw std::move(e);
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }

  std::shared_ptr<Node> node_;
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(true);
  std::vector<std::shared_ptr<py::function>> callables_;
  std::optional<py::error_already_set> error_;
};

[[noreturn]] void call_failed(const ServiceClient& c, const CallResult& r, double timeout_s, std::size_t request_size) {
  const std::string& name = c.name();
  switch (r.status) {
    case CallStatus::kNoServer:
      throw Error(Errc::kNotFound, fmt::format("no server for service {} within {:g} s; start one (`shmtool service "
                                               "list` shows the services)",
                                               name, timeout_s));
    case CallStatus::kTimeout:
      raise_python("ServiceTimeout", fmt::format("service {} did not answer within {:g} s; raise the timeout or "
                                                 "look at the server",
                                                 name, timeout_s));
    case CallStatus::kServerError:
      raise_python("ServiceFailed", fmt::format("service {}: the server's handler failed on this request", name));
    case CallStatus::kTooLarge:
      throw Error(Errc::kInvalidArgument, fmt::format("service {}: {}", name, c.request_too_large(request_size)));
    default:
      throw Error(Errc::kResource, fmt::format("service {}: the call failed: {}", name, to_string(r.status)));
  }
}

}  // namespace

namespace {

void register_handles(py::module_& m) {
  py::class_<Transient>(m, "_Transient", py::buffer_protocol())
      .def_buffer(&Transient::buffer)
      .def_property_readonly("address", &Transient::address);

  py::class_<PySubscription>(m, "_Subscription", "A node's subscription (shmbus.Subscription wraps it).")
      .def_property_readonly("channel", [](const PySubscription& s) { return s.get().channel(); })
      .def_property_readonly("calls", [](const PySubscription& s) { return s.get().calls(); })
      .def_property_readonly("errors", [](const PySubscription& s) { return s.get().errors(); })
      .def_property_readonly(
          "overwritten", [](const PySubscription& s) { return s.get().overwritten(); },
          "in-place deliveries whose message a publisher overwrote while the callback read it")
      .def_property_readonly("lost", [](const PySubscription& s) { return s.get().subscriber().lost(); })
      .def("type", [](const PySubscription& s) { return tuple_of(s.get().subscriber().type()); })
      .def(
          "cancel", [](const PySubscription& s) { s.get().cancel(); }, "No more calls (the subscriber stays open).");

  py::class_<PyTimer>(m, "Timer", "A node's timer.")
      .def("cancel", [](const PyTimer& t) { t.get().cancel(); })
      .def_property_readonly("cancelled", [](const PyTimer& t) { return t.get().cancelled(); })
      .def_property_readonly("runs", [](const PyTimer& t) { return t.get().runs(); })
      .def_property_readonly(
          "missed", [](const PyTimer& t) { return t.get().missed(); }, "periods skipped because a run was late")
      .def("__repr__", [](const PyTimer& t) {
        try {
          const Timer& timer = t.get();
          return fmt::format("<shmbus.Timer period={:g}s runs={} missed={}{}>",
                             std::chrono::duration<double>(timer.period()).count(), timer.runs(), timer.missed(),
                             timer.cancelled() ? " (cancelled)" : "");
        } catch (const Error&) {
          return std::string{"<shmbus.Timer (closed)>"};
        }
      });
}

void register_node_class(py::module_& m) {
  py::class_<PyNode>(m, "_Node")
      .def(py::init<const std::string&>(), py::arg("name"))
      .def("subscribe", &PyNode::subscribe, py::arg("channel"), py::arg("type"), py::arg("callback"),
           py::arg("in_place") = false, py::arg("history") = 0, py::arg("wait_for_channel") = false,
           py::arg("on_overwritten") = py::none())
      .def("timer", &PyNode::timer, py::arg("period"), py::arg("callback"), py::arg("periodic"))
      .def("publisher", &PyNode::publisher, py::arg("channel"), py::arg("type"), py::arg("max_message_size") = 0,
           py::arg("capacity") = 0, py::arg("depth") = 0)
      .def("spin", &PyNode::spin)
      .def("spin_once", &PyNode::spin_once, py::arg("timeout"))
      .def("stop", &PyNode::stop)
      .def("close", &PyNode::close)
      .def("ok", &PyNode::ok)
      .def("is_open", [](const PyNode& n) { return n.is_open(); })
      .def_property_readonly("name", [](const PyNode& n) { return n.node().name(); })
      .def_property_readonly("calls", [](const PyNode& n) { return n.node().calls(); });
}

void register_services(py::module_& m) {
  py::class_<ServiceServer, std::shared_ptr<ServiceServer>>(m, "_ServiceServer")
      .def(py::init([](PyNode& node, const std::string& name, const std::string& service_type, const TypeTuple& request,
                       const TypeTuple& response, py::function handler) {
             auto f = shared_callable(std::move(handler));
             ServiceServer::Handler h = [f](std::span<const std::byte> req, const MessageInfo& info,
                                            std::span<std::byte> rsp) -> std::size_t {
               const py::gil_scoped_acquire gil;
               try {
                 const py::object out = (*f)(copy_bytes(req), info);
                 const py::buffer_info b = py::buffer(out).request();
                 const auto n = static_cast<std::size_t>(b.size * b.itemsize);
                 if (n > rsp.size()) {
                   throw Error(Errc::kInvalidArgument,
                               fmt::format("a response of {} bytes is larger than the response channel's "
                                           "max_message_size ({})",
                                           n, rsp.size()));
                 }
                 std::memcpy(rsp.data(), b.ptr, n);
                 return n;
               } catch (py::error_already_set& e) {
                 // The client is told kServerError; the traceback goes to
                 // stderr, as the C++ node logs a handler's exception.
                 e.discard_as_unraisable("shmbus service handler");
                 throw Error(Errc::kInvalidArgument, "the Python handler raised");
               }
             };
             return std::make_shared<ServiceServer>(
                 node.node(), name, ServiceTypes{service_type, type_of(request), type_of(response)}, std::move(h));
           }),
           py::keep_alive<1, 2>())
      .def_property_readonly("name", &ServiceServer::name)
      .def_property_readonly("served", &ServiceServer::served)
      .def_property_readonly("failed", &ServiceServer::failed);

  py::class_<ServiceClient>(m, "_ServiceClient")
      .def(py::init([](const std::string& name, const std::string& service_type, const TypeTuple& request,
                       const TypeTuple& response) {
        return ServiceClient(name, ServiceTypes{service_type, type_of(request), type_of(response)});
      }))
      .def("call",
           [](ServiceClient& c, const py::buffer& request, double timeout_s) {
             const py::buffer_info b = request.request();
             std::vector<std::byte> response(c.max_response_size());
             CallResult r;
             {
               const py::gil_scoped_release unlocked;
               // Python's signal handlers run while it waits: Ctrl-C ends
               // the call within 20 ms, raising KeyboardInterrupt.
               r = c.call({static_cast<const std::byte*>(b.ptr), static_cast<std::size_t>(b.size * b.itemsize)},
                          response, std::isinf(timeout_s) ? std::chrono::nanoseconds::max() : seconds_to_ns(timeout_s),
                          [] {
                            const py::gil_scoped_acquire locked;
                            return PyErr_CheckSignals() != 0;
                          });
             }
             if (r.status == CallStatus::kInterrupted) throw py::error_already_set();
             if (!r.ok()) call_failed(c, r, timeout_s, static_cast<std::size_t>(b.size * b.itemsize));
             return py::make_tuple(copy_bytes({response.data(), r.size}), r.info);
           })
      .def("wait_for_server",
           [](ServiceClient& c, double timeout_s) {
             const py::gil_scoped_release unlocked;
             return c.wait_for_server(seconds_to_ns(timeout_s));
           })
      .def_property_readonly("server_ready", &ServiceClient::server_ready)
      .def_property_readonly("name", &ServiceClient::name)
      .def_property_readonly("calls", &ServiceClient::calls)
      .def_property_readonly("timeouts", &ServiceClient::timeouts);
}

/// An action's types from the five type tuples of shmbus.action_types.
action::ActionTypes action_types_of(const std::string& action_type, const py::tuple& t) {
  const auto at = [&](std::size_t i) { return type_of(t[i].cast<TypeTuple>()); };
  return {action_type,
          {action_type + std::string{kActionSendGoalSuffix}, at(0), at(1)},
          {action_type + std::string{kActionGetResultSuffix}, at(2), at(3)},
          at(4)};
}

py::bytes id_bytes(const action::GoalId& id) { return {reinterpret_cast<const char*>(id.data()), id.size()}; }

action::GoalId goal_id_of(const py::bytes& b) {
  const std::string s = b;
  if (s.size() != sizeof(action::GoalId)) {
    throw Error(Errc::kInvalidArgument, fmt::format("a goal id is 16 bytes, not {}", s.size()));
  }
  action::GoalId id{};
  std::memcpy(id.data(), s.data(), id.size());
  return id;
}

std::vector<std::byte> bytes_of(const py::buffer& b) {
  const py::buffer_info info = b.request();
  const auto* p = static_cast<const std::byte*>(info.ptr);
  return {p, p + info.size * info.itemsize};
}

/// Runs a Python callback from a C++ thread: with the GIL; what it raises
/// goes to stderr as unraisable and becomes Error(`what`).
template <typename R, typename F>
R call_python(const char* what, F&& f) {
  const py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(what);
    throw Error(Errc::kInvalidArgument, std::string(what) + " raised");
  }
}

/// An action server or client with the node it runs on: the node lives as
/// long as it does, whatever order Python drops them in. It ends without
/// the GIL (a client's thread may be waiting for the GIL to run a callback).
template <typename T>
struct OnNode {
  std::shared_ptr<Node> node;
  std::unique_ptr<T> item;
  OnNode(std::shared_ptr<Node> n, std::unique_ptr<T> i) : node(std::move(n)), item(std::move(i)) {}
  ~OnNode() {
    try {
      const py::gil_scoped_release unlocked;
      item.reset();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor says nothing more than the item's own lines
    }
  }
  OnNode(const OnNode&) = delete;
  OnNode& operator=(const OnNode&) = delete;
  T& operator*() const { return *item; }
};
using PyActionServer = OnNode<action::Server>;
using PyActionClient = OnNode<action::Client>;

void register_action_server(py::module_& m) {
  py::class_<PyActionServer, std::shared_ptr<PyActionServer>>(m, "_ActionServer")
      .def(py::init([](PyNode& node, const std::string& name, const std::string& action_type, const py::tuple& types,
                       py::function goal, py::function cancel, py::function accepted, const py::buffer& unknown_result,
                       double result_timeout_s, std::size_t max_goals) {
             auto g = shared_callable(std::move(goal));
             auto c = shared_callable(std::move(cancel));
             auto a = shared_callable(std::move(accepted));
             action::Server::Callbacks cb;
             cb.goal = [g](const action::GoalId& id, std::span<const std::byte> request) {
               return call_python<action::GoalResponse>("the action's goal callback", [&] {
                 return static_cast<action::GoalResponse>((*g)(id_bytes(id), copy_bytes(request)).cast<int>());
               });
             };
             cb.cancel = [c](const action::GoalId& id) {
               return call_python<action::CancelResponse>("the action's cancel callback", [&] {
                 return static_cast<action::CancelResponse>((*c)(id_bytes(id)).cast<int>());
               });
             };
             cb.accepted = [a](const action::GoalId& id) {
               call_python<void>("the action's accepted callback", [&] { (*a)(id_bytes(id)); });
             };
             cb.unknown_result = bytes_of(unknown_result);
             action::ServerOptions o;
             o.result_timeout = seconds_to_ns(result_timeout_s);
             o.max_goals = max_goals;
             return std::make_shared<PyActionServer>(
                 node.shared_node(), std::make_unique<action::Server>(
                                         node.node(), name, action_types_of(action_type, types), std::move(cb), o));
           }),
           py::keep_alive<1, 2>())
      .def("execute", [](PyActionServer& s, const py::bytes& id) { return (*s).execute(goal_id_of(id)); })
      .def("publish_feedback",
           [](PyActionServer& s, const py::bytes& id, const py::buffer& message) {
             return (*s).publish_feedback(goal_id_of(id), bytes_of(message));
           })
      .def("finish",
           [](PyActionServer& s, const py::bytes& id, int status, const py::buffer& result) {
             return (*s).finish(goal_id_of(id), static_cast<action::GoalStatus>(status), bytes_of(result));
           })
      .def("status",
           [](const PyActionServer& s, const py::bytes& id) { return static_cast<int>((*s).status(goal_id_of(id))); })
      .def_property_readonly("goals", [](const PyActionServer& s) { return (*s).goals(); })
      .def_property_readonly("counters", [](const PyActionServer& s) {
        const action::ServerCounters c = (*s).counters();
        py::dict d;
        d["goals_accepted"] = c.goals_accepted;
        d["goals_rejected"] = c.goals_rejected;
        d["goals_refused"] = c.goals_refused;
        d["results_expired"] = c.results_expired;
        d["unknown_results"] = c.unknown_results;
        d["cancels_refused"] = c.cancels_refused;
        d["goals_orphaned"] = c.goals_orphaned;
        return d;
      });
}

void register_action_client(py::module_& m) {
  py::class_<PyActionClient, std::shared_ptr<PyActionClient>>(m, "_ActionClient")
      .def(py::init([](PyNode& node, const std::string& name, const std::string& action_type, const py::tuple& types) {
             return std::make_shared<PyActionClient>(
                 node.shared_node(),
                 std::make_unique<action::Client>(node.node(), name, action_types_of(action_type, types),
                                                  action::ClientOptions{}));
           }),
           py::keep_alive<1, 2>())
      .def("send_goal",
           [](PyActionClient& c, const py::bytes& id, const py::buffer& request, py::function response,
              py::function feedback, py::function result) {
             auto r = shared_callable(std::move(response));
             auto f = shared_callable(std::move(feedback));
             auto o = shared_callable(std::move(result));
             action::Client::GoalCallbacks cb;
             cb.response = [r](bool accepted, std::int64_t stamp_ns, const std::string& error) {
               call_python<void>("the goal response callback", [&] { (*r)(accepted, stamp_ns, error); });
             };
             cb.feedback = [f](std::span<const std::byte> message) {
               call_python<void>("the feedback callback", [&] { (*f)(copy_bytes(message)); });
             };
             cb.result = [o](const action::GoalOutcome& outcome) {
               call_python<void>("the result callback", [&] {
                 (*o)(static_cast<int>(outcome.status), copy_bytes(outcome.result_response), outcome.error);
               });
             };
             (*c).send_goal(goal_id_of(id), bytes_of(request), std::move(cb));
           })
      .def("cancel_goal",
           [](PyActionClient& c, const py::bytes& id, std::int64_t stamp_ns, py::function done) {
             auto d = shared_callable(std::move(done));
             (*c).cancel_goal(goal_id_of(id), stamp_ns,
                              [d](std::span<const std::byte> response, const std::string& error) {
                                call_python<void>("the cancel callback", [&] { (*d)(copy_bytes(response), error); });
                              });
           })
      .def_property_readonly("server_ready", [](const PyActionClient& c) { return (*c).server_ready(); })
      .def("wait_for_server",
           [](PyActionClient& c, double timeout_s) {
             const py::gil_scoped_release unlocked;
             return (*c).wait_for_server(seconds_to_ns(timeout_s));
           })
      .def_property_readonly("live_goals", [](const PyActionClient& c) { return (*c).live_goals(); });
  m.def(
      "random_goal_id", [] { return id_bytes(action::random_goal_id()); }, "A random (version 4) goal id.");
}

}  // namespace

void register_node(py::module_& m) {
  register_handles(m);
  register_node_class(m);
  register_services(m);
  register_action_server(m);
  register_action_client(m);
}

}  // namespace shmbus::python
