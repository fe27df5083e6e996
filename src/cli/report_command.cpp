// `snailtrail report`: one self-contained HTML file with the views of the analysis
// (docs/REPORT.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "cli/analyze_ranks.hpp"
#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/report_critical_flow.hpp"
#include "cli/report_views.hpp"
#include "cli/streamed_input.hpp"
#include "cli/trace_input.hpp"
#include "cli/verdict_ds2.hpp"
#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/profile_io.hpp"
#include "flame/time_order.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "report/job_graph.hpp"
#include "report/report.hpp"
#include "report/stages.hpp"
#include "report/waterfall.hpp"
#include "report/window_feed.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

// The flame graphs of a trace with a profile (`run --profile`), one per mode, for the
// report's flame view: {"on-cpu": TREE, "off-cpu": ..., "mixed": ..., "critical": ...}
// with TREE as `flamegraph --format json` writes it (docs/FLAME.md); critical weights over
// the report's own windows. Empty if the trace has no profile.
std::string flame_json(const Trace& trace, const AnalysisOptions& opt) {
  if (trace.profile_blocks.empty()) return {};
  using namespace flame;
  SampleSet set;
  samples_from_trace(trace, set);
  CriticalResult cr = critical_weights(trace, set, opt);
  std::string out = "{";
  for (Mode m : {Mode::on_cpu, Mode::off_cpu, Mode::mixed, Mode::critical}) {
    const std::vector<double> w = m == Mode::critical ? cr.weight : mode_weights(set, m);
    const TimeOrder runs = time_order(set, w, {}, kReportTimeRuns);  // the time-order view
    if (out.size() > 1) out += ",";
    out +=
        fmt::format("\"{}\":{}", mode_name(m), to_json(build_tree(set, w, {}), set, w, m, &runs));
  }
  return out + "}";
}

struct ReportArgs {
  TraceInputArgs in;
  std::string output;
  std::string format = "html";
  size_t top = 10;
  report::ReportOptions report;
  bool no_progress = false;
  bool dashboard = false;
  bool timings = false;
  std::string view = "auto";  // auto, dataflow, waterfall, stages, critical-flow
  std::string loop_stats;     // run --stats-json: the Job graph's decisions and migrations
  size_t traces = 200;        // waterfall: traces embedded
  report::PercentileViewOptions percentiles;  // waterfall: --percentile, --diff, --bucket
  std::vector<double> diff;
  std::string thread;  // critical flow: the thread the page opens on
};

// The report's options from the command line and the opened trace.
report::ReportOptions report_options(const ReportArgs& a, const AnalysisOptions& opt,
                                     bool helper_rank) {
  report::ReportOptions r = a.report;
  r.top_k = a.top;
  r.source = a.in.trace;
  r.window_label = a.in.window;
  r.window_ns = opt.windows.width_ns;
  if (!helper_rank)  // DS2's number
    r.enrich = ds2_enricher(a.in.trace, a.in.importer, a.in.import, opt.windows.width_ns);
  return r;
}

// "analyzing TRACE: window i/n" on stderr, at most every 200 ms.
std::function<void(size_t, size_t)> progress_line(const std::string& trace, bool progress) {
  if (!progress) return [](size_t, size_t) {};
  auto last =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [trace, last](size_t done, size_t total) {
    auto now = std::chrono::steady_clock::now();
    if (done == total || now - *last > std::chrono::milliseconds(200)) {
      *last = now;
      fmt::print(stderr, "\ranalyzing {}: window {}/{}{}", trace, done, total,
                 done == total ? "\n" : "");
    }
  };
}

// The page: the builder's JSON with the optional "flame" and "jobgraph" members, as HTML
// or JSON.
std::string report_page(const report::ReportBuilder& builder, const std::string& flame,
                        const std::string& graph, const std::string& format) {
  std::string json = builder.json();
  if (!flame.empty() && json.size() > 1 && json.back() == '}')
    json.insert(json.size() - 1, ",\"flame\":" + flame);
  if (graph != "null" && json.size() > 1 && json.back() == '}')
    json.insert(json.size() - 1, ",\"jobgraph\":" + graph);
  return format == "json" ? json : report::render_report_html(json);
}

