// shmbus._shmbus, messages: a type's definition as plain Python data (the
// package builds its NumPy dtypes from it), and types resolved by name.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "binding.hpp"
#include "shmbus/context.hpp"
#include "shmbus/error.hpp"
#include "shmbus/names.hpp"
#include "shmbus/schema.hpp"
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

TypeTuple tuple_of(const schema::Schema& s) { return {s.root().name, s.hash(), s.text()}; }

}  // namespace

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
