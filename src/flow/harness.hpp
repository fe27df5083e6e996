// The benchmark harness around the runtime (runtime.hpp; docs/RUNTIME.md): the sources'
// rates (a constant rate or a piecewise-constant profile, and the pause of `run
// --reconfigure restart`), the statistics every interval, the trace sinks that take the
// workers' events during the run, and the stack profiler. The runtime proper (workers,
// dataflow, drive) runs any dataflow without them; `run` and the benchmarks set them.
// The open-loop sources that follow the rates are in open_loop.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trace/event.hpp"

namespace snailtrail::flow {

// A worker's flushed trace events, shared read-only by the trace sinks.
using TraceBuffer = std::shared_ptr<const std::vector<Event>>;

namespace profile {
class Profiler;
}
struct IntervalStats;

// RunConfig's harness part (RunConfig derives from it).
struct HarnessConfig {
  double rate = 0;  // records/s over all workers; 0: as fast as possible
  // Piecewise-constant open-loop rate (`run --rate-profile`): (from ns, records/s over
  // all workers), the first from 0, times increasing, rates > 0. Replaces `rate` when set.
  std::vector<std::pair<int64_t, double>> rate_profile;
  // While set, open-loop sources give nothing (the records due meanwhile are given, with
  // their intended times, once it clears): the stop of `run --reconfigure restart`.
  std::shared_ptr<std::atomic<bool>> pause_sources;
  // 0: latency per epoch (from its end to the output probe passing it); N > 0: per record,
  // every Nth record of each source (`run --latency record`, record_latency.hpp).
  uint64_t latency_record_every = 0;
  int64_t stats_interval_ns = 250'000'000;
  // This process's resident set (/proc/self/statm) is sampled every rss_sample_ns by the
  // statistics thread into RunResult::rss_timeline (0: never). Bounded: at 65536 samples
  // every other one is dropped and the interval doubles.
  int64_t rss_sample_ns = 10'000'000;
  std::function<void(const std::string&)> on_stats_line;  // each interval's line
  // Each interval as it is published (the statistics thread; rank 0): `run --http`.
  std::function<void(const IntervalStats&)> on_interval;
  // With RunConfig::trace and this set, each worker hands its events (in time order, with
  // the dataflow's operator names) to this sink about every trace_flush_ns and at its end,
  // instead of keeping them for RunResult::events (live streaming). Called from the
  // worker threads, concurrently. Every sink of a chain gets the same immutable buffer:
  // none copies it on the worker's thread.
  std::function<void(TraceBuffer, const std::vector<std::string>& operator_names)> on_trace_events;
  int64_t trace_flush_ns = 50'000'000;
  // A flush holds back a worker's events from the earliest arrival of a message it has not
  // taken yet (so that its receipt is recorded at that arrival), at most this long; a
  // receipt older than that is stamped at the last flushed event and counted in
  // RunResult::clamped_receipts.
  int64_t trace_hold_ns = 2'000'000'000;
  // Stack sampling of every worker thread (profile/sampler.hpp, `run --profile`).
  profile::Profiler* profiler = nullptr;
};

// A piecewise-constant rate (RunConfig::rate_profile) for one source stream with
// `share` of the rate: how many records are due by a time, and when record i is due.
class RateSchedule {
 public:
  RateSchedule(const std::vector<std::pair<int64_t, double>>& profile, double share) {
    double cum = 0;
    for (size_t k = 0; k < profile.size(); ++k) {
      const double per_ns = profile[k].second * share * 1e-9;
      seg_.push_back({profile[k].first, per_ns, cum});
      if (k + 1 < profile.size())
        cum += per_ns * static_cast<double>(profile[k + 1].first - profile[k].first);
    }
  }
  // Records due in [0, ns) (fractional).
  double count(int64_t ns) const {
    const Seg& s = at_time(ns);
    return s.cum + s.per_ns * static_cast<double>(ns - s.from);
  }
  // The intended time of record i (ns).
  int64_t time_of(uint64_t i) const {
    const double x = static_cast<double>(i);
    size_t k = 0;
    while (k + 1 < seg_.size() && seg_[k + 1].cum <= x) ++k;
    const Seg& s = seg_[k];
    return s.from + static_cast<int64_t>((x - s.cum) / s.per_ns);
  }
  // The rate over all streams at `ns` (records/s), given the share.
  double rate_at(int64_t ns, double share) const { return at_time(ns).per_ns * 1e9 / share; }

 private:
  struct Seg {
    int64_t from;
    double per_ns, cum;
  };
  const Seg& at_time(int64_t ns) const {
    size_t k = 0;
    while (k + 1 < seg_.size() && seg_[k + 1].from <= ns) ++k;
    return seg_[k];
  }
  std::vector<Seg> seg_;
};
// A number with an optional suffix k or K (x1e3), M (x1e6) or G (x1e9): "200k", "1.5M",
// "2e5"; nullopt unless the whole text is one and finite. `run --rate` and the profiles'
// values read theirs with it.
std::optional<double> parse_scaled(const std::string& text);
// Parses "0s:100k,30s:400k" (times: ns from `parse_ns`; values as parse_scaled); throws a
// UsageError naming the setting `name` (e.g. "rate_profile") on bad input.
std::vector<std::pair<int64_t, double>> parse_profile(
    const std::string& text, const std::string& name,
    const std::function<int64_t(const std::string&)>& parse_ns, bool rates_positive = true);

struct IntervalStats {
  double t_s = 0;
  uint64_t records = 0;
  // Latency samples of the interval: one per epoch completed (per rank under mpirun). 0 is
  // a stall, whose percentiles are 0 for want of samples, not because latency was low.
  uint64_t samples = 0;
  double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0, rss_mb = 0;
};

}  // namespace snailtrail::flow
