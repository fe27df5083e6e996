// `run --rebalance` (docs/CLOSED-LOOP.md): skew, which DS2 cannot fix. As soon as a policy
// interval is closed, the run's own trace of it goes through the CP analysis
// that `analyze` and `serve` run (build_pag + analyze_pag, CP per worker); when it names
// a worker that holds bins of the stateful operator as the straggler (its CP at least
// `over_next` times the next worker's), the hottest bins of that worker (by the records
// the sources generated for them in the interval, megaphone::BinCounter) move to the
// least-loaded active workers until its load would fall to about the mean. The new
// configuration is applied as a Megaphone migration (the planner hook, as --autoscale).
//
//   loop::Rebalancer rb(opts);                       // opts.bin_counts: the counter
//   cfg.on_trace_events = [&](flow::TraceBuffer ev, const auto& ops) { rb.on_events(*ev, ops); };
//   job.planner = [&](int64_t now, const auto& c) { return rb.plan(now, c); };
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loop/autoscaler.hpp"
#include "trace/event.hpp"

namespace snailtrail::loop {

struct RebalanceOptions {
  uint32_t workers = 1;  // all workers of the job
  uint32_t bins = 256;
  int64_t policy_interval_ns = 1'000'000'000;
  // A straggler's CP is at least this many times the next worker's (the verdict's rule,
  // summary/verdict.cpp kStragglerOverNext).
  double over_next = 2.0;
  // Bins move while the straggler's load is above mean x (1 + tolerance); a straggler
  // whose load is within it gets no move (its CP has another cause than its bins).
  double tolerance = 0.1;
  // Records generated per bin so far (cumulative; megaphone::BinCounter::totals).
  std::function<std::vector<uint64_t>()> bin_counts;
  // The active workers [0, active()) that may hold bins (--autoscale's); unset: all.
  std::function<uint32_t()> active;
};

// Bins in contiguous ranges over workers [0, active) (Flink's key-group ranges): worker w
// holds [w B / active, (w + 1) B / active).
std::vector<uint32_t> contiguous_config(uint32_t bins, uint32_t active);

// One CP analysis of an interval of the run's trace.
struct CpAnalysis {
  double time_s = 0, from_s = 0, to_s = 0;
  std::vector<double> cp;  // CP share per worker index (0 for a worker without events)
  int64_t top = -1;        // the worker with the most CP
  double top_cp = 0, next_cp = 0;
  bool straggler = false;  // top_cp >= over_next x next_cp
  bool moved = false;      // a rebalance decision followed
  uint64_t events = 0;     // trace events analyzed
  double analysis_ms = 0;  // wall time of the analysis (on its own thread)
};

// CP share per worker (index < workers) of the events in [from, to) (the analysis of
// `analyze`: build_pag, analyze_pag with one window, summaries), on the events as the
// runtime wrote them (no relabelling: `analyze` of the written trace gives the same
// shares for the same window). Events: each worker's in time order.
std::vector<double> cp_per_worker(std::vector<Event> events,
                                  const std::vector<std::string>& operator_names, uint32_t workers,
                                  int64_t from_ns, int64_t to_ns);

// The configuration after moving `straggler`'s hottest bins (by `load`, records per bin)
// one by one to the least-loaded worker of [0, active) while the straggler's load is
// above mean x (1 + tolerance) and the move lowers the larger of the two loads; bins
// that would overshoot are skipped for the next hotter one that fits. `moved`: the bins.
std::vector<uint32_t> move_hot_bins(const std::vector<uint32_t>& config,
                                    const std::vector<uint64_t>& load, uint32_t straggler,
                                    uint32_t active, double tolerance,
                                    std::vector<uint32_t>* moved = nullptr);

class Rebalancer {
 public:
  explicit Rebalancer(RebalanceOptions options);

  void on_events(const std::vector<Event>& events, const std::vector<std::string>& operator_names);
  // Planner (the Megaphone controller, worker 0, whenever no migration is in flight). At
  // the first call after an interval's evidence is complete (every worker's events past
  // its end by a margin) it starts the analysis of that interval on its own thread; the
  // first call after the analysis is done decides (nothing if a migration happened
  // meanwhile).
  std::optional<std::vector<uint32_t>> plan(int64_t now_ns, const std::vector<uint32_t>& config);
  // Another planner (--autoscale) started a migration: intervals up to its end are not
  // analyzed.
  void external_migration();

  std::vector<DecisionRecord> decisions() const;
  std::vector<CpAnalysis> analyses() const;
  // An analysis started and not decided on yet (the planner's thread, as plan()).
  bool analyzing() const { return pending_.valid(); }

 private:
  std::optional<std::vector<uint32_t>> decide(CpAnalysis a, const std::vector<uint64_t>& load,
                                              const std::vector<uint32_t>& config, int64_t now_ns,
                                              bool stale);

  RebalanceOptions opt_;
  mutable std::mutex mu_;
  std::vector<Event> events_;  // since `keep_from_`
  std::vector<std::string> ops_;
  std::vector<int64_t> last_ts_;
  int64_t keep_from_ = 0;
  // Worker 0's side (plan).
  int64_t looked_until_ = 0;  // the end of the latest interval looked at
  int64_t analyzed_until_ = 0;
  bool migrating_ = false;
  int64_t settled_ns_ = 0;
  std::vector<uint64_t> counts_at_tick_;
  std::vector<DecisionRecord> decisions_;
  std::vector<CpAnalysis> analyses_;
  // The analysis in flight (its own thread) and what it was started with.
  std::future<std::pair<std::vector<double>, double>> pending_;
  CpAnalysis pending_a_;
  std::vector<uint64_t> pending_load_;
  uint64_t migrations_ = 0, pending_migrations_ = 0;
};

// The "cp_analyses" array of --stats-json.
std::string analyses_json(const std::vector<CpAnalysis>& as);

}  // namespace snailtrail::loop
