// roslib 2.x in a real browser (Debian's chromium, headless, driven by
// puppeteer-core): roslib bundled for the browser with esbuild and served
// with a page from 127.0.0.1. The page's module script gets `Ros`, `Topic`
// and `Service`, and `cfg`; it sets window.subscribed once its
// subscriptions are in place (this prints "browser ready" for the test),
// window.report (its fields are copied into `report`, `errors` appended),
// then window.done.
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { launchChromium } from './chromium.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export async function runRoslibPage({ title, cfg, script, report, screenshot, doneTimeoutMs = 30000 }) {
  const bundle = await esbuild.build({
    stdin: { contents: "export { Ros, Topic, Service } from 'roslib';", resolveDir: here },
    bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'silent',
  });
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>shmbus bridge: ${title}</title>
<style>body{font:14px sans-serif;margin:1em} li{font-family:monospace}</style></head>
<body><h1>${title}</h1><p id="state">connecting</p><ol id="got"></ol>
<script type="module">
import { Ros, Topic, Service } from '/roslib.js';
const cfg = ${JSON.stringify(cfg)};
${script}
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
  const browser = await launchChromium();
  try {
    const tab = await browser.newPage();
    tab.on('pageerror', (e) => report.errors.push(`page: ${e.message}`));
    tab.on('console', (m) => { if (m.type() === 'error') report.errors.push(`console: ${m.text()}`); });
    await tab.goto(`http://127.0.0.1:${server.address().port}/`);
    await tab.waitForFunction('window.subscribed === true', { timeout: 20000 });
    process.stdout.write('browser ready\n');
    await tab.waitForFunction('window.done === true', { timeout: doneTimeoutMs });
    const { errors, ...seen } = await tab.evaluate(() => window.report);
    report.errors.push(...errors);
    Object.assign(report, seen);
    await tab.screenshot({ path: screenshot });
    report.screenshot = screenshot;
  } catch (e) {
    report.errors.push(`browser: ${e.message}`);
  } finally {
    await browser.close();
    server.close();
  }
}
