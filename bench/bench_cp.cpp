// Benchmarks of the analysis pipeline on synthetic Flink-like traces (bench/synthetic.hpp):
// PAG construction, windowed and whole-trace CP analysis, and trace parsing.
// Every benchmark reports items_per_second = trace events per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "bench/synthetic.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"

namespace {

using namespace snailtrail;

constexpr int64_t kSecond = 1'000'000'000;

// Traces are generated once per length and shared by all benchmarks.
const Trace& trace_of(int64_t seconds) {
  static std::map<int64_t, std::unique_ptr<Trace>> cache;
  auto& slot = cache[seconds];
  if (!slot) {
    bench::SyntheticOptions o;
    o.duration_ns = seconds * kSecond;
    slot = std::make_unique<Trace>(bench::make_synthetic_trace(o));
  }
  return *slot;
}

void set_counters(benchmark::State& state, const Trace& trace) {
  const auto events = static_cast<int64_t>(trace.events.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * events);
  state.counters["events"] = static_cast<double>(events);
  state.counters["workers"] = static_cast<double>(trace.worker_names.size());
}

void BM_BuildPag(benchmark::State& state) {
  const Trace& trace = trace_of(state.range(0));
  for (auto _ : state) {
    Pag pag = build_pag(trace);
    benchmark::DoNotOptimize(pag.node_ts.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, trace);
}
BENCHMARK(BM_BuildPag)->ArgName("seconds")->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);

// Full per-window pipeline: snapshot, CP, sampled path, summaries. Arg: window width in ms
// (0 = one window over the whole trace).
void BM_AnalyzePag(benchmark::State& state) {
  const Trace& trace = trace_of(16);
  const Pag pag = build_pag(trace);
  AnalysisOptions options;
  options.windows.width_ns = state.range(0) * 1'000'000;
  uint64_t windows = 0, with_paths = 0;
  double checksum = 0;
  for (auto _ : state) {
    windows = with_paths = 0;
    analyze_pag(pag, options, [&](const WindowView& v) {
      ++windows;
      with_paths += v.summary.has_paths;
      checksum += v.summary.paths_log10;
    });
    benchmark::DoNotOptimize(checksum);
  }
  set_counters(state, trace);
  state.counters["windows"] = static_cast<double>(windows);
  state.counters["windows_with_paths"] = static_cast<double>(with_paths);
  state.counters["nodes"] = static_cast<double>(pag.node_count());
  state.counters["messages"] = static_cast<double>(pag.messages.size());
}
BENCHMARK(BM_AnalyzePag)->ArgName("window_ms")->Arg(1000)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_ParseJsonl(benchmark::State& state) {
  const Trace& trace = trace_of(16);
  const std::string text = to_jsonl(trace);
  for (auto _ : state) {
    Trace t = parse_jsonl(text, "bench.jsonl");
    benchmark::DoNotOptimize(t.events.data());
  }
  set_counters(state, trace);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseJsonl)->Unit(benchmark::kMillisecond);

// Arg: 1 = zstd-compressed event blocks.
void BM_ParseSnail(benchmark::State& state) {
  const Trace& trace = trace_of(16);
  SnailWriteOptions o;
  o.compress = state.range(0) != 0;
  const std::string image = to_snail(trace, o);
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(image.data()),
                                       image.size());
  for (auto _ : state) {
    Trace t = parse_snail(bytes, "bench.snail");
    benchmark::DoNotOptimize(t.events.data());
  }
  set_counters(state, trace);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(image.size()));
}
BENCHMARK(BM_ParseSnail)->ArgName("compressed")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
