// `run --latency record`: per-record latency as Megaphone measures it (thesis §5.3, the
// CCDFs "of per-record latency"). Every Nth record a worker's source gives is sampled with
// its intended time (open loop: when the rate made it due; closed loop: when it was
// given); once the output probe passes the record's timestamp, its latency is that moment
// minus the intended time. So a record that waited in its source for its epoch to close
// counts that wait, which the per-epoch latency (from the epoch's end) leaves out.
//
// One per worker, used by that worker's thread only: its sources push, its probe drains
// (every worker sees the same output frontier). Samples wait in a min-heap on their
// timestamp, so several sources per worker may push in any order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flow/channel.hpp"
#include "flow/histogram.hpp"

namespace snailtrail::flow {

class RecordLatencySampler {
 public:
  // every: sample records 0, N, 2N, ... of each source (0: off).
  explicit RecordLatencySampler(uint64_t every = 0) : every_(every) {}
  bool on() const { return every_ > 0; }

  // A source gave its record number `index` at timestamp t, intended at `intended_ns`
  // (since the run's start).
  void given(uint64_t index, Time t, int64_t intended_ns) {
    if (every_ == 0 || index % every_ != 0) return;
    pending_.push_back({t, intended_ns});
    std::push_heap(pending_.begin(), pending_.end(), later);
  }

  // The output frontier reached `frontier` at `now_ns`: every sample at a time before it
  // is complete.
  void passed(Time frontier, int64_t now_ns, Histogram& hist) {
    while (!pending_.empty() && pending_.front().t < frontier) {
      const int64_t lat = now_ns - pending_.front().intended_ns;
      hist.record(lat > 0 ? static_cast<uint64_t>(lat) : 0);
      std::pop_heap(pending_.begin(), pending_.end(), later);
      pending_.pop_back();
    }
  }

  size_t pending() const { return pending_.size(); }

 private:
  struct Sample {
    Time t;
    int64_t intended_ns;
  };
  static bool later(const Sample& a, const Sample& b) { return a.t > b.t; }
  uint64_t every_;
  std::vector<Sample> pending_;  // a min-heap on t
};

}  // namespace snailtrail::flow
