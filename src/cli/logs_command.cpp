// `snailtrail logs templates|flows`: templates mined from plain logs, and the request
// flows they make up (docs/LOGS.md).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include <filesystem>
#include <fstream>
#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "logs/flows.hpp"
#include "logs/json_text.hpp"
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"
#include "output/writers.hpp"

namespace snailtrail::cli {
namespace {

using logs::append_json_text;

struct LogsArgs {
  std::vector<std::string> files;
  std::string log_format;
  std::string format = "table";
  std::string output;
  std::string id;
  bool by_thread = false;
  double similarity = 0.5;
  int depth = 4;
  size_t top = 10;
};

logs::LogOptions log_options(const LogsArgs& a) {
  logs::LogOptions o;
  o.format = a.log_format;
  o.drain.similarity = a.similarity;
  o.drain.depth = a.depth;
  return o;
}

std::string dur(int64_t ns, bool has_time) {
  if (!has_time) return fmt::format("{} lines", ns);
  return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
}

void write_diagnostics_table(fmt::memory_buffer& out, const logs::LogSet& set) {
  if (set.diagnostics.empty()) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "\ndiagnostics\n");
  for (const auto& [k, v] : set.diagnostics) fmt::format_to(it, "  {:<34} {}\n", printable(k), v);
}

std::string files_summary(const logs::LogSet& set) {
  std::string s;
  for (const logs::LogFile& f : set.files)
    s += fmt::format("{}{} (format {})", s.empty() ? "" : ", ", f.path, f.format);
  return s;
}

int run_templates(const LogsArgs& a) {
  const logs::LogSet set = logs::read_logs(a.files, log_options(a));
  OutputFile out(a.output);
  auto it = std::back_inserter(out.buf());
  if (a.format == "jsonl") {
    std::vector<logs::Token> tokens;
    std::vector<std::string_view> params;
    std::vector<std::string> templates(set.drain.cluster_count());
    for (uint32_t c = 0; c < templates.size(); ++c) templates[c] = set.drain.template_text(c);
    for (uint32_t f = 0; f < set.files.size(); ++f) {
      const logs::LogFile& file = set.files[f];
      for (size_t l = 0; l < file.lines.size(); ++l) {
        const logs::LineInfo& li = file.lines[l];
        fmt::format_to(it, "{{");
        if (set.files.size() > 1) {
          fmt::format_to(it, "\"file\": ");
          append_json_text(out.buf(), file.path);
          fmt::format_to(it, ", ");
        }
        fmt::format_to(it, "\"line\": {}", l + 1);
        if (li.kind == logs::LineKind::record || li.kind == logs::LineKind::no_header) {
          const logs::LogRecord& r = set.records[li.record];
          set.drain.params(r.cluster, set.tokens(r, tokens), params);
          fmt::format_to(it, ", \"template_id\": {}, \"template\": ", r.cluster);
          append_json_text(out.buf(), templates[r.cluster]);
          fmt::format_to(it, ", \"params\": [");
          for (size_t k = 0; k < params.size(); ++k) {
            fmt::format_to(it, "{}", k ? ", " : "");
            append_json_text(out.buf(), params[k]);
          }
          fmt::format_to(it, "]");
          if (file.has_time) fmt::format_to(it, ", \"ts_ns\": {}", r.ts);
          if (li.kind == logs::LineKind::no_header) fmt::format_to(it, ", \"no_header\": true");
        } else if (li.kind == logs::LineKind::joined) {
          fmt::format_to(it, ", \"joined_to\": {}", set.records[li.record].line);
        } else {
          fmt::format_to(it, ", \"skipped\": \"{}\"",
                         li.kind == logs::LineKind::binary ? "binary" : "empty");
        }
        fmt::format_to(it, "}}\n");
        out.maybe_flush();
      }
    }
    return 0;
  }
  std::vector<uint32_t> order(set.drain.cluster_count());
  for (uint32_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return set.drain.size(x) > set.drain.size(y); });
  fmt::format_to(it, "snailtrail logs templates: {} records, {} templates\n  {}\n",
                 set.records.size(), order.size(), files_summary(set));
  fmt::format_to(it, "\n  {:>5} {:>9} {:>6}  {}\n", "id", "count", "share", "template");
  for (uint32_t c : order)
    fmt::format_to(it, "  {:>5} {:>9} {:>5.1f}%  {}\n", c, set.drain.size(c),
                   100.0 * static_cast<double>(set.drain.size(c)) /
                       static_cast<double>(std::max<size_t>(set.records.size(), 1)),
                   printable(set.drain.template_text(c)));
  write_diagnostics_table(out.buf(), set);
  return 0;
}

