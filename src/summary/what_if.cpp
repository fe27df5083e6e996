#include "summary/what_if.hpp"

#include <algorithm>
#include <numeric>

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
  return path_.base_length() - path_.length(timeline_div_, message_div_);
}

// Workers: the worker's busy time against the median of all workers' busy time. Operators:
// every instance (the operator on one worker) busier than the median instance becomes as
// fast as it. `factor` returns the speed-up of the worker, or of the busiest instance.
double WhatIfAnalyzer::saved_peer_median(WhatIfKind kind, uint32_t id, double& factor) {
  const Snapshot& s = *snap_;
  const size_t n = s.node_count();
  const size_t W = pag_.worker_count();
  std::vector<double> busy(W, 0.0);
  std::vector<uint8_t> present(W, 0);
  for (size_t v = 0; v + 1 < n; ++v) {
    if (!s.has_timeline_edge(static_cast<uint32_t>(v)) || !is_work(s.type[v])) continue;
    if (kind == WhatIfKind::op && pag_.edge_op[s.edge[v]] != id) continue;
    busy[s.worker[v]] += static_cast<double>(s.ts[v + 1] - s.ts[v]);
    present[s.worker[v]] = 1;
  }
  std::vector<double> peers;
  for (size_t w = 0; w < W; ++w)
    if (present[w]) peers.push_back(busy[w]);
  const double med = median(peers);
  factor = 1;
  if (peers.size() < 2 || !(med > 0)) return 0;
  timeline_div_.assign(n, 1.0f);
  message_div_.clear();
  std::vector<float> div(W, 1.0f);
  for (size_t w = 0; w < W; ++w) {
    if (kind == WhatIfKind::worker && w != id) continue;
    if (busy[w] > med) {
      div[w] = static_cast<float>(busy[w] / med);
      factor = std::max(factor, busy[w] / med);
    }
  }
  if (factor <= 1.0 + 1e-9) return 0;
  for (size_t v = 0; v < n; ++v) {
    if (!s.has_timeline_edge(static_cast<uint32_t>(v)) || !is_work(s.type[v])) continue;
    if (kind == WhatIfKind::op && pag_.edge_op[s.edge[v]] != id) continue;
    timeline_div_[v] = div[s.worker[v]];
  }
  return path_.base_length() - path_.length(timeline_div_, message_div_);
}

void WhatIfAnalyzer::analyze(const Snapshot& snap, const WhatIfOptions& options,
                             WindowSummary& summary) {
  summary.what_if.clear();
  if (!options.enabled || snap.node_count() == 0 || !summary.has_paths) return;
  snap_ = &snap;
  path_.prepare(snap, pag_);
  auto add = [&](WhatIfKind kind, uint32_t id, bool peer, double factor, double saved_ns) {
    // Floating-point noise is no saving.
    if (saved_ns < 0.5) return;
    summary.what_if.push_back(WhatIf{kind, id, peer, factor, saved_ns});
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
