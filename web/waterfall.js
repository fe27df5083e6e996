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

  // ---- Percentiles and Diff: the folded views of `critical-path --percentile` / `--diff`.
  // A source (percentiles offered, pick and pair opened on) gives {p, traces, rows_total, left_out_us, rows: [[stack, us]]} per percentile
  // (most critical first) and {a, b, traces_a, traces_b, rows_total, rows: [[stack, a, b]]}
  // per pair; static: embedded (data.percentiles), live: api/critical-path's folded text.
  const kPcRows = 200;  // rows drawn per view (the embedded data holds at most this many)
  const pcLabel = (p) => (p > 0 ? `p${p}` : 'all traces');
  // "svc:op;svc:op" -> [[svc, op], ...] (critical-path's frames, root first).
  const frames = (stack) => stack.split(';').map((f) => {
    const c = f.indexOf(':');
    return c < 0 ? ['', f] : [f.slice(0, c), f.slice(c + 1)];
  });
  function ctxCell(stack) {
    const td = el('td', 'ctx');
    const fs = frames(stack);
    const [svc, op] = fs[fs.length - 1];
    // The span name first; its ancestors, nearest first, after it (cut when long).
    td.appendChild(el('span', 'svc', svc));
    td.appendChild(document.createTextNode(' '));
    td.appendChild(el('span', 'op', op));
    if (fs.length > 1) td.appendChild(el('span', 'anc', `  ‹ ${fs.slice(0, -1).reverse().map(([a, b]) => `${a}: ${b}`).join(' ‹ ')}`));
    td.title = fs.map(([a, b]) => `${a}: ${b}`).join('\n');
    return td;
  }
  const rootOf = (stack) => stack.split(';')[0];
  const usText = (us) => dur(us * 1000);
  function setOptions(sel, values, chosen, label) {
    sel.textContent = '';
    for (const v of values) {
      const o = el('option', '', label(v));
      o.value = String(v);
      if (String(v) === String(chosen)) o.selected = true;
      sel.appendChild(o);
    }
  }

  function percentilePanel(src) {
    const pick = $('pc-pick'), rootSel = $('pc-root'), da = $('diff-a'), db = $('diff-b');
    setOptions(pick, src.percentiles, src.pick, pcLabel);
    setOptions(da, src.percentiles, src.pair[0], pcLabel);
    setOptions(db, src.percentiles, src.pair[1], pcLabel);
    let root = '';  // '' : every root
    const keepRoot = (stack) => !root || rootOf(stack) === root;

    async function drawPercentile() {
      const p = Number(pick.value);
      const v = await src.view(p);
      if (Number(pick.value) !== p) return;  // changed meanwhile
      // The roots of this view for the filter; the pick stays if it is still there.
      const roots = [...new Set(v.rows.map(([s]) => rootOf(s)))].sort();
      if (root && !roots.includes(root)) root = '';
      setOptions(rootSel, [''].concat(roots), root, (r) => (r ? r.replace(':', ': ') : 'every root'));
      const rows = v.rows.filter(([s]) => keepRoot(s));
      const total = rows.reduce((t, [, us]) => t + us, 0);
      const max = rows.reduce((m, [, us]) => Math.max(m, us), 1);
      const t = $('pc-table');
      t.textContent = '';
      const head = el('tr');
      for (const [h, c] of [['#', 'num'], ['calling context: service operation', ''], ['critical', 'num'], ['share', 'num'], ['', '']])
        head.appendChild(el('th', c, h));
      t.appendChild(el('thead')).appendChild(head);
      const body = t.appendChild(el('tbody'));
      rows.forEach(([stack, us], k) => {
        const tr = el('tr', 'pc-row');
        tr.dataset.stack = stack;
        tr.dataset.us = String(us);
        tr.appendChild(el('td', 'num', String(k + 1)));
        tr.appendChild(ctxCell(stack));
        tr.appendChild(el('td', 'num value', usText(us)));
        tr.appendChild(el('td', 'num', total > 0 ? `${(100 * us / total).toFixed(1)} %` : '—'));
        const bar = el('td');
        const b = bar.appendChild(el('div', 'pc-bar')).appendChild(el('i'));
        b.style.left = '0';
        b.style.width = `${(100 * us / max).toFixed(2)}%`;
        tr.appendChild(bar);
        body.appendChild(tr);
      });
      $('pc-facts').textContent = `${v.traces} of ${src.traces()} traces around ${pcLabel(p)}` +
        (p > 0 ? ` (±${src.bucket} percentile points)` : '') + `: ${usText(total)} on their critical paths`;
      $('pc-left-out').textContent = v.rows_total > v.rows.length
        ? `${v.rows.length} of ${v.rows_total} calling contexts shown, the most critical; ` +
          `${v.rows_total - v.rows.length} left out (${usText(v.left_out_us)} in all)`
        : (v.rows.length ? '' : 'no trace around this percentile');
      document.body.dataset.percentile = String(p);
    }

    async function drawDiff() {
      const a = Number(da.value), b = Number(db.value);
      const d = await src.diff(a, b);
      if (Number(da.value) !== a || Number(db.value) !== b) return;
      const rows = d.rows.filter(([s]) => keepRoot(s)).sort((x, y) => (y[2] - y[1]) - (x[2] - x[1]));
      const max = rows.reduce((m, [, x, y]) => Math.max(m, Math.abs(y - x)), 1);
      const t = $('diff-table');
      t.textContent = '';
      const head = el('tr');
      for (const [h, c] of [['calling context: service operation', ''], [pcLabel(a), 'num'], [pcLabel(b), 'num'], ['B − A', 'num'], ['', '']])
        head.appendChild(el('th', c, h));
      t.appendChild(el('thead')).appendChild(head);
      const body = t.appendChild(el('tbody'));
      for (const [stack, x, y] of rows) {
        const delta = y - x;
        const sign = delta > 0 ? 'pos' : delta < 0 ? 'neg' : 'zero';
        const tr = el('tr', `diff-row ${sign}`);
        tr.dataset.stack = stack;
        tr.dataset.a = String(x);
        tr.dataset.b = String(y);
        tr.dataset.diff = String(delta);
        tr.appendChild(ctxCell(stack));
        tr.appendChild(el('td', 'num', usText(x)));
        tr.appendChild(el('td', 'num', usText(y)));
        tr.appendChild(el('td', `num ${sign}`, (delta > 0 ? '+' : delta < 0 ? '−' : '') + usText(Math.abs(delta))));
        const cell = el('td');
        const bar = cell.appendChild(el('div', 'pc-bar diff')).appendChild(el('i', sign));
        // Diverging from the middle: right where B is slower, left where it is faster.
        const w = 50 * Math.abs(delta) / max;
        bar.style.left = `${delta >= 0 ? 50 : 50 - w}%`;
        bar.style.width = `${w.toFixed(2)}%`;
        tr.appendChild(cell);
        body.appendChild(tr);
      }
      $('diff-facts').textContent = `A: ${d.traces_a} traces around ${pcLabel(a)}, B: ${d.traces_b} around ${pcLabel(b)}; mean per trace`;
      $('diff-left-out').textContent = d.rows_total > d.rows.length
        ? `${d.rows.length} of ${d.rows_total} calling contexts shown, the largest changes; ${d.rows_total - d.rows.length} left out`
        : '';
      document.body.dataset.diff = `${a},${b}`;
    }

    const fail = (where) => (e) => { $(where).textContent = `not available: ${e.message}`; };
    const redraw = () => Promise.all([drawPercentile().catch(fail('pc-facts')), drawDiff().catch(fail('diff-facts'))]);
    pick.addEventListener('change', () => drawPercentile().then(drawDiff).catch(fail('pc-facts')));
    rootSel.addEventListener('change', () => { root = rootSel.value; drawPercentile().then(drawDiff).catch(fail('pc-facts')); });
    da.addEventListener('change', () => drawDiff().catch(fail('diff-facts')));
    db.addEventListener('change', () => drawDiff().catch(fail('diff-facts')));
    return redraw;
  }

  // The embedded views: a pair is stored once (a < b); the other order swaps its columns.
  function embeddedSource(pc) {
    const stack = (i) => pc.stacks[i];
    return {
      percentiles: pc.views.map((v) => v.p), pick: pc.pick, pair: pc.diff, bucket: pc.bucket,
      traces: () => pc.traces,
      view: async (p) => {
        const v = pc.views.find((x) => x.p === p);
        return { ...v, rows: v.rows.map(([s, us]) => [stack(s), us]) };
      },
      diff: async (a, b) => {
        if (a === b) {
          const v = pc.views.find((x) => x.p === a);
          return { a, b, traces_a: v.traces, traces_b: v.traces, rows_total: 0, rows: [] };
        }
        const d = pc.diffs.find((x) => (x.a === a && x.b === b) || (x.a === b && x.b === a));
        const swap = d.a !== a;
        return {
          a, b, traces_a: swap ? d.traces_b : d.traces_a, traces_b: swap ? d.traces_a : d.traces_b,
          rows_total: d.rows_total,
          rows: d.rows.map(([s, x, y]) => (swap ? [stack(s), y, x] : [stack(s), x, y])),
        };
      },
    };
  }

  // Live: serve's api/critical-path, its folded text parsed ("stack w" / "stack a b": the
  // numbers are the last fields, a stack may hold spaces) and bounded as the report's.
  function liveSource() {
    let traces = 0;
    const get = async (query, json) => {
      const r = await fetch(`api/critical-path?${query}`, { cache: 'no-store' });
      if (!r.ok) throw new Error(`api/critical-path: HTTP ${r.status}`);
      return json ? r.json() : r.text();
    };
    const lines = (text, fields) => text.split('\n').filter((l) => l).map((l) => {
      const parts = l.split(' ');
      const nums = parts.splice(parts.length - fields, fields).map(Number);
      return [parts.join(' '), ...nums];
    });
    const count = async (p) => {
      const j = await get(p > 0 ? `percentile=${p}` : '', true);
      traces = j.traces;
      return p > 0 ? j.traces_around : j.traces;
    };
    return {
      percentiles: [0, 50, 90, 95, 99], pick: 99, pair: [50, 99], bucket: 1,
      traces: () => traces,
      view: async (p) => {
        const [text, n] = await Promise.all([get(`percentile=${p}&format=folded`), count(p)]);
        const rows = lines(text, 1).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
        const kept = rows.slice(0, kPcRows);
        return { p, traces: n, rows_total: rows.length, rows: kept,
          left_out_us: rows.slice(kPcRows).reduce((t, r) => t + r[1], 0) };
      },
      diff: async (a, b) => {
        const [text, na, nb] = await Promise.all([get(`diff=${a},${b}`), count(a), count(b)]);
        const rows = lines(text, 2).sort((x, y) => Math.abs(y[2] - y[1]) - Math.abs(x[2] - x[1]));
        return { a, b, traces_a: na, traces_b: nb, rows_total: rows.length, rows: rows.slice(0, kPcRows) };
      },
    };
  }

  let redrawPercentiles = null;
  if (data.live) {
    redrawPercentiles = percentilePanel(liveSource());
    live();
  } else {
    if (data.traces.length) select(0);
    if (data.percentiles) {
      percentilePanel(embeddedSource(data.percentiles))().then(() => { document.body.dataset.ready = '1'; });
    } else {
      $('sec-percentiles').hidden = true;
      document.body.dataset.ready = '1';
    }
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
    let polls = 0;
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
        // The percentile views every 4th poll (6 s) and at the first.
        if (polls++ % 4 === 0) await redrawPercentiles();
        document.body.dataset.ready = '1';
      } catch (e) {
        $('facts').textContent = `live: ${e.message}; retrying`;
      }
      setTimeout(poll, 1500);
    }
    poll();
  }
})();
