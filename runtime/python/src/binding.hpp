#pragma once
// What the parts of the extension module shmbus._shmbus share: how a type
// and a MessageInfo cross into Python, and each part's registration.
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "shmbus/publisher.hpp"
#include "shmbus/schema.hpp"
#include "shmbus/types.hpp"

namespace shmbus::python {

namespace py = pybind11;

/// A type as Python passes it: (name, hash, schema text).
using TypeTuple = std::tuple<std::string, std::uint64_t, std::string>;

inline TypeInfo type_of(const TypeTuple& t) { return {std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }
inline TypeTuple tuple_of(const TypeInfo& t) { return {t.name, t.hash, t.schema}; }
/// The sizes Python's `max_message_size=`, `capacity=` and `depth=` give
/// the channel a publisher creates (0: the configuration's).
inline PublisherOptions sized_options(std::uint32_t max_message_size, std::uint32_t capacity, std::uint32_t depth) {
  PublisherOptions o;
  o.max_message_size = max_message_size;
  o.capacity = capacity;
  o.min_capacity = depth;
  return o;
}

/// Seconds (a float, as Python's time APIs take) to a duration; negative and
/// NaN are zero, and anything above a day is a day (a bound, not a hang).
std::chrono::nanoseconds seconds_to_ns(double seconds);

/// Raises the Python exception shmbus.errors.<error_class>(message).
[[noreturn]] void raise_python(const char* error_class, const std::string& message);

/// A message's bytes, copied into a new bytes object.
py::bytes copy_bytes(std::span<const std::byte> payload);

/// A publisher as the Python _Publisher (a node's shares the node).
/// `node_open`: a node's publisher, usable while the flag is true
/// (Node.close() clears it); nullptr for a publisher of its own.
py::object wrap_publisher(std::shared_ptr<Publisher> p, std::shared_ptr<const std::atomic<bool>> node_open = nullptr);

/// The bytes of a message of the type `s` made from Python values (a dict
/// or a message object; the schema's Encoder), written into this thread's
/// buffer, which is kept between calls: valid until the thread's next call.
/// Throws Error (kInvalidArgument) naming the field.
std::span<const std::byte> encode_python(const schema::Schema& s, py::handle values);

void register_messages(py::module_& m);
void register_pubsub(py::module_& m);
void register_node(py::module_& m);
void register_recording(py::module_& m);

}  // namespace shmbus::python
