// `run --skew-profile` (docs/CLOSED-LOOP.md): the keycount/hashcount input with a
// time-varying share of its records sent to one hot range of bins, and a cheap per-bin
// record counter (the load of each bin, for `run --rebalance`).
//
// Record i of stream w gets the share in force at its intended time (the open-loop
// schedule of --rate/--rate-profile, the same for every stream): with that probability
// (a second random number of the record) its key is drawn from the keys of the hot bins
// [0, hot_bins), else uniformly from [0, keys) as without skew. The key is a function of
// (seed, w, i) only, so the plain loop (the reference) sees the same input.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flow/runtime.hpp"

namespace snailtrail::megaphone {

struct Skew {
  // (first record index of a stream, hot share from it on), indexes increasing.
  std::vector<std::pair<uint64_t, double>> from_record;
  uint32_t hot_bins = 1;  // the hot range: bins [0, hot_bins)
  bool empty() const { return from_record.empty(); }
  double share(uint64_t i) const {
    double s = 0;
    for (const auto& [from, x] : from_record) {
      if (from > i) break;
      s = x;
    }
    return s;
  }
};

// Parses "0s:0,30s:0.5" (flow::parse_profile's syntax; shares in [0, 1]); errors name
// the flag and the bad token.
std::vector<std::pair<int64_t, double>> parse_skew_profile(
    const std::string& text, const std::function<int64_t(const std::string&)>& parse_ns);

// The skew by record index for `streams` source streams sharing the open-loop rate
// (`rate_profile`: (from ns, records/s over all streams)).
Skew make_skew(const std::vector<std::pair<int64_t, double>>& rate_profile, uint32_t streams,
               const std::vector<std::pair<int64_t, double>>& skew_profile, uint32_t hot_bins);

// The bin of a key in keycount-megaphone (dense: the low log_bins bits) and
// hashcount-megaphone (the high log_bins bits of mix64(key)).
uint32_t key_bin(bool dense, uint32_t log_bins, uint64_t key);
// Record i of stream w: keycount's key, or with skew a key of the hot bins.
uint64_t skewed_key(const flow::RunConfig& cfg, bool dense, uint32_t log_bins, const Skew& skew,
                    uint32_t w, uint64_t i);

// Records generated per bin, counted by the sources (each worker its own row: no shared
// cache line is written by two threads). Read at any time by another thread.
class BinCounter {
 public:
  BinCounter(uint32_t workers, uint32_t bins)
      : workers_(workers), bins_(bins), c_(static_cast<size_t>(workers) * bins) {}
  void add(uint32_t worker, uint32_t bin) {
    if (worker >= workers_ || bin >= bins_) return;
    auto& x = c_[static_cast<size_t>(worker) * bins_ + bin];
    x.store(x.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Records per bin so far, over all workers.
  std::vector<uint64_t> totals() const {
    std::vector<uint64_t> t(bins_, 0);
    for (uint32_t w = 0; w < workers_; ++w)
      for (uint32_t b = 0; b < bins_; ++b)
        t[b] += c_[static_cast<size_t>(w) * bins_ + b].load(std::memory_order_relaxed);
    return t;
  }
  uint32_t bins() const { return bins_; }

 private:
  uint32_t workers_, bins_;
  std::vector<std::atomic<uint64_t>> c_;
};

}  // namespace snailtrail::megaphone
