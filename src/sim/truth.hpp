// Ground truth of a simulation: what the analysis should find. Part of it follows from
// the scenario alone (offered load, capacity and utilization of every operator, the
// worker that receives the hot key); the rest is measured while simulating (records and
// useful time per operator instance, hence DS2's true and observed rates).
//
//   Truth t = expected_truth(scenario);        // before the run
//   ... engine fills t.instances ...
//   std::string json = to_json(t);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario.hpp"

namespace snailtrail::sim {

// Steady-state model of one operator, from mean costs and selectivities.
struct OperatorLoad {
  std::string name;
  uint32_t parallelism = 0;  // instances (tasks in micro-batch, workers in timely)
  double offered_rate = 0;   // records/s arriving if nothing limits the flow
  double capacity = 0;       // records/s the operator can take with its load split
  double utilization = 0;    // offered_rate / capacity
};

// Measured per operator instance (DS2 thesis ch. 4: useful time = deserialization +
// processing + serialization).
struct InstanceTruth {
  std::string worker;
  std::string op;
  uint32_t instance = 0;
  uint64_t records_in = 0;   // records processed
  uint64_t records_out = 0;  // records pushed downstream (or written, for sinks)
  int64_t useful_ns = 0;
};

struct Truth {
  std::string scenario;
  std::string model;
  uint64_t seed = 0;
  int64_t duration_ns = 0;
  std::optional<std::string> hot_worker;           // receives the hot key of a skewed hash
  std::optional<std::string> bottleneck_operator;  // highest utilization, if >= 1
  std::optional<double> driver_utilization;        // micro-batch: driver busy share needed
  std::vector<OperatorLoad> operators;
  std::vector<InstanceTruth> instances;
};

// The scenario-derived part (everything but `instances`).
Truth expected_truth(const Scenario& scenario);

// {"scenario": ..., "hot_worker": ..., "bottleneck_operator": ..., "instances": [...]}
// with true_/observed_ processing and output rates per instance (records/s).
std::string to_json(const Truth& truth);

}  // namespace snailtrail::sim
