// Browser tests of the report's flame views (docs/REPORT.md, "Flame graph"): left heavy,
// time order and sandwich, each checked against the page's embedded data with oracles
// computed here (not with the page's functions). Run by `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/flame_modes.test.mjs
// The sandwich screenshot goes to $SNAILTRAIL_ARTIFACTS (default build/browser-artifacts/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, bin, artifacts, workDir, launchBrowser } from './common.mjs';

const work = workDir('flame');

let browser;
let page;
let problems;
let flame;  // the report's data.flame, read from the page itself
const html = path.join(work, 'flame.html');

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  // A profiled run of the runtime (docs/FLAME.md): the report gets a flame section.
  const trace = path.join(work, 'wc.snail');
  execFileSync(bin, ['run', 'wordcount', '--workers', '2', '--duration', '1000ms', '--skew', '0.5',
    '--keys', '1000', '--profile', '--profile-hz', '997', '--trace', trace, '-q'], { cwd: root });
  execFileSync(bin, ['report', trace, '-o', html, '--window', '500ms', '--no-progress'], { cwd: root });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  await page.goto(pathToFileURL(html).href);
  await page.waitForSelector('body[data-windows]');
  flame = JSON.parse(await page.locator('#snailtrail-data').textContent()).flame;
});

after(async () => {
  if (browser) await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
});

// The drawn frames of a chart: name, depth, x, width (from the rect), y.
async function frames(selector) {
  return page.locator(`${selector} .frame`).evaluateAll((gs) => gs.map((g) => {
    const r = g.querySelector('rect');
    return { name: g.dataset.name, depth: Number(g.dataset.depth), x: +r.getAttribute('x'), w: +r.getAttribute('width'), y: +r.getAttribute('y') };
  }));
}

// The tree's root-to-leaf stacks, one per node with self weight: [names, weight].
function stacksOf(tree) {
  const out = [];
  (function walk(n, names) {
    if (n.self > 0 && names.length) out.push([names, n.self]);
    for (const c of n.children || []) walk(c, names.concat([c.name]));
  })(tree, []);
  return out;
}

