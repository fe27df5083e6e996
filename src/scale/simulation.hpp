// A controller in the loop of the simulator (docs/AUTOSCALING.md): every policy interval
// the controller sees the counters of the running deployment and the sources' offered
// rates; a new configuration halts the job, and after the redeploy pause it runs with the
// new parallelism while the sources work off their backlog (sim/session.hpp).
//
//   sim::Scenario s = sim::load_scenario("examples/dhalion-wordcount.toml");
//   Ds2Manager m(topology_of(s), {});
//   ControlledRun r = run_controlled(s, m, {.interval_ns = 60'000'000'000});
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scale/control_loop.hpp"
#include "scale/manager.hpp"
#include "scale/topology.hpp"
#include "sim/scenario.hpp"
#include "sim/session.hpp"
#include "sim/simulator.hpp"

namespace snailtrail::scale {

// The scenario's dataflow with its initial parallelism (operator index = scenario's).
Topology topology_of(const sim::Scenario& scenario);

struct SimControlOptions {
  int64_t interval_ns = 60'000'000'000;  // policy interval
  int64_t pause_ns = 30'000'000'000;     // redeploy pause
  bool record_trace = false;             // keep the trace
  // With record_trace: keep only the events of the last `trace_intervals` running
  // (non-paused) intervals and of the running interval before them, which is all the
  // diagnosis of the final deployment's last intervals needs (diagnosis.hpp); memory is
  // then bounded by the interval, not the run. 0 keeps the whole run.
  uint32_t trace_intervals = 0;
};

struct DecisionRecord {
  double time_s = 0;       // when the controller decided (the job halts then)
  double effective_s = 0;  // when the new deployment starts
  std::vector<uint32_t> parallelism;
  std::string reason;
};

struct TimelinePoint {
  double time_s = 0;       // end of the interval
  double source_rate = 0;  // records/s the sources read (achieved throughput)
  double target_rate = 0;  // records/s that arrived at the sources (offered)
  double backlog = 0;      // records arrived but not read, at time_s
  bool paused = false;     // the interval was a redeploy pause
  std::vector<uint32_t> parallelism;
};

struct ControlledRun {
  Topology topology;
  std::vector<DecisionRecord> decisions;
  std::vector<TimelinePoint> timeline;
  sim::SimResult result;  // trace (if recorded) and truth
};

// The simulator as an observation source (scale/control_loop.hpp): every policy interval
// of the running deployment is one observation; a redeploy pause is simulated inside
// next() (timeline points only); deploy() halts the job and restarts it with the new
// parallelism after the pause. The last (or a partial) interval is observed without a
// decision and ends the run; finish() gives the run.
class SimulatorSource : public ObservationSource {
 public:
  SimulatorSource(const sim::Scenario& scenario, const SimControlOptions& options,
                  std::function<void(const DecisionRecord&)> on_decision = {});
  ~SimulatorSource() override;
  const Topology& topology() const override { return run_.topology; }
  std::optional<SourceInterval> next() override;
  bool deploy(const Action& decision, const SourceInterval& in) override;
  ControlledRun finish();

 private:
  double arrived(int64_t t) const;  // records arrived at all sources by t
  double read() const;              // records the sources read so far
  void pause_interval();
  Observation observe(int64_t next, std::vector<sim::InstanceCounters>& now);

  SimControlOptions opt_;
  std::unique_ptr<sim::Session> session_;
  int64_t end_ = 0, t_ = 0, epoch_ = 0;
  bool done_ = false;
  std::vector<uint32_t> sources_;
  std::vector<sim::InstanceCounters> prev_;  // counters at the interval's start
  std::vector<int64_t> running_starts_;      // starts of the running intervals so far
  ControlledRun run_;
  std::function<void(const DecisionRecord&)> on_decision_;
};

// Runs the scenario (pipelined) for its duration. `on_decision` is called as decisions
// are made (e.g. to run --apply). Throws std::invalid_argument for other models.
ControlledRun run_controlled(const sim::Scenario& scenario, Controller& controller,
                             const SimControlOptions& options,
                             const std::function<void(const DecisionRecord&)>& on_decision = {});

// Is the backlog at the sources still growing under the final configuration? A manager
// can settle on a configuration with exactly the capacity the input needs (or a bit less:
// rates measured over an interval are averages) and then makes no further decision while
// records pile up. Judged over the final deployment's running intervals without its
// first (which works off the pause's backlog), at least two of them.
struct BacklogTrend {
  bool judged = false;          // enough intervals under the final configuration
  bool growing = false;         // slope above tolerance x the offered rate, and a net rise
  double growth_per_s = 0;      // least-squares slope of the backlog, records/s
  double from_s = 0, to_s = 0;  // the judged interval ends
  double backlog_from = 0, backlog_to = 0;
  double offered_rate = 0;   // records/s arriving at the sources (mean over the intervals)
  double achieved_rate = 0;  // records/s the sources read
};
BacklogTrend backlog_trend(const ControlledRun& run, double tolerance = 0.001);

}  // namespace snailtrail::scale
