// Debian's chromium, headless, driven by puppeteer-core (no browser is
// downloaded): what the browser tests launch. CHROMIUM overrides the path.
import puppeteer from 'puppeteer-core';

export function launchChromium(extraArgs = []) {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // A test machine's container has no user namespaces for the sandbox.
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', ...extraArgs],
  });
}
