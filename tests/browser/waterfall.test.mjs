// Browser tests of the "Waterfall" page of `snailtrail report` for span traces
// (docs/REPORT.md, "Waterfall"), in Debian's chromium driven by playwright-core. Run by
// `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/waterfall.test.mjs
// Screenshots go to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { artifacts, bin, launchBrowser, openPage, root, workDir } from './common.mjs';

const work = workDir('waterfall');

let browser;
const files = {};
const run = (...args) => execFileSync(bin, args, { cwd: root, encoding: 'utf8' });

// Jaeger JSON of a few hand-made traces. Trace a1 (the slowest, 100 µs): A api GET /x
// [1000, 1100] µs with children B db query [1010, 1050] and C cache get [1040, 1080]; its
// critical path by hand: A [0, 40), C [40, 80), A [80, 100) µs, B off the path.
// Trace a2 (60 µs) and a3 (30 µs): a root with one child.
function handTraces() {
  const span = (trace, id, parent, op, proc, start, duration) => ({
    traceID: trace, spanID: id, operationName: op, processID: proc, startTime: start, duration,
    references: parent ? [{ refType: 'CHILD_OF', traceID: trace, spanID: parent }] : [],
  });
  const processes = { p1: { serviceName: 'api' }, p2: { serviceName: 'db' }, p3: { serviceName: 'cache' } };
  return { data: [
    { traceID: '00000000000000a3', processes, spans: [
      span('00000000000000a3', '0000000000000031', null, 'GET /z', 'p1', 5000, 30),
      span('00000000000000a3', '0000000000000032', '0000000000000031', 'query', 'p2', 5005, 20)] },
    { traceID: '00000000000000a1', processes, spans: [
      span('00000000000000a1', '0000000000000001', null, 'GET /x', 'p1', 1000, 100),
      span('00000000000000a1', '0000000000000002', '0000000000000001', 'query', 'p2', 1010, 40),
      span('00000000000000a1', '0000000000000003', '0000000000000001', 'get', 'p3', 1040, 40)] },
    { traceID: '00000000000000a2', processes, spans: [
      span('00000000000000a2', '0000000000000021', null, 'GET /y', 'p1', 3000, 60),
      span('00000000000000a2', '0000000000000022', '0000000000000021', 'get', 'p3', 3010, 45)] },
  ] };
}

