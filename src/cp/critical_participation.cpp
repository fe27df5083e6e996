#include "cp/critical_participation.hpp"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "trace/random.hpp"

namespace snailtrail {
namespace {

// x counted `mult` times: a message edge standing for parallel pieces (Snapshot::msg_mult).
inline WideCount times(const WideCount& x, uint32_t mult) {
  return mult == 1 ? x : x * WideCount::from_double(static_cast<double>(mult));
}

// Message edges k grouped by node_of[k] (their source or destination) as a CSR: those of
// node v are list[begin[v] .. begin[v + 1]), in increasing k.
void build_csr(uint32_t n, const BigVector<uint32_t>& node_of, BigVector<uint32_t>& begin,
               BigVector<uint32_t>& list) {
  const uint32_t m = static_cast<uint32_t>(node_of.size());
  begin.assign(n + 1, 0);
  for (uint32_t k = 0; k < m; ++k) ++begin[node_of[k] + 1];
  for (uint32_t v = 0; v < n; ++v) begin[v + 1] += begin[v];
  list.resize(m);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  for (uint32_t k = 0; k < m; ++k) list[fill[node_of[k]]++] = k;
}

}  // namespace

size_t CpComputer::drop_zero_duration_cycles(const Snapshot& snap,
                                             const std::vector<uint8_t>& done) {
  // The candidate edges: live zero-duration messages between nodes not yet ordered.
  const uint32_t m = static_cast<uint32_t>(snap.msg_src.size());
  std::vector<uint32_t> cand;
  for (uint32_t k = 0; k < m; ++k)
    if (!msg_dropped_[k] && !done[snap.msg_src[k]] && !done[snap.msg_dst[k]] &&
        snap.ts[snap.msg_src[k]] == snap.ts[snap.msg_dst[k]])
      cand.push_back(k);
  // Local ids for their endpoints, and a CSR of the candidate edges.
  std::unordered_map<uint32_t, uint32_t> local;
  std::vector<uint32_t> node_of;
  auto id = [&](uint32_t v) {
    auto [it, inserted] = local.try_emplace(v, static_cast<uint32_t>(node_of.size()));
    if (inserted) node_of.push_back(v);
    return it->second;
  };
  for (uint32_t k : cand) id(snap.msg_src[k]), id(snap.msg_dst[k]);
  const uint32_t L = static_cast<uint32_t>(node_of.size());
  std::vector<uint32_t> begin(L + 1, 0), adj(cand.size());
  for (uint32_t k : cand) ++begin[local[snap.msg_src[k]] + 1];
  for (uint32_t i = 0; i < L; ++i) begin[i + 1] += begin[i];
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t k : cand) adj[fill[local[snap.msg_src[k]]]++] = local[snap.msg_dst[k]];
  }
  // Tarjan's strongly connected components, iteratively.
  constexpr uint32_t kUnvisited = UINT32_MAX;
  std::vector<uint32_t> index(L, kUnvisited), low(L, 0), comp(L, kUnvisited), stack, edge_pos(L);
  std::vector<uint8_t> on_stack(L, 0);
  std::vector<uint32_t> call;
  uint32_t next_index = 0, components = 0;
  for (uint32_t root = 0; root < L; ++root) {
    if (index[root] != kUnvisited) continue;
    call.push_back(root);
    index[root] = low[root] = next_index++;
    edge_pos[root] = begin[root];
    stack.push_back(root);
    on_stack[root] = 1;
    while (!call.empty()) {
      const uint32_t v = call.back();
      if (edge_pos[v] < begin[v + 1]) {
        const uint32_t w = adj[edge_pos[v]++];
        if (index[w] == kUnvisited) {
          index[w] = low[w] = next_index++;
          edge_pos[w] = begin[w];
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back(w);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      call.pop_back();
      if (!call.empty()) low[call.back()] = std::min(low[call.back()], low[v]);
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = components;
        } while (w != v);
        ++components;
      }
    }
  }
  size_t dropped = 0;
  for (uint32_t k : cand)
    if (comp[local[snap.msg_src[k]]] == comp[local[snap.msg_dst[k]]]) {
      msg_dropped_[k] = 1;
      ++dropped;
    }
  return dropped;
}

