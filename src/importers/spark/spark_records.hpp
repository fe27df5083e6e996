// Spark importer internals (docs/IMPORTERS.md "Spark"): the flat records the log parser
// fills (spark_log_parser.hpp) and the builder turns into events (spark_builder.hpp), and
// the recoverable problems both count.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "trace/diagnostic_kind.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::spark::detail {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr uint32_t kDriver = 0;

struct TaskRec {
  int64_t launch = 0, finish = 0, getting_result = 0;  // ns; getting_result 0 = none
  // Executor-side durations, ns. fetch_wait, gc and shuffle_write lie within run.
  int64_t deserialize = 0, run = 0, serialize = 0, gc = 0, fetch_wait = 0, shuffle_write = 0;
  uint32_t executor = 0;  // index into executors
  uint32_t stage = 0;     // index into stages
  bool has_metrics = false;
  // Placement (filled by place_tasks).
  int64_t start = 0, end = 0;  // on the slot
  uint32_t slot = 0;           // index into the executor's slots
};

struct Slot {
  int64_t busy_until = std::numeric_limits<int64_t>::min();  // min: never used
  uint32_t worker = 0;
  bool named = false;  // its name was emitted
};

struct ExecutorRec {
  std::string id;
  uint32_t cores = 0;  // 0: unknown (no SparkListenerExecutorAdded): slots made on demand
  std::vector<Slot> slots;
};

struct StageRec {
  uint32_t id = 0;
  uint32_t attempt = 0;
  int64_t submitted = -1, completed = -1;  // ns; -1 = not in the log
  bool in_epoch = false;                   // touched since the last epoch ended
  bool drawn = false;                      // on the driver's timeline already
};

struct JobRec {
  int64_t submitted = -1, completed = -1;  // ns; -1 = not in the log (Spark 1.x: inferred)
  bool started = false, ended = false;     // its start / end event was seen
  std::vector<uint32_t> stage_ids;         // "Stage IDs" of the job start
};

// Recoverable problems, in the order they are reported.
enum Problem {
  kTruncatedLastLine,
  kTruncatedCompressedData,
  kTasksWithoutMetrics,
  kTasksWithoutEnd,
  kTasksFinishedBeforeLaunch,
  kBadGettingResultTime,
  kExecutorTimeExceedsTaskTime,
  kRunTimePartsExceedRunTime,
  kTasksBeyondExecutorCores,
  kExecutorsWithoutCores,
  kStagesWithoutCompletion,
  kBadStageTimes,
  kJobsWithoutEnd,
  kBadJobTimes,
  kZeroDurationTasks,
  kTasksEndedAfterTheirJob,
  kJobsWithoutSubmissionTime,
  kJobsWithoutCompletionTime,
  kProblemCount,
};
// Their kinds (trace/diagnostic_kind.hpp), by Problem: a log cut inside its last line or
// inside a compressed block was cut off while being written.
inline constexpr std::array<DiagnosticKind, kProblemCount> kProblemKinds = {
    cut_input("spark.truncated_last_line"),
    cut_input("spark.truncated_compressed_data"),
    repaired("spark.tasks_without_metrics"),
    repaired("spark.tasks_without_end"),
    repaired("spark.tasks_finished_before_launch"),
    repaired("spark.bad_getting_result_time"),
    repaired("spark.executor_time_exceeds_task_time"),
    repaired("spark.run_time_parts_exceed_run_time"),
    repaired("spark.tasks_beyond_executor_cores"),
    repaired("spark.executors_without_cores"),
    repaired("spark.stages_without_completion"),
    repaired("spark.bad_stage_times"),
    repaired("spark.jobs_without_end"),
    repaired("spark.bad_job_times"),
    repaired("spark.zero_duration_tasks"),
    repaired("spark.tasks_ended_after_their_job"),
    repaired("spark.jobs_without_submission_time"),
    repaired("spark.jobs_without_completion_time"),
};

// What lasts from one epoch to the next.
struct StreamState {
  uint32_t next_worker = kDriver + 1;
  int64_t task_base = 0;  // tasks of earlier epochs: correlators go on from there
  int64_t driver_until = std::numeric_limits<int64_t>::min();  // the driver's last event
  std::unordered_set<uint32_t> named_ops;
  std::vector<bool> unsized_counted;  // per executor: counted as without cores
  bool driver_named = false;
};

// Room for `extra` more events; grows geometrically, as epochs append again and again.
inline void reserve_more(BigVector<Event>& v, size_t extra) {
  if (v.capacity() - v.size() < extra) v.reserve(std::max(v.size() + extra, 2 * v.capacity()));
}

}  // namespace snailtrail::importers::spark::detail
