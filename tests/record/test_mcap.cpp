// The MCAP writer against the reference readers: files written here are read
// by @mcap/core's indexed reader and its stream reader (node, from npm,
// tests/js), CRCs validated, and what they report is compared with what was
// written: profile, channels, schemas, metadata, statistics, and per channel
// the count, order and a CRC of every payload.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"

using namespace shmbus;
using json = nlohmann::json;

namespace {

struct ReaderRun {
  int code = -1;
  std::string out;
};

/// Runs the reference reader on `path`.
ReaderRun read_with_mcap_core(const std::string& path) {
  const std::string dir = std::string(SHMBUS_SOURCE_DIR) + "/tests/js";
  if (!std::filesystem::exists(dir + "/node_modules/@mcap/core")) {
    ADD_FAILURE() << "@mcap/core is not installed in " << dir << ": run scripts/install-deps.sh";
    return {};
  }
  const std::string cmd = "node " + dir + "/mcap_read.mjs " + path + " 2>&1";
  ReaderRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  r.code = ::pclose(p);
  return r;
}

struct Written {
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, std::uint32_t> crc;
  std::map<std::string, std::uint32_t> last_sequence;
  mcap::Statistics stats;
};

/// Three channels of different types, rates and sizes, interleaved in
/// log-time order, in chunks of `chunk_size` bytes, plus two metadata records.
/// With `taken_back_every` N, every Nth message is written as one
/// overwritten while read (its check says false) and is not expected back.
Written write_sample(const std::string& path, mcap::Compression compression, std::uint64_t chunk_size,
                     std::uint64_t taken_back_every = 0) {
  mcap::WriterOptions o;
  o.compression = compression;
  o.chunk_size = chunk_size;
  o.library = "shmbus test";
  mcap::Writer w(path, o);
  const auto imu_schema = w.add_schema("shmbus_msgs/Imu", "shmbus.msg", "Header header\nfloat64[3] gyro\n");
  const auto img_schema = w.add_schema("shmbus_msgs/Image", "shmbus.msg", "uint32 height\nuint8[] data\n");
  const std::vector<std::string> topics{"/imu", "/camera", "/imu_raw"};
  std::vector<std::uint16_t> ids;
  ids.push_back(w.add_channel(imu_schema, "/imu", "shmbus", {{"type_name", "shmbus_msgs/Imu"}, {"domain", "t"}}));
  ids.push_back(w.add_channel(img_schema, "/camera", "shmbus", {{"type_name", "shmbus_msgs/Image"}}));
  ids.push_back(w.add_channel(imu_schema, "/imu_raw", "shmbus", {}));
  w.write_metadata({"shmbus.recording", {{"host", "test-host"}, {"domain", "t"}}});
  Written out;
  std::vector<std::uint32_t> sequence(3, 0);
  std::vector<std::byte> payload;
  for (std::uint64_t t = 0; t < 3000; ++t) {
    for (std::size_t c = 0; c < 3; ++c) {
      // /imu every tick (64 B), /camera every 10th (3000 B), /imu_raw every 3rd (24 B)
      const std::uint64_t every = c == 0 ? 1 : c == 1 ? 10 : 3;
      if (t % every != 0) continue;
      payload.assign(c == 0 ? 64 : c == 1 ? 3000 : 24, std::byte{0});
      for (std::size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<std::byte>((t * 31 + i * 7 + c) & 0xff);
      }
      const std::uint64_t log_time = 1'700'000'000'000'000'000ULL + t * 1'000'000 + c;
      if (taken_back_every != 0) {
        const bool overwritten = (t + c) % taken_back_every == 0;
        EXPECT_EQ(w.write({ids[c], sequence[c], log_time, log_time - 500, payload}, [&] { return !overwritten; }),
                  !overwritten);
        if (overwritten) continue;
      } else {
        w.write({ids[c], sequence[c], log_time, log_time - 500, payload});
      }
      out.counts[topics[c]]++;
      out.crc[topics[c]] = mcap::crc32(payload, out.crc[topics[c]]);
      out.last_sequence[topics[c]] = sequence[c]++;
    }
  }
  w.write_metadata({"shmbus.losses", {{"/imu", "0"}}});
  w.close();
  out.stats = w.statistics();
  return out;
}

void expect_read_back(const std::string& path, mcap::Compression compression, const Written& w) {
  const ReaderRun r = read_with_mcap_core(path);
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["profile"], "shmbus");
  EXPECT_EQ(j["library"], "shmbus test");
  EXPECT_EQ(j["chunks"].get<std::uint32_t>(), w.stats.chunk_count);
  EXPECT_GT(w.stats.chunk_count, 3U) << "the sample must span several chunks";
  EXPECT_EQ(j["compression"], json::array({std::string(mcap::compression_name(compression))}));
  ASSERT_EQ(j["channels"].size(), 3U);
  EXPECT_EQ(j["channels"][0]["topic"], "/imu");
  EXPECT_EQ(j["channels"][0]["message_encoding"], "shmbus");
  EXPECT_EQ(j["channels"][0]["schema_name"], "shmbus_msgs/Imu");
  EXPECT_EQ(j["channels"][0]["schema_encoding"], "shmbus.msg");
  EXPECT_EQ(j["channels"][0]["schema_data"], "Header header\nfloat64[3] gyro\n");
  EXPECT_EQ(j["channels"][0]["metadata"]["type_name"], "shmbus_msgs/Imu");
  EXPECT_EQ(j["channels"][1]["schema_name"], "shmbus_msgs/Image");
  EXPECT_EQ(j["channels"][2]["schema_name"], "shmbus_msgs/Imu");
  ASSERT_EQ(j["metadata"].size(), 2U);
  EXPECT_EQ(j["metadata"][0]["name"], "shmbus.recording");
  EXPECT_EQ(j["metadata"][0]["metadata"]["host"], "test-host");
  const json& s = j["statistics"];
  EXPECT_EQ(s["message_count"].get<std::uint64_t>(), w.stats.message_count);
  EXPECT_EQ(s["channel_count"], 3);
  EXPECT_EQ(s["schema_count"], 2);
  EXPECT_EQ(s["metadata_count"], 2);
  EXPECT_EQ(s["chunk_count"].get<std::uint32_t>(), w.stats.chunk_count);
  EXPECT_EQ(s["message_start_time"], std::to_string(w.stats.message_start_time));
  EXPECT_EQ(s["message_end_time"], std::to_string(w.stats.message_end_time));
  EXPECT_EQ(s["channel_message_counts"]["1"].get<std::uint64_t>(), w.counts.at("/camera"));
  EXPECT_NE(j["data_section_crc"].get<std::uint32_t>(), 0U);
  EXPECT_EQ(j["data_section_crc"], j["data_section_crc_computed"]) << "the data section CRC covers bytes 0 to data end";
  for (const char* reader : {"indexed", "stream"}) {
    SCOPED_TRACE(reader);
    for (const auto& [topic, n] : w.counts) {
      EXPECT_EQ(j[reader]["counts"][topic].get<std::uint64_t>(), n) << topic;
      EXPECT_EQ(j[reader]["crc"][topic].get<std::uint32_t>(), w.crc.at(topic)) << topic << ": payload bytes differ";
      EXPECT_EQ(j[reader]["first_sequence"][topic], 0) << topic;
      EXPECT_EQ(j[reader]["last_sequence"][topic].get<std::uint32_t>(), w.last_sequence.at(topic)) << topic;
    }
  }
  EXPECT_TRUE(j["indexed"]["in_order"].get<bool>());
  EXPECT_TRUE(j["stream"]["done"].get<bool>());
}

