// What-if measured per CP segment (cp/what_if.hpp, docs/PAG.md §5): the serial property
// (a k-times faster op saves exactly (1 - 1/k) x its critical time on one thread, whatever
// the gaps), a late unrelated slice that must not cap a saving, zero savings kept as rows,
// and peer medians only among instances of the same operator (at least 3).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"
#include "what_if_util.hpp"

namespace snailtrail::test_what_if_segments {
namespace {

using testing::analyze_whole;
using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;
constexpr auto Wt = ActivityType::waiting;

const WhatIf* row(const WindowSummary& s, WhatIfKind kind, uint32_t id, bool peer = false) {
  for (const WhatIf& x : s.what_if)
    if (x.kind == kind && x.id == id && x.peer_median == peer) return &x;
  return nullptr;
}

// Random serial traces: one thread runs slices of 4 ops back to back or after gaps
// (waiting: a profiler's thread between slices). Every op is on the critical path with
// all its time, so k times faster saves exactly (1 - 1/k) of it.
TEST(WhatIfSegments, SerialTraceSavesExactlyItsShare) {
  std::mt19937_64 rng(331);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 60; ++iter) {
    TraceBuilder b;
    std::map<uint32_t, int64_t> busy;
    int64_t t = uni(0, 5);
    const int n = static_cast<int>(uni(2, 12));
    for (int i = 0; i < n; ++i) {
      const int64_t gap = uni(0, 1) ? uni(1, 50) : 0;
      if (gap > 0 && i > 0) b.activity(0, Wt, t, t + gap);
      t += gap;
      const auto op = static_cast<uint32_t>(uni(0, 3));
      const int64_t d = uni(1, 100);
      b.activity(0, P, t, t + d, op);
      busy[op] += d;
      t += d;
    }
    const Trace trace = b.build();
    for (double k : {2.0, 3.0, 10.0}) {
      const WindowSummary s = analyze_whole(trace, k);
      ASSERT_TRUE(s.has_paths);
      for (const auto& [op, ns] : busy) {
        const WhatIf* x = row(s, WhatIfKind::op, op);
        ASSERT_NE(x, nullptr) << "iteration " << iter << " op " << op;
        EXPECT_NEAR(x->saved_ns, (1 - 1 / k) * static_cast<double>(ns), 1e-6)
            << "iteration " << iter << " op " << op << " k " << k;
      }
    }
  }
}

// A profiler capture: the main thread runs op 1 (60) and op 2 (40) with a gap; a helper
// thread's one slice starts near the end with no message (95..100). Op 1 twice as fast
// saves 30: the helper's late start must not cap it.
TEST(WhatIfSegments, LateUnrelatedSliceDoesNotCapTheSaving) {
  TraceBuilder b;
  b.activity(0, P, 0, 60, 1).activity(0, Wt, 60, 70).activity(0, P, 70, 100, 2);
  b.activity(1, P, 95, 100, 3);
  const WindowSummary s = analyze_whole(b.build(), 2);
  ASSERT_TRUE(s.has_paths);
  const WhatIf* x = row(s, WhatIfKind::op, 1);
  ASSERT_NE(x, nullptr);
  EXPECT_DOUBLE_EQ(x->saved_ns, 30);
  // The helper's op saves nothing (the main thread holds its segment): a row of 0.
  const WhatIf* h = row(s, WhatIfKind::op, 3);
  ASSERT_NE(h, nullptr);
  EXPECT_DOUBLE_EQ(h->saved_ns, 0);
}

// Peers run the same operator. Three workers run op 1 (10, 10, 30): the slow instance
// against the median 10. Worker 3 runs only op 2, far longer: no peers, no peer row.
TEST(WhatIfSegments, PeerMedianNeedsThreeInstancesOfTheSameOperator) {
  TraceBuilder b;
  b.activity(0, P, 0, 10, 1).activity(1, P, 0, 10, 1).activity(2, P, 0, 30, 1);
  b.activity(3, P, 0, 25, 2);
  const WindowSummary s = analyze_whole(b.build(), 2);
  const WhatIf* slow = row(s, WhatIfKind::worker, 2, true);
  ASSERT_NE(slow, nullptr);
  EXPECT_DOUBLE_EQ(slow->speedup, 3);
  EXPECT_DOUBLE_EQ(slow->saved_ns, 5);  // 30 -> 10; worker 3's 25 holds the end
  EXPECT_EQ(row(s, WhatIfKind::worker, 3, true), nullptr);
  const WhatIf* op = row(s, WhatIfKind::op, 1, true);
  ASSERT_NE(op, nullptr);
  EXPECT_DOUBLE_EQ(op->speedup, 3);
  // Two instances are no peer group.
  TraceBuilder two;
  two.activity(0, P, 0, 10, 1).activity(1, P, 0, 30, 1);
  const WindowSummary t = analyze_whole(two.build(), 2);
  EXPECT_EQ(row(t, WhatIfKind::worker, 1, true), nullptr);
  EXPECT_EQ(row(t, WhatIfKind::op, 1, true), nullptr);
}

// The operator rows carry the task durations: op 1's runs on each worker (a task is a
// run of the operator's work with nothing between).
TEST(WhatIfSegments, OperatorRowsMeasureTheirTasks) {
  TraceBuilder b;
  b.activity(0, P, 0, 10, 1).activity(0, Wt, 10, 12).activity(0, P, 12, 32, 1);
  b.activity(1, P, 0, 30, 1).activity(2, P, 0, 40, 1);
  const WindowSummary s = analyze_whole(b.build(), 2);
  const WhatIf* x = row(s, WhatIfKind::op, 1);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->tasks, 4u);
  EXPECT_FLOAT_EQ(x->task_min, 10);
  EXPECT_FLOAT_EQ(x->task_median, 25);
  EXPECT_FLOAT_EQ(x->task_p95, 40);
  EXPECT_FLOAT_EQ(x->task_max, 40);
}

}  // namespace
}  // namespace snailtrail::test_what_if_segments
