// `snailtrail scale`: DS2 autoscaling (docs/AUTOSCALING.md). This file only parses the
// options and wires them to the scale stage:
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
namespace {

using namespace snailtrail::scale;

int64_t duration_arg(const std::string& text, const char* flag, bool zero_ok = false) {
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

System system_arg(const std::string& s) {
  auto v = parse_system(s);
  if (!v) throw std::invalid_argument("--system must be flink, heron or timely");
  return *v;
}

// --source-target, or its default for the input: DS2's definition (the sources' true
// output rate) for DS2's files; the observed rate for traces, where a source's useful
// time is only its own (de)serialization and processing, so its true output rate is its
// capacity, not the rate records arrive at (docs/AUTOSCALING.md §1).
SourceTarget source_target_arg(const std::string& s, bool ds2_files) {
  if (s.empty()) return ds2_files ? SourceTarget::true_output : SourceTarget::observed_output;
  auto v = parse_source_target(s);
  if (!v) throw std::invalid_argument("--source-target must be true or observed");
  return *v;
}

}  // namespace

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

// ---- scale manage -----------------------------------------------------------------

std::unique_ptr<Controller> make_controller(const ManageArgs& a, const Topology& t) {
  if (a.controller == "dhalion") {
    DhalionOptions d;
    d.warmup = a.warmup;
    d.max_decisions = a.max_decisions;
    d.max_factor = a.dhalion_max_factor;
    if (!(d.max_factor > 1)) throw std::invalid_argument("--dhalion-max-factor must be > 1");
    return std::make_unique<DhalionController>(t, d);
  }
  ManagerOptions m;
  m.warmup = a.warmup;
  m.activation = a.activation;
  if (a.activation == 0) throw std::invalid_argument("--activation must be at least 1");
  m.combine = a.combine == "median" ? Combine::median : Combine::max;
  m.threshold = a.threshold;
  m.factor = a.factor;
  if (!(a.factor > 0)) throw std::invalid_argument("--factor must be positive");
  m.min_change = a.min_change;
  m.max_decisions = a.max_decisions;
  m.rollback = !a.no_rollback;
  m.rollback_drop = a.rollback_drop;
  m.system = system_arg(a.system);
  m.source_target = source_target_arg(a.source_target, !a.metrics_dir.empty());
  m.saturation = a.saturation;
  if (!(a.saturation >= 0)) throw std::invalid_argument("--saturation must be >= 0");
  m.target_utilization = a.target_utilization;
  if (!(a.target_utilization > 0 && a.target_utilization <= 1))
    throw std::invalid_argument("--target-utilization must be in (0, 1]");
  m.catch_up_s = static_cast<double>(duration_arg(a.catch_up, "--catch-up", true)) * 1e-9;
  // The redeploy pause is known when simulating; elsewhere the restart time is not.
  if (!a.simulate.empty())
    m.restart_s = static_cast<double>(duration_arg(a.pause, "--redeploy-pause", true)) * 1e-9;
  return std::make_unique<Ds2Manager>(t, m);
}

int manage_simulated(const ManageArgs& a) {
  sim::Scenario s = sim::load_scenario(a.simulate);
  sim::Overrides ov;
  if (!a.duration.empty()) ov.duration_ns = duration_arg(a.duration, "--duration");
  sim::apply_overrides(s, ov);
  if (s.model != sim::Model::pipelined)
    throw std::invalid_argument("--simulate needs a pipelined scenario (reconfiguration of " +
                                std::string(sim::name_of(s.model)) + " is not simulated)");
  const Topology t = topology_of(s);
  std::unique_ptr<Controller> c = make_controller(a, t);
  SimControlOptions so;
  so.interval_ns = duration_arg(a.interval, "--interval");
  so.pause_ns = duration_arg(a.pause, "--redeploy-pause", true);
  so.record_trace = !a.trace_out.empty() || a.diagnose;
  // The diagnosis needs only the end of the trace: keep memory bounded unless the whole
  // trace is to be written.
  if (a.trace_out.empty()) so.trace_intervals = a.diagnose_intervals;
  ControlledRun r = run_controlled(s, *c, so, [&](const DecisionRecord& d) {
    if (!a.apply.empty()) apply_command(a.apply, t, d.time_s, d.parallelism, std::nullopt);
  });
  std::optional<Diagnosis> diag;
  if (a.diagnose) {
    DiagnosisOptions dopt;
    dopt.intervals = a.diagnose_intervals;
    if (a.threshold > 0) dopt.target_ratio = a.threshold;
    diag = diagnose(r, dopt);
  }
  std::string skew;
  if (auto* m = dynamic_cast<Ds2Manager*>(c.get()); m && m->last_decision())
    skew = m->last_decision()->skew;
  OutputFile out(a.output);
  write_run(out.buf(), {a.format == "json", a.simulate, a.controller}, r, diag, skew);
  out.flush();
  if (!a.svg.empty()) {
    OutputFile svg(a.svg);
    const std::string text =
        timeline_svg(r, fmt::format("{} on {} ({} s interval, {} s redeploy pause)", a.controller,
                                    s.name, so.interval_ns / 1e9, so.pause_ns / 1e9));
    svg.buf().append(text.data(), text.data() + text.size());
  }
  if (!a.trace_out.empty()) write_trace(r.result.trace, a.trace_out);
  return 0;
}

// The live or recorded source of `scale manage` (all but --simulate).
struct ManageInput {
  std::unique_ptr<EventSource> events;  // --trace: the source refers to its names
  std::unique_ptr<ObservationSource> source;
};

ManageInput manage_input(const ManageArgs& a, int64_t interval_ns) {
  ManageInput in;
  auto wall = [&] { return a.duration.empty() ? 0 : duration_arg(a.duration, "--duration"); };
  if (!a.serve.empty()) {
    ServeSourceOptions so;
    so.poll_ns = duration_arg(a.poll, "--poll");
    so.idle_ns = duration_arg(a.idle_exit, "--idle-exit", true);
    so.idle_text = a.idle_exit;
    so.wall_ns = wall();
    so.interval_ns = a.interval_given ? interval_ns : 0;
    so.interval_text = a.interval;
    so.topology_file = a.topology;
    so.quiet = a.quiet;
    in.source = std::make_unique<ServeSource>(a.serve, std::move(so));
  } else if (!a.flink.empty()) {
    FlinkSourceOptions fo;
    fo.interval_ns = interval_ns;
    fo.wall_ns = wall();
    fo.rescale = a.apply_given && a.apply.empty();
    fo.quiet = a.quiet;
    in.source = std::make_unique<FlinkSource>(a.flink, a.job, fo);
  } else if (!a.trace.empty()) {
    const double interval_s = static_cast<double>(interval_ns) * 1e-9;
    in.source = trace_source(a.trace, a.importer, a.import_options,
                             static_cast<int64_t>(interval_s * 1e9), in.events);
  } else {
    if (a.topology.empty()) throw std::invalid_argument("--ds2-metrics needs --topology");
    Topology t = read_topology_csv(a.topology);
    in.source = std::make_unique<Ds2DirectorySource>(
        a.metrics_dir, std::move(t), static_cast<double>(interval_ns) * 1e-9,
        duration_arg(a.poll, "--poll"), duration_arg(a.idle_exit, "--idle-exit", true));
  }
  return in;
}

// DS2 metrics directory, a trace, serve or Flink: decisions are printed (and applied)
// as they come.
int manage_stream(const ManageArgs& a) {
  if (a.controller != "ds2")
    throw std::invalid_argument("the dhalion baseline needs backpressure metrics: use --simulate");
  const int64_t interval_ns = duration_arg(a.interval, "--interval");
  const bool stop_at_max = !a.serve.empty() || !a.flink.empty();
  ManageInput in = manage_input(a, interval_ns);
  ObservationSource& src = *in.source;
  OutputFile out(a.output);
  DecisionLog log(out.buf(), a.format == "json"    ? DecisionLog::Format::json
                             : a.format == "jsonl" ? DecisionLog::Format::jsonl
                                                   : DecisionLog::Format::table);
  if (stop_at_max && a.max_decisions == 0) {  // nothing to wait for
    log.finish();
    return 0;
  }
  std::unique_ptr<Controller> c;
  uint32_t decisions = 0;
  LoopHooks h;
  h.controller = [&](const Topology& t) -> Controller& { return *(c = make_controller(a, t)); };
  h.source_rates = [&](const Topology& t) {
    return a.source_rates.empty() ? std::vector<double>{}
                                  : read_source_rates_csv(a.source_rates, t);
  };
  h.on_interval = [&](const SourceInterval& i) {
    if (src.live() && !a.quiet && a.format == "table")
      fmt::print(stderr, "epoch {}: {} instances\n", i.epoch, i.instances);
  };
  h.on_decision = [&](const Action& act, const SourceInterval& i) {
    log.add(src.topology(), act, i.observation.time_s, i.epoch);
    out.flush();
    if (!a.apply.empty())
      apply_command(a.apply, src.topology(), i.observation.time_s, act.parallelism,
                    act.total_workers);
    return !stop_at_max || ++decisions < a.max_decisions;
  };
  run_control_loop(src, h);
  log.finish();
  out.flush();
  return 0;
}

int run_manage(const ManageArgs& a) {
  const int sources = !a.simulate.empty() + !a.metrics_dir.empty() + !a.trace.empty() +
                      !a.serve.empty() + !a.flink.empty();
  if (sources != 1)
    throw std::invalid_argument(
        "give exactly one of --simulate, --ds2-metrics, --trace, --serve and --flink");
  if (!a.job.empty() && a.flink.empty()) throw std::invalid_argument("--job needs --flink URL");
  if (a.apply_given && a.apply.empty() && a.flink.empty())
    throw std::invalid_argument("--apply needs a COMMAND (only with --flink it may be left out)");
  if (a.threshold < 0) throw std::invalid_argument("--threshold must be >= 0");
  if (!(a.rollback_drop >= 0 && a.rollback_drop < 1))
    throw std::invalid_argument("--rollback-drop must be in [0, 1)");
  if (a.diagnose_intervals == 0) throw std::invalid_argument("--diagnose-intervals must be >= 1");
  if (!a.simulate.empty() && a.format == "jsonl")
    throw std::invalid_argument(
        "--format jsonl is for decisions as they come: not with --simulate");
  if (!a.simulate.empty()) return manage_simulated(a);
  if (!a.svg.empty() || !a.trace_out.empty() || a.diagnose)
    throw std::invalid_argument("--svg, --trace-out and --diagnose need --simulate");
  return manage_stream(a);
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
      if (ma->apply_given && ma->apply == "true") ma->apply.clear();  // CLI11: bare --apply
      return run_manage(*ma);
    }
    return -1;
  };
}

}  // namespace snailtrail::cli
