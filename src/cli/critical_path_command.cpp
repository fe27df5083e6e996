// `snailtrail critical-path`: the classic critical path of every request in an OTLP or
// Jaeger trace, and the critical time per service over all of them.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "importers/otel/critical_path.hpp"
#include "importers/otel/otel_importer.hpp"
#include "output/writers.hpp"

namespace snailtrail::cli {
namespace {

struct CriticalPathArgs {
  std::string trace;
  std::string format = "table";
  std::string importer = "auto";
  std::string output;
  size_t traces = 10;
};

std::string ms(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}

void write_json(fmt::memory_buffer& out, const importers::SpanSet& set,
                const std::vector<importers::CriticalPath>& paths,
                const std::vector<importers::ServiceTime>& services) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"traces\": [");
  for (size_t t = 0; t < paths.size(); ++t) {
    const importers::CriticalPath& p = paths[t];
    fmt::format_to(it, "{}{{\"trace_id\": ", t ? ", " : "");
    append_json_string(out, set.str(p.trace));
    fmt::format_to(it,
                   ", \"duration_ns\": {}, \"spans\": {}, \"clipped_children\": {}, "
                   "\"dropped_children\": {}, \"roots\": {}, \"nonblocking_children\": {}, "
                   "\"path\": [",
                   p.duration_ns, p.spans, p.clipped, p.dropped, p.roots, p.nonblocking);
    for (size_t k = 0; k < p.path.size(); ++k) {
      const importers::Span& s = set.spans[p.path[k].span];
      fmt::format_to(it, "{}{{\"span_id\": ", k ? ", " : "");
      append_json_string(out, set.str(s.id));
      fmt::format_to(it, ", \"operation\": ");
      append_json_string(out, set.str(s.operation));
      fmt::format_to(it, ", \"service\": ");
      append_json_string(out, set.str(s.service));
      fmt::format_to(it, ", \"start_ns\": {}, \"end_ns\": {}, \"self_ns\": {}}}", s.start, s.end,
                     p.path[k].critical_ns);
    }
    fmt::format_to(it, "]}}");
  }
  int64_t total = 0;
  for (const importers::ServiceTime& s : services) total += s.critical_ns;
  fmt::format_to(it, "], \"services\": [");
  for (size_t k = 0; k < services.size(); ++k) {
    fmt::format_to(it, "{}{{\"service\": ", k ? ", " : "");
    append_json_string(out, set.str(services[k].service));
    fmt::format_to(it, ", \"critical_ns\": {}, \"share\": {}, \"spans_on_path\": {}}}",
                   services[k].critical_ns,
                   total > 0 ? static_cast<double>(services[k].critical_ns) / total : 0.0,
                   services[k].spans_on_path);
  }
  fmt::format_to(it, "], \"import_diagnostics\": {{");
  for (size_t k = 0; k < set.diagnostics.size(); ++k) {
    fmt::format_to(it, "{}", k ? ", " : "");
    append_json_string(out, set.diagnostics[k].first);
    fmt::format_to(it, ": {}", set.diagnostics[k].second);
  }
  fmt::format_to(it, "}}}}\n");
}

void write_table(fmt::memory_buffer& out, const CriticalPathArgs& a, const importers::SpanSet& set,
                 const std::vector<importers::CriticalPath>& paths,
                 const std::vector<importers::ServiceTime>& services) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "snailtrail critical-path {}: {} traces, {} spans\n", a.trace, paths.size(),
                 set.spans.size());
  // The slowest requests first: they are the ones worth explaining.
  std::vector<size_t> order(paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return paths[x].duration_ns > paths[y].duration_ns; });
  if (order.size() > a.traces) order.resize(a.traces);
  for (size_t i : order) {
    const importers::CriticalPath& p = paths[i];
    const int64_t t0 = p.start_ns;
    fmt::format_to(it, "\ntrace {}  {} ms, {} spans, {} on the critical path\n", set.str(p.trace),
                   ms(p.duration_ns), p.spans, p.path.size());
    if (p.clipped || p.dropped)
      fmt::format_to(it,
                     "  ({} children clipped to their parent: clock skew or async work; {} "
                     "entirely outside it, left out)\n",
                     p.clipped, p.dropped);
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
    for (const importers::PathStep& s : p.path) {
      const importers::Span& sp = set.spans[s.span];
      fmt::format_to(it, "  {:>10} {:>10} {:>10} {:>5.1f}%  {:<16} {}\n", ms(sp.start - t0),
                     ms(sp.end - t0), ms(s.critical_ns),
                     p.duration_ns > 0 ? 100.0 * s.critical_ns / p.duration_ns : 100.0,
                     set.str(sp.service), set.str(sp.operation));
    }
  }
  if (paths.size() > order.size())
    fmt::format_to(it, "\n({} more traces; --traces N shows more, --format json shows all)\n",
                   paths.size() - order.size());
  int64_t total = 0;
  for (const importers::ServiceTime& s : services) total += s.critical_ns;
  fmt::format_to(it, "\ncritical time by service (all {} traces)\n", paths.size());
  fmt::format_to(it, "  {:<16} {:>12} {:>7} {:>8}\n", "service", "crit_ms", "share", "spans");
  for (const importers::ServiceTime& s : services)
    fmt::format_to(it, "  {:<16} {:>12} {:>6.1f}% {:>8}\n", set.str(s.service), ms(s.critical_ns),
                   total > 0 ? 100.0 * s.critical_ns / total : 0.0, s.spans_on_path);
  if (!set.diagnostics.empty()) {
    fmt::format_to(it, "\nimport diagnostics\n");
    for (const auto& [key, n] : set.diagnostics) fmt::format_to(it, "  {:<40} {}\n", key, n);
  }
}

int run(const CriticalPathArgs& a) {
  const importers::SpanSet set = importers::read_spans(a.trace, a.importer);
  if (set.spans.empty()) throw TraceError(set.source, "input", "the trace has no spans");
  const std::vector<importers::CriticalPath> paths = importers::critical_paths(set);
  const std::vector<importers::ServiceTime> services =
      importers::critical_time_by_service(set, paths);
  OutputFile out(a.output);
  if (a.format == "json")
    write_json(out.buf(), set, paths, services);
  else
    write_table(out.buf(), a, set, paths, services);
  out.flush();
  return 0;
}

}  // namespace

CommandRunner add_critical_path_command(CLI::App& app) {
  auto args = std::make_shared<CriticalPathArgs>();
  CLI::App* cmd = app.add_subcommand(
      "critical-path",
      "Critical path of every request in an OTLP or Jaeger trace, and critical time per service");
  cmd->add_option("TRACE", args->trace, "Span trace: OTLP/JSON or Jaeger JSON")->required();
  cmd->add_option("--format,-f", args->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--importer", args->importer,
                  "Input format: auto, otlp or jaeger (auto: recognised by content)")
      ->check(CLI::IsMember({"auto", "otlp", "jaeger"}))
      ->capture_default_str();
  cmd->add_option("--traces", args->traces, "Table: show the N slowest traces")
      ->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write results to FILE instead of stdout");
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
