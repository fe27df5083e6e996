// Shutdown of a live rate collector with many operator instances (tests/operator_chain.hpp):
// the topology of every operator and each instance's rates. It was quadratic in the
// instances (62.8 s at 200 k); the fitted complexity below shows it linear.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "operator_chain.hpp"

namespace {

using namespace snailtrail;

void BM_LiveRatesClose(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  for (auto _ : state) {
    serve::LiveRates live(1'000'000'000, 10);
    bench::add_operator_chain(live, n);
    live.finish();
    std::string page = live.page(INT64_MIN);
    benchmark::DoNotOptimize(page);
  }
  state.SetComplexityN(state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LiveRatesClose)
    ->ArgName("instances")
    ->Arg(25'000)
    ->Arg(50'000)
    ->Arg(100'000)
    ->Arg(200'000)
    ->Complexity(benchmark::oN)
    ->Unit(benchmark::kMillisecond);

}  // namespace
