// Chrome Trace Event Format (TensorFlow timelines, PyTorch profiler, Perfetto JSON export):
// slices per (pid, tid) become workers, flows and TensorFlow input dependencies become
// messages. Mapping, assumptions and limits: docs/IMPORTERS.md, "Chrome trace events".
#pragma once

#include <string>
#include <string_view>

#include "importers/common/activity_map.hpp"
#include "importers/importer.hpp"

namespace snailtrail::importers {

// Parses a whole Chrome trace (object with "traceEvents" or a bare array, which may lack
// its closing bracket). Throws TraceError naming `source` and the byte or event index.
Trace parse_chrome(std::string_view text, const std::string& source, const ActivityMap& map = {});

// The documented default for Chrome trace slices (case-insensitive substrings of the name):
// wait/idle/sleep -> waiting, deserializ -> deserialization, serializ -> serialization,
// memcpy -> io, barrier -> barrier_processing, anything else -> processing.
ActivityType default_chrome_activity(std::string_view name);

int sniff_chrome(std::string_view path, std::string_view head);
Trace read_chrome(const std::string& path, const ImportOptions& options);
// The importer's descriptor (importer.hpp).
const Importer& chrome_descriptor();

}  // namespace snailtrail::importers
