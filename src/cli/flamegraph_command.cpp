// `snailtrail flamegraph`: flame graphs of stack samples (perf script, folded stacks, or
// the profile a `snailtrail run --profile` wrote into its trace), per operator, on-CPU,
// off-CPU, mixed, or weighted by critical participation (docs/FLAME.md).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/flamegraph_args.hpp"
#include "cli/output_file.hpp"
#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/import.hpp"
#include "flame/profile_io.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

bool is_trace_path(const std::string& p) {
  auto ends = [&](const char* s) {
    std::string l = p;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    return l.ends_with(s);
  };
  return ends(".snail") || ends(".jsonl") || ends(".ndjson");
}

uint32_t parse_u32(const std::string& s, const char* what) {
  try {
    size_t pos = 0;
    unsigned long long v = std::stoull(s, &pos);
    if (pos != s.size() || v > 0xfffffffeull || s.empty() || s[0] == '-') throw 0;
    return static_cast<uint32_t>(v);
  } catch (...) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not an id in 0..2^32-2", what, s));
  }
}

using namespace flame;

// The samples of the input and the activity trace they fall in, if any: the input itself
// when it is a trace (with a profile), else --trace. Text inputs are read in chunks.
std::optional<Trace> read_samples(FlameArgs& a, SampleSet& set) {
  std::optional<Trace> trace;
  std::string fmt_in = a.input_format;
  if (fmt_in == "auto") fmt_in = is_trace_path(a.input) ? "trace" : "";
  if (fmt_in == "trace") {
    trace = read_trace(a.input);
    samples_from_trace(*trace, set);
    if (!a.trace.empty())
      throw std::invalid_argument(
          "--trace: the input is a trace already (its own activities are used)");
    return trace;
  }
  if (a.weight != "samples" && a.weight != "period")
    throw std::invalid_argument(fmt::format("--weight: '{}' is not samples or period", a.weight));
  const std::string head = read_file_head(a.input, 1 << 16);
  check_text(head, a.input);
  if (fmt_in.empty()) fmt_in = sniff_sample_format(head);
  if (fmt_in == "perf") {
    PerfOptions po;
    po.event = a.perf_event == "all" ? "" : a.perf_event;
    po.first_event_only = a.perf_event.empty();
    po.weight_period = a.weight == "period";
    po.annotate_kernel = a.kernel;
    po.tidy_names = !a.full_names;
    a.perf_input = true;
    parse_perf_script_file(a.input, set, po);
  } else if (fmt_in == "folded") {
    if (a.weight == "period")
      throw std::invalid_argument("--weight period: folded stacks carry counts only");
    parse_folded_file(a.input, set);
  } else {
    throw std::invalid_argument(
        fmt::format("--input-format: '{}' is not auto, perf, folded or trace", a.input_format));
  }
  if (set.samples.empty()) throw TraceError(a.input, "samples", no_samples_message(set, fmt_in));
  if (!a.trace.empty()) trace = read_trace(a.trace);
  return trace;
}

// Threads -> workers: --thread-worker, else a thread named like a trace's worker.
void place_samples_on_workers(const FlameArgs& a, const std::optional<Trace>& trace,
                              SampleSet& set) {
  std::map<uint32_t, uint32_t> t2w;
  for (const std::string& m : a.thread_worker) {
    size_t eq = m.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(fmt::format("--thread-worker: '{}' is not TID=WORKER", m));
    t2w[parse_u32(m.substr(0, eq), "--thread-worker")] =
        parse_u32(m.substr(eq + 1), "--thread-worker");
  }
  if (trace) {
    std::map<std::string, uint32_t> by_name;
    for (auto& [id, name] : trace->worker_names) by_name[name] = id;
    // By the sample's own comm: a thread that execs is another program before and after.
    for (StackSample& s : set.samples)
      if (s.worker == kNoId && s.comm != kNoId && !t2w.count(s.thread))
        if (auto it = by_name.find(set.comm(s.comm)); it != by_name.end()) s.worker = it->second;
    for (auto& [id, name] : trace->operator_names) set.operator_names.try_emplace(id, name);
  }
  for (StackSample& s : set.samples)
    if (s.worker == kNoId && s.thread != kNoId)
      if (auto it = t2w.find(s.thread); it != t2w.end()) s.worker = it->second;
}

