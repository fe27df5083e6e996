// The OpenTelemetry JS SDK as a real client of `snailtrail serve --otlp` (issue 38): span
// trees built with explicit times are exported by the SDK's own OTLP/HTTP exporters, JSON
// and protobuf, one request per ended span (children arrive before their parents), and
// the critical paths serve writes are checked against hand-computed ones.
// Run by tests/otlp/otel_sdk.sh (CTest: otlp_js_sdk) with SNAILTRAIL_BIN set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { trace, context } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';

const bin = process.env.SNAILTRAIL_BIN;
const T0 = 1_700_000_000_000; // ms since the epoch: the SDK takes times in ms

async function waitFor(what, check, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = check();
    if (got) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// `serve --otlp` on a free port of 127.0.0.1; returns its port, output and a stop().
async function startServe(dir) {
  const portFile = join(dir, 'port'), out = join(dir, 'paths.jsonl');
  const child = spawn(bin, ['serve', '--otlp', '127.0.0.1:0', '--port-file', portFile, '--out',
    out, '--trace-idle', '300ms', '-q'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const port = await waitFor('the port file', () => {
    if (!existsSync(portFile)) return 0;
    const m = /otlp=(\d+)/.exec(readFileSync(portFile, 'utf8'));
    return m ? Number(m[1]) : 0;
  });
  const lines = () => (existsSync(out) ? readFileSync(out, 'utf8') : '')
    .split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  const stop = () => new Promise((resolve) => { child.on('exit', resolve); child.kill('SIGTERM'); });
  return { port, lines, stop };
}

// A tracer provider per service, exporting each span as it ends.
function tracerOf(service, Exporter, port) {
  const exporter = new Exporter({ url: `http://127.0.0.1:${port}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { tracer: provider.getTracer('snailtrail-test'), provider };
}

// The tree (ms from T0; as test_otlp_decode.cpp's hand-computed example):
//   A [0,100] front, root
//     B [10,40] back, nested child; C [15,35] back, nested in B
//     D [40,70] front, sequential after B
//     E [45,60] back, overlapping D and ending before it: not on the path
//     G [92,130] front, async: outlives A, clipped to [92,100]
//   F [0,50] front: its own trace, following A by a link only (FOLLOWS_FROM)
// Ends in the SDK's order of a real program: children before their parents.
async function sendTrees(front, back) {
  const at = (ms) => T0 + ms;
  const a = front.tracer.startSpan('A', { startTime: at(0) });
  const inA = trace.setSpan(context.active(), a);
  const b = back.tracer.startSpan('B', { startTime: at(10) }, inA);
  const c = back.tracer.startSpan('C', { startTime: at(15) }, trace.setSpan(context.active(), b));
  c.end(at(35));
  b.end(at(40));
  const d = front.tracer.startSpan('D', { startTime: at(40) }, inA);
  const e = back.tracer.startSpan('E', { startTime: at(45) }, inA);
  e.end(at(60));
  d.end(at(70));
  const g = front.tracer.startSpan('G', { startTime: at(92) }, inA);
  a.end(at(100));
  g.end(at(130));
  const f = front.tracer.startSpan('F', { startTime: at(0), root: true,
    links: [{ context: a.spanContext() }] });
  f.end(at(50));
  for (const p of [front.provider, back.provider]) {
    await p.forceFlush();
    await p.shutdown();
  }
  return { tree: a.spanContext().traceId, linked: f.spanContext().traceId };
}

for (const [name, Exporter] of [['http/json', JsonExporter], ['http/protobuf', ProtoExporter]]) {
  test(`the SDK's ${name} exporter: critical paths as computed by hand`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'snailtrail-otel-'));
    const serve = await startServe(dir);
    try {
      const front = tracerOf('front', Exporter, serve.port);
      const back = tracerOf('back', Exporter, serve.port);
      const ids = await sendTrees(front, back);
      const lines = await waitFor('two critical paths', () => {
        const l = serve.lines();
        return l.length >= 2 ? l : null;
      });
      assert.equal(lines.length, 2);
      const tree = lines.find((l) => l.trace_id === ids.tree);
      const linked = lines.find((l) => l.trace_id === ids.linked);
      assert.ok(tree && linked, JSON.stringify(lines));
      // From A's end back: G 100->92, A 92->70, D 70->40, B 40->35, C 35->15, B 15->10,
      // A 10->0. One entry per span, by its first instant on the path.
      assert.deepEqual(tree.path.map((s) => [s.operation, s.service, s.self_ns / 1e6]),
        [['A', 'front', 32], ['B', 'back', 10], ['C', 'back', 20], ['D', 'front', 30],
          ['G', 'front', 8]]);
      assert.equal(tree.spans, 6);
      assert.equal(tree.roots, 1);
      assert.equal(tree.clipped_children, 1); // G, past A's end
      assert.equal(tree.duration_ns, 100e6);
      assert.equal(tree.path[0].start_ns, T0 * 1e6);
      assert.deepEqual(linked.path.map((s) => [s.operation, s.self_ns / 1e6]), [['F', 50]]);
    } finally {
      await serve.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
