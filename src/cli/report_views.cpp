// The Waterfall and Tasks per stage views of `snailtrail report` (report_views.hpp).
#include "cli/report_views.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "report/stages.hpp"
#include "report/waterfall.hpp"

namespace snailtrail::cli {
namespace {

// "123456 bytes, 121 KiB": exact for scripts, rounded for people.
std::string human_size(uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} bytes", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{} bytes, {:.0f} KiB", bytes, bytes / 1024.0);
  return fmt::format("{} bytes, {:.1f} MiB", bytes, bytes / (1024.0 * 1024.0));
}

}  // namespace

int write_page(const std::string& path, const std::string& text) {
  {
    OutputFile out(path);
    out.buf().append(text.data(), text.data() + text.size());
  }
  if (path != "-") fmt::print("{} ({})\n", path, human_size(text.size()));
  return 0;
}

// "Tasks per stage" (docs/REPORT.md): the log's tasks per stage beside the stages' CP from
// the analysis `analyze` runs on it (stages are its operators).
std::string stages_page(TraceInputArgs& in, size_t top, const std::string& format) {
  if (in.trace == "-") throw std::invalid_argument("the stages view reads a file, not stdin");
  if (in.importer_option != "auto" && in.importer_option != "spark")
    throw std::invalid_argument("--view stages needs a Spark event log (--importer spark)");
  importers::spark::SparkOptions so =
      importers::spark::parse_delay_split(in.import.spark_delay_split);
  importers::spark::TaskTable table;
  so.table = &table;
  Trace trace = importers::spark::read_event_log(in.trace, so);
  warn_if_cut(trace);
  if (table.tasks.empty()) throw TraceError(in.trace, "input", "the log has no finished task");

  AnalysisOptions opt;
  apply_window_options(in, opt);
  if (in.window == "auto") {  // as open_analysis_input says it
    const AutoWindowChoice c = resolve_auto_window("spark", opt);
    in.window = c.label;
    fmt::print(stderr, "snailtrail: note: --window auto chose {}: {} (--window sets another)\n",
               c.label == "whole" ? "the whole trace" : c.label, c.reason);
  }
  opt.summary.top_k = top;
  Aggregate agg;
  if (!trace.events.empty()) {
    const Pag pag = build_pag(trace, opt.pag);
    resolve_time_range(in, pag, opt);
    analyze_pag_parallel(
        pag, opt, analysis_threads(in), [](const WindowView&, RenderedWindow&) {},
        [&](RenderedWindow& r) { agg.add(r.summary, top); });
    agg.finish();
  }
  report::StagesPage page{in.trace, in.window, agg.windows, agg.windows_with_paths,
                          trace.import_diagnostics};
  const std::string json = report::stages_json(page, report::summarize_stages(table, agg.cp.op));
  return format == "json" ? json : report::render_stages_html(json);
}

// The "Waterfall" (docs/REPORT.md): every trace's critical path as `critical-path` computes
// it, the picked traces' spans embedded.
std::string waterfall_page(const TraceInputArgs& in, size_t traces, const std::string& format,
                           const report::PercentileViewOptions& percentiles) {
  if (in.trace == "-") throw std::invalid_argument("the waterfall reads a file, not stdin");
  if (in.importer_option != "auto" && in.importer_option != "otlp" &&
      in.importer_option != "jaeger")
    throw std::invalid_argument("--view waterfall needs a span trace (--importer otlp or jaeger)");
  if (traces == 0) throw std::invalid_argument("--traces must be at least 1");
  report::WaterfallBuilder builder({in.trace, traces, /*percentiles=*/true, percentiles});
  importers::SpanStream stream = importers::stream_spans(
      in.trace, in.importer, in.threads,
      [&](size_t unit, const importers::SpanSet& set) { builder.add(unit, set); });
  warn_skipped_traces(stream);
  for (const auto& [kind, n] : stream.diagnostics) {
    builder.add_diagnostic(kind, n);
    if (n > 0 && importers::is_cut_input(kind))  // as warn_if_cut says it for the other views
      fmt::print(stderr,
                 "snailtrail: warning: {}: the input ends inside a record (still being "
                 "written?); read up to the last complete record ({})\n",
                 stream.source, kind);
  }
  builder.set_skipped(stream.skipped.size());
  if (builder.spans() == 0) throw TraceError(stream.source, "input", "the trace has no spans");
  const std::string json = builder.json();
  return format == "json" ? json : report::render_waterfall_html(json);
}

void add_percentile_view_options(CLI::App* cmd, report::PercentileViewOptions& opt,
                                 std::vector<double>& diff) {
  // 99 or p99, as `critical-path` takes them.
  const auto strip_p = [](const std::string& s) {
    return s.starts_with('p') || s.starts_with('P') ? s.substr(1) : s;
  };
  cmd->add_option("--percentile", opt.pick,
                  "Waterfall: the percentile the Percentiles panel opens on (0: all traces)")
      ->transform(strip_p)
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--diff", diff, "Waterfall: the two percentiles A B (or A,B) the Diff opens on")
      ->expected(2)
      ->delimiter(',')
      ->transform(strip_p)
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--bucket", opt.bucket,
                  "Waterfall: the traces between the (P-W)th and (P+W)th percentile, W in points")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
}

}  // namespace snailtrail::cli
