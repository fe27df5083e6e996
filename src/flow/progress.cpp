#include "flow/progress.hpp"

#include <algorithm>

namespace snailtrail::flow {

std::vector<ProgressUpdate> ChangeBatch::drain() {
  std::sort(updates_.begin(), updates_.end(), [](const ProgressUpdate& a, const ProgressUpdate& b) {
    return a.loc != b.loc ? a.loc < b.loc : a.time < b.time;
  });
  std::vector<ProgressUpdate> out;
  for (const ProgressUpdate& u : updates_) {
    if (!out.empty() && out.back().loc == u.loc && out.back().time == u.time)
      out.back().delta += u.delta;
    else
      out.push_back(u);
    if (out.back().delta == 0) out.pop_back();
  }
  updates_.clear();
  return out;
}

void ProgressTracker::init(uint32_t ops, const std::vector<EdgeSpec>& edges) {
  const uint32_t locs = 2 * std::max<uint32_t>(ops, static_cast<uint32_t>(edges.size())) + 2;
  counts_.assign(locs, {});
  frontier_.assign(edges.size(), 0);
  sources_.assign(edges.size(), {});
  // reach[e][f]: a message on edge e can cause one on edge f (or e == f).
  const size_t E = edges.size();
  std::vector<std::vector<bool>> reach(E, std::vector<bool>(E, false));
  // Operators are created in topological order, so edges out of an operator come after
  // the edges into it: a reverse pass sees every successor's reach first.
  for (size_t e = E; e-- > 0;) {
    reach[e][e] = true;
    for (size_t g = 0; g < E; ++g)
      if (edges[g].from_op == edges[e].to_op)
        for (size_t f = 0; f < E; ++f)
          if (reach[g][f]) reach[e][f] = true;
  }
  for (size_t f = 0; f < E; ++f) {
    for (size_t e = 0; e < E; ++e)
      if (reach[e][f]) sources_[f].push_back(edge_location(static_cast<uint32_t>(e)));
    for (uint32_t op = 0; op < ops; ++op) {
      bool r = false;
      for (size_t g = 0; g < E && !r; ++g) r = edges[g].from_op == op && reach[g][f];
      if (r) sources_[f].push_back(output_location(op));
    }
  }
}

void ProgressTracker::apply(const ProgressUpdate* u, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto& m = counts_[u[i].loc];
    auto [it, inserted] = m.try_emplace(u[i].time, 0);
    if (it->second == 0) ++nonzero_;
    it->second += u[i].delta;
    if (it->second == 0) {
      --nonzero_;
      m.erase(it);
    }
  }
}

Time ProgressTracker::held(uint32_t loc) const {
  for (const auto& [t, c] : counts_[loc])
    if (c > 0) return t;
  return kTimeMax;
}

uint64_t ProgressTracker::recompute() {
  uint64_t backwards = 0;
  for (size_t f = 0; f < frontier_.size(); ++f) {
    Time t = kTimeMax;
    for (uint32_t loc : sources_[f]) t = std::min(t, held(loc));
    if (t < frontier_[f]) ++backwards;
    frontier_[f] = t;
  }
  return backwards;
}

}  // namespace snailtrail::flow
