// Hand-computed examples for PAG construction and critical participation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_cp_examples {
namespace {

using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;
constexpr auto WAIT = ActivityType::waiting;

struct EdgeCp {
  int64_t src_ts, dst_ts;
  uint32_t src_w, dst_w;
  bool message;
  ActivityType type;
  double cp;
};

struct Result {
  std::vector<WindowSummary> windows;
  std::vector<std::vector<EdgeCp>> edges;
  std::vector<double> paths;  // N as double (inf if too large)
  std::vector<WideCount> wide_paths;
};

Result run(const Trace& trace, WindowSpec spec = {}, PagOptions pag_options = {}) {
  Pag pag = build_pag(trace, pag_options);
  AnalysisOptions opt;
  opt.pag = pag_options;
  opt.windows = spec;
  Result r;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    r.windows.push_back(v.summary);
    r.paths.push_back(v.cp.paths.to_double());
    r.wide_paths.push_back(v.cp.paths);
    std::vector<EdgeCp> edges;
    const Snapshot& s = v.snapshot;
    for (uint32_t u = 0; u + 1 < s.node_count(); ++u)
      if (s.edge[u] != kNone)
        edges.push_back({s.ts[u], s.ts[u + 1], s.worker[u], s.worker[u + 1], false,
                         static_cast<ActivityType>(pag.edge_type[s.edge[u]]), v.cp.timeline_cp[u]});
    for (size_t k = 0; k < s.msg_src.size(); ++k)
      edges.push_back({s.ts[s.msg_src[k]], s.ts[s.msg_dst[k]], s.worker[s.msg_src[k]],
                       s.worker[s.msg_dst[k]], true, pag.messages[s.msg_index[k]].type,
                       v.cp.message_cp[k]});
    r.edges.push_back(edges);
  });
  return r;
}

double cp_of(const std::vector<EdgeCp>& edges, uint32_t sw, int64_t st, uint32_t dw, int64_t dt) {
  double sum = 0;
  int found = 0;
  for (const EdgeCp& e : edges)
    if (e.src_w == sw && e.src_ts == st && e.dst_w == dw && e.dst_ts == dt) sum += e.cp, ++found;
  EXPECT_GT(found, 0) << "no edge " << sw << "@" << st << " -> " << dw << "@" << dt;
  return sum;
}

// Two workers, one message: N = 3 paths, CPs computed by hand.
TEST(CpExamples, TwoWorkersOneMessage) {
  TraceBuilder b;
  b.activity(0, P, 0, 2).activity(0, P, 2, 4).activity(1, P, 0, 3).activity(1, P, 3, 4);
  b.message(0, 2, 1, 3, 7);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_EQ(r.paths[0], 3.0);
  const auto& e = r.edges[0];
  EXPECT_NEAR(cp_of(e, 0, 0, 0, 2), 1.0 / 3, 1e-15);
  EXPECT_NEAR(cp_of(e, 0, 2, 0, 4), 1.0 / 6, 1e-15);
  EXPECT_NEAR(cp_of(e, 1, 0, 1, 3), 1.0 / 4, 1e-15);
  EXPECT_NEAR(cp_of(e, 1, 3, 1, 4), 1.0 / 6, 1e-15);
  EXPECT_NEAR(cp_of(e, 0, 2, 1, 3), 1.0 / 12, 1e-15);
  EXPECT_NEAR(r.windows[0].cp.activity[static_cast<int>(P)], 11.0 / 12, 1e-15);
  EXPECT_NEAR(r.windows[0].cp.activity[static_cast<int>(ActivityType::data_message)], 1.0 / 12,
              1e-15);
}

