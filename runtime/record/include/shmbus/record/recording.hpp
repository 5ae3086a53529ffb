#pragma once
/// @file recording.hpp
/// What the recorder, the player and the bag commands share: the names a
/// recording carries its extra facts under, how a recorded channel's type
/// and provenance are written and read back, how channel globs select.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <span>

#include "shmbus/bus_channels.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"
#include "shmbus/types.hpp"
#include "shmbus_msgs/MessageProvenance.hpp"

namespace shmbus::record {

/// The channel a recorder in snapshot mode takes triggers from.
inline constexpr const char* kTriggerChannel = "/shmbus/record/trigger";

/// The recording format's names (shmbus/lineage.hpp defines them all).
using lineage::kChannelIndexesMetadata;
using lineage::kChannelTypesMetadata;
using lineage::kLostMetadata;
using lineage::kModulesMetadata;
using lineage::kProvenanceChannel;
using lineage::kRecordingMetadata;
using lineage::kReplayMetadata;
using lineage::kSnapshotMetadata;
using lineage::kWritersMetadata;

/// The channel `shmtool play --clock` publishes the recording's time on.
using shmbus::kClockChannel;

/// The type a recorded channel had, from its metadata and schema.
TypeInfo recorded_type(const mcap::FileInfo& info, const mcap::Channel& c);

/// The MCAP form of a recorded channel, for a file being written: a
/// `shmbus.msg` schema record per type (one each, by hash; a raw channel's,
/// shmbus/Bytes, has no text), and the channel with message encoding
/// `shmbus`, its type's name and hash first in its metadata. Every writer
/// of shmbus recordings (the recorder, import, Python's Writer) adds its
/// channels through it; recorded_type() reads them back.
class RecordedChannels {
 public:
  explicit RecordedChannels(mcap::Writer& writer) noexcept : writer_(&writer) {}
  /// Adds channel `topic` of `type`; `metadata` follows the type's. Returns
  /// its id.
  std::uint16_t add(const std::string& topic, const TypeInfo& type, const mcap::KeyValues& metadata = {});

 private:
  mcap::Writer* writer_;
  std::map<std::uint64_t, std::uint16_t> schemas_;  // type hash -> schema id
};

/// Adds the /shmbus/provenance channel (and its schema) to a file being
/// written; `metadata` joins the type's.
std::uint16_t add_provenance_channel(mcap::Writer& writer, const mcap::KeyValues& metadata);
/// What a provenance record says besides its entries.
struct ProvenanceFacts {
  std::uint32_t channel_index = 0;
  std::uint32_t publisher_id = 0;
  std::uint64_t sequence = 0;
  std::int64_t processing_ns = 0;
  std::uint16_t input_count = 0;
  std::uint16_t inputs_cut = 0;
  std::uint16_t second_level_cut = 0;
};
/// The /shmbus/provenance record of one message: `entries` are its inputs
/// (the first input_count) and then their inputs.
shmbus_msgs::MessageProvenance provenance_record(const ProvenanceFacts& f, std::span<const Provenance> entries);

/// Whether `name` matches one of the fnmatch(3) globs.
bool matches_any(const std::vector<std::string>& globs, const std::string& name);
/// The channel-selection rule of play, rewrite and `bag cat`: `name`
/// matches one of `channels` (none: every channel) and none of `exclude`.
bool selected(const std::vector<std::string>& channels, const std::vector<std::string>& exclude,
              const std::string& name);
/// The per-channel losses a recording's metadata holds, by channel name.
std::map<std::string, std::uint64_t> recorded_losses(const mcap::FileInfo& info);
/// `output` as the n-th file of a series: "run.mcap" -> "run_3.mcap".
std::string numbered_path(const std::string& output, std::uint64_t n);

/// The files a path names: a split series' first file (FILE_0.mcap) names
/// the series, FILE_0.mcap, FILE_1.mcap, ... as far as they exist without
/// a gap; any other path names itself.
std::vector<std::string> recording_files(const std::string& path);

}  // namespace shmbus::record