before(async () => {
  const hand = path.join(work, 'hand.json');
  fs.writeFileSync(hand, JSON.stringify(handTraces()));
  files.hand = path.join(work, 'hand.html');
  run('report', hand, '-o', files.hand);
  // The same file cut inside its last trace (a file still being written).
  const text = JSON.stringify(handTraces());
  const cut = path.join(work, 'cut.json');
  fs.writeFileSync(cut, text.slice(0, text.indexOf('0000000000000022') + 8));
  files.cut = path.join(work, 'cut.html');
  execFileSync(bin, ['report', cut, '-o', files.cut], { cwd: root, stdio: 'ignore' });
  // Generated checkout requests (scripts/gen-spans.py): 60 traces, 12 embedded.
  const spans = path.join(work, 'checkout.json');
  execFileSync('python3', ['scripts/gen-spans.py', '--traces', '60', '--items', '3', '-o', spans], { cwd: root });
  files.gen = path.join(work, 'checkout.html');
  run('report', spans, '-o', files.gen, '--traces', '12');
  files.genJson = path.join(work, 'checkout-waterfall.json');
  run('report', spans, '-o', files.genJson, '--traces', '12', '-f', 'json');
  // One big trace (about 2 400 spans): drawn as it scrolls.
  const big = path.join(work, 'big.json');
  execFileSync('python3', ['scripts/gen-spans.py', '--traces', '1', '--items', '800', '-o', big], { cwd: root });
  files.big = path.join(work, 'big.html');
  run('report', big, '-o', files.big);
  files.bigJson = path.join(work, 'big-waterfall.json');
  run('report', big, '-o', files.bigJson, '-f', 'json');
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const open = (file) => openPage(browser, file, { width: 1400, height: 1000 });

// The rows of the critical-section overlays in the order of their numbers.
async function overlays(page) {
  const seq = await page.locator('.crit').evaluateAll((cs) => cs.map((c) => [Number(c.dataset.seq), Number(c.dataset.row),
    Number(c.closest('.span-row').dataset.row)]));
  seq.sort((a, b) => a[0] - b[0]);
  return seq;
}

test('the hand-made trace: rows, critical sections in path order, span details', async () => {
  const { page, problems, requests } = await open(files.hand);
  assert.match(await page.locator('h2').first().textContent(), /^Waterfall/);
  // The picker: slowest first.
  const picker = await page.locator('#picker tr.trace').evaluateAll((rs) => rs.map((r) => Number(r.dataset.duration)));
  assert.deepEqual(picker, [100000, 60000, 30000]);
  assert.equal(await page.locator('#facts .issues').count(), 0);
  assert.equal(await page.getAttribute('body', 'data-trace'), '0');
  assert.equal(await page.locator('.span-row').count(), 3);
  const labels = await page.locator('.span-row .wf-label').allTextContents();
  assert.deepEqual(labels, ['api GET /x', 'db query', 'cache get']);
  // A [0, 40), C [40, 80), A [80, 100): on rows 0, 2, 0, numbered 1, 2, 3; none on B.
  const crit = await overlays(page);
  assert.deepEqual(crit.map((c) => c[0]), [1, 2, 3]);
  assert.deepEqual(crit.map((c) => c[2]), [0, 2, 0]);
  assert.deepEqual(crit.map((c) => c[1]), [0, 2, 0]);
  assert.equal(await page.locator('.span-row[data-row="1"] .crit').count(), 0);
  // Overlays in time order on the axis: each starts where the previous one ended.
  const boxes = [];
  for (const n of [1, 2, 3]) boxes.push(await page.locator(`.crit[data-seq="${n}"]`).boundingBox());
  for (let k = 1; k < 3; ++k) assert.ok(Math.abs(boxes[k].x - (boxes[k - 1].x + boxes[k - 1].width)) < 1.5, `sections ${k} and ${k + 1} touch`);
  // Clicking a span shows its figures: A's self time 100 - |[10, 80)| = 30 µs.
  await page.locator('.span-row[data-row="0"]').click();
  const field = (f) => page.locator(`#detail tr[data-field="${f}"] td`).nth(1).textContent();
  assert.equal(await field('service'), 'api');
  assert.equal(await field('operation'), 'GET /x');
  assert.equal(await field('start offset'), '0 ns');
  assert.equal(await field('duration'), '100 µs');
  assert.equal(await field('self time'), '30 µs');
  assert.match(await field('critical time'), /^60 µs \(60\.0 %/);
  await page.locator('.span-row[data-row="1"]').click();
  assert.equal(await field('service'), 'db');
  assert.equal(await field('start offset'), '10 µs');
  assert.match(await field('critical time'), /^0 ns/);
  // Another trace: redrawn with its own rows and path.
  await page.locator('#picker tr.trace[data-index="1"]').click();
  assert.equal(await page.getAttribute('body', 'data-trace'), '1');
  assert.equal(await page.locator('.span-row').count(), 2);
  assert.deepEqual(await page.locator('.span-row .wf-label').allTextContents(), ['api GET /y', 'cache get']);
  // GET /y [0, 60) with get [10, 55): root [0, 10), get [10, 55), root [55, 60).
  assert.deepEqual((await overlays(page)).map((c) => c[2]), [0, 1, 0]);
  assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), []);
  assert.deepEqual(problems, []);
  await page.close();
});

test('generated checkout traces: bounded picker, every row drawn, the path as in the data', async () => {
  const data = JSON.parse(fs.readFileSync(files.genJson, 'utf8'));
  assert.equal(data.traces_total, 60);
  assert.equal(data.traces.length, 12);
  const { page, problems, requests, loadMs } = await open(files.gen);
  const durations = await page.locator('#picker tr.trace').evaluateAll((rs) => rs.map((r) => Number(r.dataset.duration)));
  assert.equal(durations.length, 12);
  for (let k = 1; k < durations.length; ++k) assert.ok(durations[k - 1] >= durations[k], `picker slowest first: ${durations}`);
  assert.match(await page.locator('#left-out').textContent(), /12 of 60 traces embedded.*48 left out/);
  const picks = await page.locator('#picker td.pick').allTextContents();
  for (const p of ['p50', 'p90', 'p99']) assert.ok(picks.includes(p), `picker marks ${p}: ${picks}`);
  for (const i of [0, 5, 11]) {
    if (i > 0) await page.locator(`#picker tr.trace[data-index="${i}"]`).click();
    assert.equal(await page.getAttribute('body', 'data-trace'), String(i));
    const t = data.traces[i];
    assert.equal(await page.locator('.span-row').count(), t.spans, `trace ${i}: a row per span`);
    const crit = await overlays(page);
    assert.deepEqual(crit.map((c) => c[0]), t.path.map((_, k) => k + 1));
    assert.deepEqual(crit.map((c) => c[2]), t.path.map((s) => s[0]), `trace ${i}: overlays on the path's spans, in order`);
    assert.match(await page.locator('#trace-label').textContent(), new RegExp(`trace ${t.id}:`));
  }
  await page.locator('#picker tr.trace[data-index="0"]').click();
  await page.screenshot({ path: path.join(artifacts, 'report-waterfall.png'), fullPage: false });
  assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), []);
  assert.deepEqual(problems, []);
  console.log(`waterfall loaded and drawn in ${loadMs} ms`);
  await page.close();
});

