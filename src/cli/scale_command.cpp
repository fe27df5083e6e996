// `snailtrail scale`: DS2 autoscaling (docs/AUTOSCALING.md).
//   scale policy  - the optimal parallelism of every operator, per epoch of metrics
//   scale manage  - the scaling manager (DS2 or a Dhalion-like baseline) in a loop over
//                   the simulator, a DS2 metrics directory being written, a trace, or
//                   the rates of a running `snailtrail serve`
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "importers/importer.hpp"
#include "scale/diagnosis.hpp"
#include "scale/ds2_files.hpp"
#include "scale/flink_rest.hpp"
#include "scale/manager.hpp"
#include "scale/rate_collector.hpp"
#include "scale/rates_json.hpp"
#include "scale/simulation.hpp"
#include "scale/svg.hpp"
#include "sim/scenario.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

using namespace snailtrail::scale;

// Shortest round-trip form; null for NaN/inf (JSON has neither).
std::string num(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else
      out += c;
  }
  return out + "\"";
}

std::string json_map(const Topology& t, const std::vector<uint32_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", json_string(t.names[i]), v[i]);
  return s + "}";
}

std::string json_map(const Topology& t, const std::vector<double>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", json_string(t.names[i]), num(v[i]));
  return s + "}";
}

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

// ---- scale policy -----------------------------------------------------------------

struct PolicyArgs {
  std::string topology, rates, source_rates, trace, importer = "auto";
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

std::string json_saturated(const Topology& t, const Decision& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.saturated.size(); ++i) {
    const SaturatedInstance& x = d.saturated[i];
    s += fmt::format(
        "{}{{\"operator\": {}, \"instance\": {}, \"busy\": {}, \"others_busy\": {}, "
        "\"skew\": {}, \"model\": {}}}",
        i ? ", " : "", json_string(t.names[x.op]), x.instance, num(x.busy), num(x.others_busy),
        x.skew, x.model);
  }
  return s + "]";
}

struct EpochResult {
  int64_t epoch;
  std::string timestamp;
  std::vector<uint32_t> current;
  std::vector<OperatorRates> rates;
  Decision decision;
};

void write_policy(OutputFile& out, const PolicyArgs& a, const Topology& t,
                  const std::vector<EpochResult>& epochs, const std::string& extra,
                  SourceTarget source_target) {
  auto& b = out.buf();
  if (a.format == "json") {
    b.push_back('[');
    for (size_t i = 0; i < epochs.size(); ++i) {
      const EpochResult& e = epochs[i];
      const Decision& d = e.decision;
      fmt::format_to(std::back_inserter(b),
                     "{}\n{{\"epoch\": {}, \"parallelism\": {}, \"target_rate\": {}", i ? "," : "",
                     e.epoch, json_map(t, d.parallelism), json_map(t, d.target_rate));
      if (d.total_workers)
        fmt::format_to(std::back_inserter(b), ", \"total_workers\": {}", *d.total_workers);
      fmt::format_to(std::back_inserter(b),
                     ", \"current\": {}, \"output_rate\": {}, \"achieved_ratio\": {}, "
                     "\"compensation\": {}, \"source_target\": {}, \"saturated\": {}, "
                     "\"skew\": {}, \"notes\": [",
                     json_map(t, e.current), json_map(t, d.output_rate), num(d.achieved_ratio),
                     num(d.compensation), json_string(std::string(name_of(source_target))),
                     json_saturated(t, d), d.skew.empty() ? "null" : json_string(d.skew));
      for (size_t k = 0; k < d.notes.size(); ++k)
        fmt::format_to(std::back_inserter(b), "{}{}", k ? ", " : "", json_string(d.notes[k]));
      b.append(std::string_view("]}"));
    }
    b.append(std::string_view("\n]\n"));
    return;
  }
  fmt::format_to(std::back_inserter(b),
                 "snailtrail scale policy ({}, {} epochs{}; sources without --source-rates: "
                 "{} output rate)\n",
                 a.system, epochs.size(), extra, name_of(source_target));
  size_t w = 8;
  for (const std::string& n : t.names) w = std::max(w, n.size());
  for (const EpochResult& e : epochs) {
    const Decision& d = e.decision;
    fmt::format_to(std::back_inserter(b), "\nepoch {}{}", e.epoch,
                   e.timestamp.empty() ? "" : " (" + e.timestamp + ")");
    if (std::isfinite(d.achieved_ratio))
      fmt::format_to(std::back_inserter(b), ": sources at {:.1f}% of their target",
                     100 * d.achieved_ratio);
    if (d.compensation > 1)
      fmt::format_to(std::back_inserter(b), ", targets raised {:.3f}x", d.compensation);
    fmt::format_to(std::back_inserter(b), "\n  {:<{}}  {:>7}  {:>7}  {:>14}  {:>14}\n", "operator",
                   w, "current", "optimal", "target rate/s", "true rate/inst");
    for (uint32_t op : t.topological_order()) {
      const OperatorRates& r = e.rates[op];
      const double per = r.measured > 0 ? r.true_processing / r.measured : NAN;
      fmt::format_to(
          std::back_inserter(b), "  {:<{}}  {:>7}  {:>7}  {:>14}  {:>14}\n", t.names[op], w,
          e.current[op], d.parallelism[op],
          std::isfinite(d.target_rate[op]) ? fmt::format("{:.1f}", d.target_rate[op]) : "-",
          t.is_source(op) || !std::isfinite(per) ? "-" : fmt::format("{:.1f}", per));
    }
    if (d.total_workers)
      fmt::format_to(std::back_inserter(b), "  total workers (timely): {}\n", *d.total_workers);
    for (const std::string& n : d.notes) fmt::format_to(std::back_inserter(b), "  note: {}\n", n);
    if (!d.skew.empty()) fmt::format_to(std::back_inserter(b), "  {}\n", d.skew);
  }
}

