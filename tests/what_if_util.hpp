// The what-if tests' common step: one window over a whole trace, what-if on.
#pragma once

#include "pag/timeline.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::testing {

// The whole-trace window of `trace` with the what-if on (`speedup` times faster, up to 10
// rows per kind); `segments` as AnalysisOptions::segments.
inline WindowSummary analyze_whole(const Trace& trace, double speedup = 2, bool segments = true) {
  Pag pag = build_pag(trace);
  AnalysisOptions opt;
  opt.segments = segments;
  opt.what_if.enabled = true;
  opt.what_if.speedup = speedup;
  opt.what_if.per_kind = 10;
  WindowSummary out;
  analyze_pag(pag, opt, [&](const WindowView& v) { out = v.summary; });
  return out;
}

}  // namespace snailtrail::testing
