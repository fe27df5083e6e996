#include "cp/segments.hpp"

#include <algorithm>
#include <unordered_map>

#include "pag/radix_sort.hpp"

namespace snailtrail {

namespace {

// Splits the idle intervals' time into what the input waits (sorted by start, as
// (start - origin, end)) cover and the rest: the Property 2 violations.
void classify_idle(const BigVector<KeyValue<int64_t>>& input_waits, int64_t origin,
                   SegmentPlan& plan) {
  static thread_local std::vector<std::pair<int64_t, int64_t>> merged;  // their union
  merged.clear();
  for (const auto& kv : input_waits) {
    const int64_t s = static_cast<int64_t>(kv.key) + origin;
    if (!merged.empty() && s <= merged.back().second)
      merged.back().second = std::max(merged.back().second, kv.value);
    else
      merged.emplace_back(s, kv.value);
  }
  size_t k = 0;
  for (const auto& [a, b] : plan.idle) {
    while (k < merged.size() && merged[k].second <= a) ++k;
    int64_t covered = 0;
    for (size_t m = k; m < merged.size() && merged[m].first < b; ++m)
      covered += std::min(merged[m].second, b) - std::max(merged[m].first, a);
    plan.input_idle_ns += covered;
    if (covered < b - a) {
      ++plan.property2_violations;
      plan.property2_ns += b - a - covered;
    }
  }
}

}  // namespace

// Pieces of messages in flight across the whole part (sent before its start, received
// after its end) all join the sender's node at the start to the receiver's at the end:
// those of one (sender, receiver, type) are one edge counted msg_mult times. Without
// this, a message crossing S segments would be S edges, O(messages x segments) a window.
void merge_spanning_pieces(const Pag& pag, Snapshot& part) {
  const int64_t p = part.window.start, q = part.window.end;
  const size_t m = part.msg_src.size();
  part.msg_mult.assign(m, 1);
  part.merged_pieces = 0;
  static thread_local std::unordered_map<uint64_t, uint32_t> first;  // key -> kept edge
  first.clear();
  size_t kept = 0;
  for (size_t k = 0; k < m; ++k) {
    const Message& msg = pag.messages[part.msg_index[k]];
    if (msg.src_ts < p && msg.dst_ts > q) {
      // The endpoints are the workers' nodes at p and q: (workers, type) is the key.
      const uint64_t key = (static_cast<uint64_t>(msg.src_worker) << 36) ^
                           (static_cast<uint64_t>(msg.dst_worker) << 8) ^
                           static_cast<uint64_t>(msg.type);
      auto [it, inserted] = first.try_emplace(key, static_cast<uint32_t>(kept));
      const uint32_t g = it->second;
      if (!inserted && part.msg_src[g] == part.msg_src[k] && part.msg_dst[g] == part.msg_dst[k] &&
          pag.messages[part.msg_index[g]].type == msg.type) {
        ++part.msg_mult[g];
        ++part.merged_pieces;
        continue;
      }
    }
    part.msg_src[kept] = part.msg_src[k];
    part.msg_dst[kept] = part.msg_dst[k];
    part.msg_index[kept] = part.msg_index[k];
    part.msg_mult[kept] = 1;
    ++kept;
  }
  part.msg_src.resize(kept);
  part.msg_dst.resize(kept);
  part.msg_index.resize(kept);
  part.msg_mult.resize(kept);
}

namespace {

// What plan_segments collects from a window's nodes (thread-local scratch).
struct PlanScratch {
  BigVector<KeyValue<int64_t>> busy, scratch;  // (start - span_start, end)
  BigVector<KeyValue<int64_t>> input_waits;    // (start - span_start, end)
  std::vector<int64_t> borders;
  BigVector<uint8_t> arrives;  // per node: 1 if a message arrives
  BigVector<std::pair<int64_t, int64_t>> message_times;
  void clear() {
    busy.clear();
    input_waits.clear();
    borders.clear();
  }
  // A large window's lists (16 bytes a busy run, 50 MB for the 256 s benchmark window)
  // are freed once its plan is made: kept, they would sit under the window's CP, the
  // run's peak memory (docs/PERFORMANCE.md, issue 39 fifth round). Big arrays, so that
  // they come from and go back to the memory the window's snapshots and CP reuse.
  void give_back_large() {
    give_back(busy), give_back(scratch), give_back(input_waits), give_back(borders);
    give_back(arrives), give_back(message_times);
  }
  size_t largest_bytes() const {
    return std::max({busy.capacity() * sizeof(busy[0]), scratch.capacity() * sizeof(scratch[0]),
                     input_waits.capacity() * sizeof(input_waits[0]),
                     borders.capacity() * sizeof(borders[0]), arrives.capacity(),
                     message_times.capacity() * sizeof(message_times[0])});
  }

