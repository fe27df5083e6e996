#include "summary/analysis.hpp"

#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "cp/segments.hpp"

namespace snailtrail {
namespace {

// Snapshot, CP and summary state of one thread; windows must come in increasing order.
class WindowAnalyzer {
 public:
  WindowAnalyzer(const Pag& pag, const AnalysisOptions& options)
      : pag_(pag),
        options_(options),
        snapshotter_(pag),
        planner_(pag),
        segmented_(pag),
        summarizer_(pag),
        what_if_(pag) {
    computer_.set_split_min_nodes(options.summary.split_min_nodes);
    segmented_.set_split_min_nodes(options.summary.split_min_nodes);
    segmented_.set_merge_pieces(options.merge_pieces);
    segmented_.set_path_counts(options.path_counts);
  }

  template <typename F>
  void run(const Window& window, size_t index, F&& with_view) {
    if (window.empty_run > 0) {
      // A run of windows without events: not analyzed; the summary only says where.
      summary_ = WindowSummary{};
      summary_.index = index;
      summary_.window = window;
      summary_.span_start = window.start;
      summary_.span_end = window.end;
      with_view(WindowView{pag_, snap_, cp_, summary_});
      return;
    }
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    auto lap = [&](double& into) {
      auto now = Clock::now();
      into += std::chrono::duration<double>(now - t0).count();
      t0 = now;
    };
    // Planned from the PAG: a segmented window is snapshotted only part by part (the
    // what-if also needs the whole window's).
    planner_.plan(window, plan_);
    const bool whole = !options_.segments || plan_.whole();
    if (whole || options_.what_if.enabled)
      snapshotter_.build(window, snap_);
    else
      snapshotter_.count_only(window, snap_);
    lap(times_.snapshot_s);
    // One independent stream per window, so results do not depend on which windows ran.
    const uint64_t seed =
        options_.summary.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(window.start);
    sampled_.clear();
    if (whole) {
      computer_.compute(snap_, cp_);
      if (options_.sample_single_path) sampled_ = computer_.sample_path(snap_, cp_, seed);
    } else {
      // The what-if recomputes the window's longest path on the whole window, not on
      // the segments laid side by side.
      if (options_.what_if.enabled) plain_snap_ = snap_;
      segmented_.compute(plan_, snap_, cp_, options_.sample_single_path ? &seed : nullptr,
                         sampled_);
    }
    cp_.property2_violations = plan_.property2_violations;
    cp_.property2_ns = plan_.property2_ns;
    cp_.input_idle_ns = plan_.input_idle_ns;
    lap(times_.cp_s);
    summary_.index = index;
    summarizer_.summarize(snap_, cp_, sampled_, options_.summary, summary_);
    if (options_.what_if.enabled) {
      segments_.clear();
      if (!whole)
        for (const SegmentPlan::Part& p : plan_.parts)
          if (!p.idle) segments_.emplace_back(p.window.start, p.window.end);
      what_if_.analyze(whole ? snap_ : plain_snap_, options_.what_if, summary_, segments_);
    }
    lap(times_.summary_s);
    with_view(WindowView{pag_, snap_, cp_, summary_});
    lap(times_.callback_s);
  }

  // A window not analyzed: the view says so and where it is.
  template <typename F>
  void skip(const Window& window, size_t index, F&& with_view) {
    summary_ = WindowSummary{};
    summary_.index = index;
    summary_.window = window;
    with_view(WindowView{pag_, snap_, cp_, summary_, /*skipped=*/true});
  }

  // Adds this thread's stage times to `into` (under the caller's lock, if shared).
  void report_times(StageTimes* into) const {
    if (!into) return;
    into->snapshot_s += times_.snapshot_s;
    into->cp_s += times_.cp_s;
    into->summary_s += times_.summary_s;
    into->callback_s += times_.callback_s;
  }

