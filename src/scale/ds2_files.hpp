// DS2's own input files, so that DS2 users can switch (github.com/strymon-system/ds2
// formats; docs/AUTOSCALING.md shows examples):
//
// - topology CSV, one edge per line:
//     operator_id1,operator_name1,total_number_of_operator_instances1,
//     operator_id2,operator_name2,total_number_of_operator_instances2
// - rates CSV, one instance and epoch per line:
//     operator_id,operator_instance_id,total_number_of_operator_instances,epoch_timestamp,
//     true_processing_rate,true_output_rate,observed_processing_rate,observed_output_rate
//   either one file (a new epoch starts when an (operator, instance) pair appears again)
//   or a directory of files NAME-EPOCH.EXT, one per instance and epoch;
// - source rates CSV: source_operator_name,output_rate_per_instance
//
// Lines starting with '#' and empty lines are skipped, as is a header line whose first
// field is the first column's name. Errors throw TraceError naming the file and line.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scale/policy.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

Topology parse_topology_csv(std::string_view text, const std::string& source);
Topology read_topology_csv(const std::string& path);

// The rates of one policy interval.
struct RatesEpoch {
  int64_t epoch = 0;      // file: 0, 1, ...; directory: EPOCH of the file names
  std::string timestamp;  // epoch_timestamp of its first line
  std::vector<InstanceRates> instances;
  std::vector<uint32_t> parallelism;  // per operator: total instances as reported
                                      // (the topology's where none reported)
};

struct RatesDiagnostics {
  uint64_t duplicate_rows = 0;   // (operator, instance) twice in a directory epoch: last wins
  uint64_t skipped_files = 0;    // directory entries not named NAME-EPOCH.EXT
  uint64_t undefined_rates = 0;  // rows with NaN true rates (no useful time)
};

// One rates file split into epochs. Operators are looked up by id in `topology`.
std::vector<RatesEpoch> parse_rates_csv(std::string_view text, const std::string& source,
                                        const Topology& topology,
                                        RatesDiagnostics* diagnostics = nullptr);
// A file or a directory of NAME-EPOCH.EXT files.
std::vector<RatesEpoch> read_rates(const std::string& path, const Topology& topology,
                                   RatesDiagnostics* diagnostics = nullptr);

// Per operator: the source's output rate per instance (NaN where none is given).
std::vector<double> parse_source_rates_csv(std::string_view text, const std::string& source,
                                           const Topology& topology);
std::vector<double> read_source_rates_csv(const std::string& path, const Topology& topology);

// Totals for the policy: per-instance source rates times the parallelism.
std::vector<double> total_source_rates(const std::vector<double>& per_instance,
                                       const std::vector<uint32_t>& parallelism);

// Follows a DS2 metrics directory that is being written to: every poll() reads the
// files that appeared or grew and returns the epochs that are complete, in order. An
// epoch is complete when every operator of the topology has reported all its instances,
// or when a file of a later epoch exists. Partly written last lines wait for their '\n'.
class RatesDirectoryWatcher {
 public:
  RatesDirectoryWatcher(std::string dir, const Topology& topology);
  std::vector<RatesEpoch> poll();
  // Emits what is left (at the end of a run).
  std::vector<RatesEpoch> flush();
  const RatesDiagnostics& diagnostics() const { return diag_; }

 private:
  std::vector<RatesEpoch> collect(bool all);
  std::string dir_;
  const Topology& topology_;
  std::set<int64_t> done_;  // epochs already returned
  RatesDiagnostics diag_;
};

}  // namespace snailtrail::scale
