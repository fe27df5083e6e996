// Browser test of the live Waterfall of `snailtrail serve --otlp --http` (GET /traces,
// docs/SERVE.md "Slow traces"), in Debian's chromium driven by playwright-core: a real
// serve started here, spans posted over OTLP/JSON, the page polling api/slow-traces.
// Run by `make test-browser` or directly:
//   SNAILTRAIL_BIN=build/bin/snailtrail node --test tests/browser/waterfall_live.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { root, bin, artifacts, workDir, launchBrowser } from './common.mjs';

const work = workDir('waterfall-live');

let browser;
let serve;
let ports;

// OTLP/JSON of spans [trace, id, parent, service, name, start µs, duration µs].
function otlp(spans) {
  const byService = new Map();
  for (const [trace, id, parent, service, name, start, duration] of spans) {
    if (!byService.has(service)) byService.set(service, []);
    byService.get(service).push({
      traceId: trace.padStart(32, '0'), spanId: id.padStart(16, '0'),
      ...(parent ? { parentSpanId: parent.padStart(16, '0') } : {}),
      name, startTimeUnixNano: String(start * 1000), endTimeUnixNano: String((start + duration) * 1000),
    });
  }
  return JSON.stringify({ resourceSpans: [...byService].map(([service, list]) => ({
    resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
    scopeSpans: [{ spans: list }],
  })) });
}

// The hand-made traces of waterfall.test.mjs: a1 (100 µs) A api GET /x [1000, 1100] µs
// with B db query [1010, 1050] and C cache get [1040, 1080], critical path by hand A
// [0, 40), C [40, 80), A [80, 100) µs; a2 (60 µs) and a3 (30 µs), a root and a child.
const hand = [
  ['a3', '31', '', 'api', 'GET /z', 5000, 30], ['a3', '32', '31', 'db', 'query', 5005, 20],
  ['a1', '1', '', 'api', 'GET /x', 1000, 100], ['a1', '2', '1', 'db', 'query', 1010, 40],
  ['a1', '3', '1', 'cache', 'get', 1040, 40],
  ['a2', '21', '', 'api', 'GET /y', 3000, 60], ['a2', '22', '21', 'cache', 'get', 3010, 45],
];
const id = (t) => t.padStart(32, '0');

