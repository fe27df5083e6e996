#include "scale/manager.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace snailtrail::scale {

double achieved_source_rate(const Topology& t, const Observation& o) {
  double r = 0;
  if (!o.rates.empty()) {
    for (const InstanceRates& x : o.rates)
      if (x.op < t.size() && t.is_source(x.op)) r += x.observed_output;
    return r;
  }
  for (const InstanceMetrics& x : o.instances)
    if (x.op < t.size() && t.is_source(x.op) && x.window_s > 0) r += x.records_out / x.window_s;
  return r;
}

namespace {

std::string describe(const Topology& t, const std::vector<uint32_t>& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) s += fmt::format("{}{}={}", i ? " " : "", t.names[i], p[i]);
  return s;
}

// The sources' total target; NaN when one is unknown (NaN or missing), so that it never
// counts as kept up.
double total_source_target(const Topology& t, const Observation& o) {
  double target = o.source_target.empty() ? NAN : 0;
  for (uint32_t op = 0; op < t.size(); ++op)
    if (t.is_source(op)) target += op < o.source_target.size() ? o.source_target[op] : NAN;
  return target;
}

// The sources' targets, raised by what drains each one's backlog (plus the input a
// restart misses) within opt.catch_up_s; adds the records/s it raised them by to `catch_up`.
std::vector<double> catch_up_targets(const Observation& o, const ManagerOptions& opt,
                                     double& catch_up) {
  std::vector<double> targets = o.source_target;
  if (opt.catch_up_s > 0)
    for (size_t op = 0; op < targets.size() && op < o.source_backlog.size(); ++op)
      if (std::isfinite(targets[op]) && std::isfinite(o.source_backlog[op])) {
        const double extra =
            (std::max(0.0, o.source_backlog[op]) + targets[op] * opt.restart_s) / opt.catch_up_s;
        targets[op] += extra;
        catch_up += extra;
      }
  return targets;
}

// The parallelism the last decisions agree on: per operator their maximum or median
// (opt.combine); a change of at most opt.min_change instances keeps the current one.
std::vector<uint32_t> combine_history(const std::vector<std::vector<uint32_t>>& history,
                                      const std::vector<uint32_t>& current,
                                      const ManagerOptions& opt) {
  std::vector<uint32_t> next(current.size());
  for (size_t op = 0; op < next.size(); ++op) {
    std::vector<uint32_t> v;
    for (const auto& h : history) v.push_back(h[op]);
    std::sort(v.begin(), v.end());
    next[op] = opt.combine == Combine::max ? v.back() : v[v.size() / 2];
    const uint32_t cur = current[op];
    const uint32_t diff = next[op] > cur ? next[op] - cur : cur - next[op];
    if (diff <= opt.min_change) next[op] = cur;
  }
  return next;
}

// Scale-in hysteresis: an operator whose `next` is below `current` keeps `current` unless
// each of the last opt.scale_in_after decisions (`recent`) asked for less than it, and then
// goes to the largest of them. Scale-outs are not touched; with scale_in_after 1 nothing is
// (a median over --activation may scale in below the last ask).
void hold_scale_in(std::vector<uint32_t>& next, const std::vector<uint32_t>& current,
                   const std::vector<std::vector<uint32_t>>& recent, const ManagerOptions& opt) {
  if (opt.scale_in_after <= 1) return;  // off: --activation's combination alone, as before
  for (size_t op = 0; op < next.size(); ++op) {
    if (next[op] >= current[op]) continue;
    if (recent.size() < opt.scale_in_after) {
      next[op] = current[op];
      continue;
    }
    uint32_t most = next[op];
    for (const auto& r : recent) most = std::max(most, r[op]);
    next[op] = most < current[op] ? most : current[op];
  }
}

// Checks that `o` observes `t`; true (and one interval less to wait) while the warm-up
// after a change lasts: the controller ignores the interval.
bool warming_up(const Topology& t, const Observation& o, uint32_t& warmup_left) {
  if (o.parallelism.size() != t.size())
    throw std::invalid_argument("observation for a different topology");
  if (warmup_left == 0) return false;
  --warmup_left;
  return true;
}

}  // namespace

