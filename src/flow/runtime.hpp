// Running a job: W worker threads over one in-process fabric, latency and throughput
// statistics every interval, the merged trace, the job's final per-key output
// (docs/RUNTIME.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flow/histogram.hpp"
#include "flow/operators.hpp"
#include "flow/record_latency.hpp"
#include "trace/event.hpp"

namespace snailtrail::flow {

namespace profile {
class Profiler;
}
struct IntervalStats;

struct RunConfig {
  std::string job;
  uint32_t workers = 1;
  double rate = 0;  // records/s over all workers; 0: as fast as possible
  // Piecewise-constant open-loop rate (`run --rate-profile`): (from ns, records/s over
  // all workers), the first from 0, times increasing, rates > 0. Replaces `rate` when set.
  std::vector<std::pair<int64_t, double>> rate_profile;
  // While set, open-loop sources give nothing (the records due meanwhile are given, with
  // their intended times, once it clears): the stop of `run --reconfigure restart`.
  std::shared_ptr<std::atomic<bool>> pause_sources;
  int64_t duration_ns = 10'000'000'000;
  uint64_t records = 0;  // stop after this many records in total (0: no limit)
  uint64_t seed = 1;
  uint64_t keys = 1'000'000;     // key domain (keycount) / vocabulary (wordcount)
  double skew = 0;               // wordcount: share of words that are the hot word
  int64_t epoch_ns = 1'000'000;  // logical time granularity
  // 0: latency per epoch (from its end to the output probe passing it); N > 0: per record,
  // every Nth record of each source (`run --latency record`, record_latency.hpp).
  uint64_t latency_record_every = 0;
  bool trace = false;
  int64_t stats_interval_ns = 250'000'000;
  // This process's resident set (/proc/self/statm) is sampled every rss_sample_ns by the
  // statistics thread into RunResult::rss_timeline (0: never). Bounded: at 65536 samples
  // every other one is dropped and the interval doubles.
  int64_t rss_sample_ns = 10'000'000;
  std::function<void(const std::string&)> on_stats_line;  // each interval's line
  // Each interval as it is published (the statistics thread; rank 0): `run --http`.
  std::function<void(const IntervalStats&)> on_interval;
  // With `trace` and this set, each worker hands its events (in time order, with the
  // dataflow's operator names) to this sink about every trace_flush_ns and at its end,
  // instead of keeping them for RunResult::events (live streaming). Called from the
  // worker threads, concurrently.
  std::function<void(std::vector<Event>&&, const std::vector<std::string>& operator_names)>
      on_trace_events;
  int64_t trace_flush_ns = 50'000'000;
  // A flush holds back a worker's events from the earliest arrival of a message it has not
  // taken yet (so that its receipt is recorded at that arrival), at most this long; a
  // receipt older than that is stamped at the last flushed event and counted in
  // RunResult::clamped_receipts.
  int64_t trace_hold_ns = 2'000'000'000;
  std::map<std::string, double> params;  // job-specific knobs (NEXMark: docs/NEXMARK.md)
  // Several processes (mpi_transport.hpp): `workers` threads here, of workers x procs.
  Transport* transport = nullptr;
  // Stack sampling of every worker thread (profile/sampler.hpp, `run --profile`).
  profile::Profiler* profiler = nullptr;
};

using KeyCounts = std::vector<std::pair<uint64_t, uint64_t>>;  // sorted by key

// A piecewise-constant rate (RunConfig::rate_profile) for one source stream with
// `share` of the rate: how many records are due by a time, and when record i is due.
class RateSchedule {
 public:
  RateSchedule(const std::vector<std::pair<int64_t, double>>& profile, double share) {
    double cum = 0;
    for (size_t k = 0; k < profile.size(); ++k) {
      const double per_ns = profile[k].second * share * 1e-9;
      seg_.push_back({profile[k].first, per_ns, cum});
      if (k + 1 < profile.size())
        cum += per_ns * static_cast<double>(profile[k + 1].first - profile[k].first);
    }
  }
  // Records due in [0, ns) (fractional).
  double count(int64_t ns) const {
    const Seg& s = at_time(ns);
    return s.cum + s.per_ns * static_cast<double>(ns - s.from);
  }
  // The intended time of record i (ns).
  int64_t time_of(uint64_t i) const {
    const double x = static_cast<double>(i);
    size_t k = 0;
    while (k + 1 < seg_.size() && seg_[k + 1].cum <= x) ++k;
    const Seg& s = seg_[k];
    return s.from + static_cast<int64_t>((x - s.cum) / s.per_ns);
  }
  // The rate over all streams at `ns` (records/s), given the share.
  double rate_at(int64_t ns, double share) const { return at_time(ns).per_ns * 1e9 / share; }

