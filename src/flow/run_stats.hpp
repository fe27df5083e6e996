// A run's statistics while its workers run (run_job, runtime.cpp): every interval's
// records and latency histogram, merged over the processes on rank 0 and printed in
// order; and the process's RSS timeline.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "flow/histogram.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {

// Interval k covers (k-1, k] x stats_interval_ns since the start (the last one ends with
// the run): the records this process's sources generated in it and the latency histogram
// of the epochs its first worker saw complete. Under several processes every rank sends
// its intervals to rank 0 (a frame on kStatsChannel), which merges them (sums of records
// and of histogram buckets, never of percentiles) and publishes interval k once every
// rank has sent it: into result.intervals and cfg.on_stats_line.
class IntervalStatsCollector {
 public:
  IntervalStatsCollector(const RunConfig& cfg, RunResult& result, Transport* tr, uint32_t base,
                         const Histogram& hist,
                         const std::vector<std::atomic<uint64_t>>& generated);
  // Ends the next interval at `at` (ns since the start).
  void interval(int64_t at);
  // Rank 0: takes the other ranks' interval frames; publishes the complete ones in order
  // (all of them with `all`, at the end).
  void collect(bool all);
  // Every published interval's latency samples (every rank's on rank 0).
  const std::vector<uint64_t>& total_hist() const { return total_hist_; }

 private:
  struct Merged {
    uint32_t ranks = 0;
    int64_t at = 0;
    uint64_t records = 0;
    double rss = 0;
    std::vector<uint64_t> hist;
  };
  void merge(uint64_t k, int64_t at, uint64_t records, double rss, const uint64_t* pairs,
             size_t npairs);
  void publish(const Merged& m);
  void send(int64_t at, uint64_t records, double rss, const std::vector<uint64_t>& pairs);

  const RunConfig& cfg_;
  RunResult& result_;
  Transport* tr_;
  uint32_t base_, procs_, rank_;
  const Histogram& hist_;
  const std::vector<std::atomic<uint64_t>>& generated_;
  std::map<uint64_t, Merged> merged_;  // rank 0: intervals not yet complete/published
  std::vector<uint64_t> total_hist_, prev_hist_;
  uint64_t prev_records_ = 0, k_ = 0;
};

// The RSS timeline: one pread of /proc/self/statm (kept open: 2-12 us a sample where
// fopen/fscanf/fclose took ~60 us at load 17) on the statistics thread, none on the
// workers. At most 65536 samples: then every other one is dropped and the interval doubles.
class RssSampler {
 public:
  explicit RssSampler(int64_t every_ns);
  ~RssSampler();
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;
  // Appends (seconds, MiB) to `timeline` if a sample is due at `now` (ns since the start).
  void sample(int64_t now, std::vector<std::pair<double, double>>& timeline);

 private:
  double read() const;
  int64_t every_, next_ = 0;
  int fd_ = -1;
  double page_mb_;
};

}  // namespace snailtrail::flow
