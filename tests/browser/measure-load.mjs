// Measures how long chromium takes to open a report and draw every view, and to redraw
// after a click in the time chart (the waterfall: in the trace picker):
//   node tests/browser/measure-load.mjs REPORT.html
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

const file = process.argv[2];
if (!file) {
  console.error('usage: node tests/browser/measure-load.mjs REPORT.html');
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
const t0 = Date.now();
await page.goto(pathToFileURL(file).href);
await page.waitForSelector('body[data-windows], body[data-ready]');
const load = Date.now() - t0;
if (await page.getAttribute('body', 'data-view') === 'stages') {
  // Tasks per stage: open and draw, then a click on another stage's row.
  const stages = await page.locator('#dag .stage-node').count();
  const t1 = Date.now();
  await page.locator('#stages tbody tr').last().click();
  await page.waitForSelector('#stages tbody tr.selected');
  const click = Date.now() - t1;
  console.log(`${file}: ${(fs.statSync(file).size / 1024).toFixed(0)} KiB, ${stages} stages, ` +
    `loaded and drawn in ${load} ms, click-to-redraw ${click} ms, ${errors.length} errors`);
  for (const e of errors) console.log('  error:', e);
  await browser.close();
  process.exit(errors.length ? 1 : 0);
}
if (await page.getAttribute('body', 'data-view') === 'critical-flow') {
  // Critical flow: open and draw, then a click on another thread in the picker.
  const lanes = await page.locator('#flow .lane').count();
  const overlays = await page.locator('#flow .overlay').count();
  const other = page.locator('#picker .pick:not(.selected)').first();
  const target = await other.getAttribute('data-path');
  const t1 = Date.now();
  await other.click();
  await page.waitForFunction((p) => document.getElementById('flow').dataset.path === p, target);
  const click = Date.now() - t1;
  console.log(`${file}: ${(fs.statSync(file).size / 1024).toFixed(0)} KiB, ${lanes} lanes, ` +
    `${overlays} path segments drawn, loaded and drawn in ${load} ms, click-to-redraw ${click} ms, ` +
    `${errors.length} errors`);
  for (const e of errors) console.log('  error:', e);
  await browser.close();
  process.exit(errors.length ? 1 : 0);
}
if (await page.getAttribute('body', 'data-ready')) {
  // The waterfall of span traces: draw the first trace, then a click on the second.
  const rows = await page.locator('.span-row').count();
  const t1 = Date.now();
  const next = (await page.locator('#picker tr.trace').count()) > 1 ? 1 : 0;
  await page.locator(`#picker tr.trace[data-index="${next}"]`).click();
  await page.waitForFunction((n) => document.body.dataset.trace === String(n), next);
  const click = Date.now() - t1;
  const rows2 = await page.locator('.span-row').count();
  console.log(`${file}: ${(fs.statSync(file).size / 1024).toFixed(0)} KiB, ` +
    `${await page.getAttribute('body', 'data-traces')} traces, loaded and drawn in ${load} ms ` +
    `(${rows} span rows), click-to-redraw ${click} ms (${rows2} rows), ${errors.length} errors`);
  for (const e of errors) console.log('  error:', e);
  await browser.close();
  process.exit(errors.length ? 1 : 0);
}
const marks = await page.locator('.mark').count();
const box = await page.locator('[data-chart="cp-time"] .overlay').boundingBox();
const t1 = Date.now();
await page.mouse.click(box.x + box.width * 0.3, box.y + box.height / 2);
await page.waitForFunction(() => document.body.dataset.selected !== undefined);
const click = Date.now() - t1;
const windows = await page.getAttribute('body', 'data-windows');
console.log(`${file}: ${(fs.statSync(file).size / 1024).toFixed(0)} KiB, ${windows} windows, ` +
  `loaded and drawn in ${load} ms (${marks} marks), click-to-redraw ${click} ms, ${errors.length} errors`);
for (const e of errors) console.log('  error:', e);
await browser.close();
process.exit(errors.length ? 1 : 0);
