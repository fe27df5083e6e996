// What `analyze` and `report` share, so that they cannot drift apart: the options that say
// which trace to read and how to cut it into windows (registered once, with one help
// text), and the steps that turn those options into a trace ready for the window
// pipeline (summary/analysis.hpp, summary/streamed.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "importers/importer.hpp"
#include "pag/timeline.hpp"
#include "summary/analysis.hpp"
#include "summary/streamed.hpp"

namespace snailtrail::cli {

struct TraceInputArgs {
  std::string trace;
  std::string window = "auto";
  std::string gap_threshold = "100us";
  std::string from, to;
  // The importer reading TRACE: --importer, with "auto" resolved once the command line is
  // parsed (importers::resolve_importer); `importer_option` keeps what --importer said.
  std::string importer = "auto";
  std::string importer_option = "auto";
  importers::ImportOptions import;  // --map, --spark-delay-split, --log-format, --log-id
  uint64_t seed = 1;
  bool in_memory = false;
  bool streamed = false;  // block by block even when a window holds a quarter of the trace
  unsigned threads = 0;
};

// Registers TRACE (positional, required unless `trace_optional`), --window, --gap-threshold,
// --from, --to, --importer and the importers' own options, --seed, --in-memory, --streamed
// and --threads.
void add_trace_input_options(CLI::App* cmd, TraceInputArgs& a, std::string_view what_in_memory,
                             bool trace_optional = false);

// --window and --gap-threshold into `opt`. `--window auto` counts as 1 s until the importer
// is known (resolve_auto_window).
void apply_window_options(const TraceInputArgs& a, AnalysisOptions& opt);

// What --window auto chose: the window label ("1s", "whole"), why, and `opt` set to it.
struct AutoWindowChoice {
  std::string label;
  std::string reason;
};
AutoWindowChoice resolve_auto_window(std::string_view importer, AnalysisOptions& opt);

// The number of threads analyzing windows: --threads, or one per core.
unsigned analysis_threads(const TraceInputArgs& a);

// The whole trace in memory, read with the importer options, `progress` on stderr; warns
// when the file was cut mid-record; `used` gets the importer that read it. Throws on an
// empty trace.
Trace read_whole_trace(const TraceInputArgs& a, bool progress, std::string_view* used);

// A .snail (or native JSONL) trace read block by block when the analysis allows it
// (tumbling windows, not --in-memory), else null.
std::unique_ptr<SnailFile> open_streamed_trace(const TraceInputArgs& a, const AnalysisOptions& opt);

// Whether a .snail file opened block by block is best analyzed so with `plan`: unless
// --streamed, not when one window holds a quarter or more of its events (streaming_pays),
// unless it was spooled from JSONL.
bool keep_streamed(const TraceInputArgs& a, const SnailFile& snail, const StreamedPlan& plan);

// --from/--to into `opt`: absolute instants, or relative to the trace's first event.
void resolve_time_range(const TraceInputArgs& a, const Pag& pag, AnalysisOptions& opt);

// What to say when --from/--to leave no window to analyze (`analyze` warns and writes no
// window; `report` stops: a report without a window shows nothing).
std::string no_window_message(const Pag& pag);

// A trace opened for the window pipeline: a .snail trace read block by block when the
// analysis allows it (`snail` set; `trace` holds only the names, `pag` only the ids, for
// the names; `plan` is its window plan), else the whole trace in memory with its PAG
// (`trace.events` kept: the caller frees them when it no longer needs them).
struct AnalysisInput {
  std::unique_ptr<SnailFile> snail;
  Trace trace;
  Pag pag;
  StreamedPlan plan;
  // False when --from/--to leave no window to analyze.
  bool has_windows(const AnalysisOptions& opt) const;
};

// Opens `a.trace` as the options allow (open_streamed_trace; read whole when
// `whole_if_profile` and the .snail file has a profile block), with `progress` on
// stderr; resolves --window auto for the importer that read it (a.window becomes its
// label; a note says which on stderr) and --from/--to. `opt` holds the window options
// already (apply_window_options). A `helper_rank` under mpirun (rank > 0) prints no notes
// and reads nothing when the trace is not streamed (rank 0 then does it all): `snail`
// stays null.
AnalysisInput open_analysis_input(TraceInputArgs& a, AnalysisOptions& opt, bool progress,
                                  bool whole_if_profile, bool helper_rank = false);

// Runs the ordered window pipeline over the input: block by block when streamed, else
// over its PAG in memory (summary/analysis.hpp). Returns how a streamed trace was read.
StreamedStats analyze_input(AnalysisInput& in, const AnalysisOptions& opt, unsigned threads,
                            const std::function<void(const WindowView&, RenderedWindow&)>& render,
                            const std::function<void(RenderedWindow&)>& consume,
                            const std::function<void(size_t, size_t)>& on_progress);

}  // namespace snailtrail::cli
