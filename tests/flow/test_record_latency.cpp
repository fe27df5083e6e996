// RecordLatencySampler (`run --latency record`, flow/record_latency.hpp): which records
// are sampled, when a sample completes, and the latency it records, by hand.
#include <gtest/gtest.h>

#include <vector>

#include "flow/record_latency.hpp"

namespace snailtrail::flow {
namespace {

// The histogram's samples as (bucket upper bound, count), in order.
std::vector<std::pair<uint64_t, uint64_t>> samples(const Histogram& h) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const std::vector<uint64_t> s = h.snapshot();
  for (int b = 0; b < Histogram::kBuckets; ++b)
    if (s[b]) out.emplace_back(Histogram::upper_of(b), s[b]);
  return out;
}

TEST(RecordLatency, EveryNthRecordCompletesWhenTheFrontierPassesItsTime) {
  RecordLatencySampler s(2);
  Histogram h;
  s.given(0, 0, 5);    // sampled: epoch 0, intended at 5 ns
  s.given(1, 0, 9);    // not sampled
  s.given(2, 10, 12);  // sampled: epoch 10
  s.given(3, 10, 15);  // not sampled
  s.given(4, 20, 22);  // sampled: epoch 20
  EXPECT_EQ(s.pending(), 3u);
  s.passed(10, 30, h);  // times < 10 are complete: the first, 30 - 5 = 25 ns
  EXPECT_EQ(samples(h), (std::vector<std::pair<uint64_t, uint64_t>>{{25, 1}}));
  EXPECT_EQ(s.pending(), 2u);
  s.passed(10, 31, h);  // the same frontier again: nothing more
  EXPECT_EQ(s.pending(), 2u);
  s.passed(21, 29, h);  // both others: 29 - 12 = 17 and 29 - 22 = 7 ns
  EXPECT_EQ(samples(h), (std::vector<std::pair<uint64_t, uint64_t>>{{7, 1}, {17, 1}, {25, 1}}));
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(h.max(), 25u);
}

// Two sources on one worker push out of time order; a sample intended after the moment
// the frontier passed it (a clock read late) records 0, never a wrapped value.
TEST(RecordLatency, SourcesInAnyOrderAndNoNegativeLatency) {
  RecordLatencySampler s(1);
  Histogram h;
  s.given(0, 30, 100);
  s.given(0, 10, 50);
  s.given(1, 20, 60);
  s.passed(15, 70, h);  // only time 10: 70 - 50
  EXPECT_EQ(samples(h), (std::vector<std::pair<uint64_t, uint64_t>>{{20, 1}}));
  s.passed(31, 80, h);  // 80 - 60 = 20, 80 - 100 < 0 -> 0
  EXPECT_EQ(samples(h), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {20, 2}}));
  EXPECT_EQ(s.pending(), 0u);
}

TEST(RecordLatency, OffSamplesNothing) {
  RecordLatencySampler s;
  Histogram h;
  EXPECT_FALSE(s.on());
  s.given(0, 0, 0);
  s.passed(kTimeMax, 10, h);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_TRUE(samples(h).empty());
}

}  // namespace
}  // namespace snailtrail::flow
