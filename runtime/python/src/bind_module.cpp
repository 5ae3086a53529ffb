// shmbus._shmbus: the extension module under the Python package `shmbus`.
// This file: errors, MessageInfo, Publisher (with loans) and Subscriber
// (copies, and views of a message where it lies in shared memory).
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "binding.hpp"
#include "shmbus/error.hpp"
#include "shmbus/publisher.hpp"
#include "shmbus/subscriber.hpp"

namespace shmbus::python {

std::chrono::nanoseconds seconds_to_ns(double seconds) {
  constexpr double kDay = 86400.0;
  if (!(seconds > 0)) return std::chrono::nanoseconds(0);  // also NaN
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(seconds, kDay) * 1e9));
}

py::bytes copy_bytes(std::span<const std::byte> payload) {
  return {reinterpret_cast<const char*>(payload.data()), payload.size()};
}

namespace {

const char* code_name(Errc c) {
  switch (c) {
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kConfig:
      return "config";
    case Errc::kNotFound:
      return "not_found";
    case Errc::kTypeMismatch:
      return "type_mismatch";
    case Errc::kLayoutMismatch:
      return "layout_mismatch";
    case Errc::kResource:
      return "resource";
    case Errc::kPermission:
      return "permission";
  }
  return "resource";
}

/// Raises the Python exception of shmbus.errors for `code`, carrying the
/// C++ message and the exit code the programs use for it.
void raise_error(const char* code, int exit_code, const char* message) {
  const py::object make = py::module_::import("shmbus.errors").attr("_make");
  const py::object error = make(code, exit_code, message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

}  // namespace

[[noreturn]] void raise_python(const char* error_class, const std::string& message) {
  const py::object cls = py::module_::import("shmbus.errors").attr(error_class);
  PyErr_SetObject(cls.ptr(), cls(message).ptr());
  throw py::error_already_set();
}

namespace {

/// Messages bigger than this are copied into the ring without the GIL.
constexpr std::size_t kReleaseGilAbove = std::size_t{64} * 1024;

/// A contiguous buffer of any Python object that exports one.
struct Bytes {
  py::buffer_info info;
  [[nodiscard]] std::span<const std::byte> span() const {
    return {static_cast<const std::byte*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize)};
  }
};

Bytes contiguous(const py::buffer& b) {
  py::buffer_info info = b.request();
  std::int64_t expected = info.itemsize;
  for (auto i = static_cast<std::ptrdiff_t>(info.ndim) - 1; i >= 0; --i) {
    if (info.strides[static_cast<std::size_t>(i)] != expected) {
      throw Error(Errc::kInvalidArgument,
                  "publish: the buffer is not contiguous; pass numpy.ascontiguousarray(a) or bytes(a)");
    }
    expected *= info.shape[static_cast<std::size_t>(i)];
  }
  return Bytes{std::move(info)};
}

/// Publish's result as Python sees it: True when committed, False when
/// dropped (counted); a message too large is an error.
bool publish_result(PublishResult r, const Publisher& p, std::size_t size) {
  switch (r) {
    case PublishResult::kOk:
      return true;
    case PublishResult::kTooLarge:
      throw Error(Errc::kInvalidArgument, p.too_large(size));
    case PublishResult::kDropped:
      return false;
  }
  return false;
}

/// Ctrl-C for a publish or loan waiting for room (overflow = block): the
/// wait runs without the GIL, which this takes to run Python's signal
/// handlers; a KeyboardInterrupt they raise ends the wait.
void interruptible(Publisher& p) {
  p.set_interrupt([] {
    const py::gil_scoped_acquire locked;
    return PyErr_CheckSignals() != 0;
  });
}

/// A publisher shared with the loans it gave out (a loan keeps it alive).
class PyPublisher {
 public:
  explicit PyPublisher(std::shared_ptr<Publisher> p, std::shared_ptr<const std::atomic<bool>> node_open = nullptr)
      : p_(std::move(p)), node_open_(std::move(node_open)) {
    if (p_) interruptible(*p_);
  }

  bool publish(const py::buffer& b) {
    const Bytes bytes = contiguous(b);
    return publish_span(bytes.span());
  }

  /// A made message: its values written by the schema's encoder into this
  /// thread's buffer, then published from there (no Python object made).
  bool publish_values(const schema::Schema& schema, py::handle values) {
    return publish_span(encode_python(schema, values));
  }

  bool publish_span(std::span<const std::byte> s) {
    Publisher& p = get();
    PublishResult r;
    // A publish that may wait for room (overflow = block) waits without the
    // GIL, and Ctrl-C ends the wait (interruptible()).
    if (s.size() > kReleaseGilAbove || p.may_wait()) {
      const py::gil_scoped_release unlocked;
      r = p.publish(s);
    } else {
      r = p.publish(s);
    }
    if (PyErr_Occurred() != nullptr) throw py::error_already_set();  // interrupted: nothing was published
    return publish_result(r, p, s.size());
  }

  Publisher& get() const {
    if (!p_) throw Error(Errc::kInvalidArgument, "the publisher is closed");
    if (node_open_ && !node_open_->load()) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("the publisher of {} belongs to a closed node; make a new node", p_->channel()));
    }
    return *p_;
  }
  [[nodiscard]] const std::shared_ptr<Publisher>& shared() const { return p_; }
  void close() { p_.reset(); }