 private:
  template <typename T, typename A>
  static void give_back(std::vector<T, A>& v) {
    if (v.capacity() * sizeof(T) > kPlanScratchKeptBytes) std::vector<T, A>().swap(v);
  }
};
thread_local PlanScratch t_scratch;

void reset(SegmentPlan& plan) {
  plan.idle.clear();
  plan.parts.clear();
  plan.segments = 0;
  plan.input_idle_ns = 0;
  plan.property2_violations = 0;
  plan.property2_ns = 0;
}

// One timeline edge v -> v + 1 of a worker's nodes in a window (times clipped), in node
// order: a border where the worker starts or resumes with no message arriving, a wait for
// input, or busy time (runs of one worker's busy edges merged).
struct EdgeVisitor {
  const Pag& pag;
  int64_t span_start;
  PlanScratch& s;
  // first: v is the worker's first node in the window; g: its PAG node; arrives_*: a
  // message arrives at v, at v + 1; end_unclipped: v + 1 is at PAG node g + 1's time.
  void operator()(bool first, uint32_t g, int64_t t0, int64_t t1, bool arrives_v, bool arrives_next,
                  bool end_unclipped) {
    constexpr uint8_t kWaiting = static_cast<uint8_t>(ActivityType::waiting);
    // A worker that starts with no message arriving: nothing in the trace leads to it.
    if (first && t0 > span_start && !arrives_v) s.borders.push_back(t0);
    if (pag.edge_type[g] == kWaiting) {
      if (pag.edge_op[g] != kNone && t1 > t0)
        s.input_waits.push_back({static_cast<uint64_t>(t0 - span_start), t1});
      // A wait that ends with no message arriving (and not cut by the window's end): the
      // worker resumes for no reason the trace shows, like a worker that starts.
      if (!arrives_next && end_unclipped) s.borders.push_back(t1);
      return;
    }
    if (!s.busy.empty() && s.busy.back().value == t0 && !first)
      s.busy.back().value = t1;
    else
      s.busy.push_back({static_cast<uint64_t>(t0 - span_start), t1});
  }
};

// The idle intervals (the stretches of [span_start, span_end] no busy interval covers),
// their input waits and the parts between the borders.
void finish_plan(const Window& window, int64_t span_start, int64_t span_end, PlanScratch& s,
                 SegmentPlan& plan) {
  plan.span_start = span_start;
  plan.span_end = span_end;
  radix_sort(s.busy, s.scratch);
  int64_t covered = span_start;
  for (const auto& kv : s.busy) {
    const int64_t b = static_cast<int64_t>(kv.key) + span_start;
    if (b > covered) plan.idle.emplace_back(covered, b);
    covered = std::max(covered, kv.value);
    if (covered >= span_end) break;
  }
  if (covered < span_end) plan.idle.emplace_back(covered, span_end);
  if (!plan.idle.empty()) {
    radix_sort(s.input_waits, s.scratch);
    classify_idle(s.input_waits, span_start, plan);
  }

  // The last part owns span_end unless the next window starts there.
  const bool closed = span_end < window.end || window.closed_end;
  std::vector<int64_t>& borders = s.borders;
  if (plan.idle.empty() && borders.empty()) {  // the thesis case: one segment
    if (span_end > span_start) plan.parts.push_back({{span_start, span_end, closed}, false});
    plan.segments = plan.parts.size();
    return;
  }
  borders.push_back(span_start);
  borders.push_back(span_end);
  for (const auto& [a, b] : plan.idle) borders.push_back(a), borders.push_back(b);
  std::sort(borders.begin(), borders.end());
  borders.erase(std::unique(borders.begin(), borders.end()), borders.end());
  size_t i = 0;  // first idle interval that may contain [p, q]
  for (size_t k = 0; k + 1 < borders.size(); ++k) {
    const int64_t p = borders[k], q = borders[k + 1];
    while (i < plan.idle.size() && plan.idle[i].second <= p) ++i;
    const bool idle = i < plan.idle.size() && plan.idle[i].first <= p && q <= plan.idle[i].second;
    plan.parts.push_back({{p, q, false}, idle});
    plan.segments += !idle;
  }
  if (!plan.parts.empty()) plan.parts.back().window.closed_end = closed;
}

}  // namespace

size_t plan_scratch_bytes() {
  return t_scratch.largest_bytes();
}

void plan_segments(const Pag& pag, const Snapshot& snap, SegmentPlan& plan) {
  reset(plan);
  const size_t n = snap.node_count();
  if (n == 0) {
    plan.span_start = plan.span_end = snap.window.start;
    return;
  }
  const auto [lo, hi] = std::minmax_element(snap.ts.begin(), snap.ts.end());
  const int64_t span_start = *lo;
  PlanScratch& s = t_scratch;
  s.clear();
  s.arrives.assign(n, 0);
  for (size_t k = 0; k < snap.msg_dst.size(); ++k) s.arrives[snap.msg_dst[k]] = 1;
  EdgeVisitor visit{pag, span_start, s};
  for (size_t v = 0; v + 1 < n; ++v) {
    if (snap.edge[v] == kNone) continue;
    visit(v == 0 || snap.edge[v - 1] == kNone, snap.edge[v], snap.ts[v], snap.ts[v + 1],
          s.arrives[v], s.arrives[v + 1], snap.ts[v + 1] == pag.node_ts[snap.edge[v] + 1]);
  }
  for (size_t k = 0; k < snap.msg_src.size(); ++k) {
    const int64_t a = snap.ts[snap.msg_src[k]], b = snap.ts[snap.msg_dst[k]];
    if (b > a) s.busy.push_back({static_cast<uint64_t>(a - span_start), b});
  }
  finish_plan(snap.window, span_start, *hi, s, plan);
  s.give_back_large();
}

// The same plan without the window's snapshot: the nodes' times come from the ranges the
// snapshot would copy, message endpoints are placed where Snapshotter puts them.
void SegmentPlanner::plan(const Window& win, SegmentPlan& plan) {
  reset(plan);
  const uint32_t nodes = scan_.scan(win, ranges_, messages_);
  if (nodes == 0 && messages_.empty()) {
    plan.span_start = plan.span_end = win.start;
    return;
  }
  const auto& node_ts = pag_.node_ts;
  using Range = Snapshotter::Range;
  // The time of snapshot node v of range r (its ends clipped).
  auto time_of = [&](const Range& r, uint32_t v) {
    if (v == r.offset) return r.first_ts;
    if (v == r.offset + (r.last_node - r.first_edge)) return r.last_ts;
    return node_ts[r.first_edge + (v - r.offset)];
  };
  int64_t span_start = INT64_MAX, span_end = INT64_MIN;
  for (const Range& r : ranges_)
    if (r.first_edge != kNone) {
      span_start = std::min(span_start, r.first_ts);
      span_end = std::max(span_end, r.last_ts);
    }
  PlanScratch& s = t_scratch;
  s.clear();
  s.arrives.assign(nodes, 0);
  s.message_times.clear();
  const int64_t ts = win.start, te = win.end;
  for (uint32_t mi : messages_) {
    const Message& m = pag_.messages[mi];
    const int64_t s_t = std::max(m.src_ts, ts), d_t = std::min(m.dst_ts, te);
    const Range& rs = ranges_[m.src_worker];
    const Range& rd = ranges_[m.dst_worker];
    const uint32_t vs = Snapshotter::place(rs, s_t, m.src_node, m.src_ts < ts);
    const uint32_t vd = Snapshotter::place(rd, d_t, m.dst_node, m.dst_ts > te);
    const int64_t a = vs == kNone ? s_t : time_of(rs, vs);
    const int64_t b = vd == kNone ? d_t : time_of(rd, vd);
    if (vd != kNone) s.arrives[vd] = 1;
    span_start = std::min({span_start, a, b});
    span_end = std::max({span_end, a, b});
    if (b > a) s.message_times.emplace_back(a, b);
  }
  EdgeVisitor visit{pag_, span_start, s};
  for (const Range& r : ranges_) {
    if (r.first_edge == kNone) continue;
    const uint32_t k = r.last_node - r.first_edge;
    int64_t t0 = r.first_ts;
    for (uint32_t x = 0; x < k; ++x) {
      const uint32_t g = r.first_edge + x, v = r.offset + x;
      const int64_t t1 = x + 1 == k ? r.last_ts : node_ts[g + 1];
      visit(x == 0, g, t0, t1, s.arrives[v], s.arrives[v + 1], t1 == node_ts[g + 1]);
      t0 = t1;
    }
  }
  for (const auto& [a, b] : s.message_times)
    s.busy.push_back({static_cast<uint64_t>(a - span_start), b});
  finish_plan(win, span_start, span_end, s, plan);
  s.give_back_large();
  if (messages_.capacity() * sizeof(uint32_t) > kPlanScratchKeptBytes)
    std::vector<uint32_t>().swap(messages_);
}

void SegmentedCp::compute(const SegmentPlan& plan, Snapshot& snap, CpResult& out,
                          const uint64_t* sample_seed, std::vector<uint32_t>& sampled) {
  const size_t S = plan.parts.size();
  if (snaps_.size() < S) {
    snaps_.resize(S);
    results_.resize(S);
    paths_.resize(S);
  }
  const Totals t = analyze_parts(plan, sample_seed);
  combine(lay_out(S), S, t.cp_ns, snap, out, sampled);
  // V_s of the first segment and V_e of the last one.
  out.span_start = out.span_end = plan.span_start;
  for (size_t k = 0; k < S; ++k)
    if (!plan.parts[k].idle) {
      if (out.span_end == plan.span_start) out.span_start = plan.parts[k].window.start;
      out.span_end = plan.parts[k].window.end;
    }
  out.cp_ns = t.cp_ns;
  out.segments = plan.segments;
  out.no_path_segments = t.without_paths;
  out.property1_violations = t.property1;
  out.zero_duration_cycles = t.cycles;
}

// Each segment on its own, as a window of the PAG.
SegmentedCp::Totals SegmentedCp::analyze_parts(const SegmentPlan& plan,
                                               const uint64_t* sample_seed) {
  Totals t;
  for (size_t k = 0; k < plan.parts.size(); ++k) {
    snapshotter_.build(plan.parts[k].window, snaps_[k]);
    if (merge_pieces_) merge_spanning_pieces(pag_, snaps_[k]);
    CpResult& r = results_[k];
    if (plan.parts[k].idle) {  // no CP: only its edges, for the conventional profile
      r.paths = WideCount();
      r.cp_ns = 0;
      r.timeline_cp.assign(snaps_[k].node_count(), 0.0);
      r.message_cp.assign(snaps_[k].msg_src.size(), 0.0);
      r.forward.resize(snaps_[k].node_count());
      r.backward.resize(snaps_[k].node_count());
      paths_[k].clear();
      continue;
    }
    computer_.compute(snaps_[k], r);
    t.property1 += r.property1_violations;
    t.cycles += r.zero_duration_cycles;
    paths_[k].clear();
    if (!r.has_paths()) {
      ++t.without_paths;
      continue;
    }
    t.cp_ns += r.cp_ns;
    if (sample_seed)
      paths_[k] = computer_.sample_path(snaps_[k], r, *sample_seed + k * 0xd1b54a32d192ed03ULL);
    if (!path_counts_) {  // not combined: free them for the next part and the combination
      BigVector<WideCount>().swap(r.forward);
      BigVector<WideCount>().swap(r.backward);
    }
  }
  return t;
}

// The segments' nodes worker by worker, each worker's in segment order, then every
// segment's standalone message endpoints.
SegmentedCp::Layout SegmentedCp::lay_out(size_t S) const {
  Layout l;
  const size_t W = pag_.worker_count();
  std::vector<uint32_t> count(W + 1, 0), timeline_end(S);
  l.node_base.assign(S + 1, 0);
  l.msg_base.assign(S + 1, 0);
  for (size_t k = 0; k < S; ++k) {
    const Snapshot& s = snaps_[k];
    uint32_t u = 0;
    const uint32_t nk = static_cast<uint32_t>(s.node_count());
    while (u < nk && (s.edge[u] != kNone || (u > 0 && s.edge[u - 1] != kNone))) {
      ++count[s.worker[u] + 1];
      ++u;
    }
    timeline_end[k] = u;
    l.node_base[k + 1] = l.node_base[k] + nk;
    l.msg_base[k + 1] = l.msg_base[k] + static_cast<uint32_t>(s.msg_src.size());
  }
  for (size_t w = 0; w < W; ++w) count[w + 1] += count[w];
  uint32_t extra = count[W];
  l.place.resize(l.node_base[S]);
  for (size_t k = 0; k < S; ++k) {
    const Snapshot& s = snaps_[k];
    for (uint32_t u = 0; u < s.node_count(); ++u)
      l.place[l.node_base[k] + u] = u < timeline_end[k] ? count[s.worker[u]]++ : extra++;
  }
  return l;
}

// The combined snapshot (swapped into `snap`), f, b and edge CPs (into `out`), and the
// sampled paths in its numbering. N = product of the segments' N; f and b of segment k's
// nodes scale by the product of the earlier and of the later segments' N, so that
// f(u) b(v) = c_k(e) prod_{j != k} N_j.
void SegmentedCp::combine(const Layout& l, size_t S, int64_t T, Snapshot& snap, CpResult& out,
                          std::vector<uint32_t>& sampled) {
  std::vector<WideCount> before(S), after(S);
  WideCount N = T > 0 ? WideCount::one() : WideCount();
  for (size_t k = 0; k < S; ++k) {
    before[k] = results_[k].has_paths() ? N : WideCount();
    if (results_[k].has_paths()) N = N * results_[k].paths;
  }
  WideCount acc = WideCount::one();
  for (size_t k = S; k-- > 0;) {
    after[k] = results_[k].has_paths() ? acc : WideCount();
    if (results_[k].has_paths()) acc = acc * results_[k].paths;
  }
  Snapshot& c = combined_;
  const uint32_t n = l.node_base[S], m = l.msg_base[S];
  c.window = snap.window;
  c.events = snap.events;
  c.timeline_edges = 0;
  c.merged_pieces = 0;
  c.ts.resize(n);
  c.worker.resize(n);
  c.edge.resize(n);
  c.type.resize(n);
  c.msg_src.resize(m);
  c.msg_dst.resize(m);
  c.msg_index.resize(m);
  c.msg_mult.resize(m);
  out.forward.resize(path_counts_ ? n : 0);
  out.backward.resize(path_counts_ ? n : 0);
  out.timeline_cp.resize(n);
  out.message_cp.resize(m);
  const double inv_T = T > 0 ? 1.0 / static_cast<double>(T) : 0.0;
  sampled.clear();
  for (size_t k = 0; k < S; ++k) {
    const Snapshot& s = snaps_[k];
    const CpResult& r = results_[k];
    const bool paths = r.has_paths();
    const double weight = paths ? static_cast<double>(r.cp_ns) * inv_T : 0.0;
    c.timeline_edges += s.timeline_edges;
    c.merged_pieces += s.merged_pieces;
    const uint32_t* at = l.place.data() + l.node_base[k];
    for (uint32_t u = 0; u < s.node_count(); ++u) {
      const uint32_t x = at[u];
      c.ts[x] = s.ts[u];
      c.worker[x] = s.worker[u];
      c.edge[x] = s.edge[u];
      c.type[x] = s.type[u];
      out.timeline_cp[x] = r.timeline_cp[u] * weight;
      if (!path_counts_) continue;
      out.forward[x] = paths ? r.forward[u] * before[k] : WideCount();
      out.backward[x] = paths ? r.backward[u] * after[k] : WideCount();
    }
    for (uint32_t j = 0; j < s.msg_src.size(); ++j) {
      const uint32_t y = l.msg_base[k] + j;
      c.msg_src[y] = at[s.msg_src[j]];
      c.msg_dst[y] = at[s.msg_dst[j]];
      c.msg_index[y] = s.msg_index[j];
      c.msg_mult[y] = s.mult(j);
      out.message_cp[y] = r.message_cp[j] * weight;
    }
    for (uint32_t e : paths_[k]) sampled.push_back(e & 0x80000000u ? ~(l.msg_base[k] + ~e) : at[e]);
  }
  std::swap(snap, c);
  out.paths = N;
}

}  // namespace snailtrail
