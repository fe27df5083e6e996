// The "Tasks per stage" view of Spark event logs in `snailtrail report` (docs/REPORT.md,
// "Tasks per stage"): per stage the task-duration distribution, GC, shuffle and spill as
// the Spark UI's stage page shows them, beside the stage's critical participation, and
// the stage DAG from the stages' parent ids.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "importers/spark/spark_importer.hpp"

namespace snailtrail::report {

// A stage's tasks flagged as skewed when max >= kSkewFlag * median (and 2+ tasks).
constexpr double kSkewFlag = 2.0;
// Bins of the task-duration histogram embedded per stage (min to max, equal widths).
constexpr size_t kStageHistogramBins = 20;

struct StageSummary {
  uint32_t id = 0;
  std::string name;
  uint32_t attempts = 0;          // attempts seen (retries add one each)
  std::vector<uint32_t> parents;  // among the summarised stages (shuffle dependencies)
  uint64_t tasks = 0;             // that succeeded: the rest of the numbers are theirs
  uint64_t failed_tasks = 0;      // failed or killed (retried elsewhere), as the Spark UI
                                  // leaves them out of its summary metrics
  // Task durations (Spark UI's "Duration": executor run time), nearest-rank percentiles.
  int64_t min_ns = 0, median_ns = 0, p95_ns = 0, max_ns = 0;
  double skew = 0;  // max / median; 0 when the median is 0
  bool skewed = false;
  int64_t gc_ns = 0, total_ns = 0;  // summed over the tasks
  int64_t shuffle_read_bytes = 0, shuffle_write_bytes = 0;
  int64_t memory_spill_bytes = 0, disk_spill_bytes = 0;
  double cp = 0;                    // the stage's (operator's) CP over the trace
  std::vector<uint32_t> histogram;  // kStageHistogramBins counts of durations, min..max
};

// Per stage id (attempts merged), in stage id order. `cp`: operator id -> CP (as
// Aggregate::cp.op). Stages without a finished task are kept (their numbers are 0) when
// the log submitted them.
std::vector<StageSummary> summarize_stages(const importers::spark::TaskTable& table,
                                           const std::vector<std::pair<uint32_t, double>>& cp);

struct StagesPage {
  std::string source;
  std::string window;  // the analysis window the CP was computed over ("1s", "whole")
  uint64_t windows = 0, windows_with_paths = 0;
  std::vector<std::pair<std::string, uint64_t>> diagnostics;  // the importer's
};

// The page's data (schema: docs/REPORT.md, "Tasks per stage").
std::string stages_json(const StagesPage& page, const std::vector<StageSummary>& stages);
// The self-contained page of stages_json().
std::string render_stages_html(const std::string& stages_json);

}  // namespace snailtrail::report
