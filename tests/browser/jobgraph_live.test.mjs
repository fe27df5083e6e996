// Browser tests of the live Job graph (docs/REPORT.md, "Job graph", live) in Debian's
// chromium driven by playwright-core: a real `serve --tcp --http` fed in two parts (the
// page draws the graph from api/jobgraph, then redraws when the second part's windows
// close), and a real `run --http` whose dashboard draws the run's own graph. Run by
// `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/jobgraph_live.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { artifacts, bin, launchBrowser, root, runBinary, workDir } from './common.mjs';

const work = workDir('jobgraph-live');
let browser;
const children = [];

function start(args) {
  const child = spawn(bin, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  child.errText = '';
  child.stderr.on('data', (d) => { child.errText += d; });
  children.push(child);
  return child;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, f, ms = 8000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(50)) {
    const v = f();
    if (v) return v;
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function openLive(url) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  await page.goto(url);
  return { page, problems };
}

before(async () => {
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  for (const c of children) c.kill('SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
});

test('serve --http: the dashboard draws the Job graph and redraws as windows close', async () => {
  // A simulated word count (3 operators, 12 workers), split at 100 ms into two producers'
  // worth: names in both, events by time.
  const trace = path.join(work, 'wc.jsonl');
  runBinary('simulate', 'examples/wordcount-skew-30.toml', '--duration', '200ms', '-o', trace, '-q');
  const lines = fs.readFileSync(trace, 'utf8').trim().split('\n');
  const meta = lines.filter((l) => l.includes('"meta"'));
  const events = lines.filter((l) => !l.includes('"meta"'));
  const part = (keep) => [...meta, ...events.filter((l) => keep(JSON.parse(l).ts))].join('\n') + '\n';
  fs.writeFileSync(path.join(work, 'a.jsonl'), part((ts) => ts < 100e6));
  fs.writeFileSync(path.join(work, 'b.jsonl'), part((ts) => ts >= 100e6));
  const portFile = path.join(work, 'ports');
  start(['serve', '--tcp', '127.0.0.1:0', '--http', '127.0.0.1:0', '--window', '10ms', '--lateness', '1ms',
    '--idle-timeout', '200ms', '--port-file', portFile, '--out', '/dev/null', '--quiet']);
  const ports = await waitFor('the ports', () => {
    const text = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8') : '';
    const h = /http=(\d+)/.exec(text), t = /tcp=(\d+)/.exec(text);
    return h && t ? { http: h[1], tcp: t[1] } : null;
  });
  const { page, problems } = await openLive(`http://127.0.0.1:${ports.http}/`);
  runBinary('send', path.join(work, 'a.jsonl'), '--to', `127.0.0.1:${ports.tcp}`);
  await page.waitForSelector('#sec-jobgraph:not([hidden]) .jg-node', { timeout: 8000 });
  const names = await page.locator('.jg-node .jg-name').allTextContents();
  assert.deepEqual(names.sort(), ['count', 'flatmap', 'source']);
  assert.equal(await page.locator('.jg-edge').count(), 2);  // source -> flatmap -> count
  // Windows 0..8 of 10 ms close (the one of the last event waits for more).
  const closed = (n) => page.waitForFunction((k) => {
    const m = /of (\d+) windows stalled/.exec(document.getElementById('jobgraph-note').textContent);
    return m && Number(m[1]) >= k;
  }, n, { timeout: 8000 });
  await closed(9);
  const updates = Number(await page.evaluate(() => document.body.dataset.jobgraphUpdates));
  // The second part: more windows close, the page redraws with them (same nodes).
  runBinary('send', path.join(work, 'b.jsonl'), '--to', `127.0.0.1:${ports.tcp}`);
  await page.waitForFunction((u) => Number(document.body.dataset.jobgraphUpdates) > u, updates, { timeout: 8000 });
  await closed(18);
  assert.equal(await page.locator('.jg-node').count(), 3);
  // One row per worker (12) plus "all workers" in the series over time.
  assert.ok(await page.locator('#chart-jobgraph-time .jg-line').count() >= 12 * 3);
  await page.screenshot({ path: path.join(artifacts, 'jobgraph-live-serve.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

test('run --http: the run dashboard draws the run\'s own Job graph', async () => {
  const child = start(['run', 'wordcount', '--workers', '2', '--duration', '1500ms', '--http', '127.0.0.1:0',
    '--http-window', '200ms', '--http-linger', '30', '-q']);
  const port = await waitFor('the dashboard', () => (/live dashboard on http:\/\/127\.0\.0\.1:(\d+)\//.exec(child.errText) || [])[1]);
  const { page, problems } = await openLive(`http://127.0.0.1:${port}/`);
  await page.waitForSelector('#sec-jobgraph:not([hidden]) .jg-node', { timeout: 8000 });
  const names = await page.locator('.jg-node .jg-name').allTextContents();
  for (const op of ['source', 'split', 'count']) assert.ok(names.includes(op), `${op} in ${names}`);
  assert.ok(await page.locator('.jg-edge').count() >= 1);
  // The timeline above still draws.
  await page.waitForSelector('#latency path.series', { timeout: 8000 });
  await page.screenshot({ path: path.join(artifacts, 'jobgraph-live-run.png'), fullPage: true });
  assert.deepEqual(problems, []);
});
