// A trace as Chrome's Trace Event Format (the JSON chrome://tracing and Perfetto open),
// with the critical path marked: `snailtrail convert TRACE out.json --to chrome`
// (docs/FORMATS.md, "Chrome/Perfetto export").
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "summary/analysis.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

struct ChromeExportStats {
  uint64_t slices = 0;           // "X" events: one per activity of the PAG's timelines
  uint64_t critical_slices = 0;  // of them on at least one critical path of a window
  uint64_t flows = 0;            // messages, each an "s"/"f" pair
  uint64_t critical_flows = 0;   // of them on at least one critical path
  uint64_t windows = 0;          // windows whose CP was computed
};

// Writes `trace` through `sink` (in pieces of about 1 MB) as
//   {"displayTimeUnit": "ns", "otherData": {...}, "traceEvents": [...]}:
// per worker "M" events (process_name, thread_name, process_sort_index; pid = tid =
// worker id), one "X" event per activity of the worker's PAG timeline (gap filling
// applied: waiting and unknown included; an activity cut by message nodes is one
// slice), ts/dur in microseconds with three decimals (exact ns) from the trace's first
// event (otherData.time_origin_ns), name = operator (else activity type), cat = activity
// type plus ",critical" when on a critical path, args {type, operator, operator_id,
// critical_ns}; one "s"/"f" flow per matched message (name "critical" and cat
// "critical" when on a critical path, else the message type and cat "message"), the "f"
// bound to the slice starting at its time ("bp": "e"). CP is computed as `analyze` does
// over `options.windows`.
ChromeExportStats write_chrome_trace(const Trace& trace, const AnalysisOptions& options,
                                     const std::function<void(std::string_view)>& sink);

}  // namespace snailtrail
