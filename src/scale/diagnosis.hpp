// Why a controlled run missed its target rate (thesis §4.3.2, "DS2 in the presence of
// skew"; docs/AUTOSCALING.md §7). DS2 averages the true rates of an operator's instances,
// so under data skew it settles on a configuration that would suffice without skew and
// the sources stay below their target: DS2 cannot see why. SnailTrail's critical
// participation (CP) per worker, on the trace of the final deployment's last policy
// intervals, names the instance that holds the job back. Together: "the target rate was
// not met because of skew; the straggler is count-0".
//
//   ControlledRun r = run_controlled(s, manager, {.record_trace = true});
//   Diagnosis d = diagnose(r, {.intervals = 2});
//   if (!d.target_met && d.cause == Cause::skew) ... d.straggler ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/simulation.hpp"

namespace snailtrail::scale {

enum class Cause : uint8_t {
  none,     // the target was met
  skew,     // one instance has far more CP than its operator's other instances
  unknown,  // missed, but no such straggler (e.g. an overhead the model does not see)
};
std::string_view name_of(Cause c);

struct DiagnosisOptions {
  uint32_t intervals = 1;             // how many of the last intervals to judge and analyze
  double target_ratio = 0.95;         // met when achieved >= ratio x target
  int64_t window_ns = 1'000'000'000;  // CP window width inside the analyzed span
  // A straggler's CP must be at least this many times that of every other instance of
  // its operator (and the operator must have other instances).
  double skew_factor = 3.0;
};

struct WorkerCp {
  std::string worker;
  std::string op;   // operator of the worker
  double cp = 0;    // share of the critical participation, time-weighted over windows
  double busy = 0;  // conventional: share of all workers' busy time
};

struct Diagnosis {
  bool target_met = true;       // also when not judged (nothing ran, no target): see explanation
  double achieved_rate = 0;     // records/s the sources read, mean over the judged intervals
  double target_rate = 0;       // records/s that arrived at the sources (offered)
  double from_s = 0, to_s = 0;  // the judged and analyzed span (simulated seconds)
  Cause cause = Cause::none;
  // Set when the target was missed and CP could be computed (even without skew).
  std::optional<std::string> straggler;  // worker with the largest CP share
  std::string straggler_operator;
  double straggler_cp = 0;
  std::string peer;               // the same operator's instance with the largest CP ("" if none)
  double peer_cp = 0;             // its CP share
  uint32_t windows = 0;           // CP windows analyzed (with critical paths)
  std::vector<WorkerCp> workers;  // every worker with CP or busy time, CP descending
  std::string explanation;        // one line for the table
};

// Judges the final deployment of `run` over its last `options.intervals` full
// (non-paused) intervals. When the target was missed, analyzes that span of the run's
// trace (build_pag + analyze_pag, CP per worker). Throws std::invalid_argument when the
// target was missed but the run recorded no trace (SimControlOptions::record_trace).
Diagnosis diagnose(const ControlledRun& run, const DiagnosisOptions& options);

}  // namespace snailtrail::scale
