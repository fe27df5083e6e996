#include "sim/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/units.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::sim {

std::string_view name_of(Model m) {
  switch (m) {
    case Model::pipelined:
      return "pipelined";
    case Model::microbatch:
      return "microbatch";
    case Model::timely:
      return "timely";
  }
  return "?";
}

std::string_view name_of(Partitioning p) {
  switch (p) {
    case Partitioning::forward:
      return "forward";
    case Partitioning::round_robin:
      return "round_robin";
    case Partitioning::hash:
      return "hash";
  }
  return "?";
}

std::vector<uint32_t> Scenario::out_edges(uint32_t op) const {
  std::vector<uint32_t> r;
  for (uint32_t e = 0; e < edges.size(); ++e)
    if (edges[e].from == op) r.push_back(e);
  return r;
}

std::vector<uint32_t> Scenario::in_edges(uint32_t op) const {
  std::vector<uint32_t> r;
  for (uint32_t e = 0; e < edges.size(); ++e)
    if (edges[e].to == op) r.push_back(e);
  return r;
}

uint32_t worker_count(const Scenario& s) {
  switch (s.model) {
    case Model::pipelined: {
      uint32_t n = 0;
      for (const OperatorSpec& op : s.operators) n += op.parallelism;
      return n;
    }
    case Model::microbatch:
      return s.microbatch.executors + 1;
    case Model::timely:
      return s.timely.workers;
  }
  return 0;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path + ": cannot open scenario file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

namespace {

Distribution scaled(Distribution d, double f) {
  d.p1 *= f;
  d.p2 *= f;
  return d;
}

// --speed-up TARGET=K (Overrides::speedups).
void apply_speedup(Scenario& s, const std::string& target, double k) {
  if (!(k > 0) || !std::isfinite(k))
    throw UsageError({field("speed_up"), " " + target + ": the factor must be positive"});
  if (s.model == Model::microbatch && target == "driver") {
    s.microbatch.scheduling_cost = scaled(s.microbatch.scheduling_cost, 1 / k);
    s.microbatch.stage_barrier_cost = scaled(s.microbatch.stage_barrier_cost, 1 / k);
    return;
  }
  std::string names;
  for (OperatorSpec& op : s.operators) {
    names += (names.empty() ? "" : ", ") + op.name;
    if (s.model == Model::pipelined) {
      // An instance, or all of the operator's: every cost they draw.
      for (uint32_t i = 0; i < op.parallelism; ++i) {
        if (target != op.name && target != op.name + "-" + std::to_string(i)) continue;
        op.instance_speed.resize(op.parallelism, 1.0);
        op.instance_speed[i] *= k;
        if (target != op.name) return;
      }
      if (target == op.name) return;
    } else if (target == op.name) {
      Costs& c = op.cost;
      for (Distribution* d : {&c.input, &c.deserialization, &c.processing, &c.serialization, &c.io})
        *d = scaled(*d, 1 / k);
      return;
    }
  }
  const char* what = s.model == Model::pipelined    ? "operator or instance (OPERATOR-INDEX)"
                     : s.model == Model::microbatch ? "operator (or driver)"
                                                    : "operator";
  throw UsageError({field("speed_up"), std::string(": no ") + what + " named '" + target +
                                           "' (operators: " + names + ")"});
}

}  // namespace

void apply_overrides(Scenario& s, const Overrides& o) {
  if (o.duration_ns) {
    if (*o.duration_ns <= 0) throw UsageError({field("duration"), " must be positive"});
    s.duration_ns = *o.duration_ns;
  }
  if (o.seed) s.seed = *o.seed;
  if (o.workers) {
    const uint32_t n = *o.workers;
    if (n == 0) throw UsageError({field("workers"), " must be at least 1"});
    switch (s.model) {
      case Model::pipelined: {
        const double f = static_cast<double>(n) / worker_count(s);
        for (OperatorSpec& op : s.operators)
          op.parallelism =
              std::max<uint32_t>(1, static_cast<uint32_t>(std::llround(op.parallelism * f)));
        break;
      }
      case Model::microbatch: {
        if (n < 2)
          throw UsageError({field("workers"), ": micro-batch needs a driver and an executor"});
        const double f = static_cast<double>(n - 1) / s.microbatch.executors;
        s.microbatch.executors = n - 1;
        for (OperatorSpec& op : s.operators)
          op.parallelism =
              std::max<uint32_t>(1, static_cast<uint32_t>(std::llround(op.parallelism * f)));
        break;
      }
      case Model::timely:
        s.timely.workers = n;
        s.timely.processes = std::min(s.timely.processes, n);
        break;
    }
  }
  if (o.rate) {
    if (!(*o.rate > 0)) throw UsageError({field("rate"), " must be positive"});
    double total = 0, par = 0;
    for (const OperatorSpec& op : s.operators)
      if (op.is_source) total += op.rate, par += op.parallelism;
    for (OperatorSpec& op : s.operators) {
      if (!op.is_source) continue;
      const double f = total > 0 ? op.rate / total : op.parallelism / par;
      const double scale = op.rate > 0 ? *o.rate * f / op.rate : 0;
      op.rate = *o.rate * f;
      for (RateChange& c : op.rate_changes) c.rate = scale > 0 ? c.rate * scale : op.rate;
    }
  }
  for (const auto& [target, k] : o.speedups) apply_speedup(s, target, k);
}

}  // namespace snailtrail::sim
