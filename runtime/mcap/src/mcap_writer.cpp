// The MCAP writer: records serialized little-endian as the specification
// says, messages batched into chunks, each chunk followed by one message
// index per channel in it; the summary repeats schemas and channels and
// holds the statistics and the chunk and metadata indexes, one group per
// opcode, each group located by a summary offset record.
#include <fcntl.h>
#ifdef SHMBUS_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#include <lz4frame.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <tuple>

#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"

namespace shmbus::mcap {

namespace {

/// Appends little-endian fields to a byte vector; records are opened with
/// their opcode and a length placeholder that close() fills in.
class Buffer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { put(v); }
  void u32(std::uint32_t v) { put(v); }
  void u64(std::uint64_t v) { put(v); }
  void raw(std::span<const std::byte> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    raw(std::as_bytes(std::span{s.data(), s.size()}));
  }
  void key_values(const KeyValues& kv) {
    const std::size_t at = open_length32();
    for (const auto& [k, v] : kv) {
      str(k);
      str(v);
    }
    close_length32(at);
  }
  /// Starts a record: opcode and a uint64 length filled in by end().
  std::size_t begin(Op op) {
    u8(static_cast<std::uint8_t>(op));
    const std::size_t at = bytes_.size();
    u64(0);
    return at;
  }
  void end(std::size_t at) { patch<std::uint64_t>(at, bytes_.size() - at - 8); }
  std::size_t open_length32() {
    const std::size_t at = bytes_.size();
    u32(0);
    return at;
  }
  void close_length32(std::size_t at) { patch<std::uint32_t>(at, bytes_.size() - at - 4); }

  [[nodiscard]] std::span<const std::byte> view() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }
  void clear() noexcept { bytes_.clear(); }
  std::vector<std::byte>& storage() noexcept { return bytes_; }

 private:
  template <typename T>
  void put(T v) {
    static_assert(std::endian::native == std::endian::little, "MCAP is little-endian; so is every target we build");
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <typename T>
  void patch(std::size_t at, std::size_t value) {
    const auto v = static_cast<T>(value);
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  std::vector<std::byte> bytes_;
};

struct MetadataIndexEntry {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string name;
};

void write_schema(Buffer& b, const Schema& s) {
  const std::size_t r = b.begin(Op::kSchema);
  b.u16(s.id);
  b.str(s.name);
  b.str(s.encoding);
  b.str(s.data);  // uint32 length-prefixed bytes: the same layout as a string
  b.end(r);
}

void write_channel(Buffer& b, const Channel& c) {
  const std::size_t r = b.begin(Op::kChannel);
  b.u16(c.id);
  b.u16(c.schema_id);
  b.str(c.topic);
  b.str(c.message_encoding);
  b.key_values(c.metadata);
  b.end(r);
}

/// The current errno as text (thread-safe, unlike strerror).
std::string errno_text() { return std::system_category().message(errno); }

}  // namespace

std::uint32_t crc32(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  // ISA-L's folding CRC (carry-less multiplies, 26 GB/s from memory on the
  // CI machine kind against zlib's 5.7): the same CRC-32 as zlib's crc32,
  // chained the same way. At 1 MiB messages zlib's was the recorder's
  // writer thread's largest cost. Without ISA-L (a cross build, see
  // CMakeLists.txt), zlib's, in pieces its 32-bit length takes.
#ifdef SHMBUS_HAVE_ISAL
  return ::crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
#else
  uLong c = crc;
  for (std::size_t at = 0; at < data.size();) {
    const auto n = static_cast<uInt>(std::min<std::size_t>(data.size() - at, 1U << 30));
    c = ::crc32(c, reinterpret_cast<const Bytef*>(data.data() + at), n);
    at += n;
  }
  return static_cast<std::uint32_t>(c);
#endif
}

std::string_view compression_name(Compression c) noexcept {
  switch (c) {
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
    default:
      return "";
  }
}

std::optional<Compression> parse_compression(std::string_view name) noexcept {
  if (name.empty() || name == "none") return Compression::kNone;
  if (name == "lz4") return Compression::kLz4;
  if (name == "zstd") return Compression::kZstd;
  return std::nullopt;
}

bool own_chunk(const WriterOptions& o, std::size_t payload_size) noexcept {
  constexpr std::size_t kHeader = 1 + 8 + 2 + 4 + 8 + 8;  // a Message record without its data
  return o.compression == Compression::kNone && kHeader + payload_size >= o.chunk_size;
}

struct Writer::Impl {
  std::string path;
  WriterOptions options;
  int fd = -1;
  bool closed = false;
  Buffer out;                ///< bytes not yet written to the file
  std::uint64_t offset = 0;  ///< file position of out's first byte
  std::uint32_t data_crc = 0;
  Buffer chunk;  ///< the open chunk's uncompressed records
  std::uint64_t chunk_start = 0;
  std::uint64_t chunk_end = 0;
  std::uint64_t chunk_messages = 0;
  /// Per channel in the open chunk: (log_time, offset in the chunk).
  std::map<std::uint16_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> chunk_index;
  std::vector<std::byte> compressed;
  ZSTD_CCtx* zstd = nullptr;
  std::vector<Schema> schemas;
  std::vector<Channel> channels;
  std::vector<ChunkIndex> chunk_indexes;
  std::vector<MetadataIndexEntry> metadata_indexes;
  std::map<std::uint16_t, std::uint64_t> channel_counts;
  Statistics stats;

