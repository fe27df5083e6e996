// Feeds a ReportBuilder from the ordered parallel window pipeline (summary/analysis.hpp):
// the timeline of a window is extracted on the thread that analyzed it (while its
// snapshot exists), and the builder takes the windows in window order on the consuming
// thread. Under mpirun (`report` over ranks) a rank other than 0 sends each window's
// timeline with the window instead (timeline_wire.hpp), and rank 0 adds the windows it
// receives with add_received().
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "report/job_graph.hpp"
#include "report/report.hpp"

namespace snailtrail::report {

class WindowFeed {
 public:
  // `keep_timelines`: extract timelines at all (the builder keeps some of them);
  // `send`: put them into the window's text for rank 0.
  // `graph`: also feeds the Job graph (its window contributions travel the same way).
  WindowFeed(ReportBuilder& builder, const Names& names, bool keep_timelines, size_t timeline_edges,
             bool send = false, JobGraphBuilder* graph = nullptr)
      : builder_(builder),
        names_(names),
        keep_timelines_(keep_timelines),
        timeline_edges_(timeline_edges),
        send_(send),
        graph_(graph) {}

  // The pipeline's callbacks: `render` on the worker threads, `consume` in window order.
  void render(const WindowView& view, RenderedWindow& out);
  void consume(const RenderedWindow& window);
  // A window another rank sent (its timeline, if any, and its Job graph contribution in
  // its text), in window order.
  void add_received(const RenderedWindow& window);

 private:
  ReportBuilder& builder_;
  const Names& names_;
  const bool keep_timelines_;
  const size_t timeline_edges_;
  const bool send_;
  JobGraphBuilder* const graph_;
  // By window index (runs of windows without events make indexes sparse).
  std::unordered_map<uint64_t, Timeline> timelines_;
  std::mutex mu_;
};

}  // namespace snailtrail::report
