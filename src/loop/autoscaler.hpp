// The closed loop (docs/CLOSED-LOOP.md): a running Megaphone job that sizes itself. The
// runtime's own trace events (flow::RunConfig::on_trace_events) feed DS2's rate collector
// in process; every policy interval the DS2 manager (src/scale/manager.hpp) decides how
// many workers the stateful operator needs, and the decision is applied as a Megaphone
// migration (megaphone::JobOptions::planner) that spreads the bins over the new active
// set of workers [0, active) — no restart, no pause of the input.
//
//   loop::Autoscaler a(opts);
//   cfg.on_trace_events = [&](flow::TraceBuffer ev, const auto& ops) { a.on_events(*ev, ops); };
//   job.initial = a.initial_config();
//   job.planner = [&](int64_t now, const auto& c) { return a.plan(now, c); };
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loop/rank_link.hpp"
#include "scale/manager.hpp"
#include "scale/rate_collector.hpp"
#include "trace/event.hpp"

namespace snailtrail::loop {

struct LoopOptions {
  uint32_t max_workers = 1;      // all workers of the job (threads; under mpirun: of every rank)
  uint32_t initial_workers = 1;  // active (holding bins) at the start
  uint32_t bins = 256;
  int64_t policy_interval_ns = 1'000'000'000;
  // Start-up (docs/CLOSED-LOOP.md "Start-up"): DS2 sees no interval that starts before
  // this time of the run, nor one that starts before both operators have produced output
  // (its rates would not be measured over the whole interval). -1: default_startup_ns.
  int64_t startup_ns = -1;
  // Scale-in hysteresis (docs/CLOSED-LOOP.md "Hysteresis (loop49)"): DS2 scales the
  // stateful operator in only when every interval shown to it over this long (rounded up
  // to whole policy intervals) asked for fewer workers than are active; a scale-out goes
  // at once. -1: default_scale_in_after_ns; 0: off (scale in on one interval).
  int64_t scale_in_after_ns = -1;
  // The sources' target rate (records/s over all workers) over time: (from ns, rate).
  std::vector<std::pair<int64_t, double>> rate_profile;
  scale::ManagerOptions manager;  // warm-up, activation, target ratio, ...
  std::string source_op = "source", stateful_op = "count";  // operator names in the trace
  bool keep_events = false;  // also keep every event (for --trace FILE)
};

struct DecisionRecord {
  double time_s = 0;
  uint32_t active_workers = 0;
  std::string reason;
  std::string kind = "ds2";  // "ds2" (--autoscale) or "rebalance" (--rebalance)
  // kind "ds2": the end of the interval DS2 decided on (-1: unknown).
  double evidence_end_s = -1;
  // kind "rebalance": the straggler (worker index), its CP share and the next worker's,
  // and the bins moved off it (hottest first).
  int64_t straggler = -1;
  double cp_share = 0, next_cp = 0;
  std::vector<uint32_t> bins;
};

// The default start-up: 2 s or 2 policy intervals, whichever is longer (on the shared
// 2-core machine at load 10-14 the keycount job of 8 M keys still ran cold at 1.0-1.25 s
// and 1.5-2.0 s: true rates of 120 and 13 400 records/s for 125 k/s steady).
int64_t default_startup_ns(int64_t policy_interval_ns);

// The default scale-in hysteresis: 2 s or 3 policy intervals, whichever is longer (at
// load 9-12 on the shared 2-core machine, preempted activations swung the true rates DS2
// measured by 2x from one 250 ms or 500 ms interval to the next, and it scaled out, in and
// out again in 4 of 8 runs).
int64_t default_scale_in_after_ns(int64_t policy_interval_ns);
// The intervals DS2 waits with `scale_in_after_ns` (resolved: >= 0) at `policy_interval_ns`.
uint32_t scale_in_intervals(int64_t scale_in_after_ns, int64_t policy_interval_ns);

// The configuration that moves the fewest bins from `config` to an even spread over
// workers [0, active): every worker keeps its bins up to its quota (B / active, the
// first B % active workers one more), the rest go to the workers below their quota.
std::vector<uint32_t> spread(const std::vector<uint32_t>& config, uint32_t active);

class Autoscaler {
 public:
  explicit Autoscaler(LoopOptions options);