  ~Impl() {
    if (zstd != nullptr) ZSTD_freeCCtx(zstd);
    if (fd >= 0) ::close(fd);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Errc::kResource, "mcap file " + path + ": " + what);
  }

  /// File position of the next byte appended to `out`.
  [[nodiscard]] std::uint64_t position() const noexcept { return offset + out.size(); }

  void write_all(std::span<const std::byte> b) {
    while (!b.empty()) {
      const ssize_t n = ::write(fd, b.data(), b.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(std::string("cannot write: ") + errno_text());
      }
      b = b.subspan(static_cast<std::size_t>(n));
    }
  }

  /// Writes `out` to the file; `crc_into` (the data CRC while in the data
  /// section) takes its bytes.
  void flush_out(std::uint32_t* crc_into) {
    if (out.empty()) return;
    if (crc_into != nullptr) *crc_into = crc32(out.view(), *crc_into);
    write_all(out.view());
    offset += out.size();
    out.clear();
  }

  void maybe_flush() {
    if (out.size() >= (4U << 20)) flush_out(&data_crc);
  }

  /// The chunk's records, compressed as configured (or as they are).
  std::span<const std::byte> compress(std::span<const std::byte> records) {
    switch (options.compression) {
      case Compression::kZstd: {
        if (zstd == nullptr) zstd = ZSTD_createCCtx();
        compressed.resize(ZSTD_compressBound(records.size()));
        const std::size_t n = ZSTD_compressCCtx(zstd, compressed.data(), compressed.size(), records.data(),
                                                records.size(), options.zstd_level);
        if (ZSTD_isError(n) != 0U) fail(std::string("zstd: ") + ZSTD_getErrorName(n));
        return {compressed.data(), n};
      }
      case Compression::kLz4: {
        LZ4F_preferences_t prefs{};
        prefs.frameInfo.contentSize = records.size();
        compressed.resize(LZ4F_compressFrameBound(records.size(), &prefs));
        const std::size_t n =
            LZ4F_compressFrame(compressed.data(), compressed.size(), records.data(), records.size(), &prefs);
        if (LZ4F_isError(n) != 0U) fail(std::string("lz4: ") + LZ4F_getErrorName(n));
        return {compressed.data(), n};
      }
      default:
        return records;
    }
  }

  void close_chunk() {
    if (chunk.empty()) return;
    const std::uint32_t uncompressed_crc = crc32(chunk.view());
    const std::span<const std::byte> body = compress(chunk.view());
    const std::span<const std::byte> parts[] = {body};
    emit_chunk(parts, chunk.size(), uncompressed_crc);
  }

