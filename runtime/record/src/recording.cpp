#include "shmbus/record/recording.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "shmbus/publisher.hpp"

namespace shmbus::record {

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  for (const auto& g : globs) {
    if (::fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

bool selected(const std::vector<std::string>& channels, const std::vector<std::string>& exclude,
              const std::string& name) {
  return (channels.empty() || matches_any(channels, name)) && !matches_any(exclude, name);
}

std::map<std::string, std::uint64_t> recorded_losses(const mcap::FileInfo& info) {
  std::map<std::string, std::uint64_t> lost;
  for (const auto& m : info.metadata) {
    if (m.name != kLostMetadata) continue;
    for (const auto& [k, v] : m.values) lost[k] += std::stoull(v);
  }
  return lost;
}

std::string numbered_path(const std::string& output, std::uint64_t n) {
  const std::string_view ext = ".mcap";
  const bool has_ext = output.size() > ext.size() && output.ends_with(ext);
  const std::string stem = has_ext ? output.substr(0, output.size() - ext.size()) : output;
  return fmt::format("{}_{}.mcap", stem, n);
}

std::vector<std::string> recording_files(const std::string& path) {
  std::vector<std::string> files{path};
  constexpr std::string_view kFirst = "_0.mcap";
  if (!path.ends_with(kFirst)) return files;
  const std::string output = path.substr(0, path.size() - kFirst.size()) + ".mcap";
  for (std::uint64_t n = 1;; ++n) {
    std::string next = numbered_path(output, n);
    std::error_code ec;
    if (!std::filesystem::exists(next, ec)) return files;
    files.push_back(std::move(next));
  }
}

TypeInfo recorded_type(const mcap::FileInfo& info, const mcap::Channel& c) {
  TypeInfo t{"shmbus/Bytes", 0, ""};
  for (const auto& [k, v] : c.metadata) {
    if (k == "type_name") t.name = v;
    if (k == "type_hash") t.hash = std::stoull(v, nullptr, 16);
  }
  if (const mcap::Schema* s = info.schema(c.schema_id)) t.schema = s->data;
  return t;
}

std::uint16_t RecordedChannels::add(const std::string& topic, const TypeInfo& type, const mcap::KeyValues& metadata) {
  auto it = schemas_.find(type.hash);
  if (it == schemas_.end())
    it = schemas_.emplace(type.hash, writer_->add_schema(type.name, "shmbus.msg", type.schema)).first;
  mcap::KeyValues m{{"type_name", type.name}, {"type_hash", fmt::format("{:016x}", type.hash)}};
  m.insert(m.end(), metadata.begin(), metadata.end());
  return writer_->add_channel(it->second, topic, "shmbus", std::move(m));
}

std::uint16_t add_provenance_channel(mcap::Writer& writer, const mcap::KeyValues& metadata) {
  return RecordedChannels(writer).add(kProvenanceChannel, type_info_of<shmbus_msgs::MessageProvenance>(), metadata);
}

shmbus_msgs::MessageProvenance provenance_record(const ProvenanceFacts& f, std::span<const Provenance> entries) {
  shmbus_msgs::MessageProvenance p{};
  p.channel_index = f.channel_index;
  p.publisher_id = f.publisher_id;
  p.sequence = f.sequence;
  p.processing_ns = f.processing_ns;
  p.entry_count = static_cast<std::uint16_t>(std::min(entries.size(), p.entries.size()));
  p.input_count = std::min(f.input_count, p.entry_count);
  p.inputs_cut = f.inputs_cut;
  p.second_level_cut = f.second_level_cut;
  for (std::size_t k = 0; k < p.entry_count; ++k) {
    p.entries[k].channel_index = entries[k].channel_index;
    p.entries[k].via = entries[k].via;
    p.entries[k].sequence = entries[k].sequence;
  }
  return p;
}

}  // namespace shmbus::record
