// The "Waterfall" page (web/waterfall.html, docs/REPORT.md): plain JS, no libraries.
// Data: report/waterfall.cpp's JSON; rows are
// [parent, depth, service, operation, start, duration, self, critical, kind, span id]
// (times in ns from the trace's first span), path segments [row, start, end].
// Live (data.live, `serve --otlp`'s GET /traces): nothing embedded; the picker polls
// api/slow-traces and the chosen trace's data (the same shape) comes from api/trace?id=.
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
  let names = data.names;  // of the trace drawn (live: of the one fetched)
  const name = (i) => names[i];

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
  // What the importer repaired or skipped: the data is only as good as the trace.
  const issues = Object.entries(data.import_diagnostics || {}).filter(([, n]) => n > 0);
  if (issues.length) {
    const d = $('facts').appendChild(el('div', 'issues'));
    d.textContent = `import diagnostics (docs/IMPORTERS.md): ${issues.map(([k, n]) => `${k} ${n}`).join(', ')}`;
  }
  document.body.dataset.traces = String(data.traces.length);

  // The picker: slowest first (the order of the data, or of api/slow-traces). Items:
  // {key, rank, duration_ns, root, title, spans, pick}; a click selects the key.
  const table = el('table');
  const head = el('tr');
  for (const [t, c] of [['#', 'num'], ['latency', 'num'], ['root span', ''], ['spans', 'num'], ['', '']])
    head.appendChild(el('th', c, t));
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  let onPick = () => {};
  let pickedKey = null;
  function fillPicker(items) {
    body.textContent = '';
    for (const it of items) {
      const tr = el('tr', 'trace');
      tr.dataset.index = it.key;
      tr.dataset.duration = String(it.duration_ns);
      if (it.key === pickedKey) tr.classList.add('selected');
      tr.appendChild(el('td', 'num', String(it.rank)));
      tr.appendChild(el('td', 'num', dur(it.duration_ns)));
      const root = el('td', 'root', it.root);
      root.title = it.title;
      tr.appendChild(root);
      tr.appendChild(el('td', 'num', String(it.spans)));
      tr.appendChild(el('td', it.cls || 'pick', it.pick));
      tr.addEventListener('click', () => onPick(it.key));
      body.appendChild(tr);
    }
  }
  $('picker').appendChild(table);
  if (!data.live) {
    fillPicker(data.traces.map((t, i) => ({
      key: String(i), rank: t.rank, duration_ns: t.duration_ns, spans: t.spans, pick: t.pick,
      root: `${name(t.root[0])}: ${name(t.root[1])}`,
      title: `${name(t.root[0])}: ${name(t.root[1])}\ntrace ${t.id}`,
    })));
    onPick = (key) => select(Number(key));
    $('left-out').textContent = data.left_out > 0
      ? `${data.traces_shown} of ${data.traces_total} traces embedded: the slowest and the p50, p90, p99 ones; ` +
        `${data.left_out} left out (report --traces N keeps more)`
      : `all ${data.traces_total} traces embedded`;
  }

  let selectedRow = -1;
  let scrollToRow = () => {};
  const kAllRows = 1500;    // traces with more spans draw only the rows in view
  const kRowPx = 21;        // .wf-row's height with its border
  const kPathItems = 500;   // critical sections listed below the waterfall

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
    draw(data.traces[i], String(i));
  }

  // Draws trace `t` (its names in `names`), picked as `key` (static: its index; live: its id).
  function draw(t, key) {
    pickedKey = key;
    for (const tr of body.querySelectorAll('tr.trace')) tr.classList.toggle('selected', tr.dataset.index === key);
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
    scrollToRow = () => {};
    const axis = el('div', 'wf-row axis');
    axis.appendChild(el('div', 'wf-label', 'service: operation'));
    const ticks = axis.appendChild(el('div', 'wf-track'));
    for (let k = 0; k <= 4; ++k) {
      const tick = el('div', 'tick', dur(end * k / 4));
      tick.style.left = `${25 * k}%`;
      ticks.appendChild(tick);
    }
    frag.appendChild(axis);
    // The critical sections per row, numbered in path order.
    const sections = new Map();
    t.path.forEach(([r, a, b], k) => {
      if (!sections.has(r)) sections.set(r, []);
      sections.get(r).push([k + 1, a, b]);
    });
    function buildRow(r) {
      const x = t.rows[r];
      const row = el('div', 'wf-row span-row');
      row.dataset.row = String(r);
      if (r === selectedRow) row.classList.add('selected');
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
      for (const [k, a, b] of sections.get(r) || []) {
        const c = el('div', 'crit');
        c.dataset.seq = String(k);
        c.dataset.row = String(r);
        c.style.left = pct(a);
        c.style.width = pct(b - a);
        c.title = `critical section ${k}: ${name(x[2])}: ${name(x[3])}, ${dur(a)} to ${dur(b)} (${dur(b - a)})`;
        c.appendChild(el('span', '', String(k)));
        track.appendChild(c);
      }
      row.appendChild(track);
      row.addEventListener('click', () => showSpan(t, r));
      return row;
    }
    wf.dataset.rows = String(t.rows.length);
    if (t.rows.length <= kAllRows) {
      for (let r = 0; r < t.rows.length; ++r) frag.appendChild(buildRow(r));
      wf.appendChild(frag);
    } else {
      // A big trace: only the rows in view are in the page (a DOM row per span would take
      // seconds to lay out), redrawn as it scrolls.
      wf.appendChild(frag);
      const scroller = wf.appendChild(el('div', 'wf-scroll'));
      const inner = scroller.appendChild(el('div', 'wf-inner'));
      inner.style.height = `${t.rows.length * kRowPx}px`;
      let drawn = '';
      const draw = () => {
        const first = Math.max(0, Math.floor(scroller.scrollTop / kRowPx) - 20);
        const last = Math.min(t.rows.length, first + Math.ceil(scroller.clientHeight / kRowPx) + 40);
        if (drawn === `${first}-${last}`) return;
        drawn = `${first}-${last}`;
        inner.textContent = '';
        const f = document.createDocumentFragment();
        for (let r = first; r < last; ++r) {
          const row = buildRow(r);
          row.style.top = `${r * kRowPx}px`;
          f.appendChild(row);
        }
        inner.appendChild(f);
      };
      let pending = false;
      scroller.addEventListener('scroll', () => {
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => { pending = false; draw(); });
      });
      scrollToRow = (r) => {
        scroller.scrollTop = Math.max(0, r * kRowPx - scroller.clientHeight / 3);
        draw();
      };
      draw();
    }
    const list = $('path-list');
    list.textContent = '';
    const shown = Math.min(t.path.length, kPathItems);
    for (let k = 0; k < shown; ++k) {
      const [r, a, b] = t.path[k];
      const li = el('li', '', `${name(t.rows[r][2])}: ${name(t.rows[r][3])}  ${dur(a)} – ${dur(b)} (${dur(b - a)})`);
      li.dataset.row = String(r);
      li.addEventListener('click', () => { scrollToRow(r); showSpan(t, r); });
      list.appendChild(li);
    }
    if (shown < t.path.length) list.appendChild(el('li', 'more', `… ${t.path.length - shown} more sections`));
    document.body.dataset.trace = key;
    showSpan(t, t.path.length ? t.path[0][0] : 0);
  }

  if (data.live) {
    live();
  } else {
    if (data.traces.length) select(0);
    document.body.dataset.ready = '1';
  }

  // Live: the list every 1.5 s; the user's pick stays drawn (and marked) while it is kept,
  // and stays drawn, marked as gone, when it leaves the list. Nothing picked: the slowest.
  function live() {
    let wanted = null;  // the trace id last asked for
    async function show(id) {
      wanted = id;
      pickedKey = id;
      for (const tr of body.querySelectorAll('tr.trace')) tr.classList.toggle('selected', tr.dataset.index === id);
      try {
        const r = await fetch(`api/trace?id=${encodeURIComponent(id)}`, { cache: 'no-store' });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        const doc = await r.json();
        if (wanted !== id || !doc.traces.length) return;  // another was picked meanwhile
        names = doc.names;
        draw(doc.traces[0], id);
      } catch (e) {
        if (wanted === id) $('trace-label').textContent = `trace ${id}: not available (${e.message}); pick another`;
      }
    }
    onPick = show;
    async function poll() {
      try {
        const r = await fetch('api/slow-traces', { cache: 'no-store' });
        if (!r.ok) throw new Error(`api/slow-traces: HTTP ${r.status}`);
        const list = await r.json();
        const now = new Date();
        fillPicker(list.traces.map((t, i) => ({
          key: t.id, rank: i + 1, duration_ns: t.duration_ns, spans: t.spans,
          pick: `${Math.round(t.age_ms / 1000)} s ago`, cls: 'age', root: `${t.service}: ${t.root}`,
          title: `${t.service}: ${t.root}\ntrace ${t.id}\ncompleted ${new Date(t.completed_unix_ms).toLocaleTimeString()}`,
        })));
        $('facts').textContent = `live: the ${list.max_traces} slowest traces completed in the last ` +
          `${dur(list.window_s * 1e9)} (${list.kept} kept, ${list.spans_kept} spans); updated ${now.toLocaleTimeString()}`;
        $('left-out').textContent = pickedKey !== null && !list.traces.some((t) => t.id === pickedKey)
          ? `trace ${pickedKey}, drawn, has left the list (faster than those kept, or older than the window)` : '';
        document.body.dataset.traces = String(list.traces.length);
        document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
        if (wanted === null && list.traces.length) await show(list.traces[0].id);
        document.body.dataset.ready = '1';
      } catch (e) {
        $('facts').textContent = `live: ${e.message}; retrying`;
      }
      setTimeout(poll, 1500);
    }
    poll();
  }
})();
