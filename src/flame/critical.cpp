#include "flame/critical.hpp"

#include <algorithm>
#include <numeric>

#include "pag/timeline.hpp"

namespace snailtrail::flame {
namespace {

using NodeRange = std::pair<uint32_t, uint32_t>;  // snapshot nodes [first, second)

// On-CPU samples with a worker and a time, in time order (the rest of the on-CPU ones
// are counted as unplaced).
std::vector<uint32_t> placeable_samples(const SampleSet& set, CriticalResult& r) {
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < set.samples.size(); ++i) {
    const StackSample& s = set.samples[i];
    if (s.kind != SampleKind::on_cpu) continue;
    if (s.worker == kNoId || s.ts == kNoTime) {
      ++r.samples_unplaced;
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return set.samples[a].ts < set.samples[b].ts; });
  return order;
}

// The first contiguous run of each worker's nodes (clipped-message-only nodes of
// workers without edges come last and carry no timeline edge).
void worker_ranges(const Snapshot& snap, size_t workers, std::vector<NodeRange>& range) {
  range.assign(workers, {0, 0});
  std::vector<uint8_t> started(workers, 0), done(workers, 0);
  for (uint32_t v = 0; v < snap.node_count(); ++v) {
    uint32_t w = snap.worker[v];
    if (done[w]) continue;
    if (!started[w]) {
      started[w] = 1;
      range[w] = {v, v + 1};
    } else if (range[w].second == v) {
      range[w].second = v + 1;
    } else {
      done[w] = 1;
    }
  }
}

// The timeline edge of its worker each sample order[from, to) falls in, as (snapshot
// node, sample), sorted.
void find_hits(const Pag& pag, const Snapshot& snap, const SampleSet& set,
               const std::vector<uint32_t>& order, size_t from, size_t to,
               const std::vector<NodeRange>& range, std::vector<NodeRange>& hits) {
  hits.clear();
  for (size_t k = from; k < to; ++k) {
    uint32_t i = order[k];
    const StackSample& s = set.samples[i];
    auto wit = std::lower_bound(pag.worker_ids.begin(), pag.worker_ids.end(), s.worker);
    if (wit == pag.worker_ids.end() || *wit != s.worker) continue;
    auto [b, e] = range[static_cast<size_t>(wit - pag.worker_ids.begin())];
    if (e - b < 2) continue;
    // Last node with ts <= t; its edge must reach past t.
    const int64_t* first = &snap.ts[b];
    const int64_t* last = first + (e - b);
    const int64_t* p = std::upper_bound(first, last, s.ts);
    if (p == first) continue;
    uint32_t v = b + static_cast<uint32_t>(p - first) - 1;
    if (v + 1 >= e || !snap.has_timeline_edge(v) || !(snap.ts[v] <= s.ts && s.ts < snap.ts[v + 1]))
      continue;
    hits.emplace_back(v, i);
  }
  std::sort(hits.begin(), hits.end());
}

// Shares each hit edge's critical time among its samples by their periods, and gives
// the samples without an operator or activity the edge's.
void attribute(const Pag& pag, const Snapshot& snap, const CpResult& cp,
               const std::vector<NodeRange>& hits, SampleSet& set, std::vector<uint8_t>& placed,
               CriticalResult& r) {
  const double cp_ns = static_cast<double>(cp.cp_ns);
  for (size_t a = 0; a < hits.size();) {
    size_t b = a;
    while (b < hits.size() && hits[b].first == hits[a].first) ++b;
    uint32_t v = hits[a].first;
    double crit = cp.has_paths() ? cp.timeline_cp[v] * cp_ns : 0.0;
    r.attributed_ns += crit;
    uint32_t global = snap.edge[v];
    double periods = 0;  // a sample stands for `count` periods of CPU time
    for (size_t k = a; k < b; ++k)
      periods += static_cast<double>(set.samples[hits[k].second].count);
    for (size_t k = a; k < b; ++k) {
      uint32_t i = hits[k].second;
      StackSample& s = set.samples[i];
      r.weight[i] = periods > 0 ? crit * static_cast<double>(s.count) / periods : 0.0;
      placed[i] = 1;
      if (s.op == kNoId && global != kNone && pag.edge_op[global] != kNone)
        s.op = pag.edge_op[global];
      if (s.activity == 0xff && global != kNone) s.activity = pag.edge_type[global];
    }
    r.samples_in_edges += b - a;
    a = b;
  }
}

}  // namespace

CriticalResult critical_weights(const Trace& trace, SampleSet& set,
                                const AnalysisOptions& options) {
  CriticalResult r;
  r.weight.assign(set.samples.size(), 0.0);
  const std::vector<uint32_t> order = placeable_samples(set, r);
  Pag pag = build_pag(trace, options.pag);
  std::vector<uint8_t> placed(set.samples.size(), 0);
  size_t cursor = 0;
  std::vector<NodeRange> range;  // per dense worker: snapshot nodes
  std::vector<NodeRange> hits;   // (snapshot node, sample)
  analyze_pag(pag, options, [&](const WindowView& view) {
    const Window& win = view.snapshot.window;
    if (win.empty_run > 0) return;
    ++r.windows;
    // Samples before this window (before the first one, or in skipped runs) stay unplaced.
    while (cursor < order.size() && set.samples[order[cursor]].ts < win.start) ++cursor;
    size_t end = cursor;
    while (end < order.size()) {
      int64_t t = set.samples[order[end]].ts;
      if (t < win.end || (win.closed_end && t == win.end))
        ++end;
      else
        break;
    }
    const Snapshot& snap = view.snapshot;
    const CpResult& cp = view.cp;
    double cp_ns = static_cast<double>(cp.cp_ns);
    if (cp.has_paths())
      for (uint32_t v = 0; v < snap.node_count(); ++v)
        if (snap.has_timeline_edge(v)) r.timeline_critical_ns += cp.timeline_cp[v] * cp_ns;
    worker_ranges(snap, pag.worker_count(), range);
    find_hits(pag, snap, set, order, cursor, end, range, hits);
    attribute(pag, snap, cp, hits, set, placed, r);
    cursor = end;
  });
  for (uint32_t i : order)
    if (!placed[i]) ++r.samples_outside;
  for (auto& [id, name] : trace.operator_names) set.operator_names.try_emplace(id, name);
  return r;
}

}  // namespace snailtrail::flame
