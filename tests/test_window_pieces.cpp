// The pieces the window pipelines share to analyze a stream piece by piece (serve, a
// .snail file read block by block): the last window of a range, windows cut from a
// StreamingPag, and the merging of runs of windows without events where pieces meet.
#include <gtest/gtest.h>

#include <random>

#include "pag/streaming.hpp"
#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_window_pieces {
namespace {

using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;

// Brute force: walk the windows from k0 until the next one starts at or after hi (the
// range's end belongs to the last window with a closed end).
int64_t last_window_by_walking(int64_t k0, int64_t hi, int64_t origin, int64_t w) {
  int64_t k = k0;
  while (windowing::border(origin, k + 1, w) < hi) ++k;
  return k;
}

TEST(WindowPieces, LastWindowMatchesWalkingTheWindows) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t w = 1 + static_cast<int64_t>(rng() % 50);
    const int64_t origin = static_cast<int64_t>(rng() % 201) - 100;
    const int64_t lo = static_cast<int64_t>(rng() % 2001) - 1000;
    const int64_t hi = lo + static_cast<int64_t>(rng() % 400);
    const int64_t k0 = windowing::window_of(lo, origin, w);
    ASSERT_EQ(windowing::last_window(k0, hi, origin, w), last_window_by_walking(k0, hi, origin, w))
        << "w " << w << " origin " << origin << " lo " << lo << " hi " << hi;
  }
  // Hand-computed: [1500, 4000] in windows of 1000 ends with window 3, [3000, 4000].
  EXPECT_EQ(windowing::last_window(1, 4000, 0, 1000), 3);
  EXPECT_EQ(windowing::last_window(1, 4001, 0, 1000), 4);
  EXPECT_EQ(windowing::last_window(4, 4000, 0, 1000), 4);  // a single instant on a border
}

WindowSummary run_of(int64_t start, int64_t end, uint64_t n, uint64_t index) {
  WindowSummary s;
  s.index = index;
  s.window = Window{start, end, false, n};
  return s;
}

TEST(WindowPieces, RunsThatMeetAreMergedIntoOne) {
  EmptyRunMerger m;
  EXPECT_FALSE(m.pending());
  WindowSummary analyzed;
  analyzed.window = Window{0, 10};
  EXPECT_FALSE(m.absorb(analyzed));  // a window with events is not held
  EXPECT_FALSE(m.pending());
  EXPECT_TRUE(m.absorb(run_of(100, 130, 3, 10)));
  EXPECT_TRUE(m.absorb(run_of(130, 150, 2, 13)));
  ASSERT_TRUE(m.pending());
  const WindowSummary r = m.take();
  EXPECT_EQ(r.index, 10u);
  EXPECT_EQ(r.window.start, 100);
  EXPECT_EQ(r.window.end, 150);
  EXPECT_EQ(r.window.empty_run, 5u);
  EXPECT_FALSE(m.pending());
  EXPECT_TRUE(m.absorb(run_of(200, 210, 1, 20)));  // a new run after take()
  EXPECT_EQ(m.take().window.empty_run, 1u);
}

// Windows cut from a stream in pieces of any size, runs merged where pieces meet, are the
// plan of the whole trace's PAG.
TEST(WindowPieces, CutsInPiecesGiveTheWholePlan) {
  TraceBuilder b;
  // Two workers with stretches of activity and gaps longer than kEmptyWindowsAnalyzed
  // windows of 100 ns.
  for (int64_t t : {0, 300, 350, 5000, 5100, 12000}) {
    b.activity(0, P, t, t + 80);
    b.activity(1, P, t + 20, t + 150);
  }
  const Trace trace = b.build();
  const int64_t w = 100;
  const std::vector<Window> whole = plan_windows(build_pag(trace), WindowSpec{w, {}, {}});
  ASSERT_GT(whole.size(), 3u);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 50; ++round) {
    StreamingPag stream;
    for (const Event& e : trace.events) ASSERT_EQ(stream.add(e), StreamingPag::Added::ok);
    stream.finish();
    const int64_t k0 = windowing::window_of(stream.first_ts(), 0, w);
    const int64_t k1 = windowing::last_window(k0, stream.last_ts(), 0, w);
    std::vector<Window> pieced;
    EmptyRunMerger runs;
    uint64_t empty_before = 0;
    for (int64_t k = k0; k <= k1;) {
      const int64_t k_end = std::min(k1 + 1, k + 1 + static_cast<int64_t>(rng() % 40));
      const bool last = k_end == k1 + 1;
      const WindowCut cut = cut_windows(stream, 0, w, k, k_end, last, std::nullopt, empty_before);
      EXPECT_EQ(cut.end, windowing::border(0, k_end, w));
      for (const Window& x : cut.windows) {
        WindowSummary s;
        s.window = x;
        if (runs.absorb(s)) continue;
        if (runs.pending()) pieced.push_back(runs.take().window);
        pieced.push_back(x);
      }
      stream.retire(cut.end);
      k = k_end;
    }
    if (runs.pending()) pieced.push_back(runs.take().window);
    ASSERT_EQ(pieced.size(), whole.size()) << "round " << round;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(pieced[i].start, whole[i].start) << i;
      EXPECT_EQ(pieced[i].end, whole[i].end) << i;
      EXPECT_EQ(pieced[i].closed_end, whole[i].closed_end) << i;
      EXPECT_EQ(pieced[i].empty_run, whole[i].empty_run) << i;
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_window_pieces