 private:
  struct Seg {
    int64_t from;
    double per_ns, cum;
  };
  const Seg& at_time(int64_t ns) const {
    size_t k = 0;
    while (k + 1 < seg_.size() && seg_[k + 1].from <= ns) ++k;
    return seg_[k];
  }
  std::vector<Seg> seg_;
};
// A number with an optional suffix k or K (x1e3), M (x1e6) or G (x1e9): "200k", "1.5M",
// "2e5"; nullopt unless the whole text is one and finite. `run --rate` and the profiles'
// values read theirs with it.
std::optional<double> parse_scaled(const std::string& text);
// Parses "0s:100k,30s:400k" (times: ns from `parse_ns`; values as parse_scaled); throws a
// UsageError naming the setting `name` (e.g. "rate_profile") on bad input.
std::vector<std::pair<int64_t, double>> parse_profile(
    const std::string& text, const std::string& name,
    const std::function<int64_t(const std::string&)>& parse_ns, bool rates_positive = true);

// What a job's builder gets on each worker; lives as long as the worker.
struct JobContext {
  const RunConfig& cfg;
  Worker& worker;
  std::chrono::steady_clock::time_point start;
  std::atomic<uint64_t>& generated;                // records this worker's sources produced
  std::atomic<Time>& last_time;                    // greatest timestamp any source gave
  std::function<void(Time, Time)> on_probe;        // give the job's output probe this
  Time probe_frontier = 0;                         // the output probe's frontier (kept by on_probe)
  std::function<void(KeyCounts&&)> emit_result;    // this worker's part of the final output
  RecordLatencySampler* record_latency = nullptr;  // with --latency record: sources call given()