/// The CRC of every topic's payloads, as the project's own reader reads them.
std::map<std::string, std::uint32_t> crc_per_topic(const std::string& path) {
  mcap::Reader r(path);
  std::map<std::string, std::uint32_t> crc;
  r.read_messages([&](const mcap::MessageView& m) {
    const std::string& topic = r.info().channel(m.channel_id)->topic;
    crc[topic] = mcap::crc32(m.data, crc[topic]);
    return true;
  });
  return crc;
}

class McapTest : public ::testing::TestWithParam<mcap::Compression> {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_ = "/tmp/shmbus_mcap_test_" + std::to_string(::getpid()) + ".mcap";
};

}  // namespace

TEST_P(McapTest, ReferenceReadersReadEverythingWritten) {
  const Written w = write_sample(path_, GetParam(), 16 * 1024);
  expect_read_back(path_, GetParam(), w);
}

INSTANTIATE_TEST_SUITE_P(Compressions, McapTest,
                         ::testing::Values(mcap::Compression::kNone, mcap::Compression::kLz4, mcap::Compression::kZstd),
                         [](const auto& info) {
                           const auto name = mcap::compression_name(info.param);
                           return name.empty() ? std::string("none") : std::string(name);
                         });

// Uncompressed, a message that fills a chunk by itself is written in a
// chunk of its own straight from the caller's buffer: the /camera messages
// (3000 B) here, between chunks of the small ones.
TEST_F(McapTest, MessagesLargerThanAChunkAreReadBackWhole) {
  const Written w = write_sample(path_, mcap::Compression::kNone, 2048);
  expect_read_back(path_, mcap::Compression::kNone, w);
  EXPECT_GT(w.stats.chunk_count, w.counts.at("/camera")) << "one chunk per large message, and more";
  EXPECT_EQ(crc_per_topic(path_), w.crc) << "the project's own reader reads the same bytes";
}

