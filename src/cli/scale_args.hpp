// The options of `snailtrail scale policy` and `scale manage` (docs/AUTOSCALING.md),
// registered by scale_options.cpp and run by scale_command.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "importers/importer.hpp"
#include "scale/policy.hpp"

namespace snailtrail::cli {

struct PolicyArgs {
  std::string topology, rates, source_rates, trace, importer = "auto";
  importers::ImportOptions import_options;  // for --trace
  std::string flink, job;  // --flink URL [--job ID]: a running Flink job's REST API
  std::string interval = "10s";
  std::string system = "flink";
  double threshold = 0;
  double factor = 1.0;
  double target_utilization = 1.0;
  double saturation = 0.95;
  std::string source_target;  // "" = per input: true for DS2 files, observed for traces
  std::string format = "table";
  std::string output;
};

struct ManageArgs {
  std::string simulate, metrics_dir, trace, serve, importer = "auto";
  std::string token_file, tls_ca;           // --serve of a protected serve (docs/SERVE.md)
  importers::ImportOptions import_options;  // for --trace
  std::string flink, job;                   // --flink URL [--job ID]
  bool interval_given = false;              // --interval on the command line
  bool apply_given = false;                 // --apply, with or without a command
  std::string topology, source_rates;
  std::string controller = "ds2";
  std::string interval = "60s";
  std::string duration, pause = "30s";
  uint32_t warmup = 0, activation = 1, min_change = 0;
  uint32_t max_decisions = UINT32_MAX;
  std::string combine = "max";
  double threshold = 0.95, factor = 1.0, rollback_drop = 0.1;
  double target_utilization = 1.0, saturation = 0.95;
  std::string catch_up = "0s";
  std::string source_target;     // "" = per input (source_target_arg)
  bool threshold_given = false;  // --threshold on the command line
  bool no_rollback = false, rollback = false;
  bool follow = false;  // --rates DIR: keep reading as it is written
  std::string system = "flink";
  std::string apply;
  std::string format = "table";
  std::string svg, trace_out;
  std::string poll = "1s", idle_exit = "0s";
  double dhalion_max_factor = 2.0;
  std::string output;
  bool quiet = false;
  bool diagnose = false;
  uint32_t diagnose_intervals = 1;
};

void add_policy_options(CLI::App* cmd, PolicyArgs& a);
// The sources, the controller's knobs, and output and --apply.
void add_manage_sources(CLI::App* cmd, ManageArgs& a);
void add_manage_knobs(CLI::App* cmd, ManageArgs& a);
void add_manage_output(CLI::App* cmd, ManageArgs& a);

// A duration option's value (parse_duration) in ns, positive (or >= 0 with zero_ok).
int64_t duration_arg(const std::string& text, const char* flag, bool zero_ok = false);
scale::System system_arg(const std::string& s);
// --source-target, or its default for the input: DS2's definition (the sources' true
// output rate) for DS2's files; the observed rate for traces.
scale::SourceTarget source_target_arg(const std::string& s, bool ds2_files);

// `scale manage` (scale_manage.cpp).
int run_manage(const ManageArgs& a);

}  // namespace snailtrail::cli
