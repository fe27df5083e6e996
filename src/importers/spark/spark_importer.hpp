// Spark event logs (JSON lines of SparkListener events, `spark.eventLog.enabled`) as
// snailtrail traces: the driver and every executor core slot become workers, tasks are
// placed greedily on the most recently used free slot of their executor (thesis §3.3.2),
// and the scheduler delay is split between the launch and result messages.
// docs/IMPORTERS.md "Spark" states the mapping, the assumptions and the limits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "importers/importer.hpp"
#include "importers/streaming.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::spark {

// What the Spark UI's stage page shows per task and per stage (`report`'s "Tasks per
// stage", docs/REPORT.md), kept only when SparkOptions::table asks for it: ~64 bytes a task.
struct TaskRow {
  uint32_t stage_id = 0, attempt = 0;
  // Spark UI's "Duration": Executor Run Time; Finish - Launch for a task without metrics.
  int64_t duration_ns = 0;
  int64_t gc_ns = 0;
  int64_t shuffle_read_bytes = 0;   // Remote Bytes Read + Local Bytes Read
  int64_t shuffle_write_bytes = 0;  // Shuffle Bytes Written
  int64_t memory_spill_bytes = 0, disk_spill_bytes = 0;
  bool has_metrics = false;
  bool failed = false;  // "Task End Reason" other than Success, or "Failed"/"Killed" set
};
struct StageRow {
  uint32_t id = 0, attempt = 0;
  std::string name;
  std::vector<uint32_t> parents;  // "Parent IDs": the stages whose shuffle output it reads
};
struct TaskTable {
  std::vector<TaskRow> tasks;    // in log order
  std::vector<StageRow> stages;  // in order of first mention
};

struct SparkOptions {
  // The scheduler delay of a task (time between launch and result the event log does not
  // explain) is split launch:result, e.g. 1:2 puts a third of it on the launch message.
  uint32_t launch_weight = 1;
  uint32_t result_weight = 2;
  // If set, every finished task's metrics and every stage's parents are appended here.
  TaskTable* table = nullptr;
};

// Parses "A:B" (non-negative integers, A + B > 0), e.g. "1:2". Throws std::invalid_argument.
SparkOptions parse_delay_split(std::string_view text);

// Converts a plain (uncompressed) event log. Throws TraceError(source, "line N", what).
Trace parse_event_log(std::string_view text, const std::string& source,
                      const SparkOptions& options = {});

// Reads a file, decoding it as it is read if it is compressed (zstd, gzip, lz4 in Spark's
// LZ4Block framing, snappy in snappy-java's stream framing; by its magic bytes), or a
// rolling event log directory (eventlog_v2_<appId>/events_<n>_<appId>[.codec]), whose
// parts are read in order of n as one log.
Trace read_event_log(const std::string& path, const SparkOptions& options = {});

// Whether `path` is a directory of a rolling event log: named eventlog_v2_*, or holding
// events_<n>_* files.
bool is_rolling_dir(const std::string& path);

// The log as a stream of lines (plain, or compressed and decoded as it arrives): a job's events
// are emitted when it ends with nothing else open (no job, stage or started task); the
// rest at the end. parse_event_log and read_event_log are this stream fed the whole log.
std::unique_ptr<StreamImporter> make_stream(const std::string& source,
                                            const ImportOptions& options);

// Importer registry hooks: read_event_log with options.spark_delay_split.
Trace import(const std::string& path, const ImportOptions& options);
// Importer registry hook: 90 for a JSON line naming a SparkListener event, 95 for the same
// compressed (the head must hold the first block: importer.cpp reads more of compressed
// files), 60 for logs in a codec we cannot read (to explain why), else 0.
int sniff(std::string_view path, std::string_view head);
// The importer's descriptor (importer.hpp): the hooks above and --spark-delay-split.
const Importer& descriptor();

}  // namespace snailtrail::importers::spark