// Under mpirun the ranks share the windows of a streamed analysis (cli/analyze_ranks.hpp):
// rank 0 takes its share, then every other rank's windows with their timelines; the
// others send theirs to rank 0.
void analyze_on_ranks(mpi::RankGroup& group, AnalysisInput& in, const AnalysisOptions& opt,
                      unsigned threads, report::WindowFeed& feed,
                      const std::function<void(size_t, size_t)>& on_progress) {
  const auto [kb, ke] = rank_share(group, in.snail->index(), in.plan, RootDuty::builds_report);
  auto render = [&](const WindowView& v, RenderedWindow& r) { feed.render(v, r); };
  if (group.rank() > 0) {
    send_windows_to_root(group, true, [&](const auto& send) {
      if (ke >= kb) analyze_snail_streamed(*in.snail, opt, in.plan, kb, ke, threads, render, send);
    });
    return;
  }
  group.start_receiving();
  if (ke >= kb)
    analyze_snail_streamed(
        *in.snail, opt, in.plan, kb, ke, threads, render,
        [&](RenderedWindow& r) { feed.consume(r); }, on_progress);
  for (int rank = 1; rank < group.size(); ++rank)
    replay_rank(group, rank, [&](RenderedWindow& r) { feed.add_received(r); });
}

// The importer that reads the input: --importer, else detected when the command line was
// parsed ("" if unknown or stdin).
std::string_view input_kind(const ReportArgs& a) {
  return a.in.importer == "auto" ? std::string_view() : std::string_view(a.in.importer);
}

// The view for the input: span traces (OTLP, Jaeger) get the waterfall, Spark logs the
// tasks per stage, the rest the dataflow views; --view chooses another.
std::string choose_view(const ReportArgs& a) {
  if (a.view != "auto") return a.view;
  const std::string_view kind = input_kind(a);
  if (kind == "otlp" || kind == "jaeger") return "waterfall";
  if (kind == "spark") return "stages";
  if (kind == "perf-sched" || kind == "lttng") return "critical-flow";
  return "dataflow";
}