// A message read in place from a ring and overwritten meanwhile is taken
// back: the file, its indexes, CRCs and statistics hold only the others,
// both for messages in a shared chunk and for one that is its own chunk.
TEST_P(McapTest, MessagesTakenBackLeaveNoTrace) {
  const std::uint64_t chunk = GetParam() == mcap::Compression::kNone ? 2048 : 16 * 1024;
  const Written w = write_sample(path_, GetParam(), chunk, 7);
  std::uint64_t taken_back = 0;  // /camera (channel 1) is written every 10th tick t: (t + 1) % 7 == 0 are taken back
  for (std::uint64_t t = 0; t < 3000; t += 10) taken_back += (t + 1) % 7 == 0 ? 1 : 0;
  EXPECT_EQ(w.counts.at("/camera"), 300U - taken_back);
  expect_read_back(path_, GetParam(), w);
  EXPECT_EQ(crc_per_topic(path_), w.crc) << "the project's own reader reads the same bytes";
}

TEST_F(McapTest, AFlippedByteInAChunkFailsTheReferenceCrcCheck) {
  write_sample(path_, mcap::Compression::kNone, 16 * 1024);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);  // inside the first chunk's records
    char c = 0;
    f.read(&c, 1);
    f.seekp(2000);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  const ReaderRun r = read_with_mcap_core(path_);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Incorrect chunk CRC"), std::string::npos) << r.out;
}

TEST_F(McapTest, AnUnwritableFileIsOneErrorNamingIt) {
  try {
    mcap::Writer w("/nonexistent-dir/x.mcap");
    FAIL() << "must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kResource);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.mcap"), std::string::npos) << e.what();
  }
}

TEST_F(McapTest, AMessageOnAnUnknownChannelIsRefused) {
  mcap::Writer w(path_);
  const std::byte b[1]{};
  EXPECT_THROW(w.write({7, 0, 1, 1, b}), Error);
}

