#pragma once
/// @file schema_text.hpp
/// What the transport itself needs of a canonical schema text (the form
/// stored in a channel segment): its hash, which is the type hash, and the
/// first difference between two of them for a type-mismatch error. No
/// parser: that is shmbus::schema (shmbus/schema.hpp).

#include <cstdint>
#include <string>
#include <string_view>

namespace shmbus::schema {

/// 64-bit FNV-1a of a canonical schema text: the type hash.
std::uint64_t hash_text(std::string_view canonical_text) noexcept;

/// The first difference between two schemas, for type-mismatch messages:
/// "in pkg/Msg, line 2 differs: 'float64 y' here, 'float32 y' there";
/// empty when none is found.
std::string first_difference(std::string_view canonical_a, std::string_view canonical_b);

}  // namespace shmbus::schema
