// libFuzzer target: a file given to shmtool bag info/play/export/graph,
// bag recover and bag doctor. The reader opens it (summary, indexes, CRCs),
// reads every message (chunks decompressed, bounded by what they can hold),
// and the lineage reads its metadata; recover() rebuilds it into a second
// file; doctor() walks every record and lists the faults.
// Anything may be refused with an Error; nothing may crash, hang or
// allocate what the file cannot hold.
//
// With SHMBUS_FUZZ_WRITE_SEEDS=DIR set, the target writes its seed files
// (one recording per compression, with metadata) to DIR and exits.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/lineage.hpp"
#include "shmbus/mcap.hpp"

using namespace shmbus;

namespace {

void write_seeds(const std::string& dir) {
  for (const mcap::Compression c : {mcap::Compression::kNone, mcap::Compression::kZstd, mcap::Compression::kLz4}) {
    mcap::WriterOptions o;
    o.compression = c;
    o.chunk_size = 512;
    mcap::Writer w(dir + "/seed_" + std::string{mcap::compression_name(c)} + ".mcap", o);
    const auto schema = w.add_schema("shmbus_msgs/String", "shmbus.msg", "MSG: shmbus_msgs/String\nstring<16> data\n");
    const auto a = w.add_channel(schema, "/a", "shmbus.cdr", {{"k", "v"}});
    const auto b = w.add_channel(0, "/b", "", {});
    w.write_metadata({lineage::kModulesMetadata, {{"node", R"({"reads": ["/a"], "writes": ["/b"]})"}}});
    w.write_metadata({lineage::kChannelIndexesMetadata, {{"/a", "0"}, {"/b", "1"}}});
    w.write_metadata({lineage::kWritersMetadata, {{"/b", R"({"first_publisher": 0, "nodes": {"0": "node"}})"}}});
    const std::vector<std::byte> payload(16, std::byte{'x'});
    for (std::uint32_t i = 0; i < 40; ++i) {
      w.write(mcap::Message{i % 2 == 0 ? a : b, i, 1000 + i, 1000 + i, payload});
    }
    w.close();
  }
}

std::string scratch(const char* what) {
  return "/tmp/shmbus_fuzz_mcap_" + std::to_string(::getpid()) + "_" + what + ".mcap";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("SHMBUS_FUZZ_WRITE_SEEDS")) {  // NOLINT(concurrency-mt-unsafe)
    write_seeds(dir);
    std::exit(0);  // NOLINT(concurrency-mt-unsafe)
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string in = scratch("in");
  static const std::string out = scratch("out");
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    mcap::Reader r(in);
    std::uint64_t n = 0;
    r.read_messages([&](const mcap::MessageView& m) {
      n += m.data.size();
      return true;
    });
  } catch (const Error&) {
  }
  try {
    (void)lineage::Lineage(in);
  } catch (const Error&) {
  }
  try {
    (void)mcap::doctor(in);
  } catch (const Error&) {
  }
  try {
    (void)mcap::recover(in, out);
  } catch (const Error&) {
  }
  std::remove(out.c_str());
  return 0;
}