  /// Writes a Chunk record whose body is `parts` (the records compressed as
  /// configured, or as they are), then its message indexes from
  /// chunk_index, and indexes it; the chunk state is cleared after.
  /// `unchanged`, when given, is asked once the body is in the file; when it
  /// says false the chunk is taken back out of the file (the caller
  /// restores the statistics) and false is returned.
  bool emit_chunk(std::span<const std::span<const std::byte>> parts, std::uint64_t uncompressed_size,
                  std::uint32_t uncompressed_crc, const std::function<bool()>* unchanged = nullptr) {
    // Taking the chunk back must leave what was written before it: the
    // bytes waiting in out go first.
    if (unchanged != nullptr) flush_out(&data_crc);
    std::uint64_t body_size = 0;
    for (const auto& p : parts) body_size += p.size();
    ChunkIndex idx;
    idx.start_time = chunk_messages != 0 ? chunk_start : 0;
    idx.end_time = chunk_messages != 0 ? chunk_end : 0;
    idx.offset = position();
    idx.compressed_size = body_size;
    idx.uncompressed_size = uncompressed_size;
    idx.compression = compression_name(options.compression);
    const std::size_t r = out.begin(Op::kChunk);
    out.u64(idx.start_time);
    out.u64(idx.end_time);
    out.u64(uncompressed_size);
    out.u32(uncompressed_crc);
    out.str(idx.compression);
    out.u64(body_size);
    // The record's length covers the body, which is written straight from
    // its buffers (no copy into `out`): patch the length to include it.
    const std::uint64_t record_length = out.size() - r - 8 + body_size;
    std::memcpy(out.storage().data() + r, &record_length, sizeof record_length);
    const std::uint32_t crc_before = data_crc;
    flush_out(&data_crc);
    if (options.compression == Compression::kNone) {
      // The body is the records, whose CRC is known: no second pass.
      data_crc =
          static_cast<std::uint32_t>(::crc32_combine(data_crc, uncompressed_crc, static_cast<z_off_t>(body_size)));
    } else {
      for (const auto& p : parts) data_crc = crc32(p, data_crc);
    }
    for (const auto& p : parts) write_all(p);
    offset += body_size;
    if (unchanged != nullptr && !(*unchanged)()) {
      // out was empty before the chunk's header: only the chunk goes.
      const std::uint64_t chunk_at = idx.offset;
      if (::ftruncate(fd, static_cast<off_t>(chunk_at)) != 0 ||
          ::lseek(fd, static_cast<off_t>(chunk_at), SEEK_SET) < 0) {
        fail(std::string("cannot take a chunk back: ") + errno_text());
      }
      offset = chunk_at;
      data_crc = crc_before;
      chunk.clear();
      chunk_index.clear();
      chunk_messages = 0;
      return false;
    }
    idx.length = 1 + 8 + record_length;
    const std::uint64_t index_start = position();
    for (const auto& [channel, entries] : chunk_index) {
      idx.message_index_offsets.emplace_back(channel, position());
      const std::size_t m = out.begin(Op::kMessageIndex);
      out.u16(channel);
      out.u32(static_cast<std::uint32_t>(entries.size() * 16));
      for (const auto& [time, at] : entries) {
        out.u64(time);
        out.u64(at);
      }
      out.end(m);
    }
    idx.message_index_length = position() - index_start;
    chunk_indexes.push_back(std::move(idx));
    ++stats.chunk_count;
    chunk.clear();
    chunk_index.clear();
    chunk_messages = 0;
    maybe_flush();
    return true;
  }

  /// Counts `m` in the open chunk's span and the file's statistics; its
  /// record starts at `at` in the chunk.
  void account(const Message& m, std::uint64_t at) {
    if (chunk_messages == 0) {
      chunk_start = m.log_time;
      chunk_end = m.log_time;
    }
    chunk_start = std::min(chunk_start, m.log_time);
    chunk_end = std::max(chunk_end, m.log_time);
    chunk_index[m.channel_id].emplace_back(m.log_time, at);
    ++chunk_messages;
    Statistics& s = stats;
    s.message_start_time = s.message_count == 0 ? m.log_time : std::min(s.message_start_time, m.log_time);
    s.message_end_time = s.message_count == 0 ? m.log_time : std::max(s.message_end_time, m.log_time);
    ++s.message_count;
    ++channel_counts[m.channel_id];
  }

  /// Appends the Message record's header (opcode, length, fields) to `b`.
  static void message_header(Buffer& b, const Message& m) {
    b.u8(static_cast<std::uint8_t>(Op::kMessage));
    b.u64(2 + 4 + 8 + 8 + m.data.size());
    b.u16(m.channel_id);
    b.u32(m.sequence);
    b.u64(m.log_time);
    b.u64(m.publish_time);
  }

