#include "report/window_feed.hpp"

#include "report/timeline_wire.hpp"

namespace snailtrail::report {

void WindowFeed::render(const WindowView& view, RenderedWindow& out) {
  if (!keep_timelines_ || view.summary.window.empty_run > 0) return;
  Timeline t = extract_timeline(view, timeline_edges_);
  if (send_) {  // sent to rank 0 with the window
    append_timeline(out.text, t);
    return;
  }
  std::lock_guard lock(mu_);
  timelines_[view.summary.index] = std::move(t);
}

void WindowFeed::consume(const RenderedWindow& window) {
  if (window.summary.window.empty_run > 0) return;  // windows without events: not analyzed
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
  if (window.summary.window.empty_run > 0) return;
  Timeline t;
  if (!window.text.empty()) {
    read_timeline(window.text, t);
    t.summary = window.summary;
  }
  builder_.add(window.summary, names_, std::move(t));
}

}  // namespace snailtrail::report
