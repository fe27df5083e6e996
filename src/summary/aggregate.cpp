// Aggregate (summary/summary.hpp): the time-weighted mean of many windows' summaries.
#include <algorithm>

#include "summary/summary.hpp"

namespace snailtrail {

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
  d.input_idle_ns += x.input_idle_ns;
  d.zero_duration_cycles += x.zero_duration_cycles;
  d.segments += x.segments;
  d.no_path_segments += x.no_path_segments;
  for (int i = 0; i < kIssueCount; ++i) d.issues[i] += x.issues[i];
  for (const auto& [kind, n] : x.input) d.add_input(kind, n);
  const int64_t length = w.window.end - w.window.start;
  diag_weight_ns += length;
  covered_ns += covered_length(w);
  const bool spanned = w.span_end > w.span_start;
  covered_first = std::min(covered_first, spanned ? w.span_start : w.window.start);
  covered_last = std::max(covered_last, spanned ? w.span_end : w.window.end);
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
      // The task durations of the window with the most tasks stand for the run's.
      if (x.tasks > it->tasks) {
        it->tasks = x.tasks;
        it->task_min = x.task_min, it->task_median = x.task_median;
        it->task_p95 = x.task_p95, it->task_max = x.task_max;
      }
    }
  }
  if (!w.has_paths) return;
  verdicts.add(decide_verdict(w.cp, w.conventional, true, w.what_if, static_cast<double>(w.cp_ns),
                              input_idle_share(w)),
               w.cp_ns);
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
