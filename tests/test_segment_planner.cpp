// A window's segments planned straight from the PAG (SegmentPlanner, cp/segments.hpp)
// against the reference: plan_segments on the window's snapshot as Snapshotter builds it.
// Random traces with workers that start late, idle gaps, waits for input and waits that
// end with no message, zero-duration messages and messages ending on window borders; every
// window of several widths. And: a Snapshotter that only counts some windows' events
// (count_only) builds the others exactly as one that builds them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cp/segments.hpp"
#include "pag/timeline.hpp"
#include "sanitized.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_segment_planner {
namespace {

Trace random_trace(std::mt19937_64& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  testing::TraceBuilder b;
  const uint32_t workers = static_cast<uint32_t>(uni(1, 5));
  const int64_t end = uni(20, 200);
  for (uint32_t w = 0; w < workers; ++w) {
    // Late starts, early ends, idle gaps longer than the gap threshold (the test's PAG
    // options) and activities of every kind, some of them waits for input (an operator).
    for (int64_t t = uni(0, 2) == 0 ? uni(1, end / 2) : 0; t < end;) {
      const int64_t d = std::min(uni(0, 6), end - t);
      const int kind = static_cast<int>(uni(0, 5));
      const ActivityType type = kind <= 1 ? ActivityType::waiting : ActivityType::processing;
      b.activity(w, type, t, t + d, kind == 0 ? 7u : UINT32_MAX);
      t += d + (uni(0, 7) == 0 ? uni(1, 15) : 0);
      if (uni(0, 40) == 0) break;
    }
  }
  const int messages = static_cast<int>(uni(0, 30));
  for (int k = 0; k < messages; ++k) {
    const uint32_t from = static_cast<uint32_t>(uni(0, workers - 1));
    const uint32_t to = static_cast<uint32_t>(uni(0, workers - 1));
    const int64_t send = uni(0, end);
    // Zero-duration ones, short ones, and some crossing many windows.
    const int64_t recv = std::min(end, send + (uni(0, 3) == 0 ? 0 : uni(1, end / 3)));
    b.message(from, send, to, recv, k);
  }
  return b.build();
}

void expect_same_plan(const SegmentPlan& want, const SegmentPlan& got) {
  EXPECT_EQ(want.span_start, got.span_start);
  EXPECT_EQ(want.span_end, got.span_end);
  EXPECT_EQ(want.idle, got.idle);
  EXPECT_EQ(want.input_idle_ns, got.input_idle_ns);
  EXPECT_EQ(want.property2_violations, got.property2_violations);
  EXPECT_EQ(want.property2_ns, got.property2_ns);
  EXPECT_EQ(want.segments, got.segments);
  ASSERT_EQ(want.parts.size(), got.parts.size());
  for (size_t k = 0; k < want.parts.size(); ++k) {
    EXPECT_EQ(want.parts[k].window.start, got.parts[k].window.start) << k;
    EXPECT_EQ(want.parts[k].window.end, got.parts[k].window.end) << k;
    EXPECT_EQ(want.parts[k].window.closed_end, got.parts[k].window.closed_end) << k;
    EXPECT_EQ(want.parts[k].idle, got.parts[k].idle) << k;
  }
}

void expect_same_snapshot(const Snapshot& a, const Snapshot& b) {
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.timeline_edges, b.timeline_edges);
  EXPECT_TRUE(std::equal(a.ts.begin(), a.ts.end(), b.ts.begin(), b.ts.end()));
  EXPECT_TRUE(std::equal(a.worker.begin(), a.worker.end(), b.worker.begin(), b.worker.end()));
  EXPECT_TRUE(std::equal(a.edge.begin(), a.edge.end(), b.edge.begin(), b.edge.end()));
  EXPECT_TRUE(std::equal(a.type.begin(), a.type.end(), b.type.begin(), b.type.end()));
  EXPECT_TRUE(std::equal(a.msg_src.begin(), a.msg_src.end(), b.msg_src.begin(), b.msg_src.end()));
  EXPECT_TRUE(std::equal(a.msg_dst.begin(), a.msg_dst.end(), b.msg_dst.begin(), b.msg_dst.end()));
  EXPECT_TRUE(
      std::equal(a.msg_index.begin(), a.msg_index.end(), b.msg_index.begin(), b.msg_index.end()));
}

