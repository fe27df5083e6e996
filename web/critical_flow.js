// The "Critical flow" page (web/critical_flow.html, docs/REPORT.md): plain JS, no libraries.
// Data: report/critical_flow.cpp's JSON: threads with their state lanes (flat [start, end,
// state] triples, ns from t0), and the critical paths of the picker's threads (segments
// [start, end, thread, state, irq], hops [time, from thread, to thread]) computed in C++.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('snailtrail-data').textContent);
  const $ = (id) => document.getElementById(id);
  const SVG = 'http://www.w3.org/2000/svg';
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = (tag, attrs) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  };
  function dur(ns) {
    const a = Math.abs(ns);
    for (const [f, u] of [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs']])
      if (a >= f) return `${+(ns / f).toPrecision(4)} ${u}`;
    return `${ns} ns`;
  }
  const ms = (ns) => (ns / 1e6).toFixed(3);
  const pct = (x) => `${(100 * x).toFixed(1)} %`;

  const STATES = data.states;
  const COLORS = {
    running: '#3a9a44', preempted: '#f2b134', timer: '#4a7fd0', block_device: '#8d5bc1',
    network: '#2bb0a8', interrupt: '#e0723a', blocked: '#a6a6a6', unknown: '#e4e4e4',
  };
  const NAMES = {
    running: 'running', preempted: 'preempted (waiting for a CPU)', timer: 'blocked: timer',
    block_device: 'blocked: disk', network: 'blocked: network', interrupt: 'blocked: IRQ',
    blocked: 'blocked (on a thread, or wake-up not seen)', unknown: 'unknown (not traced)',
  };
  const SHORT = {
    running: 'running', preempted: 'preempted', timer: 'timer', block_device: 'disk',
    network: 'network', interrupt: 'IRQ', blocked: 'blocked', unknown: 'unknown',
  };
  // Waits: a click on one of the path's zooms the time axis to it.
  const isWait = (st) => STATES[st] !== 'running' && STATES[st] !== 'unknown';
  const threads = data.threads, paths = data.paths, D = Math.max(1, data.duration_ns);
  const ROW = 26, BAR = 8, OVER = 16, LABEL_W = 210, AXIS_H = 22, MAX_DRAWN = 4000;
  let current = data.initial;
  let view = [0, D];

  $('source').textContent = data.source;
  const facts = [`${data.format}, ${data.events} events, ${data.threads_total} threads, ${dur(data.duration_ns)}` +
    ` from ${(data.t0_ns / 1e9).toFixed(6)} s (trace clock)`,
  `${data.lanes} lanes` + (data.lanes_left_out ? ` (${data.lanes_left_out} threads without a lane: the ones with the least running time)` : ''),
  `critical paths of the ${data.paths_total} threads with the most running time`];
  if (data.intervals_left_out)
    facts.push(`${data.intervals_left_out} of ${data.intervals_total} lane intervals left out (the shortest of the busiest lanes)`);
  $('facts').textContent = facts.join('; ');
  const issues = Object.entries(data.diagnostics || {}).filter(([, n]) => n > 0);
  if (issues.length) {
    const d = $('facts').appendChild(el('div', 'issues'));
    d.textContent = `trace diagnostics (docs/KERNEL.md): ${issues.map(([k, n]) => `${k} ${n}`).join(', ')}`;
  }

  // --- Legend ---
  for (const s of STATES) {
    const item = $('legend').appendChild(el('span'));
    item.appendChild(el('span', 'sw')).style.background = COLORS[s];
    item.appendChild(document.createTextNode(NAMES[s]));
  }
  const pathItem = $('legend').appendChild(el('span'));
  pathItem.appendChild(el('span', 'sw path')).style.background = '#fff';
  pathItem.appendChild(document.createTextNode('critical path (tall, outlined; click a wait to zoom to it)'));
  const hopItem = $('legend').appendChild(el('span'));
  hopItem.appendChild(el('span', '', '↓ ')).style.color = '#b2182b';
  hopItem.appendChild(document.createTextNode('wake-up hop: the path moves to another thread'));

  // --- Picker ---
  const picks = paths.map((p, i) => {
    const t = threads[p.thread];
    const row = $('picker').appendChild(el('div', 'pick'));
    row.dataset.path = String(i);
    row.dataset.tid = String(t.tid);
    row.appendChild(el('div', 'name', t.label)).title = t.label;
    row.appendChild(el('div', 'meta', `running ${dur(t.running_ns)} · path ${p.segments_total} segments, ${p.hops_total} hops`));
    row.addEventListener('click', () => pick(i));
    return row;
  });

  // --- The chart: lanes on a canvas, the path and its hops in SVG above it ---
  const flow = $('flow');
  const canvas = flow.appendChild(el('canvas'));
  const chart = flow.appendChild(svg('svg'));
  chart.appendChild(svg('defs')).innerHTML =
    '<marker id="hop-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#b2182b"/></marker>';

  // The picked path's threads first (its own thread, then by time on the path), then the
  // other lanes; at most data.lanes rows unless the path needs more.
  function laneOrder(p) {
    const order = [], seen = new Set();
    const add = (k) => { if (!seen.has(k)) { seen.add(k); order.push(k); } };
    add(p.thread);
    p.per_thread.forEach((r) => add(r[0]));
    threads.forEach((t, k) => { if (t.lane) add(k); });
    return order.slice(0, Math.max(data.lanes, p.per_thread.length + 1));
  }

  function ticks(lo, hi) {
    const raw = (hi - lo) / 8, pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
    const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) || pow * 10;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) out.push(t);
    return out;
  }

  function draw() {
    const p = paths[current];
    const order = laneOrder(p);
    const rowOf = new Map(order.map((k, i) => [k, i]));
    const width = Math.max(600, flow.clientWidth);
    const chartW = width - LABEL_W - 8;
    const height = AXIS_H + order.length * ROW + 4;
    const [v0, v1] = view;
    const x = (t) => LABEL_W + ((t - v0) / (v1 - v0)) * chartW;
    const clipX = (t) => Math.max(LABEL_W, Math.min(LABEL_W + chartW, x(t)));
    const rowY = (r) => AXIS_H + r * ROW;
    flow.style.height = `${height}px`;

    // Lanes: every embedded interval in view, its state's colour.
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    order.forEach((k, r) => {
      if (r % 2) {
        g.fillStyle = '#f7f8f9';
        g.fillRect(0, rowY(r), width, ROW);
      }
      const iv = threads[k].iv;
      const y = rowY(r) + (ROW - BAR) / 2;
      for (let i = 0; i < iv.length; i += 3) {
        if (iv[i + 1] < v0 || iv[i] > v1) continue;
        const a = clipX(iv[i]), b = clipX(iv[i + 1]);
        g.fillStyle = COLORS[STATES[iv[i + 2]]];
        g.fillRect(a, y, Math.max(0.6, b - a), BAR);
      }
    });

    chart.setAttribute('width', width);
    chart.setAttribute('height', height);
    chart.querySelectorAll('g.axis, g.lane, g.path, g.hops').forEach((n) => n.remove());
    // Time axis: ms from the trace's first event.
    const axis = chart.appendChild(svg('g', { class: 'axis' }));
    for (const t of ticks(v0, v1)) {
      const tx = x(t);
      axis.appendChild(svg('line', { x1: tx, x2: tx, y1: AXIS_H - 4, y2: height }));
      const end = tx > width - 60;  // the last label inside the chart
      const label = axis.appendChild(svg('text', { x: end ? tx - 2 : tx + 2, y: AXIS_H - 8, 'text-anchor': end ? 'end' : 'start' }));
      label.textContent = `${+(t / 1e6).toPrecision(6)} ms`;
    }
    // Lane labels.
    order.forEach((k, r) => {
      const t = threads[k];
      const lane = chart.appendChild(svg('g', { class: 'lane' }));
      lane.dataset.thread = String(k);
      lane.dataset.tid = String(t.tid);
      lane.dataset.row = String(r);
      lane.dataset.intervals = String(t.iv.length / 3);
      const text = lane.appendChild(svg('text', { x: 6, y: rowY(r) + ROW / 2 + 4 }));
      text.textContent = (t.label.length > 30 ? `${t.label.slice(0, 29)}…` : t.label) + (t.lane ? '' : ' (no lane)');
      if (k === p.thread) text.classList.add('chosen');
      if (!t.lane) text.classList.add('nodata');
      const tip = lane.appendChild(svg('title'));
      tip.textContent = `${t.label}\nrunning ${dur(t.running_ns)}, preempted ${dur(t.preempted_ns)}, blocked ${dur(t.blocked_ns)}` +
        (t.iv_left_out ? `\n${t.iv_left_out} short intervals left out` : '') +
        (t.lane ? '' : '\nno lane: more threads than lanes (its intervals are not embedded)');
    });

    // The path: a tall outlined bar per segment in view on its thread's lane.
    const inView = [];
    p.segments.forEach((s, i) => { if (s[1] > v0 && s[0] < v1 && rowOf.has(s[2])) inView.push(i); });
    let shown = inView;
    if (inView.length > MAX_DRAWN) {  // the longest ones; the rest are under a pixel wide
      shown = inView.slice().sort((a, b) => (p.segments[b][1] - p.segments[b][0]) - (p.segments[a][1] - p.segments[a][0]))
        .slice(0, MAX_DRAWN).sort((a, b) => a - b);
    }
    const group = chart.appendChild(svg('g', { class: 'path' }));
    for (const i of shown) {
      const [s, e, k, st, irq] = p.segments[i];
      const a = clipX(s), b = clipX(e);
      const r = rowOf.get(k);
      const rect = group.appendChild(svg('rect', {
        class: isWait(st) ? 'overlay wait' : 'overlay', x: a, y: rowY(r) + (ROW - OVER) / 2,
        width: Math.max(1, b - a), height: OVER, fill: COLORS[STATES[st]],
      }));
      rect.dataset.seg = String(i);
      rect.dataset.thread = String(k);
      rect.dataset.tid = String(threads[k].tid);
      rect.dataset.state = STATES[st];
      const tip = rect.appendChild(svg('title'));
      tip.textContent = `${threads[k].label}: ${NAMES[STATES[st]]}${irq >= 0 ? ` (${data.irqs[irq]})` : ''}\n` +
        `${dur(e - s)} from +${ms(s)} ms` + (isWait(st) ? '\nclick to zoom to this wait' : '');
      if (isWait(st)) rect.addEventListener('click', () => zoomTo(s, e));
    }
    // An arrow at each wake-up hop, from the lane the path leaves to the one it enters.
    const hops = chart.appendChild(svg('g', { class: 'hops' }));
    let hopsShown = 0;
    for (const [t, from, to] of p.hops) {
      if (t < v0 || t > v1 || !rowOf.has(from) || !rowOf.has(to) || hopsShown >= MAX_DRAWN) continue;
      const hx = x(t), y1 = rowY(rowOf.get(from)) + ROW / 2, y2 = rowY(rowOf.get(to)) + ROW / 2;
      const dir = Math.sign(y2 - y1) || 1;
      const line = hops.appendChild(svg('line', {
        class: 'hop', x1: hx, x2: hx, y1, y2: y2 - dir * (OVER / 2), 'marker-end': 'url(#hop-head)',
      }));
      line.dataset.from = String(threads[from].tid);
      line.dataset.to = String(threads[to].tid);
      line.dataset.at = String(t);
      const tip = line.appendChild(svg('title'));
      tip.textContent = `+${ms(t)} ms: ${threads[from].label} → ${threads[to].label}`;
      ++hopsShown;
    }

    flow.dataset.path = String(current);
    flow.dataset.lanes = String(order.length);
    flow.dataset.segments = String(shown.length);
    flow.dataset.hops = String(hopsShown);
    flow.dataset.viewFrom = String(Math.round(v0));
    flow.dataset.viewTo = String(Math.round(v1));
    $('range').textContent = `showing +${ms(v0)} … +${ms(v1)} ms of ${dur(data.duration_ns)}`;
    const notes = [];
    if (p.segments.length < p.segments_total)
      notes.push(`the path's first ${p.segments.length} of ${p.segments_total} segments are drawn (the table sums all)`);
    if (shown.length < inView.length)
      notes.push(`${inView.length - shown.length} segments under a pixel wide not drawn: zoom in`);
    $('notes').textContent = notes.join('; ');
  }

  function zoomTo(s, e) {
    const pad = Math.max((e - s) * 0.1, 1);
    view = [Math.max(0, s - pad), Math.min(D, e + pad)];
    draw();
  }
  $('reset').addEventListener('click', () => { view = [0, D]; draw(); });
  // The wheel zooms around the pointer.
  flow.addEventListener('wheel', (ev) => {
    const rect = flow.getBoundingClientRect();
    const chartW = Math.max(600, flow.clientWidth) - LABEL_W - 8;
    const f = (ev.clientX - rect.left - LABEL_W) / chartW;
    if (f < 0 || f > 1) return;
    ev.preventDefault();
    const [v0, v1] = view, at = v0 + f * (v1 - v0);
    const span = Math.min(D, Math.max(1000, (v1 - v0) * (ev.deltaY > 0 ? 1.25 : 0.8)));
    const lo = Math.max(0, Math.min(D - span, at - f * span));
    view = [lo, lo + span];
    draw();
  }, { passive: false });

  // --- The table: the path's time per thread and state ---
  function drawTable() {
    const p = paths[current];
    const total = Math.max(1, p.to_ns - p.from_ns);
    const sums = STATES.map((_, s) => p.per_thread.reduce((n, r) => n + r[1 + s], 0));
    const cols = STATES.map((_, s) => s).filter((s) => sums[s] > 0);
    const table = el('table');
    table.id = 'states';
    const head = table.appendChild(el('thead')).appendChild(el('tr'));
    head.appendChild(el('th', '', 'thread'));
    head.appendChild(el('th', 'num', 'on the path (ms)'));
    head.appendChild(el('th', 'num', 'share'));
    for (const s of cols) head.appendChild(el('th', 'num', `${SHORT[STATES[s]]} (ms)`)).dataset.state = STATES[s];
    const body = table.appendChild(el('tbody'));
    const row = (name, times, cls) => {
      const tr = body.appendChild(el('tr', cls));
      tr.appendChild(el('td', '', name));
      const sum = times.reduce((a, b) => a + b, 0);
      tr.appendChild(el('td', 'num', ms(sum)));
      tr.appendChild(el('td', 'num', pct(sum / total)));
      for (const s of cols) tr.appendChild(el('td', 'num', times[s] ? ms(times[s]) : ''));
      return tr;
    };
    for (const r of p.per_thread) row(threads[r[0]].label, r.slice(1)).dataset.tid = String(threads[r[0]].tid);
    row('total', sums, 'total');
    $('table-box').textContent = '';
    $('table-box').appendChild(table);
    const t = threads[p.thread];
    $('path-title').textContent = `Critical path of ${t.label}: +${ms(p.from_ns)} … +${ms(p.to_ns)} ms, ` +
      `${p.segments_total} segments, ${p.hops_total} wake-up hops` +
      (p.inconsistent_wakers ? `, ${p.inconsistent_wakers} inconsistent wakers` : '');
  }

  function pick(i) {
    current = i;
    picks.forEach((r, k) => r.classList.toggle('selected', k === i));
    view = [0, D];
    drawTable();
    draw();
  }
  window.addEventListener('resize', draw);
  pick(current);
  document.body.dataset.view = 'critical-flow';
  document.body.dataset.ready = '1';
})();
