#include "scale/policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace snailtrail::scale {

InstanceRates InstanceMetrics::rates() const {
  InstanceRates r;
  r.op = op;
  r.instance = instance;
  if (useful_s > 0) {
    r.true_processing = records_in / useful_s;
    r.true_output = records_out / useful_s;
  }
  if (window_s > 0) {
    r.observed_processing = records_in / window_s;
    r.observed_output = records_out / window_s;
  }
  return r;
}

std::vector<OperatorRates> aggregate(const Topology& t, const std::vector<InstanceRates>& in) {
  std::vector<OperatorRates> out(t.size());
  for (const InstanceRates& r : in) {
    if (r.op >= t.size())
      throw std::invalid_argument("rates for operator index " + std::to_string(r.op) +
                                  " outside the topology");
    OperatorRates& o = out[r.op];
    ++o.instances;
    o.observed_processing += r.observed_processing;
    o.observed_output += r.observed_output;
    if (std::isfinite(r.true_processing) && std::isfinite(r.true_output)) {
      ++o.measured;
      o.true_processing += r.true_processing;
      o.true_output += r.true_output;
    }
  }
  return out;
}

std::optional<System> parse_system(std::string_view s) {
  if (s == "flink") return System::flink;
  if (s == "heron") return System::heron;
  if (s == "timely") return System::timely;
  return std::nullopt;
}

std::string_view name_of(System s) {
  switch (s) {
    case System::flink:
      return "flink";
    case System::heron:
      return "heron";
    case System::timely:
      return "timely";
  }
  return "?";
}

uint32_t ceil_parallelism(double x) {
  if (!(x > 0)) return 1;
  const double c = std::ceil(x - 1e-9 * x);
  return c >= 1e9 ? 1'000'000'000u : std::max<uint32_t>(1, static_cast<uint32_t>(c));
}

namespace {

// One traversal from the sources with the targets scaled by `boost`.
Decision traverse(const Topology& t, const std::vector<OperatorRates>& rates,
                  const std::vector<double>& source_rates, const PolicyOptions& opt, double boost) {
  const size_t n = t.size();
  Decision d;
  d.parallelism = t.parallelism;
  d.target_rate.assign(n, kUndefined);
  d.output_rate.assign(n, kUndefined);
  const double scale = opt.factor;  // the boost is already in the source targets
  for (uint32_t op : t.topological_order()) {
    const OperatorRates& r = rates[op];
    if (t.is_source(op)) {
      double target = op < source_rates.size() ? source_rates[op] : kUndefined;
      if (!std::isfinite(target)) target = r.instances > 0 ? r.observed_output : kUndefined;
      d.target_rate[op] = target * boost;
      d.output_rate[op] = target * boost;  // Eq. 4.6, j < n
      if (opt.system == System::timely && r.measured > 0 && r.true_output > 0 &&
          std::isfinite(target))
        d.parallelism[op] = ceil_parallelism(target * boost * scale / (r.true_output / r.measured));
      if (!std::isfinite(target))
        d.notes.push_back(t.names[op] + ": source without a rate (give --source-rates)");
      continue;
    }
    double in = 0;  // Σ upstream o_j[lambda_o]*
    for (uint32_t u : t.upstream(op)) in += d.output_rate[u];
    d.target_rate[op] = in;
    if (!std::isfinite(in)) {
      d.notes.push_back(t.names[op] + ": an upstream operator's output rate is unknown");
      continue;
    }
    if (r.measured == 0 || !(r.true_processing > 0)) {
      d.notes.push_back(t.names[op] + ": no true processing rate measured; parallelism kept");
      continue;
    }
    // Eq. 4.5: the upstream output over the average true processing rate per instance.
    d.parallelism[op] = ceil_parallelism(in * scale / (r.true_processing / r.measured));
    // Eq. 4.6: selectivity o[lambda_o] / o[lambda_p] times the input.
    d.output_rate[op] = r.true_output / r.true_processing * in;
  }
  if (opt.system == System::timely) {
    uint64_t total = 0;
    for (uint32_t p : d.parallelism) total += p;
    d.total_workers = static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
  }
  return d;
}

}  // namespace

Decision ds2_policy(const Topology& t, const std::vector<OperatorRates>& rates,
                    const std::vector<double>& source_rates, const PolicyOptions& opt) {
  if (rates.size() != t.size())
    throw std::invalid_argument("rates for " + std::to_string(rates.size()) + " operators, " +
                                "topology has " + std::to_string(t.size()));
  if (!(opt.factor > 0)) throw std::invalid_argument("the scaling factor must be positive");
  Decision d = traverse(t, rates, source_rates, opt, 1.0);
  // How close the sources came to their targets.
  double achieved = 0, target = 0;
  for (uint32_t op = 0; op < t.size(); ++op)
    if (t.is_source(op) && rates[op].instances > 0 && std::isfinite(d.target_rate[op])) {
      achieved += rates[op].observed_output;
      target += d.target_rate[op];
    }
  if (target > 0) d.achieved_ratio = achieved / target;
  if (opt.threshold > 0 && std::isfinite(d.achieved_ratio) && d.achieved_ratio > 0 &&
      d.achieved_ratio < opt.threshold && d.parallelism == t.parallelism) {
    const double boost = 1.0 / d.achieved_ratio;
    Decision b = traverse(t, rates, source_rates, opt, boost);
    b.achieved_ratio = d.achieved_ratio;
    b.compensation = boost;
    // Targets are reported unboosted: the boost only sizes the operators.
    b.target_rate = d.target_rate;
    b.output_rate = d.output_rate;
    return b;
  }
  return d;
}

}  // namespace snailtrail::scale