 private:
  std::shared_ptr<Publisher> p_;
  std::shared_ptr<const std::atomic<bool>> node_open_;
};

/// A slot lent by a publisher: writable memory in the ring, committed
/// (published) or discarded once.
class PyLoan {
 public:
  PyLoan(std::shared_ptr<Publisher> p, std::size_t size) : p_(std::move(p)) {
    if (p_->may_wait()) {
      const py::gil_scoped_release unlocked;
      loan_ = p_->loan(size);
    } else {
      loan_ = p_->loan(size);
    }
    if (PyErr_Occurred() != nullptr) throw py::error_already_set();  // interrupted while it waited for room
    if (!loan_) {
      if (size > p_->max_message_size()) {
        throw Error(Errc::kInvalidArgument, p_->too_large(size));  // over the ceiling, or refused growing
      }
      throw Error(Errc::kResource, fmt::format("channel {}: no slot to lend (a stuck writer holds it)", p_->channel()));
    }
  }

  py::buffer_info buffer() {
    if (!loan_) throw Error(Errc::kInvalidArgument, "the loan was committed or discarded; take a new one");
    return py::buffer_info(loan_.data().data(), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                           {static_cast<py::ssize_t>(loan_.size())}, {1}, false);
  }

  bool commit(std::optional<std::size_t> size) {
    if (!loan_) throw Error(Errc::kInvalidArgument, "the loan was committed or discarded already");
    const std::size_t n = size.value_or(loan_.size());
    if (n > loan_.size()) {
      throw Error(Errc::kInvalidArgument, fmt::format("commit of {} bytes: the loan has {}", n, loan_.size()));
    }
    return publish_result(p_->commit(loan_, n), *p_, n);
  }

  void discard() { loan_ = Loan{}; }
  [[nodiscard]] bool active() const { return loan_.valid(); }
  [[nodiscard]] std::size_t size() const { return loan_.size(); }

 private:
  std::shared_ptr<Publisher> p_;
  Loan loan_;
};

/// A subscriber shared with the views it gave out: a view keeps the
/// channel mapped, so a view's memory is never unmapped under NumPy.
class PySubscriber {
 public:
  explicit PySubscriber(std::shared_ptr<Subscriber> s) : s_(std::move(s)) {}

  Subscriber& get() const {
    if (!s_) throw Error(Errc::kInvalidArgument, "the subscriber is closed; make a new one");
    return *s_;
  }
  [[nodiscard]] const std::shared_ptr<Subscriber>& shared() const {
    (void)get();
    return s_;
  }
  void close() { s_.reset(); }

  /// The next message copied out, with its info; None when there is none.
  py::object take() {
    Subscriber& s = get();
    struct Out {
      PyObject* bytes = nullptr;
      MessageInfo info;
    } out;
    // A reader that may be called again (a message overwritten during the
    // copy is retried with the next): the last call's bytes count.
    const TakeResult r = s.read([&out](std::span<const std::byte> payload, const MessageInfo& info) {
      Py_XDECREF(out.bytes);
      out.bytes = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(payload.data()),
                                            static_cast<Py_ssize_t>(payload.size()));
      out.info = info;
    });
    if (!r.ok()) {
      Py_XDECREF(out.bytes);
      return py::none();
    }
    if (out.bytes == nullptr) throw py::error_already_set();
    return py::make_tuple(py::reinterpret_steal<py::bytes>(out.bytes), r.info);
  }

  bool wait(double timeout_s) {
    Subscriber& s = get();
    const py::gil_scoped_release unlocked;
    return s.wait(seconds_to_ns(timeout_s));
  }

 private:
  std::shared_ptr<Subscriber> s_;
};

