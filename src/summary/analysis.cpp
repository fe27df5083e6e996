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
        segmented_(pag),
        summarizer_(pag),
        what_if_(pag) {
    computer_.set_split_min_nodes(options.summary.split_min_nodes);
    segmented_.set_split_min_nodes(options.summary.split_min_nodes);
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
    snapshotter_.build(window, snap_);
    plan_segments(pag_, snap_, plan_);
    lap(times_.snapshot_s);
    // One independent stream per window, so results do not depend on which windows ran.
    const uint64_t seed =
        options_.summary.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(window.start);
    sampled_.clear();
    if (!options_.segments || plan_.whole()) {
      computer_.compute(snap_, cp_);
      if (options_.sample_single_path) sampled_ = computer_.sample_path(snap_, cp_, seed);
    } else {
      // The what-if recomputes the window's longest path on the whole window, not on
      // the segments laid side by side.
      if (options_.what_if.enabled) plain_snap_ = snap_;
      segmented_.compute(plan_, snap_, cp_, options_.sample_single_path ? &seed : nullptr,
                         sampled_);
    }
    cp_.property2_violations = plan_.idle.size();
    cp_.property2_ns = 0;
    for (const auto& [a, b] : plan_.idle) cp_.property2_ns += b - a;
    lap(times_.cp_s);
    summary_.index = index;
    summarizer_.summarize(snap_, cp_, sampled_, options_.summary, summary_);
    if (options_.what_if.enabled) {
      const bool whole = !options_.segments || plan_.whole();
      what_if_.analyze(whole ? snap_ : plain_snap_, options_.what_if, summary_);
    }
    lap(times_.summary_s);
    with_view(WindowView{pag_, snap_, cp_, summary_});
    lap(times_.callback_s);
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
  CpComputer computer_;
  SegmentedCp segmented_;
  SegmentPlan plan_;
  Summarizer summarizer_;
  WhatIfAnalyzer what_if_;
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
                     const std::function<void(const WindowView&)>& on_window) {
  const std::vector<size_t> index = window_indexes(windows, first_index);
  WindowAnalyzer analyzer(pag, options);
  for (size_t i = 0; i < windows.size(); ++i) analyzer.run(windows[i], index[i], on_window);
  analyzer.report_times(options.times);
}

void analyze_pag_parallel(const Pag& pag, const AnalysisOptions& options, unsigned threads,
                          const std::function<void(const WindowView&, RenderedWindow&)>& render,
                          const std::function<void(RenderedWindow&)>& consume,
                          const std::function<void(size_t, size_t)>& on_progress) {
  const std::vector<Window> windows = plan_windows(pag, options.windows);
  const std::vector<size_t> index = window_indexes(windows, 0);
  const size_t n = windows.size();
  if (threads <= 1 || n < 2) {
    WindowAnalyzer analyzer(pag, options);
    RenderedWindow out;
    for (size_t i = 0; i < n; ++i) {
      out.text.clear();
      out.edges.clear();
      analyzer.run(windows[i], index[i], [&](const WindowView& v) {
        render(v, out);
        out.summary = v.summary;
      });
      consume(out);
      if (on_progress) on_progress(i + 1, n);
    }
    analyzer.report_times(options.times);
    return;
  }
  // Chunks of consecutive windows, claimed in order by the threads; at most `slots`
  // chunks are finished and not yet consumed, which bounds memory.
  const size_t chunk = std::clamp<size_t>(n / (size_t{threads} * 8), 1, 64);
  const size_t chunks = (n + chunk - 1) / chunk;
  const size_t slots = 2 * size_t{threads};
  struct Slot {
    std::vector<RenderedWindow> items;
    size_t chunk = SIZE_MAX;  // which chunk is ready in it
  };
  std::vector<Slot> ring(slots);
  std::mutex mu;
  std::condition_variable cv;
  size_t next_chunk = 0, consumed = 0;
  bool failed = false;
  std::exception_ptr error;

  auto worker = [&] {
    try {
      WindowAnalyzer analyzer(pag, options);
      for (;;) {
        size_t k;
        {
          std::unique_lock lock(mu);
          cv.wait(lock,
                  [&] { return failed || next_chunk >= chunks || next_chunk < consumed + slots; });
          if (failed || next_chunk >= chunks) break;
          k = next_chunk++;
        }
        std::vector<RenderedWindow> items(std::min(chunk, n - k * chunk));
        for (size_t j = 0; j < items.size(); ++j) {
          const size_t i = k * chunk + j;
          analyzer.run(windows[i], index[i], [&](const WindowView& v) {
            render(v, items[j]);
            items[j].summary = v.summary;
          });
        }
        {
          std::lock_guard lock(mu);
          ring[k % slots].items = std::move(items);
          ring[k % slots].chunk = k;
        }
        cv.notify_all();
      }
      std::lock_guard lock(mu);
      analyzer.report_times(options.times);
    } catch (...) {
      std::lock_guard lock(mu);
      if (!error) error = std::current_exception();
      failed = true;
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  try {
    for (size_t k = 0; k < chunks; ++k) {
      std::vector<RenderedWindow> items;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return failed || ring[k % slots].chunk == k; });
        if (failed) break;
        items = std::move(ring[k % slots].items);
        ring[k % slots].chunk = SIZE_MAX;
      }
      for (RenderedWindow& w : items) consume(w);
      {
        std::lock_guard lock(mu);
        consumed = k + 1;
      }
      cv.notify_all();
      if (on_progress) on_progress(std::min(n, (k + 1) * chunk), n);
    }
  } catch (...) {
    std::lock_guard lock(mu);
    if (!error) error = std::current_exception();
    failed = true;
  }
  {
    std::lock_guard lock(mu);
    if (error) failed = true;
  }
  cv.notify_all();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace snailtrail
