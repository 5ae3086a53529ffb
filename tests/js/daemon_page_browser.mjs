// shmbusd's web page in a real browser (Debian's chromium, headless, driven
// by puppeteer-core), against what the bus really does. The test that runs
// this starts shmbusd, a ~200 Hz publisher on FAST, a ~20 Hz one on SLOW
// (both with thresholds) and the example pipeline, then acts on what this
// script prints:
//   "stop fast"   -> it stops FAST's publisher;
//   "churn"       -> it creates 200 channels /churn/...;
//   "churn seen"  -> it removes them.
// Checked from the DOM, without reloading the page: both rows at level
// nominal with the rates `shmtool list --json` measures (within 2%), the
// filter box, the module graph's modules; FAST's row at critical and an
// alert row within 3 s of the stop; the churn's rows coming and going; no
// JavaScript error on the console. Saves a screenshot; prints one JSON
// report last.
//
// SERVICE (the example adder's) must be one row, not its two channels.
//
// usage: node daemon_page_browser.mjs URL SHMTOOL FAST SLOW MODULES SERVICE SCREENSHOT.png
// (SHMBUS_DOMAIN and SHMBUS_CONFIG in the environment, for shmtool)
import { execFileSync } from 'node:child_process';
import { launchChromium } from './chromium.mjs';
import { startReport } from './report.mjs';

const [url, shmtool, fast, slow, modulesText, service, screenshot] = process.argv.slice(2);
const modules = modulesText.split(',').filter((m) => m !== '');
const { report, finish } = startReport({ steps: {} }, 150000);
const say = (line) => process.stdout.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// The rows' rate and level in the page.
const rowState = (tab, names) => tab.evaluate((ns) => ns.map((n) => {
  const tr = document.querySelector(`#channels tr[data-name="${n}"]`);
  return tr ? { name: n, rate: Number(tr.dataset.rate), level: tr.dataset.level, hidden: tr.hidden } : null;
}), names);

/// Polls `fn` (an async predicate) every 100 ms up to `ms`; its last value.
async function until(ms, fn) {
  const end = Date.now() + ms;
  let value;
  do {
    value = await fn();
    if (value) return value;
    await sleep(100);
  } while (Date.now() < end);
  return value;
}

