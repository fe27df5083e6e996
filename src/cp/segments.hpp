// Segmented critical participation (docs/PAG.md §4): a window is cut into segments at
// its idle intervals (Property 2 violations), where a worker's timeline begins with no
// message arriving, and where a wait ends with no message arriving; each segment gets the thesis'
// CP with its own V_s / V_e, and the segments are combined weighted by their duration.
//
// Combining by duration is the thesis formula applied to concatenated paths: a path of
// the window is one transient path of every segment with paths, so N = prod_k N_k,
// c(e) = c_k(e) * prod_{j != k} N_j for an edge e of segment k, and
//   CP_e = c(e) w(e) / (N T) = CP_k(e) * T_k / T,   T = sum_k T_k (segments with paths),
// which sums to 1 over the window whenever one segment has a path.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cp/critical_participation.hpp"

namespace snailtrail {

// The segments of one window snapshot.
struct SegmentPlan {
  int64_t span_start = 0, span_end = 0;  // earliest and latest node time
  // Maximal intervals of [span_start, span_end] where no timeline edge but waiting ones is
  // present and no message is in flight.
  std::vector<std::pair<int64_t, int64_t>> idle;
  // Of that idle time, what some worker spent waiting for its input (a waiting edge of a
  // source operator: the job keeps up, input-bound), and the rest: the Property 2
  // violations (intervals with time no input wait covers, and that time).
  int64_t input_idle_ns = 0;
  uint64_t property2_violations = 0;
  int64_t property2_ns = 0;
  // [span_start, span_end] cut at every border, in time order: the segments and the idle
  // intervals. Only the last part may own its end instant (closed_end: zero-duration
  // messages there belong to it), when the window does.
  struct Part {
    Window window;
    bool idle;
  };
  std::vector<Part> parts;
  size_t segments = 0;  // parts that are not idle
  // True when the window is one segment spanning [span_start, span_end]: the thesis case.
  bool whole() const { return parts.size() <= 1 && idle.empty(); }
};

// Finds the idle intervals and segments of a window snapshot of `pag` (a waiting edge with
// an operator is a wait for input, docs/RUNTIME.md). Segment borders:
// the span's ends, the ends of idle intervals, the first node of a worker's timeline
// after span_start where no message arrives, and the end of every waiting edge that ends
// (not cut by the window) at a node where no message arrives.
void plan_segments(const Pag& pag, const Snapshot& snap, SegmentPlan& plan);

// The planners' lists of a window (its busy time, input waits, borders) are kept on each
// thread for the next window up to this many bytes each, and freed when larger.
inline constexpr size_t kPlanScratchKeptBytes = size_t{4} << 20;
// Bytes the largest of the calling thread's planner lists holds now (for tests).
size_t plan_scratch_bytes();

// The same plan straight from the PAG, without the window's snapshot (a segmented window
// is snapshotted only part by part). Windows in increasing time order, as Snapshotter.
class SegmentPlanner {
 public:
  explicit SegmentPlanner(const Pag& pag) : pag_(pag), scan_(pag) {}
  void plan(const Window& window, SegmentPlan& plan);

 private:
  const Pag& pag_;
  Snapshotter scan_;
  std::vector<Snapshotter::Range> ranges_;
  std::vector<uint32_t> messages_;
};

// Computes the CP of a window cut into segments (plan not whole): every part is
// snapshotted from the PAG like a window and every segment analyzed on its own; `snap`
// is then replaced by the parts' snapshots laid side by side (worker by worker, part by
// part: a worker's timeline is broken at each border by a pair of nodes at the same
// time; idle parts keep their edges, with CP 0, for the conventional profile) and `out`
// by the combined result (see above). `sample_seed` (if not null) samples
// one path per segment into `sampled` (edges of the combined snapshot).
class SegmentedCp {
 public:
  explicit SegmentedCp(const Pag& pag) : pag_(pag), snapshotter_(pag) {}
  void set_split_min_nodes(size_t n) { computer_.set_split_min_nodes(n); }
  // Off: every clipped piece stays its own edge (the reference the tests compare with).
  void set_merge_pieces(bool on) { merge_pieces_ = on; }
  // Off: the combined result's forward and backward are left empty (AnalysisOptions).
  void set_path_counts(bool on) { path_counts_ = on; }
  void compute(const SegmentPlan& plan, Snapshot& snap, CpResult& out, const uint64_t* sample_seed,
               std::vector<uint32_t>& sampled);

 private:
  struct Totals {  // over the segments analyzed on their own
    int64_t cp_ns = 0;
    uint64_t property1 = 0, cycles = 0, without_paths = 0;
  };
  // Where the parts' nodes and messages go in the combined snapshot.
  struct Layout {
    std::vector<uint32_t> node_base, msg_base;  // per part, in its own numbering
    std::vector<uint32_t> place;                // (part, node) -> combined node
  };
  Totals analyze_parts(const SegmentPlan& plan, const uint64_t* sample_seed);
  Layout lay_out(size_t parts) const;
  void combine(const Layout& layout, size_t parts, int64_t T, Snapshot& snap, CpResult& out,
               std::vector<uint32_t>& sampled);

  const Pag& pag_;
  Snapshotter snapshotter_;
  CpComputer computer_;
  std::vector<Snapshot> snaps_;
  std::vector<CpResult> results_;
  std::vector<std::vector<uint32_t>> paths_;
  Snapshot combined_;
  bool merge_pieces_ = true;
  bool path_counts_ = true;
};

// Merges a part's pieces of messages in flight across all of it (see SegmentedCp):
// parallel edges with the same endpoints and message type become one edge with
// Snapshot::msg_mult. Messages that start or end inside the part keep their own edges.
void merge_spanning_pieces(const Pag& pag, Snapshot& part);

}  // namespace snailtrail
