// Scaling controllers that run in a loop of policy intervals (thesis §4.3.2): each
// interval they see every instance's metrics and the sources' target rates, and may ask
// for a new configuration. Two of them:
//
// - Ds2Manager: DS2's scaling manager around ds2_policy(), with the thesis' knobs
//   (warm-up, activation, target-rate ratio, scaling factor, minimum change, maximum
//   number of decisions, rollback);
// - DhalionController: a rule-based baseline in the style of Dhalion (Floratou et al.,
//   VLDB 2017): acts only on backpressure, scales the one operator that causes it by a
//   speculative factor, and blacklists operators whose scaling did not help (until a
//   step on another operator helps).
//
//   Ds2Manager m(topology, {.warmup = 1});
//   if (std::optional<Action> a = m.observe(obs)) deploy(a->parallelism);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/policy.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

// What the controller sees at the end of one policy interval.
struct Observation {
  double time_s = 0;                       // end of the interval
  std::vector<InstanceMetrics> instances;  // op: topology index
  // Rates given directly (DS2 metrics files); when not empty they replace the rates of
  // `instances` for the policy and the achieved source rate.
  std::vector<InstanceRates> rates;
  std::vector<uint32_t> parallelism;  // running configuration
  // Per operator: a source's target output rate, records/s over all instances (NaN:
  // unknown, the policy then uses the observed rate).
  std::vector<double> source_target;
  // Per operator: records that arrived at a source but were not read yet, at time_s (NaN
  // or missing: unknown). Used by ManagerOptions::catch_up_s.
  std::vector<double> source_backlog;
};

struct Action {
  std::vector<uint32_t> parallelism;
  std::optional<uint32_t> total_workers;  // timely
  std::string reason;                     // one line for the log
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string_view name() const = 0;
  // One interval; a configuration to deploy, if any. The caller deploys it.
  virtual std::optional<Action> observe(const Observation& o) = 0;
};

enum class Combine : uint8_t { max, median };

struct ManagerOptions {
  uint32_t warmup = 0;             // intervals ignored after a change
  uint32_t activation = 1;         // consecutive decisions combined before acting
  Combine combine = Combine::max;  // median of an even count: the larger middle value
  double threshold = 0.95;         // target-rate ratio (PolicyOptions::threshold)
  double factor = 1.0;             // scaling factor (PolicyOptions::factor)
  uint32_t min_change = 0;  // per operator, changes of at most this many instances are ignored
  uint32_t max_decisions = UINT32_MAX;  // reconfigurations at most (rollbacks included)
  bool rollback = true;
  double rollback_drop = 0.1;  // roll back when, after the warm-up, the sources' achieved
                               // rate is this fraction below what it was before the change
  System system = System::flink;
  SourceTarget source_target = SourceTarget::true_output;  // PolicyOptions::source_target
  double saturation = 0.95;                                // PolicyOptions::saturation
  // Headroom (the Flink autoscaler's target utilization): size every operator so that its
  // instances would be busy this share of the time, i.e. provision factor / u.
  double target_utilization = 1.0;
  // Catch-up (the Flink autoscaler's catch-up duration): the sources' targets are raised
  // by backlog / catch_up_s, so that a backlog is worked off within that time. 0: off.
  double catch_up_s = 0;
  // With catch_up_s: how long a redeployment takes. Records keep arriving meanwhile, so
  // (as the Flink autoscaler does) the targets also get rate x restart_s / catch_up_s,
  // or every change would leave a backlog to be caught up by the next one.
  double restart_s = 0;
  // Scale-in hysteresis (docs/CLOSED-LOOP.md "Hysteresis"): an operator's parallelism goes
  // down only when the policy asked for less than it runs in each of the last this many
  // intervals shown (none ignored by the warm-up; a change restarts the count), and then
  // to the largest of those asks. A scale-out goes at once. 1: no hysteresis.
  uint32_t scale_in_after = 1;
};

class Ds2Manager : public Controller {
 public:
  Ds2Manager(Topology topology, ManagerOptions options);
  std::string_view name() const override { return "ds2"; }
  std::optional<Action> observe(const Observation& o) override;
  // The policy's decision in the latest interval that was not ignored.
  const std::optional<Decision>& last_decision() const { return last_; }
  uint32_t decisions() const { return decisions_; }

 private:
  Topology topology_;
  ManagerOptions opt_;
  uint32_t warmup_left_ = 0;
  uint32_t decisions_ = 0;
  std::vector<std::vector<uint32_t>> history_;  // the last `activation` decisions
  std::vector<std::vector<uint32_t>> recent_;   // the last `scale_in_after` decisions
  std::optional<Decision> last_;
  // The change under evaluation (rollback): what ran before and its achieved rate.
  bool evaluating_ = false;
  std::vector<uint32_t> before_;
  double rate_before_ = 0;
};

struct DhalionOptions {
  uint32_t warmup = 1;  // intervals to wait after a change before judging it
  // Backpressure: a source blocked this share of the interval while the sources achieve
  // less than (1 - this) of their target rate (when known).
  double backpressure = 0.05;
  double max_factor = 2.0;    // a step at most multiplies the parallelism by this
  double improvement = 0.05;  // a step must raise the achieved source rate this much
  uint32_t max_decisions = UINT32_MAX;
};

class DhalionController : public Controller {
 public:
  DhalionController(Topology topology, DhalionOptions options);
  std::string_view name() const override { return "dhalion"; }
  std::optional<Action> observe(const Observation& o) override;
  const std::vector<uint32_t>& blacklist() const { return blacklist_; }
  uint32_t decisions() const { return decisions_; }

 private:
  Topology topology_;
  DhalionOptions opt_;
  uint32_t warmup_left_ = 0;
  uint32_t decisions_ = 0;
  std::vector<uint32_t> blacklist_;  // operators whose last scaling did not help
  std::optional<uint32_t> last_op_;  // the operator of the step under evaluation
  double rate_before_ = 0;
};

// Σ of the sources' observed output rates (records/s) in an observation.
double achieved_source_rate(const Topology& t, const Observation& o);

}  // namespace snailtrail::scale
