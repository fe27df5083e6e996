// Registration of the options of `snailtrail scale` (scale_args.hpp).
#include "cli/scale_args.hpp"

#include "cli/duration.hpp"
#include "cli/import_options.hpp"
#include "importers/importer.hpp"

namespace snailtrail::cli {

void add_policy_options(CLI::App* cmd, PolicyArgs& a) {
  cmd->add_option("--topology", a.topology, "DS2 topology CSV (one edge per line)");
  cmd->add_option("--rates,--ds2-metrics", a.rates,
                  "DS2 rates CSV, or a directory of NAME-EPOCH.EXT rate files "
                  "(--ds2-metrics: the same)");
  cmd->add_option("--trace", a.trace,
                  "A trace instead of DS2 files (any importer; uses the records field)");
  cmd->add_option("--flink", a.flink,
                  "A running Flink job's REST API (http://HOST:8081): its job graph and "
                  "per-vertex busy time and record rates (docs/AUTOSCALING.md)");
  cmd->add_option("--job", a.job, "With --flink: the job id (default: the only running job)");
  cmd->add_option("--importer", a.importer, "Trace format: " + importers::importer_names())
      ->capture_default_str();
  add_import_options(cmd, a.import_options);
  cmd->add_option("--interval", a.interval, "With --trace: policy interval (epoch length)")
      ->capture_default_str();
  cmd->add_option("--source-rates", a.source_rates,
                  "DS2 source rates CSV (source_operator_name,output_rate_per_instance): "
                  "target rates instead of the measured ones");
  cmd->add_option("--system", a.system,
                  "flink, heron (per-operator parallelism) or timely (total workers = sum)")
      ->check(CLI::IsMember({"flink", "heron", "timely"}))
      ->capture_default_str();
  cmd->add_option("--threshold", a.threshold,
                  "Target-rate ratio: below it, with the current configuration judged "
                  "sufficient, targets are raised by target/achieved (0 = off)")
      ->capture_default_str();
  cmd->add_option("--factor", a.factor, "Scaling factor: provision for F x the target rate")
      ->capture_default_str();
  cmd->add_option("--target-utilization", a.target_utilization,
                  "Headroom: size operators to be busy this share of the time (0-1; 0.7 = "
                  "provision 1/0.7 x)")
      ->capture_default_str();
  cmd->add_option("--source-target", a.source_target,
                  "Sources without --source-rates: their true output rate (DS2's definition; "
                  "default for DS2 files) or their observed one (default for traces)")
      ->check(CLI::IsMember({"true", "observed"}));
  cmd->add_option("--saturation", a.saturation,
                  "An instance at least this busy is saturated: its operator is never scaled "
                  "down and skew is reported (0 = off)")
      ->capture_default_str();
  cmd->add_option("--format,-f", a.format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--output,-o", a.output, "Write to FILE instead of stdout");
}

void add_manage_sources(CLI::App* cmd, ManageArgs& a) {
  cmd->add_option("--simulate", a.simulate,
                  "Run this pipelined scenario (TOML) with the controller in the loop");
  cmd->add_option("--rates,--ds2-metrics", a.metrics_dir,
                  "A directory of DS2 rate files (NAME-EPOCH.EXT): read to its end, decisions "
                  "as scale policy --rates gives them (--follow: as it is written; "
                  "--ds2-metrics: the old name)");
  cmd->add_flag("--follow", a.follow,
                "With --rates DIR: keep reading the files as they are written (until "
                "--idle-exit without a new epoch; given --idle-exit implies it)");
  cmd->add_option("--trace", a.trace, "Replay the metrics of a trace (any importer)");
  cmd->add_option("--serve", a.serve,
                  "Follow the DS2 rates of a running `snailtrail serve` (its HTTP API: "
                  "http://127.0.0.1:PORT on loopback, or https://HOST:PORT with --tls-ca)");
  cmd->add_option("--token-file", a.token_file,
                  "With --serve: send the token in FILE (its first line) as Authorization: "
                  "Bearer, for a serve started with --token-file (its read or write token)");
  cmd->add_option("--tls-ca", a.tls_ca,
                  "With --serve https://HOST:PORT: trust the CA certificate(s) in this PEM "
                  "file (serve --tls-cert) instead of the system's CA store; the certificate "
                  "must name HOST");
  cmd->add_option("--importer", a.importer, "Trace format for --trace")->capture_default_str();
  add_import_options(cmd, a.import_options);
  cmd->add_option("--topology", a.topology,
                  "DS2 topology CSV (with --ds2-metrics; with --serve instead of the "
                  "topology serve learns from the stream)");
  cmd->add_option("--source-rates", a.source_rates, "DS2 source rates CSV (target rates)");
  cmd->add_option("--flink", a.flink,
                  "Follow a running Flink job through its REST API (http://HOST:8081): its "
                  "graph and per-vertex busy time and record rates, read every --interval");
  cmd->add_option("--job", a.job, "With --flink: the job id (default: the only running job)");
}

void add_manage_knobs(CLI::App* cmd, ManageArgs& a) {
  cmd->add_option("--controller", a.controller, "ds2 or dhalion (rule-based baseline)")
      ->check(CLI::IsMember({"ds2", "dhalion"}))
      ->capture_default_str();
  cmd->add_option("--interval", a.interval,
                  "Policy interval (with --serve: serve's --rate-interval; if given, it must "
                  "match)")
      ->capture_default_str();
  cmd->add_option("--duration,-d", a.duration,
                  "With --simulate: simulated time (default: the scenario's); with --serve: "
                  "how long to follow (wall time, default: until serve goes away)");
  cmd->add_option("--redeploy-pause", a.pause,
                  "With --simulate: time a reconfiguration takes (sources back up meanwhile)")
      ->capture_default_str();
  cmd->add_option("--warmup", a.warmup, "Intervals ignored after a change")->capture_default_str();
  cmd->add_option("--activation", a.activation, "Consecutive decisions combined before acting")
      ->capture_default_str();
  cmd->add_option("--combine", a.combine, "How activation combines decisions: max or median")
      ->check(CLI::IsMember({"max", "median"}))
      ->capture_default_str();
  cmd->add_option("--threshold", a.threshold,
                  "Target-rate ratio (see scale policy); 0 = off. Default 0.95, but 0 with "
                  "--rates, as in scale policy");
  cmd->add_option("--factor", a.factor, "Scaling factor")->capture_default_str();
  cmd->add_option("--target-utilization", a.target_utilization,
                  "Headroom: size operators to be busy this share of the time (0-1, e.g. 0.7)")
      ->capture_default_str();
  cmd->add_option("--catch-up", a.catch_up,
                  "Raise the sources' targets by (backlog + rate x redeploy pause) / D, to work a "
                  "backlog off within D (e.g. 5m; 0s = off; needs a known backlog: --simulate)")
      ->capture_default_str();
  cmd->add_option("--source-target", a.source_target,
                  "Sources without a target: their true output rate (default with "
                  "--rates) or their observed one (default otherwise)")
      ->check(CLI::IsMember({"true", "observed"}));
  cmd->add_option("--saturation", a.saturation,
                  "An instance at least this busy is saturated: its operator is never scaled "
                  "down (0 = off)")
      ->capture_default_str();
  cmd->add_option("--min-change", a.min_change,
                  "Ignore per-operator changes of at most this many instances")
      ->capture_default_str();
  cmd->add_option("--max-decisions", a.max_decisions,
                  "Stop reconfiguring after this many decisions (--serve: and exit)");
  cmd->add_flag("--no-rollback", a.no_rollback,
                "Never roll back a change after which the sources' rate dropped");
  cmd->add_flag("--rollback", a.rollback,
                "With --rates: roll back as with the other sources (off by default: recorded "
                "files do not follow the decisions, as in scale policy)");
  cmd->add_option("--rollback-drop", a.rollback_drop,
                  "Roll back when the achieved source rate falls by this fraction")
      ->capture_default_str();
  cmd->add_option("--system", a.system, "flink, heron or timely")
      ->check(CLI::IsMember({"flink", "heron", "timely"}))
      ->capture_default_str();
  cmd->add_option("--dhalion-max-factor", a.dhalion_max_factor,
                  "Dhalion baseline: most a step multiplies an operator's parallelism by")
      ->capture_default_str();
}

void add_manage_output(CLI::App* cmd, ManageArgs& a) {
  cmd->add_option("--apply", a.apply,
                  "Run COMMAND for every decision: arguments name=N..., JSON on stdin; with "
                  "--flink and no COMMAND: rescale the job through its REST API")
      ->expected(0, 1);
  cmd->add_option("--poll", a.poll,
                  "With --rates --follow or --serve: how often to look for new metrics")
      ->capture_default_str();
  cmd->add_option("--idle-exit", a.idle_exit,
                  "With --rates --follow or --serve: exit after this long without a new "
                  "epoch (0: never)")
      ->capture_default_str();
  cmd->add_option("--format,-f", a.format,
                  "Output: table, json, or jsonl (not with --simulate: one JSON object per "
                  "decision and line, as they are made)")
      ->check(CLI::IsMember({"table", "json", "jsonl"}))
      ->capture_default_str();
  cmd->add_option("--svg", a.svg, "With --simulate: plot rates and parallelism to FILE");
  cmd->add_option("--trace-out", a.trace_out,
                  "With --simulate: write the run's trace (.jsonl or .snail; short runs)");
  cmd->add_option("--output,-o", a.output, "Write to FILE instead of stdout");
  cmd->add_flag("--quiet,-q", a.quiet, "No progress on stderr");
  cmd->add_flag("--diagnose", a.diagnose,
                "With --simulate: judge the final deployment's last intervals against the "
                "target and, if missed, name the straggler by CP (keeps the trace of the last "
                "intervals)");
  cmd->add_option("--diagnose-intervals", a.diagnose_intervals,
                  "With --diagnose: how many of the last policy intervals to judge and analyze")
      ->capture_default_str();
}

int64_t duration_arg(const std::string& text, const char* flag, bool zero_ok) {
  int64_t v = 0;
  try {
    v = parse_duration(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(flag) + ": " + e.what());
  }
  if (v < 0 || (v == 0 && !zero_ok))
    throw std::invalid_argument(std::string(flag) + " must be " + (zero_ok ? ">= 0" : "positive"));
  return v;
}

scale::System system_arg(const std::string& s) {
  auto v = scale::parse_system(s);
  if (!v) throw std::invalid_argument("--system must be flink, heron or timely");
  return *v;
}

// --source-target, or its default for the input: DS2's definition (the sources' true
// output rate) for DS2's files; the observed rate for traces, where a source's useful
// time is only its own (de)serialization and processing, so its true output rate is its
// capacity, not the rate records arrive at (docs/AUTOSCALING.md §1).
scale::SourceTarget source_target_arg(const std::string& s, bool ds2_files) {
  if (s.empty())
    return ds2_files ? scale::SourceTarget::true_output : scale::SourceTarget::observed_output;
  auto v = scale::parse_source_target(s);
  if (!v) throw std::invalid_argument("--source-target must be true or observed");
  return *v;
}

}  // namespace snailtrail::cli
