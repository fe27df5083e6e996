#include "cp/what_if.hpp"

#include <algorithm>
#include <array>

namespace snailtrail {

void LongestPath::prepare(const Snapshot& snap, const Pag& pag,
                          std::span<const std::pair<int64_t, int64_t>> segments) {
  snap_ = &snap;
  const size_t n = snap.node_count();
  const size_t m = snap.msg_src.size();
  start_ = 0;
  span_ = 0;
  if (n > 0) {
    const auto [lo, hi] = std::minmax_element(snap.ts.begin(), snap.ts.end());
    start_ = *lo;
    span_ = *hi - *lo;
  }
  assign_segments(snap, segments);
  const auto waiting = static_cast<uint8_t>(ActivityType::waiting);
  std::vector<uint8_t> sends(n, 0), received(n, 0);
  for (size_t i = 0; i < m; ++i) sends[snap.msg_src[i]] = 1, received[snap.msg_dst[i]] = 1;
  timeline_pred_.assign(n, 0);
  for (size_t v = 1; v < n; ++v)
    timeline_pred_[v] = snap.has_timeline_edge(static_cast<uint32_t>(v - 1)) &&
                        snap.worker[v - 1] == snap.worker[v];
  // Per node: the worker's next node (this one included) that ends a wait, or kNone.
  std::vector<uint32_t> next_wait_end(n, kNone);
  for (size_t v = n; v-- > 0;) {
    if (timeline_pred_[v] && snap.type[v - 1] == waiting)
      next_wait_end[v] = static_cast<uint32_t>(v);
    else if (v + 1 < n && timeline_pred_[v + 1])
      next_wait_end[v] = next_wait_end[v + 1];
  }
  weigh_messages(snap, pag, next_wait_end);
  build_in_lists(n);
  std::vector<uint32_t> indegree = set_release(snap, sends, received);
  order_nodes(snap, indegree);
  dist_.assign(n, 0);
  base_ = length({}, {});
}

void LongestPath::assign_segments(const Snapshot& snap,
                                  std::span<const std::pair<int64_t, int64_t>> segs) {
  seg_start_.clear();
  seg_end_.clear();
  for (const auto& [a, b] : segs) seg_start_.push_back(a), seg_end_.push_back(b);
  if (seg_start_.empty()) seg_start_.push_back(start_), seg_end_.push_back(start_ + span_);
  const size_t n = snap.node_count();
  seg_of_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    // A node at a border starts the next segment.
    const auto it = std::upper_bound(seg_start_.begin(), seg_start_.end(), snap.ts[v]);
    seg_of_[v] = it == seg_start_.begin() ? 0 : static_cast<uint32_t>(it - seg_start_.begin() - 1);
  }
  seg_len_.assign(seg_start_.size(), 0);
}

void LongestPath::weigh_messages(const Snapshot& snap, const Pag& pag,
                                 const std::vector<uint32_t>& next_wait_end) {
  const size_t m = snap.msg_src.size();
  const auto waiting = static_cast<uint8_t>(ActivityType::waiting);
  // How each receive node was reached: 0 the worker waited for it (or its timeline starts
  // there), 1 between two activities of a busy worker, 2 inside an activity.
  auto how = [&](uint32_t v) -> int {
    if (!timeline_pred_[v] || snap.type[v - 1] == waiting) return 0;
    if (snap.has_timeline_edge(v) &&
        pag.edge_instance[snap.edge[v - 1]] == pag.edge_instance[snap.edge[v]])
      return 2;
    return 1;
  };
  // Transport times of waited-for messages: per (sender, receiver, type), per type.
  auto type_of = [&](size_t i) {
    return static_cast<uint8_t>(pag.messages[snap.msg_index[i]].type);
  };
  auto key_of = [&](size_t i) {
    return (static_cast<uint64_t>(snap.worker[snap.msg_src[i]]) << 36) ^
           (static_cast<uint64_t>(snap.worker[snap.msg_dst[i]]) << 8) ^ type_of(i);
  };
  pair_min_.clear();
  std::array<double, 256> type_min;
  type_min.fill(-1);
  for (size_t i = 0; i < m; ++i) {
    const uint32_t u = snap.msg_src[i], v = snap.msg_dst[i];
    if (how(v) != 0) continue;
    const double d = static_cast<double>(snap.ts[v] - snap.ts[u]);
    auto [p, fresh] = pair_min_.try_emplace(key_of(i), d);
    if (!fresh) p->second = std::min(p->second, d);
    double& t = type_min[type_of(i)];
    t = t < 0 ? d : std::min(t, d);
  }
  msg_dst_.assign(m, kNone);
  msg_w_.assign(m, 0);
  for (size_t i = 0; i < m; ++i) {
    const uint32_t u = snap.msg_src[i], v = snap.msg_dst[i];
    double w = static_cast<double>(snap.ts[v] - snap.ts[u]);
    const int h = how(v);
    if (h == 2) {
      msg_dst_[i] = next_wait_end[v];
    } else {
      msg_dst_[i] = v;
      if (h == 1) {
        const auto p = pair_min_.find(key_of(i));
        if (p != pair_min_.end())
          w = std::min(w, p->second);
        else if (type_min[type_of(i)] >= 0)
          w = std::min(w, type_min[type_of(i)]);
      }
    }
    msg_w_[i] = w;
  }
}

