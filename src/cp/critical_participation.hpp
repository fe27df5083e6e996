// Critical participation (thesis Eq. 3.3, Algorithm 2) without materializing paths.
//
// Waiting edges are never on a critical path, so they are left out of path counting.
// f(v): paths from V_s (nodes at the earliest time) to v; b(v): paths from v to V_e
// (nodes at the latest time); N = sum of f over V_e. For an edge e = (u, v):
// c(e) = f(u) * b(v) and CP_e = c(e) * w(e) / (N * (te - ts)).
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "cp/wide_count.hpp"
#include "pag/snapshot.hpp"

namespace snailtrail {

struct CpResult {
  int64_t span_start = 0;  // time of V_s
  int64_t span_end = 0;    // time of V_e
  WideCount paths;         // N (a segmented window: the product of its segments' N)
  int64_t cp_ns = 0;       // time CP is spread over: te - ts, or the segments with paths
  bool has_paths() const { return !paths.is_zero() && cp_ns > 0; }

  BigVector<WideCount> forward;   // f per node
  BigVector<WideCount> backward;  // b per node
  BigVector<double> timeline_cp;  // per node: CP of its outgoing timeline edge (0 if none)
  BigVector<double> message_cp;   // per snapshot message edge

  uint64_t property1_violations = 0;  // nodes other than V_s with in-degree 0
  uint64_t zero_duration_cycles = 0;  // zero-duration messages dropped to break cycles
  // Segments (cp/segments.hpp): how many the window was cut into, how many have no path,
  // and the window's Property 2 violations (idle intervals) that cut it.
  uint64_t segments = 0;
  uint64_t no_path_segments = 0;
  uint64_t property2_violations = 0;
  int64_t property2_ns = 0;
  int64_t input_idle_ns = 0;  // idle time some worker waited for input (not a violation)
};

// Per-edge centrality c(e) = f(src) * b(dst).
inline WideCount timeline_centrality(const CpResult& r, uint32_t v) {
  return r.forward[v] * r.backward[v + 1];
}

class CpComputer {
 public:
  // Computes path counts and CP for one snapshot. Reuses internal buffers.
  void compute(const Snapshot& snap, CpResult& out);

  // Samples one transient critical path uniformly at random (docs/PAG.md §4) and returns
  // its edges: timeline edges as their source node v, messages as ~message index.
  // Empty when the snapshot has no path.
  std::vector<uint32_t> sample_path(const Snapshot& snap, const CpResult& r, uint64_t seed) const;

  // Snapshots with at least this many nodes compute edge CPs on two threads (same results).
  void set_split_min_nodes(size_t n) { split_min_nodes_ = n; }

 private:
  // Drops the zero-duration messages that lie on a cycle among the nodes not `done`;
  // returns how many.
  size_t drop_zero_duration_cycles(const Snapshot& snap, const std::vector<uint8_t>& done);

  // The backward pass on its own (a reverse topological order found by Kahn's
  // algorithm), for running beside the forward pass. No message may be dropped yet.
  // False if a cycle stopped it.
  bool backward_in_reverse_order(const Snapshot& snap, int64_t span_end,
                                 BigVector<WideCount>& backward);

  // The pieces of compute(), in order: Property 1 and the incoming message counts; the
  // forward pass (fused with a topological order, retried after dropping zero-duration
  // cycles; true if there were any), which joins `backward` before msg_dropped_ changes;
  // the sequential backward pass; the edges' CP.
  void count_property1(const Snapshot& snap, CpResult& out);
  bool forward_pass(const Snapshot& snap, CpResult& out, std::thread& backward);
  void forward_in_topological_order(const Snapshot& snap, CpResult& out);
  void backward_pass(const Snapshot& snap, CpResult& out);
  void edge_cp(const Snapshot& snap, CpResult& out) const;

  size_t split_min_nodes_ = size_t{1} << 20;
  BigVector<uint32_t> in_begin_;  // CSR of message edges by destination node
  BigVector<uint32_t> in_msg_;
  BigVector<uint32_t> msg_out_left_;
  BigVector<uint8_t> succ_done_;
  BigVector<uint32_t> back_ready_;
  BigVector<uint32_t> out_begin_;  // CSR of message edges by source node
  BigVector<uint32_t> out_msg_;
  BigVector<uint32_t> msg_in_;  // incoming messages not yet processed
  BigVector<uint8_t> pred_done_;
  BigVector<uint32_t> ready_;
  BigVector<uint32_t> order_;  // topological order
  BigVector<uint8_t> msg_dropped_;
};

}  // namespace snailtrail
