// Browser tests of `snailtrail run --http`'s live dashboard (web/timeline.html,
// docs/CLOSED-LOOP.md), in Debian's chromium driven by playwright-core. The page comes
// from a short real run's server; it is then served next to a recorded timeline (a
// fixture built here, shaped like /api/timeline) and must draw a mark per decision and a
// span per migration. Run by `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/timeline.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { root, bin, artifacts, launchBrowser } from './common.mjs';


let browser;
let pageHtml;
let liveTimeline;  // what the real run's /api/timeline said at the end

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

// A short run with --http on a free port: its page and its final timeline.
before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  const child = spawn(bin, ['run', 'keycount', '--duration', '300ms', '--http', '127.0.0.1:0',
    '--http-linger', '5', '-q'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (c) => {
      err += c;
      const m = /live dashboard on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', () => reject(new Error(`run exited before serving: ${err}`)));
  });
  const page = await get(url);
  assert.equal(page.status, 200);
  pageHtml = page.body;
  for (let i = 0; i < 100; ++i) {
    liveTimeline = JSON.parse((await get(url + 'api/timeline')).body);
    if (liveTimeline.done) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

// A recorded closed-loop run: 10 s in 250 ms intervals, a rate step at 3 s, two DS2
// decisions and a rebalance, each with its migration (the last still running).
function fixture({ upTo = 10, done = true } = {}) {
  const intervals = [];
  for (let k = 1; k * 0.25 <= upTo + 1e-9; ++k) {
    const t = k * 0.25;
    const active = t < 3.6 ? 1 : t < 5.2 ? 2 : 3;
    const p50 = 0.4 + (t > 3 && t < 4.5 ? 6 : 0);
    intervals.push({ t_s: t, records: 1500, throughput: 6000, p50_ms: p50, p99_ms: p50 * 3,
      max_ms: p50 * 5, active_workers: active });
  }
  const decisions = [
    { time_s: 3.5, kind: 'ds2', active_workers: 2, reason: 'DS2: count needs 2 workers (true rate 20k/s)' },
    { time_s: 5.0, kind: 'ds2', active_workers: 3, reason: 'DS2: count needs 3 workers' },
    { time_s: 7.25, kind: 'rebalance', active_workers: 3, straggler: 'worker-0', cp_share: 0.6,
      next_cp: 0.2, bins_moved: 4, bins: [0, 1, 2, 3], reason: 'straggler worker-0 (CP 60%)' },
  ].filter((d) => d.time_s <= upTo);
  const migrations = [
    { strategy: 'batched', start_s: 3.5, end_s: 3.9, duration_s: 0.4, max_latency_ms: 7,
      bins_moved: 32, bytes_moved: 400000, steps: 8, completed: true },
    { strategy: 'batched', start_s: 5.0, end_s: 5.3, duration_s: 0.3, max_latency_ms: 3,
      bins_moved: 21, bytes_moved: 260000, steps: 8, completed: true },
    { strategy: 'batched', start_s: 7.25, end_s: 0, duration_s: 0, max_latency_ms: 1,
      bins_moved: 4, bytes_moved: 0, steps: 1, completed: false },
  ].filter((m) => m.start_s <= upTo);
  return { config: { job: 'keycount', workers: 4, bins: 64, autoscale: true, rebalance: true,
    rate: '0s:6k,3s:24k' }, done, intervals, decisions, migrations };
}

// A local server: the page at /, `timeline()` at /api/timeline, null at /api/jobgraph.
async function serve(timeline) {
  let polls = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(pageHtml);
    } else if (req.url === '/api/timeline') {
      ++polls;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(timeline()));
    } else if (req.url === '/api/jobgraph') {  // as the real servers: null, no Job graph yet
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('null');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}/`, polls: () => polls };
}

async function openPage() {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const problems = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  return { page, problems, requests };
}

async function assertMarks(page, tl) {
  for (const chart of ['latency', 'throughput']) {
    const marks = page.locator(`[data-chart="${chart}"] .decision-mark`);
    assert.equal(await marks.count(), tl.decisions.length, `${chart}: decision marks`);
    const xs = [];
    for (let i = 0; i < tl.decisions.length; ++i) {
      const m = marks.nth(i);
      assert.equal(+(await m.getAttribute('data-time')), tl.decisions[i].time_s);
      assert.ok((await m.locator('title').textContent()).includes(tl.decisions[i].reason));
      xs.push(+(await m.getAttribute('x1')));
    }
    for (let i = 1; i < xs.length; ++i) assert.ok(xs[i] > xs[i - 1], `${chart}: marks in time order`);
    const spans = page.locator(`[data-chart="${chart}"] .migration-span`);
    assert.equal(await spans.count(), tl.migrations.length, `${chart}: migration spans`);
    for (let i = 0; i < tl.migrations.length; ++i) {
      const m = tl.migrations[i];
      const s = spans.nth(i);
      assert.ok(+(await s.getAttribute('width')) > 0);
      assert.equal((await s.getAttribute('class')).includes('open'), !m.completed);
      assert.ok((await s.locator('title').textContent()).includes(`${m.bins_moved} bins`));
    }
  }
  for (const cls of ['p50', 'p99', 'max'])
    assert.equal(await page.locator(`[data-chart="latency"] path.${cls}`).count(), 1, cls);
  assert.equal(await page.locator('[data-chart="throughput"] path.tput').count(), 1);
  assert.equal(await page.locator('[data-chart="throughput"] path.active').count(), 1);
  assert.equal(await page.locator('#decisions tbody tr').count(), tl.decisions.length);
  assert.equal(await page.locator('#migrations tbody tr').count(), tl.migrations.length);
}

test('the real run served the page and a final timeline', () => {
  assert.match(pageHtml, /<svg id="latency"/);
  assert.doesNotMatch(pageHtml, /<script src|<link [^>]*href="http/);
  assert.equal(liveTimeline.done, true);
  assert.ok(liveTimeline.intervals.length >= 1);
  assert.deepEqual(liveTimeline.decisions, []);
  assert.deepEqual(liveTimeline.migrations, []);
});

test('a recorded timeline: a mark per decision, a span per migration, on both axes', async () => {
  const tl = fixture();
  const { server, url } = await serve(() => tl);
  try {
    const { page, problems, requests } = await openPage();
    await page.goto(url);
    await page.waitForSelector('body[data-done="true"]', { timeout: 5000 });
    assert.equal(await page.getAttribute('body', 'data-intervals'), String(tl.intervals.length));
    await assertMarks(page, tl);
    assert.match(await page.locator('#status').textContent(), /^run finished at 10\.00 s/);
    await page.screenshot({ path: path.join(artifacts, 'run-timeline-log.png'), fullPage: true });
    // The linear latency axis: the same marks.
    await page.check('input[name=scale][value=linear]');
    await assertMarks(page, tl);
    await page.screenshot({ path: path.join(artifacts, 'run-timeline-linear.png'), fullPage: true });
    assert.deepEqual(problems, []);
    for (const r of requests) assert.ok(r.startsWith(url), `request outside the server: ${r}`);
    await page.close();
  } finally {
    server.close();
  }
});

test('intervals without a completed epoch are drawn as stalls, not as zero latency', async () => {
  const tl = fixture();
  // 4.0-4.75 s: no epoch completed (the runtime's "samples": 0, percentiles 0).
  let stalls = 0;
  for (const p of tl.intervals) {
    const stalled = p.t_s > 4.0 && p.t_s <= 4.75;
    Object.assign(p, stalled ? { samples: 0, p50_ms: 0, p99_ms: 0, max_ms: 0 } : { samples: 250 });
    stalls += stalled;
  }
  assert.equal(stalls, 3);
  const { server, url } = await serve(() => tl);
  try {
    const { page, problems } = await openPage();
    await page.goto(url);
    await page.waitForSelector('body[data-done="true"]', { timeout: 5000 });
    for (const scale of ['log', 'linear']) {
      await page.check(`input[name=scale][value=${scale}]`);
      const bands = page.locator('[data-chart="latency"] rect.stall');
      assert.equal(await bands.count(), stalls, scale);
      assert.match(await bands.first().locator('title').textContent(), /4-4\.25 s: no epoch completed/);
      // Each series breaks at the stall: two runs of points, none at the stalled times.
      for (const cls of ['p50', 'p99', 'max']) {
        const d = await page.locator(`[data-chart="latency"] path.${cls}`).getAttribute('d');
        assert.equal((d.match(/M/g) || []).length, 2, `${scale} ${cls}: ${d}`);
        assert.equal((d.match(/[ML]/g) || []).length, tl.intervals.length - stalls);
      }
    }
    await page.screenshot({ path: path.join(artifacts, 'run-timeline-stall.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.close();
  } finally {
    server.close();
  }
});

test('live: marks appear as decisions arrive; the last state stays when the server goes', async () => {
  let upTo = 4;
  const { server, url, polls } = await serve(() => fixture({ upTo, done: false }));
  let closed = false;
  try {
    const { page, problems } = await openPage();
    await page.goto(url);
    await page.waitForSelector('body[data-decisions="1"]', { timeout: 5000 });
    await assertMarks(page, fixture({ upTo }));
    assert.equal(await page.getAttribute('body', 'data-done'), 'false');
    upTo = 8;
    await page.waitForSelector('body[data-decisions="3"]', { timeout: 5000 });
    await assertMarks(page, fixture({ upTo }));
    assert.ok(polls() >= 2);
    // The run ends and its server stops: the page keeps the last timeline.
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    closed = true;
    await page.waitForFunction(() => /not reachable/.test(document.getElementById('status').textContent),
      null, { timeout: 5000 });
    await assertMarks(page, fixture({ upTo }));
    const consoleErrors = problems.filter((p) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(p));
    assert.deepEqual(consoleErrors, []);
    await page.close();
  } finally {
    if (!closed) server.close();
  }
});
