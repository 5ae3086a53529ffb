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
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

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

extern template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view, std::size_t);
extern template nlohmann::json parse_json<nlohmann::json>(std::string_view, std::size_t);
extern template nlohmann::ordered_json parse_cbor<nlohmann::ordered_json>(std::string_view, std::size_t);
extern template nlohmann::json parse_cbor<nlohmann::json>(std::string_view, std::size_t);

}  // namespace shmbus::schema
