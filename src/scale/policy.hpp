// DS2's scaling policy (thesis §4.2.2, Eq. 4.1-4.6; docs/AUTOSCALING.md §1): from the true
// processing and output rates of every operator instance, the parallelism every operator
// needs to keep up with its sources, computed for all operators in one traversal.
//
//   std::vector<OperatorRates> agg = aggregate(topology, instance_rates);
//   Decision d = ds2_policy(topology, agg, source_target_rates, {});
//   d.parallelism[op]  // pi_i of Eq. 4.5
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/topology.hpp"

namespace snailtrail::scale {

inline constexpr double kUndefined = NAN;

// One operator instance's rates over one policy interval, records/s. True rates are
// undefined (NaN) when the instance had no useful time.
struct InstanceRates {
  uint32_t op = 0;
  uint32_t instance = 0;
  double true_processing = kUndefined;  // Eq. 4.1: R_prc / W_u
  double true_output = kUndefined;      // Eq. 4.2: R_psd / W_u
  double observed_processing = 0;       // Eq. 4.3: R_prc / W
  double observed_output = 0;           // Eq. 4.4: R_psd / W
};

// What an instance did during a policy interval of `window_s` seconds.
struct InstanceMetrics {
  uint32_t op = 0;
  uint32_t instance = 0;
  std::string worker;  // display name, for reports
  double window_s = 0;
  double useful_s = 0;            // deserialization + processing + serialization
  double records_in = 0;          // processed (R_prc)
  double records_out = 0;         // pushed (R_psd)
  double blocked_s = kUndefined;  // waiting for output credit (backpressure), if known

  InstanceRates rates() const;  // Eq. 4.1-4.4
};

// Rates of one operator summed over its instances (thesis: o_i[lambda_p], o_i[lambda_o]).
struct OperatorRates {
  uint32_t instances = 0;  // instances reported
  uint32_t measured = 0;   // ... of which with defined true rates
  double true_processing = 0;
  double true_output = 0;
  double observed_processing = 0;
  double observed_output = 0;
};

// Sums instance rates per operator; instances with undefined true rates count only for
// the observed rates. Throws std::invalid_argument for an operator index out of range.
std::vector<OperatorRates> aggregate(const Topology& topology,
                                     const std::vector<InstanceRates>& instances);

enum class System : uint8_t { flink, heron, timely };
std::optional<System> parse_system(std::string_view s);
std::string_view name_of(System s);

// What a source must output when no target rate is given (thesis Eq. 4.6: o_j[λo]* is
// the source's output rate).
enum class SourceTarget : uint8_t {
  true_output,      // its true output rate o_j[λo] (DS2's reference; default)
  observed_output,  // its observed output rate (what it achieved in the interval)
};
std::optional<SourceTarget> parse_source_target(std::string_view s);  // "true", "observed"
std::string_view name_of(SourceTarget s);

struct PolicyOptions {
  System system = System::flink;
  // A source's target when `source_rates` has none for it. With true_output, a source
  // without a defined true output rate falls back to its observed one (and a note says so).
  SourceTarget source_target = SourceTarget::true_output;
  // An instance at least this busy (useful time / interval: observed / true processing
  // rate) is saturated; its operator is never scaled down (skew, see SaturatedInstance).
  // 0 disables the guard.
  double saturation = 0.95;
  // Scaling factor: provision for factor x the target rates (headroom; 1 = exact).
  double factor = 1.0;
  // Target-rate ratio: when the sources achieve less than threshold x their target
  // while the model says the current configuration suffices, the shortfall is an
  // overhead the instrumentation does not see, and the targets are raised by
  // target / achieved (thesis §4.3.2). 0 disables it.
  double threshold = 0;
};

// An operator instance that was busy for at least PolicyOptions::saturation of the
// interval. DS2 averages an operator's instances, so when its other instances idle the
// model may call the operator over-provisioned while this instance holds the dataflow back.
struct SaturatedInstance {
  uint32_t op = 0;
  uint32_t instance = 0;
  double busy = 0;         // useful time / interval of this instance
  double others_busy = 0;  // mean of the operator's other measured instances (NaN: none)
  // Skew: the operator has other instances and they are on average less than half as busy.
  bool skew = false;
  uint32_t model = 0;  // the parallelism Eq. 4.5 gave the operator (before the guard)
};

struct Decision {
  std::vector<uint32_t> parallelism;  // pi_i per operator (Eq. 4.5)
  // Records/s each operator must keep up with: Σ upstream o_j[lambda_o]* for operators,
  // the target output rate for sources (NaN when unknown).
  std::vector<double> target_rate;
  std::vector<double> output_rate;        // o_i[lambda_o]* of Eq. 4.6 (NaN when unknown)
  std::optional<uint32_t> total_workers;  // timely: Σ pi_i (thesis §4.3.3)
  double achieved_ratio = kUndefined;     // Σ sources' observed output / Σ targets
  double compensation = 1.0;              // factor the targets were raised by (threshold)
  std::vector<std::string> notes;         // operators the model could not size, and why
  // Saturated instances (at most one per operator: the busiest). Their operators keep at
  // least their current parallelism.
  std::vector<SaturatedInstance> saturated;
  // Non-empty when an operator is skewed: why the target is (or may be) missed.
  std::string skew;
};

// Eq. 4.5 and 4.6 in topological order. `source_rates[op]`: target output rate of source
// `op` (records/s over all its instances); NaN or a missing entry uses the source's
// true (or observed: options.source_target) output rate. Sources keep their parallelism (flink,
// heron); for timely every operator, sources included, is sized and the total is their sum. An
// operator without measured true rates keeps its parallelism and gets a note.
Decision ds2_policy(const Topology& topology, const std::vector<OperatorRates>& rates,
                    const std::vector<double>& source_rates, const PolicyOptions& options = {});

// ceil(x) that ignores a relative excess of 1e-9 (rates measured from integer
// nanoseconds make exact quotients like 10 come out as 10.000000000001).
uint32_t ceil_parallelism(double x);

// The policy plus the saturation guard: `instances` are the interval's per-instance rates
// (aggregated here); an operator with a saturated instance is not scaled below its
// current parallelism, and skew is explained (Decision::saturated, Decision::skew).
// `label(op, instance)` names an instance in the explanation (default: NAME-INSTANCE).
Decision ds2_decide(const Topology& topology, const std::vector<InstanceRates>& instances,
                    const std::vector<double>& source_rates, const PolicyOptions& options = {},
                    const std::function<std::string(uint32_t, uint32_t)>& label = {});

}  // namespace snailtrail::scale
