#pragma once
/// @file iceoryx.hpp
/// The iceoryx transport's daemon side: RouDi (iceoryx's central daemon,
/// `iox-roudi`) must run for channels with `transport = "iceoryx"`; its
/// memory pools are derived from the shmbus configuration.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shmbus/config.hpp"

namespace shmbus::iceoryx {

/// Chunks RouDi provides per iceoryx channel: `capacity` messages queued
/// for each of this many subscribers, plus the publishers' history (up to
/// 16) and loans in flight. A channel with more subscribers, all of them
/// behind, can run its pool dry: a publish then fails and is counted as a
/// drop.
inline constexpr std::uint32_t kSubscribersPerChannel = 4;
/// Channels named by no [[channel]] entry share the [defaults] pool; it is
/// sized for this many of them.
inline constexpr std::uint32_t kDefaultChannels = 8;

/// The payload size of one RouDi pool chunk for a channel of
/// `max_message_size` (the message, shmbus's header in the chunk's user
/// header, alignment), as `iox-roudi -c` expects it.
std::uint32_t chunk_payload_size(std::uint32_t max_message_size);

/// The RouDi configuration (TOML for `iox-roudi -c`) with one memory pool
/// per chunk size the configuration's iceoryx channels need, and one for
/// [defaults].
std::string roudi_config(const Config& config);

/// True when a RouDi answers on this machine (its socket /tmp/roudi
/// accepts a connection).
bool roudi_running() noexcept;

/// The iceoryx runtime name of process `pid` named `comm` (one runtime per
/// process): `shmbus.<comm>.<pid>`, characters other than letters, digits,
/// '_' and '-' in `comm` replaced by '_'.
std::string runtime_name(std::string_view comm, long pid);

/// iceoryx makes a socket and a lock file in /tmp for every runtime, named
/// after it, and removes them only when its process exits normally: a
/// process that is killed (or calls _exit) leaves both. Removes those of
/// shmbus's runtimes (runtime_name) whose process is gone: its pid is not
/// alive here and no process holds the runtime's lock (iceoryx holds it for
/// the runtime's life, in any pid namespace). Returns how many runtimes'
/// files it removed. Every process does this once, before its own runtime
/// starts.
std::size_t remove_stale_runtime_files() noexcept;

}  // namespace shmbus::iceoryx
