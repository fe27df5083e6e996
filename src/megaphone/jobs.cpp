// Megaphone's jobs (jobs.hpp): the controller on a control source, key-count and
// hash-count on Megaphone's operators or on the plain operator, and the migration plans
// the controller follows. The migration log is in migration_log.cpp.
#include "megaphone/jobs.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <deque>
#include <stdexcept>

#include "flow/jobs/jobs.hpp"
#include "flow/open_loop.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::megaphone {

std::vector<uint32_t> round_robin_config(uint32_t bins, uint32_t workers) {
  std::vector<uint32_t> c(bins);
  for (uint32_t b = 0; b < bins; ++b) c[b] = initial_owner(b, workers);
  return c;
}

std::vector<uint32_t> half_config(uint32_t bins, uint32_t workers) {
  std::vector<uint32_t> c(bins);
  for (uint32_t b = 0; b < bins; ++b)
    c[b] = workers == 1 || b < bins / 2 ? 0 : 1 + b % (workers - 1);
  return c;
}

std::vector<std::vector<std::pair<uint32_t, uint32_t>>> plan_steps(
    const std::vector<uint32_t>& from, const std::vector<uint32_t>& to, Strategy s,
    uint32_t workers, uint32_t per_round) {
  per_round = std::max<uint32_t>(per_round, 1);
  std::vector<std::pair<uint32_t, uint32_t>> moves;
  for (uint32_t b = 0; b < from.size(); ++b)
    if (from[b] != to[b]) moves.emplace_back(b, to[b]);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> steps;
  if (moves.empty()) return steps;
  switch (s) {
    case Strategy::all_at_once:
      steps.push_back(moves);
      break;
    case Strategy::fluid:
      for (const auto& m : moves) steps.push_back({m});
      break;
    case Strategy::batched: {
      std::deque<std::pair<uint32_t, uint32_t>> left(moves.begin(), moves.end());
      while (!left.empty()) {
        std::vector<uint32_t> sends(workers, 0), receives(workers, 0);
        std::vector<std::pair<uint32_t, uint32_t>> round;
        std::deque<std::pair<uint32_t, uint32_t>> rest;
        for (const auto& m : left) {
          const uint32_t src = from[m.first], dst = m.second;
          if (sends[src] < per_round && receives[dst] < per_round) {
            ++sends[src];
            ++receives[dst];
            round.push_back(m);
          } else {
            rest.push_back(m);
          }
        }
        steps.push_back(std::move(round));
        left.swap(rest);
      }
      break;
    }
  }
  return steps;
}

void CostClock::charge(uint64_t step) {
  if (ns_ <= 0) return;
  if (step != step_) {
    step_ = step;
    deadline_ = std::chrono::steady_clock::now();
  }
  deadline_ += std::chrono::nanoseconds(ns_);
  while (std::chrono::steady_clock::now() < deadline_) {
  }
}

bool merge_under_backlog(size_t steps_left, int64_t backlog_ns, int64_t move_ns) {
  if (steps_left < 2 || backlog_ns <= 0) return false;
  const int64_t saved = move_ns - move_ns / static_cast<int64_t>(steps_left);
  return backlog_ns > saved;
}

int64_t move_ns_estimate(uint64_t bytes, double bytes_per_s) {
  return static_cast<int64_t>(static_cast<double>(bytes) / bytes_per_s * 1e9);
}

uint64_t bin_bytes_estimate(uint64_t keys, uint32_t log_bins, bool dense) {
  const uint64_t per_bin = (keys + (uint64_t{1} << log_bins) - 1) >> log_bins;
  return 8 + per_bin * (dense ? 8 : 16);  // the length, then the counters (key, count)
}

uint32_t per_round_for(const std::vector<uint32_t>& from, const std::vector<uint32_t>& to,
                       uint32_t workers, uint32_t rounds) {
  std::vector<uint32_t> sends(workers, 0), receives(workers, 0);
  for (size_t b = 0; b < from.size(); ++b)
    if (from[b] != to[b]) ++sends[from[b]], ++receives[to[b]];
  uint32_t most = 0;
  for (uint32_t w = 0; w < workers; ++w) most = std::max({most, sends[w], receives[w]});
  rounds = std::max<uint32_t>(rounds, 1);
  return std::max<uint32_t>(1, (most + rounds - 1) / rounds);
}

namespace {

using flow::JobContext;
using flow::KeyCounts;

int64_t since(const JobContext& ctx) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              ctx.start)
      .count();
}

