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
  // Property 2 violations: maximal intervals of [span_start, span_end] where no timeline
  // edge but waiting ones is present and no message is in flight.
  std::vector<std::pair<int64_t, int64_t>> idle;
  // Segments in time order: [start, end], closed_end when it owns the instant `end`
  // (zero-duration messages there belong to it).
  std::vector<Window> segments;
  // True when the window is one segment spanning [span_start, span_end]: the thesis case.
  bool whole() const {
    return idle.empty() && segments.size() == 1 && segments[0].start == span_start &&
           segments[0].end == span_end;
  }
};

// Finds the idle intervals and segments of a window snapshot of `pag`. Segment borders:
// the span's ends, the ends of idle intervals, the first node of a worker's timeline
// after span_start where no message arrives, and the end of every waiting edge that ends
// (not cut by the window) at a node where no message arrives.
void plan_segments(const Pag& pag, const Snapshot& snap, SegmentPlan& plan);

// Computes the CP of a window cut into segments (plan not whole): every segment is
// snapshotted from the PAG like a window and analyzed on its own; `snap` is then
// replaced by the segments' snapshots laid side by side (worker by worker, segment by
// segment: a worker's timeline is broken at each border by a pair of nodes at the same
// time) and `out` by the combined result (see above). `sample_seed` (if not null) samples
// one path per segment into `sampled` (edges of the combined snapshot).
class SegmentedCp {
 public:
  explicit SegmentedCp(const Pag& pag) : pag_(pag), snapshotter_(pag) {}
  void set_split_min_nodes(size_t n) { computer_.set_split_min_nodes(n); }
  void compute(const SegmentPlan& plan, Snapshot& snap, CpResult& out, const uint64_t* sample_seed,
               std::vector<uint32_t>& sampled);

 private:
  const Pag& pag_;
  Snapshotter snapshotter_;
  CpComputer computer_;
  std::vector<Snapshot> snaps_;
  std::vector<CpResult> results_;
  std::vector<std::vector<uint32_t>> paths_;
  Snapshot combined_;
};

}  // namespace snailtrail
