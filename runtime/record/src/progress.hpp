#pragma once
// The progress a rewrite or an import reports: every 4096 messages read and
// once at the end.

#include <functional>

#include "shmbus/mcap.hpp"
#include "shmbus/record/rewrite.hpp"

namespace shmbus::record {

class ProgressReporter {
 public:
  ProgressReporter(const std::function<void(const RewriteProgress&)>& report, std::uint64_t total_messages)
      : report_(report) {
    p_.total_messages = total_messages;
  }
  /// One message read; `writer` is the output.
  void read_one(const mcap::Writer& writer) {
    if (++p_.messages % 4096 == 0 && report_) {
      p_.bytes_written = writer.bytes();
      report_(p_);
    }
  }
  /// The output is closed: `bytes` long.
  void done(std::uint64_t bytes) {
    if (!report_) return;
    p_.bytes_written = bytes;
    report_(p_);
  }

 private:
  const std::function<void(const RewriteProgress&)>& report_;
  RewriteProgress p_;
};

}  // namespace shmbus::record
