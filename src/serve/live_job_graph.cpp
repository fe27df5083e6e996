#include "serve/live_job_graph.hpp"

#include <utility>

namespace snailtrail::serve {

void LiveJobGraph::add_window(const WindowView& view, const Names& names) {
  if (view.summary.window.empty_run > 0 || view.skipped) return;
  // Extracted outside the lock: the HTTP thread is not held up by the snapshot's walk.
  report::JobGraphWindow w = report::extract_job_graph_window(view);
  std::lock_guard lock(mu_);
  graph_.add(view.summary, names, std::move(w));
}

void LiveJobGraph::add_run(const WindowSummary& run) {
  std::lock_guard lock(mu_);
  graph_.add(run, no_names_, {});
}

void LiveJobGraph::set_marks(std::string marks) {
  std::lock_guard lock(mu_);
  graph_.set_marks(std::move(marks));
}

std::string LiveJobGraph::json() {
  std::lock_guard lock(mu_);
  return graph_.json();
}

}  // namespace snailtrail::serve