 private:
  StageTimes times_;
  const Pag& pag_;
  const AnalysisOptions& options_;
  Snapshotter snapshotter_;
  SegmentPlanner planner_;
  CpComputer computer_;
  SegmentedCp segmented_;
  SegmentPlan plan_;
  Summarizer summarizer_;
  WhatIfAnalyzer what_if_;
  std::vector<std::pair<int64_t, int64_t>> segments_;  // the what-if's CP segments
  Snapshot snap_;
  Snapshot plain_snap_;  // the unsegmented snapshot, kept for the what-if
  CpResult cp_;
  WindowSummary summary_;
  std::vector<uint32_t> sampled_;
};

}  // namespace

std::vector<size_t> window_indexes(const std::vector<Window>& windows, size_t first_index) {
  std::vector<size_t> index(windows.size());
  size_t next = first_index;
  for (size_t i = 0; i < windows.size(); ++i) {
    index[i] = next;
    next += windows[i].count();
  }
  return index;
}

void analyze_pag(const Pag& pag, const AnalysisOptions& options,
                 const std::function<void(const WindowView&)>& on_window,
                 const std::function<void(size_t, size_t)>& on_progress) {
  const std::vector<Window> windows = plan_windows(pag, options.windows);
  const std::vector<size_t> index = window_indexes(windows, 0);
  WindowAnalyzer analyzer(pag, options);
  for (size_t i = 0; i < windows.size(); ++i) {
    analyzer.run(windows[i], index[i], on_window);
    if (on_progress) on_progress(i + 1, windows.size());
  }
  analyzer.report_times(options.times);
}

void analyze_windows(const Pag& pag, const std::vector<Window>& windows, size_t first_index,
                     const AnalysisOptions& options,
                     const std::function<void(const WindowView&)>& on_window,
                     const std::function<bool(size_t)>& wanted) {
  const std::vector<size_t> index = window_indexes(windows, first_index);
  WindowAnalyzer analyzer(pag, options);
  for (size_t i = 0; i < windows.size(); ++i) {
    if (wanted && windows[i].empty_run == 0 && !wanted(index[i])) {
      analyzer.skip(windows[i], index[i], on_window);
      continue;
    }
    analyzer.run(windows[i], index[i], on_window);
  }
  analyzer.report_times(options.times);
}

void analyze_pag_parallel(const Pag& pag, const AnalysisOptions& options, unsigned threads,
                          const std::function<void(const WindowView&, RenderedWindow&)>& render,
                          const std::function<void(RenderedWindow&)>& consume,
                          const std::function<void(size_t, size_t)>& on_progress) {
  analyze_windows_parallel(pag, plan_windows(pag, options.windows), 0, options, threads, render,
                           consume, on_progress);
}

namespace {

// Renders one window into `out` (its text and edges cleared first) and keeps its summary.
template <typename Render>
void analyze_into(WindowAnalyzer& analyzer, const Window& window, size_t index,
                  const Render& render, RenderedWindow& out) {
  analyzer.run(window, index, [&](const WindowView& v) {
    render(v, out);
    out.summary = v.summary;
  });
}

// One thread: windows analyzed, rendered and consumed one after the other.
void analyze_serially(const Pag& pag, const std::vector<Window>& windows,
                      const std::vector<size_t>& index, const AnalysisOptions& options,
                      const std::function<void(const WindowView&, RenderedWindow&)>& render,
                      const std::function<void(RenderedWindow&)>& consume,
                      const std::function<void(size_t, size_t)>& on_progress) {
  const size_t n = windows.size();
  WindowAnalyzer analyzer(pag, options);
  RenderedWindow out;
  for (size_t i = 0; i < n; ++i) {
    out.text.clear();
    out.edges.clear();
    analyze_into(analyzer, windows[i], index[i], render, out);
    consume(out);
    if (on_progress) on_progress(i + 1, n);
  }
  analyzer.report_times(options.times);
}

// The ordered parallel pipeline: chunks of consecutive windows, claimed in order by the
// worker threads; at most `slots` chunks are finished and not yet consumed, which bounds
// memory; the calling thread consumes them in window order. The first exception (a
// worker's or the consumer's) stops every thread and is rethrown by run().
class ChunkPipeline {
 public:
  ChunkPipeline(const Pag& pag, const std::vector<Window>& windows,
                const std::vector<size_t>& index, const AnalysisOptions& options, unsigned threads,
                const std::function<void(const WindowView&, RenderedWindow&)>& render)
      : pag_(pag),
        windows_(windows),
        index_(index),
        options_(options),
        threads_(threads),
        render_(render),
        n_(windows.size()),
        chunk_(std::clamp<size_t>(n_ / (size_t{threads} * 8), 1, 64)),
        chunks_((n_ + chunk_ - 1) / chunk_),
        slots_(2 * size_t{threads}),
        ring_(slots_) {}

