// Megaphone's jobs for `snailtrail run` (docs/MEGAPHONE.md): key-count (dense arrays per
// bin) and hash-count (hash maps per bin) on Megaphone's operators with a controller that
// migrates bins at --migrate-at times, or on a plain operator (--native).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flow/runtime.hpp"
#include "megaphone/megaphone.hpp"
#include "megaphone/skew.hpp"

namespace snailtrail::megaphone {

enum class Strategy { all_at_once, fluid, batched };
// "all-at-once", "fluid", "batched"; throws std::invalid_argument otherwise.
Strategy parse_strategy(const std::string& name);
const char* strategy_name(Strategy s);

struct JobOptions {
  std::string base = "keycount";  // keycount (dense arrays) or hashcount (hash maps)
  bool native = false;            // the plain operator, no bins
  uint32_t log_bins = 12;
  std::vector<int64_t> migrate_at_ns;  // wall-clock times since the start
  Strategy strategy = Strategy::all_at_once;
  // CPU work per record in the stateful operator: a busy wait of this many microseconds
  // of wall-clock time (`run --cost-us`), so that one worker provably cannot keep up.
  double cost_us = 0;
  // The initial configuration (bin -> worker); empty: round-robin over all workers.
  std::vector<uint32_t> initial;
  // The closed loop (src/loop): called by the controller (worker 0) whenever no migration
  // is in flight, with the time since the start and the configuration in force; a
  // configuration returned is applied as a migration under `strategy`.
  std::function<std::optional<std::vector<uint32_t>>(int64_t now_ns,
                                                     const std::vector<uint32_t>& config)>
      planner;
  // `run --reconfigure restart`: a planned change stops the input (RunConfig::
  // pause_sources), waits until the dataflow has drained, moves every changed bin at
  // once and resumes the input (the baseline of a restart-based reconfiguration).
  bool restart = false;
  // Batched migrations of the planner: bins each worker sends (receives) per round; 0:
  // about 8 rounds (per_round_for).
  uint32_t batch_bins = 0;
  // Under a backlog (`run --under-backlog`, docs/CLOSED-LOOP.md "Under overload"): a
  // planner's migration starts at most ahead_ns after the output frontier (0: at the
  // clock, behind the whole backlog), and its batched steps go as one when
  // merge_under_backlog says so.
  int64_t ahead_ns = 50'000'000;
  bool merge_under_backlog = true;
  // The state's serialize-send-install speed merge_under_backlog assumes (bytes/s).
  double move_bytes_per_s = 250e6;
  // `run --skew-profile` (skew.hpp): a share of the records to the hot bins over time.
  Skew skew;
  // Counts the records generated per bin (`run --rebalance`), if set.
  std::shared_ptr<BinCounter> bin_counter;
};

// One migration as the controller (worker 0) saw it. Times in seconds since the start.
struct MigrationRecord {
  std::string strategy;
  // A batched migration whose remaining steps went as one (merge_under_backlog): the
  // backlog then (ms) and the step that took them all (1: the first); 0 when kept.
  double merged_backlog_ms = 0;
  uint64_t merged_at_step = 0;
  // The logical time of its first step (s since the start): the records from it on go by
  // the new configuration. Behind start_s by the backlog it moved ahead of (JobOptions::
  // ahead_ns), else within an epoch of it.
  double first_step_s = 0;
  double start_s = 0, end_s = 0, duration_s = 0;
  double max_latency_ms = 0;  // max latency of the epochs completed from start_s on whose
                              // time is at most end_s
  uint64_t bins_moved = 0, bytes_moved = 0;
  uint64_t steps = 0;
  bool completed = false;
};

// The --migrate-at migrations asked for, and those that never started: the controller
// ends with the input, so a migration whose time comes after the input ended (or that
// waited behind another one until then) does not run.
struct MigrationRequests {
  uint64_t requested = 0, not_run = 0;
  double input_end_s = 0;      // when the controller saw the input end (not_run > 0)
  double first_not_run_s = 0;  // the --migrate-at time of the first that did not run
  uint64_t ran() const { return requested - not_run; }
};

// Written by worker 0 (controller, latency) and by every worker (bytes sent).
class MigrationLog {
 public:
  // The controller (worker 0): `n` migrations requested; `n` of them not run, the input
  // having ended at now_ns, the first of them due at first_ns.
  void requested(uint64_t n);
  void not_run(uint64_t n, int64_t now_ns, int64_t first_ns);
  MigrationRequests requests() const;
  // `label` names the record's strategy instead of `s` ("restart").
  void start(int64_t now_ns, Strategy s, uint64_t bins, uint64_t steps,
             const char* label = nullptr);
  void end(int64_t now_ns);
  void latency(int64_t now_ns, flow::Time t, int64_t latency_ns);
  void add_bytes(uint64_t bytes) { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  // The controller gives a step of the current migration at configuration time t.
  void step(flow::Time t);
  // The current migration's remaining steps became one at its step `at_step` (1-based)
  // under a backlog of `backlog_ns`; it now has `steps` steps in all.
  void merged(int64_t backlog_ns, uint64_t at_step, uint64_t steps);
  // A bin of `bytes` left a worker at configuration time t (any worker, any process):
  // counted for the migration one of whose steps had time t.
  void add_bytes_at(flow::Time t, uint64_t bytes);
  // This process's add_bytes_at calls as words (t, bytes, t, bytes, ...), and those of
  // other processes merged in (under mpirun: gathered to rank 0 after the run).
  std::vector<uint64_t> sent_words() const;
  void add_sent_words(const std::vector<uint64_t>& words);
  std::vector<MigrationRecord> records() const;

 private:
  struct Entry {
    MigrationRecord rec;
    int64_t start_ns = 0, end_ns = -1;
    int64_t max_ns = 0;
    std::vector<flow::Time> steps;  // configuration times of its steps
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::vector<std::pair<flow::Time, uint64_t>> sent_;  // add_bytes_at
  std::atomic<uint64_t> bytes_{0};
  MigrationRequests requests_;
};

// The configurations the controller alternates between: bin b on worker b % W, and
// worker 0 holding the first half of the bins (the rest round-robin on the others).
std::vector<uint32_t> round_robin_config(uint32_t bins, uint32_t workers);
std::vector<uint32_t> half_config(uint32_t bins, uint32_t workers);
// The steps that move `from` to `to` under a strategy: all-at-once one step with every
// changed bin; fluid one bin per step; batched rounds in which each worker sends at most
// `per_round` bins and receives at most `per_round` bins. Each step is a list of (bin,
// worker).
std::vector<std::vector<std::pair<uint32_t, uint32_t>>> plan_steps(
    const std::vector<uint32_t>& from, const std::vector<uint32_t>& to, Strategy s,
    uint32_t workers, uint32_t per_round = 1);
// Under a backlog (issue 35). A step completes only once the output frontier has passed
// its time, and under a backlog the output frontier is `backlog_ns` behind the sources':
// every step of a migration waits that long, while the overloaded worker keeps its bins
// (and its backlog grows) until their step. Batching only bounds the pause of serializing
// the bins: at most `move_ns` (all of them at once) less one step's share of it is saved.
// True when the remaining `steps_left` steps should go as one: the backlog a step waits
// for is larger than what batching them saves.
bool merge_under_backlog(size_t steps_left, int64_t backlog_ns, int64_t move_ns);
// Estimated time to serialize, send and install `bytes` of bins' state at
// `bytes_per_s` (JobOptions::move_bytes_per_s; docs/CLOSED-LOOP.md, "Under overload").
int64_t move_ns_estimate(uint64_t bytes, double bytes_per_s);
// Estimated serialized bytes of one bin of the keycount (dense: exact, a vector of
// keys / bins counters) or hashcount (hash map: 16 bytes per key of the bin) job.
uint64_t bin_bytes_estimate(uint64_t keys, uint32_t log_bins, bool dense);

// The per_round that makes a batched migration from `from` to `to` take about `rounds`
// rounds (at least 1): the most bins one worker sends or receives, divided by `rounds`.
uint32_t per_round_for(const std::vector<uint32_t>& from, const std::vector<uint32_t>& to,
                       uint32_t workers, uint32_t rounds);

// --cost-us: a busy wait of `ns` per record, charged against the wall clock from the
// start of the operator's activation (the worker's step): record k of an activation
// ends no earlier than activation start + k x ns. A thread preempted within the
// activation catches up instead of adding the preemption to every record, so the
// operator's true processing rate stays near 1 / ns also on an oversubscribed machine.
class CostClock {
 public:
  explicit CostClock(int64_t ns) : ns_(ns) {}
  void charge(uint64_t step);

 private:
  int64_t ns_;
  uint64_t step_ = ~uint64_t{0};
  std::chrono::steady_clock::time_point deadline_{};
};

// Registers the job `opts.base` + "-megaphone" or + "-native" in the runtime's table
// (flow::register_job); returns its name. Migrations are recorded into `log`.
std::string register_job(const JobOptions& opts, std::shared_ptr<MigrationLog> log);

// The "migrations" array of --stats-json.
std::string migrations_json(const std::vector<MigrationRecord>& ms);
// The "migrations_requested" object of --stats-json: {"requested", "ran", "not_run",
// "why"} ("why": "" when every one ran).
std::string migration_requests_json(const MigrationRequests& r);
// One line for the run's summary: how many ran of those requested, and why not.
std::string migration_requests_text(const MigrationRequests& r);

// For jobs of later stages (src/nexmark): the controller of the keycount/hashcount jobs
// as a control source (worker 0 migrates at opts.migrate_at_ns with opts.strategy between
// round-robin and half_config of 2^opts.log_bins bins; `data` is the data sources'
// frontier), and the per-epoch latency of the job's output probe into the migration log
// (call it from the probe's callback with the frontier's old and new value).
Stream<ControlUpdate> make_controller(flow::JobContext& ctx, const JobOptions& opts,
                                      std::shared_ptr<MigrationLog> log, flow::ProbeHandle data);
void log_probe_latency(flow::JobContext& ctx, MigrationLog& log, flow::Time old, flow::Time now_f);

}  // namespace snailtrail::megaphone
