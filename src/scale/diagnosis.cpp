#include "scale/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "pag/timeline.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::scale {

std::string_view name_of(Cause c) {
  switch (c) {
    case Cause::none:
      return "none";
    case Cause::skew:
      return "skew";
    case Cause::unknown:
      return "unknown";
  }
  return "unknown";
}

namespace {

// "count-3" -> "count" (the simulator's worker names are NAME-INDEX).
std::string strip_index(const std::string& worker) {
  const size_t dash = worker.rfind('-');
  if (dash == std::string::npos || dash + 1 == worker.size()) return worker;
  for (size_t i = dash + 1; i < worker.size(); ++i)
    if (worker[i] < '0' || worker[i] > '9') return worker;
  return worker.substr(0, dash);
}

}  // namespace

namespace {

// Judges the final deployment's last intervals against the target; false when that is
// all there is to say (d.explanation set).
bool judge_target(const ControlledRun& run, const DiagnosisOptions& opt, Diagnosis& d) {
  // The final deployment's intervals: running ones that ended after it started. (Its
  // first one may read the pause's backlog faster than records arrive: judge the last.)
  const double deployed = run.decisions.empty() ? 0 : run.decisions.back().effective_s;
  struct Span {
    double start, end;
    const TimelinePoint* p;
  };
  std::vector<Span> spans;
  double prev_end = 0;
  for (const TimelinePoint& p : run.timeline) {
    if (!p.paused && p.time_s > deployed) spans.push_back({prev_end, p.time_s, &p});
    prev_end = p.time_s;
  }
  if (spans.empty()) {
    d.explanation = "not judged: nothing ran after the last decision";
    return false;
  }
  const size_t first = spans.size() > opt.intervals ? spans.size() - opt.intervals : 0;
  double read = 0, arrived = 0;
  for (size_t i = first; i < spans.size(); ++i) {
    const double dt = spans[i].end - spans[i].start;
    read += spans[i].p->source_rate * dt;
    arrived += spans[i].p->target_rate * dt;
  }
  d.from_s = spans[first].start;
  d.to_s = spans.back().end;
  const double len = d.to_s - d.from_s;
  d.achieved_rate = read / len;
  d.target_rate = arrived / len;
  if (!std::isfinite(d.target_rate)) {  // sources that read as fast as they can
    d.explanation = "not judged: the sources have no target rate";
    return false;
  }
  d.target_met = !(d.achieved_rate < opt.target_ratio * d.target_rate);
  if (d.target_met) {
    d.explanation =
        fmt::format("target met: sources at {:.0f}/s = {:.1f}% of {:.0f}/s", d.achieved_rate,
                    100 * d.achieved_rate / d.target_rate, d.target_rate);
    return false;
  }
  return true;
}

// CP and busy time of every worker over [d.from_s, d.to_s], by CP, largest first.
void worker_cp(const ControlledRun& run, const DiagnosisOptions& opt, Diagnosis& d) {
  const Trace& trace = run.result.trace;
  if (trace.events.empty())
    throw std::invalid_argument(
        "diagnosis: the target was missed but the run recorded no trace (record_trace)");
  const Pag pag = build_pag(trace);
  AnalysisOptions ao;
  ao.windows.width_ns = opt.window_ns;
  ao.windows.from_ns = static_cast<int64_t>(std::llround(d.from_s * 1e9));
  ao.windows.to_ns = static_cast<int64_t>(std::llround(d.to_s * 1e9));
  Aggregate agg;
  analyze_pag(pag, ao, [&](const WindowView& v) {
    if (v.summary.window.empty_run == 0) agg.add(v.summary, 0);
  });
  agg.finish();
  d.windows = static_cast<uint32_t>(agg.windows_with_paths);

  // Operator of every worker: the simulator's truth names it; otherwise NAME-INDEX.
  std::unordered_map<std::string, std::string> op_of;
  for (const sim::InstanceTruth& x : run.result.truth.instances) op_of.emplace(x.worker, x.op);
  for (size_t k = 0; k < pag.worker_count(); ++k) {
    const double cp = k < agg.cp.worker.size() ? agg.cp.worker[k] : 0;
    const double busy = k < agg.conventional.worker.size() ? agg.conventional.worker[k] : 0;
    if (cp == 0 && busy == 0) continue;
    WorkerCp w;
    w.worker = trace.worker_name(pag.worker_ids[k]);
    auto it = op_of.find(w.worker);
    w.op = it != op_of.end() ? it->second : strip_index(w.worker);
    w.cp = cp;
    w.busy = busy;
    d.workers.push_back(std::move(w));
  }
  std::stable_sort(d.workers.begin(), d.workers.end(),
                   [](const WorkerCp& a, const WorkerCp& b) { return a.cp > b.cp; });
}

// The straggler (most CP), its closest peer of the same operator, and the cause.
void name_cause(const ControlledRun& run, const DiagnosisOptions& opt, Diagnosis& d) {
  const std::string shortfall =
      fmt::format("target missed: sources at {:.0f}/s = {:.1f}% of {:.0f}/s", d.achieved_rate,
                  100 * d.achieved_rate / d.target_rate, d.target_rate);
  d.cause = Cause::unknown;
  if (d.workers.empty() || !(d.workers.front().cp > 0)) {
    d.explanation = shortfall + "; no critical path in the analyzed span";
    return;
  }
  const WorkerCp& s = d.workers.front();
  d.straggler = s.worker;
  d.straggler_operator = s.op;
  d.straggler_cp = s.cp;
  uint32_t peers = 0;
  for (size_t i = 1; i < d.workers.size(); ++i)
    if (d.workers[i].op == s.op && peers++ == 0) {
      d.peer = d.workers[i].worker;
      d.peer_cp = d.workers[i].cp;
    }
  // Idle instances have no busy time and are not listed: count them from the truth.
  uint32_t instances = 0;
  for (const sim::InstanceTruth& x : run.result.truth.instances) instances += x.op == s.op;
  if (instances <= 1 && peers == 0) {
    d.explanation = fmt::format("{}; {} (CP {:.1f}%) is the only instance of {}: not skew",
                                shortfall, s.worker, 100 * s.cp, s.op);
    return;
  }
  if (s.cp >= opt.skew_factor * d.peer_cp) {
    d.cause = Cause::skew;
    d.explanation = fmt::format(
        "{} because of skew: straggler {} has {:.1f}% of the critical participation, the "
        "other instances of {} at most {:.1f}%",
        shortfall, s.worker, 100 * s.cp, s.op, 100 * d.peer_cp);
  } else {
    d.explanation = fmt::format(
        "{}; no straggler: {} leads with {:.1f}% of the CP but {} has {:.1f}% (cause unknown)",
        shortfall, s.worker, 100 * s.cp, d.peer, 100 * d.peer_cp);
  }
}

}  // namespace

Diagnosis diagnose(const ControlledRun& run, const DiagnosisOptions& opt) {
  if (opt.window_ns <= 0 || opt.intervals == 0)
    throw std::invalid_argument("diagnosis: window and intervals must be positive");
  Diagnosis d;
  if (!judge_target(run, opt, d)) return d;
  worker_cp(run, opt, d);
  name_cause(run, opt, d);
  return d;
}

}  // namespace snailtrail::scale
