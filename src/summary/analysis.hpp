// The analysis pipeline for one trace: PAG -> windows -> snapshot -> CP -> summaries.
#pragma once

#include <functional>

#include "summary/summary.hpp"

namespace snailtrail {

// Wall time spent in each stage of analyze_pag, accumulated over windows.
struct StageTimes {
  double snapshot_s = 0, cp_s = 0, summary_s = 0, callback_s = 0;
};

struct AnalysisOptions {
  PagOptions pag;
  WindowSpec windows;
  SummaryOptions summary;
  bool sample_single_path = true;
  StageTimes* times = nullptr;  // optional
};

// Everything known about one analyzed window, valid during the callback.
struct WindowView {
  const Pag& pag;
  const Snapshot& snapshot;
  const CpResult& cp;
  const WindowSummary& summary;
};

// Builds the PAG and calls `on_window` for every window in time order. `on_progress`
// (optional) is called with (windows done, windows total).
void analyze_pag(const Pag& pag, const AnalysisOptions& options,
                 const std::function<void(const WindowView&)>& on_window,
                 const std::function<void(size_t, size_t)>& on_progress = {});

}  // namespace snailtrail
