// The classic critical path of a request trace: the chain of spans that determines its
// latency, as Jaeger UI and CRISP compute it (docs/IMPORTERS.md, "Critical path").
//
// The tree is Jaeger UI's: the CHILD_OF parent, else the first reference of any kind to a
// span of the trace; a consumer child of a producer is not blocking and is left out with
// its subtree. Every root (span without a parent in the tree) gets a path, by start time,
// concatenated. Walk backward from a root's end: at each point the critical span is the
// current one until the last child that finished at or before the point; jump into that
// child at its end, follow it recursively, and come back to the parent at the child's
// start. Before, children are clipped to their parent (clock skew, async children
// outliving the parent) and children entirely outside it are dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "importers/otel/spans.hpp"

namespace snailtrail::importers {

struct PathStep {
  uint32_t span;        // index into SpanSet::spans
  int64_t critical_ns;  // time on the critical path during which this span itself ran
  int64_t first_ns;     // earliest instant it is on the path
};

struct CriticalPath {
  uint32_t trace;              // interned trace id
  uint32_t root;               // span index of the first root
  int64_t duration_ns;         // sum of the roots' durations
  uint32_t spans;              // spans in the trace
  uint32_t clipped = 0;        // children clipped to their parent (clock skew, async children)
  uint32_t dropped = 0;        // children entirely outside their parent, dropped with their subtree
  std::vector<PathStep> path;  // per root, by first_ns; critical_ns sums to duration_ns
  uint32_t roots = 0;          // spans without a parent in the tree, one path each
  uint32_t nonblocking = 0;    // consumer children of producers, left out with their subtree
  int64_t start_ns = 0;        // the first root's start
};

// One critical path per trace id, in order of the traces' first span in the file: the
// concatenated paths of its roots. Ties between children ending together go to the one
// that started first.
std::vector<CriticalPath> critical_paths(const SpanSet& set);

struct ServiceTime {
  uint32_t service;  // interned service name
  int64_t critical_ns;
  uint64_t spans_on_path;
};
// Critical time per service over all paths, most critical first.
std::vector<ServiceTime> critical_time_by_service(const SpanSet& set,
                                                  const std::vector<CriticalPath>& paths);

}  // namespace snailtrail::importers
