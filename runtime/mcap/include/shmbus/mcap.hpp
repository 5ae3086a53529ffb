#pragma once
/// @file mcap.hpp
/// MCAP files (https://mcap.dev/spec, major version 0), written by the
/// project itself: chunked, zstd/lz4 compressed, indexed (message indexes,
/// chunk indexes, statistics, summary offsets) with CRC-32s, so the
/// reference readers (`@mcap/core`'s indexed and stream readers, the `mcap`
/// CLI, Foxglove) read what the recorder writes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbus::mcap {

/// Record opcodes.
enum class Op : std::uint8_t {
  kHeader = 0x01,
  kFooter = 0x02,
  kSchema = 0x03,
  kChannel = 0x04,
  kMessage = 0x05,
  kChunk = 0x06,
  kMessageIndex = 0x07,
  kChunkIndex = 0x08,
  kAttachment = 0x09,
  kAttachmentIndex = 0x0A,
  kStatistics = 0x0B,
  kMetadata = 0x0C,
  kMetadataIndex = 0x0D,
  kSummaryOffset = 0x0E,
  kDataEnd = 0x0F,
};

/// The 8 bytes an MCAP file begins and ends with.
inline constexpr std::uint8_t kMagic[8] = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

/// Chunk compression.
enum class Compression { kNone, kLz4, kZstd };
/// The name MCAP uses ("", "lz4", "zstd").
std::string_view compression_name(Compression c) noexcept;
/// From "none" (or ""), "lz4", "zstd"; nullopt for anything else.
std::optional<Compression> parse_compression(std::string_view name) noexcept;

/// Ordered key/value pairs (MCAP's Map<string, string>).
using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct Schema {
  std::uint16_t id = 0;
  std::string name;
  std::string encoding;
  std::string data;
};

struct Channel {
  std::uint16_t id = 0;
  std::uint16_t schema_id = 0;  ///< 0: no schema
  std::string topic;
  std::string message_encoding;
  KeyValues metadata;
};

/// A message to write: `data` is copied.
struct Message {
  std::uint16_t channel_id = 0;
  std::uint32_t sequence = 0;
  std::uint64_t log_time = 0;      ///< ns
  std::uint64_t publish_time = 0;  ///< ns
  std::span<const std::byte> data;
};

struct Metadata {
  std::string name;
  KeyValues values;
};

/// The file's Statistics record.
struct Statistics {
  std::uint64_t message_count = 0;
  std::uint16_t schema_count = 0;
  std::uint32_t channel_count = 0;
  std::uint32_t attachment_count = 0;
  std::uint32_t metadata_count = 0;
  std::uint32_t chunk_count = 0;
  std::uint64_t message_start_time = 0;
  std::uint64_t message_end_time = 0;
  std::vector<std::pair<std::uint16_t, std::uint64_t>> channel_message_counts;
};

/// A Chunk Index record: where one chunk is, what it spans and holds. The
/// writer makes one per chunk; the reader finds the chunks through them.
struct ChunkIndex {
  std::uint64_t start_time = 0;
  std::uint64_t end_time = 0;
  std::uint64_t offset = 0;  ///< of the chunk record
  std::uint64_t length = 0;  ///< of the chunk record
  /// Channel id -> offset of its Message Index record after the chunk.
  std::vector<std::pair<std::uint16_t, std::uint64_t>> message_index_offsets;
  std::uint64_t message_index_length = 0;
  std::string compression;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
};

/// Options of a Writer.
struct WriterOptions {
  std::string profile = "shmbus";
  std::string library = "shmbus";
  Compression compression = Compression::kZstd;
  /// A chunk is closed once its uncompressed records reach this size.
  std::uint64_t chunk_size = std::uint64_t{1} << 20;
  /// zstd level (1 = fastest; the recorder's default), ignored otherwise.
  int zstd_level = 1;
};

/// Whether a Writer with options `o` writes a message of `payload_size`
/// bytes as a chunk of its own, straight from the caller's bytes (no
/// compression, and the message fills a chunk by itself).
bool own_chunk(const WriterOptions& o, std::size_t payload_size) noexcept;

/// Writes one MCAP file: messages go into chunks (compressed as the options
/// say), each followed by its message indexes; close() writes the data end
/// (with the data section's CRC), the summary (schemas, channels,
/// statistics, chunk and metadata indexes, each group once), the summary
/// offsets and the footer (with the summary's CRC).
/// Thread-safety: one thread.
class Writer {
 public:
  /// Creates (truncates) `path`. Throws Error(kResource) naming the path
  /// when it cannot be written.
  explicit Writer(const std::string& path, WriterOptions options = {});
  /// Closes the file if close() was not called (errors then are lost: call
  /// close() to see them).
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Adds a schema; returns its id (1, 2, ...).
  std::uint16_t add_schema(std::string name, std::string encoding, std::string data);
  /// Adds a channel; returns its id (0, 1, ...).
  std::uint16_t add_channel(std::uint16_t schema_id, std::string topic, std::string message_encoding,
                            KeyValues metadata);
  /// Appends a message (into the open chunk). Throws Error(kInvalidArgument)
  /// for an unknown channel id, Error(kResource) on a write error.
  void write(const Message& message);
  /// As write(), for a message whose bytes another process may overwrite
  /// while they are read (a ring slot, read in place): `unchanged()` is
  /// asked once the bytes are in the chunk or, for a message that fills a
  /// chunk by itself, in the file. When it says false the message is taken
  /// back (the file, the chunk, the indexes and the statistics are as before
  /// the call) and false is returned.
  bool write(const Message& message, const std::function<bool()>& unchanged);
  /// Writes a Metadata record (outside chunks) and indexes it.
  void write_metadata(const Metadata& metadata);
  /// Ends the open chunk now (the next message starts a new one) and hands
  /// it to the kernel: a process killed after this leaves a file whose
  /// chunks so far recover() finds.
  void flush_chunk();
  /// Finishes the file. Throws Error(kResource) on a write error.
  void close();

