// Reads a recording exported with `shmtool bag export --encoding cdr` as
// Foxglove does: @mcap/core's indexed reader (CRCs validated), each
// channel's ros2msg schema parsed by @foxglove/rosmsg and its messages
// decoded by @foxglove/rosmsg2-serialization. Prints one JSON object: the
// profile, each channel's encodings and schema name, and every message of
// each topic in the exact form (exact.mjs), in log-time order.
//   node mcap_cdr_read.mjs FILE
import { readFile } from 'node:fs/promises';
import { McapIndexedReader } from '@mcap/core';
import { loadDecompressHandlers } from '@mcap/support';
import { parse } from '@foxglove/rosmsg';
import { MessageReader } from '@foxglove/rosmsg2-serialization';
import { exact } from './exact.mjs';

const bytes = new Uint8Array(await readFile(process.argv[2]));
const reader = await McapIndexedReader.Initialize({
  readable: {
    size: async () => BigInt(bytes.length),
    read: async (offset, size) => bytes.subarray(Number(offset), Number(offset + size)),
  },
  decompressHandlers: await loadDecompressHandlers(),
});
const decoder = new TextDecoder();
const result = { profile: reader.header.profile, channels: {}, messages: {} };
const readers = new Map();
for (const [id, channel] of reader.channelsById) {
  const schema = reader.schemasById.get(channel.schemaId);
  result.channels[channel.topic] = { messageEncoding: channel.messageEncoding, schemaEncoding: schema?.encoding,
    schemaName: schema?.name };
  readers.set(id, new MessageReader(parse(decoder.decode(schema.data), { ros2: true })));
  result.messages[channel.topic] = [];
}
for await (const message of reader.readMessages({ validateCrcs: true })) {
  const topic = reader.channelsById.get(message.channelId).topic;
  result.messages[topic].push(exact(readers.get(message.channelId).readMessage(message.data)));
}
console.log(JSON.stringify(result));