Ds2Manager::Ds2Manager(Topology topology, ManagerOptions options)
    : topology_(std::move(topology)), opt_(options) {
  if (opt_.activation == 0) throw std::invalid_argument("activation must be at least 1");
  if (opt_.scale_in_after == 0) throw std::invalid_argument("scale_in_after must be at least 1");
  if (!(opt_.target_utilization > 0 && opt_.target_utilization <= 1))
    throw std::invalid_argument("the target utilization must be in (0, 1]");
  if (!(opt_.catch_up_s >= 0)) throw std::invalid_argument("the catch-up time must be >= 0");
  if (!(opt_.restart_s >= 0)) throw std::invalid_argument("the restart time must be >= 0");
  topology_.topological_order();  // rejects cycles up front
}

std::optional<Action> Ds2Manager::observe(const Observation& o) {
  if (warming_up(topology_, o, warmup_left_)) return std::nullopt;
  const double achieved = achieved_source_rate(topology_, o);
  if (evaluating_) {
    evaluating_ = false;
    // A change after which the sources keep up with their target is no regression: after
    // a scale-down they read less only because no backlog is left to drain.
    const bool keeps_up = achieved >= (1 - opt_.rollback_drop) * total_source_target(topology_, o);
    if (opt_.rollback && !keeps_up && achieved < rate_before_ * (1 - opt_.rollback_drop) &&
        decisions_ < opt_.max_decisions) {
      ++decisions_;
      history_.clear();
      recent_.clear();
      warmup_left_ = opt_.warmup;
      return Action{before_, std::nullopt,
                    fmt::format("rollback: sources at {:.0f}/s, {:.0f}/s before the change",
                                achieved, rate_before_)};
    }
  }
  Topology now = topology_;
  now.parallelism = o.parallelism;
  std::vector<InstanceRates> rates = o.rates;
  if (rates.empty())
    for (const InstanceMetrics& x : o.instances) rates.push_back(x.rates());
  PolicyOptions po;
  po.system = opt_.system;
  po.factor = opt_.factor / opt_.target_utilization;
  po.threshold = opt_.threshold;
  po.source_target = opt_.source_target;
  po.saturation = opt_.saturation;
  double catch_up = 0;  // records/s added to the targets
  last_ = ds2_decide(now, rates, catch_up_targets(o, opt_, catch_up), po);
  history_.push_back(last_->parallelism);
  if (history_.size() > opt_.activation) history_.erase(history_.begin());
  recent_.push_back(last_->parallelism);
  if (recent_.size() > opt_.scale_in_after) recent_.erase(recent_.begin());
  if (history_.size() < opt_.activation || decisions_ >= opt_.max_decisions) return std::nullopt;
  std::vector<uint32_t> next = combine_history(history_, o.parallelism, opt_);
  hold_scale_in(next, o.parallelism, recent_, opt_);
  if (next == o.parallelism) return std::nullopt;
  ++decisions_;
  history_.clear();
  recent_.clear();
  warmup_left_ = opt_.warmup;
  evaluating_ = true;
  before_ = o.parallelism;
  rate_before_ = achieved;
  Action a{next, std::nullopt, ""};
  if (opt_.system == System::timely) {
    uint64_t total = 0;
    for (uint32_t p : next) total += p;
    a.total_workers = static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
  }
  a.reason = fmt::format(
      "ds2: {} (sources at {:.0f}/s = {:.1f}% of the target{})", describe(topology_, next),
      achieved, 100 * (std::isfinite(last_->achieved_ratio) ? last_->achieved_ratio : 0),
      last_->compensation > 1 ? fmt::format(", targets raised {:.3f}x", last_->compensation) : "");
  if (catch_up > 0) a.reason += fmt::format(" (catch-up: +{:.0f}/s for the backlog)", catch_up);
  if (!last_->skew.empty()) a.reason += "; " + last_->skew;
  return a;
}