  void write_statistics() {
    const std::size_t r = out.begin(Op::kStatistics);
    out.u64(stats.message_count);
    out.u16(stats.schema_count);
    out.u32(stats.channel_count);
    out.u32(stats.attachment_count);
    out.u32(stats.metadata_count);
    out.u32(stats.chunk_count);
    out.u64(stats.message_start_time);
    out.u64(stats.message_end_time);
    const std::size_t m = out.open_length32();
    for (const auto& [channel, count] : channel_counts) {
      out.u16(channel);
      out.u64(count);
    }
    out.close_length32(m);
    out.end(r);
  }

  void write_chunk_index(const ChunkIndex& c) {
    const std::size_t r = out.begin(Op::kChunkIndex);
    out.u64(c.start_time);
    out.u64(c.end_time);
    out.u64(c.offset);
    out.u64(c.length);
    const std::size_t m = out.open_length32();
    for (const auto& [channel, at] : c.message_index_offsets) {
      out.u16(channel);
      out.u64(at);
    }
    out.close_length32(m);
    out.u64(c.message_index_length);
    out.str(c.compression);
    out.u64(c.compressed_size);
    out.u64(c.uncompressed_size);
    out.end(r);
  }

  void write_summary() {
    flush_out(&data_crc);
    {
      const std::size_t r = out.begin(Op::kDataEnd);
      out.u32(data_crc);
      out.end(r);
    }
    flush_out(nullptr);
    const std::uint64_t summary_start = position();
    std::vector<std::tuple<Op, std::uint64_t, std::uint64_t>> groups;
    auto group = [&](Op op, auto&& body) {
      const std::uint64_t start = position();
      body();
      if (position() != start) groups.emplace_back(op, start, position() - start);
    };
    group(Op::kSchema, [&] {
      for (const auto& s : schemas) write_schema(out, s);
    });
    group(Op::kChannel, [&] {
      for (const auto& c : channels) write_channel(out, c);
    });
    group(Op::kStatistics, [&] { write_statistics(); });
    group(Op::kChunkIndex, [&] {
      for (const auto& c : chunk_indexes) write_chunk_index(c);
    });
    group(Op::kMetadataIndex, [&] {
      for (const auto& m : metadata_indexes) {
        const std::size_t r = out.begin(Op::kMetadataIndex);
        out.u64(m.offset);
        out.u64(m.length);
        out.str(m.name);
        out.end(r);
      }
    });
    const std::uint64_t summary_offset_start = position();
    for (const auto& [op, start, length] : groups) {
      const std::size_t r = out.begin(Op::kSummaryOffset);
      out.u8(static_cast<std::uint8_t>(op));
      out.u64(start);
      out.u64(length);
      out.end(r);
    }
    // The summary CRC covers the summary up to the footer's last field
    // before the CRC itself, the footer's opcode and (fixed) length included.
    out.u8(static_cast<std::uint8_t>(Op::kFooter));
    out.u64(8 + 8 + 4);
    out.u64(summary_start);
    out.u64(summary_offset_start);
    out.u32(crc32(out.view()));
    out.raw(std::as_bytes(std::span{kMagic}));
    flush_out(nullptr);
  }
};

Writer::Writer(const std::string& path, WriterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.path = path;
  w.options = std::move(options);
  if (w.options.chunk_size == 0) w.options.chunk_size = 1;
  w.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd < 0) w.fail(std::string("cannot create it: ") + errno_text() + "; check the directory");
  w.out.raw(std::as_bytes(std::span{kMagic}));
  const std::size_t r = w.out.begin(Op::kHeader);
  w.out.str(w.options.profile);
  w.out.str(w.options.library);
  w.out.end(r);
}

Writer::~Writer() {
  try {
    close();
  } catch (const Error&) {
    // close() reports errors to those who call it.
  }
}

std::uint16_t Writer::add_schema(std::string name, std::string encoding, std::string data) {
  Impl& w = *impl_;
  Schema s{static_cast<std::uint16_t>(w.schemas.size() + 1), std::move(name), std::move(encoding), std::move(data)};
  write_schema(w.chunk, s);  // in the chunk: before any message that uses it
  w.schemas.push_back(std::move(s));
  w.stats.schema_count = static_cast<std::uint16_t>(w.schemas.size());
  return w.schemas.back().id;
}

