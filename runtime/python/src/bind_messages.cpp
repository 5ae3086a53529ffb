// shmbus._shmbus, messages: a type's definition as plain Python data (the
// package builds its NumPy dtypes from it), and types resolved by name.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "binding.hpp"
#include "shmbus/action.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/schema/encoder.hpp"
#include "shmbus/schema/type_catalog.hpp"
#include "shmbus/service.hpp"
#include "shmbus/var_message.hpp"

namespace shmbus::python {

namespace {

py::dict field_dict(const schema::Field& f) {
  py::dict d;
  d["name"] = f.name;
  switch (f.kind) {
    case schema::FieldKind::kPrimitive:
      d["kind"] = "primitive";
      d["primitive"] = std::string(schema::to_string(f.primitive));
      break;
    case schema::FieldKind::kString:
      d["kind"] = "string";
      d["capacity"] = f.string_capacity;
      break;
    case schema::FieldKind::kUnboundedString:
      d["kind"] = "ustring";
      break;
    case schema::FieldKind::kMessage:
      d["kind"] = "message";
      d["message"] = f.message->name;
      break;
  }
  d["array_length"] = f.array_length;
  d["unbounded"] = f.unbounded;
  d["sequence_bound"] = f.sequence_bound;
  d["element_align"] = f.element_align;
  d["variable"] = f.element_variable();
  d["offset"] = f.offset;
  d["element_size"] = f.element_size;
  d["default"] = f.default_value.is_null() ? std::string() : f.default_value.dump();
  return d;
}

/// Every message type `root` uses, each once, as {name: definition}. The
/// walk is a work list, not recursion; the schema has bounded nesting.
py::dict describe(const std::string& canonical_text) {
  const schema::Schema s = schema::Schema::from_canonical(canonical_text);
  py::dict types;
  std::vector<const schema::MessageDef*> todo{&s.root()};
  std::set<std::string> seen{s.root().name};
  while (!todo.empty()) {
    const schema::MessageDef* m = todo.back();
    todo.pop_back();
    py::list fields;
    for (const schema::Field& f : m->fields) {
      fields.append(field_dict(f));
      if (f.kind == schema::FieldKind::kMessage && seen.insert(f.message->name).second) todo.push_back(f.message);
    }
    py::list constants;
    for (const schema::Constant& c : m->constants) {
      constants.append(py::make_tuple(c.name, c.type(), c.value));
    }
    py::dict d;
    d["size"] = m->size;
    d["align"] = m->align;
    d["fields"] = fields;
    d["constants"] = constants;
    types[py::str(m->name)] = d;
  }
  py::dict out;
  out["root"] = s.root().name;
  out["hash"] = s.hash();
  out["types"] = types;
  return out;
}

/// How the schema's Encoder reads Python values (schema/encoder.hpp): a
/// message is a dict of its fields or a message object (its `_values`);
/// a sequence a list or tuple, or (numbers) any buffer of the elements as
/// the layout holds them, copied in one block; a string a str.
struct PyValues {
  using Value = py::handle;  // borrowed from the tree the caller holds
  using Fields = py::dict;   // owning: a message object's values are made for the call

