// `snailtrail analyze`: rendering the windows' outputs on the analysis threads and writing
// them in order (runs of windows without events merged), split from analyze_command.cpp.
#include <algorithm>
#include <memory>
#include <optional>

#include "cli/analyze_run.hpp"
#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "summary/streamed.hpp"

namespace snailtrail::cli {

// A run of windows without events.
void AnalyzeRun::render_run(const WindowSummary& summary, RenderedWindow& r) const {
  fmt::memory_buffer text;
  if (a_.format == "jsonl") {
    write_empty_windows_json(text, summary);
    text.push_back('\n');
  } else if (a_.format == "table" && a_.per_window) {
    fmt::format_to(std::back_inserter(text),
                   "== windows {} to {} [{}, {}]: no events, not analyzed\n\n", summary.index,
                   summary.index + summary.window.empty_run - 1, summary.window.start,
                   summary.window.end);
  }
  r.text.assign(text.data(), text.size());
  r.edges.clear();
}

// The run of windows without events that `runs` holds, rendered.
RenderedWindow AnalyzeRun::take_run(EmptyRunMerger& runs) const {
  RenderedWindow w;
  w.summary = runs.take();
  render_run(w.summary, w);
  return w;
}

// Runs on the analysis threads: writes only to `r`.
void AnalyzeRun::render(const WindowView& view, RenderedWindow& r) const {
  if (view.summary.window.empty_run > 0) {
    render_run(view.summary, r);
    return;
  }
  // The importer's repairs concern the whole trace: reported with the first window.
  const bool first = view.summary.index == 0 && !trace_.import_diagnostics.empty();
  WindowSummary with_import;
  if (first) {
    with_import = view.summary;
    for (const auto& [kind, n] : trace_.import_diagnostics)
      with_import.diagnostics.add_input(kind, n);
  }
  const WindowView v{view.pag, view.snapshot, view.cp, first ? with_import : view.summary};
  // One buffer per rendering thread, kept across windows: a window's JSON (hundreds of KB
  // with many workers) is written without growing and copying the buffer each time.
  static thread_local fmt::memory_buffer text;
  text.clear();
  if (a_.format == "jsonl") {
    write_window_json(text, v.summary, *names_, sel_);
    text.push_back('\n');
  } else if (a_.format == "csv") {
    write_window_csv(text, v.summary, *names_, sel_);
  } else if (a_.per_window) {
    Aggregate one;
    one.add(v.summary, a_.top);
    one.finish();
    TableContext window_ctx = ctx_;
    window_ctx.column_key = false;  // once, in the table of the whole run
    window_ctx.enrich = {};         // DS2's number is the whole trace's
    write_table(text, one, *names_, sel_, window_ctx,
                fmt::format("== window {} [{}, {}]", v.summary.index, v.summary.window.start,
                            v.summary.window.end)
                    .c_str());
    text.push_back('\n');
  }
  r.text.assign(text.data(), text.size());
  if (edges_) {
    fmt::memory_buffer e;
    write_edges_jsonl(e, v);
    r.edges.assign(e.data(), e.size());
  }
}

void AnalyzeRun::add_to_totals(RenderedWindow& r) {
  if (r.summary.index == 0)
    for (const auto& [kind, n] : trace_.import_diagnostics)
      r.summary.diagnostics.add_input(kind, n);
  if (keep_summary_) agg_.add(r.summary, a_.top);
}

// Writes a window (or a run of windows without events) in order.
void AnalyzeRun::consume_one(RenderedWindow& r) {
  if (r.summary.window.empty_run > 0) {
    ++empty_runs_;
    empty_windows_ += r.summary.window.empty_run;
  } else {
    add_to_totals(r);
  }
  out_->buf().append(r.text.data(), r.text.data() + r.text.size());
  out_->maybe_flush();
  if (edges_ && r.summary.window.empty_run == 0) {
    edges_->buf().append(r.edges.data(), r.edges.data() + r.edges.size());
    edges_->maybe_flush();
  }
}

// Runs of windows without events that meet where two cuts meet are one run.
void AnalyzeRun::consume_merging(RenderedWindow& r) {
  if (runs_.absorb(r.summary)) return;
  flush_run();
  consume_one(r);
}

void AnalyzeRun::flush_run() {
  if (!runs_.pending()) return;
  RenderedWindow run = take_run(runs_);
  consume_one(run);
}

}  // namespace snailtrail::cli
