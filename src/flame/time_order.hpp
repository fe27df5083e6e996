// The samples in time order, for the report's flame chart ("time order", docs/FLAME.md):
// per lane (worker, else thread), consecutive samples on the same path merged into runs,
// at most max_runs of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flame/flamegraph.hpp"
#include "flame/samples.hpp"

namespace snailtrail::flame {

// Runs per view in `snailtrail report`'s flame data (docs/REPORT.md, "flame graph").
inline constexpr size_t kReportTimeRuns = 20000;

struct TimeOrder {
  std::vector<std::string> frames;  // frame names used by the stacks
  // Stacks as a trie: stack s is the path of stack_parent[s] (kNoId: the root) plus the
  // frame stack_frame[s]. Paths are build_tree's (root frames and off-CPU leaf included).
  std::vector<uint32_t> stack_parent, stack_frame;
  std::vector<std::string> lanes;  // "worker 3", else "thread 12 comm"
  struct Run {
    uint32_t lane = 0;
    uint32_t stack = kNoId;  // kNoId: the empty path (a merge of runs with no common root)
    int64_t start = 0;       // ns after t0
    int64_t end = 0;
    double weight = 0;  // the samples' weights in the view's unit
    uint64_t samples = 0;
  };
  std::vector<Run> runs;  // by lane, then time
  int64_t t0 = 0;         // the first run's start, in the trace's clock
  uint64_t samples = 0;   // samples in the runs
  // Samples with weight but no time (folded stacks), or on-CPU ones without a known
  // sampling period: left out.
  uint64_t untimed = 0;
  size_t max_runs = 0;
  size_t merged = 0;  // runs merged into a neighbour to stay within max_runs
};

// The runs of the samples with weight > 0 (the view's weights) that pass the options'
// filters. A sample's interval: on-CPU the count x period_ns of CPU time ending at its
// ts (the timer fires once the thread used it), off-CPU the wait (count ns) from its ts,
// in time order of their starts. It extends the lane's last run when it has the same path and
// starts at most period_ns / 2 after that run's end (a missed sampling tick breaks the run); a run
// never starts before the lane's previous run ends. Beyond max_runs (0: no limit), the two
// neighbouring runs of a lane whose merge is shortest are merged, again and again: the
// merged run spans both, carries both weights and keeps the paths' common prefix.
TimeOrder time_order(const SampleSet& set, const std::vector<double>& weights,
                     const TreeOptions& options, size_t max_runs);

// {"t0", "samples", "untimed", "max_runs", "merged", "frames": [names], "stacks":
//  {"parent": [...], "frame": [...]}, "lanes": [names], "runs": {"lane", "stack", "start",
//  "end", "weight", "samples": [...]}} (kNoId as -1; runs as parallel arrays).
std::string time_order_json(const TimeOrder& t);

}  // namespace snailtrail::flame