DhalionController::DhalionController(Topology topology, DhalionOptions options)
    : topology_(std::move(topology)), opt_(options) {
  topology_.topological_order();
}

std::optional<Action> DhalionController::observe(const Observation& o) {
  if (warming_up(topology_, o, warmup_left_)) return std::nullopt;
  const size_t n = topology_.size();
  const double achieved = achieved_source_rate(topology_, o);
  if (last_op_) {
    // Did the last step help? If not, that operator is not scaled again until a step on
    // another operator helps (the dataflow's bottleneck moved).
    if (achieved < rate_before_ * (1 + opt_.improvement))
      blacklist_.push_back(*last_op_);
    else
      blacklist_.clear();
    last_op_.reset();
  }
  // Mean busy (useful) and blocked shares per operator.
  std::vector<double> busy(n, 0), blocked(n, 0), count(n, 0);
  for (const InstanceMetrics& x : o.instances) {
    if (x.op >= n || !(x.window_s > 0)) continue;
    busy[x.op] += x.useful_s / x.window_s;
    blocked[x.op] += std::isfinite(x.blocked_s) ? x.blocked_s / x.window_s : 0;
    count[x.op] += 1;
  }
  for (size_t i = 0; i < n; ++i)
    if (count[i] > 0) busy[i] /= count[i], blocked[i] /= count[i];
  // Backpressure: the sources are held back by the dataflow.
  bool backpressure = false;
  for (uint32_t op = 0; op < n; ++op)
    if (topology_.is_source(op) && blocked[op] >= opt_.backpressure) backpressure = true;
  // While the sources read faster than records arrive they are working off a backlog:
  // backpressure then says nothing about the capacity the input needs.
  double target = 0;
  bool known = true;
  for (uint32_t op = 0; op < n; ++op)
    if (topology_.is_source(op)) {
      const double r = op < o.source_target.size() ? o.source_target[op] : kUndefined;
      known &= std::isfinite(r);
      target += std::isfinite(r) ? r : 0;
    }
  if (known && target > 0 && achieved >= target * (1 - opt_.backpressure)) backpressure = false;
  if (!backpressure || decisions_ >= opt_.max_decisions) return std::nullopt;
  // The operator that causes it: busy and not itself held back; ties go upstream.
  std::optional<uint32_t> culprit;
  double best = -2;
  for (uint32_t op : topology_.topological_order()) {
    if (topology_.is_source(op) || count[op] == 0) continue;
    if (std::find(blacklist_.begin(), blacklist_.end(), op) != blacklist_.end()) continue;
    const double score = busy[op] - blocked[op];
    if (score > best + 1e-3) best = score, culprit = op;
  }
  if (!culprit) return std::nullopt;
  // Speculative factor: the upstream operators were held back a share b of the time, so
  // the culprit would need about 1 / (1 - b) times its capacity; at most max_factor.
  double b = 0, k = 0;
  for (uint32_t u : topology_.upstream(*culprit)) b += blocked[u], k += 1;
  b = k > 0 ? std::clamp(b / k, 0.0, 0.99) : 0;
  const double factor = std::clamp(1 / (1 - b), 1.0, opt_.max_factor);
  std::vector<uint32_t> next = o.parallelism;
  const uint32_t p = next[*culprit];
  next[*culprit] = std::max(p + 1, ceil_parallelism(p * factor));
  ++decisions_;
  warmup_left_ = opt_.warmup;
  last_op_ = culprit;
  rate_before_ = achieved;
  return Action{
      next, std::nullopt,
      fmt::format("dhalion: backpressure from {} (busy {:.0f}%, upstream blocked "
                  "{:.0f}%): {} -> {}",
                  topology_.names[*culprit], 100 * busy[*culprit], 100 * b, p, next[*culprit])};
}

}  // namespace snailtrail::scale
