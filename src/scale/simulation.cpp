#include "scale/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/session.hpp"

namespace snailtrail::scale {

Topology topology_of(const sim::Scenario& s) {
  Topology t;
  for (const sim::OperatorSpec& o : s.operators) t.add_operator(o.name, o.parallelism);
  for (const sim::EdgeSpec& e : s.edges) t.add_edge(e.from, e.to);
  return t;
}

ControlledRun run_controlled(const sim::Scenario& scenario, Controller& controller,
                             const SimControlOptions& opt,
                             const std::function<void(const DecisionRecord&)>& on_decision) {
  if (opt.interval_ns <= 0) throw std::invalid_argument("the policy interval must be positive");
  if (opt.pause_ns < 0) throw std::invalid_argument("the redeploy pause must be >= 0");
  ControlledRun run;
  run.topology = topology_of(scenario);
  sim::Session s(scenario, opt.record_trace);
  const int64_t end = scenario.duration_ns;
  const size_t n = scenario.operators.size();
  std::vector<uint32_t> sources;
  for (uint32_t op = 0; op < n; ++op)
    if (scenario.operators[op].is_source) sources.push_back(op);
  auto arrived = [&](int64_t t) {
    double a = 0;
    for (uint32_t op : sources) a += s.source_arrived(op, t);
    return a;
  };
  auto read = [&] {
    double r = 0;
    for (uint32_t op : sources) r += s.source_read(op);
    return r;
  };
  std::vector<sim::InstanceCounters> prev;  // counters at the interval's start
  std::vector<int64_t> running_starts;      // starts of the running intervals so far
  int64_t t = 0;
  while (t < end) {
    if (s.paused()) {
      // Nothing runs; records pile up at the sources.
      const int64_t next = std::min(s.deployed_at(), end);
      s.run_until(next);
      TimelinePoint p;
      p.time_s = static_cast<double>(next) / 1e9;
      p.target_rate = (arrived(next) - arrived(t)) / (static_cast<double>(next - t) / 1e9);
      p.backlog = arrived(next) - read();
      p.paused = true;
      p.parallelism = s.parallelism();
      run.timeline.push_back(p);
      prev.clear();
      t = next;
      continue;
    }
    const int64_t next = std::min(t + opt.interval_ns, end);
    const bool full = next - t == opt.interval_ns;
    const double read_before = read();
    s.run_until(next);
    std::vector<sim::InstanceCounters> now = s.counters();
    const double dt = static_cast<double>(next - t) / 1e9;
    Observation o;
    o.time_s = static_cast<double>(next) / 1e9;
    o.parallelism = s.parallelism();
    o.source_target.assign(n, kUndefined);
    o.source_backlog.assign(n, kUndefined);
    for (uint32_t op : sources) {
      o.source_target[op] = (s.source_arrived(op, next) - s.source_arrived(op, t)) / dt;
      o.source_backlog[op] = std::max(0.0, s.source_arrived(op, next) - s.source_read(op));
    }
    for (size_t i = 0; i < now.size(); ++i) {
      const sim::InstanceCounters& c = now[i];
      const sim::InstanceCounters z{};
      const sim::InstanceCounters& b = i < prev.size() ? prev[i] : z;
      InstanceMetrics m;
      m.op = c.op;
      m.instance = c.instance;
      m.worker = c.worker;
      m.window_s = dt;
      m.useful_s = static_cast<double>(c.useful_ns - b.useful_ns) * 1e-9;
      m.records_in = static_cast<double>(c.records_in - b.records_in);
      m.records_out = static_cast<double>(c.records_out - b.records_out);
      m.blocked_s = static_cast<double>(c.blocked_ns - b.blocked_ns) * 1e-9;
      o.instances.push_back(std::move(m));
    }
    TimelinePoint p;
    p.time_s = o.time_s;
    p.source_rate = (read() - read_before) / dt;
    p.target_rate = (arrived(next) - arrived(t)) / dt;
    p.backlog = arrived(next) - read();
    p.parallelism = o.parallelism;
    run.timeline.push_back(p);
    prev = std::move(now);
    if (opt.record_trace && opt.trace_intervals > 0) {
      // Whatever decisions follow, the diagnosis reads at most the last trace_intervals
      // running intervals; one more before them is kept as a margin, so that messages and
      // activities crossing into the analyzed span are whole.
      running_starts.push_back(t);
      if (running_starts.size() > opt.trace_intervals + 1) {
        running_starts.erase(running_starts.begin());
        s.discard_trace_before(running_starts.front());
      }
    }
    t = next;
    if (!full || next == end) break;  // no decision on a partial interval or at the end
    std::optional<Action> a = controller.observe(o);
    if (!a || a->parallelism == s.parallelism()) continue;
    s.reconfigure(a->parallelism, opt.pause_ns);
    DecisionRecord d{o.time_s, static_cast<double>(s.deployed_at()) / 1e9, a->parallelism,
                     a->reason};
    run.decisions.push_back(d);
    if (on_decision) on_decision(d);
    prev.clear();
  }
  run.result = s.finish();
  return run;
}

BacklogTrend backlog_trend(const ControlledRun& run, double tolerance) {
  BacklogTrend b;
  const double deployed = run.decisions.empty() ? 0 : run.decisions.back().effective_s;
  // The final deployment's running intervals; the first one reads what piled up during the
  // pause (or the start) and is left out.
  std::vector<const TimelinePoint*> pts;
  for (const TimelinePoint& p : run.timeline)
    if (!p.paused && p.time_s > deployed) pts.push_back(&p);
  if (pts.size() < 3) return b;
  pts.erase(pts.begin());
  // Least-squares slope of the backlog over the interval ends.
  double mt = 0, mb = 0, offered = 0, read = 0;
  for (const TimelinePoint* p : pts) mt += p->time_s, mb += p->backlog;
  mt /= static_cast<double>(pts.size());
  mb /= static_cast<double>(pts.size());
  double num = 0, den = 0;
  for (const TimelinePoint* p : pts) {
    num += (p->time_s - mt) * (p->backlog - mb);
    den += (p->time_s - mt) * (p->time_s - mt);
    offered += p->target_rate;
    read += p->source_rate;
  }
  if (!(den > 0)) return b;
  b.judged = true;
  b.from_s = pts.front()->time_s;
  b.to_s = pts.back()->time_s;
  b.backlog_from = pts.front()->backlog;
  b.backlog_to = pts.back()->backlog;
  b.growth_per_s = num / den;
  b.offered_rate = offered / static_cast<double>(pts.size());
  b.achieved_rate = read / static_cast<double>(pts.size());
  b.growing = std::isfinite(b.offered_rate) && b.growth_per_s > tolerance * b.offered_rate &&
              b.backlog_to > b.backlog_from;
  return b;
}

}  // namespace snailtrail::scale
