// `snailtrail analyze`: CP analysis of a trace file, window by window.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "cli/analyze_ranks.hpp"
#include "cli/analyze_run.hpp"
#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "cli/trace_input.hpp"
#include "cli/verdict_ds2.hpp"
#include "importers/auto_window.hpp"
#include "importers/importer.hpp"
#include "mpi/rank_group.hpp"
#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "summary/streamed.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

// This process's peak resident set (VmHWM). Unlike getrusage's ru_maxrss it does not
// include the parent's memory when the process was spawned with vfork semantics.
uint64_t peak_rss_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lu kB", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

}  // namespace

void AnalyzeRun::set_options() {
  // --window auto: 1 s until the importer is known (a .snail file read block by block is
  // a stream); then the choice of importers/auto_window.hpp.
  auto_window_ = a_.in.window == "auto";
  apply_window_options(a_.in, opt_);
  if (auto_window_) a_.in.window = "1s";
  sel_ = SummarySelection::parse(a_.summary);
  opt_.summary.top_k = a_.top;
  opt_.what_if.enabled = sel_.what_if = a_.what_if;
  opt_.what_if.speedup = a_.what_if_speedup;
  if (a_.timings) opt_.times = &stage_;
  opt_.pag.threads = a_.in.threads;           // 0: the builder's default
  opt_.path_counts = !a_.dump_edges.empty();  // only the edge dump reads them
  show_progress_ = !a_.no_progress && isatty(STDERR_FILENO) && !helper_rank();
}

void AnalyzeRun::read_trace() {
  if (snail_) {
    const TraceFacts& facts = snail_->index().facts;
    trace_ = snail_->names();
    pag_ = names_pag(facts);
    event_count_ = facts.events;
    if (auto_window_) auto_choice_ = resolve_auto_window("snail", opt_);
  } else {
    std::string_view used;
    trace_ = read_whole_trace(a_.in, show_progress_, &used);
    if (auto_window_) {
      auto_choice_ = resolve_auto_window(used, opt_);
      a_.in.window = auto_choice_.label;
    }
  }
  t_read_ = Clock::now();
  if (!snail_) {
    if (show_progress_)
      fmt::print(stderr, "\rbuilding the PAG of {} events...", trace_.events.size());
    pag_ = build_pag(trace_, opt_.pag);
    if (show_progress_) fmt::print(stderr, "\r\033[K");
    // The events are in the PAG now; their memory is reused for the windows.
    event_count_ = trace_.events.size();
    BigVector<Event>().swap(trace_.events);
  }
  t_pag_ = Clock::now();
  resolve_time_range(a_.in, pag_, opt_);
  names_.emplace(trace_, pag_);
}

void AnalyzeRun::prepare_output() {
  // Under mpirun rank 0 creates the output; the other ranks write their parts into it
  // (cli/analyze_ranks.hpp) or send them to rank 0.
  out_.emplace(helper_rank() ? "/dev/null" : a_.output);
  if (!a_.dump_edges.empty()) edges_ = std::make_unique<OutputFile>(a_.dump_edges);
  ctx_ = TableContext{a_.in.trace, a_.in.window, a_.top, 12, a_.per_window, pag_.first_ts};
  if (auto_window_) {
    // Marked in the table's heading (80 columns: the reason goes to stderr, as for the
    // other formats).
    ctx_.window_label += " (--window auto)";
    if (!helper_rank())
      fmt::print(stderr, "snailtrail: note: --window auto chose {}: {} (--window sets another)\n",
                 a_.in.window == "whole" ? "the whole trace" : a_.in.window, auto_choice_.reason);
  }
  if (a_.format == "csv") write_csv_header(out_->buf());
  if (snail_) splan_ = plan_streamed(snail_->index().facts, opt_.windows);
  if (!helper_rank() && (snail_ ? splan_.empty() : plan_windows(pag_, opt_.windows).empty()))
    fmt::print(stderr, "snailtrail: warning: {}\n", no_window_message(pag_));
  threads_ = analysis_threads(a_.in);
  // The table's totals and JSONL's last line (the run and its verdict) need every window's
  // summary (under mpirun the other ranks send theirs to rank 0).
  keep_summary_ = a_.format == "table" || a_.format == "jsonl";
  if (sel_.verdict && keep_summary_ && !helper_rank())
    ctx_.enrich = ds2_enricher(a_.in.trace, a_.in.importer, a_.in.import, opt_.windows.width_ns);
}

void AnalyzeRun::progress(size_t done, size_t total) {
  if (!show_progress_) return;
  const auto now = Clock::now();
  if (done == total || now - last_progress_ > std::chrono::milliseconds(200)) {
    last_progress_ = now;
    // Remaining time at the rate so far (windows of a trace cost about the same).
    const double spent = seconds(t0_, now);
    const double eta = done > 0 ? spent * static_cast<double>(total - done) / done : 0.0;
    fmt::print(stderr, "\ranalyzing {}: window {}/{}, {:.0f} s left\033[K{}", a_.in.trace, done,
               total, eta, done == total ? "\n" : "");
  }
}

