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

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "cli/verdict_ds2.hpp"
#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/profile_io.hpp"
#include "importers/importer.hpp"
#include "report/report.hpp"
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
    if (out.size() > 1) out += ",";
    out += fmt::format("\"{}\":{}", mode_name(m), to_json(build_tree(set, w, {}), set, w, m));
  }
  return out + "}";
}

struct ReportArgs {
  std::string trace;
  std::string output;
  std::string window = "1s";
  std::string gap_threshold = "100us";
  std::string from, to;
  std::string importer = "auto";
  std::string format = "html";
  size_t top = 10;
  uint64_t seed = 1;
  report::ReportOptions report;
  bool no_progress = false;
  bool dashboard = false;
  bool in_memory = false;
  bool timings = false;
  unsigned threads = 0;
};

// "123456 bytes, 121 KiB": exact for scripts, rounded for people.
std::string human_size(uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} bytes", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{} bytes, {:.0f} KiB", bytes, bytes / 1024.0);
  return fmt::format("{} bytes, {:.1f} MiB", bytes, bytes / (1024.0 * 1024.0));
}

int write_page(const std::string& path, const std::string& text) {
  {
    OutputFile out(path);
    out.buf().append(text.data(), text.data() + text.size());
  }
  if (path != "-") fmt::print("{} ({})\n", path, human_size(text.size()));
  return 0;
}

