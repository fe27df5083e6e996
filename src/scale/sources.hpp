// Observation sources of the control loop (scale/control_loop.hpp) over recorded and
// live metrics (docs/AUTOSCALING.md §2):
//
// - TraceSource: a trace's DS2 metrics, interval by interval (RateCollector);
// - Ds2RatesSource: DS2's rates file, or a directory of rate files, as it is now;
// - Ds2DirectorySource: a directory of DS2 rate files that is being written to;
// - FlinkSource: a running Flink job's REST API, polled (scale/flink_rest.hpp), and
//   optionally rescaled through it.
//
// The rates of serve are in scale/serve_source.hpp, the simulator in scale/simulation.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scale/control_loop.hpp"
#include "scale/ds2_files.hpp"
#include "scale/flink_rest.hpp"
#include "scale/rate_collector.hpp"
#include "trace/trace.hpp"

namespace snailtrail::scale {

// Intervals of `interval_ns` from the trace's first event; epoch i is the i-th interval
// with metrics, time_s its end and the timestamp its start, in seconds from the first
// event; instances are labelled by their worker's name. Throws TraceError for a trace
// without events. The trace must outlive the source.
class TraceSource : public ObservationSource {
 public:
  TraceSource(const Trace& trace, int64_t interval_ns);
  // The same from events fed one by one (a trace read block by block): `names` gives the
  // operator and worker names, `origin` the first event's time, and `feed` calls its
  // argument on every event in file order.
  using EventFeed = std::function<void(const std::function<void(const Event&)>&)>;
  TraceSource(const Trace& names, int64_t origin, int64_t interval_ns, const EventFeed& feed);
  const Topology& topology() const override { return topology_; }
  std::optional<SourceInterval> next() override;

 private:
  const Trace& trace_;
  int64_t origin_ = 0;
  std::vector<IntervalMetrics> intervals_;
  Topology topology_;
  size_t next_ = 0;
};

// The epochs of a DS2 rates file or directory (read_rates), in order; time_s is
// (epoch + 1) x interval_s and the timestamp DS2's epoch_timestamp.
class Ds2RatesSource : public ObservationSource {
 public:
  Ds2RatesSource(const std::string& path, Topology topology, double interval_s = 0);
  const Topology& topology() const override { return topology_; }
  std::optional<SourceInterval> next() override;
  const RatesDiagnostics& diagnostics() const { return diag_; }

 private:
  Topology topology_;
  RatesDiagnostics diag_;
  std::vector<RatesEpoch> epochs_;
  double interval_s_ = 0;
  size_t next_ = 0;
};

// SourceInterval of a DS2 epoch (time_s = (epoch + 1) x interval_s).
SourceInterval ds2_interval(const RatesEpoch& e, double interval_s);

// A DS2 metrics directory being written to (RatesDirectoryWatcher): polled every poll_ns;
// after idle_ns without a new epoch (0: never) what is left is flushed and the source
// ends.
class Ds2DirectorySource : public ObservationSource {
 public:
  // follow false: the files there now, every epoch (the last one too, however complete),
  // then the end; true: as they are written, until idle_ns without a new epoch (0: never).
  Ds2DirectorySource(std::string dir, Topology topology, double interval_s, int64_t poll_ns,
                     int64_t idle_ns, bool follow = true);
  const Topology& topology() const override { return topology_; }
  std::optional<SourceInterval> next() override;
  bool live() const override { return follow_; }

 private:
  Topology topology_;  // before watcher_, which refers to it
  RatesDirectoryWatcher watcher_;
  double interval_s_;
  int64_t poll_ns_, idle_ns_;
  std::deque<RatesEpoch> pending_;
  bool follow_ = true;
  bool polled_ = false, ended_ = false;
  std::chrono::steady_clock::time_point last_new_;
};

struct FlinkSourceOptions {
  int64_t interval_ns = 60'000'000'000;  // between two reads of the metrics
  int64_t wall_ns = 0;                   // end after this much wall time (0: never)
  uint32_t reads = UINT32_MAX;           // end after this many reads (scale policy: 1)
  bool rescale = false;    // deploy() sets the vertices' parallelism through the REST API
  bool any_state = false;  // take every read, whatever the job's state (scale policy)
  bool quiet = false;      // no lines on stderr
};

// A running Flink job (scale/flink_rest.hpp): one interval per read of its metrics,
// every interval_ns; epoch k's time_s is (k + 1) x the interval in seconds, the timestamp
// "now". Reads while the job is not RUNNING (e.g. restarting after a rescale) are
// skipped; the source ends when the job reaches a terminal state, the JobManager stops
// answering (a line on stderr), or after wall_ns / `reads`. With `rescale`, deploy()
// declares the decision's parallelism as the job's resource requirements (Flink 1.18+,
// adaptive scheduler): PUT /jobs/:jobid/resource-requirements. The constructor reads the
// job once and throws std::runtime_error if that fails.
class FlinkSource : public ObservationSource {
 public:
  FlinkSource(std::string url, const std::string& job_id, FlinkSourceOptions options);
  const Topology& topology() const override { return topology_; }
  std::optional<SourceInterval> next() override;
  bool deploy(const Action& decision, const SourceInterval& in) override;
  bool live() const override { return true; }
  const FlinkJob& job() const { return job_; }

 private:
  std::string url_;
  FlinkSourceOptions opt_;
  FlinkJob job_;
  Topology topology_;  // the job's dataflow with its parallelism at the start
  bool fresh_ = true;  // job_ was read and not yet returned
  uint32_t reads_ = 0;
  int64_t epoch_ = 0;
  std::chrono::steady_clock::time_point started_;
};

// The body of PUT /jobs/:jobid/resource-requirements for `parallelism` (by operator
// index of the job's topology): {"VERTEX_ID": {"parallelism": {"lowerBound": 1,
// "upperBound": N}}, ...}.
std::string flink_resource_requirements(const Topology& job,
                                        const std::vector<uint32_t>& parallelism);

// Declares them; throws std::runtime_error with the URL and HTTP status on failure.
void put_flink_resource_requirements(const std::string& url, const std::string& job_id,
                                     const std::string& body);

}  // namespace snailtrail::scale
