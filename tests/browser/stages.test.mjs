// Browser tests of the "Tasks per stage" page of `snailtrail report` for Spark event logs
// (docs/REPORT.md, "Tasks per stage"), in Debian's chromium driven by playwright-core.
// Run by `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/stages.test.mjs
// Screenshots go to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { artifacts, bin, launchBrowser, openPage, runBinary, workDir } from './common.mjs';

const work = workDir('stages');

let browser;
const files = {};
const run = runBinary;

// A Spark 3.x event log by hand: stages 0 and 1 side by side, stage 2 reads both, stage 3
// reads stage 2 (and names stage 9, which Spark skipped: no node, no edge). Only stage 0
// is skewed (max 100 ms = 5x its median 20 ms); stage 3 has 6 tasks.
const T0 = 1700000000000;
function handLog() {
  const lines = [];
  const add = (o) => lines.push(JSON.stringify(o));
  const stage = (event, id, parents, submitted, completed) => add({ Event: event, 'Stage Info': {
    'Stage ID': id, 'Stage Attempt ID': 0, 'Stage Name': `stage${id} at Q.scala:${id + 1}`, 'Number of Tasks': 1,
    'RDD Info': [], 'Parent IDs': parents, Details: '', 'Submission Time': T0 + submitted,
    ...(completed === undefined ? {} : { 'Completion Time': T0 + completed }), Accumulables: [] }, Properties: {} });
  let id = 0;
  const task = (st, exec, launch, runMs, gc, read, written) => add({
    Event: 'SparkListenerTaskEnd', 'Stage ID': st, 'Stage Attempt ID': 0, 'Task Type': 'ShuffleMapTask',
    'Task End Reason': { Reason: 'Success' },
    'Task Info': { 'Task ID': id, Index: id, Attempt: 0, 'Partition ID': id++, 'Launch Time': T0 + launch,
      'Executor ID': exec, Host: 'h', Locality: 'PROCESS_LOCAL', Speculative: false, 'Getting Result Time': 0,
      'Finish Time': T0 + launch + runMs + 2, Failed: false, Killed: false, Accumulables: [] },
    'Task Metrics': { 'Executor Deserialize Time': 1, 'Executor Run Time': runMs, 'Result Size': 100,
      'JVM GC Time': gc, 'Result Serialization Time': 0, 'Memory Bytes Spilled': 0, 'Disk Bytes Spilled': 0,
      'Shuffle Read Metrics': { 'Remote Blocks Fetched': 0, 'Local Blocks Fetched': 0, 'Fetch Wait Time': 0,
        'Remote Bytes Read': read, 'Remote Bytes Read To Disk': 0, 'Local Bytes Read': 0, 'Total Records Read': 0 },
      'Shuffle Write Metrics': { 'Shuffle Bytes Written': written, 'Shuffle Write Time': 1000, 'Shuffle Records Written': 0 } },
  });
  add({ Event: 'SparkListenerApplicationStart', 'App Name': 'q', 'App ID': 'app-1', Timestamp: T0, User: 'u' });
  for (const e of ['1', '2']) add({ Event: 'SparkListenerExecutorAdded', Timestamp: T0, 'Executor ID': e,
    'Executor Info': { Host: 'h', 'Total Cores': 4, 'Log Urls': {} } });
  add({ Event: 'SparkListenerJobStart', 'Job ID': 0, 'Submission Time': T0, 'Stage IDs': [0, 1, 2, 3, 9], Properties: {} });
  stage('SparkListenerStageSubmitted', 0, [], 1);
  stage('SparkListenerStageSubmitted', 1, [], 1);
  for (const r of [10, 20, 30, 100]) task(0, '1', 2, r, 1, 0, 1000);
  for (const r of [40, 50, 60]) task(1, '2', 2, r, 5, 0, 500);
  stage('SparkListenerStageCompleted', 0, [], 1, 110);
  stage('SparkListenerStageCompleted', 1, [], 1, 110);
  stage('SparkListenerStageSubmitted', 2, [0, 1], 111);
  for (const r of [30, 35]) task(2, '1', 112, r, 0, 2000, 300);
  stage('SparkListenerStageCompleted', 2, [0, 1], 111, 160);
  stage('SparkListenerStageSubmitted', 3, [2, 9], 161);
  for (const [k, r] of [12, 13, 14, 15, 16, 17].entries()) task(3, k < 3 ? '1' : '2', 162, r, 0, 100, 0);
  stage('SparkListenerStageCompleted', 3, [2, 9], 161, 190);
  add({ Event: 'SparkListenerJobEnd', 'Job ID': 0, 'Completion Time': T0 + 191, 'Job Result': { Result: 'JobSucceeded' } });
  return lines.join('\n') + '\n';
}

