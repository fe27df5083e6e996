// The views of `snailtrail report` that are not the dataflow page (docs/REPORT.md): the
// "Waterfall" for span traces and "Tasks per stage" for Spark logs, dispatched from
// report_command.cpp, and the writer of every page.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/trace_input.hpp"
#include "report/waterfall_percentiles.hpp"

namespace snailtrail::cli {

// Writes a page (or its data) to `path` ("-": stdout) and says its size on stdout.
int write_page(const std::string& path, const std::string& text);

// "Tasks per stage": the log's tasks per stage beside the stages' CP from the analysis
// `analyze` runs on it (stages are its operators). `in.window` "auto" is resolved (and
// said) as for the other views. Format "html" or "json" (the page's data).
std::string stages_page(TraceInputArgs& in, size_t top, const std::string& format);

// The "Waterfall": every trace's critical path as `critical-path` computes it, the
// `traces` picked traces' spans embedded, and the percentile and diff views.
std::string waterfall_page(const TraceInputArgs& in, size_t traces, const std::string& format,
                           const report::PercentileViewOptions& percentiles = {});

// The Waterfall's --percentile, --diff (into `diff`, A B or A,B) and --bucket, as
// `critical-path` takes them.
void add_percentile_view_options(CLI::App* cmd, report::PercentileViewOptions& opt,
                                 std::vector<double>& diff);

}  // namespace snailtrail::cli
