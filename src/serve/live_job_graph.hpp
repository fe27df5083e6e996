// The Job graph of a live analysis (docs/REPORT.md, "Job graph", live): the report's own
// JobGraphBuilder fed with the windows a LiveAnalyzer completes, so `serve --http`'s and
// `run --http`'s GET /api/jobgraph is what `report -f json` writes as its "jobgraph"
// member for the same windows. Bounded as the builder is (points merge pairwise). The
// analysis thread adds, the HTTP thread reads: every call locks.
#pragma once

#include <mutex>
#include <string>

#include "output/names.hpp"
#include "pag/pag.hpp"
#include "report/job_graph.hpp"
#include "summary/analysis.hpp"
#include "trace/trace.hpp"

namespace snailtrail::serve {

class LiveJobGraph {
 public:
  // An analyzed window (LiveAnalyzer::on_view), in window order.
  void add_window(const WindowView& view, const Names& names);
  // A run of windows without events (a LiveWindow whose summary.window.empty_run > 0):
  // stalls. LiveAnalyzer hands those to on_window only.
  void add_run(const WindowSummary& run);
  // The closed loop's decisions and migrations (report::loop_marks_json).
  void set_marks(std::string marks);
  // The "jobgraph" object, "null" before the first window.
  std::string json();

 private:
  std::mutex mu_;
  report::JobGraphBuilder graph_;
  const Trace no_trace_;
  const Pag no_pag_;
  const Names no_names_{no_trace_, no_pag_};  // a run has no cell to name
};

}  // namespace snailtrail::serve
