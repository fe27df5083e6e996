// `run --http`'s Job graph (docs/REPORT.md, "Job graph", live): the run's own trace events,
// as the workers flush them (about every 50 ms), go into a queue; a thread feeds them to a
// LiveAnalyzer (serve's event-time windows) every 50 ms and its windows to the report's
// JobGraphBuilder, so GET /api/jobgraph is what `report TRACE -f json --window W` writes
// as "jobgraph" for the windows closed so far. The queue (run_event_queue.hpp) is bounded:
// a flush that does not fit is dropped and counted, never blocking the workers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/run_event_queue.hpp"
#include "serve/live_job_graph.hpp"
#include "trace/trace.hpp"

namespace snailtrail {
class LiveAnalyzer;
}

namespace snailtrail::cli {

class RunJobGraph {
 public:
  // Windows of `window_ns`; workers [first_worker, first_worker + workers) are named as the
  // runtime names them in --trace ("worker-N").
  // `keep`: also keep every event for --trace (the runtime hands them to the sinks only,
  // and this is the only sink).
  RunJobGraph(int64_t window_ns, uint32_t first_worker, uint32_t workers, bool keep,
              uint64_t max_queued = 4'000'000);
  ~RunJobGraph();
  RunJobGraph(const RunJobGraph&) = delete;
  RunJobGraph& operator=(const RunJobGraph&) = delete;

  // The runtime's trace sink (any worker thread).
  void add(flow::TraceBuffer events, const std::vector<std::string>& ops) {
    queue_.add(std::move(events), ops);
  }
  // The run has ended: the rest is analyzed, the last window included (as `report` does).
  void finish();
  // The "jobgraph" object with `marks` (report::loop_marks_json's array).
  std::string json(std::string marks);
  // Events dropped because the queue was full (the analysis did not keep up).
  uint64_t dropped() const { return queue_.dropped(); }
  // With `keep`, after finish: every event, in time order.
  bool keeps() const { return queue_.keeps(); }
  std::vector<Event> take_kept() { return queue_.take_kept(); }

 private:
  void feed(std::vector<Event>& events, const Trace* names);

  serve::LiveJobGraph graph_;
  std::unique_ptr<LiveAnalyzer> live_;  // the queue thread's
  // When each worker last sent an event (the queue thread's): one silent for a second (a
  // worker the autoscaler left idle) stops holding windows back, as serve's --idle-timeout.
  std::unordered_map<uint32_t, std::chrono::steady_clock::time_point> last_seen_;
  RunEventQueue queue_;  // last: its thread stops before the members above go
};

}  // namespace snailtrail::cli
