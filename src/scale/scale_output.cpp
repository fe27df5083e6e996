#include "scale/scale_output.hpp"

#include <cmath>
#include <iterator>

#include "trace/json_text.hpp"

namespace snailtrail::scale {

namespace {
std::string num(double v) {
  return json_number(v);
}
}  // namespace

std::string json_number(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

std::string json_string(const std::string& s) {
  std::string out;
  append_json_string(out, s, kJsonPlain);
  return out;
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

std::string par_text(const Topology& t, const std::vector<uint32_t>& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) s += fmt::format("{}{}={}", i ? " " : "", t.names[i], p[i]);
  return s;
}

namespace {

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

}  // namespace

void write_policy(fmt::memory_buffer& b, const PolicyHeader& h, const Topology& t,
                  const std::vector<PolicyEpoch>& epochs) {
  const SourceTarget source_target = h.source_target;
  if (h.json) {
    b.push_back('[');
    for (size_t i = 0; i < epochs.size(); ++i) {
      const PolicyEpoch& e = epochs[i];
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
                 h.system, epochs.size(), h.extra, name_of(source_target));
  size_t w = 8;
  for (const std::string& n : t.names) w = std::max(w, n.size());
  for (const PolicyEpoch& e : epochs) {
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

void write_run(fmt::memory_buffer& b, const RunHeader& h, const ControlledRun& r,
               const std::optional<Diagnosis>& diag, const std::string& skew) {
  const BacklogTrend bt = backlog_trend(r);
  const std::string warning = backlog_warning(bt, skew);
  const std::vector<uint32_t>& final_p =
      r.decisions.empty() ? r.topology.parallelism : r.decisions.back().parallelism;
  const double converged = r.decisions.empty() ? 0 : r.decisions.back().effective_s;
  if (h.json) {
    fmt::format_to(std::back_inserter(b), "{{\"controller\": {}, \"decisions\": [",
                   json_string(h.controller));
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
                 h.scenario, h.controller);
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

DecisionLog::DecisionLog(fmt::memory_buffer& b, Format format) : b_(b), format_(format) {
  if (format_ == Format::json) b_.append(std::string_view("{\"decisions\": ["));
}

void DecisionLog::add(const Topology& t, const Action& act, double time_s, int64_t epoch) {
  if (format_ == Format::table) {
    fmt::format_to(std::back_inserter(b_), "epoch {} ({:.0f} s): {}\n  {}\n", epoch, time_s,
                   par_text(t, act.parallelism), act.reason);
    first_ = false;
    return;
  }
  const bool json = format_ == Format::json;
  fmt::format_to(std::back_inserter(b_), "{}{{\"time_s\": {}, \"epoch\": {}, \"parallelism\": {}",
                 !json    ? ""
                 : first_ ? "\n  "
                          : ",\n  ",
                 num(time_s), epoch, json_map(t, act.parallelism));
  if (act.total_workers)
    fmt::format_to(std::back_inserter(b_), ", \"total_workers\": {}", *act.total_workers);
  fmt::format_to(std::back_inserter(b_), ", \"reason\": {}}}{}", json_string(act.reason),
                 json ? "" : "\n");
  first_ = false;
}

void DecisionLog::finish() {
  if (format_ == Format::json)
    b_.append(std::string_view("]}\n"));
  else if (format_ == Format::table && first_)
    b_.append(std::string_view("no scaling decision\n"));
}

}  // namespace snailtrail::scale
