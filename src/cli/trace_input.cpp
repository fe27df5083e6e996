#include "cli/trace_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/duration.hpp"
#include "cli/import_options.hpp"
#include "cli/import_warnings.hpp"
#include "cli/streamed_input.hpp"
#include "importers/auto_window.hpp"
#include "mpi/rank_group.hpp"

namespace snailtrail::cli {

void add_trace_input_options(CLI::App* cmd, TraceInputArgs& a, std::string_view what_in_memory,
                             bool trace_optional) {
  auto* trace =
      cmd->add_option("TRACE", a.trace, "Trace file (.jsonl or .snail; - for JSONL on stdin)");
  if (!trace_optional) trace->required();
  cmd->add_option("--window,-w", a.window,
                  "Tumbling window width (e.g. 1s, 250ms, 100us), 'whole', or 'auto': the "
                  "whole trace for batch jobs and request traces (spark, chrome, otlp, jaeger, "
                  "logs), 1s for streams (docs/OUTPUT.md)")
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
  // --importer auto is resolved once, when the command line is parsed.
  cmd->parse_complete_callback([&a] {
    a.importer_option = a.importer;
    a.importer = importers::resolve_importer(a.trace, a.importer);
  });
  add_import_options(cmd, a.import);
  cmd->add_option("--seed", a.seed, "Seed of the sampled single critical path")
      ->capture_default_str();
  cmd->add_flag("--in-memory", a.in_memory,
                fmt::format("Read the whole trace before analyzing (default for .snail with "
                            "tumbling windows: block by block, in bounded memory; same {})",
                            what_in_memory));
  cmd->add_flag("--streamed", a.streamed,
                "Read a .snail trace block by block even when one window holds a quarter or "
                "more of its events (by default such a trace is read whole: faster, and "
                "streaming would hold about as much)");
  cmd->add_option("--threads,-j", a.threads,
                  "Threads analyzing windows (0: one per core); results do not depend on it")
      ->capture_default_str();
}

void apply_window_options(const TraceInputArgs& a, AnalysisOptions& opt) {
  opt.pag.gap_threshold_ns = parse_duration(a.gap_threshold);
  opt.summary.seed = a.seed;
  if (a.window == "auto") {
    opt.windows.width_ns = importers::kAutoStreamWindowNs;
  } else if (a.window != "whole") {
    opt.windows.width_ns = parse_duration(a.window);
    if (opt.windows.width_ns <= 0) throw std::invalid_argument("--window must be positive");
  }
}

AutoWindowChoice resolve_auto_window(std::string_view importer, AnalysisOptions& opt) {
  const importers::AutoWindow w = importers::choose_auto_window(importer);
  opt.windows.width_ns = w.whole ? 0 : w.width_ns;
  return {w.label, w.reason};
}

unsigned analysis_threads(const TraceInputArgs& a) {
  // Under mpirun the ranks on one host share its cores.
  return a.threads > 0
             ? a.threads
             : std::max(1u, std::thread::hardware_concurrency() / mpi::ranks_on_this_host());
}

Trace read_whole_trace(const TraceInputArgs& a, bool progress, std::string_view* used) {
  if (progress) fmt::print(stderr, "\rreading {}...", a.trace);
  Trace trace = importers::import_trace(a.trace, a.importer, a.import, used);
  warn_if_cut(trace);
  if (trace.events.empty()) throw TraceError(trace.source, "input", "the trace has no events");
  return trace;
}

std::unique_ptr<SnailFile> open_streamed_trace(const TraceInputArgs& a,
                                               const AnalysisOptions& opt) {
  if (a.in_memory || a.window == "whole") return nullptr;
  return open_snail_streamed(a.trace, a.importer, opt);
}

bool keep_streamed(const TraceInputArgs& a, const SnailFile& snail, const StreamedPlan& plan) {
  // A JSONL trace has been parsed once already, into the spooled file: reading it whole
  // would parse it again (slower than streaming the spool).
  return a.streamed || is_native_jsonl(a.trace, a.importer) || streaming_pays(snail.index(), plan);
}

void resolve_time_range(const TraceInputArgs& a, const Pag& pag, AnalysisOptions& opt) {
  auto instant = [&](const std::string& text, const char* flag) {
    const Instant i = parse_instant(text);
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
}

std::string no_window_message(const Pag& pag) {
  return fmt::format("no window to analyze: the trace spans [{}, {}] ns, outside --from/--to",
                     pag.first_ts, pag.last_ts);
}

bool AnalysisInput::has_windows(const AnalysisOptions& opt) const {
  return snail ? !plan.empty() : !plan_windows(pag, opt.windows).empty();
}

namespace {

// A .snail file with a profile block (kind 4) has events the block-by-block reading
// skips: read whole when they are needed (the report's flame view).
bool has_profile_block(const SnailFile& snail) {
  for (const SnailBlock& b : snail.index().blocks)
    if (b.kind != 1 && b.kind != 2) return true;
  return false;
}

}  // namespace

AnalysisInput open_analysis_input(TraceInputArgs& a, AnalysisOptions& opt, bool progress,
                                  bool whole_if_profile, bool helper_rank) {
  const bool auto_window = a.window == "auto";
  if (auto_window) a.window = "1s";  // until the importer is known
  AnalysisInput in;
  in.snail = open_streamed_trace(a, opt);
  if (in.snail && whole_if_profile && has_profile_block(*in.snail)) {
    if (!helper_rank)
      fmt::print(stderr,
                 "snailtrail: note: {}: read whole into memory: the flame view needs the "
                 "whole trace\n",
                 a.trace);
    in.snail.reset();
  }
  if (helper_rank && !in.snail) return in;  // rank 0 does it all
  AutoWindowChoice auto_choice;
  if (in.snail) {
    in.trace = in.snail->names();
    in.pag = names_pag(in.snail->index().facts);
    if (auto_window) auto_choice = resolve_auto_window("snail", opt);
  } else {
    std::string_view used;
    in.trace = read_whole_trace(a, progress, &used);
    if (auto_window) auto_choice = resolve_auto_window(used, opt);
    if (progress) fmt::print(stderr, "\rbuilding the PAG of {} events...", in.trace.events.size());
    in.pag = build_pag(in.trace, opt.pag);
    if (progress) fmt::print(stderr, "\r\033[K");
  }
  if (auto_window) {
    a.window = auto_choice.label;
    if (!helper_rank)
      fmt::print(stderr, "snailtrail: note: --window auto chose {}: {} (--window sets another)\n",
                 a.window == "whole" ? "the whole trace" : a.window, auto_choice.reason);
  }
  resolve_time_range(a, in.pag, opt);
  if (in.snail) in.plan = plan_streamed(in.snail->index().facts, opt.windows);
  if (in.snail && !keep_streamed(a, *in.snail, in.plan)) {
    a.in_memory = true;  // and the window is known now: no second note
    return open_analysis_input(a, opt, progress, whole_if_profile, helper_rank);
  }
  return in;
}

StreamedStats analyze_input(AnalysisInput& in, const AnalysisOptions& opt, unsigned threads,
                            const std::function<void(const WindowView&, RenderedWindow&)>& render,
                            const std::function<void(RenderedWindow&)>& consume,
                            const std::function<void(size_t, size_t)>& on_progress) {
  if (in.snail)
    return analyze_snail_streamed(*in.snail, opt, in.plan, in.plan.k0, in.plan.k1, threads, render,
                                  consume, on_progress);
  analyze_pag_parallel(in.pag, opt, threads, render, consume, on_progress);
  return {};
}

}  // namespace snailtrail::cli