bool CpComputer::backward_in_reverse_order(const Snapshot& snap, int64_t span_end,
                                           BigVector<WideCount>& backward) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  // CSR of message edges by destination, and per node the messages still to finish.
  build_csr(n, snap.msg_dst, in_begin_, in_msg_);
  msg_out_left_.resize(n);
  succ_done_.resize(n);
  back_ready_.clear();
  for (uint32_t v = 0; v < n; ++v) {
    msg_out_left_[v] = out_begin_[v + 1] - out_begin_[v];
    succ_done_[v] = snap.edge[v] == kNone;
    if (succ_done_[v] && msg_out_left_[v] == 0) back_ready_.push_back(v);
  }
  // Kahn's algorithm on the reversed graph at chain granularity: walk a chain backwards
  // until a node still waits for the destination of one of its messages.
  uint32_t finished = 0;
  while (!back_ready_.empty()) {
    uint32_t v = back_ready_.back();
    back_ready_.pop_back();
    for (;;) {
      WideCount b;
      if (snap.ts[v] == span_end) b = WideCount::one();
      if (snap.counts(v)) b += backward[v + 1];
      for (uint32_t q = out_begin_[v]; q < out_begin_[v + 1]; ++q) {
        const uint32_t k = out_msg_[q];
        b += times(backward[snap.msg_dst[k]], snap.mult(k));
      }
      backward[v] = b;
      ++finished;
      for (uint32_t q = in_begin_[v]; q < in_begin_[v + 1]; ++q) {
        const uint32_t src = snap.msg_src[in_msg_[q]];
        if (--msg_out_left_[src] == 0 && succ_done_[src]) back_ready_.push_back(src);
      }
      if (v == 0 || snap.edge[v - 1] == kNone) break;
      const uint32_t prev = v - 1;
      succ_done_[prev] = 1;
      if (msg_out_left_[prev] != 0) break;  // resumed by its last message's destination
      v = prev;
    }
  }
  return finished == n;
}

void CpComputer::compute(const Snapshot& snap, CpResult& out) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  const uint32_t m = static_cast<uint32_t>(snap.msg_src.size());
  out.paths = WideCount();
  out.property1_violations = 0;
  out.zero_duration_cycles = 0;
  out.cp_ns = 0;
  out.segments = out.no_path_segments = 0;
  // Not zeroed here: the passes below write every element (BigVector leaves them as
  // they were), except where noted.
  out.forward.resize(n);
  out.backward.resize(n);
  out.timeline_cp.resize(n);
  out.message_cp.resize(m);
  if (n == 0) {
    out.span_start = out.span_end = snap.window.start;
    return;
  }
  out.span_start = *std::min_element(snap.ts.begin(), snap.ts.end());
  out.span_end = *std::max_element(snap.ts.begin(), snap.ts.end());
  out.cp_ns = out.span_end - out.span_start;

  // CSR of message edges by source.
  build_csr(n, snap.msg_src, out_begin_, out_msg_);
  msg_dropped_.assign(m, 0);
  count_property1(snap, out);

  // Large snapshots: the backward pass runs at the same time on a second thread, in its
  // own reverse topological order. It adds the same terms in the same order as the
  // sequential pass below, so the results are bit-identical; it is discarded (and the
  // sequential pass runs) when the forward pass has to break zero-duration cycles.
  std::thread backward_thread;
  bool backward_done = false;
  if (n >= split_min_nodes_) {
    backward_thread = std::thread(
        [&] { backward_done = backward_in_reverse_order(snap, out.span_end, out.backward); });
  }
  const bool had_cycles = forward_pass(snap, out, backward_thread);
  if (backward_thread.joinable()) backward_thread.join();
  if (!backward_done || had_cycles) backward_pass(snap, out);
  for (uint32_t v = 0; v < n; ++v)
    if (snap.ts[v] == out.span_end) out.paths += out.forward[v];
  out.segments = out.cp_ns > 0;
  out.no_path_segments = out.segments && !out.has_paths();
  if (!out.has_paths()) {
    std::fill(out.timeline_cp.begin(), out.timeline_cp.end(), 0.0);
    std::fill(out.message_cp.begin(), out.message_cp.end(), 0.0);
    return;
  }
  edge_cp(snap, out);
}

