#include "summary/summary.hpp"

#include "pag/radix_sort.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace snailtrail {
namespace {

constexpr uint8_t kWaiting = static_cast<uint8_t>(ActivityType::waiting);
constexpr uint8_t kUnknown = static_cast<uint8_t>(ActivityType::unknown);

// Dense cell numbers for (sender, receiver) pairs of one window: an open-addressing
// table cleared per window through the list of used cells.
class PairIndex {
 public:
  void clear() {
    for (uint32_t slot : used_) keys_[slot] = kEmpty;
    used_.clear();
    pairs_.clear();
  }
  uint32_t operator()(uint32_t src, uint32_t dst) {
    if (2 * (pairs_.size() + 1) > keys_.size()) grow();
    const uint64_t key = (uint64_t{src} << 32) | dst;
    size_t i = (key * 0x9e3779b97f4a7c15ULL) >> shift_;
    for (;; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return cell_[i];
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        cell_[i] = static_cast<uint32_t>(pairs_.size());
        used_.push_back(static_cast<uint32_t>(i));
        pairs_.emplace_back(src, dst);
        return cell_[i];
      }
    }
  }
  const std::vector<std::pair<uint32_t, uint32_t>>& pairs() const { return pairs_; }
  // The cells in (src, dst) order.
  const std::vector<uint32_t>& sorted_cells() {
    order_keys_.resize(pairs_.size());
    for (uint32_t c = 0; c < pairs_.size(); ++c)
      order_keys_[c] = {(uint64_t{pairs_[c].first} << 32) | pairs_[c].second, c};
    radix_sort(order_keys_, order_scratch_);
    order_.resize(pairs_.size());
    for (size_t k = 0; k < order_keys_.size(); ++k) order_[k] = order_keys_[k].value;
    return order_;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  void grow() {
    std::vector<std::pair<uint32_t, uint32_t>> pairs = pairs_;
    size_t cap = keys_.empty() ? 64 : keys_.size() * 2;
    keys_.assign(cap, kEmpty);
    cell_.assign(cap, 0);
    shift_ = 64 - __builtin_ctzll(cap);
    used_.clear();
    pairs_.clear();
    for (const auto& [s, d] : pairs) (*this)(s, d);
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> cell_;
  std::vector<uint32_t> used_;
  std::vector<std::pair<uint32_t, uint32_t>> pairs_;
  std::vector<KeyValue<uint32_t>> order_keys_, order_scratch_;
  std::vector<uint32_t> order_;
  int shift_ = 58;
};

// Accumulates one measure into Groups with dense operator and pair slots.
struct Accumulator {
  Groups groups;
  std::vector<double> op_values;
  std::vector<double> comm_values;

  void reset(size_t workers, size_t ops) {
    groups.activity.fill(0);
    groups.worker.assign(workers, 0);
    groups.op.clear();
    groups.op_per_worker.clear();
    groups.communication.clear();
    op_values.assign(ops, 0);
    comm_values.clear();
  }
  void add_comm(uint32_t cell, double v) {
    if (cell >= comm_values.size()) comm_values.resize(cell + 1, 0.0);
    comm_values[cell] += v;
  }
  // Emits the communication cells in (src, dst) order.
  void finish_comm(const PairIndex& index, const std::vector<uint32_t>& sorted_cells) {
    const auto& pairs = index.pairs();
    for (uint32_t c : sorted_cells)
      groups.communication.push_back(
          {pairs[c].first, pairs[c].second, c < comm_values.size() ? comm_values[c] : 0.0});
  }
  void finish(const std::vector<uint32_t>& op_ids, const std::vector<uint32_t>& op_workers) {
    for (size_t s = 0; s < op_values.size(); ++s)
      if (op_workers[s] > 0) {
        groups.op.emplace_back(op_ids[s], op_values[s]);
        groups.op_per_worker.emplace_back(op_ids[s], op_values[s] / op_workers[s]);
      }
  }
};

// Keeps the k largest activities seen, as a min-heap on CP (ties: earlier first).
class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void offer(const TopActivity& a) {
    if (k_ == 0 || a.cp <= 0) return;
    if (heap_.size() < k_) {
      heap_.push_back(a);
      std::push_heap(heap_.begin(), heap_.end(), worse_first);
    } else if (better(a, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), worse_first);
      heap_.back() = a;
      std::push_heap(heap_.begin(), heap_.end(), worse_first);
    }
  }
  std::vector<TopActivity> take() {
    std::sort(heap_.begin(), heap_.end(), better);
    return std::move(heap_);
  }
  static bool better(const TopActivity& a, const TopActivity& b) {
    if (a.cp != b.cp) return a.cp > b.cp;
    if (a.start != b.start) return a.start < b.start;
    if (a.worker != b.worker) return a.worker < b.worker;
    return a.remote < b.remote;
  }

