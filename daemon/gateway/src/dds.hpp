#pragma once
// Cyclone DDS's C API held by RAII: entities deleted with their owner,
// QoS objects freed, failures turned into shmbus::Error.

#include <dds/dds.h>
#include <fmt/format.h>

#include <memory>
#include <string_view>
#include <utility>

#include "shmbus/error.hpp"

namespace shmbus::gateway::dds {

/// One DDS entity (participant, topic, reader, writer, waitset...):
/// deleted, with its children, when the owner goes.
class Entity {
 public:
  Entity() = default;
  /// Takes `handle`; a negative one (a DDS error) throws Error(kResource)
  /// naming `what`.
  Entity(dds_entity_t handle, std::string_view what) : handle_(handle) {
    if (handle < 0) {
      throw Error(Errc::kResource, fmt::format("DDS: cannot create the {}: {}", what, dds_strretcode(handle)));
    }
  }
  ~Entity() { reset(); }
  Entity(Entity&& other) noexcept : handle_(std::exchange(other.handle_, 0)) {}
  Entity& operator=(Entity&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, 0);
    }
    return *this;
  }
  Entity(const Entity&) = delete;
  Entity& operator=(const Entity&) = delete;

  [[nodiscard]] dds_entity_t get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ > 0; }
  void reset() noexcept {
    if (handle_ > 0) dds_delete(handle_);
    handle_ = 0;
  }

 private:
  dds_entity_t handle_ = 0;
};

struct QosDeleter {
  void operator()(dds_qos_t* q) const noexcept { dds_delete_qos(q); }
};
using Qos = std::unique_ptr<dds_qos_t, QosDeleter>;
inline Qos make_qos() { return Qos(dds_create_qos()); }

}  // namespace shmbus::gateway::dds
