// `snailtrail analyze`: CP analysis of a trace file, window by window.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "importers/importer.hpp"
#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

struct AnalyzeArgs {
  std::string trace;
  std::string window = "1s";
  std::string gap_threshold = "100us";
  std::string from, to;
  std::string format = "table";
  std::string summary = "all";
  size_t top = 10;
  std::string dump_edges;
  std::string importer = "auto";
  std::string spark_delay_split = "1:2";
  std::string map_file;
  uint64_t seed = 1;
  bool per_window = false;
  std::string output;
  bool no_progress = false;
  bool timings = false;
  unsigned threads = 0;
  bool what_if = false;
  double what_if_speedup = 2;
};

// This process's peak resident set (VmHWM). Unlike getrusage's ru_maxrss it does not
// include the parent's memory when the process was spawned with vfork semantics.
uint64_t peak_rss_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lu kB", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

int run(const AnalyzeArgs& a) {
  AnalysisOptions opt;
  opt.pag.gap_threshold_ns = parse_duration(a.gap_threshold);
  if (a.window != "whole") {
    opt.windows.width_ns = parse_duration(a.window);
    if (opt.windows.width_ns <= 0) throw std::invalid_argument("--window must be positive");
  }
  SummarySelection sel = SummarySelection::parse(a.summary);
  opt.summary.top_k = a.top;
  opt.summary.seed = a.seed;
  opt.what_if.enabled = sel.what_if = a.what_if;
  opt.what_if.speedup = a.what_if_speedup;

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  StageTimes stage;
  if (a.timings) opt.times = &stage;
  const bool progress = !a.no_progress && isatty(STDERR_FILENO);
  if (progress) fmt::print(stderr, "\rreading {}...", a.trace);
  importers::ImportOptions import_options;
  import_options.spark_delay_split = a.spark_delay_split;
  import_options.map_file = a.map_file;
  Trace trace = importers::import_trace(a.trace, a.importer, import_options);
  cli::warn_if_cut(trace);
  const auto t_read = Clock::now();
  if (trace.events.empty()) throw TraceError(trace.source, "input", "the trace has no events");
  if (progress) fmt::print(stderr, "\rbuilding the PAG of {} events...", trace.events.size());
  Pag pag = build_pag(trace, opt.pag);
  if (progress) fmt::print(stderr, "\r\033[K");
  // The events are in the PAG now; their memory is reused for the windows.
  const size_t event_count = trace.events.size();
  BigVector<Event>().swap(trace.events);
  const auto t_pag = Clock::now();
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
  Names names(trace, pag);

  OutputFile out(a.output);
  std::unique_ptr<OutputFile> edges;
  if (!a.dump_edges.empty()) edges = std::make_unique<OutputFile>(a.dump_edges);
  Aggregate agg;
  auto last = std::chrono::steady_clock::now();
  TableContext ctx{a.trace, a.window, a.top, 12, a.per_window, pag.first_ts};
  if (a.format == "csv") write_csv_header(out.buf());

  if (plan_windows(pag, opt.windows).empty())
    fmt::print(stderr,
               "snailtrail: warning: no window to analyze: the trace spans [{}, {}] ns, "
               "outside --from/--to\n",
               pag.first_ts, pag.last_ts);
  // Windows are rendered on worker threads; output is written here, in window order.
  const unsigned threads =
      a.threads > 0 ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  const bool keep_summary = a.format == "table";
  uint64_t empty_runs = 0, empty_windows = 0;
  analyze_pag_parallel(
      pag, opt, threads,
      [&](const WindowView& view, RenderedWindow& r) {
        if (view.summary.window.empty_run > 0) {  // a run of windows without events
          fmt::memory_buffer text;
          if (a.format == "jsonl") {
            write_empty_windows_json(text, view.summary);
            text.push_back('\n');
          } else if (a.format == "table" && a.per_window) {
            fmt::format_to(std::back_inserter(text),
                           "== windows {} to {} [{}, {}]: no events, not analyzed\n\n",
                           view.summary.index,
                           view.summary.index + view.summary.window.empty_run - 1,
                           view.summary.window.start, view.summary.window.end);
          }
          r.text.assign(text.data(), text.size());
          r.edges.clear();
          return;
        }
        // The importer's repairs concern the whole trace: reported with the first window.
        const bool first = view.summary.index == 0 && !trace.import_diagnostics.empty();
        WindowSummary with_import;
        if (first) {
          with_import = view.summary;
          for (const auto& [kind, n] : trace.import_diagnostics)
            with_import.diagnostics.add_input(kind, n);
        }
        const WindowView v{view.pag, view.snapshot, view.cp, first ? with_import : view.summary};
        fmt::memory_buffer text;
        if (a.format == "jsonl") {
          write_window_json(text, v.summary, names, sel);
          text.push_back('\n');
        } else if (a.format == "csv") {
          write_window_csv(text, v.summary, names, sel);
        } else if (a.per_window) {
          Aggregate one;
          one.add(v.summary, a.top);
          one.finish();
          TableContext window_ctx = ctx;
          window_ctx.column_key = false;  // once, in the table of the whole run
          write_table(text, one, names, sel, window_ctx,
                      fmt::format("== window {} [{}, {}]", v.summary.index, v.summary.window.start,
                                  v.summary.window.end)
                          .c_str());
          text.push_back('\n');
        }
        r.text.assign(text.data(), text.size());
        if (edges) {
          fmt::memory_buffer e;
          write_edges_jsonl(e, v);
          r.edges.assign(e.data(), e.size());
        }
      },
      [&](RenderedWindow& r) {
        if (r.summary.window.empty_run > 0) {
          ++empty_runs;
          empty_windows += r.summary.window.empty_run;
          out.buf().append(r.text.data(), r.text.data() + r.text.size());
          out.maybe_flush();
          return;
        }
        if (r.summary.index == 0)
          for (const auto& [kind, n] : trace.import_diagnostics)
            r.summary.diagnostics.add_input(kind, n);
        if (keep_summary) agg.add(r.summary, a.top);
        out.buf().append(r.text.data(), r.text.data() + r.text.size());
        out.maybe_flush();
        if (edges) {
          edges->buf().append(r.edges.data(), r.edges.data() + r.edges.size());
          edges->maybe_flush();
        }
      },
      [&](size_t done, size_t total) {
        if (!progress) return;
        auto now = std::chrono::steady_clock::now();
        if (done == total || now - last > std::chrono::milliseconds(200)) {
          last = now;
          fmt::print(stderr, "\ranalyzing {}: window {}/{}{}", a.trace, done, total,
                     done == total ? "\n" : "");
        }
      });
  if (empty_windows > 0)
    fmt::print(stderr,
               "snailtrail: note: {} windows without events (in {} run(s) following a window "
               "without events) were not analyzed{}\n",
               empty_windows, empty_runs,
               a.format == "jsonl" ? ": one \"empty_windows\" line per run (docs/OUTPUT.md)" : "");
  if (a.format == "table") {
    agg.finish();
    write_table(out.buf(), agg, names, sel, ctx,
                fmt::format("snailtrail analyze {}", a.trace).c_str());
  }
  out.flush();
  if (a.timings) {
    const auto t_end = Clock::now();
    fmt::print(stderr,
               "timings: read {:.3f}s, pag {:.3f}s; per-thread sums: snapshots {:.3f}s, cp "
               "{:.3f}s, summaries {:.3f}s, render {:.3f}s; total {:.3f}s for {} events; "
               "peak_rss_kb={}\n",
               seconds(t0, t_read), seconds(t_read, t_pag), stage.snapshot_s, stage.cp_s,
               stage.summary_s, stage.callback_s, seconds(t0, t_end), event_count, peak_rss_kb());
  }
  return 0;
}

}  // namespace