// Messages by the node they hold (CSR).
void LongestPath::build_in_lists(size_t n) {
  const size_t m = msg_dst_.size();
  in_begin_.assign(n + 1, 0);
  for (size_t i = 0; i < m; ++i)
    if (msg_dst_[i] != kNone) ++in_begin_[msg_dst_[i] + 1];
  for (size_t v = 0; v < n; ++v) in_begin_[v + 1] += in_begin_[v];
  in_msg_.resize(in_begin_[n]);
  {
    std::vector<uint32_t> fill(in_begin_.begin(), in_begin_.end() - 1);
    for (size_t i = 0; i < m; ++i)
      if (msg_dst_[i] != kNone) in_msg_[fill[msg_dst_[i]]++] = static_cast<uint32_t>(i);
  }
}

std::vector<uint32_t> LongestPath::set_release(const Snapshot& snap,
                                               const std::vector<uint8_t>& sends,
                                               const std::vector<uint8_t>& received) {
  const size_t n = snap.node_count();
  const auto waiting = static_cast<uint8_t>(ActivityType::waiting);
  release_.assign(n, 0);
  std::vector<uint32_t> indegree(n, 0);
  for (size_t v = 0; v < n; ++v) {
    const bool pred = timeline_pred_[v];
    const bool after_wait = pred && snap.type[v - 1] == waiting;
    // Something starts here: an activity or a message. The end of a timeline (a last
    // wait, or an edge cut by the window) holds nothing back.
    const bool starts = snap.has_timeline_edge(static_cast<uint32_t>(v)) || sends[v];
    // Nothing in the window explains when this node happened: it keeps its time.
    if (starts && !received[v] && (!pred || after_wait))
      release_[v] = static_cast<double>(snap.ts[v] - seg_start_[seg_of_[v]]);
    indegree[v] = pred + (in_begin_[v + 1] - in_begin_[v]);
  }
  return indegree;
}

