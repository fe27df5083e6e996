// Tumbling-window analysis of a .snail file read block by block (docs/PERFORMANCE.md,
// "Bounded memory"): events go into a StreamingPag (the gap-filling state carried from
// block to block), windows are cut out and analyzed as soon as every worker has moved
// past them, and what no later window needs is dropped. Memory is O(window + workers +
// messages in flight), whatever the trace's length; the output is that of analyze_pag on
// the whole trace's PAG, window for window.
//
// Exactness rests on facts the file's block index states (trace/snail_index.hpp): each
// worker's events in time order, no correlator used twice (in any order: halves are
// matched by key, TraceFacts::correlators_unique), and every message's delay
// below `max_delay` (the lateness waited for before a window is cut).
// streamed_analysis_possible() says when they hold; otherwise the caller reads the whole
// trace.
//
// A range of windows (--from/--to, or one MPI rank's share) starts reading a lookback
// before its first window: long enough that every message crossing into the range and
// the windows without events before it are read, and that each worker's gap-filling
// state is provably that of a read from the start: the worker has a "reset node" in the
// lookback (a node at least the gap threshold after the worker's previous event, whose
// lowest started activity has more starts than ends, so that the builder's state after it
// does not depend on anything earlier), or its whole history is in the lookback. If not,
// the lookback doubles, up to the start of the trace.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "summary/analysis.hpp"
#include "trace/snail_index.hpp"

namespace snailtrail {

// Empty if the file's facts allow a streamed analysis with these options; else why not.
std::string streamed_analysis_obstacle(const TraceFacts& facts, const AnalysisOptions& options);

// The window plan of plan_windows(), from the facts alone: windows k0..k1 of width w
// aligned to `origin`; `to` caps the last one. Empty (k1 < k0) if nothing to analyze.
struct StreamedPlan {
  int64_t origin = 0, width = 0, k0 = 0, k1 = -1;
  std::optional<int64_t> to;
  bool empty() const { return k1 < k0; }
  uint64_t count() const { return empty() ? 0 : static_cast<uint64_t>(k1 - k0 + 1); }
  int64_t start_of(int64_t k) const;  // border of window k (saturated)
};
StreamedPlan plan_streamed(const TraceFacts& facts, const WindowSpec& spec);

// Splits the plan's windows into consecutive shares, one per weight, with numbers of
// events about proportional to the weights, by the block index (each block's events
// taken as spread evenly over its time range): returns weights.size() + 1 borders, share r
// being windows [b[r], b[r+1]) (b[0] = k0, b.back() = k1 + 1). How ranks under mpirun
// share the windows.
std::vector<int64_t> split_windows_by_events(const SnailIndex& index, const StreamedPlan& plan,
                                             const std::vector<double>& weights);

// Windows of a streamed run are cut in batches of at least this many: a plan of at most
// this many windows is cut once, when reading is done, by StreamingPag::take (the
// streamed PAG's arrays freed as they are copied, the events never held whole).
inline constexpr int64_t kOneCutWindows = 8;

// Whether reading block by block is worth it: false when one planned window holds a
// quarter or more of the file's events (by the block index). Reading it whole builds the
// PAG on every thread and reuses the events' memory for the analysis: a single 256 s
// window streamed holds 0.92x the memory but costs 1.4-1.6x the CPU time (page faults),
// docs/PERFORMANCE.md "issue 39, seventh round".
bool streaming_pays(const SnailIndex& index, const StreamedPlan& plan);

struct StreamedStats {
  uint64_t blocks_read = 0;
  uint64_t events_read = 0;  // in the blocks read for the windows (lookback included)
  int64_t lookback_ns = 0;   // lookback actually used before the first window (0: none)
  size_t peak_retained_nodes = 0;
  // Half messages waiting for their partner, at most (after each block): the reorder
  // buffer of the message join, bounded by the messages in flight whatever the order of
  // their correlators.
  size_t peak_open_halves = 0;
};

// Analyzes windows k_begin..k_end (inclusive, within the plan) of the file. Callbacks as
// analyze_windows_parallel: `consume` gets windows in order, with the indexes of the
// whole plan; runs of windows without events may be split where cuts meet (the caller
// merges adjacent runs: consecutive RenderedWindows with empty_run > 0). `on_progress`
// gets (windows done, windows in [k_begin, k_end]).
StreamedStats analyze_snail_streamed(
    SnailFile& file, const AnalysisOptions& options, const StreamedPlan& plan, int64_t k_begin,
    int64_t k_end, unsigned threads,
    const std::function<void(const WindowView&, RenderedWindow&)>& render,
    const std::function<void(RenderedWindow&)>& consume,
    const std::function<void(size_t, size_t)>& on_progress = {});

// The same with every callback, and `claim`: called before each batch of windows up to
// `last` is analyzed, it returns the last window this analysis may still take (the end
// given, or lower: windows given away while it runs, as mpirun's ranks share work; never
// below a window claimed before). The analysis stops when no window is left.
struct StreamedCallbacks {
  std::function<void(const WindowView&, RenderedWindow&)> render;
  std::function<void(RenderedWindow&)> consume;
  std::function<void(size_t, size_t)> on_progress;
  std::function<int64_t(int64_t last)> claim;
};
StreamedStats analyze_snail_streamed(SnailFile& file, const AnalysisOptions& options,
                                     const StreamedPlan& plan, int64_t k_begin, int64_t k_end,
                                     unsigned threads, const StreamedCallbacks& callbacks);

}  // namespace snailtrail
