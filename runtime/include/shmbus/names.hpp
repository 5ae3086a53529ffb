#pragma once
/// @file names.hpp
/// Rules for channel and domain names, and the shared-memory object names
/// they become.

#include <string>
#include <string_view>

namespace shmbus {

/// Longest channel name, in bytes.
inline constexpr std::size_t kMaxChannelName = 100;
/// Longest domain name, in bytes.
inline constexpr std::size_t kMaxDomainName = 32;
/// Longest node name, in bytes (longer ones are refused).
inline constexpr std::size_t kMaxNodeName = 63;

/// Throws Error(kInvalidArgument) unless `name` is `/seg[/seg...]`, each
/// segment made of [A-Za-z0-9_-], at most kMaxChannelName bytes.
void validate_channel_name(std::string_view name);
/// Throws Error(kInvalidArgument) unless `domain` is 1..32 of [A-Za-z0-9_-].
void validate_domain_name(std::string_view domain);
/// Throws Error(kInvalidArgument) unless `node` is 1..63 printable ASCII
/// characters without spaces.
void validate_node_name(std::string_view node);

/// The shared-memory object name of a domain's registry (`shmbus.D.registry`).
std::string registry_object_name(std::string_view domain);
/// The shared-memory object name of a channel (`shmbus.D.c.camera.front`).
std::string channel_object_name(std::string_view domain, std::string_view channel);
/// The prefix every object of a domain starts with (`shmbus.D.`).
std::string domain_object_prefix(std::string_view domain);

}  // namespace shmbus
