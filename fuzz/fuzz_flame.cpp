// libFuzzer target for the flame graph readers (src/flame): `perf script` text never
// throws (problems are counted), folded stacks throw only TraceError, a profile block only
// TraceError; whatever is read must render as folded, SVG and JSON. An input that starts
// with the .snail magic is read as a whole trace: its profile blocks are decoded in the
// trace's context and weighted by CP (`--mode critical`), as `flamegraph` does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string_view>

#include "flame/critical.hpp"
#include "flame/flamegraph.hpp"
#include "flame/import.hpp"
#include "flame/profile_io.hpp"
#include "trace/trace_io.hpp"

namespace {

void render(const snailtrail::flame::SampleSet& set, const std::vector<double>& w,
            snailtrail::flame::Mode mode) {
  using namespace snailtrail::flame;
  FlameTree tree = build_tree(set, w, {});
  const std::string folded = to_folded(tree);
  // The tree-less writer and the pruned tree must agree with the full tree.
  if (to_folded(set, w, {}) != folded) std::abort();
  TreeOptions pruned;
  pruned.min_share = 0.01;
  pruned.process_root = ProcessRoot::tid;
  pruned.thread_root = true;
  (void)to_svg(build_tree(set, w, pruned), {});
  (void)to_svg(tree, {});
  (void)to_json(tree, set, w, mode);
}

// A whole .snail trace with profile blocks: decode, weight by CP, render.
void whole_trace(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  using namespace snailtrail::flame;
  Trace t;
  try {
    t = parse_snail(std::span<const uint8_t>(data, size), "fuzz.snail");
  } catch (const TraceError&) {
    return;
  }
  if (t.profile_blocks.empty()) return;
  SampleSet set;
  try {
    samples_from_trace(t, set);
  } catch (const TraceError&) {
    return;
  }
  for (Mode m : {Mode::on_cpu, Mode::off_cpu, Mode::mixed}) render(set, mode_weights(set, m), m);
  AnalysisOptions options;
  CriticalResult r;
  try {
    r = critical_weights(t, set, options);
  } catch (const TraceError&) {
    return;  // a trace the PAG builder refuses (as `analyze` would)
  }
  if (r.weight.size() != set.samples.size()) std::abort();
  render(set, r.weight, Mode::critical);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  using namespace snailtrail::flame;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.starts_with("SNAILTRC")) {
    whole_trace(data, size);
    return 0;
  }
  SampleSet perf;
  parse_perf_script(text, "fuzz.perf", perf);
  std::vector<double> w = mode_weights(perf, Mode::on_cpu);
  render(perf, w, Mode::on_cpu);
  SampleSet perf_all;  // every option of the CLI's perf reading on
  PerfOptions all;
  all.weight_period = all.annotate_kernel = all.tidy_names = all.first_event_only = true;
  parse_perf_script(text, "fuzz.perf", perf_all, all);
  render(perf_all, mode_weights(perf_all, Mode::on_cpu), Mode::on_cpu);
  SampleSet folded;
  try {
    parse_folded(text, "fuzz.folded", folded);
  } catch (const TraceError&) {
  }
  Trace t;
  t.profile_blocks.push_back({0, size > 0 ? data[0] : 0u, std::string(text)});
  SampleSet prof;
  try {
    samples_from_trace(t, prof);
  } catch (const TraceError&) {
  }
  return 0;
}