// The project's own reader: the summary as written, every message back in
// log-time order with its bytes.
TEST_P(McapTest, OwnReaderReadsBackEverythingInLogTimeOrder) {
  const Written w = write_sample(path_, GetParam(), 16 * 1024);
  mcap::Reader r(path_);
  const mcap::FileInfo& info = r.info();
  EXPECT_EQ(info.profile, "shmbus");
  EXPECT_EQ(info.compression, mcap::compression_name(GetParam()));
  ASSERT_EQ(info.channels.size(), 3U);
  EXPECT_EQ(info.channels[1].topic, "/camera");
  ASSERT_NE(info.schema(info.channels[1].schema_id), nullptr);
  EXPECT_EQ(info.schema(info.channels[1].schema_id)->name, "shmbus_msgs/Image");
  EXPECT_EQ(info.statistics.message_count, w.stats.message_count);
  EXPECT_EQ(info.statistics.chunk_count, w.stats.chunk_count);
  ASSERT_EQ(info.metadata.size(), 2U);
  EXPECT_EQ(info.metadata[1].name, "shmbus.losses");
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, std::uint32_t> crc;
  std::uint64_t last = 0;
  bool ordered = true;
  r.read_messages([&](const mcap::MessageView& m) {
    const std::string& topic = info.channel(m.channel_id)->topic;
    ++counts[topic];
    crc[topic] = mcap::crc32(m.data, crc[topic]);
    ordered = ordered && m.log_time >= last;
    last = m.log_time;
    return true;
  });
  EXPECT_TRUE(ordered);
  EXPECT_EQ(counts, w.counts);
  EXPECT_EQ(crc, w.crc);
}

TEST_F(McapTest, TruncatedAndCorruptFilesAreOneLineNamingTheOffset) {
  write_sample(path_, mcap::Compression::kZstd, 16 * 1024);
  const auto size = std::filesystem::file_size(path_);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size) - 40);  // inside the summary offsets
    const char c = 0x7f;
    f.write(&c, 1);
  }
  try {
    mcap::Reader r(path_);
    FAIL() << "a bad summary CRC must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_NE(std::string(e.what()).find("summary CRC mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path_ + ": not a valid MCAP file at byte "), std::string::npos) << e.what();
  }
  std::filesystem::resize_file(path_, size / 2);
  try {
    mcap::Reader r(path_);
    FAIL() << "a truncated file must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_NE(std::string(e.what()).find("no MCAP magic at the end"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mcap::Reader("/nonexistent.mcap"), Error);
}

TEST_P(McapTest, AChunkClaimingMoreThanItCanHoldIsRefusedBeforeAllocating) {
  write_sample(path_, GetParam(), 16 * 1024);
  // The first chunk record (op 0x06) after the magic: its uncompressed_size
  // follows the op, the length and the two times.
  std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
  std::uint64_t at = 8;
  for (;;) {
    unsigned char head[9];
    f.seekg(static_cast<std::streamoff>(at));
    ASSERT_TRUE(f.read(reinterpret_cast<char*>(head), 9)) << "no chunk found";
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | head[1 + i];
    if (head[0] == 0x06) break;
    at += 9 + length;
  }
  for (const std::uint64_t claim : {std::uint64_t{1} << 32, std::uint64_t{1} << 62}) {
    f.seekp(static_cast<std::streamoff>(at + 9 + 16));
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((claim >> (8 * i)) & 0xff));
    f.flush();
    mcap::Reader r(path_);
    try {
      r.read_messages([](const mcap::MessageView&) { return true; });
      FAIL() << "a chunk claiming " << claim << " bytes must be refused";
    } catch (const Error& e) {
      // Before: 4 GiB allocated and zeroed, or std::bad_alloc.
      EXPECT_NE(std::string(e.what()).find("a chunk claiming " + std::to_string(claim) + " bytes"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("at byte " + std::to_string(at)), std::string::npos) << e.what();
    }
  }
}

TEST(McapRegressionTest, EveryReproducerTheFuzzerFoundIsRefusedOrRead) {
  // Files fuzz_mcap_reader once crashed on (e.g. an empty stored chunk:
  // memcpy from a null pointer, which UBSan reports in the ASan suite).
  const std::filesystem::path dir = std::filesystem::path(SHMBUS_SOURCE_DIR) / "tests/fuzz/regressions/reader";
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    try {
      mcap::Reader r(entry.path().string());
      r.read_messages([](const mcap::MessageView&) { return true; });
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(entry.path().string()), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(files, 1U);
}
