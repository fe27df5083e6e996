// `snailtrail run`'s closed loop (docs/CLOSED-LOOP.md): the planners (--autoscale's DS2
// manager, --rebalance's CP straggler planner), the Megaphone controller's planner that
// asks them, their trace sinks, and their decisions.
#include <algorithm>
#include <cstdlib>
#include <functional>

#include "cli/duration.hpp"
#include "cli/run_args.hpp"
#include "loop/rank_link.hpp"
#include "trace/environment.hpp"

namespace snailtrail::cli::runcmd {
namespace {

// --autoscale: the DS2 manager in process, fed by the run's own trace events, sizes the
// stateful operator; its decisions are applied as Megaphone migrations (src/loop).
std::unique_ptr<loop::Autoscaler> make_autoscaler(const RunArgs& a, const flow::RunConfig& cfg) {
  if (a.job != "keycount" && a.job != "hashcount")
    throw std::invalid_argument("--autoscale: only keycount and hashcount");
  if (a.native || !a.migrate_at.empty())
    throw std::invalid_argument("--autoscale excludes --native and --migrate-at");
  loop::LoopOptions lo;
  const char* np = environment_value("OMPI_COMM_WORLD_SIZE");  // mpirun -np P: every rank's workers
  lo.max_workers = cfg.workers * static_cast<uint32_t>(np && std::atoi(np) > 1 ? std::atoi(np) : 1);
  lo.initial_workers = a.initial_workers;
  lo.bins = a.bins;
  lo.policy_interval_ns = parse_duration(a.policy_interval);
  if (!a.startup.empty()) lo.startup_ns = parse_duration(a.startup);
  if (!a.scale_in_after.empty()) lo.scale_in_after_ns = parse_duration(a.scale_in_after);
  lo.rate_profile = cfg.rate_profile;
  if (lo.rate_profile.empty() && cfg.rate > 0) lo.rate_profile = {{0, cfg.rate}};
  if (lo.rate_profile.empty())
    throw std::invalid_argument("--autoscale needs an open-loop --rate or --rate-profile");
  lo.manager.warmup = a.warmup;
  lo.manager.activation = a.activation;
  lo.manager.threshold = a.target_ratio;
  lo.manager.target_utilization = a.target_utilization;
  lo.manager.rollback = false;  // the sources' rate is the profile's, not the job's
  lo.keep_events = !a.trace.empty();
  return std::make_unique<loop::Autoscaler>(lo);
}

// Another trace sink after the ones set already (each gets the same shared buffer).
void attach_sink(flow::RunConfig& cfg,
                 std::function<void(flow::TraceBuffer, const std::vector<std::string>&)> f) {
  cfg.trace = true;
  auto prev = cfg.on_trace_events;
  cfg.on_trace_events = [f = std::move(f), prev](flow::TraceBuffer ev,
                                                 const std::vector<std::string>& ops) {
    if (prev) prev(ev, ops);
    f(std::move(ev), ops);
  };
}

// The autoscaler's trace sink, after --trace-to's if any: a rank > 0's under mpirun, which
// plans nothing.
void attach_autoscaler(loop::Autoscaler& as, flow::RunConfig& cfg) {
  attach_sink(cfg, [l = &as](flow::TraceBuffer ev, const std::vector<std::string>& ops) {
    l->on_events(*ev, ops);
  });
}

}  // namespace

void configure_planners(const RunArgs& a, JobWiring& w, bool skewed, megaphone::JobOptions& o) {
  const uint32_t B = 1u << o.log_bins;
  const std::string& ub = a.under_backlog;
  if (ub != "ahead" && ub != "merge" && ub != "keep")
    throw std::invalid_argument("--under-backlog: '" + ub + "' is not ahead, merge or keep");
  if (ub != "ahead") o.ahead_ns = 0;
  o.merge_under_backlog = ub != "keep";
  if (a.autoscale) {
    flow::RunConfig lc;
    lc.workers = a.workers;
    lc.rate = parse_rate(a.rate);
    lc.rate_profile = w.rate_profile;
    w.autoscaler = make_autoscaler(a, lc);
    o.restart = a.reconfigure == "restart";
    o.batch_bins = a.batch_bins;
    if (!skewed) o.initial = w.autoscaler->initial_config();
  }
  if (a.rebalance) {
    o.batch_bins = a.batch_bins;
    auto counter = std::make_shared<megaphone::BinCounter>(a.workers, B);
    o.bin_counter = counter;
    loop::RebalanceOptions ro;
    ro.workers = a.workers;
    ro.bins = B;
    ro.policy_interval_ns = parse_duration(a.policy_interval);
    ro.bin_counts = [counter] { return counter->totals(); };
    if (w.autoscaler) ro.active = [l = w.autoscaler.get()] { return l->active(); };
    w.rebalancer = std::make_unique<loop::Rebalancer>(ro);
  }
  if (!w.autoscaler && !w.rebalancer) return;
  // DS2 first; a straggler only when DS2 keeps the size. Both run on the planner thread
  // (loop/planner_thread.hpp): worker 0's controller only asks, without waiting.
  auto plan = [as = w.autoscaler.get(), rb = w.rebalancer.get()](
                  int64_t now,
                  const std::vector<uint32_t>& c) -> std::optional<std::vector<uint32_t>> {
    if (as) {
      if (auto to = as->plan(now, c)) {
        if (rb) rb->external_migration();
        return to;
      }
    }
    if (rb) {
      if (auto to = rb->plan(now, c)) {
        if (as) as->external_migration();
        return to;
      }
    }
    return std::nullopt;
  };
  // The buffers the workers handed over, read by the planners.
  auto sink = [as = w.autoscaler.get(), rb = w.rebalancer.get()](
                  const std::vector<Event>& ev, const std::vector<std::string>& ops) {
    if (as) as->on_events(ev, ops);
    if (rb) rb->on_events(ev, ops);
  };
  w.planner = std::make_unique<loop::PlannerThread>(std::move(sink), std::move(plan));
  o.planner = [pt = w.planner.get()](int64_t now, const std::vector<uint32_t>& c) {
    return pt->ask(now, c);
  };
}

void check_loop_args(RunArgs& a) {
  if (a.rebalance) {
    if (a.job != "keycount" && a.job != "hashcount")
      throw std::invalid_argument("--rebalance: only keycount and hashcount");
    if (a.native || !a.migrate_at.empty())
      throw std::invalid_argument("--rebalance excludes --native and --migrate-at");
    if (a.reconfigure != "migrate")
      throw std::invalid_argument("--rebalance: only with --reconfigure migrate");
    if (a.bins == 0) a.bins = 256;
  }
  if (a.autoscale) {
    if (a.max_workers > 0) a.workers = a.max_workers;
    if (a.bins == 0) a.bins = 256;
    if (a.initial_workers > a.workers)
      throw std::invalid_argument("--initial-workers: more than --max-workers");
  } else if (a.max_workers > 0) {
    throw std::invalid_argument("--max-workers needs --autoscale");
  }
  if (a.cost_us < 0 || a.cost_us > 1e6) throw std::invalid_argument("--cost-us: out of [0, 1e6]");
  if (a.cost_us > 0 && a.bins == 0)
    throw std::invalid_argument("--cost-us: only with --bins or --autoscale (Megaphone's jobs)");
}

void attach_planners(const RunArgs& a, JobWiring& w, flow::RunConfig& cfg, flow::Transport* mpi,
                     bool live_trace, std::mutex& kept_mu, std::vector<Event>& kept) {
  // Rank 0 (or the one process) plans on its planner thread; another rank's autoscaler
  // only sends its aggregates, from its workers' threads, during the run.
  const bool plans_here = !mpi || mpi->rank() == 0;
  if (w.autoscaler) {  // under mpirun: every rank's aggregates to rank 0's DS2 (CLOSED-LOOP.md)
    if (mpi && a.reconfigure == "restart")
      throw std::invalid_argument(
          "--reconfigure restart: not under mpirun (it stops rank 0's input only)");
    if (mpi) w.autoscaler->link_ranks(loop::transport_link(*mpi, cfg.workers));
    if (!plans_here) attach_autoscaler(*w.autoscaler, cfg);
  }
  if (mpi && w.rebalancer)
    throw std::invalid_argument(
        "--rebalance: not under mpirun: the CP analysis on rank 0 needs every rank's raw "
        "trace events of each interval (measured: ~4 MB per rank and 500 ms interval at 24 k "
        "records/s), not aggregates as DS2 (docs/CLOSED-LOOP.md); run it in one process");
  if (mpi && w.skewed)
    throw std::invalid_argument("--skew-profile: not under mpirun (one process only)");
  // --trace with --rebalance alone: the events the sink takes are kept for the file.
  if (w.rebalancer && !a.trace.empty() && !live_trace && !w.autoscaler)
    attach_sink(cfg, [&kept_mu, &kept](flow::TraceBuffer ev, const std::vector<std::string>&) {
      std::lock_guard<std::mutex> lock(kept_mu);
      kept.insert(kept.end(), ev->begin(), ev->end());
    });
  if (plans_here && w.planner)  // the workers move their buffers to the planner thread
    attach_sink(cfg,
                [pt = w.planner.get()](flow::TraceBuffer ev, const std::vector<std::string>& ops) {
                  pt->hand_over(std::move(ev), ops);
                });
}

// Every decision of both planners, in time order.
std::vector<loop::DecisionRecord> all_decisions(const loop::Autoscaler* autoscaler,
                                                const loop::Rebalancer* rebalancer) {
  std::vector<loop::DecisionRecord> decisions;
  if (autoscaler) decisions = autoscaler->decisions();
  if (rebalancer) {
    const auto rd = rebalancer->decisions();
    decisions.insert(decisions.end(), rd.begin(), rd.end());
  }
  std::stable_sort(decisions.begin(), decisions.end(),
                   [](const auto& x, const auto& y) { return x.time_s < y.time_s; });
  return decisions;
}

}  // namespace snailtrail::cli::runcmd