void LongestPath::order_nodes(const Snapshot& snap, std::vector<uint32_t>& indegree) {
  const size_t n = snap.node_count();
  const size_t m = snap.msg_src.size();
  // Kahn's algorithm; timelines are chains and messages the only cross links.
  std::vector<uint32_t> out_begin(n + 1, 0), out_msg(m);
  for (size_t i = 0; i < m; ++i)
    if (msg_dst_[i] != kNone) ++out_begin[snap.msg_src[i] + 1];
  for (size_t v = 0; v < n; ++v) out_begin[v + 1] += out_begin[v];
  {
    std::vector<uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (size_t i = 0; i < m; ++i)
      if (msg_dst_[i] != kNone) out_msg[fill[snap.msg_src[i]]++] = static_cast<uint32_t>(i);
  }
  order_.clear();
  std::vector<uint32_t> ready;
  for (size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(static_cast<uint32_t>(v));
  std::vector<uint8_t> done(n, 0);
  while (!ready.empty()) {
    const uint32_t v = ready.back();
    ready.pop_back();
    order_.push_back(v);
    done[v] = 1;
    if (v + 1 < n && timeline_pred_[v + 1] && --indegree[v + 1] == 0) ready.push_back(v + 1);
    for (uint32_t k = out_begin[v]; k < out_begin[v + 1]; ++k) {
      const uint32_t w = msg_dst_[out_msg[k]];
      if (--indegree[w] == 0) ready.push_back(w);
    }
  }
  // Zero-duration messages can form cycles among nodes at one instant; those nodes and
  // everything after them are relaxed to a fixed point instead (see length()).
  rest_.clear();
  for (size_t v = 0; v < n; ++v)
    if (!done[v]) rest_.push_back(static_cast<uint32_t>(v));
  std::stable_sort(rest_.begin(), rest_.end(),
                   [&](uint32_t a, uint32_t b) { return snap.ts[a] < snap.ts[b]; });
}

double LongestPath::length(std::span<const float> timeline_div,
                           std::span<const float> message_div) {
  const Snapshot& snap = *snap_;
  const auto waiting = static_cast<uint8_t>(ActivityType::waiting);
  // An edge from an earlier segment counts from the start of v's segment.
  auto relax = [&](uint32_t v) {
    double d = release_[v];
    const uint32_t k = seg_of_[v];
    const double from = static_cast<double>(seg_start_[k]);
    if (timeline_pred_[v]) {
      const uint32_t u = v - 1;
      const bool same = seg_of_[u] == k;
      double w = 0;
      if (snap.type[u] != waiting) {
        w = static_cast<double>(snap.ts[v]) - (same ? static_cast<double>(snap.ts[u]) : from);
        if (!timeline_div.empty()) w /= timeline_div[u];
      }
      d = std::max(d, (same ? dist_[u] : 0.0) + std::max(w, 0.0));
    }
    for (uint32_t q = in_begin_[v]; q < in_begin_[v + 1]; ++q) {
      const uint32_t i = in_msg_[q];
      const uint32_t u = snap.msg_src[i];
      if (seg_of_[u] > k) continue;  // a skewed message from a later segment
      double w = msg_w_[i];
      if (seg_of_[u] < k) w = std::clamp(static_cast<double>(snap.ts[v]) - from, 0.0, w);
      if (!message_div.empty()) w /= message_div[i];
      d = std::max(d, (seg_of_[u] == k ? dist_[u] : 0.0) + w);
    }
    return d;
  };
  std::fill(dist_.begin(), dist_.end(), 0.0);
  for (uint32_t v : order_) dist_[v] = relax(v);
  // Weights are >= 0 except skewed messages, and a cycle has total weight 0, so relaxing
  // in time order reaches the fixed point within |rest| + 1 rounds.
  for (size_t round = 0; round <= rest_.size(); ++round) {
    bool changed = false;
    for (uint32_t v : rest_) {
      const double d = relax(v);
      if (d != dist_[v]) {
        dist_[v] = d;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return segment_lengths(timeline_div);
}

double LongestPath::segment_lengths(std::span<const float> timeline_div) {
  const Snapshot& snap = *snap_;
  const size_t n = dist_.size();
  std::fill(seg_len_.begin(), seg_len_.end(), 0.0);
  for (size_t v = 0; v < n; ++v) {
    const uint32_t k = seg_of_[v];
    seg_len_[k] = std::max(seg_len_[k], dist_[v]);
    if (!timeline_pred_[v] || seg_of_[v - 1] == k) continue;
    // A timeline edge crossing borders: its part in each segment it covers.
    const uint32_t u = static_cast<uint32_t>(v - 1);
    if (snap.type[u] == static_cast<uint8_t>(ActivityType::waiting)) continue;
    const double div = timeline_div.empty() ? 1.0 : timeline_div[u];
    for (uint32_t j = seg_of_[u]; j < k; ++j) {
      const int64_t a = j == seg_of_[u] ? snap.ts[u] : seg_start_[j];
      const double part = static_cast<double>(seg_end_[j] - a) / div;
      seg_len_[j] = std::max(seg_len_[j], (j == seg_of_[u] ? dist_[u] : 0.0) + part);
    }
  }
  double length = 0;
  for (double x : seg_len_) length += x;
  return length;
}

}  // namespace snailtrail
