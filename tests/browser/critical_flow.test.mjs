// Browser tests of the "Critical flow" page of `snailtrail report` for kernel traces
// (docs/REPORT.md, "Critical flow"), in Debian's chromium driven by playwright-core.
// Run by `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/critical_flow.test.mjs
// Screenshots go to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { artifacts, bin, launchBrowser, openPage, runBinary, workDir } from './common.mjs';

const work = workDir('flow');

let browser;
const files = {};
const run = runBinary;

// `perf script` text (perf 4.x key=value layout) of three threads, as in
// tests/test_report_critical_flow.cpp: client(100) runs 0-10 µs, sleeps until worker wakes
// it at 40, runs 41-50; worker(200) sleeps on a timer 5-30, runs 32-45, waits for the disk
// (irq 33) 45-60, runs 62-70; cruncher(300) runs all along but for 20-25.
// The path of client: client 0-10 | worker timer 10-30, preempted, running 32-40 |
// client preempted 40-41, running 41-50, blocked 50-70: 7 segments, 2 hops.
function handTrace() {
  const comms = { 0: 'swapper', 100: 'client', 200: 'worker', 300: 'cruncher' };
  const lines = [];
  const T = 555000000;  // µs since boot
  const head = (cpu, us, cur, ev) => {
    const t = T + us;
    const time = `${Math.floor(t / 1e6)}.${String(t % 1e6).padStart(6, '0')}`;
    return `${comms[cur].padStart(16)} ${String(cur).padStart(6)} [${String(cpu).padStart(3, '0')}] ${time}: ${ev.padStart(26)}: `;
  };
  const sw = (cpu, us, prev, state, next) => lines.push(head(cpu, us, prev, 'sched:sched_switch') +
    `prev_comm=${comms[prev]} prev_pid=${prev} prev_prio=120 prev_state=${state} ==> next_comm=${comms[next]} next_pid=${next} next_prio=120`);
  const waking = (cpu, us, cur, target) => lines.push(head(cpu, us, cur, 'sched:sched_waking') +
    `comm=${comms[target]} pid=${target} prio=120 target_cpu=00${cpu}`);
  sw(0, 0, 0, 'R', 100);
  sw(1, 0, 0, 'R', 200);
  sw(2, 0, 0, 'R', 300);
  sw(1, 5, 200, 'S', 0);
  sw(0, 10, 100, 'S', 0);
  sw(2, 20, 300, 'R', 0);
  sw(2, 25, 0, 'R', 300);
  lines.push(head(1, 30, 0, 'timer:hrtimer_expire_entry') + `hrtimer=0xffff9a3c7fc1e8e0 now=${(T + 30) * 1000} function=hrtimer_wakeup/0x0`);
  waking(1, 30, 0, 200);
  lines.push(head(1, 30, 0, 'timer:hrtimer_expire_exit') + 'hrtimer=0xffff9a3c7fc1e8e0');
  sw(1, 32, 0, 'R', 200);
  waking(1, 40, 200, 100);
  sw(0, 41, 0, 'R', 100);
  sw(1, 45, 200, 'D', 0);
  sw(0, 50, 100, 'S', 0);
  lines.push(head(1, 60, 0, 'irq:irq_handler_entry') + 'irq=33 name=nvme0q33');
  lines.push(head(1, 60, 0, 'block:block_rq_complete') + '259,0 R () 1052672 + 8 [0]');
  waking(1, 60, 0, 200);
  lines.push(head(1, 60, 0, 'irq:irq_handler_exit') + 'irq=33 ret=handled');
  sw(1, 62, 0, 'R', 200);
  sw(1, 70, 200, 'S', 0);
  sw(2, 70, 300, 'S', 0);
  return lines.join('\n') + '\n';
}