/// A message where it lies in the ring: read-only memory, and the check
/// that tells whether a publisher has overwritten it since it was taken.
class PyView {
 public:
  PyView(std::shared_ptr<Subscriber> s, const std::byte* data, std::size_t size, std::optional<RingCheck> check)
      : s_(std::move(s)), data_(data), size_(size), check_(check) {}

  py::buffer_info buffer() const {
    return py::buffer_info(const_cast<std::byte*>(data_), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                           {static_cast<py::ssize_t>(size_)}, {1}, true);
  }
  /// False once a publisher has written into the message's slot.
  [[nodiscard]] bool unchanged() const { return check_ && check_->unchanged(); }
  [[nodiscard]] std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(data_); }

 private:
  std::shared_ptr<Subscriber> s_;
  const std::byte* data_;
  std::size_t size_;
  std::optional<RingCheck> check_;
};

/// The next message as a view: (PyView, info), or None when there is none.
/// A message overwritten between its take and the view's check is an
/// OverwrittenError naming the sequence (it is counted lost, not hidden).
py::object read_view(const PySubscriber& ps) {
  const std::shared_ptr<Subscriber>& s = ps.shared();
  if (s->transport() == Transport::kIceoryx) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("channel {} uses transport iceoryx, whose messages leave the ring once taken: use "
                            "read(view=False) (a copy) on it",
                            s->channel()));
  }
  MessageInfo info;
  const TakeResult r = s->read([&info](std::span<const std::byte>, const MessageInfo& i) { info = i; });
  if (!r.ok()) return py::none();
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::optional<RingCheck> check;
  const bool found = s->reread(r.info.sequence, [&](std::span<const std::byte> payload, const RingCheck& c) {
    data = payload.data();
    size = payload.size();
    check = c;
  });
  if (!found) {
    s->count_discarded();
    raise_python("OverwrittenError",
                 fmt::format("channel {}: message {} was overwritten by a publisher before its view was made (the "
                             "ring lapped this subscriber); counted as discarded",
                             s->channel(), r.info.sequence));
  }
  return py::make_tuple(PyView(s, data, size, check), r.info);
}

}  // namespace

py::object wrap_publisher(std::shared_ptr<Publisher> p, std::shared_ptr<const std::atomic<bool>> node_open) {
  return py::cast(PyPublisher(std::move(p), std::move(node_open)));
}

