// The built-in jobs of `snailtrail run` (docs/RUNTIME.md "Jobs"). A job is a builder
// (the dataflow every worker runs) plus the plain single-threaded loop over the same
// generated input, for --verify and --reference.
#pragma once

#include <array>
#include <cstdint>

#include "flow/runtime.hpp"

namespace snailtrail::flow::jobs {

// Record i of worker w's input stream: a counter-based random number (no shared state,
// the same for the dataflow and the reference loop).
inline uint64_t record_random(uint64_t seed, uint32_t w, uint64_t i) {
  return mix64(mix64(seed * 0x2545f4914f6cdd1dull + w) ^ i);
}

inline constexpr uint32_t kWordsPerLine = 8;
struct Line {
  std::array<uint64_t, kWordsPerLine> words;
};

uint64_t keycount_key(const RunConfig& cfg, uint32_t w, uint64_t i);
Line wordcount_line(const RunConfig& cfg, uint32_t w, uint64_t i);
// The hot word of wordcount.
inline constexpr uint64_t kHotWord = 0;

// The end both jobs share: a running count per key (records exchanged by key), the final
// counts as the job's result, and the probe that measures latency. `distinct`: the job's
// JobSpec::distinct_keys; each worker's table starts with room for its share (keys are
// spread evenly by the exchange), as the COST loop's starts with room for all of them.
template <class KeyStream>
void count_per_key_and_probe(JobContext& ctx, KeyStream&& keys, uint64_t distinct) {
  const uint64_t peers = ctx.worker.peers();
  const uint64_t reserved = reserved_keys(distinct);
  const uint64_t share = reserved / peers + reserved / peers / 16;  // + 1/16: the spread
  auto counted = stateful_unary<char, uint64_t>(
      keys, "count", [](uint64_t k) { return k; },
      [](Time, uint64_t, uint64_t&, uint64_t& count, Session<char>&) { ++count; },
      [&ctx](FlatMap<uint64_t>& states) {
        ctx.emit_result(KeyCounts(states.begin(), states.end()));
      },
      static_cast<size_t>(share));
  probe(counted, "probe", ctx.on_probe);
}

uint64_t keycount_distinct(const RunConfig& cfg);
uint64_t wordcount_distinct(const RunConfig& cfg);
JobSpec keycount_job();
JobSpec wordcount_job();

}  // namespace snailtrail::flow::jobs