// Incoming messages per node; Property 1 on the full snapshot (waiting edges included).
void CpComputer::count_property1(const Snapshot& snap, CpResult& out) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  const uint32_t m = static_cast<uint32_t>(snap.msg_src.size());
  msg_in_.assign(n, 0);
  for (uint32_t k = 0; k < m; ++k) ++msg_in_[snap.msg_dst[k]];
  for (uint32_t v = 0; v < n; ++v) {
    const bool has_pred = v > 0 && snap.edge[v - 1] != kNone;
    if (!has_pred && msg_in_[v] == 0 && snap.ts[v] != out.span_start) ++out.property1_violations;
  }
}

// Every edge goes forward in time except zero-duration messages, which may close a
// cycle among nodes of one instant; those messages are dropped and counted, and the
// forward pass runs again.
bool CpComputer::forward_pass(const Snapshot& snap, CpResult& out, std::thread& backward) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  const uint32_t m = static_cast<uint32_t>(snap.msg_src.size());
  bool had_cycles = false;
  for (;;) {
    forward_in_topological_order(snap, out);
    if (order_.size() == n) break;
    had_cycles = true;
    // The concurrent backward pass saw the same cycles and stopped short; msg_dropped_
    // changes below, so wait for it first.
    if (backward.joinable()) backward.join();
    // Nodes left over lie on or after a cycle. Timeline edges always move forward in
    // time, so a cycle is made of zero-duration messages only: drop the zero-duration
    // messages inside a strongly connected component of those, and retry.
    std::vector<uint8_t> done(n, 0);
    for (uint32_t v : order_) done[v] = 1;
    const size_t dropped = drop_zero_duration_cycles(snap, done);
    out.zero_duration_cycles += dropped;
    if (dropped == 0) break;  // cannot happen: only zero-duration edges can close cycles
    msg_in_.assign(n, 0);
    for (uint32_t k = 0; k < m; ++k)
      if (!msg_dropped_[k]) ++msg_in_[snap.msg_dst[k]];
  }
  return had_cycles;
}

// Topological order fused with the forward pass. Timelines are chains (v -> v + 1), so
// this is Kahn's algorithm at chain granularity: walk a chain until a node still waits
// for a message, and resume that chain when its last message has been processed. Nodes
// on or after a cycle are left out of order_.
void CpComputer::forward_in_topological_order(const Snapshot& snap, CpResult& out) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  ready_.clear();
  order_.clear();
  pred_done_.assign(n, 0);
  for (uint32_t v = 0; v < n; ++v) {
    out.forward[v] = WideCount();
    const bool has_pred = v > 0 && snap.edge[v - 1] != kNone;
    if (!has_pred) pred_done_[v] = 1;
    if (!has_pred && msg_in_[v] == 0) ready_.push_back(v);
  }
  while (!ready_.empty()) {
    uint32_t v = ready_.back();
    ready_.pop_back();
    for (;;) {
      order_.push_back(v);
      WideCount f = out.forward[v];
      if (snap.ts[v] == out.span_start) f += WideCount::one();
      out.forward[v] = f;
      const bool counted = snap.counts(v);
      for (uint32_t q = out_begin_[v]; q < out_begin_[v + 1]; ++q) {
        const uint32_t k = out_msg_[q];
        if (msg_dropped_[k]) continue;
        const uint32_t d = snap.msg_dst[k];
        out.forward[d] += times(f, snap.mult(k));
        if (--msg_in_[d] == 0 && pred_done_[d]) ready_.push_back(d);
      }
      if (snap.edge[v] == kNone) break;
      const uint32_t next = v + 1;
      if (counted) out.forward[next] += f;
      pred_done_[next] = 1;
      if (msg_in_[next] != 0) break;  // resumed by its last message
      v = next;
    }
  }
}

