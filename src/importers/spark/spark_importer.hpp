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

#include "importers/importer.hpp"
#include "importers/streaming.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::spark {

struct SparkOptions {
  // The scheduler delay of a task (time between launch and result the event log does not
  // explain) is split launch:result, e.g. 1:2 puts a third of it on the launch message.
  uint32_t launch_weight = 1;
  uint32_t result_weight = 2;
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
