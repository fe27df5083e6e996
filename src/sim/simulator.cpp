#include "sim/simulator.hpp"

#include "sim/engines.hpp"

namespace snailtrail::sim {

SimResult simulate(const Scenario& scenario) {
  SimResult r;
  r.truth = expected_truth(scenario);
  Recorder rec;
  for (uint32_t op = 0; op < scenario.operators.size(); ++op)
    rec.name_operator(op, scenario.operators[op].name);
  switch (scenario.model) {
    case Model::pipelined:
      run_pipelined(scenario, rec, r.truth);
      break;
    case Model::microbatch:
      run_microbatch(scenario, rec, r.truth);
      break;
    case Model::timely:
      run_timely(scenario, rec, r.truth);
      break;
  }
  r.trace = rec.finish(scenario.duration_ns);
  r.trace.source = scenario.source;
  return r;
}

}  // namespace snailtrail::sim
