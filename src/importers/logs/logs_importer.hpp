// Plain-text logs as a trace (`analyze LOGS --importer logs`; docs/LOGS.md, "CP on logs"):
// the request flows of logs/flows.hpp become activities and messages.
// - Workers: the (node, thread) pairs of the log headers (a node is a file, or a
//   <Node>/<Host> field; without a thread field, one per node), packed into lanes where
//   requests overlap (importers/common/slices.hpp), as spans of one service are.
// - Activities: the interval between two consecutive log points of a request on the same
//   node is `processing` on the worker of the later line, its operator the later line's
//   template ("T7 Received block <*> of size <*> from <*>").
// - Messages: two consecutive log points of a request on different nodes are a
//   data_message from the earlier line's worker to the later one's.
// Import diagnostics: the reader's counters (logs.*) plus logs.records_without_id and
// logs.zero_length_steps.
#pragma once

#include <string>
#include <string_view>

#include "importers/importer.hpp"
#include "logs/flows.hpp"

namespace snailtrail::importers {

Trace logs_to_trace(const logs::LogSet& set, const logs::FlowSet& flows, const std::string& source);

// A score for plain logs whose header a preset recognises (low: other formats win).
int sniff_logs(std::string_view path, std::string_view head);
// Whether `path` is a directory whose files (the first few) are plain logs a preset
// recognises.
bool is_log_dir(const std::string& path);
// A file, or a directory of files (one per node). --log-format and --id apply.
Trace read_logs_trace(const std::string& path, const ImportOptions& options);
// The importer's descriptor (importer.hpp): the hooks above, --log-format and --log-id.
const Importer& logs_descriptor();

}  // namespace snailtrail::importers