void AnalyzeRun::analyze_share(int64_t kb, int64_t ke,
                               const std::function<void(RenderedWindow&)>& consume,
                               const std::function<int64_t(int64_t)>& claim) {
  if (group_ && ke < kb) return;  // a rank without windows
  StreamedCallbacks cb;
  cb.render = [this](const WindowView& v, RenderedWindow& r) { render(v, r); };
  cb.consume = consume;
  cb.on_progress = [this](size_t done, size_t total) { progress(done, total); };
  cb.claim = claim;
  sstats_ = analyze_snail_streamed(*snail_, opt_, splan_, kb, ke, threads_, cb);
}

void AnalyzeRun::finish() {
  if (empty_windows_ > 0)
    fmt::print(stderr,
               "snailtrail: note: {} windows without events (in {} run(s) following a window "
               "without events) were not analyzed{}\n",
               empty_windows_, empty_runs_,
               a_.format == "jsonl" ? ": one \"empty_windows\" line per run (docs/OUTPUT.md)" : "");
  if (a_.format == "jsonl" && keep_summary_) {
    agg_.finish();
    write_run_json(out_->buf(), agg_, *names_, sel_, ctx_.enrich);
    out_->buf().push_back('\n');
  }
  if (a_.format == "table") {
    agg_.finish();
    write_table(out_->buf(), agg_, *names_, sel_, ctx_,
                fmt::format("snailtrail analyze {}", a_.in.trace).c_str());
  }
  out_->flush();
}

void AnalyzeRun::print_timings() const {
  fmt::print(stderr,
             "timings: read {:.3f}s, pag {:.3f}s; per-thread sums: snapshots {:.3f}s, cp "
             "{:.3f}s, summaries {:.3f}s, render {:.3f}s; total {:.3f}s for {} events; "
             "peak_rss_kb={}\n",
             seconds(t0_, t_read_), seconds(t_read_, t_pag_), stage_.snapshot_s, stage_.cp_s,
             stage_.summary_s, stage_.callback_s, seconds(t0_, Clock::now()), event_count_,
             peak_rss_kb());
  if (snail_)
    fmt::print(stderr,
               "streamed: {} of {} bytes read in {} blocks, lookback {} ns, at most {} PAG "
               "nodes held, at most {} half messages waiting ({} out of correlator order)\n",
               snail_->bytes_read(), snail_->file_size(), sstats_.blocks_read, sstats_.lookback_ns,
               sstats_.peak_retained_nodes, sstats_.peak_open_halves,
               snail_->index().facts.reordered_halves);
}

int AnalyzeRun::run() {
  set_options();
  // Edges are dumped from the whole trace's PAG.
  if (a_.dump_edges.empty()) snail_ = open_streamed_trace(a_.in, opt_);
  // Under mpirun only a streamed analysis is split; otherwise rank 0 does it all.
  if (helper_rank() && !snail_) return 0;
  read_trace();
  if (snail_ &&
      !keep_streamed(a_.in, *snail_, plan_streamed(snail_->index().facts, opt_.windows))) {
    snail_.reset();  // every rank decides the same: rank 0 then does it all
    if (helper_rank()) return 0;
    read_trace();
  }
  prepare_output();
  if (!snail_)
    analyze_pag_parallel(
        pag_, opt_, threads_, [this](const WindowView& v, RenderedWindow& r) { render(v, r); },
        [this](RenderedWindow& r) { consume_one(r); },
        [this](size_t done, size_t total) { progress(done, total); });
  else if (!group_)
    analyze_share(splan_.k0, splan_.k1, [this](RenderedWindow& r) { consume_merging(r); });
  else
    analyze_split();
  if (helper_rank()) return 0;
  flush_run();
  finish();
  if (a_.timings) print_timings();
  return 0;
}

CommandRunner add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  AnalyzeArgs& an = *args;
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Rank activities by critical participation (CP), window by window");
  add_trace_input_options(cmd, an.in, "output");
  cmd->add_option("--format,-f", an.format, "Output: table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  cmd->add_option("--summary", an.summary,
                  "Comma list of activity, worker, operator, communication, top, diagnostics, "
                  "or all")
      ->capture_default_str();
  cmd->add_option("--top", an.top, "Number of top critical activities")->capture_default_str();
  cmd->add_option("--dump-edges", an.dump_edges, "Write every PAG edge as JSONL to FILE");
  cmd->add_flag("--per-window", an.per_window, "Table: also print every window's table");
  cmd->add_flag("--what-if", an.what_if,
                "For the most critical workers, operators and activity types: how much shorter "
                "each window's critical path would be if they were faster (docs/OUTPUT.md)");
  cmd->add_option("--what-if-speedup", an.what_if_speedup,
                  "With --what-if: the speed-up tried (k times faster)")
      ->default_val(2)
      ->check(CLI::Range(1.01, 1e6));
  cmd->add_option("--output,-o", an.output, "Write results to FILE instead of stdout");
  cmd->add_flag("--no-progress", an.no_progress, "Never print progress on stderr");
  cmd->add_flag("--timings", an.timings, "Print the time spent in each stage on stderr");
  return [cmd, args]() {
    if (!*cmd) return -1;
    return run_on_ranks([&](mpi::RankGroup* group) { return AnalyzeRun(*args, group).run(); });
  };
}

}  // namespace snailtrail::cli
