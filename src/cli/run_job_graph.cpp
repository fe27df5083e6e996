#include "cli/run_job_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "serve/live_analyzer.hpp"

namespace snailtrail::cli {

RunJobGraph::RunJobGraph(int64_t window_ns, uint32_t first_worker, uint32_t workers, bool keep,
                         uint64_t max_queued)
    : queue_(first_worker, workers, keep, max_queued) {
  LiveOptions o;  // the defaults of `report` (gap threshold) and of serve (lateness)
  o.window_ns = window_ns;
  live_ = std::make_unique<LiveAnalyzer>(o, [this](LiveWindow& w) {
    if (w.summary.window.empty_run > 0) graph_.add_run(w.summary);
  });
  live_->on_view([this](const WindowView& v, const Names& n) { graph_.add_window(v, n); });
  queue_.start(
      [this](std::vector<Event>& events, const Trace* names, bool) { feed(events, names); });
}

RunJobGraph::~RunJobGraph() {
  queue_.stop(std::chrono::milliseconds::max());
  queue_.join();
}

void RunJobGraph::feed(std::vector<Event>& events, const Trace* names) {
  const auto now = std::chrono::steady_clock::now();
  if (names) {
    live_->add_names(*names);
    // A named worker that never sends (one the autoscaler leaves idle) would hold the
    // windows back: it gets the same second as the others.
    for (const auto& [id, name] : names->worker_names) last_seen_.try_emplace(id, now);
  }
  // A flush is one worker's events in time order; chunks of several workers interleave,
  // and the analyzer wants each worker's events in order, which a stable sort keeps.
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  for (const Event& e : events) {
    live_->add(e);
    last_seen_[e.worker] = now;
  }
  for (const auto& [id, t] : last_seen_)
    if (now - t > std::chrono::seconds(1) && !live_->is_idle(id)) live_->set_idle(id);
  live_->advance();
}

void RunJobGraph::finish() {
  queue_.stop(std::chrono::milliseconds::max());
  queue_.join();  // the last events fed
  live_->finish();
}

std::string RunJobGraph::json(std::string marks) {
  graph_.set_marks(std::move(marks));
  return graph_.json();
}

}  // namespace snailtrail::cli
