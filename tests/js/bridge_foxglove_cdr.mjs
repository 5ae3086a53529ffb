// @foxglove/ws-protocol's client against shmbus-bridge, decoding what it
// receives with Foxglove's own CDR reader (@foxglove/rosmsg2-serialization
// over the advertised ros2msg schema, parsed by @foxglove/rosmsg): every
// channel the bridge advertises, and COUNT messages of each TOPIC, printed
// exactly (64-bit integers as decimal strings, typed arrays as arrays,
// non-finite floats as "NaN"/"Infinity"/"-Infinity", as shmbus's JSON
// writes them). Prints one JSON report on stdout.
//
// usage: node bridge_foxglove_cdr.mjs ws://127.0.0.1:PORT COUNT TOPIC...
import { startReport } from './report.mjs';
import foxglove from '@foxglove/ws-protocol';
import { parse } from '@foxglove/rosmsg';
import { MessageReader } from '@foxglove/rosmsg2-serialization';
import { WebSocket } from 'ws';

const { FoxgloveClient } = foxglove;
const [url, countText, ...topics] = process.argv.slice(2);
const count = Number(countText);
const { report, finish } = startReport({ statuses: [], channels: [], messages: {} });

/// A decoded value as shmbus's exact JSON writes it.
function exact(v) {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return v;
  }
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v, exact);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, exact(x)]));
  }
  return v;
}

const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
client.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
client.on('status', (s) => report.statuses.push(s));
client.on('serverInfo', (info) => { report.serverInfo = info; });

const readers = new Map();  // subscription id -> { topic, reader }
let pending = topics.length;
if (pending === 0) setTimeout(() => finish(), 500);
client.on('advertise', (list) => {
  for (const c of list) {
    report.channels.push({ id: c.id, topic: c.topic, encoding: c.encoding, schemaName: c.schemaName,
      schemaEncoding: c.schemaEncoding, schema: c.schema });
    if (!topics.includes(c.topic) || c.encoding !== 'cdr') continue;
    try {
      const reader = new MessageReader(parse(c.schema, { ros2: true }));
      report.messages[c.topic] = [];
      readers.set(client.subscribe(c.id), { topic: c.topic, reader });
    } catch (e) {
      report.errors.push(`${c.topic}: schema: ${e.message}`);
    }
  }
});
client.on('message', ({ subscriptionId, data }) => {
  const r = readers.get(subscriptionId);
  if (!r) return;
  const got = report.messages[r.topic];
  if (got.length >= count) return;
  try {
    got.push(exact(r.reader.readMessage(data)));
  } catch (e) {
    report.errors.push(`${r.topic}: decode: ${e.message}`);
  }
  if (got.length === count) {
    client.unsubscribe(subscriptionId);
    pending -= 1;
    if (pending === 0) {
      client.close();
      finish();
    }
  }
});
