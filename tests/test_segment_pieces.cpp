// Segmented windows merge the pieces of messages in flight across a whole segment
// (cp/segments.hpp, docs/PAG.md §4). Oracle: the same analysis with one edge per piece
// (AnalysisOptions::merge_pieces off, the computation before the merge), on random traces
// whose long messages cross many segments; and a hand-built trace whose edge count is
// known.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_segment_pieces {
namespace {

// Per-edge CP keyed by (src worker, src ts, dst worker, dst ts, type, is message), a
// merged edge counted as its pieces.
using Key = std::tuple<uint32_t, int64_t, uint32_t, int64_t, int, bool>;

struct WindowResult {
  WindowSummary summary;
  std::map<Key, double> cp;
  size_t message_edges = 0;  // in the combined snapshot
  size_t merged = 0;
  size_t pieces = 0;  // message edges counted with their multiplicity
};

std::vector<WindowResult> analyze(const Pag& pag, const WindowSpec& spec, bool merge) {
  AnalysisOptions opt;
  opt.windows = spec;
  opt.merge_pieces = merge;
  std::vector<WindowResult> out;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    WindowResult r;
    r.summary = v.summary;
    if (v.summary.window.empty_run == 0) {
      const Snapshot& s = v.snapshot;
      for (uint32_t u = 0; u + 1 < s.node_count(); ++u)
        if (s.edge[u] != kNone)
          r.cp[{s.worker[u], s.ts[u], s.worker[u + 1], s.ts[u + 1], s.type[u], false}] +=
              v.cp.timeline_cp[u];
      for (size_t k = 0; k < s.msg_src.size(); ++k) {
        const int type = static_cast<int>(pag.messages[s.msg_index[k]].type);
        r.cp[{s.worker[s.msg_src[k]], s.ts[s.msg_src[k]], s.worker[s.msg_dst[k]],
              s.ts[s.msg_dst[k]], type, true}] += v.cp.message_cp[k] * s.mult(k);
        r.pieces += s.mult(k);
      }
      r.message_edges = s.msg_src.size();
      r.merged = s.merged_pieces;
    }
    out.push_back(std::move(r));
  });
  return out;
}

// Workers busy from 0 to `end` in short activities, a third of them waits that end with no
// message arriving (segment borders); long messages between random workers, of two types.
Trace long_messages_trace(std::mt19937_64& rng, int64_t end) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  testing::TraceBuilder b;
  const uint32_t workers = static_cast<uint32_t>(uni(2, 4));
  for (uint32_t w = 0; w < workers; ++w)
    for (int64_t t = 0; t < end;) {
      const int64_t d = std::min(uni(1, 4), end - t);
      b.activity(w, uni(0, 2) == 0 ? ActivityType::waiting : ActivityType::processing, t, t + d);
      t += d;
    }
  const int messages = static_cast<int>(uni(5, 40));
  for (int k = 0; k < messages; ++k) {
    const uint32_t from = static_cast<uint32_t>(uni(0, workers - 1));
    const uint32_t to = static_cast<uint32_t>(uni(0, workers - 1));
    const int64_t send = uni(0, end - 2);
    const int64_t recv = std::min(end, send + uni(1, end / 2));
    b.message(from, send, to, recv, k,
              uni(0, 3) == 0 ? ActivityType::control_message : ActivityType::data_message);
  }
  return b.build();
}

void expect_groups_near(const Groups& a, const Groups& b, const char* what) {
  SCOPED_TRACE(what);
  for (int t = 0; t < kActivityTypeCount; ++t) ASSERT_NEAR(a.activity[t], b.activity[t], 1e-12);
  ASSERT_EQ(a.worker.size(), b.worker.size());
  for (size_t w = 0; w < a.worker.size(); ++w) ASSERT_NEAR(a.worker[w], b.worker[w], 1e-12);
  ASSERT_EQ(a.communication.size(), b.communication.size());
  for (size_t c = 0; c < a.communication.size(); ++c) {
    ASSERT_EQ(a.communication[c].src, b.communication[c].src);
    ASSERT_EQ(a.communication[c].dst, b.communication[c].dst);
    ASSERT_NEAR(a.communication[c].value, b.communication[c].value, 1e-12);
  }
}

