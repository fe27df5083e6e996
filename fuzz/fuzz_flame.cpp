// libFuzzer target for the flame graph readers (src/flame): `perf script` text never
// throws (problems are counted), folded stacks throw only TraceError, a profile block only
// TraceError; whatever is read must render as folded, SVG and JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "flame/flamegraph.hpp"
#include "flame/import.hpp"
#include "flame/profile_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  using namespace snailtrail::flame;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  SampleSet perf;
  parse_perf_script(text, "fuzz.perf", perf);
  std::vector<double> w = mode_weights(perf, Mode::on_cpu);
  FlameTree tree = build_tree(perf, w, {});
  (void)to_folded(tree);
  (void)to_svg(tree, {});
  (void)to_json(tree, perf, w, Mode::on_cpu);
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