namespace {

void register_info(py::module_& m) {
  py::class_<Provenance>(m, "Input",
                         "A message that a message was made from: its channel (registry index) and sequence.")
      .def_readonly("channel_index", &Provenance::channel_index)
      .def_readonly("sequence", &Provenance::sequence)
      .def("__repr__", [](const Provenance& p) {
        return fmt::format("Input(channel_index={}, sequence={})", p.channel_index, p.sequence);
      });

  py::class_<MessageInfo>(m, "MessageInfo", "What the transport says about a message it delivered.")
      .def_readonly("sequence", &MessageInfo::sequence, "channel-wide sequence number, from 0")
      .def_readonly("publish_time_ns", &MessageInfo::publish_time_ns, "CLOCK_MONOTONIC at publish")
      .def_readonly("publish_wall_ns", &MessageInfo::publish_wall_ns, "CLOCK_REALTIME at publish")
      .def_readonly("size", &MessageInfo::size, "payload bytes")
      .def_readonly("publisher_id", &MessageInfo::publisher_id)
      .def_readonly("lost_before", &MessageInfo::lost_before, "messages lost since the previous take")
      .def_readonly("processing_ns", &MessageInfo::processing_ns)
      .def_property_readonly(
          "inputs", [](const MessageInfo& i) { return std::vector<Provenance>(i.inputs().begin(), i.inputs().end()); },
          "the messages this one was made from (provenance)")
      .def("__repr__", [](const MessageInfo& i) {
        return fmt::format("MessageInfo(sequence={}, publish_time_ns={}, size={}, lost_before={}, inputs={})",
                           i.sequence, i.publish_time_ns, i.size, i.lost_before, i.input_count);
      });
}

void register_publisher(py::module_& m) {
  py::class_<PyPublisher>(m, "_Publisher")
      .def(py::init([](const std::string& channel, const TypeTuple& type, const std::string& node, bool create,
                       std::uint32_t max_message_size, std::uint32_t capacity, std::uint32_t depth) {
             PublisherOptions o = sized_options(max_message_size, capacity, depth);
             o.node = node;
             o.create = create;
             return PyPublisher(std::make_shared<Publisher>(channel, type_of(type), Context::process_default(), o));
           }),
           py::arg("channel"), py::arg("type"), py::arg("node") = "", py::arg("create") = true,
           py::arg("max_message_size") = 0, py::arg("capacity") = 0, py::arg("depth") = 0)
      .def("publish", &PyPublisher::publish)
      .def("publish_values", &PyPublisher::publish_values, py::arg("schema"), py::arg("values"))
      .def("loan",
           [](const PyPublisher& p, std::size_t size) {
             (void)p.get();
             return PyLoan(p.shared(), size);
           })
      .def("close", &PyPublisher::close)
      .def_property_readonly("channel", [](const PyPublisher& p) { return p.get().channel(); })
      .def_property_readonly("max_message_size", [](const PyPublisher& p) { return p.get().max_message_size(); })
      .def_property_readonly("channel_index", [](const PyPublisher& p) { return p.get().channel_index(); })
      .def_property_readonly("published", [](const PyPublisher& p) { return p.get().published(); })
      .def_property_readonly("dropped", [](const PyPublisher& p) { return p.get().dropped(); });

  py::class_<PyLoan>(m, "_Loan", py::buffer_protocol())
      .def_buffer(&PyLoan::buffer)
      .def("commit", &PyLoan::commit, py::arg("size") = py::none())
      .def("discard", &PyLoan::discard)
      .def_property_readonly("active", &PyLoan::active)
      .def_property_readonly("size", &PyLoan::size);
}

void register_subscriber(py::module_& m) {
  py::class_<PySubscriber>(m, "_Subscriber")
      .def(py::init([](const std::string& channel, const std::optional<TypeTuple>& type, bool wait_for_channel,
                       std::uint32_t history, bool from_first, const std::string& node) {
             SubscriberOptions o;
             o.wait_for_channel = wait_for_channel;
             o.history = history;
             o.from_first = from_first;
             o.node = node;
             std::optional<TypeInfo> t;
             if (type) t = type_of(*type);
             return PySubscriber(std::make_shared<Subscriber>(channel, t, Context::process_default(), o));
           }),
           py::arg("channel"), py::arg("type"), py::arg("wait_for_channel") = false, py::arg("history") = 0,
           py::arg("from_first") = false, py::arg("node") = "")
      .def("take", &PySubscriber::take)
      .def("read_view", &read_view)
      .def("wait", &PySubscriber::wait)
      .def("close", &PySubscriber::close)
      .def("attached", [](const PySubscriber& s) { return s.get().attached() || s.get().attach(); })
      .def("type", [](const PySubscriber& s) { return tuple_of(s.get().type()); })
      .def_property_readonly("channel", [](const PySubscriber& s) { return s.get().channel(); })
      .def_property_readonly("received", [](const PySubscriber& s) { return s.get().received(); })
      .def_property_readonly("lost", [](const PySubscriber& s) { return s.get().lost(); })
      .def_property_readonly("discarded", [](const PySubscriber& s) { return s.get().discarded(); })
      .def_property_readonly("max_message_size", [](const PySubscriber& s) { return s.get().max_message_size(); })
      .def_property_readonly("channel_index", [](const PySubscriber& s) { return s.get().channel_index(); })
      .def_property_readonly("transport",
                             [](const PySubscriber& s) { return std::string(to_string(s.get().transport())); });

  py::class_<PyView>(m, "_View", py::buffer_protocol())
      .def_buffer(&PyView::buffer)
      .def("unchanged", &PyView::unchanged)
      .def_property_readonly("address", &PyView::address);
}

}  // namespace

void register_pubsub(py::module_& m) {
  register_info(m);
  register_publisher(m);
  register_subscriber(m);
}

}  // namespace shmbus::python

PYBIND11_MODULE(_shmbus, m) {
  namespace py = pybind11;
  using namespace shmbus::python;  // NOLINT(google-build-using-namespace)
  m.doc() = "The C++ core of the shmbus Python package; use the package `shmbus`, not this module.";
  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11's translator signature
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const shmbus::Error& e) {
      raise_error(code_name(e.code()), e.exit_code(), e.what());
    }
  });
  register_pubsub(m);
  register_messages(m);
  register_node(m);
  register_recording(m);
}