TEST(SegmentPlanner, PlansFromThePagAsFromTheWindowsSnapshot) {
  std::mt19937_64 rng(39);
  PagOptions popt;
  popt.gap_threshold_ns = 3;  // gaps of the random traces stay gaps
  size_t windows = 0, segmented = 0, with_idle = 0, with_input_idle = 0;
  const int traces = testing::random_inputs(400, 80);
  for (int i = 0; i < traces; ++i) {
    const Pag pag = build_pag(random_trace(rng), popt);
    const int64_t span = pag.last_ts - pag.first_ts + 1;
    for (int64_t width : {int64_t{0}, int64_t{1}, int64_t{3}, span / 7 + 1, span / 2 + 1}) {
      SCOPED_TRACE(::testing::Message() << "trace " << i << ", width " << width);
      WindowSpec spec;
      spec.width_ns = width;
      Snapshotter reference(pag), counted(pag);
      SegmentPlanner planner(pag);
      Snapshot snap, partial;
      SegmentPlan want, got;
      size_t k = 0;
      for (const Window& win : plan_windows(pag, spec)) {
        if (win.empty_run > 0) continue;
        reference.build(win, snap);
        plan_segments(pag, snap, want);
        planner.plan(win, got);
        expect_same_plan(want, got);
        // Every other window only counted: the next one built is still the same.
        if (k++ % 2 == 0) {
          counted.count_only(win, partial);
          EXPECT_EQ(partial.events, snap.events);
          EXPECT_EQ(partial.node_count(), 0u);
        } else {
          counted.build(win, partial);
          expect_same_snapshot(snap, partial);
        }
        ++windows;
        segmented += want.parts.size() > 1;
        with_idle += !want.idle.empty();
        with_input_idle += want.input_idle_ns > 0;
        if (HasFailure()) return;
      }
    }
  }
  // The random traces reach the cases that matter.
  const size_t enough = testing::kSanitized ? 200 : 1000;
  EXPECT_GT(windows, 10 * enough);
  EXPECT_GT(segmented, enough);
  EXPECT_GT(with_idle, enough);
  EXPECT_GT(with_input_idle, enough / 10);
}

// A large window's planner lists are freed once its plan is made (they would sit under
// the window's CP, docs/PERFORMANCE.md issue 39 fifth round); a small window's are kept
// for the next one; and the plans stay those of the window's snapshot either way.
TEST(SegmentPlanner, FreesALargeWindowsListsAndPlansTheSame) {
  // Workers alternating busy and waiting edges: one busy run a pair, 16 bytes each.
  testing::TraceBuilder b;
  const uint32_t workers = 4;
  const int64_t pairs = testing::kSanitized ? 150'000 : 400'000;
  for (uint32_t w = 0; w < workers; ++w)
    for (int64_t k = 0; k < pairs; ++k) {
      b.activity(w, ActivityType::processing, 10 * k, 10 * k + 6);
      b.activity(w, ActivityType::waiting, 10 * k + 6, 10 * k + 10, k % 3 == 0 ? 7u : UINT32_MAX);
    }
  for (int k = 0; k < 1000; ++k) b.message(k % workers, 97 * k, (k + 1) % workers, 97 * k + 55, k);
  PagOptions popt;
  popt.gap_threshold_ns = 3;
  const Pag pag = build_pag(b.build(), popt);
  const int64_t span = pag.last_ts - pag.first_ts + 1;
  // The small windows first (kept lists), then two large ones (freed).
  for (int64_t width : {int64_t{1000}, span / 2 + 1}) {
    SCOPED_TRACE(::testing::Message() << "width " << width);
    WindowSpec spec;
    spec.width_ns = width;
    Snapshotter reference(pag);
    SegmentPlanner planner(pag);
    Snapshot snap;
    SegmentPlan want, got;
    size_t most = 0;
    for (const Window& win : plan_windows(pag, spec)) {
      reference.build(win, snap);
      plan_segments(pag, snap, want);
      EXPECT_LE(plan_scratch_bytes(), kPlanScratchKeptBytes);
      planner.plan(win, got);
      EXPECT_LE(plan_scratch_bytes(), kPlanScratchKeptBytes);
      expect_same_plan(want, got);
      most = std::max(most, snap.node_count());
      if (HasFailure()) return;
    }
    // The large windows' lists did exceed what is kept: 16 bytes a busy run.
    if (width > 1000) {
      EXPECT_GT(most / 2 * 16, kPlanScratchKeptBytes);
    } else {
      EXPECT_GT(plan_scratch_bytes(), 0u);  // a small window's lists are kept
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_segment_planner
