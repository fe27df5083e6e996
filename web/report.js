// snailtrail report views (docs/REPORT.md): plain JS drawing SVG. The data is either
// embedded in the page (mode "file") or fetched from api/report every second ("live").
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  // One color per activity type, in the order of data.types (trace/event.hpp).
  const TYPE_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948',
    '#b07aa1', '#ff9da7', '#9c755f', '#d0d4d8', '#bab0ac', '#6f6f6f', '#17becf', '#bcbd22'];
  const CP_COLOR = '#b2182b';
  const CONV_COLOR = '#8fb3d9';
  const MARGIN = { left: 56, right: 16, top: 8, bottom: 34 };

  const state = {
    data: null,
    sel: -1,          // selected point of data.series.points
    timeline: -1,     // shown entry of data.timelines
    zoom: null,       // [t0, t1] of the timeline view, ns from the window start
    heatmapScope: 'trace',
    heatmapMeasure: 'cp',
  };

  // ---------- helpers ----------
  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, attrs, parent, text) {
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  }
  // Largest f(x) over a list (no spread: lists may be longer than the argument limit).
  function maxOf(list, f, init) {
    let m = init;
    for (const x of list) { const v = f(x); if (v > m) m = v; }
    return m;
  }
  function pct(v) {
    if (v === null || v === undefined) return '–';
    const p = v * 100;
    if (p !== 0 && Math.abs(p) < 0.01) return p.toExponential(2) + ' %';
    return p.toFixed(2) + ' %';
  }
  // Durations/instants in ns, shown with a unit that keeps 3-4 significant digits.
  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e11 ? 0 : 3).replace(/\.?0+$/, '') + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3).replace(/\.?0+$/, '') + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3).replace(/\.?0+$/, '') + ' µs';
    return Math.round(ns) + ' ns';
  }
  function niceTicks(lo, hi, count) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const raw = span / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return out;
  }
  // The time unit of an axis spanning `span` ns.
  function timeUnit(span) {
    if (span >= 5e9) return { div: 1e9, name: 's' };
    if (span >= 5e6) return { div: 1e6, name: 'ms' };
    if (span >= 5e3) return { div: 1e3, name: 'µs' };
    return { div: 1, name: 'ns' };
  }
  function svgFor(container, height) {
    container.textContent = '';
    const width = Math.max(320, container.clientWidth || 800);
    const svg = el('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart-svg' }, container);
    return { svg, width, height };
  }
  function empty(container, text) {
    container.textContent = '';
    html('div', { class: 'empty' }, container, text);
  }
  function niceNum(v, unit) {
    return +(v / unit.div).toPrecision(6) + '';
  }
  function timeAxis(g, x, lo, hi, y, width, titlePrefix) {
    const unit = timeUnit(hi - lo);
    const axis = el('g', { class: 'axis' }, g);
    el('line', { x1: x(lo), x2: x(hi), y1: y, y2: y }, axis);
    for (const t of niceTicks(lo / unit.div, hi / unit.div, Math.max(2, Math.floor(width / 90)))) {
      const px = x(t * unit.div);
      el('line', { x1: px, x2: px, y1: y, y2: y + 4 }, axis);
      el('text', { x: px, y: y + 15, 'text-anchor': 'middle' }, axis, niceNum(t * unit.div, unit));
    }
    el('text', { class: 'axis-title', x: x(hi), y: y + 29, 'text-anchor': 'end' }, axis,
      `${titlePrefix} (${unit.name})`);
  }
  function shareAxis(g, y, x0, x1, title) {
    const axis = el('g', { class: 'axis' }, g);
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      el('line', { class: 'gridline', x1: x0, x2: x1, y1: y(v), y2: y(v) }, axis);
      el('text', { x: x0 - 4, y: y(v) + 4, 'text-anchor': 'end' }, axis, (v * 100) + '%');
    }
    el('text', { class: 'axis-title', x: 0, y: 0, transform: `translate(12 ${(y(0) + y(1)) / 2}) rotate(-90)`, 'text-anchor': 'middle' }, axis, title);
  }

  // ---------- tooltip ----------
  const tip = () => document.getElementById('tooltip');
  function showTip(evt, content) {
    const t = tip();
    t.innerHTML = content;
    t.style.display = 'block';
    const w = t.offsetWidth, h = t.offsetHeight;
    let x = evt.clientX + 14, y = evt.clientY + 14;
    if (x + w > window.innerWidth - 4) x = evt.clientX - w - 14;
    if (y + h > window.innerHeight - 4) y = evt.clientY - h - 14;
    t.style.left = Math.max(4, x) + 'px';
    t.style.top = Math.max(4, y) + 'px';
  }
  function hideTip() { tip().style.display = 'none'; }
  function swatch(color) { return `<i style="background:${color}"></i>`; }

  // ---------- data access ----------
  const points = () => state.data.series.points;
  function workerName(id) { return state.data.workers[id] !== undefined ? state.data.workers[id] : String(id); }
  function opName(id) { const n = state.data.series.operators[id]; return n !== undefined ? n : String(id); }
  function activeTypes() {
    const d = state.data, active = [];
    for (let t = 0; t < d.types.length; ++t) {
      let any = d.overall.activity.cp[t] > 0 || d.overall.activity.conv[t] > 0;
      if (!any) any = points().some((p) => (p.cp && p.cp[t] > 0) || p.conv[t] > 0);
      if (any) active.push(t);
    }
    return active;
  }
  function pointOfWindow(index) {
    const ps = points();
    let lo = 0, hi = ps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ps[mid].w0 <= index) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function pointAtTime(t) {
    const ps = points();
    let lo = 0, hi = ps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ps[mid].t0 <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  // The kept timeline inside the selected point, else the nearest one.
  function timelineForPoint(pi) {
    const tl = state.data.timelines, p = points()[pi];
    if (!tl.length || !p) return -1;
    let best = 0, bestDist = Infinity;
    tl.forEach((t, i) => {
      const d = t.index < p.w0 ? p.w0 - t.index : t.index > p.w1 ? t.index - p.w1 : 0;
      if (d < bestDist || (d === bestDist && t.score > tl[best].score)) { best = i; bestDist = d; }
    });
    return best;
  }

  // ---------- time charts ----------
  function drawTimeChart(container, key, yTitle) {
    const ps = points();
    if (!ps.length) return empty(container, 'No window analyzed yet.');
    const types = activeTypes();
    const { svg, width, height } = svgFor(container, 210);
    const x0 = MARGIN.left, x1 = width - MARGIN.right, y0 = height - MARGIN.bottom, y1 = MARGIN.top;
    const tMin = ps[0].t0, tMax = ps[ps.length - 1].t1;
    const x = (t) => x0 + (t - tMin) / Math.max(1, tMax - tMin) * (x1 - x0);
    const y = (v) => y0 - v * (y0 - y1);
    shareAxis(svg, y, x0, x1, yTitle);
    const g = el('g', {}, svg);
    // Step areas: each point covers [t0, t1]; runs of points without values are gaps.
    const base = ps.map(() => 0);
    for (const t of types) {
      let d = '';
      let run = [];
      const flush = () => {
        if (!run.length) return;
        let top = '', bottom = '';
        for (const i of run) {
          const p = ps[i], v = p[key][t];
          top += `${top ? 'L' : 'M'}${x(p.t0).toFixed(1)},${y(base[i] + v).toFixed(1)}L${x(p.t1).toFixed(1)},${y(base[i] + v).toFixed(1)}`;
        }
        for (let k = run.length - 1; k >= 0; --k) {
          const p = ps[run[k]];
          bottom += `L${x(p.t1).toFixed(1)},${y(base[run[k]]).toFixed(1)}L${x(p.t0).toFixed(1)},${y(base[run[k]]).toFixed(1)}`;
        }
        d += top + bottom + 'Z';
        run = [];
      };
      ps.forEach((p, i) => { if (p[key]) run.push(i); else flush(); });
      flush();
      if (d) el('path', { d, fill: TYPE_COLORS[t], class: 'mark area', 'data-type': state.data.types[t] }, g);
      ps.forEach((p, i) => { if (p[key]) base[i] += p[key][t]; });
    }
    // Points without transient paths (no CP): hatched gray.
    if (key === 'cp') {
      ps.forEach((p) => {
        if (!p.cp) el('rect', { x: x(p.t0), y: y1, width: Math.max(1, x(p.t1) - x(p.t0)), height: y0 - y1, fill: '#f0f0f0', class: 'no-paths' }, g);
      });
    }
    // Windows with a kept timeline.
    for (const t of state.data.timelines) {
      const px = x((t.t0 + t.t1) / 2);
      el('path', { d: `M${px - 4},${y0 + 1}L${px + 4},${y0 + 1}L${px},${y0 - 6}Z`, class: 'kept-marker' }, svg);
    }
    timeAxis(svg, x, tMin, tMax, y0, x1 - x0, 'time since the first window');
    // The selected window, outlined: a tint would change the areas' colors from the
    // legend's (and with one point it would tint the whole chart).
    if (state.sel >= 0 && state.sel < ps.length && ps.length > 1) {
      const p = ps[state.sel];
      el('rect', { class: 'selection', x: x(p.t0), y: y1, width: Math.max(2, x(p.t1) - x(p.t0)), height: y0 - y1 }, svg);
    }
    const hover = el('line', { class: 'hover-line', y1: y1, y2: y0, x1: -10, x2: -10 }, svg);
    const overlay = el('rect', { x: x0, y: y1, width: x1 - x0, height: y0 - y1, fill: 'transparent', class: 'overlay' }, svg);
    const pick = (evt) => {
      const r = svg.getBoundingClientRect();
      const t = tMin + (evt.clientX - r.left - x0) / (x1 - x0) * (tMax - tMin);
      return pointAtTime(Math.min(tMax, Math.max(tMin, t)));
    };
    overlay.addEventListener('mousemove', (evt) => {
      const i = pick(evt), p = ps[i];
      hover.setAttribute('x1', x((p.t0 + p.t1) / 2));
      hover.setAttribute('x2', x((p.t0 + p.t1) / 2));
      showTip(evt, pointTip(p, types));
    });
    overlay.addEventListener('mouseleave', () => { hideTip(); hover.setAttribute('x1', -10); hover.setAttribute('x2', -10); });
    overlay.addEventListener('click', (evt) => select(pick(evt), true));
  }
  function pointTip(p, types) {
    const d = state.data;
    const wins = p.w0 === p.w1 ? `window ${p.w0}` : `windows ${p.w0}–${p.w1} (mean)`;
    let s = `<b>${wins}</b>: ${fmtNs(p.t0)} – ${fmtNs(p.t1)}<br>${p.events} events` +
      (p.issues ? `, ${p.issues} diagnostics` : '') + (p.paths < p.windows ? `, ${p.windows - p.paths} without transient paths` : '') +
      '<table><tr><td></td><td class="num">CP</td><td class="num">time</td></tr>';
    const order = types.slice().sort((a, b) => ((p.cp ? p.cp[b] : 0) - (p.cp ? p.cp[a] : 0)) || (p.conv[b] - p.conv[a]));
    for (const t of order) {
      const cp = p.cp ? p.cp[t] : null;
      if (!cp && !p.conv[t]) continue;
      s += `<tr><td>${swatch(TYPE_COLORS[t])}${esc(d.types[t])}</td><td class="num">${pct(cp)}</td><td class="num">${pct(p.conv[t])}</td></tr>`;
    }
    return s + '</table>';
  }

  // Shortens a label to n characters keeping what tells names apart, like the table
  // output (src/output/writers.cpp): the end, or, when the end alone would lose the first
  // number (the identifier: "stage 50", "exec 3"), that leading identifier and the end.
  function abbrev(name, n) {
    if (name.length <= n) return name;
    const tailOf = (room) => name.slice(name.length - room).replace(/^[\s:,;]+/, '');
    const m = /^(\D*?)(\d+)( \(|: |\(|:)?/.exec(name);
    if (m) {
      const numEnd = m[1].length + m[2].length;
      if (name.length - (n - 1) > m[1].length && numEnd + 2 <= n) {
        const head = m[3] && numEnd + m[3].length + 7 <= n ? m[0] : name.slice(0, numEnd);
        return head.trimEnd() + '…' + tailOf(n - 1 - head.length);
      }
    }
    return '…' + tailOf(n - 1);
  }

  // ---------- bar charts (CP beside conventional) ----------
  // convName: what the second bar is (workers and operators: busy-time share).
  function drawBars(container, rows, what, convName = 'time share') {
    if (!rows.length) return empty(container, `No ${what} in this window.`);
    const rowH = 22, labelW = Math.min(170, 30 + 7 * maxOf(rows, (r) => r.name.length, 1));
    const height = MARGIN.top + rows.length * rowH + MARGIN.bottom;
    const { svg, width } = svgFor(container, height);
    const x0 = labelW, x1 = width - MARGIN.right, y0 = MARGIN.top;
    const max = maxOf(rows, (r) => Math.max(r.cp || 0, r.conv || 0), 1e-12);
    const top = Math.min(1, niceTicks(0, max, 4).find((v) => v >= max - 1e-12) || max);
    const x = (v) => x0 + v / top * (x1 - x0);
    const axis = el('g', { class: 'axis' }, svg);
    const yb = y0 + rows.length * rowH;
    for (const v of niceTicks(0, top, Math.max(2, Math.floor((x1 - x0) / 80)))) {
      el('line', { class: 'gridline', x1: x(v), x2: x(v), y1: y0, y2: yb }, axis);
      el('text', { x: x(v), y: yb + 14, 'text-anchor': 'middle' }, axis, +(v * 100).toPrecision(4) + '%');
    }
    el('text', { class: 'axis-title', x: x1, y: yb + 28, 'text-anchor': 'end' }, axis, `share (%): CP of the critical paths, ${convName}`);
    rows.forEach((r, i) => {
      const y = y0 + i * rowH;
      el('text', { class: 'label', x: x0 - 6, y: y + 14, 'text-anchor': 'end' }, svg, abbrev(r.name, 24));
      const g = el('g', { class: 'bar-row', 'data-i': i }, svg);
      el('rect', { x: x0, y: y + 2, width: Math.max(0, x(r.cp || 0) - x0), height: 9, fill: CP_COLOR, class: 'mark bar-cp' }, g);
      el('rect', { x: x0, y: y + 11, width: Math.max(0, x(r.conv || 0) - x0), height: 9, fill: CONV_COLOR, class: 'mark bar-conv' }, g);
      el('rect', { x: 0, y, width: x1, height: rowH, fill: 'transparent', class: 'hit' }, g);
      g.addEventListener('mousemove', (evt) => showTip(evt,
        `<b>${esc(r.name)}</b><table><tr><td>${swatch(CP_COLOR)}CP</td><td class="num">${r.cp === null ? 'no transient paths' : pct(r.cp)}</td></tr>` +
        (r.perWorker !== undefined ? `<tr><td>CP per worker</td><td class="num">${pct(r.perWorker)}</td></tr>` : '') +
        `<tr><td>${swatch(CONV_COLOR)}${convName}</td><td class="num">${pct(r.conv)}</td></tr>` +
        (r.note ? `<tr><td colspan="2">${esc(r.note)}</td></tr>` : '') + '</table>'));
      g.addEventListener('mouseleave', hideTip);
    });
  }
  function rankedRows(ranked, kind) {
    const rows = ranked.groups.map((g) => ({ name: g.name, cp: g.cp, conv: g.conv, perWorker: g.cp_per_worker }));
    if (ranked.other.count > 0)
      rows.push({ name: `other (${ranked.other.count} ${kind})`, cp: ranked.other.cp, conv: ranked.other.conv, note: 'the remaining groups, summed' });
    return rows;
  }
  function pointRows(p, key, nameOf, kind) {
    const rows = p[key].map(([id, cp, conv]) => ({ name: nameOf(id), cp: p.cp ? cp : null, conv }));
    rows.sort((a, b) => ((b.cp || 0) - (a.cp || 0)) || (b.conv - a.conv));
    const [ocp, oconv] = p[key + '_other'];
    if (ocp > 0 || oconv > 0) rows.push({ name: `other ${kind}`, cp: p.cp ? ocp : null, conv: oconv, note: 'the remaining groups, summed' });
    return rows;
  }

  // ---------- heatmap ----------
  function drawHeatmap(container) {
    const d = state.data;
    let hm = d.overall.heatmap;
    if (state.heatmapScope !== 'trace' && d.timelines[+state.heatmapScope]) hm = d.timelines[+state.heatmapScope].heatmap;
    const n = hm.labels.length;
    if (!n) return empty(container, 'No messages between workers.');
    const values = hm[state.heatmapMeasure];
    const labelW = Math.min(140, 20 + 7 * maxOf(hm.labels, (l) => l.length, 1));
    const width0 = Math.max(320, container.clientWidth || 600);
    const cell = Math.max(6, Math.min(28, Math.floor((width0 - labelW - 90) / n)));
    const height = labelW + n * cell + 40;
    const { svg } = svgFor(container, height);
    const gx = labelW, gy = labelW;
    const max = maxOf(values, (v) => v, 1e-300);
    const color = (v) => {
      if (!(v > 0)) return '#ffffff';
      const a = Math.sqrt(v / max);  // sqrt: small flows stay visible
      const r = Math.round(255 - a * (255 - 0xb2)), g = Math.round(255 - a * (255 - 0x18)), b = Math.round(255 - a * (255 - 0x2b));
      return `rgb(${r},${g},${b})`;
    };
    for (let i = 0; i < n; ++i) {
      el('text', { class: 'label', x: gx - 4, y: gy + i * cell + cell / 2 + 4, 'text-anchor': 'end' }, svg, hm.labels[i]);
      el('text', { class: 'label', x: 0, y: 0, transform: `translate(${gx + i * cell + cell / 2 + 4} ${gy - 4}) rotate(-90)` }, svg, hm.labels[i]);
    }
    el('text', { class: 'axis-title', x: 0, y: 0, transform: `translate(10 ${gy + n * cell / 2}) rotate(-90)`, 'text-anchor': 'middle' }, svg, 'sender');
    el('text', { class: 'axis-title', x: gx + n * cell / 2, y: 12, 'text-anchor': 'middle' }, svg, 'receiver');
    const g = el('g', {}, svg);
    for (let i = 0; i < n; ++i) {
      for (let j = 0; j < n; ++j) {
        const v = values[i * n + j];
        el('rect', { x: gx + j * cell, y: gy + i * cell, width: cell - 1, height: cell - 1, fill: color(v), stroke: '#eef1f4', 'stroke-width': 0.5, class: v > 0 ? 'mark cell' : 'cell', 'data-i': i, 'data-j': j }, g);
      }
    }
    g.addEventListener('mousemove', (evt) => {
      const t = evt.target;
      if (!t.dataset || t.dataset.i === undefined) return;
      const i = +t.dataset.i, j = +t.dataset.j;
      showTip(evt, `<b>${esc(hm.labels[i])} → ${esc(hm.labels[j])}</b><table>` +
        `<tr><td>CP of messages</td><td class="num">${pct(hm.cp[i * n + j])}</td></tr>` +
        `<tr><td>time share of messages</td><td class="num">${pct(hm.conv[i * n + j])}</td></tr></table>`);
    });
    g.addEventListener('mouseleave', hideTip);
    // Color scale.
    const ly = gy + n * cell + 14;
    const steps = 20;
    for (let k = 0; k < steps; ++k)
      el('rect', { x: gx + k * 8, y: ly, width: 8, height: 8, fill: color(max * Math.pow((k + 1) / steps, 2)) }, svg);
    el('text', { class: 'label', x: gx + steps * 8 + 6, y: ly + 8 }, svg,
      `0 … ${pct(max)} (${state.heatmapMeasure === 'cp' ? 'CP' : 'time share'}; color ∝ √value)`);
  }

  // ---------- timeline (Gantt) ----------
  function drawTimeline(container) {
    const d = state.data;
    const tl = d.timelines[state.timeline];
    const label = document.getElementById('timeline-label');
    if (!tl) { label.textContent = ''; return empty(container, 'No timeline kept.'); }
    const p = points()[state.sel];
    const inside = p && tl.index >= p.w0 && tl.index <= p.w1;
    label.textContent = `window ${tl.index}: ${fmtNs(tl.t0)} – ${fmtNs(tl.t1)}, ${tl.edges.length} activities, ${tl.messages.length} messages` +
      (tl.dropped_edges ? `, ${tl.dropped_edges} less critical edges left out` : '') +
      (p && !inside ? ' (nearest window with a timeline to the selection)' : '');
    const len = tl.t1 - tl.t0;
    if (!state.zoom) state.zoom = [0, len];
    const [z0, z1] = state.zoom;
    const seen = new Set();
    for (const e of tl.edges) seen.add(e[0]);
    for (const m of tl.messages) { seen.add(m[0]); seen.add(m[1]); }
    const workers = [...seen].sort((a, b) => a - b);
    const row = new Map(workers.map((w, i) => [w, i]));
    const rowH = Math.max(5, Math.min(20, Math.floor(560 / Math.max(1, workers.length))));
    const labelW = Math.min(150, 24 + 7 * maxOf(workers, (w) => workerName(w).length, 4));
    const height = MARGIN.top + workers.length * rowH + MARGIN.bottom;
    const { svg, width } = svgFor(container, height);
    const x0 = labelW, x1 = width - MARGIN.right, y0 = MARGIN.top;
    const x = (t) => x0 + (t - z0) / (z1 - z0) * (x1 - x0);
    const defs = el('defs', {}, svg);
    const clip = el('clipPath', { id: 'tl-clip' }, defs);
    el('rect', { x: x0, y: 0, width: x1 - x0, height }, clip);
    for (const [id, color] of [['arrow-cp', CP_COLOR], ['arrow', '#8a939c']]) {
      const m = el('marker', { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' }, defs);
      el('path', { d: 'M0,0L10,5L0,10Z', fill: color }, m);
    }
    workers.forEach((w, i) => {
      if (rowH >= 8 || i % Math.ceil(8 / rowH) === 0)
        el('text', { class: 'label', x: x0 - 4, y: y0 + i * rowH + rowH / 2 + 4, 'text-anchor': 'end' }, svg, workerName(w));
      if (i % 2) el('rect', { x: x0, y: y0 + i * rowH, width: x1 - x0, height: rowH, fill: '#f7f8fa' }, svg);
    });
    el('text', { class: 'axis-title', x: 0, y: 0, transform: `translate(10 ${y0 + workers.length * rowH / 2}) rotate(-90)`, 'text-anchor': 'middle' }, svg, 'worker');
    const maxCp = Math.max(maxOf(tl.edges, (e) => e[5], 1e-300), maxOf(tl.messages, (m) => m[5], 1e-300));
    const g = el('g', { 'clip-path': 'url(#tl-clip)' }, svg);
    // Span of the transient paths (V_s .. V_e).
    el('rect', { x: x(tl.span0), y: y0, width: Math.max(0, x(tl.span1) - x(tl.span0)), height: workers.length * rowH, fill: 'none', stroke: '#c8ced4', 'stroke-dasharray': '4 3' }, g);
    const minPx = (z1 - z0) / (x1 - x0) * 0.5;  // narrower than half a pixel: skipped
    tl.edges.forEach((e, i) => {
      const [w, s, t, type, , cp] = e;
      if (t < z0 || s > z1 || t - s < minPx) return;
      const xs = Math.max(x0 - 2, x(s)), xe = Math.min(x1 + 2, x(t));
      // Shading by CP: critical edges opaque, edges off every critical path faint.
      const op = cp > 0 ? 0.45 + 0.55 * Math.sqrt(cp / maxCp) : 0.2;
      el('rect', { x: xs, y: y0 + row.get(w) * rowH + 1, width: Math.max(0.5, xe - xs), height: Math.max(2, rowH - 2), fill: TYPE_COLORS[type], 'fill-opacity': op.toFixed(3), class: 'mark edge', 'data-e': i }, g);
    });
    tl.messages.forEach((m, i) => {
      const [src, dst, s, t, , cp] = m;
      if (t < z0 || s > z1) return;
      const ys = y0 + row.get(src) * rowH + rowH / 2, yd = y0 + row.get(dst) * rowH + rowH / 2;
      const critical = cp > 0;
      el('line', { x1: x(s), y1: ys, x2: x(t), y2: yd, stroke: critical ? CP_COLOR : '#8a939c', 'stroke-opacity': critical ? (0.4 + 0.6 * Math.sqrt(cp / maxCp)).toFixed(3) : 0.35, 'stroke-width': critical ? 1.4 : 0.8, 'marker-end': critical ? 'url(#arrow-cp)' : 'url(#arrow)', class: 'mark message', 'data-m': i }, g);
    });
    timeAxis(svg, x, z0, z1, y0 + workers.length * rowH, x1 - x0, `time since the window start, ${fmtNs(tl.t0)} after the first window`);
    g.addEventListener('mousemove', (evt) => {
      const t = evt.target;
      if (t.dataset.e !== undefined) {
        const [w, s, e, type, opId, cp] = tl.edges[+t.dataset.e];
        showTip(evt, `<b>${swatch(TYPE_COLORS[type])}${esc(d.types[type])}</b> on ${esc(workerName(w))}` +
          (opId >= 0 ? `, operator ${esc(opName(opId))}` : '') +
          `<table><tr><td>start</td><td class="num">+${fmtNs(s)}</td></tr><tr><td>duration</td><td class="num">${fmtNs(e - s)}</td></tr>` +
          `<tr><td>CP</td><td class="num">${tl.has_paths ? pct(cp) : 'no transient paths'}</td></tr></table>`);
      } else if (t.dataset.m !== undefined) {
        const [src, dst, s, e, type, cp] = tl.messages[+t.dataset.m];
        showTip(evt, `<b>${esc(d.types[type])}</b> ${esc(workerName(src))} → ${esc(workerName(dst))}` +
          `<table><tr><td>sent</td><td class="num">+${fmtNs(s)}</td></tr><tr><td>latency</td><td class="num">${fmtNs(e - s)}</td></tr>` +
          `<tr><td>CP</td><td class="num">${tl.has_paths ? pct(cp) : 'no transient paths'}</td></tr></table>`);
      } else hideTip();
    });
    g.addEventListener('mouseleave', hideTip);
    // Zoom with the wheel around the pointer, pan by dragging.
    const toTime = (clientX) => z0 + (clientX - svg.getBoundingClientRect().left - x0) / (x1 - x0) * (z1 - z0);
    svg.addEventListener('wheel', (evt) => {
      evt.preventDefault();
      zoomTimeline(evt.deltaY < 0 ? 0.8 : 1.25, toTime(evt.clientX));
    }, { passive: false });
    svg.addEventListener('mousedown', (evt) => {
      const startX = evt.clientX, [s0, s1] = state.zoom, perPx = (s1 - s0) / (x1 - x0);
      svg.classList.add('dragging');
      const move = (e) => { panTimeline(s0, s1, (startX - e.clientX) * perPx); };
      const up = () => { window.removeEventListener('mousemove', move); window.removeEventListener('mouseup', up); svg.classList.remove('dragging'); };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  }
  let timelineFrame = 0;
  function redrawTimeline() {
    if (timelineFrame) return;
    timelineFrame = requestAnimationFrame(() => { timelineFrame = 0; drawTimeline(document.getElementById('chart-timeline')); });
  }
  function zoomTimeline(factor, center) {
    const tl = state.data.timelines[state.timeline];
    if (!tl) return;
    const len = tl.t1 - tl.t0;
    let [z0, z1] = state.zoom || [0, len];
    if (center === undefined) center = (z0 + z1) / 2;
    const w = Math.min(len, Math.max(1000, (z1 - z0) * factor));  // at most 1 µs per view
    z0 = center - (center - z0) / (z1 - z0) * w;
    z0 = Math.min(len - w, Math.max(0, z0));
    state.zoom = [z0, z0 + w];
    redrawTimeline();
  }
  function panTimeline(s0, s1, delta) {
    const tl = state.data.timelines[state.timeline];
    const len = tl.t1 - tl.t0, w = s1 - s0;
    const z0 = Math.min(len - w, Math.max(0, s0 + delta));
    state.zoom = [z0, z0 + w];
    redrawTimeline();
  }

  // ---------- tables ----------
  function topTable(container, rows, offset) {
    container.textContent = '';
    if (!rows || !rows.length) return html('div', { class: 'empty' }, container, 'No critical activity (no transient paths).');
    const t = html('table', { class: 'data top' }, container);
    const windows = rows[0].window !== undefined;
    t.innerHTML = '<thead><tr><th class="num">#</th><th class="num">CP</th><th>activity</th><th>worker</th><th>operator</th>' +
      (windows ? '<th class="num">window</th>' : '') + '<th class="num">start</th><th class="num">duration</th></tr></thead>';
    const body = html('tbody', {}, t);
    rows.forEach((a, i) => {
      const tr = html('tr', {}, body);
      const ti = state.data.types.indexOf(a.type);
      tr.innerHTML = `<td class="num">${i + 1}</td><td class="num">${pct(a.cp)}</td><td>${swatch(TYPE_COLORS[ti] || '#999')}${esc(a.type)}</td>` +
        `<td>${esc(a.worker)}${a.remote !== undefined ? ' → ' + esc(a.remote) : ''}</td><td>${a.operator !== undefined ? esc(a.operator) : ''}</td>` +
        (windows ? `<td class="num">${a.window}</td>` : '') + `<td class="num">${fmtNs(a.start_ns + offset)}</td><td class="num">${fmtNs(a.end_ns - a.start_ns)}</td>`;
    });
  }
  const DIAG_EXPLAIN = {
    no_paths: 'some window had no transient path (all workers waiting, nothing in flight): no CP there',
    property1_violations: 'nodes without an incoming edge inside a window: a worker started mid-window (missing events)',
    property2_violations: 'intervals where every worker waits and no message is in flight',
    property2_ns: 'total length of those intervals',
    input_idle_ns: 'time every worker waited, some for its input: the job keeps up (not a problem)',
    zero_duration_cycles: 'zero-duration messages dropped to break cycles',
    unmatched_sends: 'sends without a matching receive',
    unmatched_recvs: 'receives without a matching send',
    messages_without_correlator: 'messages lacking a correlator or remote worker: not matched',
    duplicate_correlators: 'more than one send or receive with the same id',
    negative_duration_messages: 'received before sent (clock skew): dropped',
    self_loop_messages: 'zero-duration messages from a node to itself',
    ends_without_start: 'end events without a start',
    mismatched_ends: 'end of another type than the open activity',
    overlapping_activities: 'start while another activity was open',
    unterminated_activities: 'activities still open at a worker\u2019s last event',
    unknown_share: 'share of worker time not covered by any instrumented activity',
    waiting_share: 'share of worker time spent waiting',
  };
  function diagValue(k, v) {
    if (v === undefined) return '';
    if (k.endsWith('_share')) return pct(v);
    if (k === 'property2_ns' || k === 'input_idle_ns') return fmtNs(v);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    return String(v);
  }
  function drawDiagnostics(container) {
    const d = state.data, tl = d.timelines[state.timeline];
    const all = d.overall.diagnostics, win = tl ? tl.diagnostics : null;
    container.textContent = '';
    const t = html('table', { class: 'data diagnostics' }, container);
    t.innerHTML = `<thead><tr><th>check</th><th class="num">whole trace</th><th class="num">${tl ? 'window ' + tl.index : ''}</th><th>meaning</th></tr></thead>`;
    const body = html('tbody', {}, t);
    const keys = Object.keys(all).filter((k) => k !== 'input');
    for (const k of keys) {
      const v = all[k];
      const nonzero = k === 'waiting_share' ? false : (typeof v === 'boolean' ? v : v > 0);
      const tr = html('tr', nonzero ? { class: 'nonzero' } : {}, body);
      tr.innerHTML = `<td>${esc(k)}</td><td class="num">${diagValue(k, v)}</td><td class="num">${win ? diagValue(k, win[k]) : ''}</td><td class="explain">${esc(DIAG_EXPLAIN[k] || '')}</td>`;
    }
    for (const [k, v] of Object.entries(all.input || {})) {
      const tr = html('tr', { class: 'nonzero' }, body);
      tr.innerHTML = `<td>${esc(k)}</td><td class="num">${v}</td><td></td><td class="explain">input problems found while reading</td>`;
    }
  }

  // ---------- page ----------
  function legend(container, items) {
    container.textContent = '';
    for (const [name, color] of items) {
      const s = html('span', {}, container);
      html('i', { style: `background:${color}` }, s);
      s.appendChild(document.createTextNode(name));
    }
  }
  function fillTimelineControls() {
    const d = state.data;
    const sel = document.getElementById('timeline-select');
    sel.textContent = '';
    d.timelines.forEach((t, i) => html('option', { value: i }, sel,
      `#${t.index} at ${fmtNs(t.t0)}: top activity ${pct(t.score)}`));
    sel.value = state.timeline;
    const scope = document.getElementById('heatmap-scope');
    scope.textContent = '';
    html('option', { value: 'trace' }, scope, 'whole trace');
    if (d.timelines[state.timeline]) html('option', { value: String(state.timeline) }, scope, `window ${d.timelines[state.timeline].index}`);
    if (state.heatmapScope !== 'trace') state.heatmapScope = String(state.timeline);
    scope.value = state.heatmapScope;
  }
  function drawSelection() {
    const d = state.data, p = points()[state.sel];
    drawVerdict();
    const label = p ? (p.w0 === p.w1 ? `window ${p.w0} (${fmtNs(p.t0)} – ${fmtNs(p.t1)})` : `windows ${p.w0}–${p.w1} (${fmtNs(p.t0)} – ${fmtNs(p.t1)}, mean)`) : '';
    document.getElementById('sel-label-w').textContent = label ? 'selected: ' + label : '';
    document.getElementById('sel-label-o').textContent = label ? 'selected: ' + label : '';
    if (p) {
      drawBars(document.getElementById('chart-workers-sel'), pointRows(p, 'workers', workerName, 'workers'), 'workers', 'busy-time share');
      drawBars(document.getElementById('chart-ops-sel'), pointRows(p, 'ops', opName, 'operators'), 'operators', 'busy-time share');
    } else {
      empty(document.getElementById('chart-workers-sel'), 'No window selected.');
      empty(document.getElementById('chart-ops-sel'), 'No window selected.');
    }
    fillTimelineControls();
    drawTimeline(document.getElementById('chart-timeline'));
    drawHeatmap(document.getElementById('chart-heatmap'));
    drawDiagnostics(document.getElementById('diagnostics'));
    const tl = d.timelines[state.timeline];
    document.getElementById('top-sel-title').textContent = tl ? `Window ${tl.index}` : 'Selected window';
    topTable(document.getElementById('top-sel'), tl ? tl.top : [], tl ? tl.t0 : 0);
  }
  // Selects point `i`; the timeline follows unless the user picked one explicitly.
  function select(i, userAction) {
    state.sel = i;
    const tli = timelineForPoint(i);
    if (tli !== state.timeline) { state.timeline = tli; state.zoom = null; }
    drawTimeCharts();
    drawSelection();
    if (userAction) document.body.dataset.selected = String(points()[i].w0);
  }
  function drawTimeCharts() {
    drawTimeChart(document.getElementById('chart-cp-time'), 'cp', 'CP (%)');
    drawTimeChart(document.getElementById('chart-conv-time'), 'conv', 'time (%)');
  }
  // ---------- verdict, hints and what-if ----------
  function verdictHtml(v) {
    if (!v) return '';
    let h = `<p class="verdict-text"><b>${esc(v.kind)}</b>${v.name ? ' · ' + esc(v.name) : ''}: ${esc(v.text)}</p>`;
    if (v.hints && v.hints.length)
      h += '<ul class="hints">' + v.hints.map((x) => `<li data-hint="${esc(x.kind)}">${esc(x.text)}</li>`).join('') + '</ul>';
    return h;
  }
  function drawVerdict() {
    const d = state.data, v = d.overall.verdict, box = document.getElementById('verdict');
    box.innerHTML = verdictHtml(v);
    box.dataset.kind = v ? v.kind : '';
    const tl = d.timelines[state.timeline], sel = document.getElementById('verdict-sel');
    // One window: its verdict is the whole trace's, shown once.
    const oneWindow = d.windows <= 1;
    sel.innerHTML = tl && tl.verdict && !oneWindow ? `<p><small>window ${tl.index}:</small></p>` + verdictHtml(tl.verdict) : '';
    const wi = document.getElementById('what-if');
    const items = d.overall.what_if;
    if (!items) { wi.innerHTML = ''; return; }
    if (!items.length) { wi.innerHTML = '<p>What-if: no speed-up tried shortens the critical path.</p>'; return; }
    wi.innerHTML = '<h3>What if it were faster <small>critical-path time saved, summed over windows</small></h3>' +
      '<table class="what-if"><thead><tr><th>kind</th><th>name</th><th class="num">speed-up</th><th class="num">saved</th></tr></thead><tbody>' +
      items.map((x) => `<tr><td>${esc(x.kind)}</td><td>${esc(x.name)}</td><td class="num">${x.basis === 'peer_median' ? 'peers\' median (' + x.speedup.toFixed(2) + '×)' : x.speedup + '×'}</td><td class="num">${fmtNs(x.saved_ns)}</td></tr>`).join('') +
      '</tbody></table>';
  }

  function drawAll() {
    const d = state.data;
    document.getElementById('source').textContent = d.source;
    const live = window.SNAILTRAIL_MODE === 'live';
    document.getElementById('facts').textContent =
      `${d.windows} window${d.windows === 1 ? '' : 's'} of ${d.window} (${d.windows_with_paths} with transient paths), ` +
      `${d.events.toLocaleString('en')} events, ${d.edges.toLocaleString('en')} edges, ${d.workers.length} worker${d.workers.length === 1 ? '' : 's'}` +
      (d.series.windows_per_point > 1 ? `; time charts: ${d.series.windows_per_point} windows per point` : '') +
      (live ? '' : '');
    legend(document.getElementById('legend-types'), activeTypes().map((t) => [d.types[t], TYPE_COLORS[t]]).concat(d.series.points.some((p) => !p.cp) ? [['no transient paths', '#f0f0f0']] : []));
    legend(document.getElementById('legend-workers'), [['critical participation', CP_COLOR], ['busy-time share (conventional)', CONV_COLOR]]);
    legend(document.getElementById('legend-ops'), [['critical participation (all the operator\'s activities)', CP_COLOR], ['busy-time share (conventional)', CONV_COLOR]]);
    legend(document.getElementById('legend-timeline'), activeTypes().map((t) => [d.types[t], TYPE_COLORS[t]]).concat([['critical message', CP_COLOR], ['opacity: CP of the edge', '#999']]));
    drawBars(document.getElementById('chart-workers-all'), rankedRows(d.overall.workers, 'workers'), 'workers', 'busy-time share');
    drawBars(document.getElementById('chart-ops-all'), rankedRows(d.overall.operators, 'operators'), 'operators', 'busy-time share');
    topTable(document.getElementById('top-all'), d.overall.top, 0);
    drawFlame();
    drawTimeCharts();
    drawSelection();
  }

  // ---------- flame graph (data.flame, a trace with a profile; docs/FLAME.md) ----------
  // data.flame[mode] (the weight: critical, on-CPU, off-CPU, mixed) drawn in one of
  // speedscope's views: left heavy or merged (alphabetical, as flamegraph.pl) icicles of
  // .root (roots on top: operators, then frames; click a frame to zoom on it, the top
  // bar or reset to zoom out), time order (a flame chart of .time_order per worker) or
  // sandwich (a table of functions; the chosen one's callers above, callees below).
  // Search highlights matching frames in every view and filters the sandwich table.
  const flameState = { mode: 'critical', view: 'left-heavy', zoom: [], search: '', timeZoom: [], focus: null, sort: 'total' };
  function flameColor(name) {
    if (name.startsWith('[op ') || name.startsWith('[thread ') || name === '[no operator]') return '#8fb3d9';
    if (name.startsWith('[') || name === '[unknown]') return '#c8c8c8';
    if (name.endsWith('_[k]')) return '#f0a35e';
    let h = 0;
    for (let i = 0; i < name.length; ++i) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return `hsl(${10 + h % 40}, ${70 + h % 20}%, ${55 + h % 12}%)`;
  }
  const FLAME_HIT = '#d62fd6';
  function flameValue(unit) {
    return (v) => unit === 'ns' ? fmtNs(v) : `${Math.round(v).toLocaleString('en')} ${unit}`;
  }
  function flameTreeDepth(n) {
    let depth = 0;
    (function deepest(x, k) { depth = Math.max(depth, k); for (const c of x.children || []) deepest(c, k + 1); })(n, 1);
    return depth;
  }
  // One frame: a rect with its name when it fits; `tip` on hover, `click` on click.
  function flameFrame(svg, name, x, y, w, h, hit, attrs, tip, click) {
    const g = el('g', Object.assign({ class: 'frame', 'data-name': name }, attrs), svg);
    el('rect', { x, y, width: Math.max(0.5, w - 0.5), height: h - 1, fill: hit ? FLAME_HIT : flameColor(name) }, g);
    if (w > 30) {
      const chars = Math.floor((w - 6) / 6.5);
      el('text', { x: x + 3, y: y + h - 5, class: 'flame-label' }, g, name.length > chars ? name.slice(0, Math.max(0, chars - 1)) + '…' : name);
    }
    if (!tip) return g;  // the caller listens on the whole chart
    g.addEventListener('mousemove', (e) => showTip(e, tip()));
    g.addEventListener('mouseleave', hideTip);
    g.addEventListener('click', () => { hideTip(); click(); });
    return g;
  }
  // An icicle of `root` (level 0 on top, or at the bottom when `up`: callers), children
  // heaviest first when `heavy`, else in the data's (alphabetical) order. Returns the
  // weight of the frames matching `query`.
  function flameIcicle(svg, root, o) {
    const ROW = 18, rows = flameTreeDepth(root);
    let matched = 0;
    function frame(n, x, w, level, path) {
      if (w < 0.5) return;
      const hit = o.query && n.name.toLowerCase().includes(o.query);
      if (hit) matched += n.value;
      const y = o.up ? (rows - 1 - level) * ROW : level * ROW;
      flameFrame(svg, n.name, x, y, w, ROW, hit, { 'data-depth': level },
        () => `<b>${esc(n.name)}</b><br>${o.fmt(n.value)} (${o.total > 0 ? (100 * n.value / o.total).toFixed(2) : '0.00'} % of all)` + (n.self ? `<br>self ${o.fmt(n.self)}` : ''),
        () => o.click(n, level, path));
      let cx = x;
      const kids = n.children || [];
      for (const c of o.heavy ? kids.slice().sort((a, b) => b.value - a.value) : kids) {
        const cw = n.value > 0 ? w * c.value / n.value : 0;
        frame(c, cx, cw, level + 1, path.concat([c.name]));
        cx += cw;
      }
    }
    frame(root, 0, o.width, 0, o.path || []);
    return matched;
  }
  function drawFlame() {
    const d = state.data, sec = document.getElementById('sec-flame');
    if (!d.flame) { sec.hidden = true; return; }
    sec.hidden = false;
    const box = document.getElementById('chart-flame');
    box.innerHTML = '';
    box.dataset.view = flameState.view;
    const graph = d.flame[flameState.mode];
    if (flameState.view === 'time-order') return drawFlameTime(box, graph);
    if (flameState.view === 'sandwich') return drawFlameSandwich(box, graph);
    let root = graph.root;
    for (const name of flameState.zoom) {  // the zoom path, by frame names from the root
      const c = (root.children || []).find((x) => x.name === name);
      if (!c) break;
      root = c;
    }
    const total = graph.total, width = Math.max(400, box.clientWidth || 1000);
    const svg = el('svg', { width, height: flameTreeDepth(root) * 18 + 4, class: 'flame' }, box);
    const query = flameState.search.toLowerCase();
    const matched = flameIcicle(svg, root, {
      width, query, total, fmt: flameValue(graph.unit), heavy: flameState.view === 'left-heavy', path: flameState.zoom.slice(),
      click: (n, level, path) => { flameState.zoom = level === 0 ? flameState.zoom.slice(0, -1) : path; drawFlame(); },
    });
    document.getElementById('flame-match').textContent = query
      ? `matched: ${total > 0 ? (100 * matched / total).toFixed(2) : '0.00'} % of all` : '';
    svg.dataset.total = String(total);
  }
  // Time order: per lane (worker) a strip with one mark per run, then the runs' stacks as
  // a flame chart, x = time; a frame spans the touching runs that share it. Click a frame
  // to zoom on its time span, reset to zoom out.
  function drawFlameTime(box, graph) {
    const to = graph.time_order, match = document.getElementById('flame-match');
    const n = to ? to.runs.lane.length : 0;
    if (!n) {
      html('div', { class: 'empty' }, box, to && to.untimed
        ? `no time order: the ${to.untimed.toLocaleString('en')} samples of this view carry no time`
        : 'no samples in this view');
      match.textContent = '';
      return;
    }
    const R = to.runs, P = to.stacks.parent, F = to.stacks.frame, names = to.frames;
    const depthOf = new Int32Array(P.length);  // parents come before their children
    for (let s = 0; s < P.length; ++s) depthOf[s] = P[s] < 0 ? 1 : depthOf[P[s]] + 1;
    const query = flameState.search.toLowerCase();
    const hitOf = new Uint8Array(P.length), inOf = new Uint8Array(P.length);  // own name, any frame of the path
    for (let s = 0; s < P.length; ++s) {
      hitOf[s] = query && names[F[s]].toLowerCase().includes(query) ? 1 : 0;
      inOf[s] = hitOf[s] || (P[s] >= 0 && inOf[P[s]]) ? 1 : 0;
    }
    let end = 0, weight = 0, matched = 0;
    const laneDepth = new Array(to.lanes.length).fill(0), laneRuns = new Array(to.lanes.length).fill(0);
    for (let i = 0; i < n; ++i) {
      end = Math.max(end, R.end[i]);
      weight += R.weight[i];
      if (R.stack[i] >= 0 && inOf[R.stack[i]]) matched += R.weight[i];
      if (R.stack[i] >= 0) laneDepth[R.lane[i]] = Math.max(laneDepth[R.lane[i]], depthOf[R.stack[i]]);
      ++laneRuns[R.lane[i]];
    }
    const zoom = flameState.timeZoom[flameState.timeZoom.length - 1];
    const v0 = zoom ? zoom[0] : 0, v1 = zoom ? zoom[1] : Math.max(1, end);
    const ROW = 16, LABEL = 16, STRIP = 6, AXIS = 20;
    const width = Math.max(400, box.clientWidth || 1000);
    const X = (t) => (t - v0) / (v1 - v0) * width;
    let height = AXIS;
    for (const dp of laneDepth) height += LABEL + STRIP + 2 + dp * ROW + 6;
    const svg = el('svg', { width, height, class: 'flame flame-time' }, box);
    svg.dataset.runs = String(n);
    svg.dataset.total = String(weight);
    const unit = timeUnit(v1 - v0), fmt = flameValue(graph.unit);
    const axis = el('g', { class: 'axis' }, svg);
    for (const t of niceTicks(v0, v1, Math.max(2, Math.floor(width / 110)))) {
      el('line', { x1: X(t), x2: X(t), y1: AXIS - 5, y2: height, class: 'gridline' }, axis);
      el('text', { x: X(t) + 2, y: AXIS - 8, class: 'label' }, axis, `${+(t / unit.div).toFixed(3)} ${unit.name}`);
    }
    const visible = (a, b) => b >= v0 && a <= v1;
    const clipW = (a, b) => [X(Math.max(a, v0)), X(Math.min(b, v1)) - X(Math.max(a, v0))];
    // One listener per chart, not per frame (thousands of them): data-i is the frame's
    // entry in `drawn`, data-r the run's index.
    const drawn = [];
    const tipOf = (t) => {
      if (t.dataset.r !== undefined) {
        const i = +t.dataset.r, s = R.stack[i], a = R.start[i], b = R.end[i];
        return `${s >= 0 ? '<b>' + esc(names[F[s]]) + '</b><br>' : ''}run of ${R.samples[i]} sample${R.samples[i] === 1 ? '' : 's'}: ${fmtNs(b - a)} from ${fmtNs(a)}<br>${fmt(R.weight[i])}`;
      }
      const f = drawn[+t.dataset.i];
      return `<b>${esc(names[F[f.s]])}</b><br>${fmtNs(f.b - f.a)} from ${fmtNs(f.a)}<br>${fmt(f.w)} in ${f.k} run${f.k === 1 ? '' : 's'}`;
    };
    svg.addEventListener('mousemove', (e) => { const t = e.target.closest('[data-i], [data-r]'); if (t) showTip(e, tipOf(t)); else hideTip(); });
    svg.addEventListener('mouseleave', hideTip);
    svg.addEventListener('click', (e) => {
      const t = e.target.closest('[data-i]');
      if (!t) return;
      const f = drawn[+t.dataset.i];
      hideTip();
      flameState.timeZoom.push([f.a, f.b]);
      drawFlame();
    });
    let y = AXIS, i = 0;
    for (let lane = 0; lane < to.lanes.length; ++lane) {
      el('text', { x: 2, y: y + 12, class: 'axis-title' }, svg, `${to.lanes[lane]} · ${laneRuns[lane].toLocaleString('en')} runs`);
      const top = y + LABEL + STRIP + 2;
      const open = [];  // open[k]: the frame at depth k + 1 being extended {s, a, b, w, k}
      const flush = (from) => {
        while (open.length > from) {
          const f = open.pop(), k = open.length;
          if (!visible(f.a, f.b)) continue;
          const [fx, fw] = clipW(f.a, f.b);
          if (fw < 1) continue;  // thousands of slivers cost more than they show
          flameFrame(svg, names[F[f.s]], fx, top + k * ROW, fw, ROW, hitOf[f.s], { 'data-depth': k, 'data-start': f.a, 'data-end': f.b, 'data-i': drawn.length });
          drawn.push(f);
        }
      };
      const chain = [];
      for (; i < n && R.lane[i] === lane; ++i) {
        const a = R.start[i], b = R.end[i];
        if (visible(a, b)) {  // the run's mark in the lane's strip
          const [rx, rw] = clipW(a, b), s = R.stack[i];
          el('rect', { x: rx, y: y + LABEL, width: Math.max(0.5, rw), height: STRIP, class: 'run', 'data-start': a, 'data-end': b, 'data-r': i,
            fill: s >= 0 ? flameColor(names[F[s]]) : '#c8c8c8' }, svg);
        }
        chain.length = 0;
        for (let s = R.stack[i]; s >= 0; s = P[s]) chain.push(s);
        chain.reverse();
        let k = 0;  // frames shared with the open ones, touching in time
        while (k < open.length && k < chain.length && open[k].s === chain[k] && a <= open[k].b) ++k;
        flush(k);
        for (let j = 0; j < k; ++j) { const f = open[j]; f.b = Math.max(f.b, b); f.w += R.weight[i]; ++f.k; }
        for (let j = k; j < chain.length; ++j) open.push({ s: chain[j], a, b, w: R.weight[i], k: 1 });
      }
      flush(0);
      y = top + laneDepth[lane] * ROW + 6;
    }
    let note = `${n.toLocaleString('en')} runs of ${to.samples.toLocaleString('en')} samples, x = time from the first sample`;
    if (to.merged) note += `; ${to.merged.toLocaleString('en')} runs merged into neighbours to stay within ${to.max_runs.toLocaleString('en')}`;
    if (to.untimed) note += `; ${to.untimed.toLocaleString('en')} samples without a time left out`;
    html('p', { class: 'flame-note' }, box, note + (zoom ? ' (zoomed: reset zoom to see all)' : ''));
    match.textContent = query ? `matched: ${weight > 0 ? (100 * matched / weight).toFixed(2) : '0.00'} % of the runs' weight` : '';
  }
  // Sandwich: per function (frame name) its self weight and its total (the stacks through
  // it, a recursive function counted once per stack), from the merged tree.
  function flameFunctions(root) {
    const rows = new Map(), onPath = new Map();
    (function walk(n) {
      for (const c of n.children || []) {
        let r = rows.get(c.name);
        if (!r) rows.set(c.name, r = { name: c.name, self: 0, total: 0 });
        r.self += c.self || 0;
        const k = onPath.get(c.name) || 0;
        if (!k) r.total += c.value;
        onPath.set(c.name, k + 1);
        walk(c);
        onPath.set(c.name, k);
      }
    })(root);
    return [...rows.values()];
  }
  // The callers (inverted: the function, then who called it, up to the roots) and callees
  // of `name`, merged over its outermost occurrences in the tree.
  function flameSandwichTrees(root, name) {
    const node = (n) => ({ name: n, value: 0, self: 0, kids: new Map() });
    const child = (p, n) => { let c = p.kids.get(n); if (!c) p.kids.set(n, c = node(n)); return c; };
    const callers = node(name), callees = node(name);
    function merge(dst, src) {
      dst.value += src.value;
      dst.self += src.self || 0;
      for (const c of src.children || []) merge(child(dst, c.name), c);
    }
    const path = [];
    (function walk(n) {
      for (const c of n.children || []) {
        if (c.name === name) {
          merge(callees, c);
          callers.value += c.value;
          let at = callers;
          for (let i = path.length - 1; i >= 0; --i) { at = child(at, path[i]); at.value += c.value; }
          continue;  // deeper occurrences are inside this one
        }
        path.push(c.name);
        walk(c);
        path.pop();
      }
    })(root);
    const done = (t) => ({ name: t.name, value: t.value, self: t.self, children: [...t.kids.values()].map(done) });
    return { callers: done(callers), callees: done(callees) };
  }
  function drawFlameSandwich(box, graph) {
    const fmt = flameValue(graph.unit), total = graph.total, query = flameState.search.toLowerCase();
    const all = graph.root ? flameFunctions(graph.root) : [];
    const key = flameState.sort;
    const rows = all.filter((r) => !query || r.name.toLowerCase().includes(query))
      .sort((a, b) => key === 'name' ? a.name.localeCompare(b.name) : b[key] - a[key] || a.name.localeCompare(b.name));
    if (!all.some((r) => r.name === flameState.focus)) flameState.focus = rows.length ? rows[0].name : null;
    const grid = html('div', { class: 'flame-sandwich' }, box);
    const left = html('div', { class: 'flame-table' }, grid);
    const MAX = 500;
    const share = (v) => total > 0 ? ` <small>${(100 * v / total).toFixed(1)} %</small>` : '';
    let t = `<table class="data" id="flame-functions"><thead><tr><th data-sort="name">function</th><th class="num" data-sort="self">self</th><th class="num" data-sort="total">total</th></tr></thead><tbody>`;
    for (const r of rows.slice(0, MAX))
      t += `<tr data-name="${esc(r.name)}"${r.name === flameState.focus ? ' class="selected"' : ''}><td title="${esc(r.name)}">${esc(r.name)}</td>` +
        `<td class="num" data-value="${r.self}">${fmt(r.self)}${share(r.self)}</td><td class="num" data-value="${r.total}">${fmt(r.total)}${share(r.total)}</td></tr>`;
    left.innerHTML = t + '</tbody></table>' + (rows.length > MAX ? `<p class="flame-note">${rows.length - MAX} more: search to find them</p>` : '');
    for (const th of left.querySelectorAll('th')) {
      if (th.dataset.sort === key) th.classList.add('sorted');
      th.addEventListener('click', () => { flameState.sort = th.dataset.sort; drawFlame(); });
    }
    for (const tr of left.querySelectorAll('tbody tr'))
      tr.addEventListener('click', () => { flameState.focus = tr.dataset.name; drawFlame(); });
    document.getElementById('flame-match').textContent = query ? `${rows.length} of ${all.length} functions match` : `${all.length} functions`;
    const right = html('div', { class: 'flame-pair' }, grid);
    if (!flameState.focus) { html('div', { class: 'empty' }, right, 'no function in this view'); return; }
    const trees = flameSandwichTrees(graph.root, flameState.focus);
    const width = Math.max(300, right.clientWidth || 600);
    const pick = (n) => { flameState.focus = n.name; drawFlame(); };
    html('h3', {}, right, 'Callers of ').appendChild(html('code', {}, null, flameState.focus));
    const up = html('div', { class: 'chart', 'data-chart': 'flame-callers' }, right);
    const upSvg = el('svg', { width, height: flameTreeDepth(trees.callers) * 18 + 4, class: 'flame' }, up);
    flameIcicle(upSvg, trees.callers, { width, query, total, fmt, heavy: true, up: true, click: pick });
    html('h3', {}, right, 'Callees');
    const down = html('div', { class: 'chart', 'data-chart': 'flame-callees' }, right);
    const downSvg = el('svg', { width, height: flameTreeDepth(trees.callees) * 18 + 4, class: 'flame' }, down);
    flameIcicle(downSvg, trees.callees, { width, query, total, fmt, heavy: true, click: pick });
  }
  // The initial selection: the window whose timeline has the most concentrated CP; the
  // first and last windows (start-up, shutdown) only when no other has a timeline.
  function initialSelection() {
    const tl = state.data.timelines;
    if (!tl.length) return Math.max(0, points().length - 1);
    const inner = tl.length > 2 ? tl.slice(1, -1) : tl;
    let best = inner[0];
    for (const t of inner) if (t.score > best.score) best = t;
    return pointOfWindow(best.index);
  }
  function setData(data) {
    const keepWindow = state.data && state.sel >= 0 && points()[state.sel] ? points()[state.sel].w0 : null;
    const keepTimeline = state.data && state.data.timelines[state.timeline] ? state.data.timelines[state.timeline].index : null;
    state.data = data;
    if (!points().length) { state.sel = -1; state.timeline = -1; drawAll(); return; }
    state.sel = keepWindow === null ? initialSelection() : pointOfWindow(keepWindow);
    const same = keepTimeline === null ? -1 : data.timelines.findIndex((t) => t.index === keepTimeline);
    if (same >= 0 && keepWindow !== null) state.timeline = same;
    else { state.timeline = timelineForPoint(state.sel); state.zoom = null; }
    drawAll();
    document.body.dataset.windows = String(data.windows);
  }

  function wireControls() {
    document.getElementById('timeline-select').addEventListener('change', (e) => {
      const i = +e.target.value;
      state.timeline = i;
      state.zoom = null;
      state.sel = pointOfWindow(state.data.timelines[i].index);
      drawTimeCharts();
      drawSelection();
    });
    document.getElementById('zoom-in').addEventListener('click', () => zoomTimeline(0.5));
    document.getElementById('zoom-out').addEventListener('click', () => zoomTimeline(2));
    document.getElementById('zoom-reset').addEventListener('click', () => { state.zoom = null; redrawTimeline(); });
    document.getElementById('heatmap-scope').addEventListener('change', (e) => { state.heatmapScope = e.target.value; drawHeatmap(document.getElementById('chart-heatmap')); });
    document.getElementById('heatmap-measure').addEventListener('change', (e) => { state.heatmapMeasure = e.target.value; drawHeatmap(document.getElementById('chart-heatmap')); });
    document.getElementById('flame-mode').addEventListener('change', (e) => { flameState.mode = e.target.value; flameState.zoom = []; flameState.timeZoom = []; drawFlame(); });
    document.getElementById('flame-search').addEventListener('input', (e) => { flameState.search = e.target.value; drawFlame(); });
    document.getElementById('flame-view').addEventListener('change', (e) => { flameState.view = e.target.value; flameState.zoom = []; flameState.timeZoom = []; drawFlame(); });
    document.getElementById('flame-reset').addEventListener('click', () => { flameState.zoom = []; flameState.timeZoom = []; drawFlame(); });
    let resize = 0;
    window.addEventListener('resize', () => {
      clearTimeout(resize);
      resize = setTimeout(() => { if (state.data) drawAll(); }, 150);
    });
  }

  // Live mode: poll the JSON API; redraw only when it changed.
  function poll() {
    const status = document.getElementById('status');
    let last = '';
    const tick = () => {
      fetch('api/report', { cache: 'no-store' })
        .then((r) => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
        .then((text) => {
          status.className = '';
          status.textContent = `live: updated ${new Date().toLocaleTimeString('en-GB')}`;
          if (text !== last) {
            last = text;
            const data = JSON.parse(text);
            if (data) setData(data);
          }
        })
        .catch((err) => { status.className = 'error'; status.textContent = `live: no data (${err.message}); retrying`; })
        .finally(() => setTimeout(tick, 1000));
    };
    tick();
  }

  function start() {
    wireControls();
    const embedded = JSON.parse(document.getElementById('snailtrail-data').textContent);
    if (window.SNAILTRAIL_MODE === 'live') {
      document.getElementById('status').textContent = 'live: connecting…';
      poll();
    } else if (embedded) {
      setData(embedded);
    }
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
