// What-if per window (analyze --what-if, docs/OUTPUT.md): for the most critical workers,
// operators and activity types, the time the window's critical path would save if that
// item were k times faster, or (workers, operator instances) as fast as its peers' median.
// Computed on the window's PAG with cp/what_if.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "cp/what_if.hpp"
#include "pag/timeline.hpp"

namespace snailtrail {

struct WindowSummary;

struct WhatIfOptions {
  bool enabled = false;
  double speedup = 2;   // k: "k times faster"
  size_t per_kind = 3;  // the most critical items of each kind that are tried
};

enum class WhatIfKind : uint8_t { worker, op, activity };

struct WhatIf {
  WhatIfKind kind;
  uint32_t id;       // dense worker index, operator id or ActivityType
  bool peer_median;  // true: as fast as its peers' median; false: `speedup` times faster
  double speedup;    // the factor applied (for peer_median: the item's busy time / median)
  double saved_ns;   // the window's critical path gets this much shorter (0: nothing)
  // Operator rows (`speedup` times faster): the durations of the operator's instances
  // (Spark tasks, slices) in the window, the evidence of skew or uniform work: how many,
  // and their min, median, p95 and max (ns). 0 when not measured.
  uint32_t tasks;
  float task_min, task_median, task_p95, task_max;
};

// Fills summary.what_if (largest saving first) from the window's unsegmented snapshot
// and its CP summary.
class WhatIfAnalyzer {
 public:
  explicit WhatIfAnalyzer(const Pag& pag) : pag_(pag) {}
  // `segments`: the window's CP segments (cp/segments.hpp), each measured on its own.
  void analyze(const Snapshot& snap, const WhatIfOptions& options, WindowSummary& summary,
               std::span<const std::pair<int64_t, int64_t>> segments = {});

 private:
  double saved(WhatIfKind kind, uint32_t id, double factor);
  double saved_peer_median(WhatIfKind kind, uint32_t id, double& factor);
  void measure_tasks(uint32_t op, WhatIf& row) const;

  const Pag& pag_;
  const Snapshot* snap_ = nullptr;
  LongestPath path_;
  std::vector<float> timeline_div_, message_div_;
};

// Names what-if kinds in outputs: "worker", "operator", "activity".
const char* name_of(WhatIfKind kind);

}  // namespace snailtrail
