// `snailtrail scale`: DS2 autoscaling (docs/AUTOSCALING.md). This file registers the
// options and runs `scale policy`; `scale manage` runs in scale_manage.cpp:
//   scale policy  - the optimal parallelism of every operator, per epoch of metrics
//   scale manage  - the scaling manager (DS2 or a Dhalion-like baseline) in the control
//                   loop (scale/control_loop.hpp) over one observation source: the
//                   simulator, a DS2 metrics directory being written, a trace, the rates
//                   of a running `snailtrail serve`, or a running Flink job
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/scale_args.hpp"
#include "cli/scale_policy.hpp"
#include "cli/streamed_input.hpp"
#include "importers/importer.hpp"
#include "scale/control_loop.hpp"
#include "scale/diagnosis.hpp"
#include "scale/ds2_files.hpp"
#include "scale/manager.hpp"
#include "scale/scale_output.hpp"
#include "scale/serve_source.hpp"
#include "scale/shell_apply.hpp"
#include "scale/simulation.hpp"
#include "scale/sources.hpp"
#include "scale/svg.hpp"
#include "sim/scenario.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {

using namespace snailtrail::scale;

// ---- scale policy -----------------------------------------------------------------

PolicyOptions policy_options(const PolicyArgs& a) {
  PolicyOptions po;
  po.system = system_arg(a.system);
  po.threshold = a.threshold;
  if (!(a.factor > 0)) throw std::invalid_argument("--factor must be positive");
  if (!(a.target_utilization > 0 && a.target_utilization <= 1))
    throw std::invalid_argument("--target-utilization must be in (0, 1]");
  if (!(a.saturation >= 0)) throw std::invalid_argument("--saturation must be >= 0");
  po.factor = a.factor / a.target_utilization;
  po.saturation = a.saturation;
  po.source_target = source_target_arg(a.source_target, a.trace.empty() && a.flink.empty());
  if (a.threshold < 0) throw std::invalid_argument("--threshold must be >= 0");
  if (!a.job.empty() && a.flink.empty()) throw std::invalid_argument("--job needs --flink URL");
  if ((!a.trace.empty()) + (!a.flink.empty()) + (!a.rates.empty() || !a.topology.empty()) != 1 ||
      (a.trace.empty() && a.flink.empty() && (a.rates.empty() || a.topology.empty())))
    throw std::invalid_argument(
        "give either --topology and --rates (DS2 files), --trace (any trace) or --flink URL "
        "(a running Flink job)");
  return po;
}

// The policy's input as a source, and what the table's first line says about it.
// --trace: read block by block for .snail and JSONL (streamed_input.hpp), whole otherwise;
// `events` keeps the names the source refers to.
std::unique_ptr<ObservationSource> trace_source(const std::string& path,
                                                const std::string& importer,
                                                const importers::ImportOptions& options,
                                                int64_t interval_ns,
                                                std::unique_ptr<EventSource>& events) {
  events = std::make_unique<EventSource>(path, importer, options);
  const Trace& trace = events->trace();
  cli::warn_if_cut(trace);
  if (events->size() == 0) throw TraceError(trace.source, "input", "the trace has no events");
  EventSource* feed = events.get();
  return std::make_unique<TraceSource>(
      trace, events->first_ts(), interval_ns,
      [feed](const auto& each) { feed->for_each([&](const Event& e) { each(e); }); });
}

std::vector<PolicyEpoch> policy_epochs(ObservationSource& source, const Topology& t,
                                       const std::vector<double>& per_instance,
                                       const PolicyOptions& po,
                                       const std::function<bool(const SourceInterval&)>& stop) {
  std::vector<PolicyEpoch> out;
  while (std::optional<SourceInterval> e = source.next()) {
    const std::vector<uint32_t>& par = e->observation.parallelism;
    const std::vector<InstanceRates>& inst = e->observation.rates;
    Topology cur = t;
    cur.parallelism = par;
    PolicyEpoch p{e->epoch, std::move(e->timestamp), par, aggregate(cur, inst), {}};
    p.decision = ds2_decide(cur, inst, total_source_rates(per_instance, par), po, e->label);
    out.push_back(std::move(p));
    if (stop && stop(*e)) break;
  }
  return out;
}

