// The analysis pipeline for one trace: PAG -> windows -> snapshot -> CP -> summaries.
#pragma once

#include <functional>

#include "pag/streaming.hpp"
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
  // Cut windows into segments at idle intervals and where a worker's timeline begins or
  // ends (docs/PAG.md §4). Off: the thesis' single span from the earliest to the latest
  // node of the window (kept for comparison with it).
  bool segments = true;
  // A segmented window's pieces of messages in flight across a whole segment merged per
  // (sender, receiver, type) (cp/segments.hpp). Off: one edge per piece, the reference
  // the tests compare with; results are the same up to floating-point rounding.
  bool merge_pieces = true;
  // Every node's path counts f and b (CpResult::forward/backward) of a segmented window,
  // rescaled to the whole window: `--dump-edges` and the Chrome export read them, the
  // summaries do not (off: left empty, which saves 32 bytes a node of a large window).
  bool path_counts = true;
  WhatIfOptions what_if;        // analyze --what-if (summary/what_if.hpp)
  StageTimes* times = nullptr;  // optional
};

// Everything known about one analyzed window, valid during the callback.
struct WindowView {
  const Pag& pag;
  const Snapshot& snapshot;
  const CpResult& cp;
  const WindowSummary& summary;
  // Not analyzed (analyze_windows' `wanted` said no): only summary.index and
  // summary.window are set, the rest of the view is not this window's.
  bool skipped = false;
};

// Every entry of the window plan reaches the callbacks, also runs of windows without
// events (summary.window.empty_run > 0: only index and window are set, the view's
// snapshot and CP are not this window's); summary.index numbers windows, counting each
// run's windows, so indexes stay those of the uncompacted plan.
std::vector<size_t> window_indexes(const std::vector<Window>& windows, size_t first_index);

// Calls `on_window` for every window in time order, on the calling thread.
// `on_progress` (optional) is called with (windows done, windows total).
void analyze_pag(const Pag& pag, const AnalysisOptions& options,
                 const std::function<void(const WindowView&)>& on_window,
                 const std::function<void(size_t, size_t)>& on_progress = {});

// Analyzes the given windows (in increasing time order) of a PAG; the i-th is reported
// with index first_index + i. For PAGs cut from a live stream (pag/streaming.hpp).
// Windows with events whose index `wanted` (if given) refuses are not analyzed (no
// snapshot, CP or summary): they reach `on_window` with view.skipped set, in order, so
// that runs of windows without events are still split by them.
void analyze_windows(const Pag& pag, const std::vector<Window>& windows, size_t first_index,
                     const AnalysisOptions& options,
                     const std::function<void(const WindowView&)>& on_window,
                     const std::function<bool(size_t)>& wanted = {});

// A window's results as the parallel pipeline hands them over: the summary and
// whatever bytes `render` produced for it.
struct RenderedWindow {
  WindowSummary summary;
  std::string text;
  std::string edges;
};

// Windows analyzed on `threads` threads (chunks of consecutive windows; each thread keeps
// its own snapshot/CP/summary state). `render` runs on the worker threads and may only
// write to its RenderedWindow; `consume` runs on the calling thread, in window order.
// Results are identical to analyze_pag for any number of threads.
void analyze_pag_parallel(const Pag& pag, const AnalysisOptions& options, unsigned threads,
                          const std::function<void(const WindowView&, RenderedWindow&)>& render,
                          const std::function<void(RenderedWindow&)>& consume,
                          const std::function<void(size_t, size_t)>& on_progress = {});

// The same for the given windows (increasing time order) of a PAG, the i-th reported
// with index first_index + i (windows cut from a trace read block by block).
void analyze_windows_parallel(const Pag& pag, const std::vector<Window>& windows,
                              size_t first_index, const AnalysisOptions& options, unsigned threads,
                              const std::function<void(const WindowView&, RenderedWindow&)>& render,
                              const std::function<void(RenderedWindow&)>& consume,
                              const std::function<void(size_t, size_t)>& on_progress = {});

// ---- Windows of a stream, analyzed piece by piece (serve; a .snail file read block by
// block, summary/streamed.hpp) ----

// Windows [k_begin, k_end) of the tumbling grid (origin, width) cut out of a PAG built
// from a stream: the PAG of just those windows (StreamingPag::cut) and their plan
// (plan_window_range; `empty_before` carried from piece to piece). The last window has
// a closed end when `closed_end`; `to` caps the ends. The caller retires the stream's
// PAG up to the cut's end once the windows are analyzed.
struct WindowCut {
  Pag pag;
  std::vector<Window> windows;
  int64_t end = 0;  // where the cut ends
};
WindowCut cut_windows(StreamingPag& stream, int64_t origin, int64_t width, int64_t k_begin,
                      int64_t k_end, bool closed_end, std::optional<int64_t> to,
                      uint64_t& empty_before);

// A plan analyzed piece by piece may split a run of windows without events where two
// pieces meet: the runs that meet are one run, as plan_windows makes it and `analyze`
// writes it. absorb() holds runs; take() hands the merged run over (before the next
// window with events, and at the end).
class EmptyRunMerger {
 public:
  // True if `s` is a run of windows without events (now held); false otherwise.
  bool absorb(const WindowSummary& s) {
    if (s.window.empty_run == 0) return false;
    if (run_.window.empty_run == 0) {
      run_ = s;
    } else {
      run_.window.end = s.window.end;
      run_.window.empty_run += s.window.empty_run;
    }
    return true;
  }
  bool pending() const { return run_.window.empty_run > 0; }
  WindowSummary take() {
    WindowSummary run = std::move(run_);
    run_ = WindowSummary{};
    return run;
  }

 private:
  WindowSummary run_;
};

}  // namespace snailtrail
