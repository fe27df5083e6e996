#include "sim/truth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace/json_text.hpp"

namespace snailtrail::sim {
namespace {

// Time-averaged rate of a source over [0, duration].
double mean_rate(const OperatorSpec& op, int64_t duration) {
  if (op.rate_changes.empty() || duration <= 0) return op.rate;
  double area = 0;
  int64_t t = 0;
  double r = op.rate;
  for (const RateChange& c : op.rate_changes) {
    const int64_t until = std::min(c.at_ns, duration);
    if (until > t) area += r * static_cast<double>(until - t);
    t = std::max(t, until);
    r = c.rate;
  }
  if (duration > t) area += r * static_cast<double>(duration - t);
  return area / static_cast<double>(duration);
}

// Shares of an edge's records per receiving instance.
std::vector<double> edge_shares(Partitioning p, double skew, const std::vector<double>& from,
                                size_t to_instances) {
  std::vector<double> s(to_instances, 0.0);
  if (p == Partitioning::forward && from.size() == to_instances) return from;
  for (double& x : s) x = (1.0 - (p == Partitioning::hash ? skew : 0.0)) / to_instances;
  if (p == Partitioning::hash) s[0] += skew;
  return s;
}

// Which fraction of an exchange's records crosses process boundaries in timely.
double remote_fraction(const Scenario& s) {
  const double procs = std::max<uint32_t>(1, s.timely.processes);
  return 1.0 - 1.0 / procs;
}

// Instances per operator (timely: every worker runs every operator).
size_t instances(const Scenario& s, uint32_t op) {
  return s.model == Model::timely ? s.timely.workers : s.operators[op].parallelism;
}

// Per-record cost of an operator (ns), given which activities it performs.
double cost_of(const Scenario& s, uint32_t op) {
  const OperatorSpec& o = s.operators[op];
  const bool has_out = !s.out_edges(op).empty();
  double in_c = o.cost.input.mean() + o.cost.processing.mean();
  double deser = o.cost.deserialization.mean();
  double ser = o.cost.serialization.mean();
  double sel = o.selectivity.mean();
  if (s.model == Model::microbatch) {
    auto in = s.in_edges(op);
    auto out = s.out_edges(op);
    if (!in.empty() && s.edges[in[0]].partitioning == Partitioning::forward) deser = 0;
    if (!out.empty() && s.edges[out[0]].partitioning == Partitioning::forward) ser = 0;
  } else if (s.model == Model::timely) {
    const double rf = remote_fraction(s);
    auto in = s.in_edges(op);
    auto out = s.out_edges(op);
    deser *= (!in.empty() && s.edges[in[0]].partitioning != Partitioning::forward) ? rf : 0;
    ser *= (!out.empty() && s.edges[out[0]].partitioning != Partitioning::forward) ? rf : 0;
  }
  return in_c + deser + sel * (has_out ? ser : o.cost.io.mean());
}

// Adds the load each operator of `order` passes on to its instances' downstream inputs.
void propagate(const Scenario& s, std::vector<std::vector<double>>& l,
               const std::vector<uint32_t>& order) {
  for (uint32_t op : order) {
    const double in = [&] {
      double x = 0;
      for (double v : l[op]) x += v;
      return x;
    }();
    if (in <= 0) continue;
    const double out = in * s.operators[op].selectivity.mean();
    std::vector<double> shares(l[op].size());
    for (size_t j = 0; j < shares.size(); ++j) shares[j] = l[op][j] / in;
    for (uint32_t e : s.out_edges(op)) {
      const EdgeSpec& ed = s.edges[e];
      auto sh = edge_shares(ed.partitioning, ed.skew, shares, l[ed.to].size());
      for (size_t j = 0; j < sh.size(); ++j) l[ed.to][j] += out * sh[j];
    }
  }
}

// Each further pass of a timely loop feeds the last operator's output back into the
// first after the source, with the loop's partitioning.
void add_loop_passes(const Scenario& s, std::vector<std::vector<double>>& load) {
  const size_t n = s.operators.size();
  std::vector<uint32_t> loop(s.topo_order.begin() + 1, s.topo_order.end());
  const uint32_t first = loop.front(), last = loop.back();
  const auto in0 = s.in_edges(first);
  const Partitioning lp = s.timely.loop_partitioning.value_or(
      in0.empty() ? Partitioning::hash : s.edges[in0[0]].partitioning);
  std::vector<std::vector<double>> pass = load;
  for (uint32_t it = 1; it < s.timely.iterations; ++it) {
    double out = 0;
    for (double v : pass[last]) out += v;
    out *= s.operators[last].selectivity.mean();
    std::vector<std::vector<double>> next(n);
    for (uint32_t op = 0; op < n; ++op) next[op].assign(instances(s, op), 0.0);
    std::vector<double> lshares(pass[last].size());
    double lin = 0;
    for (double v : pass[last]) lin += v;
    for (size_t j = 0; j < lshares.size(); ++j) lshares[j] = lin > 0 ? pass[last][j] / lin : 0;
    auto sh = edge_shares(lp, s.timely.loop_skew, lshares, next[first].size());
    for (size_t j = 0; j < sh.size(); ++j) next[first][j] = out * sh[j];
    propagate(s, next, loop);
    for (uint32_t op : loop)
      for (size_t j = 0; j < load[op].size(); ++j) load[op][j] += next[op][j];
    pass = std::move(next);
  }
}

// Offered load (records/s) per operator instance, propagated in topological order.
std::vector<std::vector<double>> offered_load(const Scenario& s, const std::vector<double>& cost) {
  const size_t n = s.operators.size();
  std::vector<std::vector<double>> load(n);
  for (uint32_t op = 0; op < n; ++op) load[op].assign(instances(s, op), 0.0);
  for (uint32_t op : s.topo_order) {
    const OperatorSpec& o = s.operators[op];
    if (!o.is_source) continue;
    double rate = mean_rate(o, s.duration_ns);
    if (rate <= 0) {
      // As fast as possible: the source's own capacity.
      rate = cost[op] > 0 ? 1e9 * static_cast<double>(instances(s, op)) / cost[op] : 0;
    }
    for (double& v : load[op]) v = rate / static_cast<double>(load[op].size());
  }
  propagate(s, load, s.topo_order);
  if (s.model == Model::timely && s.timely.iterations > 1 && s.topo_order.size() > 1)
    add_loop_passes(s, load);
  return load;
}

// Per operator: offered rate, utilization and capacity; the bottleneck.
void operator_loads(const Scenario& s, const std::vector<std::vector<double>>& load,
                    const std::vector<double>& cost, Truth& t) {
  const size_t n = s.operators.size();
  double best = 0;
  for (uint32_t op = 0; op < n; ++op) {
    OperatorLoad ol;
    ol.name = s.operators[op].name;
    ol.parallelism = static_cast<uint32_t>(load[op].size());
    for (double v : load[op]) ol.offered_rate += v;
    // Busy share of the most loaded instance (or executor, in micro-batch).
    std::vector<double> per_worker = load[op];
    if (s.model == Model::microbatch) {
      per_worker.assign(s.microbatch.executors, 0.0);
      for (size_t j = 0; j < load[op].size(); ++j)
        per_worker[j % s.microbatch.executors] += load[op][j];
    }
    const double peak =
        per_worker.empty() ? 0 : *std::max_element(per_worker.begin(), per_worker.end());
    ol.utilization = peak * cost[op] * 1e-9;
    ol.capacity = ol.utilization > 0 ? ol.offered_rate / ol.utilization : INFINITY;
    if (ol.utilization >= 1.0 && ol.utilization > best) {
      best = ol.utilization;
      t.bottleneck_operator = ol.name;
    }
    t.operators.push_back(std::move(ol));
  }
}

// The worker that receives the hot key: instance 0 of the first skewed hash edge.
void find_hot_worker(const Scenario& s, Truth& t) {
  for (uint32_t op : s.topo_order)
    for (uint32_t e : s.in_edges(op))
      if (!t.hot_worker && s.edges[e].partitioning == Partitioning::hash && s.edges[e].skew > 0) {
        switch (s.model) {
          case Model::pipelined:
            t.hot_worker = s.operators[op].name + "-" +
                           std::to_string(s.edges[e].hot_instance % s.operators[op].parallelism);
            break;
          case Model::microbatch:
            t.hot_worker = "executor-0";
            break;
          case Model::timely:
            t.hot_worker = "worker-0";
            break;
        }
      }
  if (!t.hot_worker && s.model == Model::timely && s.timely.loop_skew > 0 &&
      s.timely.iterations > 1)
    t.hot_worker = "worker-0";
}

}  // namespace

Truth expected_truth(const Scenario& s) {
  Truth t;
  t.scenario = s.name;
  t.model = std::string(name_of(s.model));
  t.seed = s.seed;
  t.duration_ns = s.duration_ns;
  const size_t n = s.operators.size();
  std::vector<double> cost(n);
  for (uint32_t op = 0; op < n; ++op) cost[op] = cost_of(s, op);
  operator_loads(s, offered_load(s, cost), cost, t);
  if (s.model == Model::microbatch) {
    // Driver time per batch: scheduling every task of every stage, one barrier per
    // stage (stages are separated by non-forward edges).
    double tasks = 0, stages = 0;
    for (uint32_t op : s.topo_order) {
      auto in = s.in_edges(op);
      if (in.empty() || s.edges[in[0]].partitioning != Partitioning::forward) {
        tasks += s.operators[op].parallelism;
        stages += 1;
      }
    }
    const double per_batch = tasks * s.microbatch.scheduling_cost.mean() +
                             stages * s.microbatch.stage_barrier_cost.mean();
    t.driver_utilization = per_batch / static_cast<double>(s.microbatch.batch_interval_ns);
  }
  find_hot_worker(s, t);
  return t;
}

namespace {

void json_string(fmt::memory_buffer& out, std::string_view s) {
  append_json_string(out, s, kJsonPlain);
}

void json_opt(fmt::memory_buffer& out, const std::optional<std::string>& s) {
  if (s)
    json_string(out, *s);
  else
    fmt::format_to(std::back_inserter(out), "null");
}

}  // namespace

std::string to_json(const Truth& t) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\n  \"scenario\": ");
  json_string(out, t.scenario);
  fmt::format_to(it, ",\n  \"model\": ");
  json_string(out, t.model);
  fmt::format_to(it, ",\n  \"seed\": {},\n  \"duration_ns\": {},\n  \"hot_worker\": ", t.seed,
                 t.duration_ns);
  json_opt(out, t.hot_worker);
  fmt::format_to(it, ",\n  \"bottleneck_operator\": ");
  json_opt(out, t.bottleneck_operator);
  if (t.driver_utilization) {
    fmt::format_to(it, ",\n  \"driver_utilization\": ");
    append_json_number(out, *t.driver_utilization);
  }
  fmt::format_to(it, ",\n  \"operators\": [");
  for (size_t i = 0; i < t.operators.size(); ++i) {
    const OperatorLoad& o = t.operators[i];
    fmt::format_to(it, "{}\n    {{\"name\": ", i ? "," : "");
    json_string(out, o.name);
    fmt::format_to(it, ", \"parallelism\": {}, \"offered_rate\": ", o.parallelism);
    append_json_number(out, o.offered_rate);
    fmt::format_to(it, ", \"capacity\": ");
    append_json_number(out, o.capacity);
    fmt::format_to(it, ", \"utilization\": ");
    append_json_number(out, o.utilization);
    fmt::format_to(it, "}}");
  }
  fmt::format_to(it, "\n  ],\n  \"instances\": [");
  const double secs = static_cast<double>(t.duration_ns) * 1e-9;
  for (size_t i = 0; i < t.instances.size(); ++i) {
    const InstanceTruth& x = t.instances[i];
    const double useful = static_cast<double>(x.useful_ns) * 1e-9;
    fmt::format_to(it, "{}\n    {{\"worker\": ", i ? "," : "");
    json_string(out, x.worker);
    fmt::format_to(it, ", \"operator\": ");
    json_string(out, x.op);
    fmt::format_to(it,
                   ", \"instance\": {}, \"records_in\": {}, \"records_out\": {}, "
                   "\"useful_ns\": {}, \"true_processing_rate\": ",
                   x.instance, x.records_in, x.records_out, x.useful_ns);
    append_json_number(out, useful > 0 ? static_cast<double>(x.records_in) / useful : NAN);
    fmt::format_to(it, ", \"true_output_rate\": ");
    append_json_number(out, useful > 0 ? static_cast<double>(x.records_out) / useful : NAN);
    fmt::format_to(it, ", \"observed_processing_rate\": ");
    append_json_number(out, secs > 0 ? static_cast<double>(x.records_in) / secs : NAN);
    fmt::format_to(it, ", \"observed_output_rate\": ");
    append_json_number(out, secs > 0 ? static_cast<double>(x.records_out) / secs : NAN);
    fmt::format_to(it, "}}");
  }
  fmt::format_to(it, "\n  ]\n}}\n");
  return fmt::to_string(out);
}

}  // namespace snailtrail::sim
