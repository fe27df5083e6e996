// `snailtrail run JOB` (docs/RUNTIME.md, docs/MEGAPHONE.md, docs/CLOSED-LOOP.md): its
// arguments and the parts run_command.cpp puts together: the options (run_options.cpp),
// the job's wiring — Megaphone's variant, the closed loop's planners, the runtime's
// configuration — (run_wiring.cpp), the live trace (run_live_trace.cpp) and the outputs
// (run_outputs.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cli/listen_security.hpp"
#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "loop/planner_thread.hpp"
#include "loop/rebalancer.hpp"
#include "megaphone/jobs.hpp"

namespace snailtrail::flow::profile {
class Profiler;
}

namespace snailtrail::cli {

class RunDashboard;

struct RunArgs {
  std::string job;
  uint32_t workers = 1;
  std::string rate = "max";
  std::string duration = "10s";
  uint64_t records = 0;
  uint64_t seed = 1;
  uint64_t keys = 1'000'000;
  double skew = 0;
  std::string epoch = "1ms";
  std::string latency = "epoch";  // or "record" (flow/record_latency.hpp)
  uint64_t latency_sample = 16;   // with --latency record: every Nth record of each source
  std::string trace;
  std::string trace_to;
  uint64_t trace_to_queue = 2'000'000;
  std::string trace_to_token_file, trace_to_tls_ca;           // --trace-to to a protected serve
  std::string trace_to_nats_creds;                            // or a protected nats-server
  std::string trace_to_nats_tls_cert, trace_to_nats_tls_key;  // one with --tlsverify
  std::string stats_json;
  bool verify = false;
  bool reference = false;
  bool quiet = false;
  uint32_t bins = 0;  // Megaphone (docs/MEGAPHONE.md): 0 = not binned
  bool native = false;
  std::string migrate_at;
  std::string strategy;  // default: all-at-once, batched with --autoscale
  // The closed loop (docs/CLOSED-LOOP.md).
  bool autoscale = false;
  uint32_t max_workers = 0, initial_workers = 1;
  std::string policy_interval = "1s";
  std::string startup;         // --startup (empty: loop::default_startup_ns)
  std::string scale_in_after;  // --scale-in-after (empty: loop::default_scale_in_after_ns)
  std::string rate_profile;
  double cost_us = 0;
  uint32_t warmup = 0, activation = 1;
  double target_ratio = 0;
  std::string reconfigure = "migrate";
  uint32_t batch_bins = 0;
  std::string under_backlog = "ahead";  // --under-backlog
  double target_utilization = 1.0;
  std::string skew_profile;              // --skew-profile
  bool rebalance = false;                // --rebalance
  std::map<std::string, double> params;  // job knobs (NEXMark: docs/NEXMARK.md)
  std::map<std::string, std::pair<std::string, std::string>> durations;  // flag: name, text
  bool profile = false;
  double profile_hz = 99;
  std::string http;  // --http: the live dashboard (docs/CLOSED-LOOP.md)
  double http_linger = 0;
  std::string http_window = "1s";  // --http's Job graph windows; 0: no Job graph
  SecurityArgs http_security;      // who may look at it (listen_security.hpp)
  // The runtime's knobs (docs/RUNTIME.md); 0: not given (the environment variable, else
  // the default).
  uint64_t mpi_chunk_bytes = 0, mpi_out_bytes = 0, park_max_us = 0;
};

// run_options.cpp: registers every option of `run` into `a`.
void add_run_options(CLI::App* cmd, RunArgs& a);

namespace runcmd {

// run_wiring.cpp ---------------------------------------------------------------------

// --rate: records/s, or 0 for "max". Throws std::invalid_argument.
double parse_rate(const std::string& text);

// The job as wired before the run: Megaphone's variant of it (if any) with the closed
// loop's planners, which the runtime's trace sinks feed.
struct JobWiring {
  std::shared_ptr<megaphone::MigrationLog> migrations = std::make_shared<megaphone::MigrationLog>();
  std::unique_ptr<loop::Autoscaler> autoscaler;
  std::unique_ptr<loop::Rebalancer> rebalancer;
  // Runs both planners off the workers' threads; declared after them (destroyed first).
  std::unique_ptr<loop::PlannerThread> planner;
  std::vector<std::pair<int64_t, double>> rate_profile;
  std::string megaphone_job;  // the registered Megaphone job, "" for the runtime's own
  bool skewed = false;        // --skew-profile
};

// Checks --rebalance/--autoscale and fills in their defaults (--bins 256, the workers).
void check_loop_args(RunArgs& a);
// Parses the profiles, registers Megaphone's job with its planners.
JobWiring wire_job(const RunArgs& a);
// run_loop.cpp: --autoscale and --rebalance: makes the planners (in `w`) and sets the
// Megaphone controller's planner in `o`, which asks DS2 first and the straggler planner
// when DS2 keeps the size. `skewed`: --skew-profile set the initial configuration.
void configure_planners(const RunArgs& a, JobWiring& w, bool skewed, megaphone::JobOptions& o);
// The runtime's configuration of the run (without transport, sinks and profiler).
flow::RunConfig make_run_config(const RunArgs& a, const JobWiring& w);
// --profile (docs/FLAME.md): the stack sampler, set in cfg.profiler.
std::unique_ptr<flow::profile::Profiler> make_profiler(const RunArgs& a, flow::RunConfig& cfg);
// The planners' trace sinks (after the ones set already, which get a copy of the events);
// refuses them under mpirun. With --trace and --rebalance alone (no --trace-to), `kept`
// collects the events for the file.
void attach_planners(const RunArgs& a, JobWiring& w, flow::RunConfig& cfg, flow::Transport* mpi,
                     bool live_trace, std::mutex& kept_mu, std::vector<Event>& kept);
// Every decision of both planners, in time order.
std::vector<loop::DecisionRecord> all_decisions(const loop::Autoscaler* autoscaler,
                                                const loop::Rebalancer* rebalancer);

// run_outputs.cpp --------------------------------------------------------------------

// --stats-json: throughput, the 250 ms intervals, the latency CCDF, Megaphone's
// migrations (and how many of those requested ran), the planners' decisions, the RSS
// timeline, the CP analyses, the digest.
void write_stats_json(const std::string& path, double throughput,
                      const std::vector<flow::IntervalStats>& intervals,
                      const std::vector<uint64_t>& latency, const std::string& digest,
                      const std::string& migrations = "", const std::string& decisions = "",
                      const std::vector<std::pair<double, double>>& rss_timeline = {},
                      const std::string& cp_analyses = "",
                      const std::string& migration_requests = "",
                      uint64_t latency_record_every = 0);
// exact_max: the largest sample (percentiles are bucket bounds, never above it); unit:
// what one sample is ("epochs", "sampled records"); how: said after the count.
void print_ccdf_summary(const std::vector<uint64_t>& latency, uint64_t exact_max = UINT64_MAX,
                        const std::string& unit = "epochs", const std::string& how = "");
// The run's line (records, throughput, latency, digest) and the CCDF summary on stderr.
void print_run_summary(const RunArgs& a, const flow::RunResult& r, const std::string& digest);
// --trace: the run's events (with --profile's samples) into the file.
void write_run_trace(const RunArgs& a, const flow::RunResult& r, flow::profile::Profiler* profiler);
// The decisions and migrations on stderr (with the command that analyses a migration's
// critical path when there is a --trace).
void print_decisions(const std::vector<loop::DecisionRecord>& decisions);
void print_migrations(const std::vector<megaphone::MigrationRecord>& ms, const std::string& trace);
// --http: the live dashboard (run_dashboard.hpp), fed by the statistics thread
// (cfg.on_interval) and the planners' and the migration log's own records.
std::unique_ptr<RunDashboard> make_dashboard(const RunArgs& a, flow::RunConfig& cfg,
                                             const JobWiring& w);

}  // namespace runcmd
}  // namespace snailtrail::cli
