// Output formats of `snailtrail analyze`: JSONL per window, CSV rows, the terminal
// table, and the PAG edge dump. Schemas: docs/OUTPUT.md.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "output/names.hpp"
#include "summary/analysis.hpp"

namespace snailtrail {

// Which summaries to print (--summary LIST).
struct SummarySelection {
  bool activity = true, worker = true, op = true, communication = true, top = true,
       diagnostics = true;
  bool verdict = true;   // the finding in one or two sentences (summary/verdict.hpp)
  bool what_if = false;  // analyze --what-if (not part of "all": it costs analysis time)
  // Parses "activity,worker,..." ("all" selects everything). Throws std::invalid_argument.
  static SummarySelection parse(const std::string& list);
};

// One JSON object (no trailing newline) for a window.
void write_window_json(fmt::memory_buffer& out, const WindowSummary& w, const Names& names,
                       const SummarySelection& sel);

void write_csv_header(fmt::memory_buffer& out);
void write_window_csv(fmt::memory_buffer& out, const WindowSummary& w, const Names& names,
                      const SummarySelection& sel);

// The verdict object of a window, with its hints (docs/OUTPUT.md; also in the report's
// data).
void write_verdict_json(fmt::memory_buffer& out, const WindowSummary& w, const Names& names);
// Adds what only the caller knows to the run's verdict (cli/verdict_ds2.hpp: DS2's
// parallelism for an operator verdict when the trace carries rates).
using VerdictEnricher = std::function<void(Verdict&)>;
// The whole run's verdict object (summary/verdict.hpp decide_run_verdict): the window
// verdict's keys plus "windows", "windows_with_paths", "others" (docs/OUTPUT.md).
void write_run_verdict_json(fmt::memory_buffer& out, const Aggregate& agg, const Names& names,
                            const VerdictEnricher& enrich = {});
// JSONL's last line: {"run": {...}, "verdict": {...}, "what_if": [...]} (docs/OUTPUT.md).
void write_run_json(fmt::memory_buffer& out, const Aggregate& agg, const Names& names,
                    const SummarySelection& sel, const VerdictEnricher& enrich = {});
// One what-if item as a JSON object.
void put_what_if(fmt::memory_buffer& out, const WhatIf& x, const Names& names);

// A window's diagnostics as one JSON object. JSONL keeps every digit and the segment counts;
// the report rounds to `significant` digits and leaves the segments out.
struct DiagnosticsJson {
  bool segments = true;
  int significant = 0;  // 0: shortest round-trip
};
void put_diagnostics(fmt::memory_buffer& out, const Diagnostics& d, DiagnosticsJson style = {});

// Counts by kind as one JSON object, `{"perf.bad_frames": 2, "perf.empty_stacks": 1}`
// (compact: `{"a":2,"b":1}`), the kinds written as names (kJsonNames): the import
// diagnostics of analyze's JSON and of the kernel, logs, critical-path and flamegraph
// commands.
void put_counts(fmt::memory_buffer& out,
                const std::vector<std::pair<std::string, uint64_t>>& counts, bool compact = false);

// One JSON line per snapshot edge, waiting edges included.
void write_edges_jsonl(fmt::memory_buffer& out, const WindowView& view);

struct TableContext {
  std::string source;
  std::string window_label;  // e.g. "1s" or "whole"
  size_t top_k = 10;
  size_t max_rows = 12;  // per summary
  bool per_window = false;
  int64_t origin_ns = 0;             // start times in the top list are shown relative to this
  bool column_key = true;            // start with the "Columns:" key saying what each column is
  VerdictEnricher enrich = nullptr;  // for the run's verdict (optional)
};

// The 80-column report for an aggregate of windows.
void write_table(fmt::memory_buffer& out, const Aggregate& agg, const Names& names,
                 const SummarySelection& sel, const TableContext& ctx, const char* heading);

}  // namespace snailtrail