  void run(const std::function<void(RenderedWindow&)>& consume,
           const std::function<void(size_t, size_t)>& on_progress) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads_; ++t) pool.emplace_back([this] { work(); });
    try {
      std::vector<RenderedWindow> items;
      for (size_t k = 0; k < chunks_ && take(k, items); ++k) {
        for (RenderedWindow& w : items) consume(w);
        mark_consumed(k);
        if (on_progress) on_progress(std::min(n_, (k + 1) * chunk_), n_);
      }
    } catch (...) {
      fail(std::current_exception());
    }
    {
      std::lock_guard lock(mu_);
      if (error_) failed_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : pool) t.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Slot {
    std::vector<RenderedWindow> items;
    size_t chunk = SIZE_MAX;  // which chunk is ready in it
  };

  // One worker thread: claims chunks in order and analyzes their windows.
  void work() {
    try {
      WindowAnalyzer analyzer(pag_, options_);
      size_t k;
      while (claim(k)) {
        std::vector<RenderedWindow> items(std::min(chunk_, n_ - k * chunk_));
        for (size_t j = 0; j < items.size(); ++j) {
          const size_t i = k * chunk_ + j;
          analyze_into(analyzer, windows_[i], index_[i], render_, items[j]);
        }
        publish(k, std::move(items));
      }
      std::lock_guard lock(mu_);
      analyzer.report_times(options_.times);
    } catch (...) {
      fail(std::current_exception());
      cv_.notify_all();
    }
  }

  // The next chunk to analyze, once its slot is free; false when all are claimed or the
  // pipeline failed.
  bool claim(size_t& k) {
    std::unique_lock lock(mu_);
    cv_.wait(lock,
             [&] { return failed_ || next_chunk_ >= chunks_ || next_chunk_ < consumed_ + slots_; });
    if (failed_ || next_chunk_ >= chunks_) return false;
    k = next_chunk_++;
    return true;
  }

  void publish(size_t k, std::vector<RenderedWindow> items) {
    {
      std::lock_guard lock(mu_);
      ring_[k % slots_].items = std::move(items);
      ring_[k % slots_].chunk = k;
    }
    cv_.notify_all();
  }

  // Waits for chunk k and takes its windows; false if the pipeline failed.
  bool take(size_t k, std::vector<RenderedWindow>& items) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return failed_ || ring_[k % slots_].chunk == k; });
    if (failed_) return false;
    items = std::move(ring_[k % slots_].items);
    ring_[k % slots_].chunk = SIZE_MAX;
    return true;
  }

  void mark_consumed(size_t k) {
    {
      std::lock_guard lock(mu_);
      consumed_ = k + 1;
    }
    cv_.notify_all();
  }

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = e;
    failed_ = true;
  }

  const Pag& pag_;
  const std::vector<Window>& windows_;
  const std::vector<size_t>& index_;
  const AnalysisOptions& options_;
  const unsigned threads_;
  const std::function<void(const WindowView&, RenderedWindow&)>& render_;
  const size_t n_, chunk_, chunks_, slots_;
  std::vector<Slot> ring_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_chunk_ = 0, consumed_ = 0;
  bool failed_ = false;
  std::exception_ptr error_;
};

}  // namespace

void analyze_windows_parallel(const Pag& pag, const std::vector<Window>& windows,
                              size_t first_index, const AnalysisOptions& options, unsigned threads,
                              const std::function<void(const WindowView&, RenderedWindow&)>& render,
                              const std::function<void(RenderedWindow&)>& consume,
                              const std::function<void(size_t, size_t)>& on_progress) {
  const std::vector<size_t> index = window_indexes(windows, first_index);
  if (threads <= 1 || windows.size() < 2) {
    analyze_serially(pag, windows, index, options, render, consume, on_progress);
    return;
  }
  ChunkPipeline(pag, windows, index, options, threads, render).run(consume, on_progress);
}

WindowCut cut_windows(StreamingPag& stream, int64_t origin, int64_t width, int64_t k_begin,
                      int64_t k_end, bool closed_end, std::optional<int64_t> to,
                      uint64_t& empty_before) {
  WindowCut cut;
  cut.end = windowing::border(origin, k_end, width);
  if (to) cut.end = std::min(cut.end, *to);
  cut.pag = stream.cut(windowing::border(origin, k_begin, width), cut.end, closed_end);
  cut.windows =
      plan_window_range(cut.pag, origin, width, k_begin, k_end - 1, closed_end, to, empty_before);
  return cut;
}

}  // namespace snailtrail
