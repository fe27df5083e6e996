// The options of `snailtrail run` (run_args.hpp), in the order --help lists them.
#include <charconv>
#include <functional>
#include <string>

#include "cli/run_args.hpp"

namespace snailtrail::cli {
namespace {

// A check that refuses an explicit 0 (the default 0 means "not given"), saying why.
std::function<std::string(const std::string&)> refuse_zero(std::string why) {
  return [why = std::move(why)](const std::string& v) {
    return !v.empty() && v.find_first_not_of('0') == std::string::npos ? why : std::string();
  };
}

// A check that takes only a whole number from 1 to `most` (CLI11 names the flag).
std::function<std::string(const std::string&)> positive(uint64_t most) {
  return [most](const std::string& v) {
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && end == v.data() + v.size() && n >= 1 && n <= most)
      return std::string();
    return "'" + v + "' is not a whole number from 1 to " + std::to_string(most);
  };
}

// The job and its generated input.
void add_job_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("JOB", a.job,
                  "Job: keycount, wordcount, hashcount (Megaphone's, see --bins), or "
                  "nexmark-q0 ... nexmark-q8 (docs/NEXMARK.md)")
      ->required();
  cmd->add_option("--workers,-w", a.workers, "Worker threads (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--rate", a.rate,
                  "Offered load in records/s over all workers (open loop; k, M, G suffixes as "
                  "in --rate-profile, e.g. 200k), or 'max' (the default: closed loop, as fast "
                  "as the dataflow keeps up; sources stay within 1 epoch of the output probe)");
  cmd->add_option("--duration,-d", a.duration,
                  "How long the sources run, > 0 (default 10s); the run ends at --duration or "
                  "--records, whichever comes first");
  cmd->add_option("--records", a.records,
                  "Stop the sources after this many records in total, >= 1 (default: no "
                  "limit, only --duration ends the run)")
      ->check(refuse_zero("0 records would end the run before it starts: give at least 1, or "
                          "leave --records out for no limit"));
  cmd->add_option("--seed", a.seed, "Seed of the generated input (default 1)");
  cmd->add_option("--keys", a.keys,
                  "Key domain (keycount) or vocabulary (wordcount) size (default 1000000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  cmd->add_option("--skew", a.skew,
                  "wordcount: share of all words that are the hot word, in [0, 1] (default 0)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--epoch", a.epoch,
                  "Logical time granularity: records generated within one epoch share a "
                  "timestamp (default 1ms)");
  cmd->add_option("--latency", a.latency,
                  "What one latency sample is: 'epoch' (the default: from an epoch's end until "
                  "the output has passed it) or 'record' (as Megaphone measures: from a "
                  "record's intended time until the output has passed it, every "
                  "--latency-sample'th record of each source)")
      ->check(CLI::IsMember({"epoch", "record"}));
  cmd->add_option("--latency-sample", a.latency_sample,
                  "With --latency record: sample every Nth record of each source (default 16)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
}

// What the run writes: its trace, statistics, the check against the plain loop.
void add_output_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--trace", a.trace,
                  "Record the run's own activity and write it as a trace (.snail or .jsonl) "
                  "that analyze, report and scale read (under mpirun: rank 0 writes one trace "
                  "of every rank's workers)");
  cmd->add_option("--trace-to", a.trace_to,
                  "Stream the run's own activity live to `snailtrail serve --tcp HOST:PORT` "
                  "(tls://HOST:PORT: over TLS, verified against the system's CA store or "
                  "--trace-to-tls-ca) (.snail stream, flushed every 50 ms) or into a JetStream "
                  "stream nats://[USER:PASS@]HOST:PORT/STREAM (tls://... for TLS); exit 1 if it "
                  "cannot connect within 1 s");
  cmd->add_option("--trace-to-queue", a.trace_to_queue,
                  "--trace-to: events queued for the receiver at most (default 2000000); "
                  "events that do not fit are dropped and counted, never blocking the run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  cmd->add_option("--trace-to-token-file", a.trace_to_token_file,
                  "--trace-to HOST:PORT: send the token in FILE (its first line) as the "
                  "stream's first line, for a serve started with --token-file (as send "
                  "--token-file)");
  cmd->add_option("--trace-to-tls-ca", a.trace_to_tls_ca,
                  "--trace-to: connect over TLS, trusting the CA certificate(s) in this PEM "
                  "file (serve --tls-cert, or a nats-server with TLS); the certificate must name "
                  "the HOST (as send --tls-ca)");
  cmd->add_option("--trace-to-nats-creds", a.trace_to_nats_creds,
                  "--trace-to nats://: present this NATS credentials file (user JWT and nkey "
                  "seed) to nats-server (as send --nats-creds)");
  cmd->add_option("--trace-to-nats-tls-cert", a.trace_to_nats_tls_cert,
                  "--trace-to tls://.../STREAM: present this client certificate (PEM) to a "
                  "nats-server started with --tlsverify (as send --nats-tls-cert)");
  cmd->add_option("--trace-to-nats-tls-key", a.trace_to_nats_tls_key,
                  "The PEM private key of --trace-to-nats-tls-cert");
  cmd->add_option("--stats-json", a.stats_json,
                  "Write throughput, 250 ms intervals, the latency CCDF, the output digest and "
                  "the RSS every 10 ms (rss_timeline) as JSON");
  cmd->add_flag("--verify", a.verify,
                "Also run the plain single-threaded loop over the same input; exit 1 with the "
                "first difference if the outputs differ");
  cmd->add_flag("--reference", a.reference,
                "Run only the plain single-threaded loop at full speed (the COST baseline)");
  cmd->add_flag("--quiet,-q", a.quiet, "No statistics lines or summary on stderr");
}