// Clicks the sandwich table's row of `name` (any characters).
async function clickRow(name) {
  const rows = await page.locator('#flame-functions tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.name));
  assert.ok(rows.includes(name), `a row for ${name}`);
  await page.locator('#flame-functions tbody tr').nth(rows.indexOf(name)).click();
}

const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

test('left heavy: children heaviest first; merged keeps the alphabetical order; zoom and search work', async () => {
  await page.selectOption('#flame-mode', 'on-cpu');
  assert.equal(await page.inputValue('#flame-view'), 'left-heavy', 'the default view');
  const tree = flame['on-cpu'].root;
  assert.ok(tree.children.length > 1, 'the profile has more than one operator');
  // At the root: the drawn children, left to right, are the data's sorted by weight.
  const kidsDrawn = async () => (await frames('[data-chart="flame"]')).filter((f) => f.depth === 1).sort((a, b) => a.x - b.x);
  let kids = await kidsDrawn();
  const svgWidth = +(await page.getAttribute('[data-chart="flame"] svg', 'width'));
  const heavy = tree.children.slice().sort((a, b) => b.value - a.value);
  const wide = (list, parent, w) => list.filter((c) => c.value / parent.value * w >= 0.5).map((c) => c.name);
  assert.deepEqual(kids.map((f) => f.name), wide(heavy, tree, svgWidth));
  for (let i = 1; i < kids.length; ++i) assert.ok(kids[i - 1].w >= kids[i].w, 'wider ones first');
  // Merged: the same frames in the data's (alphabetical) order.
  await page.selectOption('#flame-view', 'merged');
  kids = await kidsDrawn();
  assert.deepEqual(kids.map((f) => f.name), wide(tree.children, tree, svgWidth));
  assert.deepEqual(tree.children.map((c) => c.name), tree.children.map((c) => c.name).sort());
  // Zoom in left heavy on the heaviest operator: its children heaviest first, below it.
  await page.selectOption('#flame-view', 'left-heavy');
  await page.locator(`[data-chart="flame"] .frame[data-depth="1"][data-name="${heavy[0].name}"]`).click();
  const zoomed = await frames('[data-chart="flame"]');
  assert.equal(zoomed[0].name, heavy[0].name, 'the zoomed frame is the top bar');
  const sub = zoomed.filter((f) => f.depth === 1).sort((a, b) => a.x - b.x);
  const subHeavy = heavy[0].children.slice().sort((a, b) => b.value - a.value);
  assert.deepEqual(sub.map((f) => f.name), wide(subHeavy, heavy[0], svgWidth));
  await page.click('#flame-reset');
  await page.fill('#flame-search', 'count');
  assert.ok(await page.locator('[data-chart="flame"] rect[fill="#d62fd6"]').count() > 0);
  assert.match(await page.textContent('#flame-match'), /matched: \d+\.\d\d % of all/);
  await page.fill('#flame-search', '');
});

test('time order: one mark per run, x increasing with time, per lane; zoom and search', async () => {
  await page.selectOption('#flame-view', 'time-order');
  for (const mode of ['on-cpu', 'off-cpu', 'mixed', 'critical']) {
    await page.selectOption('#flame-mode', mode);
    const to = flame[mode].time_order;
    const n = to.runs.lane.length;
    assert.ok(n <= to.max_runs, `${mode}: within the bound`);
    if (!n) continue;
    const runs = await page.locator('[data-chart="flame"] rect.run').evaluateAll((rs) => rs.map((r) => ({
      start: +r.dataset.start, end: +r.dataset.end, x: +r.getAttribute('x'), w: +r.getAttribute('width'), y: +r.getAttribute('y') })));
    assert.equal(runs.length, n, `${mode}: every run is drawn`);
    assert.equal(await page.getAttribute('[data-chart="flame"] svg', 'data-runs'), String(n));
    // The marks are the data's runs, in order; within a lane (one y) x grows with time.
    const width = +(await page.getAttribute('[data-chart="flame"] svg', 'width'));
    let end = 0;
    for (let i = 0; i < n; ++i) end = Math.max(end, to.runs.end[i]);
    for (let i = 0; i < n; ++i) {
      assert.equal(runs[i].start, to.runs.start[i]);
      assert.ok(Math.abs(runs[i].x - to.runs.start[i] / end * width) < 0.01, `${mode}: run ${i} at its time`);
      if (i && to.runs.lane[i] === to.runs.lane[i - 1]) {
        assert.equal(runs[i].y, runs[i - 1].y);
        assert.ok(to.runs.start[i] >= to.runs.end[i - 1], `${mode}: runs of a lane do not overlap`);
        assert.ok(runs[i].x >= runs[i - 1].x && runs[i].x >= to.runs.end[i - 1] / end * width - 0.01, `${mode}: run ${i} right of run ${i - 1}`);
      } else if (i) {
        assert.ok(runs[i].y > runs[i - 1].y, 'the next lane below');
      }
    }
    // Every timed sample is in a run: the runs' weights add up to the tree's total.
    if (!to.untimed) assert.ok(close(to.runs.weight.reduce((a, b) => a + b, 0), flame[mode].total), `${mode}: the runs weigh the total`);
  }
  // Click a frame of the on-CPU chart: the view zooms on its time span (it fills the width).
  await page.selectOption('#flame-mode', 'on-cpu');
  await page.locator('[data-chart="flame"] .frame').first().hover({ force: true });
  assert.match(await page.textContent('#tooltip'), /from .* in \d+ runs?/, 'a frame\'s tooltip: span and runs');
  await page.locator('[data-chart="flame"] rect.run').first().hover({ force: true });
  assert.match(await page.textContent('#tooltip'), /run of \d+ samples?: /, 'a run\'s tooltip');
  const width = +(await page.getAttribute('[data-chart="flame"] svg', 'width'));
  const all = await frames('[data-chart="flame"]');
  const at = all.findIndex((f) => f.w > 20 && f.w < 0.9 * width);
  assert.ok(at >= 0, 'a frame to zoom on');
  const target = all[at];
  await page.locator('[data-chart="flame"] .frame').nth(at).click();
  const after = (await frames('[data-chart="flame"]')).find((f) => f.name === target.name && f.y === target.y && Math.abs(f.w - width) < 1);
  assert.ok(after, 'the clicked frame spans the zoomed view');
  assert.ok(await page.locator('[data-chart="flame"] rect.run').count() < flame['on-cpu'].time_order.runs.lane.length);
  await page.click('#flame-reset');
  assert.equal(await page.locator('[data-chart="flame"] rect.run').count(), flame['on-cpu'].time_order.runs.lane.length);
  await page.mouse.move(1, 1);
  await page.locator('#sec-flame').screenshot({ path: path.join(artifacts, 'report-flame-time.png') });
  await page.fill('#flame-search', 'count');
  assert.ok(await page.locator('[data-chart="flame"] rect[fill="#d62fd6"]').count() > 0);
  assert.match(await page.textContent('#flame-match'), /matched: \d+\.\d\d % of the runs' weight/);
  await page.fill('#flame-search', '');
});

test('sandwich: self and total per function as the stacks say; callers above, callees below', async () => {
  await page.selectOption('#flame-mode', 'on-cpu');
  await page.selectOption('#flame-view', 'sandwich');
  // The oracle: over the tree's stacks, self = weight of stacks ending in the function,
  // total = weight of stacks holding it (once per stack, however often).
  const stacks = stacksOf(flame['on-cpu'].root);
  const self = new Map(), total = new Map(), places = new Map();
  for (const [names, w] of stacks) {
    const leaf = names[names.length - 1];
    self.set(leaf, (self.get(leaf) || 0) + w);
    for (const n of new Set(names)) total.set(n, (total.get(n) || 0) + w);
  }
  (function count(n) { for (const c of n.children || []) { places.set(c.name, (places.get(c.name) || 0) + 1); count(c); } })(flame['on-cpu'].root);
  // A function reached along several paths, with callers and callees: the heaviest such.
  const pick = [...total.keys()].filter((n) => !n.startsWith('[') && places.get(n) > 1 && total.get(n) > (self.get(n) || 0))
    .sort((a, b) => total.get(b) - total.get(a))[0];
  assert.ok(pick, 'a function with several callers');
  // Every function is a row, with the oracle's numbers.
  const rows = await page.locator('#flame-functions tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    name: tr.dataset.name, self: +tr.children[1].dataset.value, total: +tr.children[2].dataset.value })));
  assert.equal(rows.length, Math.min(500, total.size));
  for (const r of rows) {
    assert.ok(close(r.self, self.get(r.name) || 0), `${r.name}: self ${r.self} vs ${self.get(r.name)}`);
    assert.ok(close(r.total, total.get(r.name)), `${r.name}: total ${r.total} vs ${total.get(r.name)}`);
  }
  for (let i = 1; i < rows.length; ++i) assert.ok(rows[i - 1].total >= rows[i].total, 'sorted by total');
  // Sorting by self; searching filters the table.
  await page.click('#flame-functions th[data-sort="self"]');
  const selfs = await page.locator('#flame-functions tbody td:nth-child(2)').evaluateAll((tds) => tds.map((td) => +td.dataset.value));
  for (let i = 1; i < selfs.length; ++i) assert.ok(selfs[i - 1] >= selfs[i], 'sorted by self');
  await page.fill('#flame-search', pick);
  const shown = await page.locator('#flame-functions tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.name));
  assert.deepEqual(shown.sort(), [...total.keys()].filter((n) => n.toLowerCase().includes(pick.toLowerCase())).sort());
  await clickRow(pick);
  // Callers: the frames right above the function's outermost occurrence in each stack;
  // callees: right below it. The drawn level-1 frames are those (the wide ones at least).
  const callers = new Map(), callees = new Map();
  for (const [names, w] of stacks) {
    const i = names.indexOf(pick);
    if (i < 0) continue;
    if (i > 0) callers.set(names[i - 1], (callers.get(names[i - 1]) || 0) + w);
    if (i + 1 < names.length) callees.set(names[i + 1], (callees.get(names[i + 1]) || 0) + w);
  }
  assert.ok(callers.size > 0 && callees.size > 0);
  const up = await frames('[data-chart="flame-callers"]');
  const down = await frames('[data-chart="flame-callees"]');
  const svgW = +(await page.getAttribute('[data-chart="flame-callers"] svg', 'width'));
  for (const [chart, drawn, expected] of [['callers', up, callers], ['callees', down, callees]]) {
    const top = drawn.find((f) => f.depth === 0);
    assert.equal(top.name, pick, `${chart}: the function itself at level 0`);
    assert.ok(Math.abs(top.w - svgW) < 1, `${chart}: the function spans the width`);
    const level1 = drawn.filter((f) => f.depth === 1);
    for (const f of level1) assert.ok(expected.has(f.name), `${chart}: ${f.name} is a direct ${chart.slice(0, -1)}`);
    for (const [name, w] of expected)
      if (w / total.get(pick) * svgW >= 1) assert.ok(level1.some((f) => f.name === name), `${chart}: ${name} drawn`);
    // Widths in proportion to the weights.
    for (const f of level1)
      assert.ok(Math.abs(f.w - Math.max(0.5, expected.get(f.name) / total.get(pick) * svgW - 0.5)) < 0.6, `${chart}: ${f.name} width`);
  }
  // Callers grow upwards (the function at the bottom), callees downwards; callers above.
  assert.ok(up.filter((f) => f.depth === 1).every((f) => f.y < up.find((g) => g.depth === 0).y));
  assert.ok(down.filter((f) => f.depth === 1).every((f) => f.y > down.find((g) => g.depth === 0).y));
  const boxUp = await page.locator('[data-chart="flame-callers"]').boundingBox();
  const boxDown = await page.locator('[data-chart="flame-callees"]').boundingBox();
  assert.ok(boxUp.y + boxUp.height <= boxDown.y, 'callers above callees');
  // The screenshot: a function with both own time and callees.
  const both = (n) => Math.min(self.get(n) || 0, total.get(n) - (self.get(n) || 0));
  const shot = [...total.keys()].filter((n) => !n.startsWith('[')).sort((a, b) => both(b) - both(a))[0];
  await page.fill('#flame-search', '');
  await clickRow(shot);
  await page.mouse.move(1, 1);
  await page.locator('#sec-flame').screenshot({ path: path.join(artifacts, 'report-flame-sandwich.png') });
  assert.deepEqual(problems, []);
});
