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
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { launchChromium } from './chromium.mjs';
import { startReport } from './report.mjs';

const [url, subTopic, pubTopic, service, countText, screenshot] = process.argv.slice(2);
const count = Number(countText);
const here = path.dirname(fileURLToPath(import.meta.url));
const { report, finish } = startReport({}, 60000);

const bundle = await esbuild.build({
  stdin: { contents: "export { Ros, Topic, Service } from 'roslib';", resolveDir: here },
  bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'silent',
});
const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>shmbus bridge: roslib in a browser</title>
<style>body{font:14px sans-serif;margin:1em} li{font-family:monospace}</style></head>
<body><h1>roslib 2.x through shmbus-bridge</h1><p id="state">connecting</p><ol id="got"></ol>
<script type="module">
import { Ros, Topic, Service } from '/roslib.js';
const cfg = ${JSON.stringify({ url, subTopic, pubTopic, service, count })};
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
const out = new Topic({ ros, name: cfg.pubTopic, messageType: 'std_msgs/String' });
for (let i = 0; i < cfg.count; i += 1) out.publish({ data: 'from the browser ' + i });
r.sum = await new Promise((resolve) => {
  new Service({ ros, name: cfg.service, serviceType: 'example_srvs/AddTwoInts' })
    .callService({ a: 2, b: 40 }, (res) => resolve(res.sum), (e) => { r.errors.push('call: ' + e); resolve(null); });
});
await all;
state('received ' + r.received.length + ' of ' + cfg.count + '; 2 + 40 = ' + r.sum);
window.done = true;
</script></body></html>`;

const server = http.createServer((req, res) => {
  if (req.url === '/roslib.js') {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    res.end(bundle.outputFiles[0].text);
  } else if (req.url === '/') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  } else if (req.url === '/favicon.ico') {
    res.writeHead(204);  // none: not an error
    res.end();
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const pageUrl = `http://127.0.0.1:${server.address().port}/`;

const browser = await launchChromium();
try {
  const tab = await browser.newPage();
  tab.on('pageerror', (e) => report.errors.push(`page: ${e.message}`));
  tab.on('console', (m) => { if (m.type() === 'error') report.errors.push(`console: ${m.text()}`); });
  await tab.goto(pageUrl);
  await tab.waitForFunction('window.subscribed === true', { timeout: 20000 });
  process.stdout.write('browser ready\n');
  await tab.waitForFunction('window.done === true', { timeout: 30000 });
  const seen = await tab.evaluate(() => window.report);
  report.errors.push(...seen.errors);
  report.received = seen.received;
  report.sum = seen.sum;
  await tab.screenshot({ path: screenshot });
  report.screenshot = screenshot;
} catch (e) {
  report.errors.push(`browser: ${e.message}`);
} finally {
  await browser.close();
  server.close();
}
finish();
