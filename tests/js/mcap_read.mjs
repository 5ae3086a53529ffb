// Reads an MCAP file with the reference TypeScript readers (@mcap/core's
// indexed reader and its stream reader, CRCs validated) and prints what
// they saw as one JSON object, for the C++ tests to compare with what they
// wrote.
//   node mcap_read.mjs FILE
import { readFile } from "node:fs/promises";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";
import { crc32, crc32Init, crc32Update, crc32Final } from "@foxglove/crc";

const path = process.argv[2];
const bytes = new Uint8Array(await readFile(path));
const decompressHandlers = await loadDecompressHandlers();

const readable = {
  size: async () => BigInt(bytes.length),
  read: async (offset, size) => bytes.subarray(Number(offset), Number(offset + size)),
};

function topicStats() {
  return { counts: {}, crc: {}, first_sequence: {}, last_sequence: {}, in_order: true, last_log_time: -1n };
}
function count(stats, topic, message) {
  stats.counts[topic] = (stats.counts[topic] ?? 0) + 1;
  stats.crc[topic] = crc32Update(stats.crc[topic] ?? crc32Init(), message.data);
  stats.first_sequence[topic] ??= message.sequence;
  stats.last_sequence[topic] = message.sequence;
}
function finish(stats) {
  for (const t of Object.keys(stats.crc)) stats.crc[t] = crc32Final(stats.crc[t]);
  delete stats.last_log_time;
  return stats;
}

// The indexed reader: footer, summary (CRC checked), chunk indexes, message
// indexes, then every message in log-time order with chunk CRCs validated.
const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
const indexed = topicStats();
let lastLogTime = -1n;
for await (const message of reader.readMessages({ validateCrcs: true })) {
  const channel = reader.channelsById.get(message.channelId);
  count(indexed, channel.topic, message);
  if (message.logTime < lastLogTime) indexed.in_order = false;
  lastLogTime = message.logTime;
}
const metadata = [];
for await (const m of reader.readMetadata()) metadata.push({ name: m.name, metadata: Object.fromEntries(m.metadata) });
const channels = [...reader.channelsById.values()].map((c) => {
  const s = reader.schemasById.get(c.schemaId);
  return {
    id: c.id,
    topic: c.topic,
    message_encoding: c.messageEncoding,
    metadata: Object.fromEntries(c.metadata),
    schema_name: s?.name ?? "",
    schema_encoding: s?.encoding ?? "",
    schema_data: s ? new TextDecoder().decode(s.data) : "",
  };
});
const stats = reader.statistics;

// The stream reader: every record from the start, chunk CRCs validated.
const stream = topicStats();
const streamChannels = new Map();
const streamReader = new McapStreamReader({ decompressHandlers, validateCrcs: true });
streamReader.append(bytes);
let records = 0;
for (let r; (r = streamReader.nextRecord()); ) {
  ++records;
  if (r.type === "Channel") streamChannels.set(r.id, r.topic);
  if (r.type === "Message") count(stream, streamChannels.get(r.channelId), r);
}

console.log(
  JSON.stringify({
    profile: reader.header.profile,
    library: reader.header.library,
    chunks: reader.chunkIndexes.length,
    compression: [...new Set(reader.chunkIndexes.map((c) => c.compression))],
    chunk_compression: reader.chunkIndexes.reduce((by, c) => {
      const f = (by[c.compression || "none"] ??= { chunks: 0, compressed_bytes: 0, uncompressed_bytes: 0 });
      f.chunks += 1;
      f.compressed_bytes += Number(c.compressedSize);
      f.uncompressed_bytes += Number(c.uncompressedSize);
      return by;
    }, {}),
    attachments: reader.attachmentIndexes.length,
    metadata_records: reader.metadataIndexes.length,
    bytes: bytes.length,
    channels,
    metadata,
    statistics: stats && {
      message_count: Number(stats.messageCount),
      channel_count: stats.channelCount,
      schema_count: stats.schemaCount,
      chunk_count: stats.chunkCount,
      metadata_count: stats.metadataCount,
      message_start_time: stats.messageStartTime.toString(),
      message_end_time: stats.messageEndTime.toString(),
      channel_message_counts: Object.fromEntries([...stats.channelMessageCounts].map(([k, v]) => [k, Number(v)])),
    },
    data_section_crc: reader.dataSectionCrc ?? 0,
    data_section_crc_computed: crc32(bytes.subarray(0, Number(reader.dataEndOffset))),
    indexed: finish(indexed),
    stream: { ...finish(stream), records, done: streamReader.done() },
  }),
);