void write_flow_json(fmt::memory_buffer& out, const logs::LogSet& set, const logs::Flow& f,
                     bool steps) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"id\": ");
  append_json_text(out, f.id);
  fmt::format_to(it, ", \"start_ns\": {}, \"latency_ns\": {}, \"records\": {}, \"nodes\": [",
                 f.start, f.latency(), f.records.size());
  std::vector<uint32_t> nodes;
  for (uint32_t r : f.records)
    if (std::find(nodes.begin(), nodes.end(), set.records[r].node) == nodes.end())
      nodes.push_back(set.records[r].node);
  for (size_t k = 0; k < nodes.size(); ++k) {
    fmt::format_to(it, "{}", k ? ", " : "");
    append_json_text(out, set.nodes[nodes[k]]);
  }
  fmt::format_to(it, "], \"flow\": {}", f.signature);
  if (steps) {
    fmt::format_to(it, ", \"steps\": [");
    for (size_t k = 0; k < f.records.size(); ++k) {
      const logs::LogRecord& r = set.records[f.records[k]];
      fmt::format_to(it, "{}{{\"file\": ", k ? ", " : "");
      append_json_text(out, set.files[r.file].path);
      fmt::format_to(it, ", \"line\": {}, \"node\": ", r.line);
      append_json_text(out, set.nodes[r.node]);
      fmt::format_to(it, ", \"ts_ns\": {}, \"template_id\": {}}}", r.ts, r.cluster);
    }
    fmt::format_to(it, "]");
  }
  fmt::format_to(it, "}}");
}

// What the outputs of `logs flows` share: the log set, its flows, the flows by latency
// (slowest first) and each step's share of all requests' latency.
struct FlowsView {
  const logs::LogSet& set;
  const logs::FlowSet& fs;
  std::vector<uint32_t> slowest;
  int64_t total_latency = 0;
  bool has_time = false;
  FlowsView(const logs::LogSet& s, const logs::FlowSet& f)
      : set(s), fs(f), slowest(f.flows.size()) {
    has_time = !set.files.empty();
    for (const logs::LogFile& file : set.files) has_time &= file.has_time;
    for (uint32_t i = 0; i < slowest.size(); ++i) slowest[i] = i;
    std::stable_sort(slowest.begin(), slowest.end(), [&](uint32_t x, uint32_t y) {
      return fs.flows[x].latency() > fs.flows[y].latency();
    });
    for (const logs::Flow& flow : fs.flows)
      total_latency = logs::saturating_add(total_latency, flow.latency());
  }
  double share(int64_t ns) const {
    return total_latency > 0 ? static_cast<double>(ns) / static_cast<double>(total_latency) : 0.0;
  }
  // --format json: the summary, the flow graph and the `top` slowest requests.
  void write_json(fmt::memory_buffer& buf, size_t top) const;
  // The table.
  void write_table(fmt::memory_buffer& buf, const LogsArgs& a) const;
};

