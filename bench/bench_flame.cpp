// Flame graphs (issue 34: 1 M distinct folded stacks in <= 10 s and <= 300 MB): generated
// folded stacks (depth 8-24 over 20,000 C++-like names, the deeper frames rarer, so
// prefixes are shared near the root as in real profiles), read, and drawn as an SVG
// (frames narrower than 0.1 px pruned) or written back as folded text.
// items_per_second = folded stacks per second. Peak memory: docs/FLAME.md measures the CLI
// with /usr/bin/time -v on the same shape of input (scripts/flame-stacks.py).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <random>
#include <string>
#include <unordered_set>

#include "flame/flamegraph.hpp"
#include "flame/import.hpp"

namespace {

using namespace snailtrail::flame;

const std::string& folded_text() {
  static const std::string text = [] {
    constexpr size_t kStacks = 1'000'000, kNames = 20'000;
    std::mt19937_64 rng(1);
    std::vector<std::string> names;
    for (size_t i = 0; i < kNames; ++i)
      names.push_back(fmt::format("ns{}::Class{}::method_{}", i % 50, i % 997, i));
    std::unordered_set<std::string> seen;
    std::string out, line;
    while (seen.size() < kStacks) {
      const int depth = 8 + static_cast<int>(rng() % 17);
      line = "app";
      for (int d = 0; d < depth; ++d) {
        std::exponential_distribution<double> pick(1.0 / (200.0 * (d + 1)));
        line += ';';
        line += names[std::min<size_t>(static_cast<size_t>(pick(rng)), kNames - 1)];
      }
      if (!seen.insert(line).second) continue;
      out += line;
      out += fmt::format(" {}\n", 1 + rng() % 50);
    }
    return out;
  }();
  return text;
}

void BM_FlameFoldedToSvg(benchmark::State& state) {
  const std::string& text = folded_text();
  for (auto _ : state) {
    SampleSet set;
    parse_folded(text, "bench.folded", set);
    TreeOptions to;
    SvgOptions so;
    to.min_share = so.min_width_px / (so.width - 20);
    const std::string svg = to_svg(build_tree(set, mode_weights(set, Mode::on_cpu), to), so);
    benchmark::DoNotOptimize(svg.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1'000'000);
}
BENCHMARK(BM_FlameFoldedToSvg)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_FlameFoldedToFolded(benchmark::State& state) {
  const std::string& text = folded_text();
  for (auto _ : state) {
    SampleSet set;
    parse_folded(text, "bench.folded", set);
    const std::string out = to_folded(set, mode_weights(set, Mode::on_cpu), {});
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1'000'000);
}
BENCHMARK(BM_FlameFoldedToFolded)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
