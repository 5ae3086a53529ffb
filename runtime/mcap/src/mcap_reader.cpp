// The MCAP reader: maps the file, checks its frame (magic, footer, summary
// CRC), reads the summary, and merges the chunks' messages into log-time
// order, loading a chunk only when its first message is due.
#include <fcntl.h>
#include <lz4frame.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <system_error>
#include <tuple>

#include "shmbus/error.hpp"
#include "shmbus/mcap.hpp"

namespace shmbus::mcap {

namespace {

constexpr std::uint64_t kFooterRecord = 1 + 8 + 8 + 8 + 4;
/// The most a zstd chunk can expand (an RLE block: 4 bytes for 128 KiB).
constexpr std::uint64_t kMaxZstdRatio = 32768;
/// The largest chunk read: the recorder's chunks are a few MiB, and a
/// chunk holds at least one message (a camera frame of tens of MiB).
constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{1} << 30;

/// One message of a loaded chunk: its log time and where its record starts.
struct MessageRef {
  std::uint64_t log_time = 0;
  std::size_t at = 0;
};

struct LoadedChunk {
  std::vector<std::byte> records;
  std::vector<MessageRef> messages;  ///< sorted by log time (stable)
};

}  // namespace

/// Reads fields from a span, naming the file offset of whatever is wrong.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::uint64_t file_offset,
         const std::function<void(std::uint64_t, const std::string&)>& bad)
      : bytes_(bytes), base_(file_offset), bad_(bad) {}

  std::uint8_t u8() { return get<std::uint8_t>(); }
  std::uint16_t u16() { return get<std::uint16_t>(); }
  std::uint32_t u32() { return get<std::uint32_t>(); }
  std::uint64_t u64() { return get<std::uint64_t>(); }
  std::span<const std::byte> take(std::uint64_t n) {
    need(n);
    auto s = bytes_.subspan(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  /// The next `n` bytes as a cursor of their own, whose offsets are still
  /// the file's (where they start is read before the bytes are taken).
  Cursor sub(std::uint64_t n) {
    const std::uint64_t start = offset();
    return {take(n), start, bad_};
  }
  std::string str() {
    const auto s = take(u32());
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }
  KeyValues key_values() {
    Cursor in = sub(u32());
    KeyValues kv;
    while (!in.done()) {
      std::string k = in.str();
      kv.emplace_back(std::move(k), in.str());
    }
    return kv;
  }
  [[nodiscard]] bool done() const noexcept { return at_ >= bytes_.size(); }
  [[nodiscard]] std::uint64_t offset() const noexcept { return base_ + at_; }
  [[nodiscard]] std::size_t position() const noexcept { return at_; }

 private:
  void need(std::uint64_t n) {
    if (n > bytes_.size() - at_) {
      bad_(offset(), "a field runs past its record (" + std::to_string(n) + " bytes wanted, " +
                         std::to_string(bytes_.size() - at_) + " left)");
    }
  }
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::span<const std::byte> bytes_;
  std::uint64_t base_;
  std::size_t at_ = 0;
  const std::function<void(std::uint64_t, const std::string&)>& bad_;
};

namespace {

Schema read_schema(Cursor& c) {
  Schema s;
  s.id = c.u16();
  s.name = c.str();
  s.encoding = c.str();
  s.data = c.str();
  return s;
}

Channel read_channel(Cursor& c) {
  Channel ch;
  ch.id = c.u16();
  ch.schema_id = c.u16();
  ch.topic = c.str();
  ch.message_encoding = c.str();
  ch.metadata = c.key_values();
  return ch;
}

Metadata read_metadata(Cursor& c) {
  Metadata m;
  m.name = c.str();
  m.values = c.key_values();
  return m;
}

}  // namespace

const Channel* FileInfo::channel(std::uint16_t id) const noexcept {
  for (const auto& c : channels) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

const Schema* FileInfo::schema(std::uint16_t id) const noexcept {
  for (const auto& s : schemas) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

struct Reader::Impl {
  FileInfo info;
  int fd = -1;
  const std::byte* base = nullptr;
  std::size_t size = 0;
  std::vector<ChunkIndex>& chunks = info.chunks;
  /// Where next_message() is: the chunks merged by log time through a heap
  /// of each loaded chunk's next message; a chunk is loaded once the heap's
  /// earliest message is not before the chunk's start, and freed once read.
  struct Next {
    std::uint64_t log_time;
    std::size_t chunk;
    std::size_t index;
    bool operator>(const Next& o) const {
      if (log_time != o.log_time) return log_time > o.log_time;
      return chunk != o.chunk ? chunk > o.chunk : index > o.index;
    }
  };
  struct Stream {
    std::priority_queue<Next, std::vector<Next>, std::greater<>> heap;
    std::vector<LoadedChunk> loaded;
    std::size_t next_chunk = 0;
    std::optional<std::size_t> drained;  ///< a chunk whose last message was handed out
  } stream;
  std::function<void(std::uint64_t, const std::string&)> bad = [this](std::uint64_t at, const std::string& what) {
    throw Error(Errc::kConfig, info.path + ": not a valid MCAP file at byte " + std::to_string(at) + ": " + what);
  };

  ~Impl() {
    if (base != nullptr) ::munmap(const_cast<std::byte*>(base), size);
    if (fd >= 0) ::close(fd);
  }

  [[nodiscard]] std::span<const std::byte> bytes(std::uint64_t from, std::uint64_t n) const {
    if (from > size || n > size - from) {
      bad(from, "a record reaches past the end of the file (" + std::to_string(size) + " bytes)");
    }
    return {base + from, static_cast<std::size_t>(n)};
  }

  /// Drops the mapping's pages of [from, from + n) that were read (whole
  /// pages inside the range): a file read once through is not kept in the
  /// process's memory, only in the page cache. The bytes read back as
  /// before if asked again.
  void release(std::uint64_t from, std::uint64_t n) const noexcept {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t begin = (from + page - 1) / page * page;
    const std::uint64_t end = std::min<std::uint64_t>(from + n, size) / page * page;
    if (end > begin) ::madvise(const_cast<std::byte*>(base) + begin, end - begin, MADV_DONTNEED);
  }

  /// The record at `at`: its opcode and its content.
  std::pair<Op, std::span<const std::byte>> record(std::uint64_t at) const {
    Cursor c(bytes(at, 9), at, bad);
    const auto op = static_cast<Op>(c.u8());
    const std::uint64_t length = c.u64();
    return {op, bytes(at + 9, length)};
  }

  /// Maps the file; `min_size`: fewer bytes cannot be what is asked for.
  void open_file(std::size_t min_size = 8 + 9 + kFooterRecord + 8) {
    fd = ::open(info.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      throw Error(e == ENOENT ? Errc::kNotFound : Errc::kResource,
                  info.path + ": cannot open it: " + std::system_category().message(e));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw Error(Errc::kResource, info.path + ": cannot stat it");
    size = static_cast<std::size_t>(st.st_size);
    info.bytes = size;
    if (size < min_size) bad(0, "too short to be an MCAP file (" + std::to_string(size) + " bytes)");
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) throw Error(Errc::kResource, info.path + ": cannot map it");
    base = static_cast<const std::byte*>(m);
  }

  void check_frame(std::uint64_t& summary_start, std::uint64_t& summary_offset_start) {
    read_header();
    if (std::memcmp(base + size - 8, kMagic, 8) != 0) {
      bad(size - 8, "no MCAP magic at the end (an unfinished recording? shmtool bag recover rebuilds it)");
    }
    const std::uint64_t footer_at = size - 8 - kFooterRecord;
    const auto [op, footer] = record(footer_at);
    if (op != Op::kFooter || footer.size() != 20) bad(footer_at, "no footer record before the end magic");
    Cursor f(footer, footer_at + 9, bad);
    summary_start = f.u64();
    summary_offset_start = f.u64();
    const std::uint32_t summary_crc = f.u32();
    if (summary_start == 0) bad(footer_at, "no summary section (shmtool bag recover rebuilds the index)");
    if (summary_start > footer_at) bad(footer_at, "the footer points past itself for the summary");
    if (summary_crc != 0) {
      const std::uint32_t crc = crc32(bytes(summary_start, footer_at + 1 + 8 + 16 - summary_start));
      if (crc != summary_crc)
        bad(summary_start,
            "summary CRC mismatch (file " + std::to_string(summary_crc) + ", computed " + std::to_string(crc) + ")");
    }
  }

  /// The magic and the header record; returns where the next record starts.
  std::uint64_t read_header() {
    if (std::memcmp(base, kMagic, 8) != 0) bad(0, "no MCAP magic at the start");
    const auto [op, header] = record(8);
    if (op != Op::kHeader) bad(8, "the first record is not a header");
    Cursor h(header, 17, bad);
    info.profile = h.str();
    info.library = h.str();
    return 8 + 9 + header.size();
  }

  void read_summary(std::uint64_t start, std::uint64_t end) {
    std::vector<std::uint64_t> metadata_at;
    std::vector<std::string> compressions;
    for (std::uint64_t at = start; at < end;) {
      const auto [op, content] = record(at);
      Cursor c(content, at + 9, bad);
      switch (op) {
        case Op::kSchema:
          info.schemas.push_back(read_schema(c));
          break;
        case Op::kChannel:
          info.channels.push_back(read_channel(c));
          break;
        case Op::kStatistics: {
          Statistics& s = info.statistics;
          s.message_count = c.u64();
          s.schema_count = c.u16();
          s.channel_count = c.u32();
          s.attachment_count = c.u32();
          s.metadata_count = c.u32();
          s.chunk_count = c.u32();
          s.message_start_time = c.u64();
          s.message_end_time = c.u64();
          Cursor m = c.sub(c.u32());
          while (!m.done()) {
            const std::uint16_t id = m.u16();
            s.channel_message_counts.emplace_back(id, m.u64());
          }
          break;
        }
        case Op::kChunkIndex: {
          ChunkIndex r;
          r.start_time = c.u64();
          r.end_time = c.u64();
          r.offset = c.u64();
          r.length = c.u64();
          const std::uint32_t offsets_length = c.u32();
          const std::uint64_t offsets_at = c.offset();
          Cursor offsets(c.take(offsets_length), offsets_at, bad);
          while (!offsets.done()) {
            const std::uint16_t id = offsets.u16();
            r.message_index_offsets.emplace_back(id, offsets.u64());
          }
          r.message_index_length = c.u64();
          r.compression = c.str();
          r.compressed_size = c.u64();
          r.uncompressed_size = c.u64();
          compressions.push_back(r.compression);
          chunks.push_back(std::move(r));
          break;
        }
        case Op::kMetadataIndex:
          metadata_at.push_back(c.u64());
          break;
        default:
          break;  // records a later writer may add: skipped, as the specification asks
      }
      at += 9 + content.size();
    }
    std::sort(compressions.begin(), compressions.end());
    compressions.erase(std::unique(compressions.begin(), compressions.end()), compressions.end());
    info.compression = compressions.size() == 1 ? compressions[0] : compressions.empty() ? "" : "mixed";
    for (const std::uint64_t at : metadata_at) {
      const auto [op, content] = record(at);
      if (op != Op::kMetadata) bad(at, "a metadata index points at another record");
      Cursor c(content, at + 9, bad);
      info.metadata.push_back(read_metadata(c));
    }
    std::stable_sort(chunks.begin(), chunks.end(), [](const ChunkIndex& a, const ChunkIndex& b) {
      return a.start_time != b.start_time ? a.start_time < b.start_time : a.offset < b.offset;
    });
  }

  /// Decompresses and checks one chunk; indexes its messages.
  LoadedChunk load(const ChunkIndex& ref) const {
    const auto [op, content] = record(ref.offset);
    if (op != Op::kChunk) bad(ref.offset, "a chunk index points at another record");
    Cursor c(content, ref.offset + 9, bad);
    c.u64();
    c.u64();
    const std::uint64_t uncompressed_size = c.u64();
    const std::uint32_t crc = c.u32();
    const std::string compression = c.str();
    const std::uint64_t body_at = c.offset() + 8;
    const auto body = c.take(c.u64());
    // What a chunk claims is bounded before anything is allocated: stored
    // chunks hold what they claim; zstd gives at most 32768 bytes per byte
    // (an RLE block: 4 bytes for 128 KiB), lz4 at most 255.
    const std::uint64_t ratio = compression.empty() ? 1 : compression == "lz4" ? 255 : kMaxZstdRatio;
    if (uncompressed_size > std::max<std::uint64_t>(body.size(), 64) * ratio || uncompressed_size > kMaxChunkBytes) {
      bad(ref.offset, "a chunk claiming " + std::to_string(uncompressed_size) + " bytes from " +
                          std::to_string(body.size()) + " (" + (compression.empty() ? "none" : compression) +
                          "): more than it can hold; the file is damaged");
    }
    LoadedChunk out;
    out.records.resize(static_cast<std::size_t>(uncompressed_size));
    if (compression.empty()) {
      if (body.size() != uncompressed_size) bad(body_at, "an uncompressed chunk of the wrong size");
      if (!body.empty())
        std::memcpy(out.records.data(), body.data(), body.size());  // an empty vector's data() may be null
    } else if (compression == "zstd") {
      const std::size_t n = ZSTD_decompress(out.records.data(), out.records.size(), body.data(), body.size());
      if (ZSTD_isError(n) != 0U || n != uncompressed_size) bad(body_at, "a zstd chunk that does not decompress");
    } else if (compression == "lz4") {
      LZ4F_dctx* dctx = nullptr;
      LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION);
      std::size_t produced = 0;
      std::size_t consumed = 0;
      std::size_t rc = 1;
      while (rc != 0 && consumed < body.size() && produced < out.records.size()) {
        std::size_t dst = out.records.size() - produced;
        std::size_t src = body.size() - consumed;
        rc = LZ4F_decompress(dctx, out.records.data() + produced, &dst, body.data() + consumed, &src, nullptr);
        if (LZ4F_isError(rc) != 0U) break;
        produced += dst;
        consumed += src;
      }
      LZ4F_freeDecompressionContext(dctx);
      if (LZ4F_isError(rc) != 0U || produced != uncompressed_size)
        bad(body_at, "an lz4 chunk that does not decompress");
    } else {
      bad(body_at, "a chunk compressed with \"" + compression + "\" (zstd, lz4 or none are read)");
    }
    if (crc != 0 && crc32(out.records) != crc) bad(ref.offset, "chunk CRC mismatch");
    release(ref.offset, ref.length);
    Cursor r(out.records, 0, bad);
    while (!r.done()) {
      const std::size_t at = r.position();
      const auto op_in = static_cast<Op>(r.u8());
      const std::uint64_t length = r.u64();
      const auto content_in = r.take(length);
      if (op_in == Op::kMessage) {
        Cursor m(content_in, 0, bad);
        m.u16();
        m.u32();
        out.messages.push_back({m.u64(), at});
      }
    }
    std::stable_sort(out.messages.begin(), out.messages.end(),
                     [](const MessageRef& a, const MessageRef& b) { return a.log_time < b.log_time; });
    return out;
  }
};

Reader::Reader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.info.path = path;
  r.open_file();
  std::uint64_t summary_start = 0;
  std::uint64_t summary_offset_start = 0;
  r.check_frame(summary_start, summary_offset_start);
  const std::uint64_t footer_at = r.size - 8 - kFooterRecord;
  r.read_summary(summary_start, summary_offset_start != 0 ? summary_offset_start : footer_at);
}

Reader::~Reader() = default;

const FileInfo& Reader::info() const noexcept { return impl_->info; }

void Reader::read_messages(const std::function<bool(const MessageView&)>& f) {
  impl_->stream = {};
  MessageView v;
  while (next_message(v)) {
    if (!f(v)) break;
  }
  impl_->stream = {};
}

bool Reader::next_message(MessageView& v) {
  Impl& r = *impl_;
  Impl::Stream& st = r.stream;
  if (st.loaded.empty()) st.loaded.resize(r.chunks.size());
  if (st.drained) {
    st.loaded[*st.drained] = LoadedChunk{};  // the last view into it is gone: free its memory
    st.drained.reset();
  }
  while (st.next_chunk < r.chunks.size() &&
         (st.heap.empty() || r.chunks[st.next_chunk].start_time <= st.heap.top().log_time)) {
    st.loaded[st.next_chunk] = r.load(r.chunks[st.next_chunk]);
    if (!st.loaded[st.next_chunk].messages.empty()) {
      st.heap.push({st.loaded[st.next_chunk].messages[0].log_time, st.next_chunk, 0});
    }
    ++st.next_chunk;
  }
  if (st.heap.empty()) return false;
  const Impl::Next n = st.heap.top();
  st.heap.pop();
  const LoadedChunk& chunk = st.loaded[n.chunk];
  Cursor c(std::span<const std::byte>(chunk.records).subspan(chunk.messages[n.index].at + 9), 0, r.bad);
  v.channel_id = c.u16();
  v.sequence = c.u32();
  v.log_time = c.u64();
  v.publish_time = c.u64();
  std::uint64_t length = 0;
  std::memcpy(&length, chunk.records.data() + chunk.messages[n.index].at + 1, sizeof length);
  v.data = c.take(length - 22);
  if (n.index + 1 < chunk.messages.size()) {
    st.heap.push({chunk.messages[n.index + 1].log_time, n.chunk, n.index + 1});
  } else {
    st.drained = n.chunk;
  }
  return true;
}

namespace {

/// Copies what a damaged file's data section holds, record by record, into
/// a new file. `File` is Reader::Impl, which only recover() may name.
template <class File>
class Recovery {
 public:
  Recovery(File& r, std::string out, const RecoverProgress& progress, std::string library)
      : r_(r), out_(std::move(out)), progress_(progress), library_(std::move(library)) {}

  RecoverReport run() {
    std::uint64_t at = r_.read_header();
    while (report_.stopped_because.empty() && next(at)) {
      if (progress_) progress_(at, r_.size);
    }
    report_.valid_bytes = at;
    writer("").close();
    return report_;
  }

 private:
  /// Copies the record at `at` and moves past it; false at the end of the
  /// data section or where it stops (report_.stopped_because says why).
  bool next(std::uint64_t& at) {
    if (r_.size - at < 9) {
      if (at != r_.size) stop("a record header is cut short at byte " + std::to_string(at));
      return false;
    }
    Cursor head(r_.bytes(at, 9), at, r_.bad);
    const auto op = static_cast<Op>(head.u8());
    const std::uint64_t length = head.u64();
    if (length > r_.size - at - 9) {
      stop("the record at byte " + std::to_string(at) + " is cut short (" + std::to_string(length) + " bytes, " +
           std::to_string(r_.size - at - 9) + " in the file)");
      return false;
    }
    if (op == Op::kDataEnd || op == Op::kFooter) return false;  // the data section is whole
    try {
      Cursor c(r_.bytes(at + 9, length), at + 9, r_.bad);
      if (op == Op::kSchema) add_schema(read_schema(c));
      if (op == Op::kChannel) add_channel(read_channel(c));
      if (op == Op::kMetadata) add_metadata(read_metadata(c));
      if (op == Op::kChunk) copy_chunk(at, c);
    } catch (const Error& e) {
      if (e.code() != Errc::kConfig) throw;
      stop(e.what());
      return false;
    }
    at += 9 + length;
    return true;
  }

  /// The output, made at the first record that needs it; the chunks'
  /// compression is kept (the first chunk's; none before one).
  Writer& writer(const std::string& compression) {
    if (!w_) {
      WriterOptions o;
      o.profile = r_.info.profile;
      o.library = library_;
      o.compression = parse_compression(compression).value_or(Compression::kZstd);
      w_.emplace(out_, o);
      for (const auto& m : early_metadata_) w_->write_metadata(m);
    }
    return *w_;
  }

  void add_schema(const Schema& s) {
    if (schema_ids_.count(s.id) == 0) schema_ids_[s.id] = writer("").add_schema(s.name, s.encoding, s.data);
  }

  void add_channel(const Channel& c) {
    if (channel_ids_.count(c.id) != 0) return;
    const auto schema = schema_ids_.find(c.schema_id);
    channel_ids_[c.id] = writer("").add_channel(schema != schema_ids_.end() ? schema->second : 0, c.topic,
                                                c.message_encoding, c.metadata);
  }

  void add_metadata(Metadata m) {
    if (w_) {
      w_->write_metadata(m);
    } else {
      early_metadata_.push_back(std::move(m));
    }
    ++report_.metadata;
  }

  /// The chunk at `at` (`c` at its content): its schemas, channels and
  /// messages into the output.
  void copy_chunk(std::uint64_t at, Cursor& c) {
    ChunkIndex ref;
    ref.offset = at;
    const LoadedChunk chunk = r_.load(ref);
    Cursor records(chunk.records, 0, r_.bad);
    c.u64();
    c.u64();
    c.u64();
    c.u32();
    Writer& out_file = writer(c.str());
    while (!records.done()) {
      const auto op = static_cast<Op>(records.u8());
      const auto content = records.take(records.u64());
      Cursor inner(content, 0, r_.bad);
      if (op == Op::kSchema) add_schema(read_schema(inner));
      if (op == Op::kChannel) add_channel(read_channel(inner));
      if (op != Op::kMessage) continue;
      Message m;
      const auto channel = channel_ids_.find(inner.u16());
      if (channel == channel_ids_.end()) r_.bad(at, "a message on a channel the file never declared");
      m.channel_id = channel->second;
      m.sequence = inner.u32();
      m.log_time = inner.u64();
      m.publish_time = inner.u64();
      m.data = inner.take(content.size() - inner.position());
      ++report_.messages;
      out_file.write(m);
    }
    ++report_.chunks;
  }

  void stop(const std::string& why) { report_.stopped_because = why; }

  File& r_;
  std::string out_;
  const RecoverProgress& progress_;
  RecoverReport report_;
  std::optional<Writer> w_;
  std::map<std::uint16_t, std::uint16_t> schema_ids_;   ///< in -> out
  std::map<std::uint16_t, std::uint16_t> channel_ids_;  ///< in -> out
  std::vector<Metadata> early_metadata_;                ///< before the writer exists
  std::string library_;                                 ///< the output's library field
};

}  // namespace

RecoverReport recover(const std::string& in, const std::string& out, const RecoverProgress& progress,
                      const std::string& library) {
  Reader::Impl r;
  r.info.path = in;
  r.open_file(8 + 9);
  return Recovery<Reader::Impl>(r, out, progress, library).run();
}

namespace {

/// A fault as Impl::bad raises it while the doctor walks.
struct Thrown {
  std::uint64_t offset;
  std::string what;
};

std::string record_name(Op op) {
  switch (op) {
    case Op::kHeader:
      return "header";
    case Op::kFooter:
      return "footer";
    case Op::kSchema:
      return "schema";
    case Op::kChannel:
      return "channel";
    case Op::kMessage:
      return "message";
    case Op::kChunk:
      return "chunk";
    case Op::kMessageIndex:
      return "message index";
    case Op::kChunkIndex:
      return "chunk index";
    case Op::kAttachment:
      return "attachment";
    case Op::kAttachmentIndex:
      return "attachment index";
    case Op::kStatistics:
      return "statistics";
    case Op::kMetadata:
      return "metadata";
    case Op::kMetadataIndex:
      return "metadata index";
    case Op::kSummaryOffset:
      return "summary offset";
    case Op::kDataEnd:
      return "data end";
  }
  return "record";
}

/// A chunk as the data-section walk found it.
struct SeenChunk {
  std::uint64_t length = 0;  ///< of the record
  std::uint64_t start_time = 0;
  std::uint64_t end_time = 0;
  std::uint64_t compressed = 0;
  std::uint64_t uncompressed = 0;
  std::string compression;
};

/// The walk of `doctor()` (a template for the access doctor(), a friend,
/// grants to Reader::Impl).
template <typename Impl>
class Doctor {
 public:
  explicit Doctor(Impl& r) : r_(r) {
    r_.bad = [](std::uint64_t at, const std::string& what) { throw Thrown{at, what}; };
  }

  std::vector<Fault> run() {
    std::uint64_t at = 0;
    if (attempt("file", [&] { r_.open_file(8 + 9); }) && attempt(
                                                             "header", [&] { at = r_.read_header(); }, 8)) {
      walk_data(at);
      check_summary();
    }
    return std::move(faults_);
  }

 private:
  void fault(std::uint64_t at, std::string record, std::string what) {
    faults_.push_back({at, std::move(record), std::move(what)});
  }
  /// Runs `f`; a fault it raises is listed. `record_at`: the record it
  /// checks, the offset the fault is listed at (the field's offset, when
  /// another, is added to what is wrong); without it, the field's offset.
  template <typename F>
  bool attempt(const std::string& record, F f, std::optional<std::uint64_t> record_at = std::nullopt) {
    try {
      f();
      return true;
    } catch (const Thrown& t) {
      if (record_at && *record_at != t.offset) {
        fault(*record_at, record, fmt::format("{} (at byte {})", t.what, t.offset));
      } else {
        fault(t.offset, record, t.what);
      }
      return false;
    }
  }

  void walk_data(std::uint64_t at) {
    while (at < r_.size) {
      Op op{};
      std::span<const std::byte> content;
      const std::string name = r_.size - at >= 1 ? record_name(static_cast<Op>(r_.base[at])) : "record";
      if (!attempt(
              name, [&] { std::tie(op, content) = r_.record(at); }, at))
        return;  // cut short: the rest is unframed
      switch (op) {
        case Op::kChunk:
          check_chunk(at, content);
          break;
        case Op::kMessageIndex:
          check_message_index(at, content);
          break;
        case Op::kDataEnd:
          attempt(
              "data end",
              [&] {
                Cursor c(content, at + 9, r_.bad);
                const std::uint32_t crc = c.u32();
                // In pieces, each dropped from the mapping once read: memory
                // stays bounded however large the data section.
                std::uint32_t computed = 0;
                constexpr std::uint64_t kPiece = std::uint64_t{1} << 20;
                for (std::uint64_t from = 0; from < at; from += kPiece) {
                  const std::uint64_t n = std::min(kPiece, at - from);
                  computed = crc32(r_.bytes(from, n), computed);
                  r_.release(from, n);
                }
                if (crc != 0 && crc != computed) {
                  r_.bad(at, fmt::format("data section CRC mismatch (file {:08x}, computed {:08x})", crc, computed));
                }
              },
              at);
          return;
        case Op::kFooter:
          fault(at, "footer", "a footer before any data end record");
          return;
        case Op::kHeader:
          fault(at, "header", "a second header record");
          break;
        case Op::kSchema:
          attempt(
              "schema",
              [&] {
                Cursor c(content, at + 9, r_.bad);
                read_schema(c);
              },
              at);
          break;
        case Op::kChannel:
          attempt(
              "channel",
              [&] {
                Cursor c(content, at + 9, r_.bad);
                read_channel(c);
              },
              at);
          break;
        default:
          break;
      }
      at += 9 + content.size();
    }
    fault(r_.size, "data end",
          "the data section has no data end record (an unfinished recording? shmtool bag recover rebuilds it)");
  }

  void check_chunk(std::uint64_t at, std::span<const std::byte> content) {
    SeenChunk seen;
    seen.length = 9 + content.size();
    last_chunk_ = at;
    last_ = LoadedChunk{};
    positions_.clear();
    const bool sound = attempt(
        "chunk",
        [&] {
          Cursor c(content, at + 9, r_.bad);
          seen.start_time = c.u64();
          seen.end_time = c.u64();
          seen.uncompressed = c.u64();
          c.u32();
          seen.compression = c.str();
          seen.compressed = c.u64();
          ChunkIndex ref;
          ref.offset = at;
          ref.length = seen.length;
          last_ = r_.load(ref);
        },
        at);
    chunks_[at] = seen;
    if (!sound) {
      ++unsound_;
      return;
    }
    bool outside = false;
    for (std::size_t i = 0; i < last_.messages.size(); ++i) {
      const MessageRef& m = last_.messages[i];
      std::uint16_t channel = 0;
      std::memcpy(&channel, last_.records.data() + m.at + 9, sizeof channel);
      positions_[m.at] = {m.log_time, channel};
      ++per_channel_[channel];
      ++messages_;
      start_ = std::min(start_, m.log_time);
      end_ = std::max(end_, m.log_time);
      outside |= m.log_time < seen.start_time || m.log_time > seen.end_time;
    }
    if (outside) fault(at, "chunk", "a message's log time lies outside the chunk's start and end times");
  }

  void check_message_index(std::uint64_t at, std::span<const std::byte> content) {
    attempt(
        "message index",
        [&] {
          Cursor c(content, at + 9, r_.bad);
          const std::uint16_t channel = c.u16();
          message_indexes_[at] = channel;
          const std::uint32_t length = c.u32();
          Cursor entries = c.sub(length);
          while (!entries.done()) {
            const std::uint64_t entry_at = entries.offset();
            const std::uint64_t log_time = entries.u64();
            const std::uint64_t offset = entries.u64();
            if (last_.records.empty()) continue;  // the chunk's own fault was reported
            const auto it = positions_.find(offset);
            if (it == positions_.end()) {
              fault(entry_at, "message index",
                    fmt::format("offset {} names no message in the chunk at {}", offset, last_chunk_));
            } else if (it->second != std::pair{log_time, channel}) {
              fault(entry_at, "message index",
                    fmt::format("offset {} names a message of channel {} at {}, not channel {} at {}", offset,
                                it->second.second, it->second.first, channel, log_time));
            }
          }
        },
        at);
  }

  void check_summary() {
    std::uint64_t summary_start = 0;
    std::uint64_t summary_offset_start = 0;
    if (!attempt("footer", [&] { r_.check_frame(summary_start, summary_offset_start); })) return;
    const std::uint64_t footer_at = r_.size - 8 - kFooterRecord;
    const std::uint64_t end = summary_offset_start != 0 ? summary_offset_start : footer_at;
    if (!attempt("summary", [&] { r_.read_summary(summary_start, end); })) return;
    std::set<std::uint64_t> indexed;
    for (const ChunkIndex& ci : r_.info.chunks) check_chunk_index(ci, indexed);
    for (const auto& [at, seen] : chunks_) {
      if (!indexed.contains(at)) fault(at, "chunk", "no chunk index names this chunk");
    }
    check_statistics(summary_start);
  }

  void check_chunk_index(const ChunkIndex& ci, std::set<std::uint64_t>& indexed) {
    const auto it = chunks_.find(ci.offset);
    if (it == chunks_.end()) {
      fault(ci.offset, "chunk index", fmt::format("names a chunk at {}, where none starts", ci.offset));
      return;
    }
    indexed.insert(ci.offset);
    const SeenChunk& c = it->second;
    auto differs = [&](const char* field, std::uint64_t index, std::uint64_t chunk) {
      if (index != chunk) {
        fault(ci.offset, "chunk index", fmt::format("{} {} differs from the chunk's {}", field, index, chunk));
      }
    };
    differs("length", ci.length, c.length);
    differs("start time", ci.start_time, c.start_time);
    differs("end time", ci.end_time, c.end_time);
    differs("compressed size", ci.compressed_size, c.compressed);
    differs("uncompressed size", ci.uncompressed_size, c.uncompressed);
    if (ci.compression != c.compression) {
      fault(ci.offset, "chunk index",
            fmt::format("compression \"{}\" differs from the chunk's \"{}\"", ci.compression, c.compression));
    }
    for (const auto& [channel, offset] : ci.message_index_offsets) {
      const auto m = message_indexes_.find(offset);
      if (m == message_indexes_.end() || m->second != channel) {
        fault(ci.offset, "chunk index", fmt::format("channel {}'s message index at {} is not there", channel, offset));
      }
    }
  }

  void check_statistics(std::uint64_t summary_start) {
    const Statistics& st = r_.info.statistics;
    // Without a statistics record there is nothing to compare; with a
    // chunk at fault its messages are not counted (its fault says so).
    if ((st.chunk_count == 0 && st.message_count == 0 && messages_ != 0) || unsound_ > 0) return;
    auto differs = [&](const char* field, std::uint64_t recorded, std::uint64_t counted) {
      if (recorded != counted) {
        fault(summary_start, "statistics",
              fmt::format("{} {} differs from the {} counted in the chunks", field, recorded, counted));
      }
    };
    differs("message count", st.message_count, messages_);
    differs("chunk count", st.chunk_count, chunks_.size());
    for (const auto& [channel, n] : st.channel_message_counts) {
      const auto it = per_channel_.find(channel);
      differs(fmt::format("channel {}'s message count", channel).c_str(), n, it != per_channel_.end() ? it->second : 0);
    }
    if (messages_ > 0) {
      differs("message start time", st.message_start_time, start_);
      differs("message end time", st.message_end_time, end_);
    }
  }

  Impl& r_;
  std::vector<Fault> faults_;
  std::map<std::uint64_t, SeenChunk> chunks_;               ///< by offset
  std::map<std::uint64_t, std::uint16_t> message_indexes_;  ///< offset -> channel
  std::uint64_t last_chunk_ = 0;                            ///< the chunk before the message indexes
  LoadedChunk last_;                                        ///< its records (empty when it was at fault)
  std::map<std::size_t, std::pair<std::uint64_t, std::uint16_t>>
      positions_;  ///< its messages: at -> (log time, channel)
  std::uint64_t messages_ = 0;
  std::uint64_t unsound_ = 0;  ///< chunks at fault
  std::map<std::uint16_t, std::uint64_t> per_channel_;
  std::uint64_t start_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t end_ = 0;
};

}  // namespace

std::vector<Fault> doctor(const std::string& path) {
  Reader::Impl r;
  r.info.path = path;
  return Doctor<Reader::Impl>(r).run();
}

}  // namespace shmbus::mcap
