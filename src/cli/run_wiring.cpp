// `snailtrail run`'s job wiring: Megaphone's variant of the job (--bins, --native,
// hashcount), the closed loop's planners (--autoscale, --rebalance) and their trace
// sinks, the load profiles, and the runtime's configuration from the arguments.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "cli/duration.hpp"
#include "cli/run_args.hpp"
#include "flow/profile/sampler.hpp"
#include "loop/rank_link.hpp"
#include "nexmark/jobs.hpp"
#include "trace/environment.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli::runcmd {
namespace {

// --bins / --native / hashcount: registers Megaphone's variant of the job and returns its
// name ("" for the runtime's own jobs).
std::string megaphone_job(const RunArgs& a, const std::shared_ptr<megaphone::MigrationLog>& log,
                          const std::function<void(megaphone::JobOptions&)>& extra = {}) {
  const bool mp = a.bins > 0 || a.native || a.job == "hashcount";
  const bool nexmark_job = a.job.rfind("nexmark-q", 0) == 0 && flow::find_job(a.job);
  if (mp && nexmark_job) {  // --native: the plain job itself (docs/NEXMARK.md)
    if (a.bins > 0 && a.native)
      throw std::invalid_argument("--bins and --native exclude each other");
    if (a.bins == 0) {
      if (!a.migrate_at.empty()) throw std::invalid_argument("--migrate-at needs --bins");
      return "";
    }
  }
  if (!mp) {
    if (!a.migrate_at.empty()) throw std::invalid_argument("--migrate-at needs --bins");
    return "";
  }
  if (a.job != "keycount" && a.job != "hashcount" && !nexmark_job)
    throw std::invalid_argument("--bins/--native: only keycount, hashcount and nexmark-q3 ... q8");
  if (a.bins > 0 && a.native) throw std::invalid_argument("--bins and --native exclude each other");
  megaphone::JobOptions o;
  o.base = a.job;
  o.native = a.bins == 0;
  if (a.bins > 0) {
    if ((a.bins & (a.bins - 1)) != 0 || a.bins > (1u << 20))
      throw std::invalid_argument("--bins: " + std::to_string(a.bins) +
                                  " is not a power of two in [1, 2^20]");
    o.log_bins = static_cast<uint32_t>(std::countr_zero(a.bins));
  }
  o.strategy = megaphone::parse_strategy(
      a.strategy.empty() ? (a.autoscale ? "batched" : "all-at-once") : a.strategy);
  o.cost_us = a.cost_us;
  if (!a.migrate_at.empty()) {
    if (o.native) throw std::invalid_argument("--migrate-at needs --bins");
    size_t at = 0;
    while (at <= a.migrate_at.size()) {
      const size_t comma = std::min(a.migrate_at.find(',', at), a.migrate_at.size());
      int64_t ns = 0;
      try {
        ns = parse_duration(a.migrate_at.substr(at, comma - at));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--migrate-at: ") + e.what());
      }
      if (!o.migrate_at_ns.empty() && ns <= o.migrate_at_ns.back())
        throw std::invalid_argument("--migrate-at: times must increase");
      o.migrate_at_ns.push_back(ns);
      at = comma + 1;
    }
  }
  if (extra) extra(o);
  if (nexmark_job) return nexmark::register_megaphone_job(std::stoi(a.job.substr(9)), o, log);
  return megaphone::register_job(o, log);
}

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

// The autoscaler's trace sink, after --trace-to's (which gets a copy) if any.
void attach_autoscaler(loop::Autoscaler& as, flow::RunConfig& cfg) {
  cfg.trace = true;
  auto prev = cfg.on_trace_events;
  cfg.on_trace_events = [l = &as, prev](std::vector<Event>&& ev,
                                        const std::vector<std::string>& ops) {
    if (prev) prev(std::vector<Event>(ev), ops);
    l->on_events(std::move(ev), ops);
  };
}

// Another trace sink after the ones set already (which get a copy of the events).
void attach_sink(flow::RunConfig& cfg,
                 std::function<void(std::vector<Event>&&, const std::vector<std::string>&)> f) {
  cfg.trace = true;
  auto prev = cfg.on_trace_events;
  cfg.on_trace_events = [f = std::move(f), prev](std::vector<Event>&& ev,
                                                 const std::vector<std::string>& ops) {
    if (prev) prev(std::vector<Event>(ev), ops);
    f(std::move(ev), ops);
  };
}

// --skew-profile: the skewed key distribution over time; the bins start in contiguous
// ranges per worker.
void configure_skew(const RunArgs& a, const JobWiring& w,
                    const std::vector<std::pair<int64_t, double>>& skew_profile,
                    megaphone::JobOptions& o) {
  const uint32_t B = 1u << o.log_bins;
  if (o.base != "keycount" && o.base != "hashcount")
    throw std::invalid_argument("--skew-profile: only keycount and hashcount");
  auto rates = w.rate_profile;
  if (rates.empty() && parse_rate(a.rate) > 0) rates = {{0, parse_rate(a.rate)}};
  o.skew = megaphone::make_skew(rates, a.workers, skew_profile, std::max(1u, B / 8));
  // Flink's key-group ranges: each worker a contiguous range of bins, so that the hot
  // range [0, B/8) starts on worker 0.
  if (!o.native)
    o.initial = loop::contiguous_config(B, a.autoscale ? a.initial_workers : a.workers);
}

// --autoscale and --rebalance: the planners, and the Megaphone controller's planner that
// asks them.
void configure_planners(const RunArgs& a, JobWiring& w, bool skewed, megaphone::JobOptions& o) {
  const uint32_t B = 1u << o.log_bins;
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
  // DS2 first; a straggler only when DS2 keeps the size.
  if (w.autoscaler || w.rebalancer)
    o.planner = [as = w.autoscaler.get(), rb = w.rebalancer.get()](
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
}

}  // namespace

double parse_rate(const std::string& text) {
  if (text == "max") return 0;
  const std::optional<double> number = flow::parse_scaled(text);  // as --rate-profile's
  if (!number) throw std::invalid_argument("--rate: '" + text + "' is not a number or 'max'");
  const double r = *number;
  if (r < 1 || r > 1e10)
    throw std::invalid_argument("--rate: " + text + " is out of range [1, 1e10] records/s");
  return r;
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

JobWiring wire_job(const RunArgs& a) {
  JobWiring w;
  if (!a.rate_profile.empty()) {
    if (a.rate != "max") throw std::invalid_argument("--rate-profile replaces --rate: give one");
    if (a.job.rfind("nexmark-", 0) == 0)
      throw std::invalid_argument("--rate-profile: not for the nexmark jobs");
    w.rate_profile = flow::parse_profile(a.rate_profile, "rate_profile",
                                         [](const std::string& t) { return parse_duration(t); });
  }
  std::vector<std::pair<int64_t, double>> skew_profile;
  if (!a.skew_profile.empty())
    skew_profile = megaphone::parse_skew_profile(
        a.skew_profile, [](const std::string& t) { return parse_duration(t); });
  w.skewed = !skew_profile.empty();
  w.megaphone_job = megaphone_job(a, w.migrations, [&](megaphone::JobOptions& o) {
    if (w.skewed) configure_skew(a, w, skew_profile, o);
    configure_planners(a, w, w.skewed, o);
  });
  if (w.skewed && w.megaphone_job.empty())
    throw std::invalid_argument(
        "--skew-profile: only keycount/hashcount on Megaphone's operators (--bins, --native, "
        "--autoscale or --rebalance)");
  if (w.megaphone_job.empty() && !flow::find_job(a.job)) {
    std::string known;
    for (const auto& n : flow::job_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown job '" + a.job + "' (jobs: " + known + ")");
  }
  return w;
}

flow::RunConfig make_run_config(const RunArgs& a, const JobWiring& w) {
  flow::RunConfig cfg;
  cfg.job = w.megaphone_job.empty() ? a.job : w.megaphone_job;
  cfg.workers = a.workers;
  cfg.rate = parse_rate(a.rate);
  cfg.rate_profile = w.rate_profile;
  if (a.reconfigure != "migrate" && a.reconfigure != "restart")
    throw std::invalid_argument("--reconfigure: '" + a.reconfigure + "' is not migrate or restart");
  if (a.reconfigure == "restart") {
    if (!a.autoscale) throw std::invalid_argument("--reconfigure restart needs --autoscale");
    cfg.pause_sources = std::make_shared<std::atomic<bool>>(false);
  }
  try {
    cfg.duration_ns = parse_duration(a.duration);
    cfg.epoch_ns = parse_duration(a.epoch);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--duration/--epoch: ") + e.what());
  }
  if (cfg.duration_ns <= 0) throw std::invalid_argument("--duration must be positive");
  if (cfg.epoch_ns <= 0) throw std::invalid_argument("--epoch must be positive");
  cfg.latency_record_every = a.latency == "record" ? a.latency_sample : 0;
  cfg.records = a.records;
  cfg.seed = a.seed;
  cfg.keys = a.keys;
  cfg.skew = a.skew;
  cfg.params = a.params;
  for (const auto& [flag, value] : a.durations) {
    try {
      cfg.params[value.first] = static_cast<double>(parse_duration(value.second));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(flag + ": " + e.what());
    }
  }
  if (a.job.rfind("nexmark-", 0) == 0) nexmark::query_config(cfg);  // bad knobs: exit 2 now
  cfg.trace = !a.trace.empty() || !a.trace_to.empty();
  if (a.reference && (a.verify || cfg.trace))
    throw std::invalid_argument(
        "--reference runs only the plain loop: no --verify, --trace or --trace-to");
  if (!a.trace.empty()) {
    try {
      format_from_path(a.trace);
    } catch (const TraceError& e) {
      throw std::invalid_argument(std::string("--trace: ") + e.what());
    }
  }
  return cfg;
}

std::unique_ptr<flow::profile::Profiler> make_profiler(const RunArgs& a, flow::RunConfig& cfg) {
  std::unique_ptr<flow::profile::Profiler> profiler;
  if (a.profile) {
    if (a.trace.empty() || format_from_path(a.trace) != TraceFormat::snail)
      throw std::invalid_argument("--profile needs --trace FILE.snail (the samples go into it)");
    profiler = std::make_unique<flow::profile::Profiler>(a.profile_hz);
    cfg.profiler = profiler.get();
  }
  return profiler;
}

void attach_planners(const RunArgs& a, JobWiring& w, flow::RunConfig& cfg, flow::Transport* mpi,
                     bool live_trace, std::mutex& kept_mu, std::vector<Event>& kept) {
  if (w.autoscaler) {  // under mpirun: every rank's aggregates to rank 0's DS2 (CLOSED-LOOP.md)
    if (mpi && a.reconfigure == "restart")
      throw std::invalid_argument(
          "--reconfigure restart: not under mpirun (it stops rank 0's input only)");
    if (mpi) w.autoscaler->link_ranks(loop::transport_link(*mpi, cfg.workers));
    attach_autoscaler(*w.autoscaler, cfg);
  }
  if (mpi && w.rebalancer)
    throw std::invalid_argument(
        "--rebalance: not under mpirun: the CP analysis on rank 0 needs every rank's raw "
        "trace events of each interval (measured: ~4 MB per rank and 500 ms interval at 24 k "
        "records/s), not aggregates as DS2 (docs/CLOSED-LOOP.md); run it in one process");
  if (mpi && w.skewed)
    throw std::invalid_argument("--skew-profile: not under mpirun (one process only)");
  // --trace with --rebalance alone: the events the sink takes are kept for the file.
  if (w.rebalancer) {
    if (!a.trace.empty() && !live_trace && !w.autoscaler)
      attach_sink(cfg, [&kept_mu, &kept](std::vector<Event>&& ev, const std::vector<std::string>&) {
        std::lock_guard<std::mutex> lock(kept_mu);
        kept.insert(kept.end(), ev.begin(), ev.end());
      });
    attach_sink(cfg, [rb = w.rebalancer.get()](std::vector<Event>&& ev,
                                               const std::vector<std::string>& ops) {
      rb->on_events(std::move(ev), ops);
    });
  }
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
