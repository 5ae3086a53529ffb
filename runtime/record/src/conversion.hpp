#pragma once
// What import_ros2 and export_recording keep per channel of their input,
// and how it goes into their report.

#include <cstdint>
#include <string>

#include "shmbus/mcap.hpp"
#include "shmbus/record/import.hpp"
#include "shmbus/schema.hpp"

namespace shmbus::record {

/// One channel of a conversion's input.
struct ChannelOutcome {
  std::string left_out;        ///< why it is not converted (the first reason); empty: it is
  std::uint64_t messages = 0;  ///< of it written (import) or left out (export)
  schema::CdrNotes notes;      ///< what decoding its CDR accepted
};

/// Adds channel `c` of `info` to `report` where its outcome says anything.
inline void report_channel(const mcap::FileInfo& info, const mcap::Channel& c, const ChannelOutcome& o,
                           ConversionReport& report) {
  if (!o.left_out.empty()) {
    const mcap::Schema* s = info.schema(c.schema_id);
    report.left_out.push_back({c.topic, s != nullptr ? s->name : std::string{}, o.messages, o.left_out});
  }
  if (o.notes.strings_without_nul != 0 || o.notes.strings_cut_at_nul != 0) report.notes.emplace_back(c.topic, o.notes);
}

}  // namespace shmbus::record
