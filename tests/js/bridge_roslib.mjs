// roslib (npm, the rosbridge client of browsers and Node) against
// shmbus-bridge: discovery through rosapi, a typed subscription, a
// subscription with the wrong type, publishing into the bus, a service call.
// Prints one JSON report on stdout; the C++ test asserts on it.
//
// usage: node bridge_roslib.mjs ws://127.0.0.1:PORT SUB_TOPIC PUB_TOPIC SERVICE PUB_COUNT
import { startReport, stepper } from './report.mjs';
import { Ros, Topic, Service } from 'roslib';

const [url, subTopic, pubTopic, service, pubCountText] = process.argv.slice(2);
const pubCount = Number(pubCountText ?? '10');
const { report, finish } = startReport();

const step = stepper(report);

const ros = new Ros({ url });
ros.on('error', (e) => report.errors.push(`connection: ${e?.message ?? e}`));
await new Promise((resolve) => ros.on('connection', resolve));

report.topics = await step('getTopics', (ok, fail) => ros.getTopics(ok, fail));
report.topicType = await step('getTopicType', (ok, fail) => ros.getTopicType(subTopic, ok, fail));
report.services = await step('getServices', (ok, fail) => ros.getServices(ok, fail));
report.serviceType = await step('getServiceType', (ok, fail) => ros.getServiceType(service, ok, fail));
report.typedefs = await step('getMessageDetails', (ok, fail) =>
  ros.getMessageDetails(report.topicType ?? 'shmbus_msgs/String', ok, fail));

// A subscription naming the channel's type, given as pkg/msg/Type.
const type = report.topicType ?? '';
const msgType = type.replace('/', '/msg/');
report.received = await step('subscribe', (ok) => {
  const got = [];
  const topic = new Topic({ ros, name: subTopic, messageType: msgType });
  topic.subscribe((m) => {
    got.push(m);
    if (got.length === 3) {
      topic.unsubscribe();
      ok(got);
    }
  });
});

// CBOR (binary frames, decoded by roslib's cbor2) and fragments (roslib
// reassembles them) give the same messages.
report.receivedCbor = await step('subscribe cbor', (ok) => {
  const got = [];
  const topic = new Topic({ ros, name: subTopic, messageType: msgType, compression: 'cbor' });
  topic.subscribe((m) => {
    got.push(m);
    if (got.length === 2) {
      topic.unsubscribe();
      ok(got);
    }
  });
});
await new Promise((resolve) => setTimeout(resolve, 300));
report.receivedFragmented = await step('subscribe fragmented', (ok) => {
  const got = [];
  const onMessage = (op) => {
    got.push(op.msg);
    if (got.length === 2) {
      ros.off(subTopic, onMessage);
      ros.callOnConnection({ op: 'unsubscribe', topic: subTopic, id: 'fragmented' });
      ok(got);
    }
  };
  ros.on(subTopic, onMessage);
  ros.callOnConnection({ op: 'subscribe', topic: subTopic, id: 'fragmented', fragment_size: 8 });
});

// The same topic with the wrong type: an error status, no messages. (roslib
// hands every publish of a topic to all its Topic objects: the messages the
// bridge sent before it read the unsubscribe above must be gone first.)
await new Promise((resolve) => setTimeout(resolve, 300));
report.wrongType = await step('wrong type', (ok) => {
  const topic = new Topic({ ros, name: subTopic, messageType: 'shmbus_msgs/Header' });
  let messages = 0;
  topic.subscribe(() => { messages += 1; });
  ros.once(`status:${topic.subscribeId}`, (status) => {
    setTimeout(() => ok({ level: status.level, msg: status.msg, messages }), 300);
  });
});

// Publishing into the bus.
const out = new Topic({ ros, name: pubTopic, messageType: 'shmbus_msgs/String' });
for (let i = 0; i < pubCount; i += 1) out.publish({ data: `from roslib ${i}` });
report.published = pubCount;

// A publish that does not fit the schema: refused naming the field.
report.badPublish = await step('bad publish', (ok) => {
  ros.once('status', (status) => ok({ level: status.level, msg: status.msg }));
  ros.callOnConnection({ op: 'publish', topic: pubTopic, msg: { data: 'x', colour: 'red' } });
});

// A shmbus service.
const add = new Service({ ros, name: service, serviceType: 'example_srvs/AddTwoInts' });
report.sum = await step('callService', (ok, fail) => add.callService({ a: 2, b: 40 }, (r) => ok(r.sum), fail));
report.noService = await step('missing service', (ok) => {
  const missing = new Service({ ros, name: '/no/such/service', serviceType: 'example_srvs/AddTwoInts' });
  missing.callService({}, () => ok('answered'), (err) => ok(String(err)));
});

// Give the last publishes time to leave before closing.
setTimeout(() => {
  ros.close();
  finish();
}, 200);