const browser = await launchChromium();
try {
  const tab = await browser.newPage();
  await tab.setViewport({ width: 1400, height: 1000 });
  tab.on('pageerror', (e) => report.errors.push(`page: ${e.message}`));
  tab.on('console', (m) => { if (m.type() === 'error') report.errors.push(`console: ${m.text()}`); });
  await tab.goto(url);
  const loadedAt = await tab.evaluate(() => window.shmbusPage.loadedAt);

  // Both rows, at level 1.
  const nominal = await until(20000, async () => {
    const rows = await rowState(tab, [fast, slow]);
    return rows.every((r) => r && r.level === 'nominal') ? rows : null;
  });
  if (!nominal) throw new Error(`rows not both nominal: ${JSON.stringify(await rowState(tab, [fast, slow]))}`);

  // The page's rates against shmtool's measure of the same time lists, a
  // moment apart: equal within 2% in one of at most 30 looks.
  const tries = [];
  for (let i = 0; i < 30; i += 1) {
    const page = await rowState(tab, [fast, slow]);
    const list = JSON.parse(execFileSync(shmtool, ['list', '--json'], { encoding: 'utf8' }));
    const truth = Object.fromEntries(list.map((c) => [c.name, c.rate_hz]));
    const look = page.map((r) => ({ name: r.name, page: r.rate, shmtool: truth[r.name] }));
    tries.push(look);
    if (look.every((x) => Number.isFinite(x.page) && x.shmtool > 0 && Math.abs(x.page / x.shmtool - 1) <= 0.02)) break;
    await sleep(200);
  }
  report.steps.rates = tries[tries.length - 1];
  report.steps.rate_looks = tries.length;
  const rateOk = tries[tries.length - 1].every((x) => Math.abs(x.page / x.shmtool - 1) <= 0.02);
  if (!rateOk) report.errors.push(`rates never within 2% of shmtool's: ${JSON.stringify(tries.slice(-3))}`);

  // A service is one row; endpoints on hover; a heading sorts.
  const shape = await tab.evaluate((svc, n) => ({
    service: document.querySelector(`#channels tr[data-name="${svc}"] .tag`)?.textContent ?? null,
    halves: document.querySelectorAll(`#channels tr[data-name^="${svc}/_"]`).length,
    hover: document.querySelector(`#channels tr[data-name="${n}"] td.name`).title,
  }), service, fast);
  report.steps.shape = shape;
  if (shape.service !== 'service' || shape.halves !== 0) report.errors.push(`${service} is not one service row`);
  if (!/publisher peer \(pid \d+\)/.test(shape.hover)) report.errors.push(`no endpoints on hover: ${shape.hover}`);
  await tab.click('#channels th[data-key="name"]');  // sorted by name already: now descending
  const names = await tab.evaluate(() => [...document.querySelectorAll('#channels tbody tr')].map((t) => t.dataset.name));
  const descending = [...names].sort((a, b) => b.localeCompare(a));
  if (JSON.stringify(names) !== JSON.stringify(descending)) report.errors.push(`not sorted descending: ${names}`);
  await tab.click('#channels th[data-key="name"]');

  // The filter box: a glob hides the other row; a plain word is a substring.
  await tab.type('#filter', slow);
  await sleep(100);
  const filtered = await rowState(tab, [fast, slow]);
  report.steps.filter = filtered.map((r) => ({ name: r.name, hidden: r.hidden }));
  if (!(filtered[0].hidden && !filtered[1].hidden)) report.errors.push(`filter "${slow}" did not hide ${fast}`);
  await tab.click('#filter', { clickCount: 3 });
  await tab.type('#filter', fast.slice(0, fast.lastIndexOf('/') + 1) + '*');
  await sleep(100);
  const globbed = await rowState(tab, [fast, slow]);
  if (globbed.some((r) => r.hidden)) report.errors.push(`the glob of the folder hid a row: ${JSON.stringify(globbed)}`);
  await tab.click('#filter', { clickCount: 3 });
  await tab.keyboard.press('Backspace');

  // The module graph has the pipeline's modules.
  const drawn = await until(15000, () => tab.evaluate((ms) => ms.every(
    (m) => document.querySelector(`#graph g.module[data-name="${m}"]`) !== null), modules));
  report.steps.graph_modules = await tab.evaluate(() => [...document.querySelectorAll('#graph g.module')]
    .map((g) => g.dataset.name));
  if (!drawn) report.errors.push(`graph lacks modules ${modules}: ${report.steps.graph_modules}`);

  // FAST stops: its row turns critical and an alert row appears, within 3 s.
  say('stop fast');
  const stoppedAt = Date.now();
  const alerted = await until(3000, () => tab.evaluate((n) => {
    const tr = document.querySelector(`#channels tr[data-name="${n}"]`);
    const alert = document.querySelector(`#alerts tr[data-channel="${n}"][data-level="critical"]`);
    return tr?.dataset.level === 'critical' && alert !== null && !document.querySelector('#banner').hidden;
  }, fast));
  report.steps.alert_after_ms = Date.now() - stoppedAt;
  if (!alerted) report.errors.push(`no critical row, alert and banner for ${fast} within 3 s of its stop`);
  await tab.screenshot({ path: screenshot, fullPage: true });
  report.screenshot = screenshot;

  // Churn: 200 channels appear and go while the page is open.
  const churnRows = () => tab.evaluate(() => document.querySelectorAll('#channels tr[data-name^="/churn/"]').length);
  say('churn');
  const appeared = await until(30000, async () => (await churnRows()) === 200);
  report.steps.churn_appeared = await churnRows();
  if (!appeared) report.errors.push(`churn: ${report.steps.churn_appeared} of 200 rows appeared`);
  say('churn seen');
  const gone = await until(30000, async () => (await churnRows()) === 0);
  report.steps.churn_left = await churnRows();
  if (!gone) report.errors.push(`churn: ${report.steps.churn_left} rows stayed after their channels went`);

  const page = await tab.evaluate(() => window.shmbusPage);
  report.steps.updates = page.updates;
  if (page.loadedAt !== loadedAt) report.errors.push('the page reloaded');
} catch (e) {
  report.errors.push(`browser: ${e.message}`);
} finally {
  await browser.close();
}
finish();