// Megaphone (docs/MEGAPHONE.md): binned state and migrations.
void add_megaphone_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--bins", a.bins,
                  "keycount/hashcount/nexmark-q3..q8 on Megaphone's migratable operators with "
                  "this many bins (a power of two from 1 to 2^20, e.g. 4096; docs/MEGAPHONE.md, "
                  "docs/NEXMARK.md)")
      ->check(refuse_zero("0 is not a number of bins: give a power of two from 1 to 2^20 for "
                          "Megaphone's operators, or --native (or no --bins) for the plain "
                          "operator"));
  cmd->add_flag("--native", a.native,
                "keycount/hashcount on the plain, non-migratable operator (Megaphone's overhead "
                "baseline; hashcount's default); nexmark-qN: the native keyed state (the default)");
  cmd->add_option("--migrate-at", a.migrate_at,
                  "With --bins: start a migration at each of these times since the start "
                  "(e.g. 10s,20s), alternately from round-robin to worker 0 holding half of the "
                  "bins and back");
  cmd->add_option("--strategy", a.strategy,
                  "Migration strategy: all-at-once (default), fluid (one bin at a time) or "
                  "batched (rounds in which each worker sends and receives at most one bin; "
                  "the default with --autoscale)");
}

// The closed loop (docs/CLOSED-LOOP.md): DS2 in process.
void add_loop_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_flag("--autoscale", a.autoscale,
                "keycount/hashcount: the closed loop (docs/CLOSED-LOOP.md): all --max-workers "
                "threads run, only the active ones hold bins; every --policy-interval the DS2 "
                "manager, fed by the run's own trace events, sizes the stateful operator and "
                "its decision is applied as a Megaphone migration (no restart, no input "
                "pause). --bins defaults to 256");
  cmd->add_option("--max-workers", a.max_workers,
                  "--autoscale: worker threads started (the most the job may use; default "
                  "--workers; under mpirun per process, as --workers: DS2 on rank 0 sizes "
                  "all of them)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--initial-workers", a.initial_workers,
                  "--autoscale: workers holding bins at the start (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--policy-interval", a.policy_interval,
                  "--autoscale/--rebalance: DS2's and the CP analysis' interval (default 1s)");
  cmd->add_option("--startup", a.startup,
                  "--autoscale: DS2 skips intervals that start before this (default: 2s or 2 "
                  "--policy-interval if longer) or before both operators produced output");
  cmd->add_option("--scale-in-after", a.scale_in_after,
                  "--autoscale: DS2 scales in only when every interval over this long asked "
                  "for fewer workers (scale-out: at once; default: 2s or 3 --policy-interval "
                  "if longer; 0s: on one interval)");
  cmd->add_option("--warmup", a.warmup,
                  "--autoscale: intervals ignored after a change (default 0; those with a "
                  "migration in them always are)");
  cmd->add_option("--activation", a.activation,
                  "--autoscale: consecutive DS2 decisions combined (max) to act (default 1)")
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--target-ratio", a.target_ratio,
                  "--autoscale: DS2's target-rate ratio: when the sources achieve less than "
                  "this share of the target while the model says the job keeps up, the "
                  "targets are raised by the shortfall (default 0: off)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--target-utilization", a.target_utilization,
                  "--autoscale: size the stateful operator so that its workers are busy this "
                  "share of the time (headroom, in (0, 1]; default 1)")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--batch-bins", a.batch_bins,
                  "--autoscale with --strategy batched: bins each worker sends (and receives) "
                  "per round (default 0: about 8 rounds per migration)");
  cmd->add_option("--under-backlog", a.under_backlog,
                  "--autoscale/--rebalance: ahead (default: a migration's time stays within "
                  "50 ms of the output frontier, so its bins leave ahead of a backlog, and "
                  "as merge), merge (batched steps go as one when a step would wait longer "
                  "for the output frontier than batching saves) or keep (neither)");
  cmd->add_option("--reconfigure", a.reconfigure,
                  "--autoscale: how a decision is applied: migrate (default: a Megaphone "
                  "migration under --strategy, the input keeps flowing) or restart (the "
                  "baseline: stop the input, drain, move every changed bin at once, resume)");
}

