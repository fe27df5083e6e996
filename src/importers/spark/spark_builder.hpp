// Spark importer, pass 2 (docs/IMPORTERS.md "Spark"): an epoch's records -> events.
// Tasks are shaped and placed on executor slots, each slot's events emitted
// (spark_slots.cpp), then the driver's timeline (spark_driver.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "importers/spark/spark_importer.hpp"
#include "importers/spark/spark_log_parser.hpp"
#include "importers/spark/spark_records.hpp"
#include "trace/make_event.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::spark::detail {

class Builder {
 public:
  Builder(LogParser& log, const SparkOptions& options, StreamState& state)
      : log_(log), options_(options), state_(state) {}

  // Appends the epoch's events and new names to `out` and forgets the epoch. `last`: the
  // end of the log, so tasks still started are counted as never ending.
  void build(Trace& out, bool last);

 private:
  // Slots (spark_slots.cpp): durations on the slot and the split of the scheduler delay;
  // greedy placement; every slot's events.
  void shape_tasks();
  static void end_before_finish(TaskRec& t);
  void place_tasks();
  void emit_slots(Trace& trace);
  uint32_t worker_of(const TaskRec& t) const;

  // Events of the slots and the driver.
  static Event local(uint32_t worker, int64_t ts, ActivityType type, EventKind kind,
                     std::optional<uint32_t> op) {
    Event e = local_event(worker, ts, type, kind);
    if (op) set_operator(e, *op);
    return e;
  }
  static Event message(uint32_t worker, int64_t ts, EventKind kind, uint32_t remote,
                       int64_t correlator) {
    return message_event(worker, ts, ActivityType::control_message, kind, remote, correlator);
  }

  // The driver's timeline. At every instant it knows how many tasks are out (launched, no
  // result yet), whether a stage has all its results but is not complete yet (the
  // barrier), and whether a job or stage is open. Between consecutive instants it is:
  //   tasks out and the next instant receives a result -> waiting (Assumption 2)
  //   tasks out otherwise                              -> scheduling (it launched or
  //                                                       submitted work on its own)
  //   no task out, a stage at its barrier              -> barrier_processing
  //   no task out, a job or stage open                 -> scheduling
  //   nothing open                                     -> no activity: the application's
  //                                                       own code; the PAG fills the gap
  // A change of the driver's state at one instant: tasks out (launched, result not yet
  // back), stages past their last result, stages or jobs open; `recv` marks a result.
  struct DriverPoint {
    int64_t ts;
    int32_t out = 0, barrier = 0, open = 0;
    bool recv = false;
  };
  // An activity run [from, to) of one type, merged when consecutive and equal.
  struct DriverRun {
    int64_t from, to;
    ActivityType type;
  };
  // Per stage: the first task launch and the last task result (-1: none).
  struct StageTaskSpan {
    std::vector<int64_t> first_launch, last_result;
  };

  void emit_driver(Trace& trace);
  StageTaskSpan task_points(std::vector<DriverPoint>& points, std::vector<Event>& messages);
  void stage_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans);
  void job_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans);
  bool job_span_from_stages(JobRec& j, const StageTaskSpan& spans);
  static std::vector<DriverRun> driver_runs(const std::vector<DriverPoint>& points);
  void emit_driver_events(Trace& trace, std::vector<DriverRun> runs,
                          const std::vector<Event>& messages);
  void name_workers_and_stages(Trace& trace);

  LogParser& log_;
  SparkOptions options_;
  StreamState& state_;
  std::vector<uint32_t> placement_order_;
};

}  // namespace snailtrail::importers::spark::detail
