// Writes a ROS 2 recording the way rosbag2 writes one to MCAP, with the
// libraries Foxglove uses and no shmbus code: @mcap/core's writer (profile
// "ros2", zstd chunks, indexed), each topic's ros2msg definition in its
// schema record, each message written as CDR by
// @foxglove/rosmsg2-serialization, the QoS rosbag2 records in each
// channel's metadata and its "rosbag2" metadata record.
//   node ros2_bag_write.mjs SPEC
// SPEC: {"out": PATH, "msg_roots": [DIR...], "topics": [{"topic": T,
// "type": "pkg/msg/Type", "definition": TEXT, "messages": [{"log_time": NS,
// "data": JSON}...]}]} (64-bit integers as decimal strings). A topic without
// a definition gets one as rosbag2 makes it: the type's .msg file from a
// root (<root>/<pkg>/msg/<Name>.msg or <root>/<pkg>/<Name>.msg), comments
// and all, then each type it uses after a line of '=' and "MSG: pkg/Type".
// A topic's "schema_text", when given, is what its schema record holds
// instead of its definition (rosbag2 writes a service event's as the .srv
// text); a message's "cdr" (hex), when given, is written as it is.
// Prints {"messages": N, "chunks": C, "topics": [{"topic", "type",
// "definition", "qos", "messages": [{"log_time", "cdr"}]}]}: the bytes
// written, for other storages of the same recording. Strings must be ASCII: @foxglove/cdr
// 3.5.0 writes a string's UTF-16 length as its byte count, which cuts a
// non-ASCII one short (fixed upstream after that release).
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { McapWriter } from '@mcap/core';
import { parse } from '@foxglove/rosmsg';
import { MessageWriter } from '@foxglove/rosmsg2-serialization';
import zstd from '@foxglove/wasm-zstd';
import { writable } from './exact.mjs';

const PRIMITIVES = new Set(['bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32',
  'uint32', 'int64', 'uint64', 'string', 'wstring']);

/// The text of `type` ("pkg/msg/Name" or "pkg/Name") in one of `roots`.
function msgFile(type, roots) {
  const [pkg, name] = [type.split('/')[0], type.split('/').pop()];
  for (const root of roots) {
    for (const path of [`${root}/${pkg}/msg/${name}.msg`, `${root}/${pkg}/${name}.msg`]) {
      if (existsSync(path)) return readFileSync(path, 'utf8');
    }
  }
  throw new Error(`no ${type} in ${roots.join(', ')}`);
}

/// rosbag2's definition of `type`: its file, then each message type it
/// uses, breadth first, each once.
function definitionOf(type, roots) {
  const name = (t) => `${t.split('/')[0]}/${t.split('/').pop()}`;
  const order = [name(type)];
  for (let i = 0; i < order.length && i < 64; i += 1) {
    const pkg = order[i].split('/')[0];
    for (const line of msgFile(order[i], roots).split('\n')) {
      const words = line.replace(/#.*/, '').trim().split(/\s+/);
      if (words.length < 2 || words[1].includes('=')) continue;
      const base = words[0].replace(/\[.*$/, '').replace(/<=.*$/, '');
      if (PRIMITIVES.has(base)) continue;
      const used = base.includes('/') ? name(base) : base === 'Header' ? 'std_msgs/Header' : `${pkg}/${base}`;
      if (!order.includes(used)) order.push(used);
    }
  }
  return order.map((t, i) => (i === 0 ? '' : `${'='.repeat(80)}\nMSG: ${t}\n`) + msgFile(t, roots)).join('\n');
}

await zstd.isLoaded;
const spec = JSON.parse(await readFile(process.argv[2], 'utf8'));
const parts = [];
let size = 0n;
let chunks = 0;
const writer = new McapWriter({
  writable: {
    position: () => size,
    write: async (bytes) => {
      parts.push(Buffer.from(bytes));
      size += BigInt(bytes.length);
    },
  },
  chunkSize: 4096,
  compressChunk: (data) => {
    chunks += 1;
    return { compression: 'zstd', compressedData: zstd.compress(data, 3) };
  },
});
await writer.start({ profile: 'ros2', library: 'shmbus tests: @mcap/core' });
const qos = '- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 2147483647\n' +
  '    nsec: 4294967295\n  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n  liveliness: 1\n' +
  '  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n  avoid_ros_namespace_conventions: false\n';
const encoder = new TextEncoder();
const pending = [];
const written = [];
for (const t of spec.topics) {
  t.definition ??= definitionOf(t.type, spec.msg_roots ?? []);
  const definitions = parse(t.definition, { ros2: true });
  const types = new Map(definitions.map((d) => [d.name ?? '', d.definitions]));
  const schemaId = await writer.registerSchema({ name: t.type, encoding: 'ros2msg',
    data: encoder.encode(t.schema_text ?? t.definition) });
  const channelId = await writer.registerChannel({
    topic: t.topic, schemaId, messageEncoding: 'cdr', metadata: new Map([['offered_qos_profiles', qos]]),
  });
  const cdr = new MessageWriter(definitions);
  const root = definitions[0].name ?? '';
  const out = { topic: t.topic, type: t.type, definition: t.schema_text ?? t.definition, qos, messages: [] };
  t.messages.forEach((m, i) => {
    const data = m.cdr !== undefined ? Buffer.from(m.cdr, 'hex') : cdr.writeMessage(writable(m.data, root, types));
    pending.push({ channelId, sequence: i, time: BigInt(m.log_time), data });
    out.messages.push({ log_time: m.log_time, cdr: Buffer.from(data).toString('hex') });
  });
  written.push(out);
}
// rosbag2 writes messages in the order they arrived: by log time.
pending.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
for (const m of pending) {
  await writer.addMessage({ channelId: m.channelId, sequence: m.sequence, logTime: m.time, publishTime: m.time,
    data: m.data });
}
await writer.addMetadata({ name: 'rosbag2', metadata: new Map([['serialized_metadata', 'rosbag2_bagfile_information:\n  version: 8\n']]) });
await writer.end();
await writeFile(spec.out, Buffer.concat(parts));
console.log(JSON.stringify({ messages: pending.length, chunks, topics: written }));
