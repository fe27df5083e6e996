// `mpirun ... analyze`: the ranks' shares of the windows and how their output comes
// together (cli/analyze_ranks.hpp).
#include <time.h>

#include "cli/analyze_ranks.hpp"
#include "cli/analyze_run.hpp"

namespace snailtrail::cli {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Rank r takes the r-th share of the windows, in order, by events (the block index's
// counts); rank 0's is smaller by what it does at the end (root_weight).
void AnalyzeRun::analyze_split() {
  direct_ = ranks_write_output(a_.output);
  const auto [kb, ke] =
      rank_share(*group_, snail_->index(), splan_,
                 direct_ ? RootDuty::writes_own_part : RootDuty::writes_every_part);
  if (group_->rank() == 0)
    root_gathers(kb, ke);
  else if (direct_)
    helper_writes(kb, ke);
  else
    helper_sends(kb, ke);
}

// Rank 0: its own windows, then every other rank's summaries (and, unless the ranks write
// their own parts, their rendered windows), in window order.
void AnalyzeRun::root_gathers(int64_t kb, int64_t ke) {
  group_->start_receiving();
  if (direct_) group_->expect_message();
  analyze_share(kb, ke, [this](RenderedWindow& r) { consume_merging(r); });
  const auto t_own = Clock::now();
  cpu_own_ = cpu_seconds();
  if (direct_) {
    // Hand the output on to rank 1; the last rank hands it back when all parts are written.
    Handover h{out_->position(), empty_runs_, empty_windows_, runs_.take()};
    group_->send_message(1, h.encode());
    for (int r = 1; r < group_->size(); ++r)
      replay_rank(*group_, r, [this](RenderedWindow& w) { add_to_totals(w); });
    h = Handover::decode(*group_->receive_message(true));
    out_->seek(h.offset);
    empty_runs_ = h.empty_runs;
    empty_windows_ = h.empty_windows;
    runs_.absorb(h.pending);
  } else {
    for (int r = 1; r < group_->size(); ++r)
      replay_rank(*group_, r, [this](RenderedWindow& w) { consume_merging(w); });
  }
  if (a_.timings) print_rank_timings(kb, ke, t_own, Clock::now());
  flush_run();
}

// Rank > 0, output through rank 0: records go to rank 0 in pieces as windows are done
// (sent in the background).
void AnalyzeRun::helper_sends(int64_t kb, int64_t ke) {
  send_windows_to_root(*group_, keep_summary_,
                       [&](const auto& consume) { analyze_share(kb, ke, consume); });
  cpu_own_ = cpu_seconds();
  if (a_.timings) print_rank_timings(kb, ke, Clock::now(), Clock::now());
}

// Rank > 0 writing its own part of the output file: held in memory until the rank before
// hands the offset over, then written in place; summaries go to rank 0 for the totals.
void AnalyzeRun::helper_writes(int64_t kb, int64_t ke) {
  group_->expect_message();
  RankOutput part(a_.output);
  EmptyRunMerger lead;  // the run of windows without events before the first window
  bool seen_window = false;
  std::optional<Handover> before;
  std::string summaries;
  // Once the offset is known and the leading run complete: the run that ends the previous
  // parts and this rank's leading run are one run, written first.
  auto start = [&] {
    EmptyRunMerger joined;
    joined.absorb(before->pending);
    joined.absorb(lead.take());
    std::string text;
    if (joined.pending()) {
      RenderedWindow run = take_run(joined);
      ++before->empty_runs;
      before->empty_windows += run.summary.window.empty_run;
      text = std::move(run.text);
    }
    part.start(before->offset, text);
  };
  analyze_share(kb, ke, [&](RenderedWindow& r) {
    if ((seen_window ? runs_ : lead).absorb(r.summary)) return;
    if (runs_.pending()) {
      RenderedWindow run = take_run(runs_);
      ++empty_runs_;
      empty_windows_ += run.summary.window.empty_run;
      part.append(run.text);
    }
    seen_window = true;
    if (!before)
      if (std::optional<std::string> m = group_->receive_message(false)) {
        before = Handover::decode(*m);
        start();
      }
    part.append(r.text);
    if (keep_summary_) append_record(summaries, r, false, true);
  });
  cpu_own_ = cpu_seconds();
  const auto t_own = Clock::now();
  group_->send_to_root(std::move(summaries));
  group_->end_stream();
  if (!before) before = Handover::decode(*group_->receive_message(true));
  Handover next;
  if (!seen_window) {  // nothing written: the run goes on
    next = std::move(*before);
    EmptyRunMerger joined;
    joined.absorb(next.pending);
    joined.absorb(lead.take());
    next.pending = joined.take();
  } else {
    if (!part.started()) start();
    next.offset = part.finish();
    next.empty_runs = before->empty_runs + empty_runs_;
    next.empty_windows = before->empty_windows + empty_windows_;
    next.pending = runs_.take();
  }
  group_->send_message(static_cast<int>((group_->rank() + 1) % group_->size()), next.encode());
  if (a_.timings) print_rank_timings(kb, ke, t_own, Clock::now());
}

// --timings under mpirun: where this rank's time went (seconds since this process started
// its run, and its CPU time).
void AnalyzeRun::print_rank_timings(int64_t kb, int64_t ke, Clock::time_point own,
                                    Clock::time_point written) const {
  fmt::print(stderr,
             "rank {} of {}: windows {}..{} ({} events in its blocks); MPI_Init done at "
             "{:.3f}s, own windows done at {:.3f}s (cpu {:.3f}s), output written at "
             "{:.3f}s, end {:.3f}s; cpu {:.3f}s, of which MPI thread {:.3f}s; lookback {} ns, "
             "{} blocks read\n",
             group_->rank(), group_->size(), kb, ke, sstats_.events_read, group_->init_seconds(),
             seconds(t0_, own), cpu_own_, seconds(t0_, written), seconds(t0_, Clock::now()),
             cpu_seconds(), group_->mpi_thread_cpu_seconds(), sstats_.lookback_ns,
             sstats_.blocks_read);
}

}  // namespace snailtrail::cli
