#include "stamp_field.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string_view>

#include "shmbus/error.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::sync {

StampField resolve_stamp_field(const std::string& channel, const TypeInfo& type, const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    return Error(Errc::kInvalidArgument,
                 fmt::format("input {} has type {}, {}; name an int64 or uint64 field of nanoseconds "
                             "(e.g. header.stamp_ns) or a builtin_interfaces/Time (a ROS 2 header's "
                             "header.stamp), or none for the publish time",
                             channel, type.name, why));
  };
  if (type.schema.empty()) throw refuse(fmt::format("which has no schema to find '{}' in", path));
  const schema::Schema s = schema::Schema::from_canonical(type.schema);
  const schema::MessageDef* def = &s.root();
  std::uint32_t offset = 0;
  std::string_view rest(path);
  while (true) {
    const auto dot = rest.find('.');
    const std::string_view name = rest.substr(0, dot);
    const auto f = std::find_if(def->fields.begin(), def->fields.end(),
                                [&](const schema::Field& field) { return field.name == name; });
    if (f == def->fields.end()) throw refuse(fmt::format("which has no field '{}'", path));
    if (f->array_length != 0 || f->unbounded) throw refuse(fmt::format("whose field '{}' is an array", path));
    offset += f->offset;
    if (dot == std::string_view::npos) {
      if (f->kind == schema::FieldKind::kMessage && f->message->name == "builtin_interfaces/Time") {
        return StampField{offset, StampField::Kind::kTime};
      }
      if (f->kind != schema::FieldKind::kPrimitive ||
          (f->primitive != schema::Primitive::kInt64 && f->primitive != schema::Primitive::kUint64)) {
        throw refuse(fmt::format("whose field '{}' is {}, not an int64 or uint64", path, f->type()));
      }
      return StampField{
          offset, f->primitive == schema::Primitive::kInt64 ? StampField::Kind::kInt64 : StampField::Kind::kUint64};
    }
    if (f->kind != schema::FieldKind::kMessage) throw refuse(fmt::format("whose field '{}' is not a message", name));
    def = f->message;
    rest = rest.substr(dot + 1);
  }
}

std::int64_t StampField::read(const std::byte* message) const noexcept {
  const std::byte* p = message + offset;
  switch (kind) {
    case Kind::kInt64: {
      std::int64_t v = 0;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case Kind::kUint64: {
      std::uint64_t u = 0;
      std::memcpy(&u, p, sizeof u);
      return static_cast<std::int64_t>(std::min<std::uint64_t>(u, INT64_MAX));
    }
    case Kind::kTime:
      break;
  }
  std::int32_t sec = 0;
  std::uint32_t nanosec = 0;
  std::memcpy(&sec, p, sizeof sec);
  std::memcpy(&nanosec, p + 4, sizeof nanosec);
  return std::int64_t{sec} * 1'000'000'000 + nanosec;
}

}  // namespace shmbus::sync
