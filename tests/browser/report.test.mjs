// Browser tests of the report page and the live dashboard (docs/REPORT.md), in Debian's
// chromium driven by playwright-core. Run by `make test` (after ctest) or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/report.test.mjs
// Screenshots go to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, bin, artifacts, workDir, launchBrowser } from './common.mjs';

const work = workDir('browser');

let browser;
const files = {};

function run(...args) {
  return execFileSync(bin, args, { cwd: root, encoding: 'utf8' });
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  const trace = path.join(work, 'skew.snail');
  run('simulate', 'examples/wordcount-skew-30.toml', '-o', trace, '--duration', '20s', '-q');
  files.html = path.join(work, 'skew.html');
  run('report', trace, '-o', files.html, '--window', '1s', '--no-progress');
  files.partial = path.join(work, 'partial.json');
  run('report', trace, '-o', files.partial, '--format', 'json', '--to', '+5s', '--no-progress');
  files.full = path.join(work, 'full.json');
  run('report', trace, '-o', files.full, '--format', 'json', '--no-progress');
  files.oneWindow = path.join(work, 'one-window.html');
  run('report', trace, '-o', files.oneWindow, '--window', 'whole', '--no-progress');
  files.whatIf = path.join(work, 'skew-what-if.html');
  run('report', trace, '-o', files.whatIf, '--window', '1s', '--to', '+4s', '--what-if', '--no-progress');
  // A profiled run of the runtime (docs/FLAME.md): the report gets a flame view.
  const profiled = path.join(work, 'wc.snail');
  run('run', 'wordcount', '--workers', '2', '--duration', '1500ms', '--skew', '0.5', '--keys', '1000',
    '--profile', '--profile-hz', '997', '--trace', profiled, '-q');
  files.flame = path.join(work, 'flame.html');
  run('report', profiled, '-o', files.flame, '--window', '500ms', '--no-progress');
  files.flameJson = path.join(work, 'flame.json');
  run('report', profiled, '-o', files.flameJson, '--window', '500ms', '--format', 'json', '--no-progress');
  files.dashboard = path.join(work, 'dashboard.html');
  run('report', '-o', files.dashboard, '--dashboard');
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

// A page that records console errors, uncaught exceptions and every request it makes.
async function openPage() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  return { page, problems, requests };
}

const CHARTS = ['cp-time', 'conv-time', 'workers-window', 'workers-trace', 'operators-window',
  'operators-trace', 'timeline', 'heatmap'];

async function marks(page, chart) {
  return page.locator(`[data-chart="${chart}"] .mark`).count();
}

async function assertEveryChartDrawn(page) {
  for (const chart of CHARTS)
    assert.ok(await marks(page, chart) > 0, `chart ${chart} has no marks`);
  assert.ok(await page.locator('#top-all tbody tr').count() > 0, 'top table is empty');
  assert.ok(await page.locator('#diagnostics tbody tr').count() > 5, 'diagnostics table is empty');
}

async function hoverShowsTooltip(page, selector, expected) {
  await page.locator(selector).first().hover({ force: true });
  const tip = page.locator('#tooltip');
  await tip.waitFor({ state: 'visible', timeout: 2000 });
  const text = await tip.textContent();
  assert.match(text, expected, `tooltip of ${selector}: ${text}`);
}

test('the report opens from disk, draws every view and makes no request', async () => {
  const { page, problems, requests } = await openPage();
  const t0 = Date.now();
  await page.goto(pathToFileURL(files.html).href);
  await page.waitForSelector('body[data-windows]');
  const loadMs = Date.now() - t0;
  await assertEveryChartDrawn(page);
  assert.equal(await page.getAttribute('body', 'data-windows'), '20');
  // Each activity type with time gets a band in both time charts.
  assert.ok(await page.locator('[data-chart="cp-time"] path.area').count() >= 3);
  // The straggler of the skew scenario leads the whole-trace worker chart.
  const firstWorker = await page.locator('[data-chart="workers-trace"] text.label').first().textContent();
  assert.equal(firstWorker, 'count-0');
  assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), []);
  await page.screenshot({ path: path.join(artifacts, 'report.png'), fullPage: true });
  assert.deepEqual(problems, []);
  console.log(`report loaded and drawn in ${loadMs} ms`);
  await page.close();
});

