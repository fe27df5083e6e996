#include "flow/progress.hpp"

#include <algorithm>

namespace snailtrail::flow {

std::vector<ProgressUpdate> ChangeBatch::drain() {
  std::vector<ProgressUpdate> out;
  drain_into(out);
  return out;
}

void ChangeBatch::drain_into(std::vector<ProgressUpdate>& out) {
  std::sort(updates_.begin(), updates_.end(), [](const ProgressUpdate& a, const ProgressUpdate& b) {
    return a.loc != b.loc ? a.loc < b.loc : a.time < b.time;
  });
  out.clear();
  for (const ProgressUpdate& u : updates_) {
    if (!out.empty() && out.back().loc == u.loc && out.back().time == u.time)
      out.back().delta += u.delta;
    else
      out.push_back(u);
    if (out.back().delta == 0) out.pop_back();
  }
  updates_.clear();
}

void ProgressTracker::init(uint32_t ops, const std::vector<EdgeSpec>& edges) {
  const uint32_t locs = 2 * std::max<uint32_t>(ops, static_cast<uint32_t>(edges.size())) + 2;
  counts_.assign(locs, {});
  frontier_.assign(edges.size(), 0);
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
  std::vector<std::vector<uint32_t>> targets(locs);
  source_begin_.assign(1, 0);
  sources_.clear();
  for (size_t f = 0; f < E; ++f) {
    const auto reaches = [&](uint32_t loc) {
      sources_.push_back(loc);
      targets[loc].push_back(static_cast<uint32_t>(f));
    };
    for (size_t e = 0; e < E; ++e)
      if (reach[e][f]) reaches(edge_location(static_cast<uint32_t>(e)));
    for (uint32_t op = 0; op < ops; ++op) {
      bool r = false;
      for (size_t g = 0; g < E && !r; ++g) r = edges[g].from_op == op && reach[g][f];
      if (r) reaches(output_location(op));
    }
    source_begin_.push_back(static_cast<uint32_t>(sources_.size()));
  }
  target_begin_.assign(1, 0);
  targets_.clear();
  for (const auto& t : targets) {
    targets_.insert(targets_.end(), t.begin(), t.end());
    target_begin_.push_back(static_cast<uint32_t>(targets_.size()));
  }
  least_.assign(locs, kTimeMax);
  loc_dirty_.assign(locs, 0);
  dirty_locs_.clear();
  nonzero_ = 0;
  // The first recompute() sets every edge's frontier (kTimeMax where nothing is held).
  edge_dirty_.assign(E, 1);
  dirty_edges_.resize(E);
  for (size_t f = 0; f < E; ++f) dirty_edges_[f] = static_cast<uint32_t>(f);
}

void ProgressTracker::apply(const ProgressUpdate* u, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto& v = counts_[u[i].loc];
    // Times mostly arrive in order: look at the back first.
    auto it = !v.empty() && v.back().time < u[i].time
                  ? v.end()
                  : std::lower_bound(v.begin(), v.end(), u[i].time,
                                     [](const Count& c, Time t) { return c.time < t; });
    const bool found = it != v.end() && it->time == u[i].time;
    const int64_t before = found ? it->count : 0, after = before + u[i].delta;
    if (found && after == 0) {
      v.erase(it);
      --nonzero_;
    } else if (found) {
      it->count = after;
    } else if (after != 0) {
      v.insert(it, Count{u[i].time, after});
      ++nonzero_;
    }
    // Only a count crossing zero can move the location's least positive time.
    if ((before > 0) != (after > 0) && !loc_dirty_[u[i].loc]) {
      loc_dirty_[u[i].loc] = 1;
      dirty_locs_.push_back(u[i].loc);
    }
  }
}

Time ProgressTracker::held(uint32_t loc) const {
  for (const Count& c : counts_[loc])
    if (c.count > 0) return c.time;
  return kTimeMax;
}

uint64_t ProgressTracker::recompute() {
  for (uint32_t loc : dirty_locs_) {
    loc_dirty_[loc] = 0;
    const Time t = held(loc);
    if (t == least_[loc]) continue;
    least_[loc] = t;
    for (uint32_t i = target_begin_[loc]; i < target_begin_[loc + 1]; ++i)
      if (!edge_dirty_[targets_[i]]) {
        edge_dirty_[targets_[i]] = 1;
        dirty_edges_.push_back(targets_[i]);
      }
  }
  dirty_locs_.clear();
  uint64_t backwards = 0;
  for (uint32_t f : dirty_edges_) {
    edge_dirty_[f] = 0;
    Time t = kTimeMax;
    for (uint32_t i = source_begin_[f]; i < source_begin_[f + 1]; ++i)
      t = std::min(t, least_[sources_[i]]);
    if (t < frontier_[f]) ++backwards;
    frontier_[f] = t;
  }
  dirty_edges_.clear();
  return backwards;
}

}  // namespace snailtrail::flow