 private:
  static bool worse_first(const TopActivity& a, const TopActivity& b) { return better(a, b); }
  size_t k_;
  std::vector<TopActivity> heap_;
};

}  // namespace

Summarizer::Summarizer(const Pag& pag) : pag_(pag), op_ids_(pag.operator_ids) {}

void Summarizer::summarize(const Snapshot& snap, const CpResult& cp,
                           const std::vector<uint32_t>& sampled, const SummaryOptions& options,
                           WindowSummary& out) {
  const size_t W = pag_.worker_count();
  const size_t n = snap.node_count();
  const size_t ops = op_ids_.size();
  auto slot_of = [&](uint32_t op) -> size_t {
    return static_cast<size_t>(std::lower_bound(op_ids_.begin(), op_ids_.end(), op) -
                               op_ids_.begin());
  };

  out.window = snap.window;
  out.span_start = cp.span_start;
  out.span_end = cp.span_end;
  out.cp_ns = cp.cp_ns;
  out.events = snap.events;
  out.nodes = n;
  out.edges = snap.edge_count();
  out.has_paths = cp.has_paths();
  out.paths_log10 = cp.paths.is_zero() ? 0 : cp.paths.log10();

  static thread_local Accumulator acc_cp, acc_conv, acc_single;
  static thread_local PairIndex pair_index;
  pair_index.clear();
  acc_cp.reset(W, ops);
  acc_conv.reset(W, ops);
  acc_single.reset(W, ops);
  std::vector<uint32_t> op_workers(ops, 0), op_last_worker(ops, kNone);

  // Top-k activities do not depend on the groupings: on large windows they run on a
  // second thread meanwhile. The computation keeps its order, so the results are the same
  // either way.
  std::vector<TopActivity> top_result;
  auto side_work = [&] {
    // Top-k: consecutive timeline edges of one activity instance are one activity.
    if (options.top_k > 0 && cp.has_paths()) {
      TopK top(options.top_k);
      size_t v = 0;
      while (v + 1 < n) {
        if (snap.edge[v] == kNone) {
          ++v;
          continue;
        }
        const uint32_t g = snap.edge[v];
        TopActivity a{snap.worker[v],   kNone,      static_cast<ActivityType>(snap.type[v]),
                      pag_.edge_op[g],  snap.ts[v], snap.ts[v + 1],
                      cp.timeline_cp[v]};
        size_t u = v + 1;
        for (;;) {
          // A segmented window breaks a timeline at a segment border into two nodes at
          // one instant: the activity goes on across it.
          if (u + 2 < n && snap.edge[u] == kNone && snap.edge[u + 1] != kNone &&
              snap.worker[u + 1] == snap.worker[u] && snap.ts[u + 1] == snap.ts[u] &&
              pag_.edge_instance[snap.edge[u + 1]] == pag_.edge_instance[g] &&
              snap.type[u + 1] == snap.type[v])
            ++u;
          if (!(u + 1 < n && snap.edge[u] != kNone &&
                pag_.edge_instance[snap.edge[u]] == pag_.edge_instance[g] &&
                snap.type[u] == snap.type[v]))
            break;
          a.end = snap.ts[u + 1];
          a.cp += cp.timeline_cp[u];
          ++u;
        }
        top.offer(a);
        v = u;
      }
      for (size_t k = 0; k < snap.msg_src.size(); ++k) {
        if (cp.message_cp[k] <= 0) continue;
        const Message& m = pag_.messages[snap.msg_index[k]];
        top.offer({m.src_worker, m.dst_worker, m.type, kNone, snap.ts[snap.msg_src[k]],
                   snap.ts[snap.msg_dst[k]], cp.message_cp[k]});
      }
      top_result = top.take();
    }
  };
  std::thread side;
  if (n >= options.split_min_nodes) side = std::thread(side_work);

  // Total duration of all edges, for conventional shares.
  double total = 0, unknown = 0, waiting = 0, timeline_total = 0;
  for (size_t v = 0; v + 1 < n; ++v)
    if (snap.edge[v] != kNone) {
      double w = static_cast<double>(snap.ts[v + 1] - snap.ts[v]);
      timeline_total += w;
      uint8_t t = snap.type[v];
      if (t == kUnknown) unknown += w;
      if (t == kWaiting) waiting += w;
    }
  total = timeline_total;
  // The worker and operator groupings of the conventional profile rank busy (non-waiting)
  // time: every worker's timeline spans the whole window, so plain durations would all be
  // equal (and an operator's instances wait with its id in many traces).
  const double busy_total = timeline_total - waiting;
  const double inv_busy = busy_total > 0 ? 1.0 / busy_total : 0.0;
  for (size_t k = 0; k < snap.msg_src.size(); ++k)
    total += static_cast<double>(snap.ts[snap.msg_dst[k]] - snap.ts[snap.msg_src[k]]);
  const double inv_total = total > 0 ? 1.0 / total : 0.0;
  // The single path covers the time CP is spread over (the segments with paths).
  const double span = static_cast<double>(cp.cp_ns);
  const double inv_span = span > 0 ? 1.0 / span : 0.0;

  std::vector<uint8_t> on_path_tl;
  std::vector<uint8_t> on_path_msg;
  if (!sampled.empty()) {
    on_path_tl.assign(n, 0);
    on_path_msg.assign(snap.msg_src.size(), 0);
    for (uint32_t e : sampled) {
      if (e & 0x80000000u)
        on_path_msg[~e] = 1;
      else
        on_path_tl[e] = 1;
    }
  }

  uint32_t last_op = kNone;  // consecutive edges mostly share their operator
  size_t last_slot = 0;
  for (size_t v = 0; v + 1 < n; ++v) {
    if (snap.edge[v] == kNone) continue;
    const uint32_t g = snap.edge[v];
    const uint8_t type = snap.type[v];
    const uint32_t w = snap.worker[v];
    const double dur = static_cast<double>(snap.ts[v + 1] - snap.ts[v]);
    const double c = cp.timeline_cp[v];
    const double conv = dur * inv_total;
    const double single = !on_path_tl.empty() && on_path_tl[v] ? dur * inv_span : 0.0;
    acc_cp.groups.activity[type] += c;
    acc_conv.groups.activity[type] += conv;
    acc_single.groups.activity[type] += single;
    acc_cp.groups.worker[w] += c;
    acc_conv.groups.worker[w] += type == kWaiting ? 0.0 : dur * inv_busy;
    acc_single.groups.worker[w] += single;
    // Operators: every edge carrying the operator id, whatever its type.
    if (const uint32_t op = pag_.edge_op[g]; op != kNone) {
      if (op != last_op) {
        last_op = op;
        last_slot = slot_of(op);
      }
      const size_t s = last_slot;
      acc_cp.op_values[s] += c;
      // Like workers, operators rank by busy time: their instances' waiting is not work.
      acc_conv.op_values[s] += type == kWaiting ? 0.0 : dur * inv_busy;
      acc_single.op_values[s] += single;
      if (op_last_worker[s] != w) {
        op_last_worker[s] = w;
        ++op_workers[s];
      }
    }
  }
  for (size_t k = 0; k < snap.msg_src.size(); ++k) {
    const Message& m = pag_.messages[snap.msg_index[k]];
    const double dur = static_cast<double>(snap.ts[snap.msg_dst[k]] - snap.ts[snap.msg_src[k]]);
    const double c = cp.message_cp[k];
    const double conv = dur * inv_total;
    const double single = !on_path_msg.empty() && on_path_msg[k] ? dur * inv_span : 0.0;
    const int type = static_cast<int>(m.type);
    acc_cp.groups.activity[type] += c;
    acc_conv.groups.activity[type] += conv;
    acc_single.groups.activity[type] += single;
    const uint32_t cell = pair_index(m.src_worker, m.dst_worker);
    acc_cp.add_comm(cell, c);
    acc_conv.add_comm(cell, conv);
    acc_single.add_comm(cell, single);
  }
  const std::vector<uint32_t>& sorted_cells = pair_index.sorted_cells();
  acc_cp.finish_comm(pair_index, sorted_cells);
  acc_conv.finish_comm(pair_index, sorted_cells);
  acc_single.finish_comm(pair_index, sorted_cells);
  acc_cp.finish(op_ids_, op_workers);
  acc_conv.finish(op_ids_, op_workers);
  acc_single.finish(op_ids_, op_workers);
  out.cp = acc_cp.groups;
  out.conventional = acc_conv.groups;
  out.single_path = acc_single.groups;

  if (side.joinable())
    side.join();
  else
    side_work();
  out.top = std::move(top_result);

  // Diagnostics.
  Diagnostics& d = out.diagnostics;
  d = Diagnostics{};
  d.no_paths = !cp.has_paths();
  d.property1_violations = cp.property1_violations;
  d.zero_duration_cycles = cp.zero_duration_cycles;
  d.unknown_share = timeline_total > 0 ? unknown / timeline_total : 0;
  d.waiting_share = timeline_total > 0 ? waiting / timeline_total : 0;
  d.property2_violations = cp.property2_violations;
  d.property2_ns = cp.property2_ns;
  d.segments = cp.segments;
  d.no_path_segments = cp.no_path_segments;
  const auto& issues = pag_.issues;
  while (issue_cursor_ < issues.size() && issues[issue_cursor_].ts < snap.window.start)
    ++issue_cursor_;
  while (issue_cursor_ < issues.size() &&
         (issues[issue_cursor_].ts < snap.window.end ||
          (snap.window.closed_end && issues[issue_cursor_].ts == snap.window.end))) {
    ++d.issues[static_cast<int>(issues[issue_cursor_].issue)];
    ++issue_cursor_;
  }
}