before(async () => {
  const log = path.join(work, 'app-hand');
  fs.writeFileSync(log, handLog());
  files.hand = path.join(work, 'hand.html');
  run('report', log, '-o', files.hand);
  files.json = JSON.parse(run('report', log, '-o', '-', '-f', 'json'));
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const open = (file) => openPage(browser, file, { width: 1400, height: 900 });

test('the hand-made log: DAG, skew badge, table by CP, a stage\'s distribution', async () => {
  const { page, problems, requests } = await open(files.hand);
  assert.equal(await page.title(), 'snailtrail report: Tasks per stage');
  // One node per stage, one edge per shuffle dependency: 0->2, 1->2, 2->3 (not 9->3).
  const nodes = await page.locator('#dag .stage-node').evaluateAll((gs) => gs.map((g) => Number(g.dataset.stage)));
  assert.deepEqual(nodes.sort(), [0, 1, 2, 3]);
  const edges = await page.locator('#dag .dag-edge').evaluateAll((ps) => ps.map((p) => `${p.dataset.from}->${p.dataset.to}`));
  assert.deepEqual(edges.sort(), ['0->2', '1->2', '2->3']);
  // Each edge leaves its parent's node and enters its child's (left to right).
  for (const [from, to] of [[0, 2], [1, 2], [2, 3]]) {
    const a = await page.locator(`#dag .stage-node[data-stage="${from}"]`).boundingBox();
    const b = await page.locator(`#dag .stage-node[data-stage="${to}"]`).boundingBox();
    assert.ok(a.x + a.width <= b.x, `stage ${from} left of stage ${to}`);
  }
  // The skew badge on exactly the skewed stage, in the DAG and in the table.
  const badged = await page.locator('#dag .stage-node:has(.skew-badge)').evaluateAll((gs) => gs.map((g) => g.dataset.stage));
  assert.deepEqual(badged, ['0']);
  assert.equal(await page.locator('#dag .stage-node[data-stage="0"] .skew-badge text').textContent(), '5.0×');
  const flagged = await page.locator('#stages tbody tr:has(.skew.flag)').evaluateAll((rs) => rs.map((r) => r.dataset.stage));
  assert.deepEqual(flagged, ['0']);
  // Node colours follow CP: the most critical stage is the reddest (least green).
  const cps = Object.fromEntries(files.json.stages.map((s) => [s.id, s.cp]));
  const green = await page.locator('#dag .stage-node rect:first-child').evaluateAll((rs) =>
    rs.map((r) => [Number(r.parentNode.dataset.stage), Number(getComputedStyle(r).fill.match(/\d+/g)[1])]));
  const top = Object.entries(cps).sort((a, b) => b[1] - a[1])[0][0];
  const reddest = green.sort((a, b) => a[1] - b[1])[0][0];
  assert.equal(String(reddest), top);
  // The table: one row per stage, sorted by CP, most critical first, as the JSON says.
  const rows = await page.locator('#stages tbody tr').evaluateAll((rs) => rs.map((r) => [Number(r.dataset.stage), Number(r.dataset.cp)]));
  assert.equal(rows.length, 4);
  const byCp = files.json.stages.slice().sort((a, b) => b.cp - a.cp || a.id - b.id).map((s) => s.id);
  assert.deepEqual(rows.map((r) => r[0]), byCp);
  for (let k = 1; k < rows.length; ++k) assert.ok(rows[k - 1][1] >= rows[k][1]);
  assert.ok(rows[0][1] > 0, 'some stage has CP');
  // A click on a heading sorts by it: stage id ascending.
  await page.locator('#stages th[data-col="stage"]').click();
  assert.deepEqual(await page.locator('#stages tbody tr').evaluateAll((rs) => rs.map((r) => Number(r.dataset.stage))), [0, 1, 2, 3]);
  await page.locator('#stages th[data-col="CP"]').click();
  assert.deepEqual(await page.locator('#stages tbody tr').evaluateAll((rs) => rs.map((r) => Number(r.dataset.stage))), byCp);
  // Clicking a stage shows its distribution: stage 3's 6 tasks, then stage 0's 4.
  await page.locator('#stages tbody tr[data-stage="3"]').click();
  assert.equal(await page.locator('#hist svg').getAttribute('data-stage'), '3');
  assert.equal(await page.locator('#hist svg').getAttribute('data-tasks'), '6');
  const bins = await page.locator('#hist rect.bin').evaluateAll((rs) => rs.reduce((n, r) => n + Number(r.dataset.count), 0));
  assert.equal(bins, 6);
  assert.match(await page.locator('#detail').textContent(), /12 ms \/ 14 ms \/ 17 ms \/ 17 ms/);
  await page.locator('#dag .stage-node[data-stage="0"]').click();
  assert.equal(await page.locator('#hist svg').getAttribute('data-tasks'), '4');
  assert.equal(await page.locator('#stages tbody tr.selected').getAttribute('data-stage'), '0');
  const text = await page.locator('#detail').textContent();
  assert.match(text, /10 ms \/ 20 ms \/ 100 ms \/ 100 ms/);
  assert.match(text, /5\.0× — skewed/);
  assert.match(text, /GC time4 ms \(2\.50 % of the tasks. time\)/);  // 4 × 1 ms of 160 ms
  assert.match(text, /shuffle read \/ write0 B \/ 3\.91 KiB/);  // 4 × 1000 B
  assert.equal(await page.locator('#hist rect.bin.top').count(), 1);
  await page.screenshot({ path: path.join(artifacts, 'stages-hand.png'), fullPage: true });
  assert.deepEqual(problems, []);
  assert.ok(requests.every((u) => u.startsWith('file:') || u.startsWith('data:')), requests.join(' '));
});
