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
#include "cli/streamed_input.hpp"
#include "cli/trace_input.hpp"
#include "cli/verdict_ds2.hpp"
#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/profile_io.hpp"
#include "importers/importer.hpp"
#include "report/report.hpp"
#include "report/timeline_wire.hpp"
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
  TraceInputArgs in;
  std::string output;
  std::string format = "html";
  size_t top = 10;
  report::ReportOptions report;
  bool no_progress = false;
  bool dashboard = false;
  bool timings = false;
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

int run(ReportArgs& a, mpi::RankGroup* group) {
  if (a.dashboard) return write_page(a.output, report::render_dashboard_html());
  if (a.in.trace.empty()) throw std::invalid_argument("a TRACE file is required");
  AnalysisOptions opt;
  apply_window_options(a.in, opt);
  const bool auto_window = a.in.window == "auto";
  if (auto_window) a.in.window = "1s";  // until the importer is known
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
  std::unique_ptr<SnailFile> snail = open_streamed_trace(a.in, opt);
  if (snail) {
    for (const SnailBlock& b : snail->index().blocks)
      if (b.kind != 1 && b.kind != 2) {  // a profile block (kind 4)
        if (!helper_rank)
          fmt::print(stderr,
                     "snailtrail: note: {}: read whole into memory: the flame view needs the "
                     "whole trace\n",
                     a.in.trace);
        snail.reset();
        break;
      }
  }
  if (helper_rank && !snail) return 0;  // rank 0 does it all
  Trace trace;
  Pag pag;  // in memory: the whole trace's; streamed: only the ids, for the names
  AutoWindowChoice auto_choice;
  if (snail) {
    trace = snail->names();
    pag = names_pag(snail->index().facts);
    if (auto_window) auto_choice = resolve_auto_window("snail", opt);
  } else {
    std::string_view used;
    trace = read_whole_trace(a.in, progress, &used);
    if (auto_window) auto_choice = resolve_auto_window(used, opt);
    if (progress) fmt::print(stderr, "\rbuilding the PAG of {} events...", trace.events.size());
    pag = build_pag(trace, opt.pag);
    if (progress) fmt::print(stderr, "\r\033[K");
  }
  if (auto_window) {
    a.in.window = auto_choice.label;
    if (!helper_rank)
      fmt::print(stderr, "snailtrail: note: --window auto chose {}: {} (--window sets another)\n",
                 a.in.window == "whole" ? "the whole trace" : a.in.window, auto_choice.reason);
  }
  resolve_time_range(a.in, pag, opt);
  StreamedPlan splan;
  if (snail) splan = plan_streamed(snail->index().facts, opt.windows);
  if (snail ? splan.empty() : plan_windows(pag, opt.windows).empty()) {
    if (helper_rank) return 0;  // rank 0 says why
    throw std::invalid_argument(no_window_message(pag));
  }

  Names names(trace, pag);
  const std::string flame = snail ? std::string() : flame_json(trace, opt);
  BigVector<Event>().swap(trace.events);  // the events live on in the PAG
  a.report.top_k = a.top;
  a.report.source = a.in.trace;
  a.report.window_label = a.in.window;
  a.report.window_ns = opt.windows.width_ns;
  if (!helper_rank)  // DS2's number
    a.report.enrich = ds2_enricher(a.in.trace, a.in.importer, a.in.import, opt.windows.width_ns);
  report::ReportBuilder builder(a.report);
  for (const auto& [kind, n] : trace.import_diagnostics) builder.add_input_diagnostic(kind, n);
  auto last = std::chrono::steady_clock::now();
  // Windows are analyzed on worker threads, each extracting its window's timeline into
  // its own slot; the builder takes them in window order on this thread.
  // By window index (runs of windows without events make indexes sparse).
  std::unordered_map<uint64_t, report::Timeline> timelines;
  std::mutex timelines_mu;
  const bool keep_timelines = a.report.timelines > 0;
  const unsigned threads = analysis_threads(a.in);
  const std::function<void(const WindowView&, RenderedWindow&)> render = [&](const WindowView& v,
                                                                             RenderedWindow& r) {
    if (keep_timelines && v.summary.window.empty_run == 0) {
      report::Timeline t = report::extract_timeline(v, a.report.timeline_edges);
      if (helper_rank) {  // sent to rank 0 with the window
        report::append_timeline(r.text, t);
        return;
      }
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
      fmt::print(stderr, "\ranalyzing {}: window {}/{}{}", a.in.trace, done, total,
                 done == total ? "\n" : "");
    }
  };
  if (snail && group) {
    // Rank 0 takes its share, then every other rank's windows with their timelines.
    const auto [kb, ke] =
        rank_share(*group, snail->index(), splan, 1.0 - 0.05 * (group->size() - 1));
    if (helper_rank) {
      send_windows_to_root(*group, true, [&](const auto& send) {
        if (ke >= kb) analyze_snail_streamed(*snail, opt, splan, kb, ke, threads, render, send);
      });
      return 0;
    }
    group->start_receiving();
    if (ke >= kb)
      analyze_snail_streamed(*snail, opt, splan, kb, ke, threads, render, consume, on_progress);
    for (int rank = 1; rank < group->size(); ++rank)
      replay_rank(*group, rank, [&](RenderedWindow& r) {
        if (r.summary.window.empty_run > 0) return;
        report::Timeline t;
        if (!r.text.empty()) {
          report::read_timeline(r.text, t);
          t.summary = r.summary;
        }
        builder.add(r.summary, names, std::move(t));
      });
  } else if (snail) {
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