void FlowsView::write_json(fmt::memory_buffer& buf, size_t top) const {
  auto it = std::back_inserter(buf);
  fmt::format_to(it,
                 "{{\"id_source\": \"{}\", \"records\": {}, \"records_in_flows\": {}, "
                 "\"records_without_id\": {}, \"multi_id_records\": {}, \"has_time\": {}, "
                 "\"requests\": {}, \"id_slots\": [",
                 fs.id_source, set.records.size(), fs.records_in_flows, fs.records_without_id,
                 fs.multi_id_records, has_time, fs.flows.size());
  for (size_t k = 0; k < fs.id_slots.size(); ++k) {
    const logs::IdSlot& s = fs.id_slots[k];
    fmt::format_to(it,
                   "{}{{\"template_id\": {}, \"param\": {}, \"records\": {}, \"distinct\": {}, "
                   "\"recurring\": {}}}",
                   k ? ", " : "", s.cluster, s.position, s.records, s.distinct, s.recurring);
  }
  fmt::format_to(it, "], \"templates\": [");
  for (uint32_t c = 0; c < set.drain.cluster_count(); ++c) {
    fmt::format_to(it, "{}{{\"id\": {}, \"count\": {}, \"template\": ", c ? ", " : "", c,
                   set.drain.size(c));
    append_json_text(buf, set.drain.template_text(c));
    fmt::format_to(it, "}}");
  }
  fmt::format_to(it, "], \"flows\": [");
  for (size_t k = 0; k < fs.signatures.size(); ++k) {
    const logs::FlowSignature& s = fs.signatures[k];
    fmt::format_to(it, "{}{{\"flow\": {}, \"count\": {}, \"mean_latency_ns\": {}, \"example\": ",
                   k ? ", " : "", k, s.count, s.total_ns / static_cast<int64_t>(s.count));
    append_json_text(buf, fs.flows[s.example].id);
    fmt::format_to(it, ", \"templates\": [");
    for (size_t j = 0; j < s.templates.size(); ++j)
      fmt::format_to(it, "{}{}", j ? ", " : "", s.templates[j]);
    fmt::format_to(it, "]}}");
  }
  fmt::format_to(it, "], \"graph\": [");
  for (size_t k = 0; k < fs.edges.size(); ++k) {
    const logs::FlowEdge& e = fs.edges[k];
    fmt::format_to(it,
                   "{}{{\"from\": {}, \"to\": {}, \"count\": {}, \"cross_node\": {}, "
                   "\"total_ns\": {}, \"mean_ns\": {}, \"max_ns\": {}, \"latency_share\": {}}}",
                   k ? ", " : "", e.from, e.to, e.count, e.cross_node, e.total_ns,
                   e.total_ns / static_cast<int64_t>(e.count), e.max_ns, share(e.total_ns));
  }
  fmt::format_to(it, "], \"slowest\": [");
  for (size_t k = 0; k < std::min(top, slowest.size()); ++k) {
    fmt::format_to(it, "{}", k ? ", " : "");
    write_flow_json(buf, set, fs.flows[slowest[k]], true);
  }
  fmt::format_to(it, "], \"diagnostics\": ");
  put_counts(buf, set.diagnostics);
  fmt::format_to(it, "}}\n");
}

