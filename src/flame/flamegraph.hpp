// Flame graphs from a SampleSet (docs/FLAME.md): per-sample weights by mode, the merged
// call tree, and its folded, SVG and JSON forms.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "flame/samples.hpp"

namespace snailtrail::flame {

enum class Mode { on_cpu, off_cpu, mixed, critical };
std::optional<Mode> parse_mode(const std::string& s);
const char* mode_name(Mode m);
// Unit of a mode's weights: "samples" (on-cpu) or "ns" (off-cpu, mixed, critical).
const char* mode_unit(Mode m);

// Weights for on-cpu (on-CPU samples' counts), off-cpu (waited ns) and mixed (on-CPU
// samples x period_ns plus waited ns; throws std::invalid_argument when the period is
// unknown). Critical weights come from critical.hpp.
std::vector<double> mode_weights(const SampleSet& set, Mode mode);

// The process frame above each perf stack, as stackcollapse-perf.pl writes it: none,
// "comm", "comm-PID" (its --pid) or "comm-PID/TID" (its --tid); spaces in comm as '_'.
enum class ProcessRoot { none, comm, pid, tid };

struct TreeOptions {
  std::optional<uint32_t> operator_id;  // only samples of this operator
  std::optional<uint32_t> worker;       // only samples of this worker (or thread)
  // Put the operator as the root frame ("[op count]") when any sample has one.
  bool operator_root = true;
  bool thread_root = false;  // put the thread's name ("[thread 12 comm]") above it
  // Below those, the process frame of samples with a comm (perf).
  ProcessRoot process_root = ProcessRoot::none;
  // Frame names shortened by short_frame_name (C++ template arguments and parameters out).
  bool short_names = false;
  // Off-CPU samples with a known activity get it as their leaf ("[off-cpu waiting]").
  bool off_cpu_leaf = true;
  // build_tree leaves out frames (and their subtrees) narrower than this share of the
  // total: an SVG does not draw them, and 1 M distinct stacks need not be held.
  double min_share = 0;
  // collect_paths keeps the paths of each worker (else thread) apart (PathSet::Path::who):
  // speedscope's per-worker profiles.
  bool split_by_who = false;
};

// "ns::A<int, B<c>>::f(unsigned long) const" -> "ns::A<...>::f": template arguments
// collapsed, the trailing parameter list (and qualifiers) dropped; operator names
// ("operator<<", "operator()") are kept whole. Names without either are unchanged.
std::string short_frame_name(const std::string& name);

// The merged call tree. Node 0 is the root ("all"); children of a node are sorted by
// name, nodes in depth-first order. value: weight of the samples whose stack passes
// through the node.
struct FlameTree {
  struct Node {
    std::string name;
    uint32_t parent = 0;
    uint32_t depth = 0;
    double value = 0;
    double self = 0;
    std::vector<uint32_t> children;
  };
  std::vector<Node> nodes;
  uint32_t max_depth = 0;
  double total() const { return nodes.empty() ? 0 : nodes[0].value; }
};

FlameTree build_tree(const SampleSet& set, const std::vector<double>& weights,
                     const TreeOptions& options);

// "a;b;c 12" lines, one per leaf path with self weight, sorted by stack, weights
// rounded to integers (lines rounding to 0 are left out). ';' and line breaks inside a
// frame name are written as ':' and ' '.
std::string to_folded(const FlameTree& tree);
// The same from the samples, without a tree (memory: the distinct paths and the text).
std::string to_folded(const SampleSet& set, const std::vector<double>& weights,
                      const TreeOptions& options);

struct SvgOptions {
  std::string title = "Flame Graph";
  std::string subtitle;
  std::string unit = "samples";
  int width = 1200;
  int frame_height = 16;
  double min_width_px = 0.1;  // narrower frames are not drawn
};
// A self-contained SVG (no external references; a small inline script zooms on click).
std::string to_svg(const FlameTree& tree, const SvgOptions& options);

struct TimeOrder;  // time_order.hpp
// {"mode", "unit", "total", "operators": [{"id", "name", "value", "share"}], "workers":
//  [{"id", "value", "share"}] (worker, else thread), "diagnostics",
//  "root": {"name", "value", "self", "children": [...]}}, and "time_order" (the report's
// flame chart, time_order_json) when given.
std::string to_json(const FlameTree& tree, const SampleSet& set, const std::vector<double>& weights,
                    Mode mode, const TimeOrder* time_order = nullptr);

struct SpeedscopeOptions {
  std::string name;                                        // the file's title in speedscope
  std::unordered_map<uint32_t, std::string> worker_names;  // profiles' names
};
// speedscope's file format (its file-format-schema.json, in the npm package speedscope):
// one shared frames table and "sampled" profiles in the mode's unit ("none": samples;
// "nanoseconds"): first "all, MODE" (per stack the weight the folded output has, not
// rounded), then, when the samples come from more than one worker (else thread), one
// per worker. A stack is a path of build_tree's (root frames included), root first.
std::string to_speedscope(const SampleSet& set, const std::vector<double>& weights,
                          TreeOptions options, Mode mode, const SpeedscopeOptions& so);

}  // namespace snailtrail::flame
