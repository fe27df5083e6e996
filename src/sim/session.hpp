// A pipelined simulation that is advanced step by step, observed through per-instance
// counters and reconfigured while it runs (docs/SIMULATOR.md "Reconfiguration"): the
// autoscaling controllers of src/scale run in this loop.
//
//   Session s(scenario);                       // deploys the scenario's parallelism at 0
//   s.run_until(60'000'000'000);
//   auto c = s.counters();                     // records, useful and blocked time so far
//   s.reconfigure({1, 10, 20}, 30'000'000'000); // halt now, redeploy 30 s later
//   s.run_until(s.scenario().duration_ns);
//   SimResult r = s.finish();
//
// A reconfiguration works like Flink's savepoint and restart: the job halts at once
// (records in flight are lost to the trace and the counters; the sources' read positions
// are kept), nothing runs during the pause while records keep arriving at the sources,
// and the new deployment starts with every source's backlog available at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/recorder.hpp"
#include "sim/scenario.hpp"
#include "sim/simulator.hpp"

namespace snailtrail::sim {

// Cumulative counters of one instance in the current deployment.
struct InstanceCounters {
  std::string worker;  // "count-3"
  uint32_t op = 0;     // operator index in the scenario
  uint32_t instance = 0;
  uint64_t records_in = 0;   // records processed
  uint64_t records_out = 0;  // records pushed (or written, for sinks)
  int64_t useful_ns = 0;     // deserialization + processing + serialization
  int64_t blocked_ns = 0;    // waiting for credit: backpressure from downstream
};

class Session {
 public:
  // Pipelined scenarios only (throws std::invalid_argument otherwise). With
  // `record_trace` false no events are kept (long controller runs need only counters).
  explicit Session(Scenario scenario, bool record_trace = true);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Scenario& scenario() const { return scenario_; }
  int64_t now() const { return now_; }
  // Handles everything before `t` (at most the scenario's duration).
  void run_until(int64_t t);

  // The parallelism of every operator in the current (or, during a pause, the next)
  // deployment.
  const std::vector<uint32_t>& parallelism() const { return parallelism_; }
  // True during a redeployment pause; then counters() is empty.
  bool paused() const { return !engine_; }
  // When the current deployment started (or the next one will).
  int64_t deployed_at() const { return deployed_at_; }
  std::vector<InstanceCounters> counters() const;

  // Records that have arrived at source `op` by `t` (all instances), and that its
  // instances have read so far (all deployments).
  double source_arrived(uint32_t op, int64_t t) const;
  double source_read(uint32_t op) const;

  // Halts the job now and deploys `parallelism` (one entry per operator, each >= 1)
  // after `pause_ns`. Throws std::invalid_argument for a bad configuration.
  void reconfigure(const std::vector<uint32_t>& parallelism, int64_t pause_ns);

  // Forgets the recorded trace before `t` (Recorder::discard_before): long runs that need
  // only the trace of their end keep memory bounded.
  void discard_trace_before(int64_t t) { recorder_.discard_before(t); }

  // The trace up to the scenario's duration (empty without recording) and the truth:
  // `instances` sums each worker's counters over all deployments.
  SimResult finish();

 private:
  void deploy();
  void retire();  // moves the current deployment's counters into done_

  Scenario scenario_;
  std::vector<uint32_t> parallelism_;
  Recorder recorder_;
  struct Engine;
  std::unique_ptr<Engine> engine_;
  int64_t now_ = 0;
  int64_t deployed_at_ = 0;
  uint64_t generation_ = 0;
  std::vector<double> read_;         // per operator: records sources read in past deployments
  std::vector<InstanceTruth> done_;  // counters of past deployments
};

}  // namespace snailtrail::sim
