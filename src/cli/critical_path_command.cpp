// `snailtrail critical-path`: the classic critical path of every request in an OTLP or
// Jaeger trace, and the critical time per service over all of them.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>

#include "cli/commands.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "importers/otel/otel_importer.hpp"
#include "output/names.hpp"
#include "output/writers.hpp"
#include "requests/critical_path.hpp"
#include "requests/folded.hpp"
#include "serve/trace_path_json.hpp"
#include "trace/plural.hpp"

namespace snailtrail::cli {
namespace {

struct CriticalPathArgs {
  std::string trace;
  std::string format = "table";
  std::string importer = "auto";
  std::string output;
  size_t traces = 10;
  unsigned threads = 0;
  size_t trace_gap = 64;
  double percentile = 0;  // folded: 0 = all traces
  double bucket = 1;      // percentile points either side
  std::vector<double> diff;
};

using requests::PathCollection;
using requests::ServiceTime;

std::string ms(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}

void write_json(fmt::memory_buffer& out, const PathCollection& all,
                const std::vector<ServiceTime>& services,
                const std::vector<std::pair<std::string, uint64_t>>& diagnostics) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"traces\": [");
  for (size_t t = 0; t < all.traces().size(); ++t) {
    if (t) fmt::format_to(it, ", ");
    serve::append_trace_path_json(out, all, all.traces()[t]);
  }
  fmt::format_to(it, "], \"services\": ");
  serve::append_services_json(out, all, services);
  fmt::format_to(it, ", \"import_diagnostics\": ");
  put_counts(out, diagnostics);
  fmt::format_to(it, "}}\n");
}

void write_table(fmt::memory_buffer& out, const CriticalPathArgs& a, const PathCollection& all,
                 const std::vector<ServiceTime>& services,
                 const std::vector<std::pair<std::string, uint64_t>>& diagnostics) {
  auto it = std::back_inserter(out);
  const auto& paths = all.traces();
  fmt::format_to(it, "snailtrail critical-path {}: {}, {}\n", a.trace,
                 counted(paths.size(), "trace", "traces"),
                 counted(all.total_spans(), "span", "spans"));
  // The slowest requests first: they are the ones worth explaining.
  std::vector<size_t> order(paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return paths[x].duration_ns > paths[y].duration_ns; });
  if (order.size() > a.traces) order.resize(a.traces);
  for (size_t i : order) {
    const PathCollection::TracePaths& p = paths[i];
    const int64_t t0 = p.start_ns;
    fmt::format_to(it, "\ntrace {}  {} ms, {} spans, {} on the critical path\n",
                   printable(p.trace_id()), ms(p.duration_ns), p.spans, p.path.size());
    if (p.clipped || p.dropped)
      fmt::format_to(it,
                     "  ({} clipped to their parent: clock skew or async work; {} "
                     "entirely outside it, left out)\n",
                     counted(p.clipped, "child", "children"), p.dropped);
    if (p.roots > 1)
      fmt::format_to(it, "  ({} roots: one path per root, concatenated; duration is their sum)\n",
                     p.roots);
    if (p.nonblocking)
      fmt::format_to(it,
                     "  ({} consumer children of producers: not blocking, left out with their "
                     "subtree)\n",
                     p.nonblocking);
    fmt::format_to(it, "  {:>10} {:>10} {:>10} {:>6}  {:<16} {}\n", "start_ms", "end_ms", "crit_ms",
                   "crit%", "service", "operation");
    for (const PathCollection::Step& s : p.path)
      fmt::format_to(it, "  {:>10} {:>10} {:>10} {:>5.1f}%  {:<16} {}\n", ms(s.start_ns - t0),
                     ms(s.end_ns - t0), ms(s.self_ns),
                     p.duration_ns > 0 ? 100.0 * s.self_ns / p.duration_ns : 100.0,
                     printable(all.name(s.service)), printable(all.name(s.operation)));
  }
  if (paths.size() > order.size())
    fmt::format_to(it, "\n({} more traces; --traces N shows more, --format json shows all)\n",
                   paths.size() - order.size());
  int64_t total = 0;
  for (const ServiceTime& s : services) total += s.critical_ns;
  fmt::format_to(it, "\ncritical time by service (all {})\n",
                 counted(paths.size(), "trace", "traces"));
  fmt::format_to(it, "  {:<16} {:>12} {:>7} {:>8}\n", "service", "crit_ms", "share", "spans");
  for (const ServiceTime& s : services)
    fmt::format_to(it, "  {:<16} {:>12} {:>6.1f}% {:>8}\n", printable(all.name(s.service)),
                   ms(s.critical_ns), total > 0 ? 100.0 * s.critical_ns / total : 0.0,
                   s.spans_on_path);
  if (!diagnostics.empty()) {
    fmt::format_to(it, "\nimport diagnostics\n");
    for (const auto& [key, n] : diagnostics) fmt::format_to(it, "  {:<40} {}\n", printable(key), n);
  }
}

