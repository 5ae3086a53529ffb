#include "shmbus/record/summary.hpp"

#include <algorithm>
#include <limits>

#include "shmbus/mcap.hpp"
#include "shmbus/record/recording.hpp"

namespace shmbus::record {

namespace {

void add_distinct(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

/// Adds one file's figures.
void add_file(RecordingSummary& s, const mcap::FileInfo& info) {
  const mcap::Statistics& st = info.statistics;
  s.bytes += info.bytes;
  add_distinct(s.libraries, info.library);
  add_distinct(s.profiles, info.profile);
  if (st.message_count > 0) {
    s.start_ns = std::min(s.start_ns, st.message_start_time);
    s.end_ns = std::max(s.end_ns, st.message_end_time);
  }
  s.messages += st.message_count;
  s.chunks += info.chunks.size();
  s.attachments += st.attachment_count;
  s.metadata += info.metadata.size();
  for (const mcap::ChunkIndex& c : info.chunks) {
    ChunkFigures& f = s.compression[c.compression.empty() ? "none" : c.compression];
    ++f.chunks;
    f.compressed_bytes += c.compressed_size;
    f.uncompressed_bytes += c.uncompressed_size;
  }
  const std::map<std::string, std::uint64_t> lost = recorded_losses(info);
  for (const mcap::Channel& c : info.channels) {
    auto it =
        std::find_if(s.channels.begin(), s.channels.end(), [&](const ChannelSummary& x) { return x.name == c.topic; });
    if (it == s.channels.end()) {
      ChannelSummary n;
      n.name = c.topic;
      if (const mcap::Schema* schema = info.schema(c.schema_id)) {
        n.type = schema->name;
        n.schema_encoding = schema->encoding;
      }
      n.message_encoding = c.message_encoding;
      s.channels.push_back(std::move(n));
      it = s.channels.end() - 1;
    }
    for (const auto& [id, n] : st.channel_message_counts) it->messages += id == c.id ? n : 0;
    if (const auto l = lost.find(c.topic); l != lost.end()) it->lost += l->second;
  }
}

}  // namespace

RecordingSummary summarize(const std::vector<std::string>& paths, bool series) {
  RecordingSummary s;
  s.start_ns = std::numeric_limits<std::uint64_t>::max();
  for (const std::string& path : paths) {
    for (std::string& f : series ? recording_files(path) : std::vector<std::string>{path}) {
      if (std::find(s.files.begin(), s.files.end(), f) == s.files.end()) s.files.push_back(std::move(f));
    }
  }
  for (const std::string& f : s.files) add_file(s, mcap::Reader(f).info());
  if (s.messages == 0) s.start_ns = 0;
  return s;
}

}  // namespace shmbus::record