test('a big trace draws the rows in view and the rest as it scrolls', async () => {
  const data = JSON.parse(fs.readFileSync(files.bigJson, 'utf8'));
  const t = data.traces[0];
  assert.ok(t.spans > 1500, `${t.spans} spans`);
  const { page, problems } = await open(files.big);
  assert.equal(await page.getAttribute('#waterfall', 'data-rows'), String(t.spans));
  const drawn = await page.locator('.span-row').count();
  assert.ok(drawn > 10 && drawn < 200, `${drawn} rows in the page`);
  // Scrolled to the end: the last rows are drawn, at their place.
  await page.locator('.wf-scroll').evaluate((e) => { e.scrollTop = e.scrollHeight; });
  await page.waitForSelector(`.span-row[data-row="${t.spans - 1}"]`);
  // The last critical section, from the list: its row is drawn with its numbered overlay.
  const [r] = t.path[t.path.length - 1];
  await page.locator('.wf-scroll').evaluate((e) => { e.scrollTop = 0; });
  assert.ok(t.path.length <= 500, 'every section is listed');
  await page.locator('#path-list li').nth(t.path.length - 1).click();
  await page.waitForSelector(`.span-row[data-row="${r}"] .crit[data-seq="${t.path.length}"]`);
  assert.equal(await page.getAttribute('body', 'data-span'), String(r));
  assert.deepEqual(problems, []);
  await page.close();
});

test('a cut file: what was read is drawn, the cut is shown', async () => {
  const { page, problems } = await open(files.cut);
  assert.match(await page.locator('#facts .issues').textContent(), /jaeger\.truncated_file 1/);
  // Trace a2 is cut after its root: read up to its last complete span, the root alone.
  assert.deepEqual(await page.locator('#picker tr.trace').evaluateAll((rs) => rs.map((r) => Number(r.dataset.duration))), [100000, 60000, 30000]);
  assert.equal(await page.locator('#picker tr.trace[data-index="1"] td').nth(3).textContent(), '1');
  assert.deepEqual(problems, []);
  await page.close();
});