int run(ReportArgs& a, mpi::RankGroup* group) {
  if (a.dashboard) return write_page(a.output, report::render_dashboard_html());
  if (a.in.trace.empty()) throw std::invalid_argument("a TRACE file is required");
  const std::string view = choose_view(a);
  if (view == "critical-flow")
    return group && group->rank() > 0
               ? 0
               : run_critical_flow(a.in, a.thread, a.format, [&](const std::string& page) {
                   return write_page(a.output, page);
                 });
  if (view == "waterfall" || view == "stages") {
    if (a.diff.size() == 2) a.percentiles.diff_a = a.diff[0], a.percentiles.diff_b = a.diff[1];
    if (group && group->rank() > 0) return 0;  // one process writes it
    return write_page(a.output, view == "waterfall"
                                    ? waterfall_page(a.in, a.traces, a.format, a.percentiles)
                                    : stages_page(a.in, a.top, a.format));
  }
  AnalysisOptions opt;
  apply_window_options(a.in, opt);
  opt.summary.top_k = a.top;
  opt.what_if.enabled = a.report.what_if;
  if (a.report.max_points < 2) throw std::invalid_argument("--max-points must be at least 2");

  // Under mpirun the ranks share the windows of a streamed analysis; rank 0 builds the
  // report (cli/analyze_ranks.hpp).
  const bool helper_rank = group && group->rank() > 0;
  const bool progress = !a.no_progress && isatty(STDERR_FILENO) && !helper_rank;
  // A .snail trace with tumbling windows is read block by block (summary/streamed.hpp):
  // memory O(window + workers), the same report. The flame view of a trace with a
  // profile needs every event: such traces are read whole.
  AnalysisInput in =
      open_analysis_input(a.in, opt, progress, /*whole_if_profile=*/true, helper_rank);
  if (helper_rank && !in.snail) return 0;  // rank 0 does it all
  if (!in.has_windows(opt)) {
    if (helper_rank) return 0;  // rank 0 says why
    throw std::invalid_argument(no_window_message(in.pag));
  }
  Names names(in.trace, in.pag);
  const std::string flame = in.snail ? std::string() : flame_json(in.trace, opt);
  BigVector<Event>().swap(in.trace.events);  // the events live on in the PAG

  report::ReportBuilder builder(report_options(a, opt, helper_rank));
  for (const auto& [kind, n] : in.trace.import_diagnostics) builder.add_input_diagnostic(kind, n);
  report::JobGraphBuilder graph;  // the Job graph, fed with the report (ranks send theirs)
  if (!a.loop_stats.empty() && !helper_rank)
    graph.set_marks(report::loop_marks_from_file(a.loop_stats));
  report::WindowFeed feed(builder, names, a.report.timelines > 0, a.report.timeline_edges,
                          /*send=*/helper_rank, &graph);
  const unsigned threads = analysis_threads(a.in);
  const auto on_progress = progress_line(a.in.trace, progress);
  if (in.snail && group) {
    analyze_on_ranks(*group, in, opt, threads, feed, on_progress);
    if (helper_rank) return 0;
  } else {
    const StreamedStats st = analyze_input(
        in, opt, threads, [&](const WindowView& v, RenderedWindow& r) { feed.render(v, r); },
        [&](RenderedWindow& r) { feed.consume(r); }, on_progress);
    if (a.timings && in.snail)
      fmt::print(stderr,
                 "streamed: {} of {} bytes read in {} blocks, lookback {} ns, at most {} PAG "
                 "nodes held\n",
                 in.snail->bytes_read(), in.snail->file_size(), st.blocks_read, st.lookback_ns,
                 st.peak_retained_nodes);
  }
  return write_page(a.output, report_page(builder, flame, graph.json(), a.format));
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  ReportArgs& a = *args;
  CLI::App* cmd =
      app.add_subcommand("report",
                         "Write a self-contained HTML report: CP over time, stragglers, operators, "
                         "communication, timelines (docs/REPORT.md)");
  add_trace_input_options(cmd, a.in, "report", /*trace_optional=*/true);
  cmd->add_option("--output,-o", a.output, "HTML file to write (- for stdout)")->required();
  cmd->add_option("--top", a.top, "Rows of the top critical activities table")
      ->capture_default_str();
  cmd->add_option("--format,-f", a.format,
                  "html: the report page; json: only its data (schema: docs/REPORT.md)")
      ->check(CLI::IsMember({"html", "json"}))
      ->capture_default_str();
  cmd->add_option("--max-points", a.report.max_points,
                  "Points of the time charts; adjacent windows are merged beyond this")
      ->capture_default_str();
  cmd->add_option("--groups", a.report.top_groups,
                  "Workers and operators shown in the whole-trace charts (the rest: 'other')")
      ->capture_default_str();
  cmd->add_option("--heatmap-workers", a.report.heatmap_workers,
                  "Senders/receivers shown in the heatmap (the rest: 'other')")
      ->capture_default_str();
  cmd->add_option("--timelines", a.report.timelines,
                  "Windows whose timeline is kept: first, last and the most concentrated CP")
      ->capture_default_str();
  cmd->add_option("--timeline-edges", a.report.timeline_edges,
                  "Edges kept per timeline (most critical first, then longest)")
      ->capture_default_str();
  cmd->add_flag("--what-if", a.report.what_if,
                "Also show how much shorter the critical path would be if the most critical "
                "workers, operators and activity types were faster (docs/PAG.md §5)");
  cmd->add_option("--view", a.view,
                  "auto: the Waterfall for span traces (otlp, jaeger), Tasks per stage for "
                  "Spark logs, Critical flow for kernel traces (perf-sched, lttng), else the "
                  "dataflow views; dataflow, waterfall, stages or critical-flow to choose")
      ->check(CLI::IsMember({"auto", "dataflow", "waterfall", "stages", "critical-flow"}))
      ->capture_default_str();
  cmd->add_option("--traces", a.traces,
                  "Waterfall: traces embedded, the slowest plus the p50, p90 and p99 ones")
      ->capture_default_str();
  add_percentile_view_options(cmd, a.percentiles, a.diff);
  cmd->add_option("--thread", a.thread,
                  "Critical flow: the thread to open on, TID or NAME (default: docs/REPORT.md)");
  cmd->add_option("--stats-json", a.loop_stats,
                  "Job graph: mark the decisions and migrations of this run's `run --stats-json`");
  cmd->add_flag("--no-progress", a.no_progress, "Never print progress on stderr");
  cmd->add_flag("--timings", a.timings,
                "Print on stderr how the trace was read (bytes and blocks when streamed)");
  // For the browser tests of the live view: writes the page `serve` answers GET / with.
  cmd->add_flag("--dashboard", a.dashboard, "Write the live dashboard page instead")->group("");
  return [cmd, args]() {
    if (!*cmd) return -1;
    return run_on_ranks([&](mpi::RankGroup* group) { return run(*args, group); });
  };
}

}  // namespace snailtrail::cli
