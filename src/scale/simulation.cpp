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

SimulatorSource::SimulatorSource(const sim::Scenario& scenario, const SimControlOptions& options,
                                 std::function<void(const DecisionRecord&)> on_decision)
    : opt_(options),
      session_(std::make_unique<sim::Session>(scenario, options.record_trace)),
      end_(scenario.duration_ns),
      on_decision_(std::move(on_decision)) {
  if (opt_.interval_ns <= 0) throw std::invalid_argument("the policy interval must be positive");
  if (opt_.pause_ns < 0) throw std::invalid_argument("the redeploy pause must be >= 0");
  run_.topology = topology_of(scenario);
  for (uint32_t op = 0; op < scenario.operators.size(); ++op)
    if (scenario.operators[op].is_source) sources_.push_back(op);
}

SimulatorSource::~SimulatorSource() = default;

double SimulatorSource::arrived(int64_t t) const {
  double a = 0;
  for (uint32_t op : sources_) a += session_->source_arrived(op, t);
  return a;
}

double SimulatorSource::read() const {
  double r = 0;
  for (uint32_t op : sources_) r += session_->source_read(op);
  return r;
}

// Nothing runs during a redeploy pause; records pile up at the sources.
void SimulatorSource::pause_interval() {
  sim::Session& s = *session_;
  const int64_t next = std::min(s.deployed_at(), end_);
  s.run_until(next);
  TimelinePoint p;
  p.time_s = static_cast<double>(next) / 1e9;
  p.target_rate = (arrived(next) - arrived(t_)) / (static_cast<double>(next - t_) / 1e9);
  p.backlog = arrived(next) - read();
  p.paused = true;
  p.parallelism = s.parallelism();
  run_.timeline.push_back(p);
  prev_.clear();
  t_ = next;
}

Observation SimulatorSource::observe(int64_t next, std::vector<sim::InstanceCounters>& now) {
  sim::Session& s = *session_;
  const size_t n = run_.topology.size();
  const double dt = static_cast<double>(next - t_) / 1e9;
  Observation o;
  o.time_s = static_cast<double>(next) / 1e9;
  o.parallelism = s.parallelism();
  o.source_target.assign(n, kUndefined);
  o.source_backlog.assign(n, kUndefined);
  for (uint32_t op : sources_) {
    o.source_target[op] = (s.source_arrived(op, next) - s.source_arrived(op, t_)) / dt;
    o.source_backlog[op] = std::max(0.0, s.source_arrived(op, next) - s.source_read(op));
  }
  for (size_t i = 0; i < now.size(); ++i) {
    const sim::InstanceCounters& c = now[i];
    const sim::InstanceCounters z{};
    const sim::InstanceCounters& b = i < prev_.size() ? prev_[i] : z;
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
  return o;
}

std::optional<SourceInterval> SimulatorSource::next() {
  sim::Session& s = *session_;
  while (!done_ && t_ < end_ && s.paused()) pause_interval();
  if (done_ || t_ >= end_) return std::nullopt;
  const int64_t next = std::min(t_ + opt_.interval_ns, end_);
  const bool full = next - t_ == opt_.interval_ns;
  const double read_before = read();
  s.run_until(next);
  std::vector<sim::InstanceCounters> now = s.counters();
  const double dt = static_cast<double>(next - t_) / 1e9;
  SourceInterval in;
  in.epoch = epoch_++;
  in.observation = observe(next, now);
  in.instances = now.size();
  TimelinePoint p;
  p.time_s = in.observation.time_s;
  p.source_rate = (read() - read_before) / dt;
  p.target_rate = (arrived(next) - arrived(t_)) / dt;
  p.backlog = arrived(next) - read();
  p.parallelism = in.observation.parallelism;
  run_.timeline.push_back(p);
  prev_ = std::move(now);
  if (opt_.record_trace && opt_.trace_intervals > 0) {
    // Whatever decisions follow, the diagnosis reads at most the last trace_intervals
    // running intervals; one more before them is kept as a margin, so that messages and
    // activities crossing into the analyzed span are whole.
    running_starts_.push_back(t_);
    if (running_starts_.size() > opt_.trace_intervals + 1) {
      running_starts_.erase(running_starts_.begin());
      s.discard_trace_before(running_starts_.front());
    }
  }
  t_ = next;
  // No decision on a partial interval or at the end; the run ends there.
  if (!full || next == end_) in.decide = false, done_ = true;
  return in;
}

bool SimulatorSource::deploy(const Action& a, const SourceInterval& in) {
  sim::Session& s = *session_;
  if (a.parallelism == s.parallelism()) return false;
  s.reconfigure(a.parallelism, opt_.pause_ns);
  DecisionRecord d{in.observation.time_s, static_cast<double>(s.deployed_at()) / 1e9, a.parallelism,
                   a.reason};
  run_.decisions.push_back(d);
  if (on_decision_) on_decision_(d);
  prev_.clear();
  return true;
}

ControlledRun SimulatorSource::finish() {
  run_.result = session_->finish();
  return std::move(run_);
}

ControlledRun run_controlled(const sim::Scenario& scenario, Controller& controller,
                             const SimControlOptions& opt,
                             const std::function<void(const DecisionRecord&)>& on_decision) {
  SimulatorSource source(scenario, opt, on_decision);
  LoopHooks hooks;
  hooks.controller = [&](const Topology&) -> Controller& { return controller; };
  run_control_loop(source, hooks);
  return source.finish();
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
