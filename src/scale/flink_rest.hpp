// A running Flink job through Flink's REST API (docs/AUTOSCALING.md, "Live Flink jobs"):
// its job graph (GET /jobs/:jobid: vertices with their parallelism, plan.nodes with their
// inputs) and per-vertex metrics aggregated over the subtasks (GET /jobs/:jobid/vertices/
// :vertexid/subtasks/metrics?get=...&agg=...), turned into DS2's per-instance rates:
// useful time is busy time (busyTimeMsPerSecond), as the Flink autoscaler takes it.
//
//   FlinkJob job = fetch_flink_job("http://127.0.0.1:8081", "");  // "": the running job
//   std::vector<InstanceRates> rates = flink_instance_rates(job);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scale/policy.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

// One vertex's metrics, per second, aggregated over its subtasks. NaN: not reported
// (Flink reports busy time NaN for legacy sources).
struct FlinkVertexMetrics {
  double busy_ms_avg = kUndefined;           // busyTimeMsPerSecond, mean over subtasks
  double busy_ms_max = kUndefined;           // ... of the busiest subtask
  double idle_ms_avg = kUndefined;           // idleTimeMsPerSecond
  double backpressured_ms_avg = kUndefined;  // backPressuredTimeMsPerSecond
  double records_in = 0;                     // numRecordsInPerSecond, summed over subtasks
  double records_out = 0;                    // numRecordsOutPerSecond, summed
};

struct FlinkJob {
  std::string id, name, state;
  Topology topology;                        // operator index = vertex index; ids = vertex ids
  std::vector<FlinkVertexMetrics> metrics;  // by operator index
};

// The metric names requested from each vertex, and the aggregations.
inline constexpr std::string_view kFlinkMetrics =
    "busyTimeMsPerSecond,idleTimeMsPerSecond,backPressuredTimeMsPerSecond,"
    "numRecordsInPerSecond,numRecordsOutPerSecond";
inline constexpr std::string_view kFlinkAggregations = "avg,max,sum";

// GET /jobs/:jobid's body: the job's id, name, state and topology (vertices in the order
// listed, edges from plan.nodes[].inputs). Throws std::runtime_error naming `source`.
FlinkJob parse_flink_job(std::string_view json, const std::string& source);
// GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics's body.
FlinkVertexMetrics parse_flink_vertex_metrics(std::string_view json, const std::string& source);
// GET /jobs's body: the id of the only job with status RUNNING. Throws when none or
// several run (then --job must name one).
std::string parse_running_job(std::string_view json, const std::string& source);

// Per-instance rates of one second: every subtask of a vertex gets the vertex's mean busy
// time as useful time and an equal share of its records, so the operator's true rate is
// numRecordsInPerSecond / (busyTimeMsPerSecond / 1000), the Flink autoscaler's.
std::vector<InstanceRates> flink_instance_rates(const FlinkJob& job);

// Fetches the job (`job_id` empty: the only running one) and every vertex's metrics from
// the REST API at `url` ("http://HOST:PORT"). Throws std::runtime_error with the URL and
// the HTTP status on failure.
FlinkJob fetch_flink_job(const std::string& url, const std::string& job_id);

}  // namespace snailtrail::scale