// The control input: every worker's copy starts with a capability; only worker 0's
// (the controller) gives updates, the others drop theirs at once. The controller moves
// its capability with the clock (so F can route records of past epochs), starts a
// migration at each --migrate-at time (alternating between half_config and round-robin),
// gives the strategy's steps one after the other, each once the previous is complete
// (the S operators' output frontier has passed its time), and ends when the data
// sources have ended and no step is in flight.
struct Controller {
  JobContext* ctx;
  JobOptions opts;
  std::shared_ptr<MigrationLog> log;
  flow::ProbeHandle data;  // the data sources' frontier (kTimeMax: all ended)
  std::vector<uint32_t> config;
  size_t next = 0;
  std::deque<std::vector<std::pair<uint32_t, uint32_t>>> steps;
  bool inflight = false;
  flow::Time inflight_t = 0;
  // --reconfigure restart: the input is stopped, draining until `restart_to` is moved.
  bool draining = false, restarting = false;
  std::vector<uint32_t> restart_to;
  // The migration in flight is the planner's (not a --migrate-at one), its steps given so
  // far, and the estimated bytes of one bin (0: unknown, never merged).
  bool from_planner = false;
  uint64_t steps_given = 0;
  uint64_t bin_bytes = 0;

  void operator()(Capability& cap, Output<ControlUpdate>& out) {
    if (ctx->worker.index() != 0) {
      cap.drop();
      return;
    }
    const int64_t now = since(*ctx);
    const auto epoch = static_cast<flow::Time>(ctx->cfg.epoch_ns);
    const flow::Time clock = static_cast<flow::Time>(now) / epoch * epoch;
    flow::Time start_at = kTimeMax;
    step_progress(now);
    if (idle()) {
      if (data->frontier == kTimeMax) {        // the data sources have ended
        if (next < opts.migrate_at_ns.size())  // said in the run's summary, not dropped silently
          log->not_run(opts.migrate_at_ns.size() - next, now, opts.migrate_at_ns[next]);
        cap.drop();
        return;
      }
      if (next < opts.migrate_at_ns.size() && now >= opts.migrate_at_ns[next])
        start_at = start_migration(now);
      else if (opts.planner)
        ask_planner(now);
    }
    flow::Time until = std::min(start_at, ahead_bound());
    if (idle() && next < opts.migrate_at_ns.size()) until = std::min(until, migrate_time());
    const flow::Time tnow = std::max(cap.time(), std::min(clock, until));
    if (tnow != cap.time()) cap.downgrade(tnow);
    if (!inflight && !steps.empty()) give_step(cap, out);
  }

