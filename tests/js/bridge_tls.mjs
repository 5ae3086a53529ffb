// roslib over wss:// against a shmbus-bridge serving TLS, /metrics over
// https://, and a plain ws:// client at the same port (refused). The test
// makes the bridge's self-signed certificate trusted with
// NODE_EXTRA_CA_CERTS, as a deployment would with its own authority.
// Prints one JSON report on stdout; the C++ test asserts on it.
//
// usage: node bridge_tls.mjs HOST:PORT TOPIC
import { startReport } from './report.mjs';
import { Ros, Topic } from 'roslib';
import WebSocket from 'ws';

const [hostPort, topicName] = process.argv.slice(2);
const { report, finish } = startReport();

// Plain ws:// first: the TLS port must not speak it.
report.plain = await new Promise((resolve) => {
  const ws = new WebSocket(`ws://${hostPort}/`);
  ws.on('open', () => {
    ws.close();
    resolve('opened');
  });
  ws.on('error', (e) => resolve(`error: ${e.message}`));
});

const ros = new Ros({ url: `wss://${hostPort}/` });
ros.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
await new Promise((resolve) => ros.on('connection', resolve));
report.topics = await new Promise((resolve) =>
  ros.getTopics(resolve, (e) => {
    report.errors.push(`getTopics: ${e}`);
    resolve(undefined);
  }));
report.topicType = await new Promise((resolve) => ros.getTopicType(topicName, resolve, () => resolve(undefined)));
report.received = await new Promise((resolve) => {
  const got = [];
  const topic = new Topic({ ros, name: topicName, messageType: report.topicType ?? '' });
  topic.subscribe((m) => {
    got.push(m);
    if (got.length === 3) {
      topic.unsubscribe();
      resolve(got);
    }
  });
});

const res = await fetch(`https://${hostPort}/metrics`);
const text = await res.text();
report.metricsStatus = res.status;
const refused = text.match(/\nshmbus_bridge_connections_refused_total\{[^}]*\} (\d+)/);
report.connectionsRefused = refused ? Number(refused[1]) : null;
const clients = text.match(/\nshmbus_bridge_clients\{[^}]*\} (\d+)/);
report.clients = clients ? Number(clients[1]) : null;
ros.close();
finish();