before(async () => {
  const trace = path.join(work, 'sched.txt');
  fs.writeFileSync(trace, handTrace());
  files.hand = path.join(work, 'flow.html');
  run('report', trace, '-o', files.hand);
  files.json = JSON.parse(run('report', trace, '-o', '-', '-f', 'json'));
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const open = (file) => openPage(browser, file, { width: 1400, height: 800 });

const tids = (page, sel) => page.locator(sel).evaluateAll((ns) => ns.map((n) => Number(n.dataset.tid)));

test('lanes, the path across them with its hops, the picker and zoom to a wait', async () => {
  const { page, problems, requests } = await open(files.hand);
  assert.equal(await page.title(), 'snailtrail report: Critical flow');
  // One lane per thread, the opened path's threads first.
  assert.deepEqual(await tids(page, '#flow .lane'), [100, 200, 300]);
  // The picker by running time; it opens on client, the path with hops.
  assert.deepEqual(await tids(page, '#picker .pick'), [300, 200, 100]);
  assert.deepEqual(await tids(page, '#picker .pick.selected'), [100]);
  // One overlay per path segment, in path order, each on its thread's lane.
  const want = [100, 200, 200, 200, 100, 100, 100];
  assert.deepEqual(await tids(page, '#flow .overlay'), want);
  const states = await page.locator('#flow .overlay').evaluateAll((ns) => ns.map((n) => n.dataset.state));
  assert.deepEqual(states, ['running', 'timer', 'preempted', 'running', 'preempted', 'running', 'blocked']);
  // Each overlay's vertical centre on its lane's label's (one round trip each).
  const laneY = await page.locator('#flow .lane').evaluateAll((ns) => Object.fromEntries(ns.map((n) => {
    const b = n.querySelector('text').getBoundingClientRect();
    return [n.dataset.tid, b.y + b.height / 2];
  })));
  const overlayY = await page.locator('#flow .overlay').evaluateAll((ns) => ns.map((n) => {
    const b = n.getBoundingClientRect();
    return b.y + b.height / 2;
  }));
  overlayY.forEach((y, k) => assert.ok(Math.abs(y - laneY[want[k]]) < 8, `segment ${k} on lane ${want[k]}: ${y} vs ${laneY[want[k]]}`));
  const overlays = page.locator('#flow .overlay');
  // An arrow at each wake-up hop: client -> worker at 10 µs, worker -> client at 40 µs,
  // at the segments' boundaries.
  const hops = await page.locator('#flow .hop').evaluateAll((ns) => ns.map((n) => [Number(n.dataset.from), Number(n.dataset.to), Number(n.getAttribute('x1'))]));
  assert.deepEqual(hops.map((h) => h.slice(0, 2)), [[100, 200], [200, 100]]);
  const segX = await overlays.evaluateAll((ns) => ns.map((n) => Number(n.getAttribute('x'))));
  assert.ok(Math.abs(hops[0][2] - segX[1]) < 1 && Math.abs(hops[1][2] - segX[4]) < 1, `${hops} ${segX}`);
  // The table: client 40 µs (19 running), worker 30 µs (20 timer), and the total.
  const rows = await page.locator('#states tbody tr').evaluateAll((rs) => rs.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0].slice(0, 4), ['client:100', '0.040', '57.1 %', '0.019']);
  assert.deepEqual(rows[1].slice(0, 3), ['worker:200', '0.030', '42.9 %']);
  assert.deepEqual(rows[2].slice(0, 3), ['total', '0.070', '100.0 %']);
  await page.screenshot({ path: path.join(artifacts, 'critical-flow-hand.png'), fullPage: true });

  // Picking another thread redraws its path: worker's own lane, no hop; its lane first.
  await page.locator('#picker .pick[data-tid="200"]').click();
  assert.deepEqual(await tids(page, '#flow .overlay'), [200, 200, 200, 200, 200, 200, 200]);
  assert.equal(await page.locator('#flow .hop').count(), 0);
  assert.deepEqual((await tids(page, '#flow .lane'))[0], 200);
  assert.match(await page.locator('#flow .overlay[data-state="block_device"] title').textContent(), /irq 33 \(nvme0q33\)/);
  await page.locator('#picker .pick[data-tid="300"]').click();
  assert.deepEqual(await tids(page, '#flow .overlay'), [300, 300, 300]);

  // Clicking a wait zooms the time axis to it (10 % on each side), Reset zooms out.
  await page.locator('#picker .pick[data-tid="100"]').click();
  assert.equal(await page.locator('#flow .overlay').count(), 7);
  const flow = page.locator('#flow');
  assert.equal(await flow.getAttribute('data-view-to'), String(files.json.duration_ns));
  await page.locator('#flow .overlay[data-state="timer"]').click();
  assert.equal(await flow.getAttribute('data-view-from'), '8000');
  assert.equal(await flow.getAttribute('data-view-to'), '32000');
  const wait = await page.locator('#flow .overlay[data-state="timer"]').boundingBox();
  const whole = await flow.boundingBox();
  assert.ok(wait.width > 0.7 * (whole.width - 220), `the wait fills the axis: ${wait.width}`);
  // Only the segments in view are drawn: the timer wait and its neighbours.
  assert.deepEqual(await page.locator('#flow .overlay').evaluateAll((ns) => ns.map((n) => n.dataset.state)),
    ['running', 'timer', 'preempted']);
  await page.locator('#reset').click();
  assert.equal(await flow.getAttribute('data-view-from'), '0');
  assert.equal(await page.locator('#flow .overlay').count(), 7);
  assert.equal(await page.locator('#flow .hop').count(), 2);

  assert.deepEqual(problems, []);
  assert.ok(requests.every((u) => u.startsWith('file:') || u.startsWith('data:')), requests.join(' '));
});