// Thesis Fig. 3.3 reasoning: an activity followed by waiting is on no transient
// critical path, so its CP is 0 however long it is.
TEST(CpExamples, ActivityFollowedByWaitingHasZeroCp) {
  TraceBuilder b;
  b.activity(0, P, 0, 5).activity(0, WAIT, 5, 10);
  b.activity(1, P, 0, 10);
  b.message(1, 8, 0, 10, 1);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_EQ(cp_of(r.edges[0], 0, 0, 0, 5), 0.0);
  EXPECT_EQ(cp_of(r.edges[0], 0, 5, 0, 10), 0.0);  // waiting itself
  EXPECT_NEAR(cp_of(r.edges[0], 1, 0, 1, 8), 0.8, 1e-15);
  double sum = 0;
  for (const auto& e : r.edges[0]) sum += e.cp;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

// A ladder of k crossings between two workers has 2^(k+1) paths; every edge has
// CP 1/(4k). With k = 100000 the count is far beyond a double's range.
TEST(CpExamples, LadderOfHundredThousandCrossings) {
  const int64_t k = 100000;
  TraceBuilder b;
  b.activity(0, P, 0, k).activity(1, P, 0, k);
  for (int64_t i = 0; i < k; ++i) {
    b.message(0, i, 1, i + 1, 2 * i);
    b.message(1, i, 0, i + 1, 2 * i + 1);
  }
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  // log2 N = k + 1 exactly: mantissa 1, exponent k + 1.
  EXPECT_EQ(r.wide_paths[0].exponent(), k + 1);
  EXPECT_NEAR(r.wide_paths[0].mantissa(), 1.0, 1e-9);
  EXPECT_NEAR(r.windows[0].paths_log10, static_cast<double>(k + 1) * std::log10(2.0), 1e-6);
  ASSERT_EQ(r.edges[0].size(), static_cast<size_t>(4 * k));
  double sum = 0, worst = 0;
  for (const auto& e : r.edges[0]) {
    sum += e.cp;
    worst = std::max(worst, std::fabs(e.cp * 4 * k - 1.0));
  }
  EXPECT_LT(worst, 1e-9);
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

TEST(CpExamples, WindowWithOneWorker) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, ActivityType::serialization, 10, 30);
  Result r = run(b.build(), WindowSpec{20, {}, {}});
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_EQ(r.paths[0], 1.0);
  EXPECT_NEAR(r.windows[0].cp.activity[static_cast<int>(P)], 0.5, 1e-15);
  EXPECT_NEAR(r.windows[1].cp.activity[static_cast<int>(ActivityType::serialization)], 1.0, 1e-15);
}

TEST(CpExamples, WindowsWithoutEventsAndLongMessages) {
  // One long activity per worker and a message spanning windows 1..3.
  TraceBuilder b;
  b.activity(0, P, 0, 100).activity(1, P, 0, 100);
  b.message(0, 15, 1, 45, 1);
  Result r = run(b.build(), WindowSpec{10, {}, {}});
  ASSERT_EQ(r.windows.size(), 10u);
  for (size_t i = 0; i < r.windows.size(); ++i) {
    double sum = 0;
    for (const auto& e : r.edges[i]) sum += e.cp;
    EXPECT_NEAR(sum, 1.0, 1e-12) << "window " << i;
  }
  EXPECT_EQ(r.windows[5].events, 0u);
  // Window [20, 30]: the in-flight message is clipped to a full-width edge 0@20 -> 1@30.
  EXPECT_NEAR(cp_of(r.edges[2], 0, 20, 1, 30), 1.0 / 3, 1e-15);
  // Window [40, 50]: clipped artificial send node at 0@40.
  EXPECT_NEAR(cp_of(r.edges[4], 0, 40, 1, 45), 0.5 / 3 * 1, 1e-12);
}

TEST(CpExamples, NoPathsWhenEverybodyWaits) {
  TraceBuilder b;
  b.activity(0, WAIT, 0, 10).activity(1, WAIT, 0, 10);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_FALSE(r.windows[0].has_paths);
  EXPECT_TRUE(r.windows[0].diagnostics.no_paths);
  EXPECT_EQ(r.windows[0].diagnostics.property2_violations, 1u);
  EXPECT_EQ(r.windows[0].diagnostics.property2_ns, 10);
}