void FlowsView::write_table(fmt::memory_buffer& buf, const LogsArgs& a) const {
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "snailtrail logs flows: {} records, {} templates, {} requests\n  {}\n",
                 set.records.size(), set.drain.cluster_count(), fs.flows.size(),
                 files_summary(set));
  fmt::format_to(it,
                 "  identifiers: {}; {} records in requests, {} without identifier, {} with "
                 "conflicting identifiers\n",
                 fs.id_source == "auto"
                     ? fmt::format("inferred ({} parameter slots)", fs.id_slots.size())
                 : fs.id_source == "regex"  ? "--id " + a.id
                 : fs.id_source == "thread" ? std::string("none found, grouped by (node, thread)")
                                            : std::string("none found"),
                 fs.records_in_flows, fs.records_without_id, fs.multi_id_records);
  auto tmpl = [&](uint32_t c) {
    std::string t = set.drain.template_text(c);
    if (t.size() <= 60) return printable(t);
    size_t cut = 57;  // not inside a UTF-8 sequence
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
    return printable(std::string_view(t).substr(0, cut)) + "...";
  };
  fmt::format_to(it, "\nmost common flows (template sequences)\n  {:>4} {:>7} {:>14}  {}\n", "flow",
                 "count", "mean latency", "templates");
  for (size_t k = 0; k < std::min(a.top, fs.signatures.size()); ++k) {
    const logs::FlowSignature& s = fs.signatures[k];
    std::string seq;
    for (size_t j = 0; j < s.templates.size() && j < 24; ++j)
      seq += fmt::format("{}T{}", j ? " " : "", s.templates[j]);
    if (s.templates.size() > 24) seq += fmt::format(" ... ({} steps)", s.templates.size());
    fmt::format_to(it, "  {:>4} {:>7} {:>14}  {}\n", k, s.count,
                   dur(s.total_ns / static_cast<int64_t>(s.count), has_time), seq);
  }
  size_t id_w = 2;
  for (size_t k = 0; k < std::min(a.top, slowest.size()); ++k)
    id_w = std::max(id_w, std::min<size_t>(display_width(printable(fs.flows[slowest[k]].id)), 48));
  fmt::format_to(it, "\nslowest requests\n  {:<{}} {:>14} {:>7} {:>5} {:>4}\n", "id", id_w,
                 "latency", "records", "nodes", "flow");
  for (size_t k = 0; k < std::min(a.top, slowest.size()); ++k) {
    const logs::Flow& f = fs.flows[slowest[k]];
    fmt::format_to(it, "  {:<{}} {:>14} {:>7} {:>5} {:>4}\n", printable(f.id), id_w,
                   dur(f.latency(), has_time), f.records.size(), f.node_count, f.signature);
  }
  fmt::format_to(it,
                 "\nsteps (flow graph edges) by share of request latency\n  {:>5} {:>5} {:>7} "
                 "{:>6} {:>14} {:>6}  {}\n",
                 "from", "to", "count", "x-node", "mean", "share", "to template");
  std::vector<size_t> by_time(fs.edges.size());
  for (size_t k = 0; k < by_time.size(); ++k) by_time[k] = k;
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](size_t x, size_t y) { return fs.edges[x].total_ns > fs.edges[y].total_ns; });
  for (size_t k = 0; k < std::min(a.top * 2, by_time.size()); ++k) {
    const logs::FlowEdge& e = fs.edges[by_time[k]];
    fmt::format_to(it, "  {:>5} {:>5} {:>7} {:>6} {:>14} {:>5.1f}%  {}\n",
                   fmt::format("T{}", e.from), fmt::format("T{}", e.to), e.count, e.cross_node,
                   dur(e.total_ns / static_cast<int64_t>(e.count), has_time),
                   100.0 * share(e.total_ns), tmpl(e.to));
  }
  fmt::format_to(it, "\ntemplates\n");
  for (uint32_t c = 0; c < set.drain.cluster_count(); ++c)
    fmt::format_to(it, "  T{:<4} {:>8}  {}\n", c, set.drain.size(c),
                   printable(set.drain.template_text(c)));
  write_diagnostics_table(buf, set);
}

int run_flows(const LogsArgs& a) {
  const logs::LogSet set = logs::read_logs(a.files, log_options(a));
  logs::FlowOptions fo;
  fo.id_regex = a.id;
  fo.by_thread = a.by_thread;
  const logs::FlowSet fs = logs::build_flows(set, fo);
  const FlowsView view(set, fs);
  OutputFile out(a.output);
  if (a.format == "jsonl") {
    for (const logs::Flow& f : fs.flows) {
      write_flow_json(out.buf(), set, f, true);
      out.buf().push_back('\n');
      out.maybe_flush();
    }
  } else if (a.format == "json") {
    view.write_json(out.buf(), a.top);
  } else {
    view.write_table(out.buf(), a);
  }
  return 0;
}