// Load profiles, skew and --rebalance (docs/CLOSED-LOOP.md).
void add_load_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--rate-profile", a.rate_profile,
                  "Piecewise-constant open-loop rate instead of --rate: TIME:RATE,... with "
                  "records/s over all workers (k, M, G suffixes), e.g. 0s:100k,30s:400k,60s:100k");
  cmd->add_option("--skew-profile", a.skew_profile,
                  "keycount/hashcount on Megaphone's operators: a share of the records over time "
                  "sent to the hot bins [0, bins/8), TIME:SHARE,... with shares in [0, 1] (e.g. "
                  "0s:0,30s:0.5); needs an open-loop --rate/--rate-profile; the bins then start "
                  "in contiguous ranges per worker, the hot range on worker 0 "
                  "(docs/CLOSED-LOOP.md)");
  cmd->add_flag("--rebalance", a.rebalance,
                "keycount/hashcount: every --policy-interval the CP analysis of the run's own "
                "trace looks for a straggler (CP >= 2x the next worker's); its hottest bins (by "
                "records in the interval) move to the least-loaded active workers as a Megaphone "
                "migration (--strategy; default all-at-once, batched with --autoscale) until its "
                "load is near the mean. Alone "
                "or with --autoscale; --bins defaults to 256 (docs/CLOSED-LOOP.md)");
  cmd->add_option("--cost-us", a.cost_us,
                  "With --bins/--autoscale: CPU work per record in the stateful operator, a busy "
                  "wait of this many microseconds (so that one worker provably cannot keep up "
                  "at a given rate)");
}