// ---- Aggregate over windows ----

namespace {
void add_by_id(std::vector<std::pair<uint32_t, double>>& into,
               const std::vector<std::pair<uint32_t, double>>& from, double weight) {
  for (const auto& [op, v] : from) {
    auto it = std::lower_bound(into.begin(), into.end(), op,
                               [](const auto& p, uint32_t id) { return p.first < id; });
    if (it == into.end() || it->first != op) it = into.insert(it, {op, 0.0});
    it->second += v * weight;
  }
}
void add_groups(Groups& into, const Groups& g, double weight) {
  for (int a = 0; a < kActivityTypeCount; ++a) into.activity[a] += g.activity[a] * weight;
  if (into.worker.size() < g.worker.size()) into.worker.resize(g.worker.size(), 0);
  for (size_t w = 0; w < g.worker.size(); ++w) into.worker[w] += g.worker[w] * weight;
  add_by_id(into.op, g.op, weight);
  add_by_id(into.op_per_worker, g.op_per_worker, weight);
  for (const CommCell& c : g.communication) {
    auto it = std::lower_bound(into.communication.begin(), into.communication.end(), c,
                               [](const CommCell& a, const CommCell& b) {
                                 return a.src != b.src ? a.src < b.src : a.dst < b.dst;
                               });
    if (it == into.communication.end() || it->src != c.src || it->dst != c.dst)
      it = into.communication.insert(it, {c.src, c.dst, 0.0});
    it->value += c.value * weight;
  }
}
void scale_groups(Groups& g, double s) {
  for (double& v : g.activity) v *= s;
  for (double& v : g.worker) v *= s;
  for (auto& p : g.op) p.second *= s;
  for (auto& p : g.op_per_worker) p.second *= s;
  for (auto& c : g.communication) c.value *= s;
}
}  // namespace

