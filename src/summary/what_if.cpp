#include "summary/what_if.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "summary/summary.hpp"

namespace snailtrail {
namespace {

// Timeline edges whose time a faster worker or operator would shorten: its own work,
// not waiting, not time nobody explained, and not `input`: waiting for input from outside
// (the next batch to be due, records to arrive), which a faster worker does not bring
// sooner (docs/PAG.md §5; the activity type `input` can still be sped up by itself).
bool is_work(uint8_t type) {
  return type != kNoEdge && type != static_cast<uint8_t>(ActivityType::waiting) &&
         type != static_cast<uint8_t>(ActivityType::unknown) &&
         type != static_cast<uint8_t>(ActivityType::input);
}

bool is_message_type(uint32_t t) {
  return t == static_cast<uint32_t>(ActivityType::data_message) ||
         t == static_cast<uint32_t>(ActivityType::control_message);
}

// The ids of the `n` largest positive values, largest first (ties: smaller id first).
template <typename Id>
std::vector<Id> top_ids(std::vector<std::pair<Id, double>> items, size_t n) {
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<Id> out;
  for (const auto& [id, v] : items) {
    if (out.size() == n || !(v > 0)) break;
    out.push_back(id);
  }
  return out;
}

// Peers needed for a peer median: fewer give no meaningful "typical" instance.
constexpr size_t kMinPeers = 3;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

const char* name_of(WhatIfKind kind) {
  switch (kind) {
    case WhatIfKind::worker:
      return "worker";
    case WhatIfKind::op:
      return "operator";
    case WhatIfKind::activity:
      return "activity";
  }
  return "?";
}

double WhatIfAnalyzer::saved(WhatIfKind kind, uint32_t id, double factor) {
  const Snapshot& s = *snap_;
  const size_t n = s.node_count();
  timeline_div_.assign(n, 1.0f);
  message_div_.clear();
  const float f = static_cast<float>(factor);
  for (size_t v = 0; v < n; ++v) {
    if (!s.has_timeline_edge(static_cast<uint32_t>(v))) continue;
    bool pick = false;
    if (kind == WhatIfKind::worker)
      pick = s.worker[v] == id && is_work(s.type[v]);
    else if (kind == WhatIfKind::op)
      pick = pag_.edge_op[s.edge[v]] == id && is_work(s.type[v]);
    else
      pick = s.type[v] == id;
    if (pick) timeline_div_[v] = f;
  }
  if (kind == WhatIfKind::activity && is_message_type(id)) {
    message_div_.assign(s.msg_src.size(), 1.0f);
    for (size_t i = 0; i < message_div_.size(); ++i)
      if (static_cast<uint32_t>(pag_.messages[s.msg_index[i]].type) == id) message_div_[i] = f;
  }
  return std::max(0.0, path_.base_length() - path_.length(timeline_div_, message_div_));
}

// Peers run the same operator: every instance of an operator (the operator on one
// worker) busier than the median instance becomes as fast as it, for operators with at
// least kMinPeers instances. For an operator, its instances; for a worker, its instance of
// every operator it runs (work outside operators has no peers). Unrelated threads are no
// peers: a profiler's helper thread is no yardstick for its main thread. `factor` returns
// the largest speed-up applied.
double WhatIfAnalyzer::saved_peer_median(WhatIfKind kind, uint32_t id, double& factor) {
  const Snapshot& s = *snap_;
  const size_t n = s.node_count();
  const size_t W = pag_.worker_count();
  factor = 1;
  auto considered = [&](size_t v) {
    if (!s.has_timeline_edge(static_cast<uint32_t>(v)) || !is_work(s.type[v])) return false;
    const uint32_t op = pag_.edge_op[s.edge[v]];
    if (op == kNone) return false;
    return kind == WhatIfKind::worker ? true : op == id;
  };
  // Busy time per (operator, worker).
  std::unordered_map<uint32_t, std::vector<double>> busy;  // operator -> per worker (-1: absent)
  for (size_t v = 0; v + 1 < n; ++v) {
    if (!considered(v)) continue;
    auto [it, fresh] = busy.try_emplace(pag_.edge_op[s.edge[v]]);
    if (fresh) it->second.assign(W, -1.0);
    double& b = it->second[s.worker[v]];
    b = std::max(b, 0.0) + static_cast<double>(s.ts[v + 1] - s.ts[v]);
  }
  std::unordered_map<uint32_t, std::vector<float>> div;  // operator -> per worker divisor
  for (const auto& [op, per_worker] : busy) {
    std::vector<double> peers;
    for (double b : per_worker)
      if (b >= 0) peers.push_back(b);
    const double med = median(peers);
    if (peers.size() < kMinPeers || !(med > 0)) continue;
    if (kind == WhatIfKind::worker && !(id < W && per_worker[id] >= 0)) continue;
    std::vector<float>& d = div[op];
    d.assign(W, 1.0f);
    for (size_t w = 0; w < W; ++w) {
      if (kind == WhatIfKind::worker && w != id) continue;
      if (per_worker[w] > med) {
        d[w] = static_cast<float>(per_worker[w] / med);
        factor = std::max(factor, per_worker[w] / med);
      }
    }
  }
  if (factor <= 1.0 + 1e-9) return 0;
  timeline_div_.assign(n, 1.0f);
  message_div_.clear();
  for (size_t v = 0; v < n; ++v) {
    if (!considered(v)) continue;
    const auto it = div.find(pag_.edge_op[s.edge[v]]);
    if (it != div.end()) timeline_div_[v] = it->second[s.worker[v]];
  }
  return std::max(0.0, path_.base_length() - path_.length(timeline_div_, message_div_));
}

// The durations of the operator's tasks: a task is a run of the operator's work on one
// worker with nothing else between (a Spark task's deserialize, compute and write).
void WhatIfAnalyzer::measure_tasks(uint32_t op, WhatIf& row) const {
  const Snapshot& s = *snap_;
  auto of_op = [&](size_t v) {
    return s.has_timeline_edge(static_cast<uint32_t>(v)) && is_work(s.type[v]) &&
           pag_.edge_op[s.edge[v]] == op;
  };
  std::vector<double> d;
  bool open = false;
  for (size_t v = 0; v + 1 < s.node_count(); ++v) {
    if (!of_op(v)) {
      open = false;
      continue;
    }
    const bool continues = open && v > 0 && s.worker[v - 1] == s.worker[v];
    if (!continues) d.push_back(0);
    d.back() += static_cast<double>(s.ts[v + 1] - s.ts[v]);
    open = true;
  }
  if (d.empty()) return;
  std::sort(d.begin(), d.end());
  // Nearest rank: the smallest duration with at least q of the instances at or below it.
  auto rank = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(d.size())));
    return static_cast<float>(d[std::clamp<size_t>(k, 1, d.size()) - 1]);
  };
  row.tasks = static_cast<uint32_t>(d.size());
  row.task_min = static_cast<float>(d.front());
  row.task_median = static_cast<float>(median(d));
  row.task_p95 = rank(0.95);
  row.task_max = static_cast<float>(d.back());
}

