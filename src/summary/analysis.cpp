#include "summary/analysis.hpp"

#include <chrono>

namespace snailtrail {

void analyze_pag(const Pag& pag, const AnalysisOptions& options,
                 const std::function<void(const WindowView&)>& on_window,
                 const std::function<void(size_t, size_t)>& on_progress) {
  std::vector<Window> windows = plan_windows(pag, options.windows);
  Snapshotter snapshotter(pag);
  CpComputer computer;
  Summarizer summarizer(pag);
  Snapshot snap;
  CpResult cp;
  WindowSummary summary;
  std::vector<uint32_t> sampled;
  using Clock = std::chrono::steady_clock;
  auto lap = [t = Clock::now()](double* into) mutable {
    auto now = Clock::now();
    if (into) *into += std::chrono::duration<double>(now - t).count();
    t = now;
  };
  StageTimes* times = options.times;
  for (size_t i = 0; i < windows.size(); ++i) {
    lap(nullptr);
    snapshotter.build(windows[i], snap);
    lap(times ? &times->snapshot_s : nullptr);
    computer.compute(pag, snap, cp);
    sampled.clear();
    if (options.sample_single_path) {
      // One independent stream per window so results do not depend on which windows ran.
      uint64_t seed = options.summary.seed * 0x9e3779b97f4a7c15ULL +
                      static_cast<uint64_t>(windows[i].start);
      sampled = computer.sample_path(pag, snap, cp, seed);
    }
    lap(times ? &times->cp_s : nullptr);
    summary.index = i;
    summarizer.summarize(snap, cp, sampled, options.summary, summary);
    lap(times ? &times->summary_s : nullptr);
    on_window(WindowView{pag, snap, cp, summary});
    lap(times ? &times->callback_s : nullptr);
    if (on_progress) on_progress(i + 1, windows.size());
  }
}

}  // namespace snailtrail
