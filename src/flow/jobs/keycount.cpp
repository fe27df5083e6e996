// keycount (Megaphone's micro-benchmark): uniformly random u64 keys from a domain of
// cfg.keys, a running count per key.
//   source -> count (exchange by key, per-key state) -> probe
#include "flow/jobs/jobs.hpp"
#include "flow/open_loop.hpp"

#include <algorithm>

namespace snailtrail::flow::jobs {

uint64_t keycount_key(const RunConfig& cfg, uint32_t w, uint64_t i) {
  return record_random(cfg.seed, w, i) % cfg.keys;
}

// At most one key per record, and never more than the domain.
uint64_t keycount_distinct(const RunConfig& cfg) {
  return cfg.records == 0 ? cfg.keys : std::min<uint64_t>(cfg.keys, cfg.records);
}

JobSpec keycount_job() {
  JobSpec j;
  j.name = "keycount";
  j.description = "uniform random keys from --keys N, running count per key";
  j.build = [](JobContext& ctx) {
    const RunConfig& cfg = ctx.cfg;
    auto keys = open_loop_source<uint64_t>(
        ctx, "source", [&cfg](uint32_t w, uint64_t i) { return keycount_key(cfg, w, i); });
    count_per_key_and_probe(ctx, keys, keycount_distinct(cfg));
  };
  j.reference = [](const RunConfig& cfg, uint32_t w, uint64_t from, uint64_t to,
                   FlatMap<uint64_t>& state) {
    for (uint64_t i = from; i < to; ++i) ++state[keycount_key(cfg, w, i)];
  };
  j.distinct_keys = keycount_distinct;
  return j;
}

}  // namespace snailtrail::flow::jobs
