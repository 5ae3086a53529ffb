// roslib 2.x in a real browser (Debian's chromium, headless, driven by
// puppeteer-core) against shmbus-bridge. roslib is bundled for the browser
// with esbuild and served with the page from 127.0.0.1. In the page: a
// subscription made before any publisher exists (the test publishes COUNT
// messages once this script prints "browser ready"), COUNT messages
// published to PUB_TOPIC, which no process carries yet, and a call of
// SERVICE (the example adder). Saves a screenshot of the page, then prints
// one JSON report on stdout.
//
// usage: node bridge_roslib_browser.mjs ws://127.0.0.1:PORT SUB_TOPIC PUB_TOPIC SERVICE COUNT SCREENSHOT.png
import { runRoslibPage } from './roslib_page.mjs';
import { startReport } from './report.mjs';

const [url, subTopic, pubTopic, service, countText, screenshot] = process.argv.slice(2);
const count = Number(countText);
const { report, finish } = startReport({}, 60000);

await runRoslibPage({
  title: 'roslib 2.x through shmbus-bridge',
  cfg: { url, subTopic, pubTopic, service, count },
  report,
  screenshot,
  script: `
const r = { received: [], errors: [] };
window.report = r;
const state = (s) => { document.getElementById('state').textContent = s; };
const ros = new Ros({ url: cfg.url });
ros.on('error', (e) => r.errors.push('connection: ' + (e?.message ?? e)));
await new Promise((resolve) => ros.on('connection', resolve));
// Subscribe before any publisher: the bridge waits for the channel.
const sub = new Topic({ ros, name: cfg.subTopic, messageType: 'std_msgs/msg/String' });
const all = new Promise((resolve) => {
  sub.subscribe((m) => {
    r.received.push(m.data);
    const li = document.createElement('li');
    li.textContent = m.data;
    document.getElementById('got').appendChild(li);
    if (r.received.length === cfg.count) resolve();
  });
});
// The bridge handles a client's operations in order: once this answer is
// back, the subscription is in place.
await new Promise((resolve) => ros.getTopics(resolve, (e) => { r.errors.push('getTopics: ' + e); resolve(); }));
window.subscribed = true;
state('subscribed; waiting for ' + cfg.subTopic);
// Publish to a channel nobody carries yet: the bridge creates it.
const out = new Topic({ ros, name: cfg.pubTopic, messageType: 'std_msgs/msg/String' });
for (let i = 0; i < cfg.count; i += 1) out.publish({ data: 'from the browser ' + i });
r.sum = await new Promise((resolve) => {
  new Service({ ros, name: cfg.service, serviceType: 'example_srvs/AddTwoInts' })
    .callService({ a: 2, b: 40 }, (res) => resolve(res.sum), (e) => { r.errors.push('call: ' + e); resolve(null); });
});
await all;
state('received ' + r.received.length + ' of ' + cfg.count + '; 2 + 40 = ' + r.sum);
window.done = true;
`,
});
finish();