int run(ReportArgs& a) {
  if (a.dashboard) return write_page(a.output, report::render_dashboard_html());
  if (a.trace.empty()) throw std::invalid_argument("a TRACE file is required");
  AnalysisOptions opt;
  opt.pag.gap_threshold_ns = parse_duration(a.gap_threshold);
  if (a.window != "whole") {
    opt.windows.width_ns = parse_duration(a.window);
    if (opt.windows.width_ns <= 0) throw std::invalid_argument("--window must be positive");
  }
  opt.summary.top_k = a.top;
  opt.summary.seed = a.seed;
  opt.what_if.enabled = a.report.what_if;
  if (a.report.max_points < 2) throw std::invalid_argument("--max-points must be at least 2");

  const bool progress = !a.no_progress && isatty(STDERR_FILENO);
  // A .snail trace with tumbling windows is read block by block (summary/streamed.hpp):
  // memory O(window + workers), the same report. The flame view of a trace with a
  // profile needs every event: such traces are read whole.
  std::unique_ptr<SnailFile> snail;
  if (!a.in_memory && a.window != "whole") snail = open_snail_streamed(a.trace, a.importer, opt);
  if (snail) {
    for (const SnailBlock& b : snail->index().blocks)
      if (b.kind != 1 && b.kind != 2) {  // a profile block (kind 4)
        fmt::print(stderr,
                   "snailtrail: note: {}: read whole into memory: the flame view needs the "
                   "whole trace\n",
                   a.trace);
        snail.reset();
        break;
      }
  }
  Trace trace;
  Pag pag;  // in memory: the whole trace's; streamed: only the ids, for the names
  if (snail) {
    trace = snail->names();
    pag = names_pag(snail->index().facts);
  } else {
    if (progress) fmt::print(stderr, "\rreading {}...", a.trace);
    trace = importers::import_trace(a.trace, a.importer);
    cli::warn_if_cut(trace);
    if (trace.events.empty()) throw TraceError(trace.source, "input", "the trace has no events");
    if (progress) fmt::print(stderr, "\rbuilding the PAG of {} events...", trace.events.size());
    pag = build_pag(trace, opt.pag);
    if (progress) fmt::print(stderr, "\r\033[K");
  }
  auto instant = [&](const std::string& text, const char* flag) {
    Instant i = parse_instant(text);
    if (!i.relative) return i.ns;
    int64_t t = 0;
    if (__builtin_add_overflow(pag.first_ts, i.ns, &t))
      throw std::invalid_argument(std::string(flag) + " " + text + " is out of range");
    return t;
  };
  if (!a.from.empty()) opt.windows.from_ns = instant(a.from, "--from");
  if (!a.to.empty()) opt.windows.to_ns = instant(a.to, "--to");
  if (opt.windows.from_ns && opt.windows.to_ns && *opt.windows.to_ns <= *opt.windows.from_ns)
    throw std::invalid_argument("--to must be after --from");
  StreamedPlan splan;
  if (snail) splan = plan_streamed(snail->index().facts, opt.windows);
  if (snail ? splan.empty() : plan_windows(pag, opt.windows).empty())
    throw std::invalid_argument(
        fmt::format("no window to analyze: the trace spans [{}, {}] ns, outside --from/--to",
                    pag.first_ts, pag.last_ts));

  Names names(trace, pag);
  const std::string flame = snail ? std::string() : flame_json(trace, opt);
  BigVector<Event>().swap(trace.events);  // the events live on in the PAG
  a.report.top_k = a.top;
  a.report.source = a.trace;
  a.report.window_label = a.window;
  a.report.window_ns = opt.windows.width_ns;
  a.report.enrich = ds2_enricher(a.trace, a.importer, opt.windows.width_ns);  // DS2's number
  report::ReportBuilder builder(a.report);
  for (const auto& [kind, n] : trace.import_diagnostics) builder.add_input_diagnostic(kind, n);
  auto last = std::chrono::steady_clock::now();
  // Windows are analyzed on worker threads, each extracting its window's timeline into
  // its own slot; the builder takes them in window order on this thread.
  // By window index (runs of windows without events make indexes sparse).
  std::unordered_map<uint64_t, report::Timeline> timelines;
  std::mutex timelines_mu;
  const bool keep_timelines = a.report.timelines > 0;
  const unsigned threads =
      a.threads > 0 ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::function<void(const WindowView&, RenderedWindow&)> render = [&](const WindowView& v,
                                                                             RenderedWindow&) {
    if (keep_timelines && v.summary.window.empty_run == 0) {
      report::Timeline t = report::extract_timeline(v, a.report.timeline_edges);
      std::lock_guard lock(timelines_mu);
      timelines[v.summary.index] = std::move(t);
    }
  };
  const std::function<void(RenderedWindow&)> consume = [&](RenderedWindow& r) {
    if (r.summary.window.empty_run > 0) return;  // windows without events: not analyzed
    report::Timeline t;
    {
      std::lock_guard lock(timelines_mu);
      auto it = timelines.find(r.summary.index);
      if (it != timelines.end()) {
        t = std::move(it->second);
        timelines.erase(it);  // free its memory now
      }
    }
    builder.add(r.summary, names, std::move(t));
  };
  const std::function<void(size_t, size_t)> on_progress = [&](size_t done, size_t total) {
    if (!progress) return;
    auto now = std::chrono::steady_clock::now();
    if (done == total || now - last > std::chrono::milliseconds(200)) {
      last = now;
      fmt::print(stderr, "\ranalyzing {}: window {}/{}{}", a.trace, done, total,
                 done == total ? "\n" : "");
    }
  };
  if (snail) {
    const StreamedStats st = analyze_snail_streamed(*snail, opt, splan, splan.k0, splan.k1, threads,
                                                    render, consume, on_progress);
    if (a.timings)
      fmt::print(stderr,
                 "streamed: {} of {} bytes read in {} blocks, lookback {} ns, at most {} PAG "
                 "nodes held\n",
                 snail->bytes_read(), snail->file_size(), st.blocks_read, st.lookback_ns,
                 st.peak_retained_nodes);
  } else {
    analyze_pag_parallel(pag, opt, threads, render, consume, on_progress);
  }
  std::string json = builder.json();
  if (!flame.empty() && json.size() > 1 && json.back() == '}')
    json.insert(json.size() - 1, ",\"flame\":" + flame);  // the optional "flame" member
  return write_page(a.output, a.format == "json" ? json : report::render_report_html(json));
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  ReportArgs& a = *args;
  CLI::App* cmd =
      app.add_subcommand("report",
                         "Write a self-contained HTML report: CP over time, stragglers, operators, "
                         "communication, timelines (docs/REPORT.md)");
  cmd->add_option("TRACE", a.trace, "Trace file (.jsonl or .snail; - for JSONL on stdin)");
  cmd->add_option("--output,-o", a.output, "HTML file to write (- for stdout)")->required();
  cmd->add_option("--window,-w", a.window,
                  "Tumbling window width (e.g. 1s, 250ms, 100us) or 'whole'")
      ->capture_default_str();
  cmd->add_option("--gap-threshold", a.gap_threshold,
                  "Gaps shorter than this are closed by alignment (docs/PAG.md)")
      ->capture_default_str();
  cmd->add_option("--from", a.from,
                  "Analyze from this instant (ns, or with a unit; +10s = 10 s after the first "
                  "event)");
  cmd->add_option("--to", a.to, "Analyze up to this instant (same forms as --from)");
  cmd->add_option("--importer", a.importer,
                  "Input format: " + importers::importer_names() +
                      " (auto: recognised by content, then extension)")
      ->capture_default_str();
  cmd->add_option("--top", a.top, "Rows of the top critical activities table")
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Seed of the sampled single critical path")
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
  cmd->add_flag("--no-progress", a.no_progress, "Never print progress on stderr");
  cmd->add_flag("--in-memory", a.in_memory,
                "Read the whole trace before analyzing (default for .snail with tumbling "
                "windows: block by block, in bounded memory; same report)");
  cmd->add_flag("--timings", a.timings,
                "Print on stderr how the trace was read (bytes and blocks when streamed)");
  cmd->add_option("--threads,-j", a.threads,
                  "Threads analyzing windows (0: one per core); results do not depend on it")
      ->capture_default_str();
  // For the browser tests of the live view: writes the page `serve` answers GET / with.
  cmd->add_flag("--dashboard", a.dashboard, "Write the live dashboard page instead")->group("");
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