// Each sample's weight in `mode`; with an activity trace, the samples' critical weights
// (and their diagnostics) are computed whatever the mode.
std::vector<double> sample_weights(const FlameArgs& a, Mode mode, const std::optional<Trace>& trace,
                                   SampleSet& set) {
  std::vector<double> weights;
  if (trace && !trace->events.empty()) {
    AnalysisOptions ao;
    if (!a.window.empty()) ao.windows.width_ns = parse_duration(a.window);
    CriticalResult cr = critical_weights(*trace, set, ao);
    if (mode == Mode::critical) {
      weights = std::move(cr.weight);
      if (!a.quiet)
        fmt::print(stderr,
                   "critical: {:.0f} ns of {:.0f} ns critical time on timelines carried by {} "
                   "samples in {} windows; {} samples outside any activity, {} without worker "
                   "or time\n",
                   cr.attributed_ns, cr.timeline_critical_ns, cr.samples_in_edges, cr.windows,
                   cr.samples_outside, cr.samples_unplaced);
    }
    if (cr.samples_outside)
      set.diagnostics.emplace_back("critical.samples_outside", cr.samples_outside);
    if (cr.samples_unplaced)
      set.diagnostics.emplace_back("critical.samples_without_worker", cr.samples_unplaced);
  } else if (mode == Mode::critical) {
    throw std::invalid_argument(
        "--mode critical needs an activity trace: a trace with a profile, or --trace FILE");
  }
  if (mode != Mode::critical) weights = mode_weights(set, mode);
  return weights;
}

// The tree's roots and filters (--operator, --worker); filtered-out samples weigh 0
// everywhere (also in the JSON's per-operator totals).
TreeOptions tree_options(const FlameArgs& a, const SampleSet& set, std::vector<double>& weights) {
  TreeOptions to;
  to.operator_root = !a.no_operator_root;
  to.thread_root = a.thread_root;
  to.short_names = !a.full_names && !a.perf_input;  // perf: stackcollapse-perf's names
  if (!a.no_process_root)
    to.process_root = a.tid_root   ? ProcessRoot::tid
                      : a.pid_root ? ProcessRoot::pid
                                   : ProcessRoot::comm;
  if (!a.op.empty()) {
    std::optional<uint32_t> id;
    for (auto& [oid, name] : set.operator_names)
      if (name == a.op) id = oid;
    if (!id) {
      bool numeric = !a.op.empty() && std::all_of(a.op.begin(), a.op.end(), ::isdigit);
      if (!numeric)
        throw std::invalid_argument(fmt::format("--operator: no operator named '{}'", a.op));
      id = parse_u32(a.op, "--operator");
    }
    to.operator_id = id;
  }
  if (a.worker >= 0) to.worker = static_cast<uint32_t>(a.worker);
  for (size_t i = 0; i < set.samples.size() && i < weights.size(); ++i) {
    const StackSample& s = set.samples[i];
    if (to.operator_id && s.op != *to.operator_id) weights[i] = 0;
    if (to.worker && (s.worker != kNoId ? s.worker : s.thread) != *to.worker) weights[i] = 0;
  }
  return to;
}

std::string render(const FlameArgs& a, Mode mode, TreeOptions to, const SampleSet& set,
                   const std::vector<double>& weights, const std::optional<Trace>& trace) {
  if (a.format == "folded") return to_folded(set, weights, to);
  if (a.format == "speedscope") {
    SpeedscopeOptions so;
    so.name = a.title.empty() ? fmt::format("{} {}", a.input, mode_name(mode)) : a.title;
    if (trace) so.worker_names.insert(trace->worker_names.begin(), trace->worker_names.end());
    return to_speedscope(set, weights, to, mode, so);
  }
  if (a.format == "json") return to_json(build_tree(set, weights, to), set, weights, mode);
  SvgOptions so;
  to.min_share = so.min_width_px / (so.width - 20);  // what the SVG would not draw
  so.unit = mode_unit(mode);
  so.title = a.title.empty() ? fmt::format("{} flame graph", mode_name(mode)) : a.title;
  so.subtitle = a.input;
  if (to.operator_id) so.subtitle += ", operator " + a.op;
  if (to.worker) so.subtitle += fmt::format(", worker {}", *to.worker);
  return to_svg(build_tree(set, weights, to), so);
}