int run_policy(const PolicyArgs& a) {
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
  Topology t;
  std::vector<EpochResult> out;
  std::string extra;
  std::vector<double> per_instance;
  auto decide = [&](int64_t epoch, std::string ts, const std::vector<InstanceRates>& inst,
                    const std::vector<uint32_t>& par,
                    const std::function<std::string(uint32_t, uint32_t)>& label) {
    Topology cur = t;
    cur.parallelism = par;
    EpochResult e{epoch, std::move(ts), par, aggregate(cur, inst), {}};
    e.decision = ds2_decide(cur, inst, total_source_rates(per_instance, par), po, label);
    out.push_back(std::move(e));
  };
  if (!a.flink.empty()) {
    // One decision from the job's current per-second metrics (docs/AUTOSCALING.md).
    const FlinkJob job = fetch_flink_job(a.flink, a.job);
    t = job.topology;
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    decide(0, "now", flink_instance_rates(job), t.parallelism, {});
    extra = fmt::format(", Flink job {} \"{}\" ({}) at {}", job.id, job.name, job.state, a.flink);
  } else if (!a.trace.empty()) {
    const int64_t interval = duration_arg(a.interval, "--interval");
    EventSource events(a.trace, a.importer);  // block by block for .snail and JSONL
    const Trace& trace = events.trace();
    cli::warn_if_cut(trace);
    if (events.size() == 0) throw TraceError(trace.source, "input", "the trace has no events");
    const int64_t origin = events.first_ts();
    RateCollector c(interval, origin);
    events.for_each([&](const Event& e) { c.add(e); });
    std::vector<IntervalMetrics> intervals = c.finish();
    t = c.topology([&](uint32_t op) { return trace.operator_name(op); });
    if (t.size() == 0)
      throw TraceError(trace.source, "input",
                       "no operator has useful time or records (DS2 needs deserialization, "
                       "processing or serialization activities with operators)");
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    for (size_t i = 0; i < intervals.size(); ++i) {
      IntervalRates r = interval_rates(intervals[i], t);
      // Saturated instances are named by their worker.
      auto label = [&, i](uint32_t op, uint32_t instance) {
        for (const InstanceMetrics& x : intervals[i].instances)
          if (x.instance == instance && t.find_id(std::to_string(x.op)) == op)
            return trace.worker_name(static_cast<uint32_t>(std::stoul(x.worker)));
        return fmt::format("{}-{}", t.names[op], instance);
      };
      decide(static_cast<int64_t>(i), fmt::format("{}s", (intervals[i].start_ns - origin) / 1e9),
             r.instances, r.parallelism, label);
    }
    extra = fmt::format(", {} s intervals of {}", interval / 1e9, a.trace);
  } else {
    t = read_topology_csv(a.topology);
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    RatesDiagnostics diag;
    for (RatesEpoch& e : read_rates(a.rates, t, &diag))
      decide(e.epoch, e.timestamp, e.instances, e.parallelism, {});
    if (diag.undefined_rates)
      extra += fmt::format(", {} rows without true rates", diag.undefined_rates);
    if (diag.duplicate_rows) extra += fmt::format(", {} duplicate rows", diag.duplicate_rows);
    if (diag.skipped_files) extra += fmt::format(", {} files skipped", diag.skipped_files);
  }
  OutputFile o(a.output);
  write_policy(o, a, t, out, extra, po.source_target);
  o.flush();
  return 0;
}

// ---- scale manage -----------------------------------------------------------------

