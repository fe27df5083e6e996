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
  files.handJson = path.join(work, 'hand-waterfall.json');
  run('report', hand, '-o', files.handJson, '-f', 'json');
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

// The Percentiles and Diff views (critical-path --percentile / --diff), checked against
// the hand-computed times of the three traces (tests/test_report_waterfall.cpp has the
// same by hand): p99 = a1 (GET /x 60, get 40 µs), p50 = a2 (GET /y 15, get 45 µs), all
// three adding a3 (GET /z 10, query 20 µs).
const pcRows = (page) => page.locator('#pc-table tr.pc-row').evaluateAll((rs) => rs.map((r) => [r.dataset.stack, Number(r.dataset.us), r.querySelector('td.value').textContent]));
const diffRows = (page) => page.locator('#diff-table tr.diff-row').evaluateAll((rs) => rs.map((r) => [r.dataset.stack, Number(r.dataset.diff), r.className.split(' ')[1], r.querySelector('.pc-bar i').className]));

test('percentiles and diff: a row per calling context, values and order as computed, redrawn on a pick', async () => {
  const pc = JSON.parse(fs.readFileSync(files.handJson, 'utf8')).percentiles;
  const { page, problems } = await open(files.hand);
  // Opens on p99 (report's default): a1's two contexts, most critical first.
  assert.equal(await page.getAttribute('body', 'data-percentile'), '99');
  assert.deepEqual(await pcRows(page), [['api:GET /x', 60, '60 µs'], ['api:GET /x;cache:get', 40, '40 µs']]);
  const v99 = pc.views.find((v) => v.p === 99);
  assert.deepEqual((await pcRows(page)).map(([s, us]) => [s, us]), v99.rows.map(([s, us]) => [pc.stacks[s], us]));
  assert.match(await page.locator('#pc-facts').textContent(), /^1 of 3 traces around p99/);
  // The span name leads its row, its ancestors after it.
  assert.equal(await page.locator('#pc-table tr.pc-row').nth(1).locator('td.ctx').textContent(), 'cache get  ‹ api: GET /x');
  // All traces: six contexts, redrawn in order.
  await page.selectOption('#pc-pick', '0');
  await page.waitForSelector('body[data-percentile="0"]');
  assert.deepEqual((await pcRows(page)).map(([s, us]) => [s, us]), [['api:GET /x', 60], ['api:GET /y;cache:get', 45],
    ['api:GET /x;cache:get', 40], ['api:GET /z;db:query', 20], ['api:GET /y', 15], ['api:GET /z', 10]]);
  // One root only.
  await page.selectOption('#pc-root', 'api:GET /z');
  assert.deepEqual((await pcRows(page)).map(([s]) => s), ['api:GET /z;db:query', 'api:GET /z']);
  await page.selectOption('#pc-root', '');
  // The diff opens on p50 -> p99: sorted by B - A, red (pos) where p99 is slower.
  assert.equal(await page.getAttribute('body', 'data-diff'), '50,99');
  assert.deepEqual(await diffRows(page), [['api:GET /x', 60, 'pos', 'pos'], ['api:GET /x;cache:get', 40, 'pos', 'pos'],
    ['api:GET /y', -15, 'neg', 'neg'], ['api:GET /y;cache:get', -45, 'neg', 'neg']]);
  // Bars diverge from the middle: right for a rise, left for a fall, length by size.
  const bars = await page.locator('#diff-table .pc-bar i').evaluateAll((is) => is.map((i) => {
    const b = i.getBoundingClientRect(), p = i.parentElement.getBoundingClientRect();
    return [b.left - (p.left + p.width / 2), b.right - (p.left + p.width / 2)];
  }));
  assert.ok(bars[0][0] > -1 && bars[0][1] > 0 && bars[3][1] < 1 && bars[3][0] < 0, `bars ${JSON.stringify(bars)}`);
  assert.ok(Math.abs(bars[0][1] - -bars[3][0] * 60 / 45) < 2, `bar lengths by size ${JSON.stringify(bars)}`);
  // Swapped: the signs and the order turn over.
  await page.selectOption('#diff-a', '99');
  await page.selectOption('#diff-b', '50');
  await page.waitForSelector('body[data-diff="99,50"]');
  assert.deepEqual((await diffRows(page)).map(([s, d, c]) => [s, d, c]), [['api:GET /y;cache:get', 45, 'pos'],
    ['api:GET /y', 15, 'pos'], ['api:GET /x;cache:get', -40, 'neg'], ['api:GET /x', -60, 'neg']]);
  assert.deepEqual(problems, []);
  await page.close();
});

test('percentiles of generated traces: every row shows the embedded number; --percentile and --diff preselect', async () => {
  const html = path.join(work, 'checkout-pc.html');
  const json = path.join(work, 'checkout-pc.json');
  const spans = path.join(work, 'checkout.json');
  run('report', spans, '-o', html, '--traces', '12', '--percentile', 'p90', '--diff', '99,50');
  run('report', spans, '-o', json, '--traces', '12', '--percentile', 'p90', '--diff', '99,50', '-f', 'json');
  const pc = JSON.parse(fs.readFileSync(json, 'utf8')).percentiles;
  const { page, problems } = await open(html);
  assert.equal(await page.getAttribute('body', 'data-percentile'), '90');
  assert.equal(await page.getAttribute('body', 'data-diff'), '99,50');
  for (const p of [90, 50, 0]) {
    if (p !== 90) {
      await page.selectOption('#pc-pick', String(p));
      await page.waitForSelector(`body[data-percentile="${p}"]`);
    }
    const v = pc.views.find((x) => x.p === p);
    const shown = await pcRows(page);
    assert.equal(shown.length, v.rows.length, `p${p}: a row per calling context`);
    assert.deepEqual(shown.map(([s, us]) => [s, us]), v.rows.map(([s, us]) => [pc.stacks[s], us]), `p${p}: the embedded rows in order`);
    for (const [, us, text] of shown) {
      const n = Number(text.split(' ')[0]), unit = text.split(' ')[1];
      const f = { s: 1e6, ms: 1e3, 'µs': 1, ns: 1e-3 }[unit];
      assert.ok(Math.abs(n * f - us) <= 0.005 * us + 1e-9, `${text} shows ${us} µs`);
    }
  }
  // The diff's rows: the pair (50, 99) embedded once, shown with its columns swapped.
  const d = pc.diffs.find((x) => x.a === 50 && x.b === 99);
  const want = d.rows.map(([s, a, b]) => [pc.stacks[s], a - b]).sort((x, y) => y[1] - x[1]);
  const shown = await diffRows(page);
  assert.deepEqual(shown.map(([s, diff]) => diff), want.map(([, diff]) => diff));
  assert.deepEqual(new Set(shown.map(([s]) => s)), new Set(want.map(([s]) => s)));
  for (const [, diff, cls, bar] of shown) assert.equal(cls, diff > 0 ? 'pos' : diff < 0 ? 'neg' : 'zero');
  for (const [, , cls, bar] of shown) assert.equal(bar, cls);
  await page.selectOption('#pc-pick', '99');
  await page.selectOption('#diff-a', '50');
  await page.selectOption('#diff-b', '99');
  await page.waitForSelector('body[data-diff="50,99"]');
  await page.locator('#sec-percentiles').screenshot({ path: path.join(artifacts, 'report-waterfall-percentiles.png') });
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