int run(const CriticalPathArgs& a) {
  const bool contexts = a.format == "folded" || !a.diff.empty();
  // Units are computed in parallel and merged in file order as soon as they are next.
  std::mutex mutex;
  std::vector<std::optional<requests::UnitPaths>> pending;
  size_t next = 0;
  PathCollection all;
  importers::SpanStream stream = importers::stream_spans(
      a.trace, a.importer, a.threads,
      [&](size_t unit, const importers::SpanSet& set) {
        std::vector<uint32_t> tree_parent;
        const std::vector<requests::CriticalPath> paths =
            requests::critical_paths(set, &tree_parent);
        requests::UnitPaths u = requests::summarize_paths(set, paths, tree_parent, contexts);
        std::lock_guard lock(mutex);
        if (pending.size() <= unit - next) pending.resize(unit - next + 1);
        pending[unit - next] = std::move(u);
        size_t ready = 0;
        while (ready < pending.size() && pending[ready]) all.add(*pending[ready++]);
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(ready));
        next += ready;
      },
      a.trace_gap);
  // Units skipped (bad traces) leave holes: merge what is left, in order.
  for (auto& u : pending)
    if (u) all.add(*u);
  warn_skipped_traces(stream);
  std::vector<std::pair<std::string, uint64_t>> diagnostics = std::move(stream.diagnostics);
  if (all.repeated_trace_ids())
    diagnostics.emplace_back(
        importers::span_diagnostic(stream.format, importers::SpanDiagnostic::repeated_trace_ids)
            .name,
        all.repeated_trace_ids());
  if (all.total_spans() == 0) throw TraceError(stream.source, "input", "the trace has no spans");
  OutputFile out(a.output);
  if (!a.diff.empty()) {
    const std::string text = requests::folded_diff(all, a.diff[0], a.diff[1], a.bucket);
    out.buf().append(text.data(), text.data() + text.size());
  } else if (a.format == "folded") {
    const std::string text = requests::folded_stacks(all, a.percentile, a.bucket);
    out.buf().append(text.data(), text.data() + text.size());
  } else {
    const std::vector<ServiceTime> services = all.by_service();
    if (a.format == "json")
      write_json(out.buf(), all, services, diagnostics);
    else
      write_table(out.buf(), a, all, services, diagnostics);
  }
  out.flush();
  return 0;
}

}  // namespace

CommandRunner add_critical_path_command(CLI::App& app) {
  auto args = std::make_shared<CriticalPathArgs>();
  // Percentiles as 99 or p99.
  const auto strip_p = [](const std::string& s) {
    return s.starts_with('p') || s.starts_with('P') ? s.substr(1) : s;
  };
  CLI::App* cmd = app.add_subcommand(
      "critical-path",
      "Critical path of every request in an OTLP or Jaeger trace, and critical time per service");
  cmd->add_option("TRACE", args->trace, "Span trace: OTLP/JSON or Jaeger JSON")->required();
  cmd->add_option("--format,-f", args->format,
                  "Output: table, json, or folded (calling-context stacks of the critical "
                  "path summed over traces: service:operation;... critical_us)")
      ->check(CLI::IsMember({"table", "json", "folded"}))
      ->capture_default_str();
  cmd->add_option("--importer", args->importer,
                  "Input format: auto, otlp or jaeger (auto: recognised by content)")
      ->check(CLI::IsMember({"auto", "otlp", "jaeger"}))
      ->capture_default_str();
  cmd->add_option("--traces", args->traces, "Table: show the N slowest traces")
      ->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write results to FILE instead of stdout");
  cmd->add_option("--percentile", args->percentile,
                  "Folded: only the traces around this percentile of end-to-end duration "
                  "(e.g. 50, 95, 99 or p99; see --bucket)")
      ->transform(strip_p)
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--bucket", args->bucket,
                  "Folded, diff: the traces between the (P-W)th and (P+W)th percentile "
                  "durations, W in percentile points")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--diff", args->diff,
                  "Two percentiles A B: folded stacks with the mean critical us per trace "
                  "around A and around B (stack a b, as difffolded)")
      ->expected(2)
      ->transform(strip_p)
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--threads", args->threads, "Worker threads across traces (0: one per core)")
      ->capture_default_str();
  cmd->add_option("--trace-gap", args->trace_gap,
                  "OTLP: a trace is complete once N requests (lines) follow its last span; "
                  "later spans of it form a new piece, counted as otlp.cut_traces")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
