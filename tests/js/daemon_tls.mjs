// shmbusd's listener serving TLS: the API over https:// with the
// certificate verified (the test makes its self-signed certificate trusted
// with NODE_EXTRA_CA_CERTS, as a deployment would with its own authority),
// the page's WebSocket over wss://, a plain http:// request at the same
// port (refused), and the page itself in Debian's chromium over https://
// (the browser does not know the test's authority, so it is told to accept
// the certificate), its channel row arriving through its wss:// stream.
// Prints one JSON report on stdout; the C++ test asserts on it.
//
// usage: node daemon_tls.mjs HOST:PORT CHANNEL
import WebSocket from 'ws';
import { launchChromium } from './chromium.mjs';
import { startReport } from './report.mjs';

const [hostPort, channel] = process.argv.slice(2);
const { report, finish } = startReport({}, 60000);

// Plain http:// first: the TLS port must not speak it.
report.plain = await fetch(`http://${hostPort}/api/channels`).then(
  (res) => `answered ${res.status}`,
  (e) => `error: ${e.cause?.code ?? e.message}`);

const res = await fetch(`https://${hostPort}/api/channels`);
report.apiStatus = res.status;
report.apiChannels = (await res.json()).channels.map((c) => c.name);
report.pageHtml = (await (await fetch(`https://${hostPort}/`)).text()).includes('<html');

report.wss = await new Promise((resolve) => {
  const ws = new WebSocket(`wss://${hostPort}/api/events`);
  ws.on('message', (data) => {
    ws.close();
    const event = JSON.parse(data.toString());
    resolve({ channels: (event.channels ?? []).map((c) => c.name) });
  });
  ws.on('error', (e) => resolve({ error: e.message }));
});

const browser = await launchChromium(['--ignore-certificate-errors']);
try {
  const tab = await browser.newPage();
  tab.on('pageerror', (e) => report.errors.push(`page: ${e.message}`));
  tab.on('console', (m) => { if (m.type() === 'error') report.errors.push(`console: ${m.text()}`); });
  await tab.goto(`https://${hostPort}/`);
  await tab.waitForSelector(`#channels tr[data-name="${channel}"]`, { timeout: 20000 });
  report.browserRow = true;
  report.browserProtocol = await tab.evaluate(() => location.protocol);
} catch (e) {
  report.errors.push(`browser: ${e.message}`);
} finally {
  await browser.close();
}
finish();