  static std::optional<Fields> fields(Value v) {
    if (PyDict_Check(v.ptr())) return py::reinterpret_borrow<py::dict>(v);
    if (PyUnicode_Check(v.ptr()) || !py::hasattr(v, "_values")) return std::nullopt;
    py::object values = v.attr("_values");
    if (!PyDict_Check(values.ptr())) return std::nullopt;
    return py::reinterpret_steal<py::dict>(values.release());
  }
  template <typename F>
  static void each_key(const Fields& d, F f) {
    for (const auto& item : d) {
      if (!PyUnicode_Check(item.first.ptr())) throw Error(Errc::kInvalidArgument, "a field's name must be a str");
      const char* key = PyUnicode_AsUTF8(item.first.ptr());
      if (key == nullptr) throw py::error_already_set();
      f(std::string_view(key));
    }
  }
  static std::optional<Value> find(const Fields& d, std::string_view name) {
    PyObject* v = PyDict_GetItemString(d.ptr(), std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return py::handle(v);
  }
  static bool array(Value v) { return PyList_Check(v.ptr()) || PyTuple_Check(v.ptr()); }
  static std::size_t size(Value v) { return static_cast<std::size_t>(PySequence_Fast_GET_SIZE(v.ptr())); }
  static Value at(Value v, std::size_t i) {
    return py::handle(PySequence_Fast_GET_ITEM(v.ptr(), static_cast<Py_ssize_t>(i)));
  }
  static std::optional<std::string_view> string(Value v) {
    if (!PyUnicode_Check(v.ptr())) return std::nullopt;
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
    if (s == nullptr) throw py::error_already_set();
    return std::string_view(s, static_cast<std::size_t>(n));
  }
  static bool numpy(Value v, std::string_view kind) {
    const std::string_view name = Py_TYPE(v.ptr())->tp_name;
    return name.starts_with("numpy.") && name.substr(6).starts_with(kind);
  }
  static std::optional<bool> boolean(Value v) {
    if (PyBool_Check(v.ptr()) || numpy(v, "bool")) return PyObject_IsTrue(v.ptr()) == 1;
    return std::nullopt;
  }
  static schema::Number number(Value v) {
    using K = schema::Number::Kind;
    if (PyBool_Check(v.ptr()) || numpy(v, "bool")) return {};
    if (PyFloat_Check(v.ptr()) || numpy(v, "float")) return {K::kFloat, 0, 0, PyFloat_AsDouble(v.ptr())};
    if (!PyIndex_Check(v.ptr())) return {};
    const py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow == 0) return {K::kSigned, s, 0, 0};
    if (overflow < 0) return {K::kTooLarge, 0, 0, 0};
    const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return {K::kTooLarge, 0, 0, 0};
    }
    return {K::kUnsigned, 0, u, 0};
  }
  /// The struct-module codes of a primitive's elements ('c' and 'B' for
  /// any byte-sized one).
  static std::string_view codes(schema::Primitive p) {
    switch (p) {
      case schema::Primitive::kBool:
        return "?Bb";
      case schema::Primitive::kInt8:
      case schema::Primitive::kUint8:
        return "Bbc";
      case schema::Primitive::kInt16:
        return "h";
      case schema::Primitive::kUint16:
        return "H";
      case schema::Primitive::kInt32:
        return "i";
      case schema::Primitive::kUint32:
        return "I";
      case schema::Primitive::kInt64:
        return "qlf";  // 'f' never matches: itemsize decides
      case schema::Primitive::kUint64:
        return "QL";
      case schema::Primitive::kFloat32:
        return "f";
      case schema::Primitive::kFloat64:
        return "d";
    }
    return "";
  }
  template <typename F>
  static bool elements(Value v, schema::Primitive p, F&& use) {
    if (PyUnicode_Check(v.ptr()) || PyList_Check(v.ptr()) || PyTuple_Check(v.ptr()) || !PyObject_CheckBuffer(v.ptr())) {
      return false;
    }
    Py_buffer view{};
    if (PyObject_GetBuffer(v.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      return false;
    }
    const std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> held(&view, PyBuffer_Release);
    std::string_view format = view.format != nullptr ? view.format : "B";
    if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@')) format.remove_prefix(1);
    const bool fits = format.size() == 1 && codes(p).find(format[0]) != std::string_view::npos &&
                      static_cast<std::uint32_t>(view.itemsize) == schema::size_of(p);
    if (!fits) return false;
    use(std::span<const std::byte>(static_cast<const std::byte*>(view.buf), static_cast<std::size_t>(view.len)));
    return true;
  }
  static std::string text(Value v) {
    std::string r = py::repr(v);
    if (r.size() > 40) r = r.substr(0, 37) + "...";
    return r;
  }
  static std::string describe(Value v) {
    std::string what = Py_TYPE(v.ptr())->tp_name;
    if (PyObject_CheckBuffer(v.ptr()) && py::hasattr(v, "dtype")) {
      what += " of " + std::string(py::str(v.attr("dtype")));
    }
    return what + " " + text(v);
  }
};

void register_schema(py::module_& m) {
  // A type's schema, parsed once (a MessageType holds one), and its
  // messages made from Python values by the schema's one Encoder.
  py::class_<schema::Schema>(m, "Schema", "A message type's parsed schema.")
      .def(py::init([](const std::string& text) { return schema::Schema::from_canonical(text); }), py::arg("text"))
      .def(
          "encode",
          [](const schema::Schema& s, py::handle values) {
            auto bytes = std::make_unique<std::vector<std::byte>>(
                schema::encode_values<PyValues>(s, values, std::numeric_limits<std::uint32_t>::max()));
            auto* data = bytes->data();
            const auto n = static_cast<py::ssize_t>(bytes->size());
            py::capsule owner(bytes.release(),
                              [](void* p) { delete static_cast<std::vector<std::byte>*>(p); });  // NOLINT
            return py::array_t<std::uint8_t>(n, reinterpret_cast<std::uint8_t*>(data), owner);
          },
          py::arg("values"),
          "A message's bytes (a writable uint8 array) from its values: a dict or message object per message, "
          "lists or buffers for sequences (numbers copied in one block), str for strings; every field given.");
}

TypeTuple tuple_of(const schema::Schema& s) { return {s.root().name, s.hash(), s.text()}; }

}  // namespace

std::span<const std::byte> encode_python(const schema::Schema& s, py::handle values) {
  // Kept between calls: a message of the same size again is written with
  // no allocation, into pages already mapped.
  thread_local std::vector<std::byte> buffer;
  // The values may run Python (a property): a publish from there would
  // write over the buffer this call is writing.
  thread_local bool writing = false;
  if (writing) throw Error(Errc::kInvalidArgument, "a message published while another one is being written");
  writing = true;
  const std::unique_ptr<bool, void (*)(bool*)> done(&writing, [](bool* w) { *w = false; });
  schema::encode_values_into<PyValues>(s, values, std::numeric_limits<std::uint32_t>::max(), buffer);
  return buffer;
}

void register_messages(py::module_& m) {
  // The layout runtime (var_message.hpp) that Python's message objects
  // follow VarRefs through: the one check and the one budget.
  m.def(
      "check_block",
      [](std::size_t message_size, std::uint32_t fixed, std::uint32_t offset, std::uint32_t count, std::uint32_t size,
         std::uint32_t align, std::uint32_t bound, std::string_view what) {
        msg::check(VarRef{offset, count}, message_size, fixed, size, align, bound, what);
      },
      py::arg("message_size"), py::arg("fixed"), py::arg("offset"), py::arg("count"), py::arg("size"), py::arg("align"),
      py::arg("bound"), py::arg("what"),
      "Raises InvalidArgumentError naming `what` unless the block (offset, count) of elements of `size` bytes, "
      "aligned to `align`, lies inside the message after its fixed part and within `bound` (0: none).");
  py::class_<msg::Budget>(m, "Budget", "Bytes a copy of a message may still make: its size, less each block read.")
      .def(py::init<std::uint64_t>(), py::arg("bytes"))
      .def("take", &msg::Budget::take, py::arg("count"), py::arg("size"), py::arg("what"),
           "Charges `count` elements of `size` bytes; InvalidArgumentError when the blocks overlap.")
      .def_property_readonly("left", &msg::Budget::left);
  m.def("describe", &describe, py::arg("schema"),
        "The message types of a canonical schema text: {root, hash, types: {name: {size, align, fields, constants}}}.");
  m.def(
      "resolve_type",
      [](const std::string& name, const std::vector<std::string>& msg_path) {
        return tuple_of(schema::TypeCatalog(msg_path).find(name));
      },
      py::arg("name"), py::arg("msg_path") = std::vector<std::string>{},
      "A type by name (package/Name): the shipped definitions, then msg_path, then SHMBUS_MSG_PATH.");
  register_schema(m);
  m.def(
      "encode_json",
      [](const std::string& schema, const std::string& json) {
        const schema::Schema s = schema::Schema::from_canonical(schema);
        const std::vector<std::byte> b = s.encode(s.with_defaults(schema::Json::parse(json)));
        return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
      },
      py::arg("schema"), py::arg("json"),
      "A message's bytes from JSON text of its fields (the rest from the definition's defaults).");
  m.def(
      "schema_type", [](const std::string& text) { return tuple_of(schema::Schema::from_canonical(text)); },
      py::arg("schema"), "A type from its canonical schema text (as stored in a channel or a recording).");
  m.def(
      "service_types",
      [](const std::string& service_type, const std::vector<std::string>& msg_path) {
        const schema::TypeCatalog catalog(msg_path);
        return py::make_tuple(tuple_of(catalog.find(service_request_type(service_type))),
                              tuple_of(catalog.find(service_response_type(service_type))));
      },
      py::arg("service_type"), py::arg("msg_path") = std::vector<std::string>{},
      "A service type's (request, response) types, from its .srv.");
  m.def(
      "action_types",
      [](const std::string& action_type, const std::vector<std::string>& msg_path) {
        const schema::TypeCatalog catalog(msg_path);
        const auto types = action::action_types_named(short_type_name(action_type), [&](const std::string& name) {
          return std::optional(catalog.find(name).type_info());
        });
        return py::make_tuple(tuple_of(types->send_goal.request), tuple_of(types->send_goal.response),
                              tuple_of(types->get_result.request), tuple_of(types->get_result.response),
                              tuple_of(types->feedback_message));
      },
      py::arg("action_type"), py::arg("msg_path") = std::vector<std::string>{},
      "An action type's derived types, from its .action: (send-goal request, response, get-result request, "
      "response, feedback message).");
  m.def(
      "service_types_of",
      [](const std::string& service) {
        const Context& context = Context::process_default();
        const introspect::ServiceView v =
            introspect::service_view(context.domain(), service, context.config().access());
        if (!v.responses) {
          throw Error(Errc::kNotFound, fmt::format("service {} in domain \"{}\" has no response channel yet; give "
                                                   "its type (package/Name of its .srv)",
                                                   service, context.domain()));
        }
        const auto type = [](const introspect::ChannelView& c) {
          return TypeTuple{c.type_name, c.type_hash, c.schema};
        };
        return py::make_tuple(v.service_type, type(v.requests), type(*v.responses));
      },
      py::arg("service"), "A service's (type, request, response) as its channels in this domain store them.");
}

}  // namespace shmbus::python