int run_flamegraph(FlameArgs& a) {
  std::optional<Mode> mode = parse_mode(a.mode);
  if (!mode)
    throw std::invalid_argument(
        fmt::format("--mode: '{}' is not on-cpu, off-cpu, mixed or critical", a.mode));
  if (a.format != "folded" && a.format != "svg" && a.format != "json" && a.format != "speedscope")
    throw std::invalid_argument(
        fmt::format("--format: '{}' is not folded, svg, json or speedscope", a.format));
  SampleSet set;
  const std::optional<Trace> trace = read_samples(a, set);
  if (a.hz > 0) set.period_ns = static_cast<int64_t>(1e9 / a.hz);
  place_samples_on_workers(a, trace, set);
  std::vector<double> weights = sample_weights(a, *mode, trace, set);
  const TreeOptions to = tree_options(a, set, weights);
  if (!a.quiet)
    for (auto& [kind, n] : set.diagnostics) {
      auto fl = set.first_line.find(kind);
      fmt::print(stderr, "snailtrail: warning: {}: {} {}{}\n", a.input, n, kind,
                 fl != set.first_line.end() ? fmt::format(" (first at line {})", fl->second) : "");
    }
  OutputFile out(a.output);
  const std::string text = render(a, *mode, to, set, weights, trace);
  out.buf().append(text.data(), text.data() + text.size());
  return 0;
}

}  // namespace

CommandRunner add_flamegraph_command(CLI::App& app) {
  auto a = std::make_shared<FlameArgs>();
  CLI::App* cmd = app.add_subcommand(
      "flamegraph",
      "Flame graphs of stack samples per operator: on-CPU, off-CPU, mixed, or weighted by "
      "critical participation (code on the critical path)");
  cmd->add_option("INPUT", a->input,
                  "Samples: a trace written by `run --profile` (.snail), `perf script` "
                  "output, or folded stacks ('a;b;c 12')")
      ->required();
  cmd->add_option("--trace", a->trace,
                  "Activity trace for imported samples (operators, --mode critical); threads "
                  "map to workers by --thread-worker or by thread name = worker name");
  cmd->add_option("--input-format", a->input_format, "auto, perf, folded or trace")
      ->capture_default_str();
  cmd->add_option("--mode", a->mode,
                  "on-cpu (samples), off-cpu (ns waited), mixed (ns) or critical (ns of "
                  "critical time: each sample weighted by the CP of the activity it fell in)")
      ->capture_default_str();
  cmd->add_option("--format", a->format,
                  "folded, svg, json or speedscope (https://www.speedscope.app file format: "
                  "one profile for all samples, then one per worker or thread)")
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "Output file (default: stdout)");
  cmd->add_option("--operator", a->op, "Only samples of this operator (name or id)");
  cmd->add_option("--worker", a->worker, "Only samples of this worker (or thread id)");
  cmd->add_option("--window", a->window,
                  "Window width for --mode critical (e.g. 250ms; default: one window over "
                  "the whole trace)");
  cmd->add_option("--thread-worker", a->thread_worker,
                  "TID=WORKER: samples of thread TID belong to worker WORKER (repeatable)");
  cmd->add_option("--perf-event", a->perf_event,
                  "Keep only perf samples of this event (e.g. cpu-clock; default: the first "
                  "event met, as stackcollapse-perf.pl; 'all': every event); others are counted");
  cmd->add_option("--weight", a->weight,
                  "perf samples weigh 1 each (samples) or their period (period: the number "
                  "before the event, e.g. cycles or page faults)")
      ->capture_default_str();
  cmd->add_flag("--kernel", a->kernel,
                "Suffix '_[k]' on kernel frames (DSO [kernel.kallsyms], [module] or vmlinux)");
  cmd->add_flag("--pid", a->pid_root, "perf: process frame 'comm-PID' instead of 'comm'");
  cmd->add_flag("--tid", a->tid_root, "perf: process frame 'comm-PID/TID' instead of 'comm'");
  cmd->add_flag("--no-process-root", a->no_process_root,
                "perf: no process frame at the root of each stack");
  cmd->add_option("--hz", a->hz,
                  "Sampling frequency of imported on-CPU samples (for --mode mixed)");
  cmd->add_flag("--no-operator-root", a->no_operator_root,
                "Do not put the operator as the root frame of each stack");
  cmd->add_flag("--thread-root", a->thread_root, "Put the thread as the root frame of each stack");
  cmd->add_flag("--full-names", a->full_names,
                "Keep C++ template arguments and parameter lists in frame names (default: "
                "ns::Class<...>::method; perf input: cut at the first '(' as "
                "stackcollapse-perf.pl)");
  cmd->add_option("--title", a->title, "SVG title, speedscope file name");
  cmd->add_flag("-q,--quiet", a->quiet, "No summary or warnings on stderr");
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    return run_flamegraph(*a);
  };
}

}  // namespace snailtrail::cli
