// Entry point of the simulator: runs a scenario with the engine of its execution
// model and returns the trace plus the ground truth (docs/SIMULATOR.md).
//
//   Scenario s = load_scenario("examples/wordcount-skew-30.toml");
//   SimResult r = simulate(s);
//   write_trace(r.trace, "skew30.snail");
//   std::string truth = to_json(r.truth);
#pragma once

#include "sim/scenario.hpp"
#include "sim/truth.hpp"
#include "trace/trace.hpp"

namespace snailtrail::sim {

struct SimResult {
  Trace trace;  // events in time order, worker and operator names
  Truth truth;
};

// Deterministic: the same scenario (including its seed) gives the same trace.
SimResult simulate(const Scenario& scenario);

}  // namespace snailtrail::sim
