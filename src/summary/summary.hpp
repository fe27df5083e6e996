// Per-window summaries (thesis §3.6): CP, conventional profiling and the single
// sampled path, grouped by activity type, worker, operator and worker pair; top-k
// critical activities; diagnostics of instrumentation quality (§3.3.4).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cp/critical_participation.hpp"
#include "pag/snapshot.hpp"
#include "summary/verdict.hpp"
#include "summary/what_if.hpp"

namespace snailtrail {

struct CommCell {
  uint32_t src;  // dense worker indices
  uint32_t dst;
  double value;
};

// One measure summed over the four groupings. In the conventional profile, `worker`,
// `op` and `op_per_worker` are shares of busy (non-waiting) time, the others shares of
// all edge time.
struct Groups {
  std::array<double, kActivityTypeCount> activity{};
  std::vector<double> worker;  // dense worker index -> value
  // Operator id -> value of all timeline edges carrying the operator id (every activity
  // type), by id.
  std::vector<std::pair<uint32_t, double>> op;
  // The same ids in the same order, each value divided by the number of workers with an
  // edge of the operator in the window (the thesis' per-worker normalisation).
  std::vector<std::pair<uint32_t, double>> op_per_worker;
  std::vector<CommCell> communication;  // by (src, dst)
};

struct TopActivity {
  uint32_t worker;  // dense index; for messages the sender
  uint32_t remote;  // receiver for messages, kNone otherwise
  ActivityType type;
  uint32_t op;  // kNone if none
  int64_t start;
  int64_t end;
  double cp;
};

struct Diagnostics {
  bool no_paths = false;  // N = 0 in every segment: no CP for this window
  uint64_t property1_violations = 0;
  uint64_t property2_violations = 0;  // maximal intervals without any non-waiting activity
  int64_t property2_ns = 0;
  int64_t input_idle_ns = 0;      // time every worker waited, some for its input (input-bound)
  uint64_t segments = 0;          // parts the window's CP was computed in (docs/PAG.md §4)
  uint64_t no_path_segments = 0;  // of which without any transient path (no CP)
  uint64_t zero_duration_cycles = 0;
  std::array<uint64_t, kIssueCount> issues{};
  double unknown_share = 0;  // of timeline time
  double waiting_share = 0;
  // Recoverable problems of the input outside the PAG, by kind: an importer's repairs
  // (Trace::import_diagnostics), late events of a live stream. Listed only when present.
  std::vector<std::pair<std::string, uint64_t>> input;
  void add_input(const std::string& kind, uint64_t n) {
    if (n == 0) return;
    for (auto& [k, v] : input)
      if (k == kind) {
        v += n;
        return;
      }
    input.emplace_back(kind, n);
  }
};

struct WindowSummary {
  uint64_t index = 0;
  Window window;
  int64_t span_start = 0, span_end = 0;
  int64_t cp_ns = 0;  // time CP is spread over: span minus idle intervals and no-path segments
  uint64_t events = 0, nodes = 0, edges = 0;
  bool has_paths = false;
  double paths_log10 = 0;
  Groups cp, conventional, single_path;
  std::vector<TopActivity> top;
  Diagnostics diagnostics;
  std::vector<WhatIf> what_if;  // analyze --what-if: largest saving first
};

// The share of the window every worker waited, some for its input (the verdict's
// input-bound rule).
// Share of the window's span (the part its events cover, not the nominal length: a run
// shorter than the window must not dilute it) in which every worker waited for input.
inline int64_t covered_length(const WindowSummary& w) {
  const int64_t span = w.span_end - w.span_start;
  return span > 0 ? span : w.window.end - w.window.start;
}
inline double input_idle_share(const WindowSummary& w) {
  const int64_t length = covered_length(w);
  return length > 0 ? static_cast<double>(w.diagnostics.input_idle_ns) / static_cast<double>(length)
                    : 0.0;
}

struct SummaryOptions {
  size_t top_k = 10;
  uint64_t seed = 1;
  // Windows with at least this many nodes use a second thread for CP and summaries; the
  // results are the same either way (tests set it to 0 to check).
  size_t split_min_nodes = size_t{1} << 20;
};

class Summarizer {
 public:
  explicit Summarizer(const Pag& pag);
  // `issues_cursor` walks Pag::issues across consecutive windows.
  void summarize(const Snapshot& snap, const CpResult& cp, const std::vector<uint32_t>& sampled,
                 const SummaryOptions& options, WindowSummary& out);

 private:
  const Pag& pag_;
  size_t issue_cursor_ = 0;
  std::vector<uint32_t> op_ids_;  // sorted: operator id -> slot by binary search
};

// Time-weighted mean of the summaries of many windows (each weighted by its span),
// for the table view of a whole run.
struct Aggregate {
  uint64_t windows = 0, windows_with_paths = 0, events = 0, edges = 0;
  int64_t weight_ns = 0;       // total cp_ns of windows with paths (weights CP)
  int64_t diag_weight_ns = 0;  // total length of all windows (weights shares)
  int64_t covered_ns = 0;      // total span of all windows (covered_length)
  // From the first window's covered start to the last one's covered end (the part of the
  // trace analyzed); first > last while no window was added.
  int64_t covered_first = INT64_MAX, covered_last = INT64_MIN;
  Groups cp, conventional, single_path;
  Diagnostics diagnostics;  // counts summed; shares time-weighted
  std::vector<TopActivity> top;
  // What-if savings summed over the windows, largest first (peer-median items summed
  // whatever their factor in each window; `speedup` is then the largest one).
  std::vector<WhatIf> what_if;
  VerdictTally verdicts;  // the windows' verdicts, for the run's (decide_run_verdict)
  void add(const WindowSummary& w, size_t top_k);
  void finish();
};

}  // namespace snailtrail
