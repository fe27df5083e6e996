// A log-bucketed latency histogram (HDR style): values below 32 ns exact, above that 32
// sub-buckets per power of two (relative error < 3.2 %). Buckets are relaxed atomics so
// the stats thread can read while one worker records.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace snailtrail::flow {

class Histogram {
 public:
  static constexpr int kSub = 32;
  static constexpr int kBuckets = (64 - 5 + 1) * kSub;

  static int bucket_of(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int e = 63 - std::countl_zero(v);  // >= 5
    const int mant = static_cast<int>((v >> (e - 5)) & (kSub - 1));
    return (e - 4) * kSub + mant;
  }
  // The largest value in bucket b (what percentiles report: never below the truth).
  static uint64_t upper_of(int b) {
    if (b < kSub) return static_cast<uint64_t>(b);
    const int e = b / kSub + 4, mant = b % kSub;
    const uint64_t lo = (uint64_t{1} << e) | (static_cast<uint64_t>(mant) << (e - 5));
    return lo + (uint64_t{1} << (e - 5)) - 1;
  }

  void record(uint64_t v) {
    counts_[bucket_of(v)].fetch_add(1, std::memory_order_relaxed);
    uint64_t m = max_.load(std::memory_order_relaxed);
    while (v > m && !max_.compare_exchange_weak(m, v, std::memory_order_relaxed)) {
    }
  }
  // The largest value recorded, exact: a bucket's upper bound can read like a wrap (the
  // bucket of 4.228 s .. 4.295 s ends at 2^32 - 1 ns, "4294.967 ms").
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  std::vector<uint64_t> snapshot() const {
    std::vector<uint64_t> s(kBuckets);
    for (int b = 0; b < kBuckets; ++b) s[b] = counts_[b].load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> max_{0};
};

// Percentile q in [0, 1] of a bucket count vector (0 if empty): its bucket's upper bound,
// never above `exact_max` (the largest sample, when known).
inline uint64_t percentile(const std::vector<uint64_t>& counts, double q,
                           uint64_t exact_max = UINT64_MAX) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (rank >= total) rank = total - 1;
  uint64_t seen = 0;
  for (int b = 0; b < static_cast<int>(counts.size()); ++b) {
    seen += counts[b];
    if (seen > rank) return std::min(Histogram::upper_of(b), exact_max);
  }
  return 0;
}

// (value, fraction of samples >= value) for every non-empty bucket, values ascending.
inline std::vector<std::pair<uint64_t, double>> ccdf(const std::vector<uint64_t>& counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::vector<std::pair<uint64_t, double>> out;
  uint64_t below = 0;
  for (int b = 0; b < static_cast<int>(counts.size()); ++b) {
    if (counts[b] == 0) continue;
    out.emplace_back(Histogram::upper_of(b),
                     static_cast<double>(total - below) / static_cast<double>(total));
    below += counts[b];
  }
  return out;
}

}  // namespace snailtrail::flow