void add_common(CLI::App* cmd, LogsArgs& a) {
  cmd->add_option("FILES", a.files, "Log files (one per node)")->required();
  cmd->add_option("--log-format", a.log_format,
                  "Header format: a preset (log4j, log4j-thread, hdfs, iso8601, iso8601-plain, "
                  "syslog) or a pattern like '<Date> <Time> <Level> \\[<Thread>\\] <Component>: "
                  "<Content>'; default: detected per file");
  cmd->add_option("--similarity", a.similarity,
                  "Drain similarity threshold: a message joins a template when at least this "
                  "share of its constant tokens match")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--depth", a.depth,
                  "Drain parse-tree depth (token count + depth-2 prefix tokens)")
      ->check(CLI::Range(3, 16))
      ->capture_default_str();
  cmd->add_option("--output,-o", a.output, "Write results to FILE instead of stdout");
}

struct GenerateArgs {
  std::string style = "hdfs";
  size_t requests = 1000;
  uint64_t seed = 1;
  std::string dir;
  bool stack_traces = true;
};

int run_generate(const GenerateArgs& g) {
  const logs::SyntheticLog log =
      logs::generate_log(logs::parse_log_style(g.style), g.requests, g.seed, g.stack_traces);
  std::filesystem::create_directories(g.dir);
  for (const auto& [name, bytes] : log.files) {
    const std::filesystem::path p = std::filesystem::path(g.dir) / name;
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + p.string());
  }
  fmt::print("{}: {} files, {} lines, {} true templates\n", g.dir, log.files.size(), log.lines,
             log.templates.size());
  return 0;
}

}  // namespace

CommandRunner add_logs_command(CLI::App& app) {
  auto targs = std::make_shared<LogsArgs>();
  auto fargs = std::make_shared<LogsArgs>();
  CLI::App* cmd =
      app.add_subcommand("logs", "Templates and request flows from plain-text logs (docs/LOGS.md)");
  cmd->require_subcommand(1);
  CLI::App* t = cmd->add_subcommand("templates", "Mine log templates (Drain) from plain logs");
  add_common(t, *targs);
  t->add_option("--format,-f", targs->format,
                "Output: table (templates with counts) or jsonl (one object per input line)")
      ->check(CLI::IsMember({"table", "jsonl"}))
      ->capture_default_str();
  CLI::App* f = cmd->add_subcommand(
      "flows", "Group log lines into requests and report their flows, latencies and steps");
  add_common(f, *fargs);
  f->add_option("--format,-f", fargs->format,
                "Output: table, json (summary, flow graph, slowest) or jsonl (one request a line)")
      ->check(CLI::IsMember({"table", "json", "jsonl"}))
      ->capture_default_str();
  f->add_option("--id", fargs->id,
                "Request identifier: the first match of this regular expression in a message "
                "(its first group if it has one); default: inferred from the templates");
  f->add_flag("--by-thread", fargs->by_thread, "Group by (node, thread) header fields instead");
  f->add_option("--top", fargs->top, "Table and json: show this many flows and requests")
      ->capture_default_str();
  auto gargs = std::make_shared<GenerateArgs>();
  CLI::App* g = cmd->add_subcommand(
      "generate", "Write labelled synthetic logs of several nodes (for tests and benchmarks)");
  g->add_option("DIR", gargs->dir, "Directory to write one .log file per node into")->required();
  g->add_option("--style", gargs->style, "hdfs, spark, hadoop, syslog or service")
      ->check(CLI::IsMember({"hdfs", "spark", "hadoop", "syslog", "service"}))
      ->capture_default_str();
  g->add_option("--requests", gargs->requests, "Number of requests (about 4-18 lines each)")
      ->capture_default_str();
  g->add_option("--seed", gargs->seed, "Random seed")->capture_default_str();
  return [t, f, g, targs, fargs, gargs]() {
    if (*t) return run_templates(*targs);
    if (*f) return run_flows(*fargs);
    if (*g) return run_generate(*gargs);
    return -1;
  };
}

}  // namespace snailtrail::cli
