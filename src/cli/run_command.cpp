// `snailtrail run JOB`: runs a built-in job on the embedded dataflow runtime (src/flow,
// docs/RUNTIME.md): statistics every 250 ms, optional trace of its own execution,
// --verify against the plain single-threaded loop, --reference (the COST baseline).
// The steps are here; the options are in run_options.cpp, the job's wiring (Megaphone,
// the closed loop's planners, the runtime's configuration) in run_wiring.cpp, the live
// trace in run_live_trace.cpp and the outputs in run_outputs.cpp (run_args.hpp).
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/output_file.hpp"
#include "cli/run_args.hpp"
#include "cli/run_dashboard.hpp"
#include "cli/run_job_graph.hpp"
#include "cli/run_live_trace.hpp"
#include "cli/setting_flags.hpp"
#include "flow/jobs/jobs.hpp"
#include "flow/mpi_transport.hpp"
#include "flow/profile/sampler.hpp"
#include "nexmark/jobs.hpp"
#include "serve/auth.hpp"

namespace snailtrail::cli {
namespace {

using namespace runcmd;

// --reference: only the plain single-threaded loop at full speed (the COST baseline).
int run_reference(const RunArgs& a, const flow::RunConfig& cfg) {
  flow::KeyCounts out;
  auto [records, seconds] = flow::reference_throughput(cfg, &out);
  const double tput = seconds > 0 ? static_cast<double>(records) / seconds : 0;
  if (!a.quiet)
    fmt::print(stderr, "{} reference loop: {} records in {:.2f} s ({:.3g} records/s)\n", a.job,
               records, seconds, tput);
  if (!a.stats_json.empty()) write_stats_json(a.stats_json, tput, {}, {}, flow::output_digest(out));
  return 0;
}

// --trace-to: connects now, so that an unreachable target fails before the run.
std::unique_ptr<LiveTrace> start_live_trace(const RunArgs& a, flow::RunConfig& cfg,
                                            flow::Transport* mpi) {
  if (a.trace_to.empty() && !(a.trace_to_token_file.empty() && a.trace_to_tls_ca.empty() &&
                              a.trace_to_nats_creds.empty() && a.trace_to_nats_tls_cert.empty() &&
                              a.trace_to_nats_tls_key.empty()))
    throw std::invalid_argument(
        "--trace-to-token-file, --trace-to-tls-ca and --trace-to-nats-* need --trace-to");
  if (a.trace_to.empty()) return nullptr;
  serve::ClientAuth auth;
  auth.token_flag = "--trace-to-token-file";
  auth.ca_flag = "--trace-to-tls-ca";
  auth.tls_ca = a.trace_to_tls_ca;
  auth.nats_creds = a.trace_to_nats_creds;
  auth.nats_tls_cert = a.trace_to_nats_tls_cert;
  auth.nats_tls_key = a.trace_to_nats_tls_key;
  if (!a.trace_to_token_file.empty())
    auth.token = serve::read_token_file(a.trace_to_token_file, "--trace-to-token-file");
  std::unique_ptr<LiveTrace> live;
  try {
    live = std::make_unique<LiveTrace>(a.trace_to, auth, mpi ? mpi->rank() * cfg.workers : 0,
                                       cfg.workers, !a.trace.empty(), a.trace_to_queue);
  } catch (const std::exception& e) {
    if (!mpi) throw;
    fmt::print(stderr, "snailtrail: rank {}: {}\n", mpi->rank(), error_message(e));
    mpi->abort(1);  // the other processes must not wait for this one
  }
  cfg.on_trace_events = [l = live.get()](flow::TraceBuffer ev,
                                         const std::vector<std::string>& ops) {
    l->add(std::move(ev), ops);
  };
  return live;
}

// --http-window: "0" (no Job graph) or a positive duration.
int64_t http_window_ns(const RunArgs& a) {
  int64_t window = 0;
  try {
    window = a.http_window == "0" ? 0 : parse_duration(a.http_window);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("--http-window: ") + e.what());
  }
  if (window < 0) throw std::invalid_argument("--http-window: negative");
  return window;
}

// --http: the Job graph of the run's own trace (run_job_graph.hpp), a sink after the
// others. Under mpirun rank 0 sees only its own workers' events: none there.
std::shared_ptr<RunJobGraph> start_job_graph(const RunArgs& a, flow::RunConfig& cfg,
                                             flow::Transport* mpi, RunDashboard* dash) {
  const int64_t window = http_window_ns(a);
  if (!dash || mpi || window == 0) return nullptr;
  auto prev = cfg.on_trace_events;
  // The first sink keeps the events for --trace (the others before it keep them).
  auto graph = std::make_shared<RunJobGraph>(window, 0, cfg.workers, !prev && !a.trace.empty());
  cfg.trace = true;
  cfg.on_trace_events = [g = graph.get(), prev](flow::TraceBuffer ev,
                                                const std::vector<std::string>& ops) {
    if (prev) prev(ev, ops);  // the same buffer, shared
    g->add(std::move(ev), ops);
  };
  // The HTTP thread may ask until the dashboard stops: it holds the graph too.
  dash->set_jobgraph([graph](std::string marks) { return graph->json(std::move(marks)); });
  return graph;
}

flow::RunResult execute(const RunArgs& a, const flow::RunConfig& cfg,
                        const megaphone::MigrationLog& migrations, flow::Transport* mpi) {
  flow::RunResult r;
  try {
    r = flow::run_job(cfg);
  } catch (const std::exception& e) {
    const auto ms = migrations.records();
    if (!mpi && a.bins > 0 && !ms.empty() && !ms.back().completed)  // say what was in flight
      throw std::runtime_error(
          fmt::format("{} (during the {} migration started at {:.3f} s; the job stopped with it)",
                      error_message(e), ms.back().strategy, ms.back().start_s));
    if (!mpi) throw;
    fmt::print(stderr, "snailtrail: rank {}: {}\n", mpi->rank(), error_message(e));
    mpi->abort(1);  // the other processes must not wait for this one
  }
  return r;
}

// --trace-to's end: what is left is sent; with --trace, its copy of the events is the run's.
void finish_live_trace(const RunArgs& a, LiveTrace& live, flow::Transport* mpi,
                       flow::RunResult& r) {
  live.finish();
  r.events = live.take_kept();
  const std::string who = mpi ? fmt::format("rank {}: ", mpi->rank()) : "";
  if (!a.quiet)
    fmt::print(stderr, "{}trace-to: sent {} events ({} bytes) to {}\n", who, live.stats().events,
               live.stats().bytes, serve::redact_nats_url(a.trace_to));
  if (live.dropped())
    fmt::print(stderr,
               "{}trace-to: dropped {} events: the receiver did not keep up (queue bound "
               "{} events, --trace-to-queue)\n",
               who, live.dropped(), a.trace_to_queue);
  if (live.cut())
    fmt::print(stderr,
               "{}trace-to: {} events not sent: the receiver took nothing for 1 s after the job "
               "ended (stopped?), the stream to {} was cut\n",
               who, live.unsent(), serve::redact_nats_url(a.trace_to));
}

// After the run: the events for --trace (the planners took them), every rank's on rank 0
// under mpirun, and the bins other ranks' workers sent, to rank 0's migration records.
void collect_after_run(const RunArgs& a, JobWiring& w, bool live, std::vector<Event>& kept,
                       flow::Transport* mpi, flow::RunResult& r) {
  if ((w.autoscaler || w.rebalancer) && !a.trace.empty() && !live) {
    r.events = w.autoscaler ? w.autoscaler->take_events() : std::move(kept);
    std::stable_sort(r.events.begin(), r.events.end(),
                     [](const Event& x, const Event& y) { return x.ts < y.ts; });
  }
  if (!a.trace.empty() && mpi)
    r.events = gather_trace(*mpi, std::move(r.events), r.clock_origin_ns);
  if (mpi && a.bins > 0) {
    const bool rank0 = mpi->rank() == 0;
    const auto sent = mpi->gather(rank0 ? std::vector<uint64_t>{} : w.migrations->sent_words());
    if (rank0) w.migrations->add_sent_words(sent);
  }
}

// Rank 0's outputs after the run: --stats-json, the dashboard's final state, the
// decisions and migrations on stderr, --verify; then --http-linger.
int report(const RunArgs& a, const JobWiring& w, const flow::RunConfig& cfg,
           const flow::RunResult& r, const std::string& digest, RunDashboard* dash) {
  const std::vector<loop::DecisionRecord> decisions =
      all_decisions(w.autoscaler.get(), w.rebalancer.get());
  const std::string migrations_text =
      a.bins > 0 ? megaphone::migrations_json(w.migrations->records()) : "";
  const std::string decisions_text =
      w.autoscaler || w.rebalancer ? loop::decisions_json(decisions) : "";
  const megaphone::MigrationRequests requests = w.migrations->requests();  // --migrate-at
  if (!a.stats_json.empty())
    write_stats_json(a.stats_json, r.throughput(), r.intervals, r.latency, digest, migrations_text,
                     decisions_text, r.rss_timeline,
                     w.rebalancer ? loop::analyses_json(w.rebalancer->analyses()) : "",
                     requests.requested ? megaphone::migration_requests_json(requests) : "",
                     a.latency == "record" ? a.latency_sample : 0);
  if (dash) dash->finish(r.intervals, decisions_text, migrations_text);
  if (!a.quiet) print_decisions(decisions);
  if (a.bins > 0 && !a.quiet) print_migrations(w.migrations->records(), a.trace);
  if (requests.requested && !a.quiet)
    fmt::print(stderr, "{}\n", megaphone::migration_requests_text(requests));
  int rc = 0;
  if (a.verify) {
    const flow::KeyCounts want = flow::reference_output(cfg, r.generated);
    const std::string diff = flow::first_difference(r.output, want);
    if (!diff.empty()) {
      fmt::print(stderr, "snailtrail: verify: output differs from the plain loop: {}\n", diff);
      rc = 1;
    } else if (!a.quiet) {
      fmt::print(stderr, "verify: {} keys equal to the plain single-threaded loop\n", want.size());
    }
  }
  if (dash) {
    if (a.http_linger > 0 && !a.quiet)
      fmt::print(stderr, "snailtrail run: the dashboard stays on {} for {} s (--http-linger)\n",
                 dash->url(), a.http_linger);
    dash->linger(a.http_linger);
  }
  return rc;
}

// The checks before anything runs: an unwritable --stats-json, --http's combinations.
void check_outputs(const RunArgs& a) {
  std::unique_ptr<OutputFile> check;  // fail on an unwritable path before running
  if (!a.stats_json.empty()) check = std::make_unique<OutputFile>(a.stats_json);
  check.reset();
  if (a.reference && !a.http.empty())
    throw std::invalid_argument("--http: not with --reference (no runtime statistics)");
  if (a.http_linger < 0 || a.http_linger > 86400)
    throw std::invalid_argument("--http-linger: out of [0, 86400] seconds");
  http_window_ns(a);  // a bad --http-window fails before the dashboard listens
}

int run(RunArgs& a) {
  check_loop_args(a);
  // Migrated bins are allocated by the receiving worker's thread and freed later by
  // another: with glibc's per-thread arenas the freed memory stays in the sender's arena
  // and RSS creeps up by the state moved (fluid: +63 MB for 122 MB moved, kept after the
  // migration; docs/MEGAPHONE.md "RSS over time"). One arena lets the receiver reuse it;
  // the workers do not allocate per record, so throughput does not change (measured).
  if (a.bins > 0) ::mallopt(M_ARENA_MAX, 1);
  JobWiring w = wire_job(a);
  flow::RunConfig cfg = make_run_config(a, w);
  const std::unique_ptr<flow::profile::Profiler> profiler = make_profiler(a, cfg);
  check_outputs(a);
  if (a.reference) return run_reference(a, cfg);

  // Under mpirun -np P: P processes of cfg.workers threads; rank 0 reports (RUNTIME.md).
  const std::unique_ptr<flow::Transport> mpi =
      flow::mpi_transport_if_launched({}, {a.mpi_chunk_bytes, a.mpi_out_bytes});
  cfg.transport = mpi.get();
  const bool rank0 = !mpi || mpi->rank() == 0;
  if (!a.quiet && rank0) {
    cfg.on_stats_line = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    if (a.job == "wordcount" && cfg.skew > 0)
      fmt::print(stderr, "wordcount: the hot word is counted on worker-{}\n",
                 flow::worker_of(flow::jobs::kHotWord, cfg.workers * (mpi ? mpi->procs() : 1)));
  }
  const SecurityArgs& sec = a.http_security;
  if (a.http.empty() && (!sec.token_file.empty() || !sec.read_token_file.empty() ||
                         !sec.tls_cert.empty() || !sec.tls_key.empty() || sec.insecure))
    throw std::invalid_argument(
        "--token-file, --read-token-file, --tls-cert, --tls-key and --insecure apply to --http");
  std::unique_ptr<RunDashboard> dash;  // --http: rank 0 serves the dashboard
  if (!a.http.empty() && rank0) dash = make_dashboard(a, cfg, w);
  const std::unique_ptr<LiveTrace> live = start_live_trace(a, cfg, mpi.get());
  std::mutex kept_mu;
  std::vector<Event> kept;
  attach_planners(a, w, cfg, mpi.get(), live != nullptr, kept_mu, kept);
  const std::shared_ptr<RunJobGraph> graph = start_job_graph(a, cfg, mpi.get(), dash.get());
  flow::RunResult r = execute(a, cfg, *w.migrations, mpi.get());
  if (w.planner) w.planner->finish();  // every event given to the planners
  if (graph) graph->finish();
  if (graph && graph->keeps()) r.events = graph->take_kept();
  if (live) finish_live_trace(a, *live, mpi.get(), r);
  collect_after_run(a, w, live != nullptr, kept, mpi.get(), r);
  const std::string digest = flow::output_digest(r.output);
  if (!a.quiet && rank0) print_run_summary(a, r, digest);
  if (r.counters.clamped_receipts && rank0)  // never silent: those message edges are longer
    fmt::print(stderr,
               "trace: {} message receipts stamped after their arrival (a flush held the "
               "worker's events back for the hold's {:.3f} s and no longer)\n",
               r.counters.clamped_receipts, static_cast<double>(cfg.trace_hold_ns) * 1e-9);
  if (r.counters.early_records || r.counters.frontier_regressions)
    throw std::runtime_error(
        fmt::format("progress tracking violated: {} early records, {} frontier regressions",
                    r.counters.early_records, r.counters.frontier_regressions));
  if (!a.trace.empty() && rank0) write_run_trace(a, r, profiler.get());
  if (w.autoscaler && mpi && !a.quiet && rank0) {  // what crossed to rank 0's DS2
    const auto [n, bytes] = w.autoscaler->reports();
    fmt::print(stderr, "autoscale: rank 0 got {} interval reports ({} bytes) from {} ranks\n", n,
               bytes, mpi->procs() - 1);
  }
  if (!rank0) return 0;
  return report(a, w, cfg, r, digest, dash.get());
}

}  // namespace

CommandRunner add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  nexmark::register_jobs();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a built-in job on the embedded dataflow runtime (docs/RUNTIME.md)");
  add_run_options(cmd, *args);
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
