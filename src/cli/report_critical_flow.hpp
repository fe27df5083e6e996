// `snailtrail report KERNEL-TRACE`: the "Critical flow" view (docs/REPORT.md,
// report/critical_flow.hpp), dispatched from report_command.cpp.
#pragma once

#include <functional>
#include <string>

#include "cli/trace_input.hpp"

namespace snailtrail::cli {

// Reads the kernel trace `in.trace` (--importer perf-sched|lttng or auto, --from/--to as
// `kernel critical-path` takes them), opens on `thread` (TID|NAME; empty: the default
// rule), and hands the page (format "html") or its data ("json") to `write`.
int run_critical_flow(const TraceInputArgs& in, const std::string& thread,
                      const std::string& format,
                      const std::function<int(const std::string&)>& write);

}  // namespace snailtrail::cli
