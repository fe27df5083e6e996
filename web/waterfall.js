// The "Waterfall" page (web/waterfall.html, docs/REPORT.md): plain JS, no libraries.
// Data: report/waterfall.cpp's JSON; rows are
// [parent, depth, service, operation, start, duration, self, critical, kind, span id]
// (times in ns from the trace's first span), path segments [row, start, end].
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('snailtrail-data').textContent);
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const name = (i) => data.names[i];

  // Durations with their unit, 3 significant digits.
  function dur(ns) {
    const a = Math.abs(ns);
    const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs']];
    for (const [f, u] of units) if (a >= f) return `${+(ns / f).toPrecision(3)} ${u}`;
    return `${ns} ns`;
  }
  // A colour per service, stable across traces.
  const palette = ['#4e79a7', '#f28e2b', '#59a14f', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7',
    '#9c755f', '#bab0ac', '#86bcb6'];
  function color(service) {
    let h = 0;
    for (const c of name(service)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return palette[h % palette.length];
  }

  $('source').textContent = data.source;
  $('facts').textContent = `${data.traces_total} traces, ${data.spans_total} spans` +
    (data.skipped ? `; ${data.skipped} traces skipped (unreadable)` : '');
  document.body.dataset.traces = String(data.traces.length);

  // The picker: the embedded traces, slowest first (the order of the data).
  const table = el('table');
  const head = el('tr');
  for (const [t, c] of [['#', 'num'], ['latency', 'num'], ['root span', ''], ['spans', 'num'], ['', '']])
    head.appendChild(el('th', c, t));
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  data.traces.forEach((t, i) => {
    const tr = el('tr', 'trace');
    tr.dataset.index = String(i);
    tr.dataset.duration = String(t.duration_ns);
    tr.appendChild(el('td', 'num', String(t.rank)));
    tr.appendChild(el('td', 'num', dur(t.duration_ns)));
    const root = el('td', 'root', `${name(t.root[0])}: ${name(t.root[1])}`);
    root.title = `${root.textContent}\ntrace ${t.id}`;
    tr.appendChild(root);
    tr.appendChild(el('td', 'num', String(t.spans)));
    tr.appendChild(el('td', 'pick', t.pick));
    tr.addEventListener('click', () => select(i));
    body.appendChild(tr);
  });
  $('picker').appendChild(table);
  $('left-out').textContent = data.left_out > 0
    ? `${data.traces_shown} of ${data.traces_total} traces embedded: the slowest and the p50, p90, p99 ones; ` +
      `${data.left_out} left out (report --traces N keeps more)`
    : `all ${data.traces_total} traces embedded`;

  let current = -1;
  let selectedRow = -1;

  function showSpan(t, r) {
    selectedRow = r;
    for (const e of document.querySelectorAll('.wf-row.selected')) e.classList.remove('selected');
    const rowEl = document.querySelector(`.wf-row[data-row="${r}"]`);
    if (rowEl) rowEl.classList.add('selected');
    const x = t.rows[r];
    const detail = $('detail');
    detail.textContent = '';
    const tbl = el('table');
    const fields = [['service', name(x[2])], ['operation', name(x[3])], ['span id', x[9]],
      ['kind', x[8] || '—'], ['start offset', dur(x[4])], ['duration', dur(x[5])],
      ['self time', dur(x[6])], ['critical time', `${dur(x[7])} (${t.duration_ns > 0 ? (100 * x[7] / t.duration_ns).toFixed(1) : '0.0'} % of the trace)`],
      ['parent', x[0] < 0 ? '— (root)' : `${name(t.rows[x[0]][2])}: ${name(t.rows[x[0]][3])}`]];
    for (const [k, v] of fields) {
      const tr = el('tr');
      tr.dataset.field = k;
      tr.appendChild(el('td', '', k));
      tr.appendChild(el('td', '', v));
      tbl.appendChild(tr);
    }
    detail.appendChild(tbl);
    document.body.dataset.span = String(r);
  }

  function select(i) {
    current = i;
    const t = data.traces[i];
    for (const tr of body.querySelectorAll('tr.trace')) tr.classList.toggle('selected', tr.dataset.index === String(i));
    $('trace-label').textContent = `trace ${t.id}: ${dur(t.duration_ns)}, ${t.spans} spans, ` +
      `${t.path.length} critical sections` + (t.pick ? ` (${t.pick})` : '') +
      (t.roots > 1 ? `; ${t.roots} roots, one path each` : '') +
      (t.clipped || t.dropped ? `; ${t.clipped} children clipped to their parent, ${t.dropped} outside it` : '');
    // The axis spans the trace's first start to its last end.
    let end = 1;
    for (const x of t.rows) end = Math.max(end, x[4] + x[5]);
    const pct = (ns) => `${(100 * ns / end).toFixed(4)}%`;
    const wf = $('waterfall');
    wf.textContent = '';
    const frag = document.createDocumentFragment();
    const axis = el('div', 'wf-row axis');
    axis.appendChild(el('div', 'wf-label', 'service: operation'));
    const ticks = axis.appendChild(el('div', 'wf-track'));
    for (let k = 0; k <= 4; ++k) {
      const tick = el('div', 'tick', dur(end * k / 4));
      tick.style.left = `${25 * k}%`;
      ticks.appendChild(tick);
    }
    frag.appendChild(axis);
    const tracks = [];
    t.rows.forEach((x, r) => {
      const row = el('div', 'wf-row span-row');
      row.dataset.row = String(r);
      const label = el('div', 'wf-label');
      label.style.paddingLeft = `${6 + 12 * Math.min(x[1], 20)}px`;
      label.appendChild(el('span', 'svc', name(x[2])));
      label.appendChild(document.createTextNode(' '));
      label.appendChild(el('span', 'op', name(x[3])));
      label.title = `${name(x[2])}: ${name(x[3])}`;
      row.appendChild(label);
      const track = el('div', 'wf-track');
      const bar = el('div', 'bar');
      bar.style.left = pct(x[4]);
      bar.style.width = pct(x[5]);
      bar.style.background = color(x[2]);
      track.appendChild(bar);
      const d = el('div', 'dur', dur(x[5]));
      // The duration beside the bar: right of it, or left when the bar ends near the edge.
      if (x[4] + x[5] < 0.8 * end) d.style.left = `calc(${pct(x[4] + x[5])} + 4px)`;
      else d.style.right = `calc(${pct(end - x[4])} + 4px)`;
      track.appendChild(d);
      row.appendChild(track);
      row.addEventListener('click', () => showSpan(t, r));
      tracks.push(track);
      frag.appendChild(row);
    });
    // The critical sections over their spans' bars, numbered in path order.
    const list = $('path-list');
    list.textContent = '';
    t.path.forEach(([r, a, b], k) => {
      const c = el('div', 'crit');
      c.dataset.seq = String(k + 1);
      c.dataset.row = String(r);
      c.style.left = pct(a);
      c.style.width = pct(b - a);
      c.title = `critical section ${k + 1}: ${name(t.rows[r][2])}: ${name(t.rows[r][3])}, ${dur(a)} to ${dur(b)} (${dur(b - a)})`;
      c.appendChild(el('span', '', String(k + 1)));
      tracks[r].appendChild(c);
      const li = el('li', '', `${name(t.rows[r][2])}: ${name(t.rows[r][3])}  ${dur(a)} – ${dur(b)} (${dur(b - a)})`);
      li.dataset.row = String(r);
      li.addEventListener('click', () => showSpan(t, r));
      list.appendChild(li);
    });
    wf.appendChild(frag);
    document.body.dataset.trace = String(i);
    showSpan(t, t.path.length ? t.path[0][0] : 0);
  }

  if (data.traces.length) select(0);
  document.body.dataset.ready = '1';
})();
