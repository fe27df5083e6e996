// The counts of a rank report (src/loop/rank_link.cpp) checked against the bytes left:
// the messages name the count, the bytes and the offset, computed here by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "loop/rank_link.hpp"

namespace lp = snailtrail::loop;

namespace {

std::string report_error_of(const std::string& bytes) {
  try {
    (void)lp::decode_report(bytes);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void put_u32(std::string& bytes, size_t at, uint32_t v) {
  std::memcpy(&bytes[at], &v, 4);
}

TEST(LoopRankCounts, IntervalCountBeyondTheBytesLeft) {
  lp::RankReport r;
  r.rank = 1;
  std::string bytes = lp::encode_report(r);
  ASSERT_EQ(bytes.size(), 20u);  // magic 4, rank 4, watermark 8, interval count 4
  put_u32(bytes, 16, 5);
  EXPECT_EQ(report_error_of(bytes),
            "autoscale: rank report claims 5 intervals in 0 bytes (offset 20)");
}

TEST(LoopRankCounts, InstanceCountBeyondTheBytesLeft) {
  lp::RankReport r;
  r.intervals.resize(1);
  std::string bytes = lp::encode_report(r);
  ASSERT_EQ(bytes.size(), 40u);  // header 20, start 8, end 8, instance count 4
  put_u32(bytes, 36, 3);
  EXPECT_EQ(report_error_of(bytes),
            "autoscale: rank report claims 3 instances in 0 bytes (offset 40)");
  // A count the bytes left can hold is read on.
  lp::RankReport two;
  two.intervals.resize(1);
  two.intervals[0].instances.resize(2);
  for (auto& x : two.intervals[0].instances) x.worker = "0";
  std::string ok = lp::encode_report(two);
  EXPECT_EQ(lp::decode_report(ok).intervals[0].instances.size(), 2u);
  put_u32(ok, 36, 3);  // 80 bytes left hold 2 instances of 40, not 3
  EXPECT_EQ(report_error_of(ok),
            "autoscale: rank report claims 3 instances in 80 bytes (offset 40)");
}

}  // namespace