struct ManageArgs {
  std::string simulate, metrics_dir, trace, serve, importer = "auto";
  bool interval_given = false;  // --interval on the command line
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
  std::string source_target;  // "" = per input (source_target_arg)
  bool no_rollback = false;
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

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs --apply with the configuration as arguments (name=N ...) and as JSON on stdin.
void apply_command(const std::string& cmd, const Topology& t, double time_s,
                   const std::vector<uint32_t>& p, std::optional<uint32_t> total) {
  std::string line = cmd;
  for (size_t i = 0; i < p.size(); ++i)
    line += " " + shell_quote(fmt::format("{}={}", t.names[i], p[i]));
  std::string json =
      fmt::format("{{\"time_s\": {}, \"parallelism\": {}", num(time_s), json_map(t, p));
  if (total) json += fmt::format(", \"total_workers\": {}", *total);
  json += "}\n";
  std::fflush(stdout);
  FILE* f = ::popen(line.c_str(), "w");
  if (!f) throw std::runtime_error("--apply: cannot run " + cmd);
  std::fwrite(json.data(), 1, json.size(), f);
  const int rc = ::pclose(f);
  if (rc != 0)
    fmt::print(stderr, "snailtrail: warning: --apply command exited with status {}\n",
               WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
}

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

std::string par_text(const Topology& t, const std::vector<uint32_t>& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) s += fmt::format("{}{}={}", i ? " " : "", t.names[i], p[i]);
  return s;
}

// JSON object of a diagnosis (docs/AUTOSCALING.md "Skew").
std::string json_diagnosis(const Diagnosis& d) {
  std::string s = fmt::format(
      "{{\"target_met\": {}, \"achieved_rate\": {}, \"target_rate\": {}, \"from_s\": {}, "
      "\"to_s\": {}, \"cause\": {}",
      d.target_met, num(d.achieved_rate), num(d.target_rate), num(d.from_s), num(d.to_s),
      json_string(std::string(name_of(d.cause))));
  if (d.straggler)
    s += fmt::format(
        ", \"straggler\": {}, \"straggler_operator\": {}, \"straggler_cp\": {}, \"peer\": {}, "
        "\"peer_cp\": {}, \"windows\": {}",
        json_string(*d.straggler), json_string(d.straggler_operator), num(d.straggler_cp),
        d.peer.empty() ? "null" : json_string(d.peer), num(d.peer_cp), d.windows);
  if (!d.workers.empty()) {
    s += ", \"workers\": [";
    for (size_t i = 0; i < d.workers.size(); ++i)
      s += fmt::format("{}{{\"worker\": {}, \"operator\": {}, \"cp\": {}, \"busy\": {}}}",
                       i ? ", " : "", json_string(d.workers[i].worker),
                       json_string(d.workers[i].op), num(d.workers[i].cp), num(d.workers[i].busy));
    s += "]";
  }
  return s + fmt::format(", \"explanation\": {}}}", json_string(d.explanation));
}

// The warning when the backlog keeps growing under the final configuration.
std::string backlog_warning(const BacklogTrend& bt, const std::string& skew) {
  if (!bt.growing) return "";
  std::string w = fmt::format(
      "the backlog keeps growing under the final configuration ({:+.0f} records/s, {:.0f} -> "
      "{:.0f} from {:.0f} to {:.0f} s; sources at {:.0f}/s of {:.0f}/s offered): it does not "
      "keep up, although no further decision is made",
      bt.growth_per_s, bt.backlog_from, bt.backlog_to, bt.from_s, bt.to_s, bt.achieved_rate,
      bt.offered_rate);
  if (!skew.empty())
    w += "; " + skew;
  else
    w += ". Give headroom (e.g. --target-utilization 0.9) and/or work the backlog off "
         "(e.g. --catch-up 5m)";
  return w;
}

void write_run(OutputFile& out, const ManageArgs& a, const ControlledRun& r,
               const std::optional<Diagnosis>& diag = std::nullopt, const std::string& skew = "") {
  auto& b = out.buf();
  const BacklogTrend bt = backlog_trend(r);
  const std::string warning = backlog_warning(bt, skew);
  const std::vector<uint32_t>& final_p =
      r.decisions.empty() ? r.topology.parallelism : r.decisions.back().parallelism;
  const double converged = r.decisions.empty() ? 0 : r.decisions.back().effective_s;
  if (a.format == "json") {
    fmt::format_to(std::back_inserter(b), "{{\"controller\": {}, \"decisions\": [",
                   json_string(a.controller));
    for (size_t i = 0; i < r.decisions.size(); ++i) {
      const DecisionRecord& d = r.decisions[i];
      fmt::format_to(std::back_inserter(b),
                     "{}\n  {{\"time_s\": {}, \"effective_s\": {}, \"parallelism\": {}, "
                     "\"reason\": {}}}",
                     i ? "," : "", num(d.time_s), num(d.effective_s),
                     json_map(r.topology, d.parallelism), json_string(d.reason));
    }
    b.append(std::string_view("],\n\"timeline\": ["));
    for (size_t i = 0; i < r.timeline.size(); ++i) {
      const TimelinePoint& p = r.timeline[i];
      fmt::format_to(std::back_inserter(b),
                     "{}\n  {{\"time_s\": {}, \"source_rate\": {}, \"target_rate\": {}, "
                     "\"backlog\": {}, \"paused\": {}, \"parallelism\": {}}}",
                     i ? "," : "", num(p.time_s), num(p.source_rate), num(p.target_rate),
                     num(p.backlog), p.paused, json_map(r.topology, p.parallelism));
    }
    fmt::format_to(std::back_inserter(b),
                   "],\n\"summary\": {{\"steps\": {}, \"converged_s\": {}, \"final\": {}, "
                   "\"backlog_judged\": {}, \"backlog_growing\": {}, "
                   "\"backlog_growth_per_s\": {}, \"warning\": {}}}",
                   r.decisions.size(), num(converged), json_map(r.topology, final_p), bt.judged,
                   bt.growing, bt.judged ? num(bt.growth_per_s) : "null",
                   warning.empty() ? "null" : json_string(warning));
    if (diag) fmt::format_to(std::back_inserter(b), ",\n\"diagnosis\": {}", json_diagnosis(*diag));
    b.append(std::string_view("}\n"));
    return;
  }
  fmt::format_to(std::back_inserter(b), "snailtrail scale manage --simulate {} --controller {}\n\n",
                 a.simulate, a.controller);
  b.append(std::string_view("decisions\n"));
  if (r.decisions.empty()) b.append(std::string_view("  (none)\n"));
  for (const DecisionRecord& d : r.decisions)
    fmt::format_to(std::back_inserter(b), "  {:>7.0f} s  {}  (running from {:.0f} s)\n    {}\n",
                   d.time_s, par_text(r.topology, d.parallelism), d.effective_s, d.reason);
  fmt::format_to(std::back_inserter(b), "\n  {:>7}  {:>10}  {:>10}  {:>11}  {}\n", "time s",
                 "target/s", "achieved/s", "backlog", "parallelism");
  for (const TimelinePoint& p : r.timeline)
    fmt::format_to(std::back_inserter(b), "  {:>7.0f}  {:>10.0f}  {:>10.0f}  {:>11.0f}  {}{}\n",
                   p.time_s, p.target_rate, p.source_rate, p.backlog,
                   par_text(r.topology, p.parallelism), p.paused ? "  (redeploying)" : "");
  fmt::format_to(std::back_inserter(b),
                 "\nsteps: {}; final configuration {} running from {:.0f} s\n", r.decisions.size(),
                 par_text(r.topology, final_p), converged);
  if (!warning.empty())
    fmt::format_to(std::back_inserter(b), "warning: {}\n", warning);
  else if (bt.judged)
    fmt::format_to(std::back_inserter(b),
                   "backlog: not growing ({:+.0f} records/s from {:.0f} to {:.0f} s)\n",
                   bt.growth_per_s, bt.from_s, bt.to_s);
  if (!diag) return;
  fmt::format_to(std::back_inserter(b), "\ndiagnosis ({:.0f}-{:.0f} s): {}\n", diag->from_s,
                 diag->to_s, diag->explanation);
  if (!diag->straggler) return;
  fmt::format_to(std::back_inserter(b), "  {:<38} {:>6} {:>6}\n", "worker (trace of that span)",
                 "CP", "busy");
  for (size_t i = 0; i < diag->workers.size() && i < 8; ++i)
    fmt::format_to(std::back_inserter(b), "  {:<38} {:>5.1f}% {:>5.1f}%{}\n",
                   diag->workers[i].worker, 100 * diag->workers[i].cp, 100 * diag->workers[i].busy,
                   i == 0 && diag->cause == Cause::skew ? "  <- straggler" : "");
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
  write_run(out, a, r, diag, skew);
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

// --serve: "http://HOST:PORT" (or "HOST:PORT", optionally ending in "/") of a loopback
// address; scale manage never talks to anything else.
std::pair<std::string, int> loopback_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? "" : rest.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? "" : rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = 0;
  for (char c : port_text)
    port = c >= '0' && c <= '9' && port <= 65535 ? port * 10 + (c - '0') : 100000;
  if (url.find("://") != std::string::npos && url.rfind("http://", 0) != 0)
    throw std::invalid_argument("--serve: only http:// URLs of snailtrail serve are supported");
  if (host.empty() || port_text.empty() || port < 1 || port > 65535 ||
      host.find('/') != std::string::npos)
    throw std::invalid_argument("--serve: expected http://HOST:PORT, got \"" + url + "\"");
  const bool loopback = host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  if (!loopback)
    throw std::invalid_argument(
        "--serve: only loopback addresses (127.0.0.1, localhost, ::1) "
        "are allowed, got \"" +
        host + "\"");
  return {host, port};
}

// What a failed request means, in words.
std::string request_error(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection refused";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
    case httplib::Error::Write:
      return "connection closed";
    default:
      return httplib::to_string(e);
  }
}

