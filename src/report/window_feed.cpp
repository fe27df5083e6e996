#include "report/window_feed.hpp"

#include "report/timeline_wire.hpp"
#include "trace/byte_wire.hpp"

namespace snailtrail::report {

void WindowFeed::render(const WindowView& view, RenderedWindow& out) {
  if (view.summary.window.empty_run > 0) return;
  const bool graph = graph_ && !view.skipped;
  if (send_) {  // sent to rank 0 with the window: [timeline bytes, possibly none][graph]
    std::string timeline;
    if (keep_timelines_) append_timeline(timeline, extract_timeline(view, timeline_edges_));
    ByteWriter(out.text).str(timeline);
    if (graph) append_job_graph_window(out.text, extract_job_graph_window(view));
    return;
  }
  if (graph) graph_->render(view);
  if (!keep_timelines_) return;
  Timeline t = extract_timeline(view, timeline_edges_);
  std::lock_guard lock(mu_);
  timelines_[view.summary.index] = std::move(t);
}

void WindowFeed::consume(const RenderedWindow& window) {
  if (graph_) graph_->consume(window.summary, names_);  // runs without events too: stalls
  if (window.summary.window.empty_run > 0) return;      // windows without events: not analyzed
  Timeline t;
  {
    std::lock_guard lock(mu_);
    auto it = timelines_.find(window.summary.index);
    if (it != timelines_.end()) {
      t = std::move(it->second);
      timelines_.erase(it);  // free its memory now
    }
  }
  builder_.add(window.summary, names_, std::move(t));
}

void WindowFeed::add_received(const RenderedWindow& window) {
  if (window.summary.window.empty_run > 0) {
    if (graph_) graph_->add(window.summary, names_, {});
    return;
  }
  Timeline t;
  if (!window.text.empty()) {
    size_t pos = 0;
    std::string timeline;
    ByteReader(window.text, pos, "report window").str(timeline);
    if (!timeline.empty()) {
      read_timeline(timeline, t);
      t.summary = window.summary;
    }
    if (graph_ && pos < window.text.size()) {
      JobGraphWindow g;
      read_job_graph_window(window.text, pos, g);
      graph_->add(window.summary, names_, std::move(g));
    }
  }
  builder_.add(window.summary, names_, std::move(t));
}

}  // namespace snailtrail::report