// NEXMark knobs (docs/NEXMARK.md), kept in RunConfig::params.
void add_nexmark_options(CLI::App* cmd, RunArgs& a) {
  auto knob = [cmd, p = &a.params](const char* flag, const char* name, const char* help) {
    cmd->add_option_function<double>(
        flag, [p, name](double v) { (*p)[name] = v; }, help);
  };
  auto window = [cmd, p = &a.durations](const char* flag, const char* name, const char* help) {
    cmd->add_option_function<std::string>(
        flag,
        [p, flag, name](const std::string& v) {
          (*p)[flag] = {name, v};
        },
        help);
  };
  knob("--dilation", "dilation",
       "nexmark: event time runs this many times faster than wall time (default 1)");
  knob("--event-rate", "event_rate",
       "nexmark under --rate max: events/s of the event-time schedule (default 1000000)");
  cmd->add_flag_function(
      "--payloads", [p = &a.params](int64_t) { (*p)["payloads"] = 1; },
      "nexmark: keep the stored persons' and auctions' text fields and padding (NEXMark's "
      "sizes) in the queries' state (Q3, Q4, Q6, Q8); default off (docs/NEXMARK.md)");
  knob("--active-people", "active_people",
       "nexmark: persons that bids and auctions pick from (default 1000)");
  knob("--in-flight-auctions", "in_flight_auctions",
       "nexmark: auctions open on average, that bids pick from (default 100)");
  knob("--hot-auction-ratio", "hot_auction_ratio",
       "nexmark: a bid goes to the hot auction with probability 1 - 1/ratio (default 2)");
  knob("--hot-bidder-ratio", "hot_bidder_ratio",
       "nexmark: a bid comes from the hot bidder with probability 1 - 1/ratio (default 4)");
  knob("--hot-seller-ratio", "hot_seller_ratio",
       "nexmark: an auction is by the hot seller with probability 1 - 1/ratio (default 4)");
  window("--window", "window_ns",
         "nexmark: Q5's sliding and Q7/Q8's tumbling window in event time (default 10s)");
  window("--window-slide", "window_slide_ns",
         "nexmark: Q5's window period in event time, dividing --window (default 5s)");
}

// --profile (docs/FLAME.md) and the --http dashboard (docs/CLOSED-LOOP.md).
void add_profile_http_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_flag("--profile", a.profile,
                "Sample the workers' stacks (on-CPU every 1/--profile-hz s of a thread's CPU "
                "time; off-CPU where a worker starts waiting) into the --trace .snail file, "
                "for `snailtrail flamegraph` (docs/FLAME.md)");
  cmd->add_option("--profile-hz", a.profile_hz, "On-CPU samples per second of CPU time, 1..10000")
      ->capture_default_str();
  cmd->add_option("--http", a.http,
                  "Serve a live dashboard while the job runs on [HOST:]PORT (HOST defaults to "
                  "127.0.0.1; port 0 picks a free one, printed on stderr): `/` draws the latency "
                  "timeline (p50/p99/max), throughput and active workers with the decisions "
                  "and migrations marked; `/api/timeline` is its JSON; below, the Job graph "
                  "of the run's own trace, `/api/jobgraph` (docs/CLOSED-LOOP.md, REPORT.md)");
  cmd->add_option("--http-linger", a.http_linger,
                  "--http: keep serving the final timeline this many seconds after the job "
                  "ends (default 0)");
  cmd->add_option("--http-window", a.http_window,
                  "--http: the Job graph's window (the run traces itself, analyzed as `report "
                  "--window` would); 0: no Job graph, no tracing for it")
      ->capture_default_str();
  add_security_options(cmd, a.http_security, "--http (the dashboard)", false);
}

// The runtime's knobs (docs/RUNTIME.md), each over its environment variable.
void add_runtime_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--mpi-chunk-bytes", a.mpi_chunk_bytes,
                  "Under mpirun: largest MPI message, 1 to 2147483647 bytes (default "
                  "SNAILTRAIL_MPI_CHUNK_BYTES, else 64 MiB)")
      ->check(positive(INT32_MAX));
  cmd->add_option("--mpi-out-bytes", a.mpi_out_bytes,
                  "Under mpirun: bytes queued for or in flight to one process before a sender "
                  "waits, >= 1 (default SNAILTRAIL_MPI_OUT_BYTES, else 256 MiB)")
      ->check(positive(UINT64_MAX));
  cmd->add_option("--park-max-us", a.park_max_us,
                  "Longest sleep of an idle worker (a message wakes it), 1 to 10000000 us "
                  "(below 20: 20; default SNAILTRAIL_FLOW_PARK_MAX_US, else 1000)")
      ->check(positive(flow::kMaxParkUs));
}

}  // namespace

void add_run_options(CLI::App* cmd, RunArgs& a) {
  add_job_options(cmd, a);
  add_output_options(cmd, a);
  add_megaphone_options(cmd, a);
  add_loop_options(cmd, a);
  add_load_options(cmd, a);
  add_nexmark_options(cmd, a);
  add_profile_http_options(cmd, a);
  add_runtime_options(cmd, a);
}

}  // namespace snailtrail::cli
