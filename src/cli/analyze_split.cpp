// `mpirun ... analyze`: the ranks' shares of the windows and how their output comes
// together (cli/analyze_ranks.hpp).
#include <time.h>

#include <cstdlib>

#include "cli/analyze_ranks.hpp"
#include "cli/analyze_run.hpp"
#include "trace/environment.hpp"

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
    std::vector<std::vector<RenderedWindow>> stolen = steal_windows();
    for (int r = 1; r < group_->size(); ++r)
      replay_rank(*group_, r, [this](RenderedWindow& w) { add_to_totals(w); });
    h = Handover::decode(*group_->receive_message(true));
    out_->seek(h.offset);
    empty_runs_ = h.empty_runs;
    empty_windows_ = h.empty_windows;
    runs_.absorb(h.pending);
    for (auto grant = stolen.rbegin(); grant != stolen.rend(); ++grant)
      for (RenderedWindow& w : *grant) consume_merging(w);
  } else {
    for (int r = 1; r < group_->size(); ++r)
      replay_rank(*group_, r, [this](RenderedWindow& w) { consume_merging(w); });
  }
  if (a_.timings) print_rank_timings(kb, ke, t_own, Clock::now());
  flush_run();
}

// Rank 0, its own share done: windows from the end of the last rank's share, as long as it
// gives some (cli/analyze_ranks.hpp), kept to be written after the last rank's part. The
// later grants are of earlier windows.
std::vector<std::vector<RenderedWindow>> AnalyzeRun::steal_windows() {
  std::vector<std::vector<RenderedWindow>> stolen;
  StreamedCallbacks cb;
  cb.render = [this](const WindowView& v, RenderedWindow& r) { render(v, r); };
  cb.consume = [&](RenderedWindow& r) { stolen.back().push_back(std::move(r)); };
  for (;;) {
    group_->expect_message();
    group_->send_message(group_->size() - 1, steal_request());
    const auto [first, last] = decode_grant(*group_->receive_message(true));
    if (last < first) return stolen;
    moved_ += last - first + 1;
    stolen.emplace_back();
    analyze_snail_streamed(*snail_, opt_, splan_, first, last, threads_, cb);
  }
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
// hands the offset over, then written in place; summaries go to rank 0 for the totals. The
// last rank also answers rank 0's requests for windows from the end of its share.
void AnalyzeRun::helper_writes(int64_t kb, int64_t ke) {
  const bool last_rank = group_->rank() == group_->size() - 1;
  group_->expect_message();                 // the hand-over
  if (last_rank) group_->expect_message();  // rank 0's first request for windows
  bool asked = false, requests_over = !last_rank;
  int64_t k_end = ke;
  std::optional<Handover> before;
  auto poll = [&](bool wait) {
    while (std::optional<std::string> m = group_->receive_message(wait)) {
      if (is_steal_request(*m))
        asked = true;
      else
        before = Handover::decode(*m);
      wait = false;
    }
  };
  // Gives rank 0 the later half of windows first_left..k_end (none when too few are left,
  // which ends its requests).
  auto answer = [&](int64_t first_left) {
    const int64_t given = first_window_given(snail_->index(), splan_, first_left, k_end);
    group_->send_message(0, grant_message(given, k_end));
    asked = false;
    requests_over = given > k_end;
    if (requests_over) return;
    moved_ += k_end - given + 1;
    k_end = given - 1;
    group_->expect_message();  // rank 0 asks again
  };
  auto claim = [&](int64_t last) {
    poll(false);
    if (asked) answer(last + 1);
    return k_end;
  };
  // For tests (tests/mpi_analyze.sh): the last rank waits for rank 0's first request before
  // its first windows, so that it gives some even when traces are too short for the
  // request to come in time.
  if (last_rank && environment_value("SNAILTRAIL_TEST_GIVE_WINDOWS"))
    while (!asked) poll(true);
  // Once its windows are done, before it hands on to rank 0 (which then waits for no grant).
  auto settle = [&] {
    while (!requests_over) {
      if (!asked) poll(true);
      if (asked) answer(k_end + 1);
    }
  };
  write_part(kb, ke, before, poll, last_rank ? claim : std::function<int64_t(int64_t)>{}, settle);
}

// Rank > 0: analyzes its windows and writes its part once `before` (polled as windows are
// done) says where; then, after `settle`, hands on to the next rank.
void AnalyzeRun::write_part(int64_t kb, int64_t ke, std::optional<Handover>& before,
                            const std::function<void(bool)>& poll,
                            const std::function<int64_t(int64_t)>& claim,
                            const std::function<void()>& settle) {
  RankOutput part(a_.output);
  EmptyRunMerger lead;  // the run of windows without events before the first window
  bool seen_window = false;
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
  analyze_share(
      kb, ke,
      [&](RenderedWindow& r) {
        if ((seen_window ? runs_ : lead).absorb(r.summary)) return;
        if (runs_.pending()) {
          RenderedWindow run = take_run(runs_);
          ++empty_runs_;
          empty_windows_ += run.summary.window.empty_run;
          part.append(run.text);
        }
        seen_window = true;
        if (!part.started()) {
          poll(false);
          if (before) start();
        }
        part.append(r.text);
        if (keep_summary_) append_record(summaries, r, false, true);
      },
      claim);
  cpu_own_ = cpu_seconds();
  const auto t_own = Clock::now();
  group_->send_to_root(std::move(summaries));
  group_->end_stream();
  settle();
  while (!before) poll(true);
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
  // The last rank gave the end of its share to rank 0: the windows it kept, then its share.
  const bool gave = group_->rank() == group_->size() - 1 && moved_ > 0;
  const std::string kept = gave ? fmt::format("{}..{} of ", kb, ke - moved_) : std::string();
  fmt::print(stderr,
             "rank {} of {}: windows {}{}..{} ({} events in its blocks); MPI_Init done at "
             "{:.3f}s, own windows done at {:.3f}s (cpu {:.3f}s), output written at "
             "{:.3f}s, end {:.3f}s; cpu {:.3f}s, of which MPI thread {:.3f}s; lookback {} ns, "
             "{} blocks read; {} windows moved from the last rank to rank 0\n",
             group_->rank(), group_->size(), kept, kb, ke, sstats_.events_read,
             group_->init_seconds(), seconds(t0_, own), cpu_own_, seconds(t0_, written),
             seconds(t0_, Clock::now()), cpu_seconds(), group_->mpi_thread_cpu_seconds(),
             sstats_.lookback_ns, sstats_.blocks_read, moved_);
}

}  // namespace snailtrail::cli