test('the report opens on the most critical window and shows the verdict', async () => {
  const { page, problems } = await openPage();
  await page.goto(pathToFileURL(files.html).href);
  await page.waitForSelector('body[data-windows]');
  // The whole trace's verdict names the planted straggler.
  assert.equal(await page.getAttribute('#verdict', 'data-kind'), 'straggler');
  assert.match(await page.locator('#verdict').textContent(), /count-0 is the straggler/);
  // The selected window: among the windows with a timeline (not the first or last), the
  // one whose most critical activity has the most CP; its own verdict is shown too.
  const data = JSON.parse(fs.readFileSync(files.full, 'utf8'));
  const inner = data.timelines.slice(1, -1);
  const best = inner.reduce((a, b) => (b.score > a.score ? b : a));
  assert.ok(best.index !== 0, 'the most critical window is not the first');
  assert.match(await page.locator('#sel-label-w').textContent(), new RegExp(`selected: window ${best.index} `));
  assert.match(await page.locator('#verdict-sel').textContent(), new RegExp(`window ${best.index}:`));
  // Without --what-if there is no what-if table.
  assert.equal(await page.locator('#what-if table').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('with --what-if the report lists the savings', async () => {
  const { page, problems } = await openPage();
  await page.goto(pathToFileURL(files.whatIf).href);
  await page.waitForSelector('body[data-windows]');
  const rows = await page.locator('#what-if tbody tr').allTextContents();
  assert.ok(rows.length > 0, 'no what-if rows');
  assert.ok(rows.some((r) => /count-0/.test(r)), `the straggler is among the savings: ${rows}`);
  await page.screenshot({ path: path.join(artifacts, 'report-what-if.png'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('hovering shows tooltips with exact values', async () => {
  const { page, problems } = await openPage();
  await page.goto(pathToFileURL(files.html).href);
  await page.waitForSelector('body[data-windows]');
  await hoverShowsTooltip(page, '[data-chart="cp-time"] .overlay', /window \d+.*processing\s*\d+\.\d\d %/s);
  await hoverShowsTooltip(page, '[data-chart="workers-trace"] .bar-row', /CP\s*\d+\.\d\d %.*busy-time share/s);
  await hoverShowsTooltip(page, '[data-chart="operators-trace"] .bar-row', /CP\s*\d+\.\d\d %.*CP per worker\s*\d+\.\d\d %.*busy-time share/s);
  await hoverShowsTooltip(page, '[data-chart="timeline"] .edge', /on .*duration.*CP/s);
  await hoverShowsTooltip(page, '[data-chart="heatmap"] .mark', /→.*CP of messages/s);
  await page.mouse.move(1, 1);
  assert.deepEqual(problems, []);
  await page.close();
});

test('clicking a window in the time chart updates the other views', async () => {
  const { page, problems } = await openPage();
  await page.goto(pathToFileURL(files.html).href);
  await page.waitForSelector('body[data-windows]');
  const label = () => page.locator('#sel-label-w').textContent();
  const timeline = () => page.locator('#timeline-label').textContent();
  const before = [await label(), await timeline()];
  // Click near the left end of the CP chart: window 0 or 1.
  const overlay = page.locator('[data-chart="cp-time"] .overlay');
  const box = await overlay.boundingBox();
  await page.mouse.click(box.x + 5, box.y + box.height / 2);
  assert.equal(await page.getAttribute('body', 'data-selected'), '0');
  const after = [await label(), await timeline()];
  assert.match(after[0], /selected: window 0 /);
  assert.notEqual(after[0], before[0]);
  assert.match(after[1], /^window 0:/);  // the first window always has a timeline
  assert.notEqual(after[1], before[1]);
  const selection = await page.locator('[data-chart="cp-time"] rect.selection').boundingBox();
  assert.ok(Math.abs(selection.x - box.x) < 3, 'the selection band moved to the click');
  await assertEveryChartDrawn(page);
  // Zoom into the timeline: the axis shows a shorter range.
  const ticks = () => page.locator('[data-chart="timeline"] .axis text').allTextContents();
  const wide = await ticks();
  await page.click('#zoom-in');
  await page.click('#zoom-in');
  await page.waitForFunction((w) => [...document.querySelectorAll('[data-chart="timeline"] .axis text')].map((e) => e.textContent).join('|') !== w, wide.join('|'));
  assert.notDeepEqual(await ticks(), wide);
  await page.screenshot({ path: path.join(artifacts, 'report-selected.png'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

// The pixels of an element's screenshot, decoded by the page itself: [r, g, b, a] at (x, y).
async function pixels(page, locator) {
  const png = (await locator.screenshot()).toString('base64');
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    return { width: c.width, height: c.height, data: [...ctx.getImageData(0, 0, c.width, c.height).data] };
  }, png);
}

test('one window: the CP-over-time chart has the legend\'s colors', async () => {
  const { page, problems } = await openPage();
  await page.goto(pathToFileURL(files.oneWindow).href);
  await page.waitForSelector('body[data-windows]');
  assert.equal(await page.getAttribute('body', 'data-windows'), '1');
  const legend = await page.locator('#legend-types i').evaluateAll((is) => is.map((i) => {
    const m = getComputedStyle(i).backgroundColor.match(/\d+/g).map(Number);
    return m.slice(0, 3);
  }));
  assert.ok(legend.length >= 3, `legend: ${legend}`);
  // Sample the plot (the overlay covers it) on a grid away from its borders: a window with
  // transient paths is stacked to 100 %, so every sample is some type's band.
  const chart = page.locator('[data-chart="cp-time"] svg');
  const svgBox = await chart.boundingBox();
  const plot = await page.locator('[data-chart="cp-time"] .overlay').boundingBox();
  const img = await pixels(page, chart);
  const scale = img.width / svgBox.width;
  let samples = 0, matching = 0;
  for (let i = 1; i < 10; ++i)
    for (let j = 1; j < 10; ++j) {
      const x = Math.round((plot.x - svgBox.x + plot.width * i / 10) * scale);
      const y = Math.round((plot.y - svgBox.y + plot.height * j / 10) * scale);
      const k = (y * img.width + x) * 4;
      const px = img.data.slice(k, k + 3);
      ++samples;
      if (legend.some((c) => c.every((v, n) => Math.abs(v - px[n]) <= 2))) ++matching;
    }
  // A band boundary may fall on a sample (anti-aliased); the colors themselves must match.
  assert.ok(matching >= samples * 0.8, `${matching} of ${samples} samples have a legend color`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the live dashboard polls api/report and redraws as windows close', async () => {
  let body = 'null';  // serve before its first window
  let reports = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(fs.readFileSync(files.dashboard));
    } else if (req.url === '/api/report') {
      ++reports;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    } else if (req.url === '/api/jobgraph') {  // as the real servers: null, no Job graph yet
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('null');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const { page, problems } = await openPage();
    await page.goto(url);
    await page.waitForFunction(() => /^live: updated/.test(document.getElementById('status').textContent));
    assert.equal(await page.getAttribute('body', 'data-windows'), null);
    body = fs.readFileSync(files.partial);
    await page.waitForSelector('body[data-windows="5"]', { timeout: 5000 });
    await assertEveryChartDrawn(page);
    await page.screenshot({ path: path.join(artifacts, 'dashboard-5-windows.png'), fullPage: true });
    // Select window 2, then more windows close: the selection stays.
    // A poll may redraw the chart between finding the overlay and clicking it: retry.
    const overlay = page.locator('[data-chart="cp-time"] .overlay');
    for (let attempt = 0; attempt < 50; ++attempt) {
      const box = await overlay.boundingBox();
      if (box) await page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2);
      if ((await page.getAttribute('body', 'data-selected')) === '2') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(await page.getAttribute('body', 'data-selected'), '2');
    body = fs.readFileSync(files.full);
    await page.waitForSelector('body[data-windows="20"]', { timeout: 5000 });
    await assertEveryChartDrawn(page);
    assert.match(await page.locator('#sel-label-w').textContent(), /selected: window 2 /);
    assert.match(await page.locator('#status').textContent(), /^live: updated/);
    assert.ok(reports >= 2);
    await page.screenshot({ path: path.join(artifacts, 'dashboard-20-windows.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.close();
  } finally {
    server.close();
  }
});

// The same page served by `snailtrail serve --http`, fed by `snailtrail send`.
test('snailtrail serve shows the live dashboard while a producer streams', async () => {
  const ports = path.join(work, 'ports');
  const trace = path.join(work, 'skew.snail');
  const server = spawn(bin, ['serve', '--tcp', '127.0.0.1:0', '--http', '127.0.0.1:0',
    '--window', '1s', '--lateness', '100ms', '--port-file', ports, '--out', '/dev/null', '--quiet']);
  try {
    let text = '';
    for (let i = 0; i < 200 && !/http=/.test(text); ++i) {
      await new Promise((r) => setTimeout(r, 25));
      text = fs.existsSync(ports) ? fs.readFileSync(ports, 'utf8') : '';
    }
    const tcp = /tcp=(\d+)/.exec(text)[1];
    const httpPort = /http=(\d+)/.exec(text)[1];
    const { page, problems } = await openPage();
    await page.goto(`http://127.0.0.1:${httpPort}/`);
    await page.waitForFunction(() => /^live: updated/.test(document.getElementById('status').textContent));
    // 20 s of trace at 5x: windows close while the page is open.
    const sender = spawn(bin, ['send', trace, '--to', `127.0.0.1:${tcp}`, '--speed', '5x', '--quiet']);
    // Listen now: the sender may exit before the page has drawn 3 windows (a loaded machine).
    const senderExit = new Promise((resolve) => sender.on('exit', resolve));
    await page.waitForFunction(() => Number(document.body.dataset.windows || 0) >= 3, null,
      { timeout: 20000 });
    await assertEveryChartDrawn(page);
    await page.screenshot({ path: path.join(artifacts, 'serve-dashboard.png'), fullPage: true });
    await senderExit;
    await page.waitForFunction(() => Number(document.body.dataset.windows || 0) >= 15, null,
      { timeout: 20000 });
    assert.deepEqual(problems, []);
    await page.close();
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
  }
});

test('a profiled trace gets a flame graph: modes, zoom on click, search, tooltips', async () => {
  const { page, problems } = await openPage();
  // A trace without a profile: no flame view.
  await page.goto(pathToFileURL(files.html).href);
  await page.waitForSelector('body[data-windows]');
  assert.equal(await page.locator('#sec-flame').isHidden(), true);
  await page.goto(pathToFileURL(files.flame).href);
  await page.waitForSelector('body[data-windows]');
  assert.equal(await page.locator('#sec-flame').isVisible(), true);
  const data = JSON.parse(fs.readFileSync(files.flameJson, 'utf8')).flame;
  assert.deepEqual(Object.keys(data).sort(), ['critical', 'mixed', 'off-cpu', 'on-cpu']);
  const frames = () => page.locator('[data-chart="flame"] .frame');
  const total = async () => +(await page.getAttribute('[data-chart="flame"] svg', 'data-total'));
  for (const mode of ['on-cpu', 'off-cpu', 'mixed', 'critical']) {
    await page.selectOption('#flame-mode', mode);
    assert.equal(await total(), data[mode].total, `${mode}: the drawn total is the data's`);
    if (data[mode].total > 0) assert.ok(await frames().count() > 1, `${mode} draws frames`);
  }
  // Off-CPU: the runtime's own waits, under the idle loop's frames.
  await page.selectOption('#flame-mode', 'off-cpu');
  assert.ok(await page.locator('[data-chart="flame"] .frame[data-name*="snailtrail::flow::"]').count() > 0);
  // On-CPU: the operators are the roots; clicking one zooms on it (it becomes the top bar).
  await page.selectOption('#flame-mode', 'on-cpu');
  const op = page.locator('[data-chart="flame"] .frame[data-name^="[op "]').first();
  const opName = await op.getAttribute('data-name');
  const before = await frames().count();
  await op.click();
  const top = await page.locator('[data-chart="flame"] .frame').first().getAttribute('data-name');
  assert.equal(top, opName);
  assert.ok(await frames().count() <= before);
  await hoverShowsTooltip(page, '[data-chart="flame"] .frame', /samples \(\d+\.\d\d % of all\)/);
  // Clicking the top bar zooms out; reset too.
  await page.locator('[data-chart="flame"] .frame').first().click();
  assert.equal(await frames().count(), before);
  // Search: matching frames are highlighted and their share shown.
  await page.fill('#flame-search', 'count');
  assert.match(await page.locator('#flame-match').textContent(), /matched: \d+\.\d\d % of all/);
  assert.ok(await page.locator('[data-chart="flame"] rect[fill="#d62fd6"]').count() > 0);
  await page.screenshot({ path: path.join(artifacts, 'report-flame.png'), fullPage: true });
  await page.mouse.move(1, 1);
  assert.deepEqual(problems, []);
  await page.close();
});