void Aggregate::add(const WindowSummary& w, size_t top_k) {
  ++windows;
  events += w.events;
  edges += w.edges;
  Diagnostics& d = diagnostics;
  const Diagnostics& x = w.diagnostics;
  d.no_paths = d.no_paths || x.no_paths;
  d.property1_violations += x.property1_violations;
  d.property2_violations += x.property2_violations;
  d.property2_ns += x.property2_ns;
  d.zero_duration_cycles += x.zero_duration_cycles;
  d.segments += x.segments;
  d.no_path_segments += x.no_path_segments;
  for (int i = 0; i < kIssueCount; ++i) d.issues[i] += x.issues[i];
  for (const auto& [kind, n] : x.input) d.add_input(kind, n);
  const int64_t length = w.window.end - w.window.start;
  diag_weight_ns += length;
  d.unknown_share += x.unknown_share * static_cast<double>(length);
  d.waiting_share += x.waiting_share * static_cast<double>(length);
  for (const WhatIf& x : w.what_if) {
    auto it = std::find_if(what_if.begin(), what_if.end(), [&](const WhatIf& y) {
      return y.kind == x.kind && y.id == x.id && y.peer_median == x.peer_median;
    });
    if (it == what_if.end()) {
      what_if.push_back(x);
    } else {
      it->saved_ns += x.saved_ns;
      it->speedup = std::max(it->speedup, x.speedup);
    }
  }
  if (!w.has_paths) return;
  verdicts.add(decide_verdict(w.cp, w.conventional, true, w.what_if), w.cp_ns);
  ++windows_with_paths;
  const int64_t span = w.cp_ns;
  weight_ns += span;
  const double s = static_cast<double>(span);
  add_groups(cp, w.cp, s);
  add_groups(conventional, w.conventional, s);
  add_groups(single_path, w.single_path, s);
  // Keep the k most critical activities over all windows, weighted by window span.
  for (TopActivity a : w.top) {
    a.cp *= s;
    top.push_back(a);
  }
  if (top.size() > 4 * top_k + 64) {
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(top_k), top.end(),
                      [](const TopActivity& a, const TopActivity& b) { return a.cp > b.cp; });
    top.resize(top_k);
  }
}

void Aggregate::finish() {
  std::stable_sort(what_if.begin(), what_if.end(),
                   [](const WhatIf& a, const WhatIf& b) { return a.saved_ns > b.saved_ns; });
  if (diag_weight_ns > 0) {
    diagnostics.unknown_share /= static_cast<double>(diag_weight_ns);
    diagnostics.waiting_share /= static_cast<double>(diag_weight_ns);
  }
  if (weight_ns <= 0) return;
  const double s = 1.0 / static_cast<double>(weight_ns);
  scale_groups(cp, s);
  scale_groups(conventional, s);
  scale_groups(single_path, s);
  for (TopActivity& a : top) a.cp *= s;
  std::sort(top.begin(), top.end(),
            [](const TopActivity& a, const TopActivity& b) { return a.cp > b.cp; });
}

}  // namespace snailtrail
