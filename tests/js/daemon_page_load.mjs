// Opens shmbusd's page in N tabs of one headless chromium (Debian's, driven
// by puppeteer-core) and keeps them open and live for SECONDS: the load
// whose cost to shmbusd the daemon-scale benchmark measures. Prints
// "pages open" once every tab has had an update, then one JSON line
// (updates per tab) when it closes them.
//
// usage: node daemon_page_load.mjs URL N SECONDS
import { launchChromium } from './chromium.mjs';

const [url, countText, secondsText] = process.argv.slice(2);
const count = Number(countText);
const seconds = Number(secondsText);
const report = { tabs: count, errors: [] };
// Every tab live, as a person's open windows are (no background throttling).
const browser = await launchChromium(['--disable-background-timer-throttling', '--disable-renderer-backgrounding',
                                      '--disable-backgrounding-occluded-windows']);
let code = 0;
try {
  const tabs = [];
  for (let i = 0; i < count; i += 1) {
    const tab = await browser.newPage();
    tab.on('pageerror', (e) => report.errors.push(`page: ${e.message}`));
    await tab.goto(url, { waitUntil: 'domcontentloaded', timeout: 120000 });
    tabs.push(tab);
  }
  await Promise.all(tabs.map((t) => t.waitForFunction('window.shmbusPage.updates > 0', { timeout: 180000 })));
  process.stdout.write('pages open\n');
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  report.updates = await Promise.all(tabs.map((t) => t.evaluate(() => window.shmbusPage.updates)));
} catch (e) {
  report.errors.push(e.message);
  code = 1;
} finally {
  await browser.close();
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(code);