  // The planner's migrations move the bins ahead of a backlog (issue 35): the control
  // time stays at most opts.ahead_ns past the output frontier, so a step given now has a
  // time the output frontier reaches within ahead_ns of processing, not after the whole
  // backlog. The records after it (routed by F at its time, held there until the control
  // frontier passes them) follow the new configuration, and those S already has travel
  // with their bin (extract). In a job that keeps up the output frontier is within one
  // epoch of the clock and the bound never binds. Not for the restart baseline.
  flow::Time ahead_bound() const {
    if (!opts.planner || opts.restart || opts.ahead_ns <= 0) return kTimeMax;
    const auto ahead = static_cast<flow::Time>(opts.ahead_ns);
    const flow::Time of = ctx->probe_frontier;
    if (of >= kTimeMax - ahead) return kTimeMax;
    const auto epoch = static_cast<flow::Time>(ctx->cfg.epoch_ns);
    return (of + ahead) / epoch * epoch;
  }
  // No step in flight or planned, no restart under way.
  bool idle() const { return !inflight && steps.empty() && !draining && !restarting; }
  // A --migrate-at migration starts at the logical time of its --migrate-at (rounded
  // down to the epoch) however late this source runs: while idle the capability waits
  // there, so what the migration moves (the state after the times before it) does not
  // depend on timing. (Not if the previous migration is still running by then.)
  flow::Time migrate_time() const {
    const auto epoch = static_cast<flow::Time>(ctx->cfg.epoch_ns);
    return static_cast<flow::Time>(opts.migrate_at_ns[next]) / epoch * epoch;
  }
  // The step in flight is complete once S's output frontier passed its time; a restart
  // that has drained its input moves every changed bin in one step.
  void step_progress(int64_t now) {
    if (inflight && ctx->probe_frontier > inflight_t) {
      inflight = false;
      if (steps.empty()) {
        log->end(now);
        restarting = false;
      }
    }
    if (draining && ctx->probe_frontier >= data->frontier) {
      draining = false;
      restarting = true;
      auto plan = plan_steps(config, restart_to, Strategy::all_at_once, ctx->worker.peers());
      steps.assign(plan.begin(), plan.end());
    }
  }
  // The next --migrate-at migration (alternating between half_config and round-robin);
  // returns its logical start time.
  flow::Time start_migration(int64_t now) {
    const uint32_t W = ctx->worker.peers();
    const auto to = next % 2 == 0 ? half_config(static_cast<uint32_t>(config.size()), W)
                                  : round_robin_config(static_cast<uint32_t>(config.size()), W);
    auto plan = plan_steps(config, to, opts.strategy, W);
    log->start(now, opts.strategy, bins_in(plan), plan.size());
    steps.assign(plan.begin(), plan.end());
    from_planner = false;
    steps_given = 0;
    const flow::Time start_at = migrate_time();
    ++next;
    if (steps.empty()) log->end(now);
    return start_at;
  }
  // A configuration from the planner (the closed loop), as a migration or a restart.
  void ask_planner(int64_t now) {
    auto to = opts.planner(now, config);
    if (!to) return;
    const uint32_t W = ctx->worker.peers();
    const uint32_t per = opts.batch_bins > 0 ? opts.batch_bins : per_round_for(config, *to, W, 8);
    auto plan = plan_steps(config, *to, opts.strategy, W, per);
    if (plan.empty()) return;
    if (opts.restart) {
      log->start(now, Strategy::all_at_once, bins_in(plan), 1, "restart");
      ctx->cfg.pause_sources->store(true, std::memory_order_release);
      draining = true;
      restart_to = *to;
    } else {
      log->start(now, opts.strategy, bins_in(plan), plan.size());
      steps.assign(plan.begin(), plan.end());
      from_planner = true;
      steps_given = 0;
    }
  }
  // A planner's batched migration under a backlog: its remaining steps go as one when
  // merge_under_backlog says each would wait longer for the backlog than batching them
  // saves (issue 35). The backlog is what the next step, at time t, waits for: how far the
  // output frontier is behind t (not behind the sources' frontier: an overloaded worker's
  // source lags with it). Checked before every step, so a backlog that builds up during
  // the migration merges the rest.
  void merge_if_backlogged(flow::Time t) {
    if (!from_planner || restarting || steps.size() < 2 || opts.strategy != Strategy::batched ||
        !opts.merge_under_backlog || bin_bytes == 0)
      return;
    const flow::Time of = ctx->probe_frontier;
    if (data->frontier == kTimeMax || t <= of) return;
    const auto backlog = static_cast<int64_t>(t - of);
    uint64_t bins = 0;
    for (const auto& s : steps) bins += s.size();
    if (!merge_under_backlog(steps.size(), backlog,
                             move_ns_estimate(bins * bin_bytes, opts.move_bytes_per_s)))
      return;
    auto& first = steps.front();
    for (size_t i = 1; i < steps.size(); ++i)
      first.insert(first.end(), steps[i].begin(), steps[i].end());
    steps.resize(1);
    log->merged(backlog, steps_given + 1, steps_given + 1);
  }
  static uint64_t bins_in(const std::vector<std::vector<std::pair<uint32_t, uint32_t>>>& plan) {
    uint64_t bins = 0;
    for (const auto& s : plan) bins += s.size();
    return bins;
  }
  // Gives the next step's updates at the capability's time.
  void give_step(Capability& cap, Output<ControlUpdate>& out) {
    const flow::Time t = cap.time();
    merge_if_backlogged(t);
    log->step(t);
    ++steps_given;
    for (const auto& [bin, worker] : steps.front()) {
      out.give(cap, ControlUpdate{t, bin, worker});
      config[bin] = worker;
    }
    steps.pop_front();
    inflight = true;
    inflight_t = t;
    // Restart: the input resumes with the state on its way; no record of a moved bin
    // is folded before the bin's state is installed (S waits for its state input), and
    // the step completes only once the sources' frontier can pass t again.
    if (restarting) ctx->cfg.pause_sources->store(false, std::memory_order_release);
  }
};

