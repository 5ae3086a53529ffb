#pragma once
// What the recorder and the bag commands share: the names a recording
// carries its extra facts under, and how channel globs select.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shmbus/mcap.hpp"

namespace shmbus::tool {

/// The node name the recorder's subscriptions register under.
inline constexpr const char* kRecorderNode = "shmtool-record";
/// Metadata record: channel name -> messages lost while recording this file.
inline constexpr const char* kLostMetadata = "shmbus.lost";
/// Metadata record: host, domain, start, recorder, part of a split.
inline constexpr const char* kRecordingMetadata = "shmbus.recording";
/// Metadata record of a snapshot: why and when it was written.
inline constexpr const char* kSnapshotMetadata = "shmbus.snapshot";
/// The channel a recorder in snapshot mode takes triggers from.
inline constexpr const char* kTriggerChannel = "/shmbus/record/trigger";

/// The channel `shmtool play --clock` publishes the recording's time on.
inline constexpr const char* kClockChannel = "/shmbus/clock";

/// Whether `name` matches one of the fnmatch(3) globs.
bool matches_any(const std::vector<std::string>& globs, const std::string& name);
/// This machine's host name.
std::string host_name();
/// The per-channel losses a recording's metadata holds, by channel name.
std::map<std::string, std::uint64_t> recorded_losses(const mcap::FileInfo& info);
/// `output` as the n-th file of a series: "run.mcap" -> "run_3.mcap".
std::string numbered_path(const std::string& output, std::uint64_t n);

}  // namespace shmbus::tool