  // Bins round-robin over the initial active workers.
  std::vector<uint32_t> initial_config() const;
  // Trace sink (each worker's events in time order): `run` calls it on its planner thread
  // (planner_thread.hpp) with the buffers the workers handed over; thread-safe.
  void on_events(const std::vector<Event>& events, const std::vector<std::string>& operator_names);
  // Planner: called whenever no migration is in flight (`run`: on its planner thread, for
  // the Megaphone controller on worker 0). It closes the intervals every worker's events
  // (and activities) have passed, shows them to the DS2 manager and returns the new
  // configuration, if any.
  std::optional<std::vector<uint32_t>> plan(int64_t now_ns, const std::vector<uint32_t>& config);

  // Under mpirun (rank_link.hpp), before the run: rank 0 plans with every rank's
  // aggregates; another rank's autoscaler only sends its own (its plan() is never called).
  // Throws std::invalid_argument unless procs x workers == max_workers.
  void link_ranks(RankLink link);
  // Rank reports sent (rank > 0) or received (rank 0, also those that arrived after its
  // last plan: taken now, not shown to DS2), and their bytes.
  std::pair<uint64_t, uint64_t> reports();

  std::vector<DecisionRecord> decisions() const;
  uint32_t active() const;
  uint64_t intervals_observed() const;
  // Intervals not shown to DS2 because they fall into the start-up.
  uint64_t intervals_in_startup() const;
  // Another planner (--rebalance) started a migration: intervals up to its end are not
  // shown to DS2.
  void external_migration();
  std::vector<Event> take_events();  // with keep_events

 private:
  double target_at(int64_t ns) const;
  // Of this rank's workers, held at their open activities (-1: one has no event yet).
  int64_t local_watermark() const;
  void send_report();  // rank > 0, under mu_
  // Rank 0, under mu_: takes the reports that arrived; the watermark over every rank.
  int64_t absorb_reports(int64_t local);
  // Rank 0: the local intervals closed up to `watermark` merged with the other ranks'.
  std::vector<scale::IntervalMetrics> merge_remote(std::vector<scale::IntervalMetrics> closed,
                                                   int64_t watermark);

  LoopOptions opt_;
  scale::Topology topology_;
  scale::Ds2Manager manager_;
  mutable std::mutex mu_;
  scale::RateCollector collector_;
  std::vector<int64_t> last_ts_;  // per worker, latest event time seen (-1: none)
  int64_t source_op_ = -1, stateful_op_ = -1;
  // The first end of an activity carrying records, of the source and of the stateful
  // operator, on this rank's workers (INT64_MAX: none yet).
  int64_t first_out_source_ = INT64_MAX, first_out_stateful_ = INT64_MAX;
  std::vector<Event> kept_;
  // Worker 0's side (plan), also read by decisions()/active() under mu_.
  uint32_t active_;
  bool migrating_ = false;
  int64_t settled_ns_ = 0;  // intervals starting before this contain a migration
  uint64_t observed_ = 0, in_startup_ = 0;
  std::vector<DecisionRecord> decisions_;
  // Across ranks.
  RankLink link_;
  int64_t sent_k_ = -1;             // rank > 0: intervals below this sent
  std::vector<int64_t> remote_wm_;  // rank 0: each rank's watermark (-1: none yet)
  std::map<int64_t, scale::IntervalMetrics> remote_;  // rank 0: by start, not merged yet
  uint64_t reports_ = 0, report_bytes_ = 0;
};

// The "decisions" array of --stats-json.
std::string decisions_json(const std::vector<DecisionRecord>& ds);

}  // namespace snailtrail::loop