Stream<ControlUpdate> controller(JobContext& ctx, const JobOptions& opts,
                                 std::shared_ptr<MigrationLog> log, flow::ProbeHandle data,
                                 uint64_t bin_bytes) {
  if (opts.restart && !ctx.cfg.pause_sources)
    throw std::invalid_argument("megaphone: the restart baseline needs RunConfig::pause_sources");
  Controller c{&ctx,  opts, std::move(log), std::move(data), {}, 0, {}, false, 0, false, false, {},
               false, 0,    bin_bytes};
  c.config = opts.initial.empty() ? round_robin_config(1u << opts.log_bins, ctx.worker.peers())
                                  : opts.initial;
  if (ctx.worker.index() == 0) c.log->requested(opts.migrate_at_ns.size());
  return flow::source<ControlUpdate>(ctx.worker, "control", std::move(c));
}

// The output probe: the runtime's latency measurement, and each epoch's latency to the
// migration log (worker 0, as the runtime).
template <class S>
void output_probe(JobContext& ctx, const S& stream, std::shared_ptr<MigrationLog> log) {
  flow::probe(stream, "probe", [c = &ctx, log](flow::Time old, flow::Time now_f) {
    c->on_probe(old, now_f);
    if (c->worker.index() != 0 || !log) return;
    const int64_t now = since(*c);
    const auto epoch = static_cast<flow::Time>(c->cfg.epoch_ns);
    const flow::Time last = c->last_time.load(std::memory_order_relaxed);
    for (flow::Time t = old / epoch * epoch; t < now_f && t <= last; t += epoch) {
      const int64_t lat = now - static_cast<int64_t>(t + epoch);
      log->latency(now, t, lat > 0 ? lat : 0);
    }
  });
}

void emit_dense(JobContext& ctx, const std::vector<uint64_t>& counts, uint64_t base,
                uint64_t stride) {
  KeyCounts out;
  for (uint64_t i = 0; i < counts.size(); ++i)
    if (counts[i]) out.emplace_back(i * stride + base, counts[i]);
  if (!out.empty()) ctx.emit_result(std::move(out));
}

// The plain operator (--native): each key to one worker, one State per worker.
void build_native(JobContext& ctx, const Stream<uint64_t>& keys, bool dense) {
  const flow::RunConfig& cfg = ctx.cfg;
  const uint32_t W = ctx.worker.peers();
  const uint32_t me = ctx.worker.index();
  if (dense) {
    const uint64_t size = (cfg.keys + W - 1) / W;
    auto out = native_unary<std::vector<uint64_t>, char>(
        keys, "count", [](uint64_t k, uint32_t n) { return static_cast<uint32_t>(k % n); },
        [size, W](flow::Time, uint64_t k, std::vector<uint64_t>& s, Session<char>&) {
          if (s.empty()) s.assign(size, 0);
          ++s[k / W];
        },
        [&ctx, me, W](std::vector<uint64_t>& s) { emit_dense(ctx, s, me, W); });
    output_probe(ctx, out, nullptr);
  } else {
    auto out = native_unary<flow::FlatMap<uint64_t>, char>(
        keys, "count", [](uint64_t k, uint32_t n) { return flow::worker_of(k, n); },
        [](flow::Time, uint64_t k, flow::FlatMap<uint64_t>& s, Session<char>&) { ++s[k]; },
        [&ctx](flow::FlatMap<uint64_t>& s) { ctx.emit_result(KeyCounts(s.begin(), s.end())); });
    output_probe(ctx, out, nullptr);
  }
}

