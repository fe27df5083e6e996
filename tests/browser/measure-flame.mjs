// Measures how long chromium takes to draw each flame view of a report with a profile
// (docs/REPORT.md, "Flame graph views"), per mode, and what it drew:
//   node tests/browser/measure-flame.mjs REPORT.html
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const file = process.argv[2];
if (!file) {
  console.error('usage: node tests/browser/measure-flame.mjs REPORT.html');
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
let t = Date.now();
await page.goto(pathToFileURL(file).href);
await page.waitForSelector('body[data-windows]');
console.log(`load: ${Date.now() - t} ms`);
for (const mode of ['mixed', 'off-cpu', 'on-cpu', 'critical']) {
  await page.selectOption('#flame-mode', mode);
  for (const view of ['time-order', 'sandwich', 'left-heavy']) {
    t = Date.now();
    await page.selectOption('#flame-view', view);
    const ms = Date.now() - t;
    const frames = await page.locator('[data-chart="flame"] .frame').count();
    const runs = view === 'time-order' ? `, ${await page.locator('[data-chart="flame"] rect.run').count()} runs` : '';
    console.log(`${mode} ${view}: ${ms} ms, ${frames} frames${runs}`);
  }
}
if (errors.length) console.log('errors:', errors.join('; '));
await browser.close();
