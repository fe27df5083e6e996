// The report's "Job graph" section (docs/REPORT.md, "Job graph"): operators as nodes, the
// channels data messages revealed as edges, columns by topological depth, fill by CP;
// click a node for its workers; per worker over time busy, output and CP, stalls hatched.
// Reads data.jobgraph of the embedded report data (src/report/job_graph.hpp), or live polls
// api/jobgraph (serve --http, run --http).
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const NODE_W = 170, NODE_H = 58, COL_GAP = 90, ROW_GAP = 22, PAD = 12;
  const MEASURES = [['busy', 'busy', '#4e79a7'], ['output', 'output (serialization + buffer)', '#f28e2b'], ['cp', 'CP', '#b2182b']];
  const jg = { data: null, op: null };

  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function hel(tag, attrs, parent, text) {  // an HTML element
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function pct(v) { return v === null || v === undefined ? '–' : (v * 100).toFixed(2) + ' %'; }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  }
  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3).replace(/\.?0+$/, '') + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3).replace(/\.?0+$/, '') + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3).replace(/\.?0+$/, '') + ' µs';
    return Math.round(ns) + ' ns';
  }
  function tip(evt, content) {
    const t = document.getElementById('tooltip');
    if (!t) return;
    t.innerHTML = content;
    t.style.display = 'block';
    t.style.left = Math.min(evt.clientX + 14, window.innerWidth - t.offsetWidth - 4) + 'px';
    t.style.top = Math.min(evt.clientY + 14, window.innerHeight - t.offsetHeight - 4) + 'px';
  }
  function untip() { const t = document.getElementById('tooltip'); if (t) t.style.display = 'none'; }
  // White (no CP) to red (the largest operator CP).
  function cpFill(cp, max) {
    const g = Math.round(255 - 200 * (max > 0 ? cp / max : 0));
    return `rgb(255,${g},${Math.round(g * 0.9)})`;
  }

  function drawGraph() {
    const g = jg.data, box = document.getElementById('chart-jobgraph');
    box.textContent = '';
    const cols = [];
    for (const op of g.operators) (cols[op.depth] = cols[op.depth] || []).push(op);
    const rows = Math.max(1, ...Array.from(cols, (c) => (c ? c.length : 0)));
    const width = Math.max(400, cols.length * (NODE_W + COL_GAP) - COL_GAP + 2 * PAD);
    const height = rows * (NODE_H + ROW_GAP) - ROW_GAP + 2 * PAD;
    const svg = el('svg', { width, height, class: 'jobgraph' }, box);
    const defs = el('defs', {}, svg);
    const m = el('marker', { id: 'jg-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' }, defs);
    el('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#67707a' }, m);
    const pos = {};
    cols.forEach((c, d) => (c || []).forEach((op, i) => {
      const x = PAD + d * (NODE_W + COL_GAP);
      const y = PAD + i * (NODE_H + ROW_GAP) + (rows - c.length) * (NODE_H + ROW_GAP) / 2;
      pos[op.id] = { x, y };
    }));
    const edges = el('g', { class: 'jg-edges' }, svg);
    for (const [from, to, n] of g.channels) {
      const a = pos[from], b = pos[to];
      if (!a || !b) continue;
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
      const d = x2 > x1
        ? `M${x1},${y1} C${x1 + COL_GAP / 2},${y1} ${x2 - COL_GAP / 2},${y2} ${x2},${y2}`
        : `M${x1},${y1} C${x1 + 60},${y1 - 70} ${x2 - 60},${y2 - 70} ${x2},${y2}`;  // backwards: a loop above
      const e = el('path', { d, class: 'jg-edge', 'data-from': from, 'data-to': to, 'marker-end': 'url(#jg-arrow)' }, edges);
      e.addEventListener('mousemove', (evt) => tip(evt, `${esc(opName(from))} → ${esc(opName(to))}<br>${n.toLocaleString('en')} data messages`));
      e.addEventListener('mouseleave', untip);
    }
    const maxCp = Math.max(0, ...g.operators.map((o) => o.cp));
    for (const op of g.operators) {
      const p = pos[op.id];
      const n = el('g', { class: 'jg-node' + (op.id === jg.op ? ' selected' : ''), 'data-op': op.id, 'data-cp': op.cp, transform: `translate(${p.x},${p.y})` }, svg);
      el('rect', { width: NODE_W, height: NODE_H, rx: 5, fill: cpFill(op.cp, maxCp) }, n);
      const name = op.name.length > 24 ? op.name.slice(0, 23) + '…' : op.name;
      el('text', { x: 8, y: 17, class: 'jg-name' }, n, name);
      el('text', { x: 8, y: 33, class: 'jg-fact' }, n, `×${op.workers} · busy ${pct(op.busy)}`);
      el('text', { x: 8, y: 49, class: 'jg-fact' }, n, `CP ${pct(op.cp)}`);
      n.addEventListener('mousemove', (evt) => tip(evt, `<b>${esc(op.name)}</b> (operator ${op.id})<br>CP ${pct(op.cp)}<br>` +
        `parallelism ${op.workers} (workers that ran it)<br>busy ${pct(op.busy)} · output ${pct(op.output)} of its workers' time`));
      n.addEventListener('mouseleave', untip);
      n.addEventListener('click', () => { jg.op = op.id; untip(); drawGraph(); drawWorkers(); });
    }
  }
  function opName(id) { const o = jg.data.operators.find((x) => x.id === id); return o ? o.name : String(id); }

  function drawWorkers() {
    const g = jg.data, box = document.getElementById('jobgraph-workers');
    const op = g.operators.find((o) => o.id === jg.op);
    document.getElementById('jobgraph-op-title').textContent = op ? `Workers of ${op.name}` : 'Workers';
    if (!op) { box.textContent = ''; return; }
    const rows = op.rows.map(([w, busy, output, cp]) =>
      `<tr data-worker="${w}"><td>${esc(g.workers[w])}</td><td class="num">${pct(busy)}</td><td class="num">${pct(output)}</td><td class="num">${pct(cp)}</td></tr>`);
    box.innerHTML = '<table class="data" id="jobgraph-table"><thead><tr><th>worker</th><th class="num">busy</th>' +
      '<th class="num">output (serialization + buffer)</th><th class="num">CP</th></tr></thead><tbody>' + rows.join('') + '</tbody></table>';
  }

  // One row per worker, a small line per measure; a point in which nothing completed is
  // hatched and breaks the lines (a stall is not a zero).
  function drawTime() {
    const g = jg.data, box = document.getElementById('chart-jobgraph-time');
    box.textContent = '';
    const pts = g.points, nw = g.workers_in_series;
    if (!pts.length) return;
    const LABEL = 110, ROW = 30, GAP = 14, TOP = 20;
    const width = Math.max(600, box.clientWidth || 1100);
    const pw = (width - LABEL - GAP * MEASURES.length) / MEASURES.length;
    const svg = el('svg', { width, height: TOP + (nw + 1) * ROW + 16, class: 'jg-time' }, box);
    const defs = el('defs', {}, svg);
    const pat = el('pattern', { id: 'jg-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
    el('rect', { width: 6, height: 6, fill: '#fff4e5' }, pat);
    el('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#d08a2c', 'stroke-width': 2 }, pat);
    const t0 = pts[0].t0, t1 = pts[pts.length - 1].t1, span = Math.max(1, t1 - t0);
    const xOf = (m, t) => LABEL + m * (pw + GAP) + pw * (t - t0) / span;
    MEASURES.forEach(([, title], m) => el('text', { x: LABEL + m * (pw + GAP), y: 12, class: 'axis-title' }, svg, title));
    const stallRow = (y, label) => {
      el('text', { x: 0, y: y + ROW / 2 + 4, class: 'label' }, svg, label);
      MEASURES.forEach((_, m) => {
        el('rect', { x: LABEL + m * (pw + GAP), y: y + 2, width: pw, height: ROW - 6, class: 'jg-lane' }, svg);
        pts.forEach((p, i) => {
          if (!p.stalls || p.stalls < p.windows) return;
          const r = el('rect', { x: xOf(m, p.t0), y: y + 2, width: Math.max(1, xOf(m, p.t1) - xOf(m, p.t0)), height: ROW - 6,
            fill: 'url(#jg-hatch)', class: 'jg-stall', 'data-point': i }, svg);
          r.addEventListener('mousemove', (evt) => tip(evt, `stall: nothing completed in ${p.windows === 1 ? 'window ' + p.w0 : 'windows ' + p.w0 + '–' + p.w1}` +
            `<br>${fmtNs(p.t0 - t0)} – ${fmtNs(p.t1 - t0)}`));
          r.addEventListener('mouseleave', untip);
        });
      });
    };
    stallRow(TOP, 'all workers');
    let cpMax = 1e-9;
    for (const p of pts) if (p.cp) for (let w = 0; w < nw; ++w) cpMax = Math.max(cpMax, p.cp[w]);
    for (let w = 0; w < nw; ++w) {
      const y = TOP + (w + 1) * ROW;
      stallRow(y, g.workers[w].length > 16 ? g.workers[w].slice(0, 15) + '…' : g.workers[w]);
      MEASURES.forEach(([key, title, color], m) => {
        // Busy and output: shares of the time; CP: one scale for every worker (the largest).
        const max = key === 'cp' ? cpMax : 1;
        let d = '', pen = false;
        pts.forEach((p) => {
          const v = p[key] ? p[key][w] : null;
          if (v === null || (p.stalls && p.stalls >= p.windows)) { pen = false; return; }
          // A step across the point's time: a point alone between stalls stays visible.
          const yy = (y + ROW - 4 - (ROW - 8) * v / max).toFixed(1);
          d += (pen ? 'L' : 'M') + xOf(m, p.t0).toFixed(1) + ',' + yy + 'L' + xOf(m, p.t1).toFixed(1) + ',' + yy;
          pen = true;
        });
        const line = el('path', { d, class: 'jg-line', stroke: color, 'data-worker': w, 'data-measure': key }, svg);
        line.addEventListener('mousemove', (evt) => {
          const t = t0 + span * Math.min(1, Math.max(0, (evt.offsetX - (LABEL + m * (pw + GAP))) / pw));
          const p = pts.find((q) => t >= q.t0 && t <= q.t1) || pts[0];
          tip(evt, `${esc(g.workers[w])}: ${title} ${pct(p[key] ? p[key][w] : null)}<br>${fmtNs(p.t0 - t0)} – ${fmtNs(p.t1 - t0)}`);
        });
        line.addEventListener('mouseleave', untip);
      });
    }
    el('text', { x: LABEL, y: TOP + (nw + 1) * ROW + 12, class: 'label' }, svg, `0 – ${fmtNs(span)}`);
    // The closed loop (report --stats-json): migrations shaded, decisions as lines.
    const bottom = TOP + (nw + 1) * ROW;
    for (const mk of g.marks) {
      MEASURES.forEach((_, m) => {
        const clip = (t) => Math.min(t1, Math.max(t0, t));
        let node;
        if (mk.kind === 'migration') {
          const a = xOf(m, clip(mk.t0_ns)), b = xOf(m, clip(mk.t1_ns));
          node = el('rect', { x: a, y: TOP, width: Math.max(2, b - a), height: bottom - TOP, class: 'jg-mark-migration' }, svg);
        } else {
          const x = xOf(m, clip(mk.t_ns));
          node = el('line', { x1: x, x2: x, y1: TOP, y2: bottom, class: 'jg-mark-decision' }, svg);
        }
        node.addEventListener('mousemove', (evt) => tip(evt, `${esc(mk.text)}<br>at ${fmtNs((mk.t_ns !== undefined ? mk.t_ns : mk.t0_ns) - t0)}`));
        node.addEventListener('mouseleave', untip);
      });
    }
  }

  // The section's own styles and structure: a page holds only
  // <section id="sec-jobgraph" hidden data-subtitle="..."></section> (the report and the
  // dashboards share them).
  const CSS = `
.jg-node { cursor: pointer; }
.jg-node rect { stroke: #8a939c; stroke-width: 1; }
.jg-node.selected rect { stroke: var(--select); stroke-width: 3; }
.jg-node .jg-name { font-size: 12px; font-weight: 600; fill: var(--fg); }
.jg-node .jg-fact { font-size: 11px; fill: var(--fg); }
.jg-edge { fill: none; stroke: #67707a; stroke-width: 1.5; }
.jg-lane { fill: #f6f8fa; }
.jg-line { fill: none; stroke-width: 1.5; }
#jobgraph-note { color: var(--muted); }
.jg-mark-decision { stroke: #6a3d9a; stroke-width: 2; }
.jg-mark-migration { fill: rgba(106, 61, 154, 0.15); }
#jobgraph-table { width: auto; min-width: 480px; }`;
  function build(sec) {
    if (!document.getElementById('jobgraph-style')) {
      const style = document.createElement('style');
      style.id = 'jobgraph-style';
      style.textContent = CSS;
      document.head.appendChild(style);
    }
    if (sec.firstElementChild) return;
    const h2 = hel('h2', null, sec, 'Job graph ');
    hel('small', null, h2, sec.dataset.subtitle || '');
    hel('div', { id: 'jobgraph-note' }, sec);
    hel('div', { class: 'chart', id: 'chart-jobgraph', 'data-chart': 'jobgraph' }, sec);
    hel('h3', { id: 'jobgraph-op-title' }, sec, 'Workers');
    hel('div', { id: 'jobgraph-workers' }, sec);
    const h3 = hel('h3', null, sec, 'Per worker over time ');
    hel('small', null, h3, 'busy, output (serialization + buffer: no trace records time blocked sending) and CP; hatched: a stall, nothing completed');
    hel('div', { class: 'chart', id: 'chart-jobgraph-time', 'data-chart': 'jobgraph-time' }, sec);
  }

  function draw(data) {
    const sec = document.getElementById('sec-jobgraph');
    if (!sec) return;
    build(sec);
    if (!data || !data.jobgraph || !data.jobgraph.operators.length) { sec.hidden = true; return; }
    sec.hidden = false;
    jg.data = data.jobgraph;
    const g = jg.data;
    if (jg.op === null || !g.operators.some((o) => o.id === jg.op))
      jg.op = g.operators.reduce((a, b) => (b.cp > a.cp ? b : a)).id;
    const notes = [`${g.operators.length} operators, ${g.channels.length} channel${g.channels.length === 1 ? '' : 's'} (from data messages)`,
      `${g.stall_windows} of ${g.windows} windows stalled (nothing completed)`];
    if (g.points_merged > 0) notes.push(`${g.points_merged} windows merged into ${g.points.length} points (${g.windows_per_point} windows per point)`);
    if (g.workers_in_series < g.workers.length) notes.push(`${g.workers.length - g.workers_in_series} workers left out of the series over time`);
    const live = window.SNAILTRAIL_MODE === 'live';
    if (live) notes.push(g.marks.length ? `${g.marks.length} decisions and migrations marked` : 'no closed-loop decisions or migrations so far');
    else notes.push(g.marks.length ? `${g.marks.length} decisions and migrations marked (from run --stats-json)` : 'no closed-loop decisions or migrations: they are not in the trace (report --stats-json FILE marks those of run --stats-json)');
    document.getElementById('jobgraph-note').textContent = notes.join('; ');
    drawGraph();
    drawWorkers();
    drawTime();
    document.body.dataset.jobgraph = 'drawn';
  }

  // Live (serve --http's and run --http's dashboards): poll api/jobgraph, the same object
  // as the report's "jobgraph" member for the windows analyzed so far; redraw on change.
  function poll() {
    let last = '';
    const tick = () => {
      fetch('api/jobgraph', { cache: 'no-store' })
        .then((r) => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
        .then((text) => {
          if (text === last) return;
          last = text;
          draw({ jobgraph: JSON.parse(text) });
          document.body.dataset.jobgraphUpdates = String(+(document.body.dataset.jobgraphUpdates || 0) + 1);
        })
        .catch(() => {})  // the page's own status line says when the server is gone
        .finally(() => setTimeout(tick, 1000));
    };
    tick();
  }

  function start() {
    if (window.SNAILTRAIL_MODE === 'live') return poll();
    const node = document.getElementById('snailtrail-data');
    if (!node) return;
    let data = null;
    try { data = JSON.parse(node.textContent); } catch (e) { data = null; }
    draw(data);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