TEST(SegmentPieces, MergedPiecesGiveTheSameCpAndSummariesAsOnePerPiece) {
  std::mt19937_64 rng(20261130);
  size_t merged = 0, windows = 0, multi_segment = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t end = 40 + static_cast<int64_t>(rng() % 80);
    const Trace trace = long_messages_trace(rng, end);
    const Pag pag = build_pag(trace);
    // The whole trace, or windows of a random width (messages cross their borders too).
    WindowSpec spec;
    if (trial % 2) spec.width_ns = 10 + static_cast<int64_t>(rng() % 40);
    const std::vector<WindowResult> got = analyze(pag, spec, true);
    const std::vector<WindowResult> want = analyze(pag, spec, false);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " window " << i);
      const WindowSummary &g = got[i].summary, &w = want[i].summary;
      ++windows;
      merged += got[i].merged;
      multi_segment += w.diagnostics.segments > 1;
      ASSERT_EQ(want[i].merged, 0u);
      // The same pieces, fewer edges.
      ASSERT_EQ(got[i].pieces, want[i].message_edges);
      ASSERT_EQ(got[i].message_edges + got[i].merged, want[i].message_edges);
      ASSERT_EQ(g.edges, w.edges);
      ASSERT_EQ(g.nodes, w.nodes);
      ASSERT_EQ(g.has_paths, w.has_paths);
      ASSERT_EQ(g.cp_ns, w.cp_ns);
      ASSERT_EQ(g.diagnostics.segments, w.diagnostics.segments);
      ASSERT_EQ(g.diagnostics.no_path_segments, w.diagnostics.no_path_segments);
      ASSERT_EQ(g.diagnostics.property1_violations, w.diagnostics.property1_violations);
      ASSERT_NEAR(g.paths_log10, w.paths_log10, 1e-12);
      ASSERT_EQ(got[i].cp.size(), want[i].cp.size());
      for (const auto& [k, v] : want[i].cp) {
        auto it = got[i].cp.find(k);
        ASSERT_NE(it, got[i].cp.end());
        ASSERT_NEAR(it->second, v, 1e-12);
      }
      expect_groups_near(g.cp, w.cp, "cp");
      expect_groups_near(g.conventional, w.conventional, "conventional");
      ASSERT_EQ(g.top.size(), w.top.size());
      for (size_t t = 0; t < g.top.size(); ++t) {
        ASSERT_EQ(g.top[t].worker, w.top[t].worker);
        ASSERT_EQ(g.top[t].remote, w.top[t].remote);
        ASSERT_EQ(g.top[t].type, w.top[t].type);
        ASSERT_EQ(g.top[t].start, w.top[t].start);
        ASSERT_EQ(g.top[t].end, w.top[t].end);
        ASSERT_NEAR(g.top[t].cp, w.top[t].cp, 1e-12);
      }
      // The sampled path may take another piece of a merged edge, but covers the same
      // time.
      if (g.has_paths) {
        double single = 0;
        for (double v : g.single_path.activity) single += v;
        ASSERT_NEAR(single, 1.0, 1e-9);
      }
    }
  }
  EXPECT_GT(multi_segment, windows / 2);
  EXPECT_GT(merged, windows);  // the merge happens, many times
}

// Two workers whose waits end with no message arriving every 2 ns: S segments; M messages
// sent at the start and received at the end cross all of them. One edge per piece is
// M x S message edges; merged, each segment between the first and the last has one.
TEST(SegmentPieces, MessagesCrossingManySegmentsAreLinearInEdges) {
  constexpr int64_t kSteps = 200;
  constexpr int kMessages = 50;
  testing::TraceBuilder b;
  for (uint32_t w = 0; w < 2; ++w)
    for (int64_t i = 0; i < kSteps; ++i) {
      b.activity(w, ActivityType::processing, 2 * i, 2 * i + 1);
      b.activity(w, ActivityType::waiting, 2 * i + 1, 2 * i + 2);
    }
  for (int k = 0; k < kMessages; ++k) b.message(0, 0, 1, 2 * kSteps, k);
  const Pag pag = build_pag(b.build());
  for (const bool merge : {true, false}) {
    AnalysisOptions opt;
    opt.merge_pieces = merge;
    size_t windows = 0;
    analyze_pag(pag, opt, [&](const WindowView& v) {
      ++windows;
      const Snapshot& s = v.snapshot;
      const uint64_t segments = v.summary.diagnostics.segments;
      ASSERT_GE(segments, static_cast<uint64_t>(kSteps));
      // Each message is one piece per segment, whether merged or not.
      size_t pieces = 0;
      for (size_t k = 0; k < s.msg_src.size(); ++k) pieces += s.mult(k);
      EXPECT_EQ(pieces, kMessages * segments);
      EXPECT_EQ(v.summary.edges, s.timeline_edges + kMessages * segments);
      if (merge)
        EXPECT_LE(s.msg_src.size(), 2 * kMessages + segments);
      else
        EXPECT_EQ(s.msg_src.size(), kMessages * segments);
      // The pieces counted by their multiplicity still carry all the CP.
      double total = 0;
      for (size_t k = 0; k < s.msg_src.size(); ++k) total += v.cp.message_cp[k] * s.mult(k);
      for (uint32_t u = 0; u + 1 < s.node_count(); ++u) total += v.cp.timeline_cp[u];
      EXPECT_NEAR(total, 1.0, 1e-9);
    });
    EXPECT_EQ(windows, 1u);
  }
}

}  // namespace
}  // namespace snailtrail::test_segment_pieces
