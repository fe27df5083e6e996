// "Code on the critical path": each on-CPU sample weighted by the critical
// participation of the activity (timeline edge) it fell in (docs/FLAME.md).
#pragma once

#include <vector>

#include "flame/samples.hpp"
#include "summary/analysis.hpp"
#include "trace/trace.hpp"

namespace snailtrail::flame {

struct CriticalResult {
  // Per sample of the set: ns of critical time it stands for. An edge e of a window
  // with CP_e carries CP_e x cp_ns (cp_ns: the time CP is spread over, the window's
  // length without idle gaps) ns of critical time; it is split over the on-CPU samples
  // whose (worker, ts) fall in e (ts[v] <= ts < ts[v + 1]) in proportion to their counts
  // (periods of CPU time). Off-CPU samples, and
  // samples without a worker or a time, weigh 0.
  std::vector<double> weight;
  double timeline_critical_ns = 0;  // sum of CP_e x cp_ns over all timeline edges
  double attributed_ns = 0;         // the part of it carried by edges with samples
  uint64_t samples_in_edges = 0;    // on-CPU samples that fell in a timeline edge
  uint64_t samples_outside = 0;     // on-CPU samples with a worker and time but no edge
  uint64_t samples_unplaced = 0;    // on-CPU samples without worker or time
  size_t windows = 0;
};

// Weights the samples of `set` by CP over the windows of `options` on `trace`'s PAG.
// Also fills in the operator and activity of every sample that fell in an edge and
// had none (imported samples learn their operator from the activity trace).
CriticalResult critical_weights(const Trace& trace, SampleSet& set, const AnalysisOptions& options);

}  // namespace snailtrail::flame