function post(port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/traces', method: 'POST',
      headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  const portFile = path.join(work, 'ports');
  serve = spawn(bin, ['serve', '--otlp', '127.0.0.1:0', '--http', '127.0.0.1:0', '--otlp-out',
    path.join(work, 'paths.jsonl'), '--out', '/dev/null', '--port-file', portFile,
    '--trace-idle', '100ms', '--quiet'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 200; ++i) {
    const text = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8') : '';
    const http_ = /http=(\d+)/.exec(text), otlp_ = /otlp=(\d+)/.exec(text);
    if (http_ && otlp_) {
      ports = { http: Number(http_[1]), otlp: Number(otlp_[1]) };
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(ports, 'serve wrote its ports');
  assert.equal(await post(ports.otlp, otlp(hand)), 200);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (serve) serve.kill('SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
});

async function overlays(page) {
  const seq = await page.locator('.crit').evaluateAll((cs) => cs.map((c) => [Number(c.dataset.seq),
    Number(c.closest('.span-row').dataset.row)]));
  seq.sort((a, b) => a[0] - b[0]);
  return seq;
}

test('the live page lists the slow traces, draws the slowest, keeps the pick as traces arrive', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  await page.goto(`http://127.0.0.1:${ports.http}/traces`);
  // The traces complete 100 ms after their last span: polls until the three are listed.
  await page.waitForSelector('body[data-ready="1"][data-traces="3"]', { timeout: 10000 });
  await page.waitForSelector(`body[data-trace="${id('a1')}"]`);
  const durations = () => page.locator('#picker tr.trace').evaluateAll((rs) => rs.map((r) => Number(r.dataset.duration)));
  assert.deepEqual(await durations(), [100000, 60000, 30000]);
  assert.match(await page.locator('#facts').textContent(), /^live: the 50 slowest traces/);
  // The slowest drawn as the static Waterfall draws it: rows nested, sections 1-3 on A, C, A.
  assert.deepEqual(await page.locator('.span-row .wf-label').allTextContents(), ['api GET /x', 'db query', 'cache get']);
  assert.deepEqual(await overlays(page), [[1, 0], [2, 2], [3, 0]]);
  await page.screenshot({ path: path.join(artifacts, 'waterfall-live.png'), fullPage: true });
  // Pick the second; a slower trace then arrives: it tops the list, the pick stays drawn.
  await page.locator(`#picker tr.trace[data-index="${id('a2')}"]`).click();
  await page.waitForSelector(`body[data-trace="${id('a2')}"]`);
  assert.deepEqual(await page.locator('.span-row .wf-label').allTextContents(), ['api GET /y', 'cache get']);
  assert.equal(await page.locator('.crit').count(), 3);  // GET /y [0,10), get [10,55), GET /y [55,60)
  assert.equal(await post(ports.otlp, otlp([['a9', '91', '', 'api', 'GET /slow', 9000, 250]])), 200);
  await page.waitForSelector('body[data-traces="4"]', { timeout: 10000 });
  assert.deepEqual(await durations(), [250000, 100000, 60000, 30000]);
  assert.equal(await page.getAttribute('body', 'data-trace'), id('a2'));
  assert.deepEqual(await page.locator('#picker tr.selected').evaluateAll((rs) => rs.map((r) => r.dataset.index)), [id('a2')]);
  assert.deepEqual(await page.locator('.span-row .wf-label').allTextContents(), ['api GET /y', 'cache get']);
  assert.deepEqual(problems, []);
  await page.close();
});

// The Percentiles and Diff panel live: fed by api/critical-path (here on --http, beside
// the receiver). The four traces so far: a3 30, a2 60, a1 100, a9 250 µs. By hand (nearest
// rank over 4): p99 +- 1 -> a9 alone; p50 +- 1 -> ranks 2..3, a2 and a1, whose mean per
// trace is GET /x 30, its get 20, GET /y 7.5 -> 8, its get 22.5 -> 23 µs.
test('the live page shows the percentile and diff views of api/critical-path', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  await page.goto(`http://127.0.0.1:${ports.http}/traces`);
  await page.waitForSelector('body[data-ready="1"][data-traces="4"][data-percentile="99"][data-diff="50,99"]', { timeout: 10000 });
  const rows = (sel) => page.locator(sel).evaluateAll((rs) => rs.map((r) => [r.dataset.stack, Number(r.dataset.us ?? r.dataset.diff)]));
  assert.deepEqual(await rows('#pc-table tr.pc-row'), [['api:GET /slow', 250]]);
  assert.match(await page.locator('#pc-facts').textContent(), /^1 of 4 traces around p99/);
  assert.deepEqual(await rows('#diff-table tr.diff-row'), [['api:GET /slow', 250], ['api:GET /y', -8],
    ['api:GET /x;cache:get', -20], ['api:GET /y;cache:get', -23], ['api:GET /x', -30]]);
  // What the page shows is what the API answers.
  const text = await (await fetch(`http://127.0.0.1:${ports.http}/api/critical-path?diff=50,99`)).text();
  assert.equal(text, 'api:GET /slow 0 250\napi:GET /x 30 0\napi:GET /x;cache:get 20 0\napi:GET /y 8 0\napi:GET /y;cache:get 23 0\n');
  await page.selectOption('#pc-pick', '50');
  await page.waitForSelector('body[data-percentile="50"]');
  assert.deepEqual(await rows('#pc-table tr.pc-row'), [['api:GET /x', 60], ['api:GET /y;cache:get', 45],
    ['api:GET /x;cache:get', 40], ['api:GET /y', 15]]);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the dashboard links the slow traces', async () => {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${ports.http}/`);
  assert.ok(await page.locator('#slow-traces-link').isVisible());
  await page.locator('#slow-traces-link').click();
  await page.waitForSelector('body[data-ready="1"]');
  assert.match(page.url(), /\/traces$/);
  await page.close();
});
