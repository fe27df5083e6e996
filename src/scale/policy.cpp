#include "scale/policy.hpp"

#include <fmt/format.h>

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

std::optional<SourceTarget> parse_source_target(std::string_view s) {
  if (s == "true") return SourceTarget::true_output;
  if (s == "observed") return SourceTarget::observed_output;
  return std::nullopt;
}

std::string_view name_of(SourceTarget s) {
  return s == SourceTarget::true_output ? "true" : "observed";
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
      if (!std::isfinite(target) && r.instances > 0) {
        // Eq. 4.6: the source's own output rate. DS2's reference takes the true one (what
        // the source would push without waiting on its output); the observed one is what
        // it achieved.
        if (opt.source_target == SourceTarget::true_output && r.measured > 0 &&
            std::isfinite(r.true_output)) {
          target = r.true_output;
        } else {
          target = r.observed_output;
          if (opt.source_target == SourceTarget::true_output)
            d.notes.push_back(t.names[op] +
                              ": no true output rate measured; its observed output rate is "
                              "the target");
        }
      }
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

namespace {

// The busiest instance of every operator whose busy share (useful time / interval =
// observed / true rate) reaches opt.saturation, in topological order, with whether the
// operator is skewed (its other instances on average less than half as busy, or idle).
std::vector<SaturatedInstance> saturated_instances(const Topology& t,
                                                   const std::vector<InstanceRates>& instances,
                                                   const PolicyOptions& opt) {
  auto busy_of = [](const InstanceRates& r) {
    if (std::isfinite(r.true_processing) && r.true_processing > 0)
      return r.observed_processing / r.true_processing;
    if (std::isfinite(r.true_output) && r.true_output > 0) return r.observed_output / r.true_output;
    return kUndefined;
  };
  const size_t n = t.size();
  std::vector<int64_t> busiest(n, -1);
  std::vector<double> top(n, -1), sum(n, 0), count(n, 0);
  for (size_t i = 0; i < instances.size(); ++i) {
    const InstanceRates& r = instances[i];
    const double b = busy_of(r);
    if (!std::isfinite(b)) continue;
    sum[r.op] += b;  // r.op < n: aggregate() checked
    count[r.op] += 1;
    if (b > top[r.op]) top[r.op] = b, busiest[r.op] = static_cast<int64_t>(i);
  }
  std::vector<SaturatedInstance> saturated;
  for (uint32_t op : t.topological_order()) {
    if (busiest[op] < 0 || top[op] < opt.saturation) continue;
    SaturatedInstance s;
    s.op = op;
    s.instance = instances[static_cast<size_t>(busiest[op])].instance;
    s.busy = top[op];
    s.others_busy = count[op] > 1 ? (sum[op] - top[op]) / (count[op] - 1) : kUndefined;
    const uint32_t current = op < t.parallelism.size() ? t.parallelism[op] : 1;
    // Skew: the other instances are on average less than half as busy, or idle (none
    // measured although the operator has several).
    s.skew = count[op] > 1 ? s.others_busy < 0.5 * s.busy : current > 1;
    saturated.push_back(s);
  }
  return saturated;
}

// Applies the saturated instances to the model's decision `d`: a saturated operator is
// not scaled down (its total recounted), and skew is explained in d.skew, since more
// instances do not relieve a hot one.
void hold_saturated(Decision& d, std::vector<SaturatedInstance> saturated, const Topology& t,
                    const std::function<std::string(uint32_t, uint32_t)>& label) {
  auto name = [&](uint32_t op, uint32_t instance) {
    return label ? label(op, instance) : fmt::format("{}-{}", t.names[op], instance);
  };
  std::string skewed;
  bool changed = false;
  for (SaturatedInstance& s : saturated) {
    const uint32_t op = s.op;
    const uint32_t current = op < t.parallelism.size() ? t.parallelism[op] : 1;
    s.model = d.parallelism[op];
    const std::string who = name(op, s.instance);
    if (d.parallelism[op] < current) {
      d.parallelism[op] = current;
      changed = true;
      d.notes.push_back(
          fmt::format("{}: {} is saturated ({:.1f}% busy): not scaled down to the model's {}",
                      t.names[op], who, 100 * s.busy, s.model));
    }
    if (s.skew) {
      if (!skewed.empty()) skewed += "; ";
      skewed +=
          std::isfinite(s.others_busy)
              ? fmt::format("{} is {:.1f}% busy, the other instances of {} {:.1f}% on average", who,
                            100 * s.busy, t.names[op], 100 * s.others_busy)
              : fmt::format("{} is {:.1f}% busy, the other {} instances of {} idle", who,
                            100 * s.busy, current - 1, t.names[op]);
    }
  }
  d.saturated = std::move(saturated);
  if (changed && d.total_workers) {
    uint64_t total = 0;
    for (uint32_t p : d.parallelism) total += p;
    d.total_workers = static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
  }
  if (!skewed.empty()) {
    const bool missed = std::isfinite(d.achieved_ratio) && d.achieved_ratio < 0.995;
    d.skew = (missed ? fmt::format("target missed (sources at {:.1f}% of their target) because of "
                                   "skew: ",
                                   100 * d.achieved_ratio)
                     : std::string("skew: ")) +
             skewed +
             ". DS2 averages an operator's instances: more instances do not relieve the hot "
             "one (repartition its keys)";
  }
}

}  // namespace

Decision ds2_decide(const Topology& t, const std::vector<InstanceRates>& instances,
                    const std::vector<double>& source_rates, const PolicyOptions& opt,
                    const std::function<std::string(uint32_t, uint32_t)>& label) {
  const std::vector<OperatorRates> agg = aggregate(t, instances);
  if (!(opt.saturation > 0)) return ds2_policy(t, agg, source_rates, opt);
  std::vector<SaturatedInstance> saturated = saturated_instances(t, instances, opt);
  // The target-rate ratio raises all targets for an overhead the instrumentation does not
  // see; skew is seen, explains the shortfall, and more instances would not help.
  PolicyOptions po = opt;
  for (const SaturatedInstance& s : saturated)
    if (s.skew) po.threshold = 0;
  Decision d = ds2_policy(t, agg, source_rates, po);
  hold_saturated(d, std::move(saturated), t, label);
  return d;
}

}  // namespace snailtrail::scale
