// wordcount: lines of kWordsPerLine words from a vocabulary of cfg.keys words; a share
// cfg.skew of all words is the hot word (word 0, like the simulator's hot key), the rest
// uniform. source (lines) -> flat_map (words) -> count (exchange by word) -> probe.
#include "flow/jobs/jobs.hpp"
#include "flow/open_loop.hpp"

#include <algorithm>

namespace snailtrail::flow::jobs {

Line wordcount_line(const RunConfig& cfg, uint32_t w, uint64_t i) {
  Line line;
  const auto hot_below = static_cast<uint64_t>(cfg.skew * 18446744073709551616.0);
  for (uint32_t k = 0; k < kWordsPerLine; ++k) {
    const uint64_t r = record_random(cfg.seed, w, i * kWordsPerLine + k);
    const bool hot = cfg.skew >= 1.0 || mix64(r) < hot_below;
    line.words[k] = hot ? 0 : r % cfg.keys;
  }
  return line;
}

// The vocabulary, or kWordsPerLine words a line if fewer.
uint64_t wordcount_distinct(const RunConfig& cfg) {
  if (cfg.records == 0 || cfg.records >= cfg.keys / kWordsPerLine) return cfg.keys;
  return std::min<uint64_t>(cfg.keys, cfg.records * kWordsPerLine);
}

JobSpec wordcount_job() {
  JobSpec j;
  j.name = "wordcount";
  j.description = "lines of 8 words (--keys vocabulary, --skew hot word), count per word";
  j.build = [](JobContext& ctx) {
    const RunConfig& cfg = ctx.cfg;
    auto lines = open_loop_source<Line>(
        ctx, "source", [&cfg](uint32_t w, uint64_t i) { return wordcount_line(cfg, w, i); });
    auto words = flat_map<uint64_t>(lines, "split", [](const Line& l, auto&& emit) {
      for (uint64_t word : l.words) emit(word);
    });
    count_per_key_and_probe(ctx, words, wordcount_distinct(cfg));
  };
  j.reference = [](const RunConfig& cfg, uint32_t w, uint64_t from, uint64_t to,
                   FlatMap<uint64_t>& state) {
    for (uint64_t i = from; i < to; ++i)
      for (uint64_t word : wordcount_line(cfg, w, i).words) ++state[word];
  };
  j.distinct_keys = wordcount_distinct;
  return j;
}

}  // namespace snailtrail::flow::jobs