void WhatIfAnalyzer::analyze(const Snapshot& snap, const WhatIfOptions& options,
                             WindowSummary& summary,
                             std::span<const std::pair<int64_t, int64_t>> segments) {
  summary.what_if.clear();
  if (!options.enabled || snap.node_count() == 0 || !summary.has_paths) return;
  snap_ = &snap;
  path_.prepare(snap, pag_, segments);
  // A speed-up that saves nothing is a row too (its saving 0: something else holds the
  // path); floating-point noise is no saving. A peer median with no peers is no row.
  auto add = [&](WhatIfKind kind, uint32_t id, bool peer, double factor, double saved_ns) {
    if (peer && factor <= 1.0 + 1e-9) return;
    summary.what_if.push_back(
        WhatIf{kind, id, peer, factor, saved_ns < 0.5 ? 0.0 : saved_ns, 0, 0, 0, 0, 0});
    if (kind == WhatIfKind::op && !peer) measure_tasks(id, summary.what_if.back());
  };

  std::vector<std::pair<uint32_t, double>> workers;
  for (size_t w = 0; w < summary.cp.worker.size(); ++w)
    workers.emplace_back(static_cast<uint32_t>(w), summary.cp.worker[w]);
  for (uint32_t w : top_ids(workers, options.per_kind)) {
    add(WhatIfKind::worker, w, false, options.speedup,
        saved(WhatIfKind::worker, w, options.speedup));
    double f = 1;
    const double s = saved_peer_median(WhatIfKind::worker, w, f);
    add(WhatIfKind::worker, w, true, f, s);
  }
  for (uint32_t op : top_ids(summary.cp.op, options.per_kind)) {
    if (op == kNone) continue;
    add(WhatIfKind::op, op, false, options.speedup, saved(WhatIfKind::op, op, options.speedup));
    double f = 1;
    const double s = saved_peer_median(WhatIfKind::op, op, f);
    add(WhatIfKind::op, op, true, f, s);
  }
  std::vector<std::pair<uint32_t, double>> types;
  for (uint32_t t = 0; t < kActivityTypeCount; ++t)
    if (t != static_cast<uint32_t>(ActivityType::waiting) &&
        t != static_cast<uint32_t>(ActivityType::unknown))
      types.emplace_back(t, summary.cp.activity[t]);
  for (uint32_t t : top_ids(types, options.per_kind))
    add(WhatIfKind::activity, t, false, options.speedup,
        saved(WhatIfKind::activity, t, options.speedup));

  std::stable_sort(summary.what_if.begin(), summary.what_if.end(),
                   [](const WhatIf& a, const WhatIf& b) { return a.saved_ns > b.saved_ns; });
}

}  // namespace snailtrail