std::uint16_t Writer::add_channel(std::uint16_t schema_id, std::string topic, std::string message_encoding,
                                  KeyValues metadata) {
  Impl& w = *impl_;
  Channel c{static_cast<std::uint16_t>(w.channels.size()), schema_id, std::move(topic), std::move(message_encoding),
            std::move(metadata)};
  write_channel(w.chunk, c);
  w.channels.push_back(std::move(c));
  w.stats.channel_count = static_cast<std::uint32_t>(w.channels.size());
  return w.channels.back().id;
}

void Writer::write(const Message& m) { write(m, {}); }

bool Writer::write(const Message& m, const std::function<bool()>& unchanged) {
  Impl& w = *impl_;
  if (m.channel_id >= w.channels.size()) {
    throw Error(Errc::kInvalidArgument,
                "mcap file " + w.path + ": message on channel id " + std::to_string(m.channel_id) + " never added");
  }
  const bool own_chunk = mcap::own_chunk(w.options, m.data.size());
  if (own_chunk) w.close_chunk();
  // What account() changes, for taking the message back (three words:
  // saved on every write, taken back rarely).
  const std::uint64_t count_before = w.stats.message_count;
  const std::uint64_t start_before = w.stats.message_start_time;
  const std::uint64_t end_before = w.stats.message_end_time;
  const std::uint64_t chunk_start_before = w.chunk_start;
  const std::uint64_t chunk_end_before = w.chunk_end;
  const std::size_t chunk_size_before = w.chunk.size();
  const auto take_back = [&] {
    w.stats.message_count = count_before;
    w.stats.message_start_time = start_before;
    w.stats.message_end_time = end_before;
    if (--w.channel_counts[m.channel_id] == 0) w.channel_counts.erase(m.channel_id);
    if (own_chunk) return;  // emit_chunk cleared the chunk's state
    w.chunk.storage().resize(chunk_size_before);
    auto& entries = w.chunk_index[m.channel_id];
    entries.pop_back();
    if (entries.empty()) w.chunk_index.erase(m.channel_id);
    w.chunk_start = chunk_start_before;
    w.chunk_end = chunk_end_before;
    --w.chunk_messages;
  };
  if (own_chunk) {
    // A message that fills a chunk by itself goes into a chunk of its own,
    // written from the caller's buffer: no copy into the chunk.
    w.account(m, 0);
    Buffer head;
    Impl::message_header(head, m);
    const std::uint32_t crc = crc32(m.data, crc32(head.view()));
    const std::span<const std::byte> parts[] = {head.view(), m.data};
    if (!w.emit_chunk(parts, head.size() + m.data.size(), crc, unchanged ? &unchanged : nullptr)) {
      take_back();
      return false;
    }
    return true;
  }
  w.account(m, w.chunk.size());
  Impl::message_header(w.chunk, m);
  w.chunk.raw(m.data);
  if (unchanged && !unchanged()) {
    take_back();
    return false;
  }
  if (w.chunk.size() >= w.options.chunk_size) w.close_chunk();
  return true;
}

void Writer::write_metadata(const Metadata& metadata) {
  Impl& w = *impl_;
  MetadataIndexEntry idx{w.position(), 0, metadata.name};
  const std::size_t r = w.out.begin(Op::kMetadata);
  w.out.str(metadata.name);
  w.out.key_values(metadata.values);
  w.out.end(r);
  idx.length = w.position() - idx.offset;
  w.metadata_indexes.push_back(std::move(idx));
  ++w.stats.metadata_count;
  w.maybe_flush();
}

void Writer::flush_chunk() {
  impl_->close_chunk();
  impl_->flush_out(&impl_->data_crc);
}

void Writer::close() {
  Impl& w = *impl_;
  if (w.closed) return;
  w.closed = true;
  w.close_chunk();
  w.write_summary();
  if (::fsync(w.fd) != 0 && errno != EINVAL) w.fail(std::string("cannot sync: ") + errno_text());
  if (::close(w.fd) != 0) {
    w.fd = -1;
    w.fail(std::string("cannot close: ") + errno_text());
  }
  w.fd = -1;
}

std::uint64_t Writer::bytes() const noexcept { return impl_->position(); }
const Statistics& Writer::statistics() const noexcept { return impl_->stats; }
const std::string& Writer::path() const noexcept { return impl_->path; }

}  // namespace shmbus::mcap
