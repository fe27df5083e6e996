// The "Tasks per stage" page (web/stages.html, docs/REPORT.md): plain JS, no libraries.
// Data: report/stages.cpp's JSON, a stage per entry with its task-duration distribution
// (min, median, p95, max; ns), sums of GC, shuffle and spill, its CP and a histogram.
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
      if (a >= f) return `${+(ns / f).toPrecision(3)} ${u}`;
    return `${ns} ns`;
  }
  function bytes(b) {
    for (const [f, u] of [[2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']])
      if (b >= f) return `${+(b / f).toPrecision(3)} ${u}`;
    return `${b} B`;
  }
  const pct = (x) => `${(100 * x).toFixed(2)} %`;
  const stages = data.stages;
  const byId = new Map(stages.map((s) => [s.id, s]));
  const maxCp = Math.max(1e-12, ...stages.map((s) => s.cp));
  // White to the critical red by the stage's share of the largest CP.
  function cpColor(cp) {
    const t = Math.max(0, Math.min(1, cp / maxCp));
    const mix = (a, b) => Math.round(a + (b - a) * t);
    return `rgb(${mix(255, 178)},${mix(255, 24)},${mix(255, 43)})`;
  }
  const skewText = (s) => (s.skew > 0 ? `${s.skew.toFixed(1)}×` : s.max_ns > 0 ? '∞' : '–');
  function skewBadge(s) {
    const b = el('span', s.skewed ? 'skew flag' : 'skew', skewText(s));
    b.title = `max / median task duration: ${dur(s.duration_ns[3])} / ${dur(s.duration_ns[1])}` +
      (s.skewed ? ` (skewed: ≥ ${data.skew_flag}×)` : '');
    return b;
  }

  $('source').textContent = data.source;
  const failed = stages.reduce((n, s) => n + s.failed_tasks, 0);
  $('facts').textContent = `${data.stages_total} stages, ${data.tasks_total} tasks` +
    (failed ? ` (and ${failed} failed or killed, left out of the numbers)` : '') + '; CP over ' +
    `${data.windows_with_paths} of ${data.windows} window(s) of ${data.window}`;
  const issues = Object.entries(data.import_diagnostics || {}).filter(([, n]) => n > 0);
  if (issues.length) {
    const d = $('facts').appendChild(el('div', 'issues'));
    d.textContent = `import diagnostics (docs/IMPORTERS.md): ${issues.map(([k, n]) => `${k} ${n}`).join(', ')}`;
  }

  // --- DAG: a column per depth (longest chain of parents), stages by id within it. ---
  const depth = new Map();
  function depthOf(s, seen) {
    if (depth.has(s.id)) return depth.get(s.id);
    if (seen.has(s.id)) return 0;  // a cycle cannot come from Spark; do not loop on one
    seen.add(s.id);
    let d = 0;
    for (const p of s.parents) if (byId.has(p)) d = Math.max(d, depthOf(byId.get(p), seen) + 1);
    depth.set(s.id, d);
    return d;
  }
  stages.forEach((s) => depthOf(s, new Set()));
  const columns = [];
  for (const s of stages) (columns[depth.get(s.id)] ||= []).push(s);
  const W = 150, H = 46, GX = 60, GY = 14, PAD = 10;
  const pos = new Map();
  columns.forEach((col, c) => col.forEach((s, r) => pos.set(s.id, [PAD + c * (W + GX), PAD + r * (H + GY)])));
  const rows = Math.max(1, ...columns.map((c) => c.length));
  const dag = svg('svg', { width: PAD * 2 + columns.length * (W + GX) - GX, height: PAD * 2 + rows * (H + GY) - GY });
  dag.appendChild(svg('defs')).innerHTML =
    '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker>';
  let edges = 0;
  for (const s of stages)
    for (const p of s.parents) {
      if (!pos.has(p)) continue;
      const [x1, y1] = pos.get(p), [x2, y2] = pos.get(s.id);
      const a = [x1 + W, y1 + H / 2], b = [x2, y2 + H / 2], mx = (a[0] + b[0]) / 2;
      const path = svg('path', { class: 'dag-edge', d: `M${a[0]},${a[1]}C${mx},${a[1]} ${mx},${b[1]} ${b[0]},${b[1]}`, 'marker-end': 'url(#arrow)' });
      path.dataset.from = String(p);
      path.dataset.to = String(s.id);
      dag.appendChild(path);
      ++edges;
    }
  const nodes = new Map();
  for (const s of stages) {
    const [x, y] = pos.get(s.id);
    const g = svg('g', { class: 'stage-node', transform: `translate(${x},${y})` });
    g.dataset.stage = String(s.id);
    g.dataset.cp = String(s.cp);
    g.appendChild(svg('rect', { width: W, height: H, rx: 5, fill: cpColor(s.cp) }));
    const dark = s.cp / maxCp > 0.55;
    const t1 = g.appendChild(svg('text', { x: 6, y: 15, fill: dark ? '#fff' : '#1d2327', 'font-weight': 600 }));
    t1.textContent = `stage ${s.id}  CP ${pct(s.cp)}`;
    const t2 = g.appendChild(svg('text', { x: 6, y: 29, fill: dark ? '#fff' : '#1d2327' }));
    t2.textContent = `${s.tasks} tasks, median ${dur(s.duration_ns[1])}`;
    const t3 = g.appendChild(svg('text', { x: 6, y: 41, fill: dark ? '#fff' : '#67707a' }));
    t3.textContent = (s.name || '').slice(0, 24);
    if (s.skewed) {  // the skew signal at a glance: a red badge on the node
      const badge = svg('g', { class: 'skew-badge', transform: `translate(${W - 34},-7)` });
      badge.appendChild(svg('rect', { width: 38, height: 15, rx: 7, fill: '#b2182b', stroke: '#fff' }));
      const bt = badge.appendChild(svg('text', { x: 19, y: 11, fill: '#fff', 'text-anchor': 'middle', 'font-weight': 700 }));
      bt.textContent = skewText(s);
      g.appendChild(badge);
    }
    const tip = g.appendChild(svg('title'));
    tip.textContent = `stage ${s.id} ${s.name}\nCP ${pct(s.cp)}\ntasks ${s.tasks}\nmax/median ${skewText(s)}`;
    g.addEventListener('click', () => select(s.id));
    dag.appendChild(g);
    nodes.set(s.id, g);
  }
  $('dag').appendChild(dag);
  $('dag').dataset.nodes = String(stages.length);
  $('dag').dataset.edges = String(edges);

  // --- The table, sortable; CP (most critical first) to begin with. ---
  const cols = [
    ['stage', 'num', (s) => s.id, (s) => String(s.id)],
    ['name', 'name', (s) => s.name, (s) => s.name],
    ['CP', 'num', (s) => s.cp, null],
    ['tasks', 'num', (s) => s.tasks, (s) => String(s.tasks)],
    ['min', 'num', (s) => s.duration_ns[0], (s) => dur(s.duration_ns[0])],
    ['median', 'num', (s) => s.duration_ns[1], (s) => dur(s.duration_ns[1])],
    ['p95', 'num', (s) => s.duration_ns[2], (s) => dur(s.duration_ns[2])],
    ['max', 'num', (s) => s.duration_ns[3], (s) => dur(s.duration_ns[3])],
    ['max/med', 'num', (s) => (s.skew > 0 ? s.skew : s.max_ns > 0 ? Infinity : 0), null],
    ['GC', 'num', (s) => s.gc_ns, (s) => dur(s.gc_ns)],
    ['shuffle read', 'num', (s) => s.shuffle_read_bytes, (s) => bytes(s.shuffle_read_bytes)],
    ['shuffle write', 'num', (s) => s.shuffle_write_bytes, (s) => bytes(s.shuffle_write_bytes)],
    ['spill (mem / disk)', 'num', (s) => s.memory_spill_bytes + s.disk_spill_bytes,
      (s) => `${bytes(s.memory_spill_bytes)} / ${bytes(s.disk_spill_bytes)}`],
  ];
  let sortCol = 2, sortDesc = true, selected = null;
  const table = el('table');
  table.id = 'stages';
  const head = el('tr');
  cols.forEach(([t, c], i) => {
    const th = head.appendChild(el('th', `${c === 'num' ? 'num' : ''} sortable`, t));
    th.dataset.col = t;
    th.addEventListener('click', () => {
      sortDesc = sortCol === i ? !sortDesc : i !== 0 && i !== 1;
      sortCol = i;
      drawTable();
    });
  });
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  function drawTable() {
    const key = cols[sortCol][2];
    const order = stages.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      const c = x < y ? -1 : x > y ? 1 : a.id - b.id;
      return sortDesc && x !== y ? -c : c;
    });
    body.textContent = '';
    for (const s of order) {
      const tr = body.appendChild(el('tr'));
      tr.dataset.stage = String(s.id);
      tr.dataset.cp = String(s.cp);
      if (s.id === selected) tr.classList.add('selected');
      cols.forEach(([t, c, , text], i) => {
        const td = tr.appendChild(el('td', c));
        if (i === 2) {
          const bar = td.appendChild(el('span', 'cpbar'));
          bar.style.width = `${Math.round(40 * s.cp / maxCp)}px`;
          td.appendChild(document.createTextNode(pct(s.cp)));
        } else if (i === 8) {
          td.appendChild(skewBadge(s));
        } else {
          td.textContent = text(s);
        }
        if (t === 'name') td.title = s.name;
      });
      tr.addEventListener('click', () => select(s.id));
    }
    head.querySelectorAll('th').forEach((th, i) => {
      th.dataset.sorted = i === sortCol ? (sortDesc ? 'desc' : 'asc') : '';
      th.textContent = cols[i][0] + (i === sortCol ? (sortDesc ? ' ▼' : ' ▲') : '');
    });
  }
  $('table-box').appendChild(table);
  drawTable();

  // --- One stage's tasks: the numbers and the histogram of their durations. ---
  function select(id) {
    selected = id;
    const s = byId.get(id);
    nodes.forEach((g, k) => g.classList.toggle('selected', k === id));
    body.querySelectorAll('tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.stage === String(id)));
    $('detail-title').textContent = `Tasks of stage ${s.id}`;
    const d = $('detail');
    d.textContent = '';
    const t = d.appendChild(el('table'));
    const gcShare = s.total_ns > 0 ? ` (${pct(s.gc_ns / s.total_ns)} of the tasks' time)` : '';
    for (const [k, v] of [
      ['stage', `${s.id} ${s.name}${s.attempts > 1 ? ` (${s.attempts} attempts)` : ''}`],
      ['parents', s.parents.length ? s.parents.join(', ') : 'none'],
      ['critical participation', pct(s.cp)],
      ['tasks', String(s.tasks) + (s.failed_tasks ? ` (and ${s.failed_tasks} failed or killed, left out)` : '')],
      ['duration min / median / p95 / max', s.duration_ns.map(dur).join(' / ')],
      ['max / median', skewText(s) + (s.skewed ? ' — skewed' : '')],
      ['GC time', dur(s.gc_ns) + gcShare],
      ['shuffle read / write', `${bytes(s.shuffle_read_bytes)} / ${bytes(s.shuffle_write_bytes)}`],
      ['spill memory / disk', `${bytes(s.memory_spill_bytes)} / ${bytes(s.disk_spill_bytes)}`],
    ]) {
      const tr = t.appendChild(el('tr'));
      tr.appendChild(el('td', '', k));
      tr.appendChild(el('td', '', v));
    }
    drawHistogram(s);
  }

  function drawHistogram(s) {
    const box = $('hist');
    box.textContent = '';
    box.appendChild(el('h3', '', 'Task durations')).appendChild(el('small', '', ` ${s.histogram.length} equal bins from min to max; red: the bin of the max`));
    const w = 440, h = 180, left = 34, bottom = 30, top = 8;
    const n = s.histogram.length, peak = Math.max(1, ...s.histogram);
    const g = svg('svg', { width: w, height: h });
    g.dataset.stage = String(s.id);
    let total = 0;
    const bw = (w - left - 6) / n;
    s.histogram.forEach((c, i) => {
      total += c;
      const bh = (h - bottom - top) * c / peak;
      const r = svg('rect', { class: i === n - 1 && c > 0 ? 'bin top' : 'bin', x: left + i * bw + 1, y: h - bottom - bh, width: Math.max(1, bw - 2), height: bh });
      r.dataset.count = String(c);
      const lo = s.duration_ns[0] + (s.duration_ns[3] - s.duration_ns[0]) * i / n;
      const tip = r.appendChild(svg('title'));
      tip.textContent = `${c} task(s) from ${dur(lo)}`;
      g.appendChild(r);
    });
    const label = (x, y, text, anchor) => {
      const e = g.appendChild(svg('text', { x, y, 'text-anchor': anchor || 'start' }));
      e.textContent = text;
    };
    label(left, h - bottom + 14, dur(s.duration_ns[0]));
    label(w - 6, h - bottom + 14, dur(s.duration_ns[3]), 'end');
    label((left + w) / 2, h - 4, 'task duration (executor run time)', 'middle');
    label(left - 4, top + 8, String(peak), 'end');
    label(left - 4, h - bottom, '0', 'end');
    g.dataset.tasks = String(total);
    box.appendChild(g);
  }

  // Open on the most critical stage.
  if (stages.length) select(stages.reduce((a, b) => (b.cp > a.cp ? b : a)).id);
  document.body.dataset.view = 'stages';
  document.body.dataset.ready = '1';
})();
