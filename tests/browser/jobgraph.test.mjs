// Browser tests of the report's "Job graph" section for dataflow traces (docs/REPORT.md,
// "Job graph"), in Debian's chromium driven by playwright-core. Run by `make test-browser`
// or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/jobgraph.test.mjs
// Screenshots go to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bin, artifacts, workDir, launchBrowser, runBinary } from './common.mjs';

const work = workDir('jobgraph');

let browser;
const files = {};
const run = runBinary;

// The trace of tests/test_report_job_graph.cpp (µs): operators 1 src, 2 map, 3 count on
// workers w0 and w1, one batch map -> count; in 50 µs windows the third, [100, 150), has no
// end of an operator's activity: a stall.
function handTrace() {
  const lines = [
    { meta: 'worker', id: 0, name: 'w0' }, { meta: 'worker', id: 1, name: 'w1' },
    { meta: 'operator', id: 1, name: 'src' }, { meta: 'operator', id: 2, name: 'map' }, { meta: 'operator', id: 3, name: 'count' }];
  const act = (worker, activity, op, from, to) => {
    const o = op ? { operator: op } : {};
    lines.push({ ts: from * 1000, worker, activity, event: 'start', ...o }, { ts: to * 1000, worker, activity, event: 'end', ...o });
  };
  act(0, 'input', 1, 0, 20); act(0, 'processing', 2, 20, 50); act(0, 'serialization', 2, 50, 60);
  lines.push({ ts: 60000, worker: 0, activity: 'data_message', event: 'send', correlator: 1, remote: 1 });
  act(0, 'processing', 3, 60, 90); act(0, 'waiting', 0, 90, 100); act(0, 'processing', 3, 100, 160);
  act(1, 'input', 1, 0, 10); act(1, 'processing', 2, 10, 40);
  lines.push({ ts: 40000, worker: 1, activity: 'waiting', event: 'start' },  // the receipt inside the wait
    { ts: 62000, worker: 1, activity: 'data_message', event: 'recv', correlator: 1, remote: 0 },
    { ts: 65000, worker: 1, activity: 'waiting', event: 'end' });
  act(1, 'processing', 3, 65, 100); act(1, 'waiting', 0, 100, 160);
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  const trace = path.join(work, 'hand.jsonl');
  fs.writeFileSync(trace, handTrace());
  files.hand = path.join(work, 'hand.html');
  run('report', trace, '--window', '50us', '-o', files.hand, '--no-progress');
  files.json = JSON.parse(run('report', trace, '--window', '50us', '-o', '-', '-f', 'json', '--no-progress'));
  // A closed loop's decision at 50 µs and a migration over [60, 80] µs (run --stats-json).
  const stats = path.join(work, 'stats.json');
  fs.writeFileSync(stats, JSON.stringify({
    decisions: [{ time_s: 5e-5, kind: 'ds2', active_workers: 2, reason: 'r' }],
    migrations: [{ strategy: 'batched', start_s: 6e-5, end_s: 8e-5, bins_moved: 4 }] }));
  files.marks = path.join(work, 'marks.html');
  run('report', trace, '--window', '50us', '--stats-json', stats, '-o', files.marks, '--no-progress');
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

test('the job graph: a node per operator, an edge per channel, CP colours, workers, stalls', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [], requests = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(files.hand).href);
  await page.waitForSelector('body[data-jobgraph="drawn"]');
  assert.equal(await page.locator('#sec-jobgraph').isVisible(), true);
  const g = files.json.jobgraph;
  // One node per operator, one edge per channel (map -> count), drawn left to right.
  const nodes = await page.locator('#chart-jobgraph .jg-node').evaluateAll((gs) => gs.map((n) => Number(n.dataset.op)));
  assert.deepEqual(nodes.sort(), [1, 2, 3]);
  const edges = await page.locator('#chart-jobgraph .jg-edge').evaluateAll((ps) => ps.map((p) => `${p.dataset.from}->${p.dataset.to}`));
  assert.deepEqual(edges, g.channels.map(([a, b]) => `${a}->${b}`));
  assert.deepEqual(edges, ['2->3']);
  const a = await page.locator('.jg-node[data-op="2"]').boundingBox();
  const b = await page.locator('.jg-node[data-op="3"]').boundingBox();
  assert.ok(a.x + a.width < b.x, 'map left of count');
  // Fill follows CP: sorted by CP, the nodes' green channel does not rise (redder = more CP).
  const green = await page.locator('.jg-node rect').evaluateAll((rs) =>
    rs.map((r) => [Number(r.parentNode.dataset.op), Number(getComputedStyle(r).fill.match(/\d+/g)[1])]));
  const cp = Object.fromEntries(g.operators.map((o) => [o.id, o.cp]));
  const byCp = green.slice().sort((x, y) => cp[y[0]] - cp[x[0]]);
  for (let k = 1; k < byCp.length; ++k) assert.ok(byCp[k - 1][1] <= byCp[k][1], JSON.stringify(byCp));
  assert.ok(byCp[0][1] < byCp[byCp.length - 1][1], 'the most critical operator is redder than the least');
  // Labels: name, parallelism, busy.
  assert.match(await page.locator('.jg-node[data-op="3"]').textContent(), /count×2 · busy .* %CP .* %/);
  // Clicking a node shows its workers: one row each.
  await page.locator('.jg-node[data-op="1"]').click();
  assert.equal(await page.locator('#jobgraph-op-title').textContent(), 'Workers of src');
  const rows = await page.locator('#jobgraph-table tbody tr').evaluateAll((rs) => rs.map((r) => r.cells[0].textContent));
  assert.deepEqual(rows, ['w0', 'w1']);
  assert.match(await page.locator('#jobgraph-table tbody tr').first().textContent(), /w0/);
  // Stalls: the third point is hatched in every lane (all workers + 2 workers, 3 measures)
  // and no other is; the lines (a step per point) break there instead of dropping to zero.
  assert.deepEqual(g.points.map((p) => p.stalls), [0, 0, 1, 0]);
  const stalls = await page.locator('.jg-stall').evaluateAll((rs) => rs.map((r) => Number(r.dataset.point)));
  assert.equal(stalls.length, 9);
  assert.ok(stalls.every((p) => p === 2));
  const busyLine = await page.locator('.jg-line[data-worker="0"][data-measure="busy"]').getAttribute('d');
  assert.equal((busyLine.match(/M/g) || []).length, 2, busyLine);
  assert.equal((busyLine.match(/L/g) || []).length, 4, busyLine);  // a step per point: 2 + 1 points
  await page.locator('#sec-jobgraph').screenshot({ path: path.join(artifacts, 'jobgraph-hand.png') });
  assert.deepEqual(problems, []);
  assert.ok(requests.every((u) => u.startsWith('file:') || u.startsWith('data:')), requests.join(' '));
  await page.close();
});

test('the closed loop: a decision line and a migration band in each panel, at their times', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  await page.goto(pathToFileURL(files.marks).href);
  await page.waitForSelector('body[data-jobgraph="drawn"]');
  assert.equal(await page.locator('.jg-mark-decision').count(), 3);
  assert.equal(await page.locator('.jg-mark-migration').count(), 3);
  // In the busy panel (the first): the decision at 50 of 200 µs, the band over 60–80 µs.
  const lane = await page.locator('.jg-lane').first().boundingBox();
  const line = await page.locator('.jg-mark-decision').first().boundingBox();
  const band = await page.locator('.jg-mark-migration').first().boundingBox();
  assert.ok(Math.abs(line.x - (lane.x + lane.width * 50 / 200)) < 3, JSON.stringify([lane, line]));
  assert.ok(Math.abs(band.x - (lane.x + lane.width * 60 / 200)) < 3, JSON.stringify([lane, band]));
  assert.ok(Math.abs(band.width - lane.width * 20 / 200) < 3, JSON.stringify([lane, band]));
  assert.match(await page.locator('#jobgraph-note').textContent(), /2 decisions and migrations marked/);
  assert.deepEqual(problems, []);
  await page.close();
});
