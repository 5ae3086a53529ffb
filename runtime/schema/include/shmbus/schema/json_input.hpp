#pragma once
/// @file json_input.hpp
/// JSON and CBOR from outside the process (a socket, a file, a command
/// line, another process's shared memory), bounded before a tree is built.
/// nlohmann's DOM parsers accept any nesting, and its CBOR reader, copy,
/// comparison and dump all recurse once per level: a 100 KiB frame of `[`
/// or `0x81` bytes exhausts a thread's stack. These parsers build the tree
/// from nlohmann's SAX events and refuse the first array or object deeper
/// than `max_depth`, so nothing later recurses deeper than that. CBOR text
/// strings must be valid UTF-8 (RFC 8949), so a tree parsed here always
/// dumps. Target `shmbus::schema`.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace shmbus::schema {

/// The deepest nesting of arrays and objects foreign JSON may have. A
/// message's JSON is as deep as its nested types (a few levels); 64 leaves
/// room for any real message and bounds every recursion over the tree.
inline constexpr std::size_t kMaxJsonDepth = 64;

/// Input refused: malformed (nlohmann's message: what and where), or nested
/// deeper than the limit ("nesting deeper than 64 levels").
class JsonInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses one JSON text (all of `text`, RFC 8259). Throws JsonInputError.
template <typename J = nlohmann::ordered_json>
J parse_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

/// Parses one CBOR item (all of `bytes`, RFC 8949; tags refused). A byte
/// string becomes the array of its bytes (rosbridge sends uint8[] so).
/// Throws JsonInputError.
template <typename J = nlohmann::ordered_json>
J parse_cbor(std::string_view bytes, std::size_t max_depth = kMaxJsonDepth);

/// `v` as an unsigned integer of type T (an id, an index, a count from a
/// client or a file). Throws JsonInputError naming `what` when `v` is not
/// an integer in T's range. nlohmann's get<T>() casts a float or a negative
/// number unchecked: an id of 7e117 is undefined behaviour there, and
/// 4294967297 silently becomes 1.
template <typename T, typename J>
T unsigned_value(const J& v, std::string_view what) {
  static_assert(std::is_unsigned_v<T>);
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    if (u <= std::numeric_limits<T>::max()) return static_cast<T>(u);
  }
  throw JsonInputError(std::string(what) + " must be an integer from 0 to " +
                       std::to_string(std::numeric_limits<T>::max()) + ", not " +
                       (v.is_number() ? v.dump() : std::string(v.type_name())));
}

extern template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view, std::size_t);
extern template nlohmann::json parse_json<nlohmann::json>(std::string_view, std::size_t);
extern template nlohmann::ordered_json parse_cbor<nlohmann::ordered_json>(std::string_view, std::size_t);
extern template nlohmann::json parse_cbor<nlohmann::json>(std::string_view, std::size_t);

}  // namespace shmbus::schema
