// Feeds a ReportBuilder from the ordered parallel window pipeline (summary/analysis.hpp):
// the timeline of a window is extracted on the thread that analyzed it (while its
// snapshot exists), and the builder takes the windows in window order on the consuming
// thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "report/report.hpp"

namespace snailtrail::report {

class WindowFeed {
 public:
  // `keep_timelines`: extract timelines at all (the builder keeps some of them).
  WindowFeed(ReportBuilder& builder, const Names& names, bool keep_timelines, size_t timeline_edges)
      : builder_(builder),
        names_(names),
        keep_timelines_(keep_timelines),
        timeline_edges_(timeline_edges) {}

  // The pipeline's callbacks: `render` on the worker threads, `consume` in window order.
  void render(const WindowView& view);
  void consume(const RenderedWindow& window);

 private:
  ReportBuilder& builder_;
  const Names& names_;
  const bool keep_timelines_;
  const size_t timeline_edges_;
  // By window index (runs of windows without events make indexes sparse).
  std::unordered_map<uint64_t, Timeline> timelines_;
  std::mutex mu_;
};

}  // namespace snailtrail::report