using ReportFn = std::function<void(const Action&, double time_s, int64_t epoch)>;

// One interval's observation for the manager from measured rates.
Observation observation(double time_s, std::vector<InstanceRates> rates,
                        std::vector<uint32_t> parallelism,
                        const std::vector<double>& per_instance) {
  Observation o;
  o.time_s = time_s;
  o.source_target = total_source_rates(per_instance, parallelism);
  o.rates = std::move(rates);
  o.parallelism = std::move(parallelism);
  return o;
}

bool same_dataflow(const Topology& x, const Topology& y) {
  return x.names == y.names && x.ids == y.ids && x.edges == y.edges;
}

// Polls serve's GET /api/rates and feeds every new interval to the manager, until
// --max-decisions decisions, --duration of wall time, --idle-exit without a new interval,
// or serve going away.
void follow_serve(const ManageArgs& a, Topology& t, const ReportFn& report) {
  const auto [host, port] = loopback_url(a.serve);
  const int64_t poll = duration_arg(a.poll, "--poll");
  const int64_t idle = duration_arg(a.idle_exit, "--idle-exit", true);
  const int64_t wall = a.duration.empty() ? 0 : duration_arg(a.duration, "--duration");
  const int64_t interval = a.interval_given ? duration_arg(a.interval, "--interval") : 0;
  const std::string where = fmt::format("serve at http://{}:{}", host, port);
  const bool file_topology = !a.topology.empty();
  if (file_topology) t = read_topology_csv(a.topology);
  std::vector<double> per_instance;
  std::unique_ptr<Controller> c;
  auto start_manager = [&] {
    try {
      t.topological_order();
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
    }
    per_instance.clear();
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    c = make_controller(a, t);
  };
  if (file_topology) start_manager();
  httplib::Client client(host, port);
  client.set_connection_timeout(2);
  client.set_read_timeout(10);
  const auto started = std::chrono::steady_clock::now();
  auto last_new = started;
  int64_t since = INT64_MIN, last_epoch = -1;
  uint32_t decisions = 0;
  uint64_t seen = 0, unmapped = 0;
  bool reached = false;
  while (decisions < a.max_decisions) {
    const std::string target =
        since == INT64_MIN ? "/api/rates" : fmt::format("/api/rates?since={}", since);
    httplib::Result res = client.Get(target);
    if (!res) {
      if (!reached)
        throw std::runtime_error(
            fmt::format("cannot reach {} ({})", where, request_error(res.error())));
      if (!a.quiet)
        fmt::print(stderr, "snailtrail: {} went away ({}); stopping after {} intervals\n", where,
                   request_error(res.error()), seen);
      return;
    }
    if (res->status != 200)
      throw std::runtime_error(
          fmt::format("{}: GET {} answered HTTP {} (is it snailtrail serve with --http?)", where,
                      target, res->status));
    reached = true;
    RatesPage page;
    try {
      page = parse_rates_page(res->body);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: {}", where, e.what()));  // not a usage error
    }
    if (interval > 0 && page.interval_ns != interval)
      throw std::invalid_argument(
          fmt::format("--interval {} differs from the rate interval of {} ({} s): start serve with "
                      "--rate-interval {} or leave out --interval",
                      a.interval, where, page.interval_ns / 1e9, a.interval));
    for (const RatesPage::Interval& in : page.intervals) {
      if (in.epoch <= last_epoch) continue;
      if (last_epoch >= 0 && in.epoch > last_epoch + 1 && !a.quiet)
        fmt::print(stderr, "snailtrail: missed intervals {}-{} (serve --retain is too small)\n",
                   last_epoch + 1, in.epoch - 1);
      last_epoch = in.epoch;
      since = in.metrics.start_ns + 1;
      ++seen;
      last_new = std::chrono::steady_clock::now();
      IntervalRates r;
      if (file_topology) {
        // Operators of the stream matched to the file's by name, else by id.
        IntervalMetrics m{in.metrics.start_ns, in.metrics.end_ns, {}};
        for (size_t i = 0; i < in.metrics.instances.size(); ++i) {
          auto op = t.find_name(in.operator_names[i]);
          if (!op) op = t.find_id(std::to_string(in.metrics.instances[i].op));
          if (!op) {
            if (unmapped++ == 0 && !a.quiet)
              fmt::print(stderr, "snailtrail: operator '{}' of the stream is not in {}: ignored\n",
                         in.operator_names[i], a.topology);
            continue;
          }
          m.instances.push_back(in.metrics.instances[i]);
          m.instances.back().op = *op;
        }
        r = interval_rates_by_index(m, t);
      } else {
        if (!c || !same_dataflow(t, page.topology)) {
          if (c && !a.quiet)
            fmt::print(stderr,
                       "snailtrail: the stream revealed a new operator or edge: the manager "
                       "starts over\n");
          t = page.topology;
          if (t.size() == 0) continue;
          start_manager();
        }
        r = interval_rates(in.metrics, t);
      }
      const Observation o =
          observation(static_cast<double>(in.metrics.end_ns - page.first_event_ns) * 1e-9,
                      std::move(r.instances), std::move(r.parallelism), per_instance);
      if (!a.quiet && a.format == "table")
        fmt::print(stderr, "epoch {}: {} instances\n", in.epoch, in.metrics.instances.size());
      if (auto act = c->observe(o)) {
        report(*act, o.time_s, in.epoch);
        if (++decisions >= a.max_decisions) return;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (wall > 0 && now - started >= std::chrono::nanoseconds(wall)) return;
    if (idle > 0 && now - last_new >= std::chrono::nanoseconds(idle)) {
      if (!a.quiet)
        fmt::print(stderr, "snailtrail: no new interval from {} for {}; stopping\n", where,
                   a.idle_exit);
      return;
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(poll));
  }
}

// DS2 metrics directory, a trace or serve: decisions are printed (and applied) as they
// come.
int manage_stream(const ManageArgs& a) {
  if (a.controller != "ds2")
    throw std::invalid_argument("the dhalion baseline needs backpressure metrics: use --simulate");
  const double interval_s = static_cast<double>(duration_arg(a.interval, "--interval")) * 1e-9;
  OutputFile out(a.output);
  auto& b = out.buf();
  bool first = true;
  if (a.format == "json") b.append(std::string_view("{\"decisions\": ["));
  Topology t;
  auto report = [&](const Action& act, double time_s, int64_t epoch) {
    if (a.format == "json") {
      fmt::format_to(std::back_inserter(b),
                     "{}\n  {{\"time_s\": {}, \"epoch\": {}, \"parallelism\": {}", first ? "" : ",",
                     num(time_s), epoch, json_map(t, act.parallelism));
      if (act.total_workers)
        fmt::format_to(std::back_inserter(b), ", \"total_workers\": {}", *act.total_workers);
      fmt::format_to(std::back_inserter(b), ", \"reason\": {}}}", json_string(act.reason));
    } else {
      fmt::format_to(std::back_inserter(b), "epoch {} ({:.0f} s): {}\n  {}\n", epoch, time_s,
                     par_text(t, act.parallelism), act.reason);
    }
    first = false;
    out.flush();
    if (!a.apply.empty()) apply_command(a.apply, t, time_s, act.parallelism, act.total_workers);
  };
  if (!a.serve.empty()) {
    follow_serve(a, t, report);
  } else if (!a.trace.empty()) {
    EventSource events(a.trace, a.importer);  // block by block for .snail and JSONL
    const Trace& trace = events.trace();
    cli::warn_if_cut(trace);
    if (events.size() == 0) throw TraceError(trace.source, "input", "the trace has no events");
    const int64_t origin = events.first_ts();
    RateCollector rc(static_cast<int64_t>(interval_s * 1e9), origin);
    events.for_each([&](const Event& e) { rc.add(e); });
    std::vector<IntervalMetrics> intervals = rc.finish();
    t = rc.topology([&](uint32_t op) { return trace.operator_name(op); });
    std::vector<double> per_instance;
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    std::unique_ptr<Controller> c = make_controller(a, t);
    for (size_t i = 0; i < intervals.size(); ++i) {
      IntervalRates r = interval_rates(intervals[i], t);
      const Observation o =
          observation(static_cast<double>(intervals[i].end_ns - origin) * 1e-9,
                      std::move(r.instances), std::move(r.parallelism), per_instance);
      if (auto act = c->observe(o)) report(*act, o.time_s, static_cast<int64_t>(i));
    }
  } else {
    if (a.topology.empty()) throw std::invalid_argument("--ds2-metrics needs --topology");
    t = read_topology_csv(a.topology);
    std::vector<double> per_instance;
    if (!a.source_rates.empty()) per_instance = read_source_rates_csv(a.source_rates, t);
    std::unique_ptr<Controller> c = make_controller(a, t);
    RatesDirectoryWatcher w(a.metrics_dir, t);
    const int64_t poll = duration_arg(a.poll, "--poll");
    const int64_t idle = duration_arg(a.idle_exit, "--idle-exit", true);
    auto last_new = std::chrono::steady_clock::now();
    while (true) {
      std::vector<RatesEpoch> epochs = w.poll();
      const bool idle_over =
          idle > 0 && std::chrono::steady_clock::now() - last_new > std::chrono::nanoseconds(idle);
      if (idle_over) {
        for (RatesEpoch& e : w.flush()) epochs.push_back(std::move(e));
      }
      if (!epochs.empty()) last_new = std::chrono::steady_clock::now();
      for (const RatesEpoch& e : epochs) {
        const Observation o = observation(static_cast<double>(e.epoch + 1) * interval_s,
                                          e.instances, e.parallelism, per_instance);
        if (!a.quiet && a.format == "table")
          fmt::print(stderr, "epoch {}: {} instances\n", e.epoch, e.instances.size());
        if (auto act = c->observe(o)) report(*act, o.time_s, e.epoch);
      }
      if (idle_over) break;
      std::this_thread::sleep_for(std::chrono::nanoseconds(poll));
    }
  }
  if (a.format == "json")
    b.append(std::string_view("]}\n"));
  else if (first)
    b.append(std::string_view("no scaling decision\n"));
  out.flush();
  return 0;
}

int run_manage(const ManageArgs& a) {
  const int sources =
      !a.simulate.empty() + !a.metrics_dir.empty() + !a.trace.empty() + !a.serve.empty();
  if (sources != 1)
    throw std::invalid_argument(
        "give exactly one of --simulate, --ds2-metrics, --trace and --serve");
  if (a.threshold < 0) throw std::invalid_argument("--threshold must be >= 0");
  if (!(a.rollback_drop >= 0 && a.rollback_drop < 1))
    throw std::invalid_argument("--rollback-drop must be in [0, 1)");
  if (a.diagnose_intervals == 0) throw std::invalid_argument("--diagnose-intervals must be >= 1");
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
  policy->add_option("--topology", pa->topology, "DS2 topology CSV (one edge per line)");
  policy->add_option("--rates", pa->rates,
                     "DS2 rates CSV, or a directory of NAME-EPOCH.EXT rate files");
  policy->add_option("--trace", pa->trace,
                     "A trace instead of DS2 files (any importer; uses the records field)");
  policy->add_option("--flink", pa->flink,
                     "A running Flink job's REST API (http://HOST:8081): its job graph and "
                     "per-vertex busy time and record rates (docs/AUTOSCALING.md)");
  policy->add_option("--job", pa->job, "With --flink: the job id (default: the only running job)");
  policy->add_option("--importer", pa->importer, "Trace format: " + importers::importer_names())
      ->capture_default_str();
  policy->add_option("--interval", pa->interval, "With --trace: policy interval (epoch length)")
      ->capture_default_str();
  policy->add_option("--source-rates", pa->source_rates,
                     "DS2 source rates CSV (source_operator_name,output_rate_per_instance): "
                     "target rates instead of the measured ones");
  policy
      ->add_option("--system", pa->system,
                   "flink, heron (per-operator parallelism) or timely (total workers = sum)")
      ->check(CLI::IsMember({"flink", "heron", "timely"}))
      ->capture_default_str();
  policy
      ->add_option("--threshold", pa->threshold,
                   "Target-rate ratio: below it, with the current configuration judged "
                   "sufficient, targets are raised by target/achieved (0 = off)")
      ->capture_default_str();
  policy->add_option("--factor", pa->factor, "Scaling factor: provision for F x the target rate")
      ->capture_default_str();
  policy
      ->add_option("--target-utilization", pa->target_utilization,
                   "Headroom: size operators to be busy this share of the time (0-1; 0.7 = "
                   "provision 1/0.7 x)")
      ->capture_default_str();
  policy
      ->add_option("--source-target", pa->source_target,
                   "Sources without --source-rates: their true output rate (DS2's definition; "
                   "default for DS2 files) or their observed one (default for traces)")
      ->check(CLI::IsMember({"true", "observed"}));
  policy
      ->add_option("--saturation", pa->saturation,
                   "An instance at least this busy is saturated: its operator is never scaled "
                   "down and skew is reported (0 = off)")
      ->capture_default_str();
  policy->add_option("--format,-f", pa->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  policy->add_option("--output,-o", pa->output, "Write to FILE instead of stdout");

  auto ma = std::make_shared<ManageArgs>();
  CLI::App* manage = scale->add_subcommand(
      "manage", "Scaling manager: DS2 (or the Dhalion-like baseline) in a loop of intervals");
  manage->add_option("--simulate", ma->simulate,
                     "Run this pipelined scenario (TOML) with the controller in the loop");
  manage->add_option("--ds2-metrics", ma->metrics_dir,
                     "Follow a directory of DS2 rate files (NAME-EPOCH.EXT) as it is written");
  manage->add_option("--trace", ma->trace, "Replay the metrics of a trace (any importer)");
  manage->add_option("--serve", ma->serve,
                     "Follow the DS2 rates of a running `snailtrail serve` (its HTTP API, "
                     "http://127.0.0.1:PORT; loopback only)");
  manage->add_option("--importer", ma->importer, "Trace format for --trace")->capture_default_str();
  manage->add_option("--topology", ma->topology,
                     "DS2 topology CSV (with --ds2-metrics; with --serve instead of the "
                     "topology serve learns from the stream)");
  manage->add_option("--source-rates", ma->source_rates, "DS2 source rates CSV (target rates)");
  manage->add_option("--controller", ma->controller, "ds2 or dhalion (rule-based baseline)")
      ->check(CLI::IsMember({"ds2", "dhalion"}))
      ->capture_default_str();
  manage
      ->add_option("--interval", ma->interval,
                   "Policy interval (with --serve: serve's --rate-interval; if given, it must "
                   "match)")
      ->capture_default_str();
  manage->add_option("--duration,-d", ma->duration,
                     "With --simulate: simulated time (default: the scenario's); with --serve: "
                     "how long to follow (wall time, default: until serve goes away)");
  manage
      ->add_option("--redeploy-pause", ma->pause,
                   "With --simulate: time a reconfiguration takes (sources back up meanwhile)")
      ->capture_default_str();
  manage->add_option("--warmup", ma->warmup, "Intervals ignored after a change")
      ->capture_default_str();
  manage->add_option("--activation", ma->activation, "Consecutive decisions combined before acting")
      ->capture_default_str();
  manage->add_option("--combine", ma->combine, "How activation combines decisions: max or median")
      ->check(CLI::IsMember({"max", "median"}))
      ->capture_default_str();
  manage->add_option("--threshold", ma->threshold, "Target-rate ratio (see scale policy); 0 = off")
      ->capture_default_str();
  manage->add_option("--factor", ma->factor, "Scaling factor")->capture_default_str();
  manage
      ->add_option("--target-utilization", ma->target_utilization,
                   "Headroom: size operators to be busy this share of the time (0-1, e.g. 0.7)")
      ->capture_default_str();
  manage
      ->add_option("--catch-up", ma->catch_up,
                   "Raise the sources' targets by (backlog + rate x redeploy pause) / D, to work a "
                   "backlog off within D (e.g. 5m; 0s = off; needs a known backlog: --simulate)")
      ->capture_default_str();
  manage
      ->add_option("--source-target", ma->source_target,
                   "Sources without a target: their true output rate (default with "
                   "--ds2-metrics) or their observed one (default otherwise)")
      ->check(CLI::IsMember({"true", "observed"}));
  manage
      ->add_option("--saturation", ma->saturation,
                   "An instance at least this busy is saturated: its operator is never scaled "
                   "down (0 = off)")
      ->capture_default_str();
  manage
      ->add_option("--min-change", ma->min_change,
                   "Ignore per-operator changes of at most this many instances")
      ->capture_default_str();
  manage->add_option("--max-decisions", ma->max_decisions,
                     "Stop reconfiguring after this many decisions (--serve: and exit)");
  manage->add_flag("--no-rollback", ma->no_rollback,
                   "Never roll back a change after which the sources' rate dropped");
  manage
      ->add_option("--rollback-drop", ma->rollback_drop,
                   "Roll back when the achieved source rate falls by this fraction")
      ->capture_default_str();
  manage->add_option("--system", ma->system, "flink, heron or timely")
      ->check(CLI::IsMember({"flink", "heron", "timely"}))
      ->capture_default_str();
  manage
      ->add_option("--dhalion-max-factor", ma->dhalion_max_factor,
                   "Dhalion baseline: most a step multiplies an operator's parallelism by")
      ->capture_default_str();
  manage->add_option("--apply", ma->apply,
                     "Run COMMAND for every decision: arguments name=N..., JSON on stdin");
  manage
      ->add_option("--poll", ma->poll,
                   "With --ds2-metrics or --serve: how often to look for new metrics")
      ->capture_default_str();
  manage
      ->add_option("--idle-exit", ma->idle_exit,
                   "With --ds2-metrics or --serve: exit after this long without a new epoch "
                   "(0: never)")
      ->capture_default_str();
  manage->add_option("--format,-f", ma->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  manage->add_option("--svg", ma->svg, "With --simulate: plot rates and parallelism to FILE");
  manage->add_option("--trace-out", ma->trace_out,
                     "With --simulate: write the run's trace (.jsonl or .snail; short runs)");
  manage->add_option("--output,-o", ma->output, "Write to FILE instead of stdout");
  manage->add_flag("--quiet,-q", ma->quiet, "No progress on stderr");
  manage->add_flag("--diagnose", ma->diagnose,
                   "With --simulate: judge the final deployment's last intervals against the "
                   "target and, if missed, name the straggler by CP (keeps the trace of the last "
                   "intervals)");
  manage
      ->add_option("--diagnose-intervals", ma->diagnose_intervals,
                   "With --diagnose: how many of the last policy intervals to judge and analyze")
      ->capture_default_str();

  return [scale, policy, manage, pa, ma]() {
    if (!*scale) return -1;
    if (*policy) return run_policy(*pa);
    if (*manage) {
      ma->interval_given = manage->count("--interval") > 0;
      return run_manage(*ma);
    }
    return -1;
  };
}

}  // namespace snailtrail::cli