  uint64_t record_limit() const {  // this worker's share of cfg.records
    if (cfg.records == 0) return ~uint64_t{0};
    const uint32_t all = worker.peers();  // over every process
    return cfg.records / all + (worker.index() < cfg.records % all ? 1 : 0);
  }
};

// A built-in job: its dataflow, and the plain single-threaded implementation over the
// same input (worker w's stream, records [0, n_w)).
struct JobSpec {
  std::string name;
  std::string description;
  std::function<void(JobContext&)> build;
  // Adds records [from, to) of worker `stream`'s input to `state` (a per-key map).
  std::function<void(const RunConfig&, uint32_t stream, uint64_t from, uint64_t to,
                     std::unordered_map<uint64_t, uint64_t>& state)>
      reference;
  // Instead of `reference`, for jobs whose output depends on all streams together
  // (NEXMark): the whole run's output from each stream's record count. Several workers
  // may emit the same key: the run's output adds their values (mod 2^64).
  std::function<KeyCounts(const RunConfig&, const std::vector<uint64_t>& per_stream)> reference_run;
};

const JobSpec* find_job(const std::string& name);
std::vector<std::string> job_names();
// Adds a job to the table (or replaces the one of the same name): a later stage's job
// (src/megaphone, src/nexmark). Call before run_job, not during a run.
void register_job(JobSpec job);

// A job's source: worker w gives gen(w, i) for i = 0, 1, ... until cfg.duration or its
// share of cfg.records. With cfg.rate: open loop at cfg.rate / workers records/s
// (timestamps: the intended generation time, in epochs; an idle worker waits on its
// input). With --rate max: closed loop, as fast as the dataflow keeps up (timestamps:
// the current time), never more than kMaxLagEpochs ahead of the output probe's frontier
// (timely's "while probe.less_than(time) step()"), so queues stay bounded and a slow
// worker makes the others wait. One epoch: with two, a 2-worker wordcount had the same
// throughput (0.94-1.00x) but a 1.2-1.35x higher median latency, and the worker that did
// not count the hot word was held back so loosely that CP ranked it first in 2 of 10 runs
// at --skew 0.5 (docs/RUNTIME.md, "Closed loop").
inline constexpr Time kMaxLagEpochs = 1;

namespace detail {
// open_loop_source's operator: a source of T at the run's rate (or closed loop).
template <class T, class Gen>
struct OpenLoopSource {
  JobContext* ctx;
  Gen gen;
  uint64_t produced = 0, limit = 0;
  double per_ns = 0;                                 // records per ns for this worker (0: max)
  std::optional<RateSchedule> sched = std::nullopt;  // --rate-profile
  void operator()(Capability& cap, Output<T>& out) {
    const RunConfig& c = ctx->cfg;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - ctx->start)
                            .count();
    const bool over = now >= c.duration_ns;
    if (produced >= limit || (over && per_ns <= 0)) {
      cap.drop();
      return;
    }
    if (per_ns <= 0)
      closed_loop(cap, out, now);
    else
      open_loop(cap, out, now, over);
  }
  // --rate max: a batch at the current time, unless the dataflow lags behind.
  void closed_loop(Capability& cap, Output<T>& out, int64_t now) {
    const auto epoch = static_cast<Time>(ctx->cfg.epoch_ns);
    const uint32_t w = ctx->worker.index();
    const Time t = std::max<Time>(cap.time(), static_cast<Time>(now) / epoch * epoch);
    cap.downgrade(t);  // time moves on (releasing the frontier) even while waiting
    const Time lag = kMaxLagEpochs * epoch;
    if (t > lag && ctx->probe_frontier < t - lag) return;  // wait for the dataflow
    const uint64_t n = std::min<uint64_t>(4 * kBatch, limit - produced);
    if (ctx->record_latency)
      for (uint64_t k = 0; k < n; ++k) ctx->record_latency->given(produced + k, t, now);
    for (uint64_t k = 0; k < n; ++k) out.give(t, gen(w, produced + k));
    account(n, t);
  }
  // At a rate: the records due by now, each at its intended time.
  void open_loop(Capability& cap, Output<T>& out, int64_t now, bool over) {
    const RunConfig& c = ctx->cfg;
    const auto epoch = static_cast<Time>(c.epoch_ns);
    const uint32_t w = ctx->worker.index();
    if (c.pause_sources && c.pause_sources->load(std::memory_order_acquire)) {
      ctx->worker.set_source_active(true);  // stopped: poll again
      return;
    }
    // Every record whose intended time is before the end is given, however late.
    const int64_t upto = over ? c.duration_ns - 1 : now;
    const double due_f = sched ? sched->count(upto) : static_cast<double>(upto) * per_ns;
    const auto due = std::min<uint64_t>(limit, static_cast<uint64_t>(due_f) + 1);
    const uint64_t n = due > produced ? std::min<uint64_t>(due - produced, 16 * kBatch) : 0;
    Time last_given = 0;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t i = produced + k;
      const auto intended = intended_time(i);
      const Time t = std::max<Time>(cap.time(), intended / epoch * epoch);
      if (t != cap.time()) cap.downgrade(t);
      if (ctx->record_latency) ctx->record_latency->given(i, t, static_cast<int64_t>(intended));
      out.give(t, gen(w, i));
      last_given = t;
    }
    if (over && produced + n >= due) {
      account(n, last_given);
      cap.drop();
      return;
    }
    // Nothing else is due before the next record's intended time.
    const auto next = intended_time(produced + n);
    cap.downgrade(std::max<Time>(cap.time(), next / epoch * epoch));
    ctx->worker.set_source_active(true);
    account(n, last_given);
  }
  Time intended_time(uint64_t i) const {
    if (sched) return static_cast<Time>(std::max<int64_t>(0, sched->time_of(i)));
    return static_cast<Time>(static_cast<double>(i) / per_ns);
  }
  void account(uint64_t n, Time last_given) {
    produced += n;
    if (n == 0) return;
    ctx->generated.fetch_add(n, std::memory_order_relaxed);
    Time last = ctx->last_time.load(std::memory_order_relaxed);
    while (last_given > last &&
           !ctx->last_time.compare_exchange_weak(last, last_given, std::memory_order_relaxed)) {
    }
  }
};
}  // namespace detail

