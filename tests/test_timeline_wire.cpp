// report/timeline_wire.hpp: a window's timeline crosses ranks (`mpirun ... report`)
// unchanged, and cut or corrupt bytes are an error, not a wrong Gantt chart.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "report/timeline_wire.hpp"

namespace snailtrail::report::test_timeline_wire {
namespace {

Timeline sample_timeline() {
  Timeline t;
  t.dropped_edges = 17;
  t.score = 0.625;
  t.edges.push_back({0, kNone, 10, 250, 3, ActivityType::processing, 0.5});
  t.edges.push_back({2, kNone, 0, 90, kNone, ActivityType::scheduling, 0});
  t.edges.push_back({1, 2, 40, 41, kNone, ActivityType::data_message, 0.125});
  return t;
}

TEST(TimelineWire, EveryFieldRoundTrips) {
  const Timeline t = sample_timeline();
  std::string bytes;
  append_timeline(bytes, t);
  Timeline back;
  back.summary.index = 5;  // the summary travels apart: left as it was
  read_timeline(bytes, back);
  EXPECT_EQ(back.summary.index, 5u);
  EXPECT_EQ(back.dropped_edges, 17u);
  EXPECT_EQ(back.score, 0.625);
  ASSERT_EQ(back.edges.size(), t.edges.size());
  for (size_t i = 0; i < t.edges.size(); ++i) {
    const TimelineEdge &a = t.edges[i], &b = back.edges[i];
    EXPECT_EQ(a.worker, b.worker);
    EXPECT_EQ(a.remote, b.remote);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.cp, b.cp);
  }
}

TEST(TimelineWire, NoEdgesRoundTrips) {
  std::string bytes;
  append_timeline(bytes, Timeline{});
  Timeline back = sample_timeline();
  read_timeline(bytes, back);
  EXPECT_TRUE(back.edges.empty());
  EXPECT_EQ(back.dropped_edges, 0u);
}

TEST(TimelineWire, CutOrHugeCountsAreErrors) {
  std::string bytes;
  append_timeline(bytes, sample_timeline());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Timeline back;
    EXPECT_THROW(read_timeline(std::string_view(bytes).substr(0, n), back), std::runtime_error)
        << "cut at " << n;
  }
  std::string extra = bytes + "x";
  Timeline back;
  EXPECT_THROW(read_timeline(extra, back), std::runtime_error);
  const uint64_t huge = uint64_t{1} << 62;  // must not allocate
  std::memcpy(bytes.data(), &huge, sizeof huge);
  EXPECT_THROW(read_timeline(bytes, back), std::runtime_error);
}

}  // namespace
}  // namespace snailtrail::report::test_timeline_wire