// Backward pass in reverse topological order.
void CpComputer::backward_pass(const Snapshot& snap, CpResult& out) {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  // Nodes left out of the order (none, unless cycles remained) keep b = 0.
  if (order_.size() != n) out.backward.assign(n, WideCount());
  for (size_t i = order_.size(); i-- > 0;) {
    uint32_t v = order_[i];
    WideCount b;
    if (snap.ts[v] == out.span_end) b = WideCount::one();
    if (snap.counts(v)) b += out.backward[v + 1];
    for (uint32_t q = out_begin_[v]; q < out_begin_[v + 1]; ++q) {
      uint32_t k = out_msg_[q];
      if (!msg_dropped_[k]) b += times(out.backward[snap.msg_dst[k]], snap.mult(k));
    }
    out.backward[v] = b;
  }
}

// CP_e = f(u) b(v) w(e) / (N (te - ts)).
// Every edge's CP is independent of the others': large windows split the timeline edges
// between two threads (same results).
void CpComputer::edge_cp(const Snapshot& snap, CpResult& out) const {
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  const uint32_t m = static_cast<uint32_t>(snap.msg_src.size());
  const double span = static_cast<double>(out.span_end - out.span_start);
  auto timeline_range = [&](uint32_t from, uint32_t to) {
    for (uint32_t v = from; v < to; ++v) {
      if (!snap.counts(v)) {
        out.timeline_cp[v] = 0;
        continue;
      }
      double share = ratio(out.forward[v] * out.backward[v + 1], out.paths);
      out.timeline_cp[v] = share * static_cast<double>(snap.ts[v + 1] - snap.ts[v]) / span;
    }
  };
  const uint32_t last = n - 1;  // edges leave nodes [0, n - 1)
  std::thread second;
  uint32_t mid = last;
  if (n >= split_min_nodes_ && last > 1) {
    mid = last / 2;
    second = std::thread(timeline_range, mid, last);
  }
  timeline_range(0, mid);
  out.timeline_cp[last] = 0;
  for (uint32_t k = 0; k < m; ++k) {
    if (msg_dropped_[k]) {
      out.message_cp[k] = 0;
      continue;
    }
    uint32_t s = snap.msg_src[k], d = snap.msg_dst[k];
    double share = ratio(out.forward[s] * out.backward[d], out.paths);
    out.message_cp[k] = share * static_cast<double>(snap.ts[d] - snap.ts[s]) / span;
  }
  if (second.joinable()) second.join();
}

std::vector<uint32_t> CpComputer::sample_path(const Snapshot& snap, const CpResult& r,
                                              uint64_t seed) const {
  std::vector<uint32_t> path;
  if (!r.has_paths()) return path;
  uint64_t rng = seed;  // splitmix64 state
  const uint32_t n = static_cast<uint32_t>(snap.node_count());
  // Start at v in V_s with probability b(v) / N' where N' = sum over V_s of b(v) = N.
  double u = splitmix64_uniform(rng);
  uint32_t v = kNone, last_start = kNone;
  for (uint32_t x = 0; x < n && v == kNone; ++x) {
    if (snap.ts[x] != r.span_start || r.backward[x].is_zero()) continue;
    last_start = x;
    u -= ratio(r.backward[x], r.paths);
    if (u < 0) v = x;
  }
  if (v == kNone) v = last_start;  // rounding
  // Walk: at v, stop (if v is in V_e) with weight 1, or take edge (v, w) with weight b(w).
  for (;;) {
    u = splitmix64_uniform(rng);
    const WideCount& bv = r.backward[v];
    if (snap.ts[v] == r.span_end) {
      u -= ratio(WideCount::one(), bv);
      if (u < 0) break;
    }
    uint32_t next = kNone, next_edge = kNone;
    if (snap.counts(v) && !r.backward[v + 1].is_zero()) {
      next = v + 1;
      next_edge = v;
      u -= ratio(r.backward[v + 1], bv);
    }
    if (u >= 0) {
      for (uint32_t q = out_begin_[v]; q < out_begin_[v + 1]; ++q) {
        uint32_t k = out_msg_[q];
        if (msg_dropped_[k] || r.backward[snap.msg_dst[k]].is_zero()) continue;
        next = snap.msg_dst[k];
        next_edge = ~k;
        u -= ratio(times(r.backward[next], snap.mult(k)), bv);
        if (u < 0) break;
      }
    }
    if (next == kNone) break;  // only V_e nodes have no way on
    path.push_back(next_edge);
    v = next;
  }
  return path;
}

}  // namespace snailtrail