// Megaphone's operator, with the controller on a control source.
void build_megaphone(JobContext& ctx, const Stream<uint64_t>& keys, bool dense,
                     const JobOptions& opts, const std::shared_ptr<MigrationLog>& log) {
  const flow::RunConfig& cfg = ctx.cfg;
  auto data_probe = flow::probe(keys, "source-probe", [](flow::Time, flow::Time) {});
  auto control =
      controller(ctx, opts, log, data_probe, bin_bytes_estimate(cfg.keys, opts.log_bins, dense));
  Options mo;
  mo.log_bins = opts.log_bins;
  mo.on_bin_sent_at = [log](flow::Time t, uint32_t, uint64_t bytes) {
    log->add_bytes_at(t, bytes);
  };
  mo.initial = opts.initial;
  const uint32_t k = opts.log_bins;
  const auto cost_ns = static_cast<int64_t>(opts.cost_us * 1000);
  if (dense) {
    const uint64_t size = (cfg.keys + (uint64_t{1} << k) - 1) >> k;
    auto out = stateful_unary<std::vector<uint64_t>, char>(
        keys, control, "count", mo,
        [k](uint64_t key) { return std::rotr(key, static_cast<int>(k)); },
        [size, k, cost = CostClock(cost_ns), w = &ctx.worker](
            flow::Time, uint64_t key, std::vector<uint64_t>& s, Later<uint64_t>&,
            Session<char>&) mutable {
          cost.charge(w->counters().steps);
          if (s.empty()) s.assign(size, 0);
          ++s[key >> k];
        },
        [&ctx, k](uint32_t bin, std::vector<uint64_t>& s) {
          emit_dense(ctx, s, bin, uint64_t{1} << k);
        });
    output_probe(ctx, out, log);
  } else {
    auto out = stateful_unary<flow::FlatMap<uint64_t>, char>(
        keys, control, "count", mo, [](uint64_t key) { return flow::mix64(key); },
        [cost = CostClock(cost_ns), w = &ctx.worker](flow::Time, uint64_t key,
                                                     flow::FlatMap<uint64_t>& s, Later<uint64_t>&,
                                                     Session<char>&) mutable {
          cost.charge(w->counters().steps);
          ++s[key];
        },
        [&ctx](uint32_t, flow::FlatMap<uint64_t>& s) {
          if (!s.empty()) ctx.emit_result(KeyCounts(s.begin(), s.end()));
        });
    output_probe(ctx, out, log);
  }
}

void build(JobContext& ctx, const JobOptions& opts, const std::shared_ptr<MigrationLog>& log) {
  const flow::RunConfig& cfg = ctx.cfg;
  const bool dense = opts.base == "keycount";
  auto keys = flow::open_loop_source<uint64_t>(
      ctx, "source",
      [&cfg, &opts, dense, counter = opts.bin_counter.get()](uint32_t w, uint64_t i) {
        const uint64_t key = opts.skew.empty()
                                 ? flow::jobs::keycount_key(cfg, w, i)
                                 : skewed_key(cfg, dense, opts.log_bins, opts.skew, w, i);
        if (counter) counter->add(w, key_bin(dense, opts.log_bins, key));
        return key;
      });
  if (opts.native)
    build_native(ctx, keys, dense);
  else
    build_megaphone(ctx, keys, dense, opts, log);
}

}  // namespace

std::string register_job(const JobOptions& opts, std::shared_ptr<MigrationLog> log) {
  if (opts.base != "keycount" && opts.base != "hashcount")
    throw std::invalid_argument("megaphone: no job '" + opts.base + "' (keycount, hashcount)");
  if (opts.log_bins > 20) throw UsageError({field("log_bins"), ": at most 2^20"});
  const flow::JobSpec* keycount = flow::find_job("keycount");
  flow::JobSpec j;
  j.name = opts.base + (opts.native ? "-native" : "-megaphone");
  j.description = opts.base == "keycount" ? "key-count, dense arrays (Megaphone §5.3.2)"
                                          : "hash-count, hash maps (Megaphone §5.3.2)";
  j.reference = keycount->reference;  // the same input and counts as keycount
  if (!opts.skew.empty())
    j.reference = [opts](const flow::RunConfig& cfg, uint32_t w, uint64_t from, uint64_t to,
                         flow::FlatMap<uint64_t>& state) {
      for (uint64_t i = from; i < to; ++i)
        ++state[skewed_key(cfg, opts.base == "keycount", opts.log_bins, opts.skew, w, i)];
    };
  if (!log) log = std::make_shared<MigrationLog>();
  j.build = [opts, log](flow::JobContext& ctx) { build(ctx, opts, log); };
  flow::register_job(std::move(j));
  return opts.base + (opts.native ? "-native" : "-megaphone");
}

Stream<ControlUpdate> make_controller(flow::JobContext& ctx, const JobOptions& opts,
                                      std::shared_ptr<MigrationLog> log, flow::ProbeHandle data) {
  return controller(ctx, opts, std::move(log), std::move(data), 0);
}

void log_probe_latency(flow::JobContext& ctx, MigrationLog& log, flow::Time old, flow::Time now_f) {
  if (ctx.worker.index() != 0) return;
  const int64_t now = since(ctx);
  const auto epoch = static_cast<flow::Time>(ctx.cfg.epoch_ns);
  const flow::Time last = ctx.last_time.load(std::memory_order_relaxed);
  for (flow::Time t = old / epoch * epoch; t < now_f && t <= last; t += epoch) {
    const int64_t lat = now - static_cast<int64_t>(t + epoch);
    log.latency(now, t, lat > 0 ? lat : 0);
  }
}

}  // namespace snailtrail::megaphone