TEST(CpExamples, ZeroDurationMessagesAndActivities) {
  TraceBuilder b;
  b.activity(0, P, 0, 4).activity(0, ActivityType::serialization, 4, 4).activity(0, P, 4, 8);
  b.activity(1, P, 0, 8);
  b.message(0, 4, 1, 4, 1);  // zero-duration message
  b.message(1, 6, 0, 6, 2);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  double sum = 0;
  for (const auto& e : r.edges[0]) sum += e.cp;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // Paths: 0:[0-4-6-8], 0:[0-4]->1:[4-6-8], 0:[0-4]->1:[4-6]->0:[6-8], 1:[0-4-6-8],
  // 1:[0-4-6]->0:[6-8].
  EXPECT_EQ(r.paths[0], 5.0);
}

TEST(CpExamples, ZeroDurationMessageCycleIsBroken) {
  TraceBuilder b;
  b.activity(0, P, 0, 8).activity(1, P, 0, 8);
  b.message(0, 4, 1, 4, 1);
  b.message(1, 4, 0, 4, 2);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_GT(r.windows[0].diagnostics.zero_duration_cycles, 0u);
  double sum = 0;
  for (const auto& e : r.edges[0]) sum += e.cp;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

// Only the messages on the cycle are dropped: 1 -> 2 at the same instant stays.
TEST(CpExamples, OnlyMessagesOnAZeroDurationCycleAreDropped) {
  TraceBuilder b;
  b.activity(0, P, 0, 8).activity(1, P, 0, 8).activity(2, P, 0, 8);
  b.message(0, 4, 1, 4, 1);
  b.message(1, 4, 0, 4, 2);
  b.message(1, 4, 2, 4, 3);
  Result r = run(b.build());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_EQ(r.windows[0].diagnostics.zero_duration_cycles, 2u);
  // Paths: each worker's [0-4-8], and 1:[0-4] -> 2:[4-8].
  EXPECT_EQ(r.paths[0], 4.0);
}

TEST(CpExamples, SimultaneousEventsOnDifferentWorkers) {
  TraceBuilder b;
  for (uint32_t w = 0; w < 4; ++w) b.activity(w, P, 0, 5).activity(w, P, 5, 10);
  b.message(0, 5, 1, 5, 1).message(2, 5, 3, 7, 2);
  Result r = run(b.build());
  double sum = 0;
  for (const auto& e : r.edges[0]) sum += e.cp;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

// The single-path baseline samples transient critical paths uniformly: on a snapshot
// with N = 6 paths of different shapes, each path comes up with frequency 1/6.
TEST(CpExamples, SampledSinglePathIsUniform) {
  TraceBuilder b;
  b.activity(0, P, 0, 2).activity(0, P, 2, 4).activity(0, P, 4, 6);
  b.activity(1, P, 0, 3).activity(1, P, 3, 6);
  b.activity(2, P, 0, 6);
  b.message(0, 2, 1, 3, 1).message(1, 3, 0, 4, 2).message(2, 1, 0, 2, 3);
  Trace trace = b.build();
  Pag pag = build_pag(trace);
  std::vector<Window> windows = plan_windows(pag, WindowSpec{});
  ASSERT_EQ(windows.size(), 1u);
  Snapshotter snapshotter(pag);
  Snapshot snap;
  snapshotter.build(windows[0], snap);
  CpComputer computer;
  CpResult cp;
  computer.compute(snap, cp);
  const double n = cp.paths.to_double();
  ASSERT_GE(n, 4.0);
  std::map<std::vector<uint32_t>, int> seen;
  const int draws = 60000;
  for (int i = 0; i < draws; ++i) ++seen[computer.sample_path(snap, cp, 1000 + i)];
  EXPECT_EQ(static_cast<double>(seen.size()), n);  // every path, and only paths
  for (const auto& [path, count] : seen)
    EXPECT_NEAR(count / static_cast<double>(draws), 1.0 / n, 0.01);
}

}  // namespace
}  // namespace snailtrail::test_cp_examples