template <class T, class Gen>
Stream<T> open_loop_source(JobContext& ctx, std::string name, Gen gen) {
  detail::OpenLoopSource<T, Gen> l{&ctx, std::move(gen)};
  l.limit = ctx.record_limit();
  l.per_ns = ctx.cfg.rate > 0 ? ctx.cfg.rate / ctx.worker.peers() * 1e-9 : 0;
  if (!ctx.cfg.rate_profile.empty()) {
    l.sched.emplace(ctx.cfg.rate_profile, 1.0 / ctx.worker.peers());
    l.per_ns = ctx.cfg.rate_profile.front().second / ctx.worker.peers() * 1e-9;  // > 0: open loop
  }
  return source<T>(ctx.worker, std::move(name), std::move(l));
}

struct IntervalStats {
  double t_s = 0;
  uint64_t records = 0;
  // Latency samples of the interval: one per epoch completed (per rank under mpirun). 0 is
  // a stall, whose percentiles are 0 for want of samples, not because latency was low.
  uint64_t samples = 0;
  double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0, rss_mb = 0;
};

struct RunResult {
  double seconds = 0;
  uint64_t records = 0;             // generated by all sources
  std::vector<uint64_t> generated;  // per worker (every process's on rank 0)
  // Every stats interval, merged over all processes on rank 0 (rank r > 0: empty).
  std::vector<IntervalStats> intervals;
  // (seconds since the start, MiB) every cfg.rss_sample_ns while the workers run, times
  // increasing; this process only (under mpirun: rank 0's, the intervals' rss_mb sums
  // every rank).
  std::vector<std::pair<double, double>> rss_timeline;
  std::vector<uint64_t> latency;  // histogram buckets (ns) over the whole run (idem)
  uint64_t latency_max_ns = 0;    // the largest latency sample, exact (idem)
  KeyCounts output;
  WorkerCounters counters;  // summed over workers
  // With cfg.trace: every worker's events in time order, and the names to give them.
  std::vector<Event> events;
  std::vector<std::string> worker_names, operator_names;
  // This process's clock origin (steady_clock ns): event times are relative to it. The
  // processes of one run take it right after the start barrier.
  int64_t clock_origin_ns = 0;
  double throughput() const { return seconds > 0 ? static_cast<double>(records) / seconds : 0; }
};

// Runs cfg.job (throws std::invalid_argument for an unknown job).
RunResult run_job(const RunConfig& cfg);
// Runs a dataflow on `workers` threads until every operator is complete (tests); the
// rings between workers hold `ring_capacity` messages. With a transport of P processes
// (tests/across, under mpirun) every process calls it with the same dataflow: this one
// runs workers [rank*workers, rank*workers + workers) of P*workers (Worker::index() is
// global; `counters` holds this process's workers). One transport runs any number of
// dataflows, one after the other, each process calling in the same order.
void run_dataflow(uint32_t workers, const std::function<void(Worker&)>& build,
                  std::vector<WorkerCounters>* counters = nullptr,
                  size_t ring_capacity = kRingCapacity, Transport* transport = nullptr);

// The plain loop over the same input as the run: worker w's stream, records [0, n_w).
KeyCounts reference_output(const RunConfig& cfg, const std::vector<uint64_t>& per_worker);
// The COST baseline: the plain loop alone at full speed for cfg.duration (or
// cfg.records); returns records processed and seconds taken.
std::pair<uint64_t, double> reference_throughput(const RunConfig& cfg, KeyCounts* out);

// Order-independent digest of a per-key output (hex).
std::string output_digest(const KeyCounts& out);
// "" if equal, else the first difference in key order.
std::string first_difference(const KeyCounts& got, const KeyCounts& want);
// Current resident set size in MiB.
double rss_mb();

}  // namespace snailtrail::flow
