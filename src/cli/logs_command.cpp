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
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"
#include "output/logs_writers.hpp"

namespace snailtrail::cli {
namespace {

struct LogsArgs {
  std::vector<std::string> files;
  std::string log_format;
  std::string format = "table";
  std::string output;
  std::string id;
  std::string node_field;
  std::vector<std::string> masks;
  bool by_thread = false;
  double similarity = 0.5;
  int depth = 4;
  size_t top = 10;
  size_t census_values = logs::FlowOptions{}.census_cap;
};

logs::LogOptions log_options(const LogsArgs& a) {
  logs::LogOptions o;
  o.format = a.log_format;
  o.node_field = a.node_field;
  o.drain.masks = a.masks;
  o.drain.similarity = a.similarity;
  o.drain.depth = a.depth;
  return o;
}

int run_templates(const LogsArgs& a) {
  logs::LogOptions o = log_options(a);
  // The table needs only counts; per-line JSON the messages (for their parameters).
  o.keep = a.format == "table" ? logs::KeepText::none : logs::KeepText::messages;
  o.line_kinds = a.format != "table";
  o.keep_records = a.format != "table";  // the table: per-template counts only
  const logs::LogSet set = logs::read_logs(a.files, o);
  OutputFile out(a.output);
  if (a.format == "table") {
    output::write_templates_table(out.buf(), set);
    return 0;
  }
  std::vector<std::string> templates(set.drain.cluster_count());
  for (uint32_t c = 0; c < templates.size(); ++c) templates[c] = set.drain.template_text(c);
  for (uint32_t f = 0; f < set.files.size(); ++f)
    for (size_t l = 0; l < set.files[f].lines.size(); ++l) {
      output::write_templates_line(out.buf(), set, f, l, templates);
      out.maybe_flush();
    }
  return 0;
}

// Whether every input can be read a second time (not a pipe or standard input).
bool rereadable(const std::vector<std::string>& files) {
  std::error_code ec;
  for (const std::string& f : files)
    if (!std::filesystem::is_regular_file(f, ec)) return false;
  return true;
}

int run_flows(const LogsArgs& a) {
  logs::LogOptions o = log_options(a);
  logs::FlowOptions fo;
  fo.id_regex = a.id;
  fo.by_thread = a.by_thread;
  fo.census_cap = a.census_values;
  // Regular files are read twice (docs/LOGS.md "Speed"): the records keep no text and
  // the identifier census reads the messages again. --id searches the header too, so it
  // keeps whole lines; pipes keep the messages (one read). No per-line output.
  const bool passes = a.id.empty() && !a.by_thread && rereadable(a.files);
  o.keep = !a.id.empty()           ? logs::KeepText::whole_lines
           : a.by_thread || passes ? logs::KeepText::none
                                   : logs::KeepText::messages;
  o.line_kinds = false;
  // On files, no record: each record's template and its header fields packed (about 8
  // bytes a record, not 32), from which the passes over the records take them without
  // reading the files again; only the census reads the messages again.
  o.keep_records = !passes;
  o.keep_clusters = passes;
  o.pack_records = passes;
  const logs::LogSet set = logs::read_logs(a.files, o);
  OutputFile out(a.output);
  // The flows are streamed: memory follows the requests open at a time, and only the
  // --top slowest are kept; JSONL is written a flow at a time as they are given.
  logs::FlowVisitor each_flow;
  if (a.format == "jsonl")
    each_flow = [&](const logs::Flow& f) {
      output::write_flow_json(out.buf(), set, f, true);
      out.buf().push_back('\n');
      out.maybe_flush();
    };
  const logs::FlowSet fs =
      logs::stream_flows(set, o, fo, a.format == "jsonl" ? 0 : a.top, each_flow);
  if (a.format == "jsonl") return 0;
  const output::FlowsView view(set, fs);
  if (a.format == "json")
    view.write_json(out.buf(), a.top, [&out] { out.maybe_flush(); });
  else
    view.write_table(out.buf(), a.top, a.id, [&out] { out.maybe_flush(); });
  return 0;
}

void add_common(CLI::App* cmd, LogsArgs& a) {
  cmd->add_option("FILES", a.files, "Log files (one per node)")->required();
  cmd->add_option("--log-format", a.log_format,
                  "Header format: a preset (docs/LOGS.md: hdfs, openstack, zookeeper, android, "
                  "windows-cbs, log4j, syslog, proxifier, ...) or a pattern in loghub's "
                  "notation like '<Date> <Time> <Level> \\[<Thread>\\] <Component>: "
                  "<Content>'; default: detected per file");
  cmd->add_option("--node-field", a.node_field,
                  "A header field whose text is the line's node (e.g. Component, Logrecord); "
                  "default: a <Node>/<Host> field, else the file");
  cmd->add_option("--mask", a.masks,
                  "Also mask the first match of this regular expression in a token as a "
                  "variable (repeatable; numbers, hex, IPs, host:port, paths are built in)");
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
                "Request identifier: the first match of this regular expression in the whole "
                "line, header fields included (its first group if it has one); default: "
                "inferred from the templates");
  f->add_flag("--by-thread", fargs->by_thread, "Group by (node, thread) header fields instead");
  f->add_option("--top", fargs->top, "Table and json: show this many flows and requests")
      ->capture_default_str();
  f->add_option("--census-values", fargs->census_values,
                "Distinct id-like values the identifier census holds; beyond, a sample "
                "(bounded memory; docs/LOGS.md \"Speed\")")
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
