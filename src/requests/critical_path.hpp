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
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "importers/otel/spans.hpp"

namespace snailtrail::requests {

// The span model the paths are computed over (importers/otel/spans.hpp).
using importers::kNoSpan;
using importers::Span;
using importers::SpanKind;
using importers::SpanSet;

struct PathStep {
  uint32_t span;        // index into SpanSet::spans
  int64_t critical_ns;  // time on the critical path during which this span itself ran
  int64_t first_ns;     // earliest instant it is on the path
};

// An interval during which one span is the critical one (report's waterfall).
struct PathSegment {
  uint32_t span;  // index into SpanSet::spans
  int64_t start_ns, end_ns;
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
  // Only when asked for: the path as intervals in time order (per root, roots by start),
  // each of one span; a span is on it once per stretch it runs critical.
  std::vector<PathSegment> segments = {};
};

// One critical path per trace id, in order of the traces' first span in the file: the
// concatenated paths of its roots. Ties between children ending together go to the one
// that started first.
// `tree_parent`, if given, receives each span's parent in the tree (kNoSpan for roots).
// `segments`: also fill CriticalPath::segments.
std::vector<CriticalPath> critical_paths(const SpanSet& set,
                                         std::vector<uint32_t>* tree_parent = nullptr,
                                         bool segments = false);

struct ServiceTime {
  uint32_t service;  // interned service name
  int64_t critical_ns;
  uint64_t spans_on_path;
};
// Critical time per service over all paths, most critical first.
std::vector<ServiceTime> critical_time_by_service(const SpanSet& set,
                                                  const std::vector<CriticalPath>& paths);

// ---------------------------------------------------------------------------------------
// Paths kept once their spans are gone: traces are imported one at a time (streaming,
// otel_importer.hpp) and only these compact results stay for the outputs.

// A trace's figures besides its path, as its CriticalPath counts them.
struct TraceFigures {
  int64_t duration_ns, start_ns;
  uint32_t spans, clipped, dropped, roots, nonblocking;
};
TraceFigures figures_of(const CriticalPath& p);

// The results of one unit of import (a Jaeger trace entry, a whole file), with the unit's
// own names; built by summarize_paths on a worker thread, merged in file order.
struct UnitPaths {
  struct Step {
    uint32_t service, operation;  // into names
    uint32_t context;             // calling context (into contexts), kNoSpan if not asked for
    uint32_t id_begin, id_len;    // span id in ids
    int64_t start_ns, end_ns, self_ns;
  };
  struct TracePaths : TraceFigures {
    uint32_t id_begin, id_len;        // trace id in ids
    uint32_t steps_begin, steps_end;  // into steps
  };
  struct Context {
    uint32_t parent;  // kNoSpan at a root
    uint32_t service, operation;
  };
  std::vector<std::string> names;
  std::string ids;
  std::vector<Step> steps;
  std::vector<TracePaths> traces;
  std::vector<Context> contexts;  // parents before children
};
// `contexts`: also the calling context of every step (its chain of tree ancestors,
// service:operation frames), for the folded stacks.
UnitPaths summarize_paths(const SpanSet& set, const std::vector<CriticalPath>& paths,
                          const std::vector<uint32_t>& tree_parent, bool contexts);

// All traces' paths, in file order, with names interned once.
class PathCollection {
 public:
  using Step = UnitPaths::Step;  // service, operation, context: global ids here
  struct TracePaths : TraceFigures {
    std::string ids;  // the trace id, then the steps' span ids
    uint32_t id_len;
    std::vector<Step> path;
    std::string_view trace_id() const { return std::string_view(ids).substr(0, id_len); }
    std::string_view span_id(const Step& s) const {
      return std::string_view(ids).substr(s.id_begin, s.id_len);
    }
  };
  void add(const UnitPaths& unit);
  const std::string& name(uint32_t id) const { return names_[id]; }
  const std::vector<TracePaths>& traces() const { return traces_; }
  const std::vector<UnitPaths::Context>& contexts() const { return contexts_; }
  uint64_t total_spans() const { return total_spans_; }
  uint64_t repeated_trace_ids() const { return repeated_; }
  // Critical time per service over all paths, most critical first (then by name).
  std::vector<ServiceTime> by_service() const;
  // The same over the traces at these indices of traces().
  std::vector<ServiceTime> by_service(const std::vector<size_t>& traces) const;

 private:
  uint32_t intern(const std::string& s);
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::unordered_map<std::string, uint32_t> trace_ids_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_;    // service << 32 | operation
  std::unordered_map<uint64_t, uint32_t> context_ids_;  // (parent + 1) << 32 | frame
  std::vector<UnitPaths::Context> contexts_;
  std::vector<TracePaths> traces_;
  uint64_t total_spans_ = 0, repeated_ = 0;
};

}  // namespace snailtrail::requests