namespace {

struct PolicyInput {
  std::unique_ptr<EventSource> events;  // --trace: kept for the source's worker names
  std::unique_ptr<ObservationSource> source;
  std::string extra;
};

PolicyInput policy_input(const PolicyArgs& a) {
  PolicyInput in;
  if (!a.flink.empty()) {
    // One decision from the job's current per-second metrics (docs/AUTOSCALING.md).
    FlinkSourceOptions fo;
    fo.reads = 1;
    fo.any_state = true;  // the header names the state
    auto src = std::make_unique<FlinkSource>(a.flink, a.job, fo);
    const FlinkJob& job = src->job();
    in.extra =
        fmt::format(", Flink job {} \"{}\" ({}) at {}", job.id, job.name, job.state, a.flink);
    in.source = std::move(src);
  } else if (!a.trace.empty()) {
    const int64_t interval = duration_arg(a.interval, "--interval");
    in.source = trace_source(a.trace, a.importer, a.import_options, interval, in.events);
    if (in.source->topology().size() == 0)
      throw TraceError(in.events->trace().source, "input",
                       "no operator has useful time or records (DS2 needs deserialization, "
                       "processing or serialization activities with operators)");
    in.extra = fmt::format(", {} s intervals of {}", interval / 1e9, a.trace);
  }
  return in;
}

int run_policy(const PolicyArgs& a) {
  const PolicyOptions po = policy_options(a);
  PolicyInput in = policy_input(a);
  Topology t = in.source ? in.source->topology() : read_topology_csv(a.topology);
  std::vector<double> per_instance;
  if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
  Ds2RatesSource* files = nullptr;
  if (!in.source) {
    auto src = std::make_unique<Ds2RatesSource>(a.rates, t);
    files = src.get();
    in.source = std::move(src);
  }
  const std::vector<PolicyEpoch> out = policy_epochs(*in.source, t, per_instance, po);
  if (files) {
    const RatesDiagnostics& diag = files->diagnostics();
    if (diag.undefined_rates)
      in.extra += fmt::format(", {} rows without true rates", diag.undefined_rates);
    if (diag.duplicate_rows) in.extra += fmt::format(", {} duplicate rows", diag.duplicate_rows);
    if (diag.skipped_files) in.extra += fmt::format(", {} files skipped", diag.skipped_files);
  }
  OutputFile o(a.output);
  write_policy(o.buf(), {a.format == "json", a.system, in.extra, po.source_target}, t, out);
  o.flush();
  return 0;
}

}  // namespace

CommandRunner add_scale_command(CLI::App& app) {
  CLI::App* scale =
      app.add_subcommand("scale", "DS2 autoscaling: optimal parallelism, scaling manager");
  scale->require_subcommand(1);
  auto pa = std::make_shared<PolicyArgs>();
  CLI::App* policy = scale->add_subcommand(
      "policy", "Optimal parallelism of every operator per epoch of metrics (DS2, one step)");
  add_policy_options(policy, *pa);
  auto ma = std::make_shared<ManageArgs>();
  CLI::App* manage = scale->add_subcommand(
      "manage", "Scaling manager: DS2 (or the Dhalion-like baseline) in a loop of intervals");
  add_manage_sources(manage, *ma);
  add_manage_knobs(manage, *ma);
  add_manage_output(manage, *ma);
  return [scale, policy, manage, pa, ma]() {
    if (!*scale) return -1;
    if (*policy) return run_policy(*pa);
    if (*manage) {
      ma->interval_given = manage->count("--interval") > 0;
      ma->apply_given = manage->count("--apply") > 0;
      ma->threshold_given = manage->count("--threshold") > 0;
      if (ma->apply_given && ma->apply == "true") ma->apply.clear();  // CLI11: bare --apply
      return run_manage(*ma);
    }
    return -1;
  };
}

}  // namespace snailtrail::cli
