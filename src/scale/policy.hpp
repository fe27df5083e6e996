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

struct PolicyOptions {
  System system = System::flink;
  // Scaling factor: provision for factor x the target rates (headroom; 1 = exact).
  double factor = 1.0;
  // Target-rate ratio: when the sources achieve less than threshold x their target
  // while the model says the current configuration suffices, the shortfall is an
  // overhead the instrumentation does not see, and the targets are raised by
  // target / achieved (thesis §4.3.2). 0 disables it.
  double threshold = 0;
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
};

// Eq. 4.5 and 4.6 in topological order. `source_rates[op]`: target output rate of source
// `op` (records/s over all its instances); NaN or a missing entry uses the source's
// observed output rate. Sources keep their parallelism (flink, heron); for timely every
// operator, sources included, is sized and the total is their sum. An operator without
// measured true rates keeps its parallelism and gets a note.
Decision ds2_policy(const Topology& topology, const std::vector<OperatorRates>& rates,
                    const std::vector<double>& source_rates, const PolicyOptions& options = {});

// ceil(x) that ignores a relative excess of 1e-9 (rates measured from integer
// nanoseconds make exact quotients like 10 come out as 10.000000000001).
uint32_t ceil_parallelism(double x);

}  // namespace snailtrail::scale
