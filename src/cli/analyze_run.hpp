// `snailtrail analyze`'s run (cli/analyze_command.cpp); its sharing of windows over the
// ranks of mpirun is in cli/analyze_split.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cli/analyze_ranks.hpp"
#include "cli/output_file.hpp"
#include "cli/trace_input.hpp"
#include "importers/auto_window.hpp"
#include "mpi/rank_group.hpp"
#include "output/writers.hpp"
#include "summary/streamed.hpp"
#include "trace/snail_index.hpp"

namespace snailtrail::cli {

struct AnalyzeArgs {
  TraceInputArgs in;
  std::string format = "table";
  std::string summary = "all";
  size_t top = 10;
  std::string dump_edges;
  bool per_window = false;
  std::string output;
  bool no_progress = false;
  bool timings = false;
  bool what_if = false;
  double what_if_speedup = 2;
};

using Clock = std::chrono::steady_clock;
inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
double cpu_seconds();  // this process's CPU time

// One `analyze` run: read the trace (a .snail file block by block, anything else whole
// into a PAG), analyze its windows in parallel, write them in window order, then the
// run's totals. Under mpirun the windows of a .snail file are shared by the ranks
// (cli/analyze_ranks.hpp).
class AnalyzeRun {
 public:
  AnalyzeRun(const AnalyzeArgs& args, mpi::RankGroup* group) : a_(args), group_(group) {}
  int run();

 private:
  bool helper_rank() const { return group_ && group_->rank() > 0; }
  void set_options();
  void read_trace();
  void prepare_output();
  void render(const WindowView& view, RenderedWindow& r) const;
  void render_run(const WindowSummary& summary, RenderedWindow& r) const;
  RenderedWindow take_run(EmptyRunMerger& runs) const;
  void consume_one(RenderedWindow& r);
  void consume_merging(RenderedWindow& r);
  void flush_run();
  void add_to_totals(RenderedWindow& r);
  void progress(size_t done, size_t total);
  void analyze_share(int64_t kb, int64_t ke, const std::function<void(RenderedWindow&)>& consume,
                     const std::function<int64_t(int64_t)>& claim = {});
  std::vector<std::vector<RenderedWindow>> steal_windows();
  void analyze_split();
  void root_gathers(int64_t kb, int64_t ke);
  void helper_sends(int64_t kb, int64_t ke);
  void helper_writes(int64_t kb, int64_t ke);
  void write_part(int64_t kb, int64_t ke, std::optional<Handover>& before,
                  const std::function<void(bool)>& poll,
                  const std::function<int64_t(int64_t)>& claim,
                  const std::function<void()>& settle);
  void finish();
  void print_rank_timings(int64_t kb, int64_t ke, Clock::time_point own,
                          Clock::time_point written) const;
  void print_timings() const;

  AnalyzeArgs a_;
  mpi::RankGroup* group_;
  const Clock::time_point t0_ = Clock::now();
  Clock::time_point t_read_, t_pag_, last_progress_ = t0_;
  bool auto_window_ = false, show_progress_ = false, keep_summary_ = false;
  AutoWindowChoice auto_choice_;
  AnalysisOptions opt_;
  SummarySelection sel_;
  StageTimes stage_;
  std::unique_ptr<SnailFile> snail_;
  Trace trace_;
  Pag pag_;  // in memory: the whole trace's; streamed: only the worker ids, for the names
  size_t event_count_ = 0;
  std::optional<Names> names_;
  std::optional<OutputFile> out_;
  std::unique_ptr<OutputFile> edges_;
  Aggregate agg_;
  TableContext ctx_;
  StreamedPlan splan_;
  unsigned threads_ = 1;
  uint64_t empty_runs_ = 0, empty_windows_ = 0;
  EmptyRunMerger runs_;  // runs of windows without events that meet are one run
  bool direct_ = false;  // under mpirun: the ranks write their own parts of the output
  StreamedStats sstats_;
  int64_t moved_ = 0;   // windows rank 0 took from the last rank's share
  double cpu_own_ = 0;  // --timings under mpirun: CPU time when this rank's windows were done
};

}  // namespace snailtrail::cli
