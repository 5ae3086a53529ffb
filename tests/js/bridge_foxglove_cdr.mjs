// @foxglove/ws-protocol's client against shmbus-bridge, decoding what it
// receives with Foxglove's own CDR reader (@foxglove/rosmsg2-serialization
// over the advertised ros2msg schema, parsed by @foxglove/rosmsg): every
// channel the bridge advertises, and COUNT messages of each TOPIC, printed
// exactly (64-bit integers as decimal strings, typed arrays as arrays,
// non-finite floats as "NaN"/"Infinity"/"-Infinity", as shmbus's JSON
// writes them). With options it also calls a service with a JSON request,
// follows the connection graph until it names a topic, takes time
// messages, or (--info) waits for the server's info. Prints one JSON
// report on stdout.
//
// usage: node bridge_foxglove_cdr.mjs ws://127.0.0.1:PORT COUNT [TOPIC...]
//          [--call=SERVICE=JSON] [--graph=TOPIC] [--time=N] [--info]
import { startReport } from './report.mjs';
import { exact } from './exact.mjs';
import foxglove from '@foxglove/ws-protocol';
import { parse } from '@foxglove/rosmsg';
import { MessageReader } from '@foxglove/rosmsg2-serialization';
import { WebSocket } from 'ws';

const { FoxgloveClient } = foxglove;
const [url, countText, ...rest] = process.argv.slice(2);
const count = Number(countText);
const option = (name) => rest.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const topics = rest.filter((a) => !a.startsWith('--'));
const infoOnly = rest.includes('--info');
const call = option('call');
const graphTopic = option('graph');
const timeCount = Number(option('time') ?? '0');
const { report, finish } = startReport({ statuses: [], channels: [], messages: {}, services: [], times: [] });

const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
client.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
client.on('status', (s) => report.statuses.push(s));
client.on('serverInfo', (info) => {
  report.serverInfo = info;
  if (infoOnly) done();
});

const readers = new Map();  // subscription id -> { topic, reader }
// What is still awaited: each topic's messages, the call, the graph, the time.
let pending = topics.length + (call ? 1 : 0) + (graphTopic ? 1 : 0) + (timeCount > 0 ? 1 : 0) + (infoOnly ? 1 : 0);
function done() {
  pending -= 1;
  if (pending === 0) {
    client.close();
    finish();
  }
}
if (pending === 0) setTimeout(() => finish(), 500);

if (call) {
  const [service, request] = [call.slice(0, call.indexOf('=')), call.slice(call.indexOf('=') + 1)];
  client.on('advertiseServices', (list) => {
    for (const s of list) {
      report.services.push(s);
      if (s.name !== service) continue;
      client.sendServiceCallRequest({ serviceId: s.id, callId: 7, encoding: 'json',
        data: new TextEncoder().encode(request) });
    }
  });
  client.on('serviceCallResponse', (r) => {
    report.response = { serviceId: r.serviceId, callId: r.callId, encoding: r.encoding,
      data: JSON.parse(new TextDecoder().decode(r.data)) };
    done();
  });
  client.on('serviceCallFailure', (f) => {
    report.errors.push(`service call failed: ${f.message}`);
    done();
  });
}
if (graphTopic) {
  // The graph as the updates build it: topic -> publisher ids.
  report.graph = { published: {}, subscribed: {}, services: {} };
  client.on('open', () => client.subscribeConnectionGraph());
  let seen = false;
  client.on('connectionGraphUpdate', (u) => {
    for (const t of u.publishedTopics) report.graph.published[t.name] = t.publisherIds;
    for (const t of u.subscribedTopics) report.graph.subscribed[t.name] = t.subscriberIds;
    for (const s of u.advertisedServices) report.graph.services[s.name] = s.providerIds;
    for (const name of u.removedTopics) {
      delete report.graph.published[name];
      delete report.graph.subscribed[name];
    }
    for (const name of u.removedServices) delete report.graph.services[name];
    if (!seen && report.graph.published[graphTopic]) {
      seen = true;
      done();
    }
  });
}
if (timeCount > 0) {
  client.on('time', ({ timestamp }) => {
    if (report.times.length >= timeCount) return;
    report.times.push(timestamp.toString());
    if (report.times.length === timeCount) done();
  });
}
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
    done();
  }
});
