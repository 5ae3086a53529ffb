// @foxglove/ws-protocol's client (what Foxglove Studio speaks) against
// shmbus-bridge: serverInfo, the advertised channels, a subscription whose
// JSON messages are checked against the advertised JSON Schema (ajv), a
// client channel publishing into the bus, and one with the wrong type.
// Prints one JSON report on stdout; the C++ test asserts on it.
//
// usage: node bridge_foxglove.mjs ws://127.0.0.1:PORT SUB_TOPIC PUB_TOPIC PUB_COUNT
import { startReport } from './report.mjs';
import foxglove from '@foxglove/ws-protocol';
import Ajv from 'ajv';
import { WebSocket } from 'ws';

const { FoxgloveClient } = foxglove;

const [url, subTopic, pubTopic, pubCountText] = process.argv.slice(2);
const pubCount = Number(pubCountText ?? '10');
const { report, finish } = startReport({ statuses: [] });

const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
client.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
client.on('status', (s) => report.statuses.push(s));
client.on('serverInfo', (info) => { report.serverInfo = info; });

const channels = new Map();
let found;
const foundTopic = new Promise((resolve) => { found = resolve; });
client.on('advertise', (list) => {
  for (const c of list) {
    channels.set(c.id, c);
    if (c.topic === subTopic) found(c);
  }
});

const channel = await foundTopic;
report.channel = { topic: channel.topic, encoding: channel.encoding, schemaName: channel.schemaName,
  schemaEncoding: channel.schemaEncoding };
report.advertisedTopics = [...channels.values()].map((c) => c.topic);

const validate = new Ajv({ strict: false }).compile(JSON.parse(channel.schema));
const decoder = new TextDecoder();
report.received = await new Promise((resolve) => {
  const got = [];
  const subId = client.subscribe(channel.id);
  client.on('message', ({ subscriptionId, timestamp, data }) => {
    if (subscriptionId !== subId || got.length >= 3) return;
    const msg = JSON.parse(decoder.decode(data));
    if (!validate(msg)) report.errors.push(`schema: ${JSON.stringify(validate.errors)}`);
    got.push({ msg, timestamp: timestamp.toString() });
    if (got.length === 3) {
      client.unsubscribe(subId);
      resolve(got);
    }
  });
});

// A client channel with the wrong type is refused (status level 2).
const before = report.statuses.length;
client.advertise({ topic: subTopic, encoding: 'json', schemaName: 'shmbus_msgs/Header' });
// A client channel of the right type publishes into the bus.
const out = client.advertise({ topic: pubTopic, encoding: 'json', schemaName: 'shmbus_msgs/String' });
const encoder = new TextEncoder();
for (let i = 0; i < pubCount; i += 1) client.sendMessage(out, encoder.encode(JSON.stringify({ data: `from foxglove ${i}` })));
report.published = pubCount;
setTimeout(() => {
  report.wrongType = report.statuses.slice(before).find((s) => s.message.includes('type mismatch'));
  client.close();
  finish();
}, 400);