CommandRunner add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  AnalyzeArgs& an = *args;
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Rank activities by critical participation (CP), window by window");
  cmd->add_option("TRACE", an.trace, "Trace file (.jsonl or .snail; - for JSONL on stdin)")
      ->required();
  cmd->add_option("--window,-w", an.window,
                  "Tumbling window width (e.g. 1s, 250ms, 100us) or 'whole'")
      ->capture_default_str();
  cmd->add_option("--gap-threshold", an.gap_threshold,
                  "Gaps shorter than this are closed by alignment (docs/PAG.md)")
      ->capture_default_str();
  cmd->add_option("--from", an.from,
                  "Analyze from this instant (ns, or with a unit; +10s = 10 s after the first "
                  "event)");
  cmd->add_option("--to", an.to, "Analyze up to this instant (same forms as --from)");
  cmd->add_option("--format,-f", an.format, "Output: table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  cmd->add_option("--summary", an.summary,
                  "Comma list of activity, worker, operator, communication, top, diagnostics, "
                  "or all")
      ->capture_default_str();
  cmd->add_option("--top", an.top, "Number of top critical activities")->capture_default_str();
  cmd->add_option("--dump-edges", an.dump_edges, "Write every PAG edge as JSONL to FILE");
  cmd->add_option("--importer", an.importer,
                  "Input format: " + importers::importer_names() +
                      " (auto: recognised by content, then extension)")
      ->capture_default_str();
  cmd->add_option("--spark-delay-split", an.spark_delay_split,
                  "Spark: share of each task's scheduler delay on its launch:result messages")
      ->capture_default_str();
  cmd->add_option("--map", an.map_file,
                  "chrome/otlp/jaeger: TOML rules mapping names to activity types "
                  "(docs/IMPORTERS.md)");
  cmd->add_option("--seed", an.seed, "Seed of the sampled single critical path")
      ->capture_default_str();
  cmd->add_flag("--per-window", an.per_window, "Table: also print every window's table");
  cmd->add_flag("--what-if", an.what_if,
                "For the most critical workers, operators and activity types: how much shorter "
                "each window's critical path would be if they were faster (docs/OUTPUT.md)");
  cmd->add_option("--what-if-speedup", an.what_if_speedup,
                  "With --what-if: the speed-up tried (k times faster)")
      ->default_val(2)
      ->check(CLI::Range(1.01, 1e6));
  cmd->add_option("--output,-o", an.output, "Write results to FILE instead of stdout");
  cmd->add_flag("--no-progress", an.no_progress, "Never print progress on stderr");
  cmd->add_flag("--timings", an.timings, "Print the time spent in each stage on stderr");
  cmd->add_option("--threads,-j", an.threads,
                  "Threads analyzing windows (0: one per core); results do not depend on it")
      ->capture_default_str();
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