  /// Bytes in the file so far (the open chunk not counted).
  [[nodiscard]] std::uint64_t bytes() const noexcept;
  [[nodiscard]] const Statistics& statistics() const noexcept;
  [[nodiscard]] const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A message read from a file; `data` is valid during the callback only.
struct MessageView {
  std::uint16_t channel_id = 0;
  std::uint32_t sequence = 0;
  std::uint64_t log_time = 0;
  std::uint64_t publish_time = 0;
  std::span<const std::byte> data;
};

/// What a file holds, from its summary section.
struct FileInfo {
  std::string path;
  std::uint64_t bytes = 0;
  std::string profile;
  std::string library;
  std::vector<Schema> schemas;
  std::vector<Channel> channels;
  Statistics statistics;
  std::vector<Metadata> metadata;
  /// The chunks' compression ("" for none); "mixed" when they differ.
  std::string compression;
  /// The chunk indexes, in start-time order (the file's own order for
  /// equal starts): what `bag info` counts per compression.
  std::vector<ChunkIndex> chunks;
  [[nodiscard]] const Channel* channel(std::uint16_t id) const noexcept;
  [[nodiscard]] const Schema* schema(std::uint16_t id) const noexcept;
};

/// What recover() found and wrote.
struct RecoverReport {
  std::uint64_t chunks = 0;    ///< complete chunks kept
  std::uint64_t messages = 0;  ///< messages in them
  std::uint64_t metadata = 0;  ///< metadata records kept
  /// Where the readable data ended (the file's size when it all was read)
  /// and, when that is before the end, why.
  std::uint64_t valid_bytes = 0;
  std::string stopped_because;
};

/// How far recover() is: bytes of the input read, of its size (called
/// after each record).
using RecoverProgress = std::function<void(std::uint64_t read, std::uint64_t size)>;

/// One thing wrong in a file: where, in which record, what.
struct Fault {
  std::uint64_t offset = 0;  ///< of the record (or field) at fault
  std::string record;        ///< "header", "chunk", "message index", "summary", "footer", ...
  std::string what;
};

/// Reads an indexed MCAP file (as Writer writes them): the structure is
/// checked when opened (magic at both ends, footer, summary CRC, summary
/// records), chunk CRCs when messages are read. Anything wrong is
/// Error(kConfig) with one line naming the file, the byte offset and what
/// is wrong (exit code 2: bad input). Thread-safety: one thread.
class Reader {
 public:
  explicit Reader(const std::string& path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  [[nodiscard]] const FileInfo& info() const noexcept;
  /// Calls `f` for every message in log-time order (chunks merged by their
  /// index); `f` returns false to stop.
  void read_messages(const std::function<bool(const MessageView&)>& f);
  /// The same, pulled one at a time (to merge files): the next message in
  /// log-time order, false after the last. `v.data` is valid until the next
  /// call. read_messages() starts over.
  bool next_message(MessageView& v);

 private:
  friend RecoverReport recover(const std::string& in, const std::string& out, const RecoverProgress& progress,
                               const std::string& library);
  friend std::vector<Fault> doctor(const std::string& path);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Rebuilds an indexed file from one whose writer died (SIGKILL, power
/// loss): reads `in`'s data section from the start, record by record,
/// keeping every schema, channel and metadata record and every complete
/// chunk whose CRC holds, up to the first record that is cut short or
/// damaged; writes them to `out` as a complete file (summary, indexes,
/// statistics) with `in`'s profile. `in` need not be damaged: a complete
/// file is copied whole. Throws Error(kConfig) naming `in` when it does not
/// begin as an MCAP file, Error(kNotFound) when it does not exist.
/// `library`: the output header's library field.
RecoverReport recover(const std::string& in, const std::string& out, const RecoverProgress& progress = {},
                      const std::string& library = "shmbus mcap recover");

/// Checks every record of a file, as `mcap doctor` does, and lists what is
/// wrong instead of stopping at the first fault: the magic at both ends,
/// the header, each data-section record's framing, each chunk (its
/// compression, size, CRC, the records inside it, its start and end
/// times), each message index (every offset names a message of its
/// channel and log time in the chunk before it), the data section's CRC,
/// the footer and summary (CRC, records), every chunk index against the
/// chunk it names, the metadata indexes and the statistics against the
/// counted messages. A record cut short ends the walk of its section.
/// Empty: a sound file. Throws Error(kNotFound) when `path` does not
/// exist. Memory is bounded by the largest chunk.
std::vector<Fault> doctor(const std::string& path);

/// CRC-32 (IEEE, as MCAP uses), continuing from `crc`.
std::uint32_t crc32(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

}  // namespace shmbus::mcap
