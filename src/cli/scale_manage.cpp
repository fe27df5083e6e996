// `snailtrail scale manage` (docs/AUTOSCALING.md): the scaling manager in the control
// loop over one observation source, from its options (scale_args.hpp).
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
#include "serve/auth.hpp"
#include "sim/scenario.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

using namespace snailtrail::scale;

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
  // DS2's files record what ran, not what we decide: by default the manager decides on
  // them as `scale policy` does (no target raising, no rollback); both are opt-in.
  const bool files = !a.metrics_dir.empty();
  m.threshold = a.threshold_given || !files ? a.threshold : 0;
  m.factor = a.factor;
  if (!(a.factor > 0)) throw std::invalid_argument("--factor must be positive");
  m.min_change = a.min_change;
  m.max_decisions = a.max_decisions;
  m.rollback = !a.no_rollback && (!files || a.rollback);
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
    so.tls_ca = a.tls_ca;
    if (!a.token_file.empty()) so.token = serve::read_token_file(a.token_file, "--token-file");
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
    if (a.topology.empty()) throw std::invalid_argument("--rates needs --topology");
    Topology t = read_topology_csv(a.topology);
    const int64_t idle = duration_arg(a.idle_exit, "--idle-exit", true);
    in.source = std::make_unique<Ds2DirectorySource>(
        a.metrics_dir, std::move(t), static_cast<double>(interval_ns) * 1e-9,
        duration_arg(a.poll, "--poll"), idle, a.follow || idle > 0);
  }
  return in;
}

// With DS2's files, what the manager does beyond `scale policy` (asked for with flags),
// one line; "" when it decides as the policy does.
std::string differs_from_policy(const ManageArgs& a) {
  if (a.metrics_dir.empty()) return "";
  std::string what;
  if (a.threshold_given && a.threshold > 0)
    what = fmt::format(
        "targets raised by target/achieved when the sources reach less than "
        "{:g}% of them (--threshold {:g})",
        100 * a.threshold, a.threshold);
  if (a.rollback && !a.no_rollback)
    what += std::string(what.empty() ? "" : "; ") +
            "a change after which the sources' rate drops is rolled back (--rollback)";
  return what.empty() ? "" : "unlike scale policy: " + what + "\n";
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
  const std::string note = differs_from_policy(a);
  if (!note.empty() && a.format == "table")
    fmt::format_to(std::back_inserter(out.buf()), "{}", note);
  if (!note.empty() && a.format != "table" && !a.quiet) fmt::print(stderr, "snailtrail: {}", note);
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

}  // namespace

int run_manage(const ManageArgs& a) {
  const int sources = !a.simulate.empty() + !a.metrics_dir.empty() + !a.trace.empty() +
                      !a.serve.empty() + !a.flink.empty();
  if (sources != 1)
    throw std::invalid_argument(
        "give exactly one of --simulate, --rates (--ds2-metrics), --trace, --serve and --flink");
  if ((a.follow || a.rollback) && a.metrics_dir.empty())
    throw std::invalid_argument("--follow and --rollback are for --rates DIR");
  if ((!a.token_file.empty() || !a.tls_ca.empty()) && a.serve.empty())
    throw std::invalid_argument("--token-file and --tls-ca are for --serve URL");
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

}  // namespace snailtrail::cli
