// The pieces the window pipelines share to analyze a stream piece by piece (serve, a
// .snail file read block by block): the last window of a range, windows cut from a
// StreamingPag, and the merging of runs of windows without events where pieces meet.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "pag/streaming.hpp"
#include "sanitized.hpp"
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

// StreamingPag::take (the last cut, freeing the PAG's arrays as it copies them) against
// cut() of the same range on a twin fed the same events: random workers, activities and
// messages (some unmatched, some without correlator, some received "before" they were
// sent), reserved or not, with or without an earlier cut retired, ranges covering
// everything or a part; every field of the Pag equal.
Event random_event(std::mt19937_64& rng, uint32_t worker, int64_t ts) {
  Event e;
  e.ts = ts;
  e.worker = worker;
  e.activity = static_cast<ActivityType>(rng() % 4);
  e.kind = rng() % 2 ? EventKind::start : EventKind::end;
  if (rng() % 3 == 0) {
    e.op = static_cast<uint32_t>(rng() % 5);
    e.flags |= kHasOperator;
  }
  return e;
}

void expect_same_pag(const Pag& a, const Pag& b, int round) {
  EXPECT_EQ(a.worker_ids, b.worker_ids) << round;
  EXPECT_EQ(a.worker_begin, b.worker_begin) << round;
  EXPECT_EQ(a.node_ts, b.node_ts) << round;
  EXPECT_EQ(a.edge_type, b.edge_type) << round;
  EXPECT_EQ(a.edge_op, b.edge_op) << round;
  EXPECT_EQ(a.edge_instance, b.edge_instance) << round;
  EXPECT_EQ(a.event_ts, b.event_ts) << round;
  EXPECT_EQ(a.event_begin, b.event_begin) << round;
  EXPECT_EQ(a.operator_ids, b.operator_ids) << round;
  EXPECT_EQ(a.first_ts, b.first_ts) << round;
  EXPECT_EQ(a.last_ts, b.last_ts) << round;
  auto msg = [](const Message& m) {
    return std::make_tuple(m.src_node, m.dst_node, m.src_ts, m.dst_ts, m.src_worker, m.dst_worker,
                           m.type);
  };
  ASSERT_EQ(a.messages.size(), b.messages.size()) << round;
  for (size_t i = 0; i < a.messages.size(); ++i)
    EXPECT_EQ(msg(a.messages[i]), msg(b.messages[i])) << round << " message " << i;
  ASSERT_EQ(a.issues.size(), b.issues.size()) << round;
  for (size_t i = 0; i < a.issues.size(); ++i) {
    EXPECT_EQ(a.issues[i].ts, b.issues[i].ts) << round << " issue " << i;
    EXPECT_EQ(a.issues[i].issue, b.issues[i].issue) << round << " issue " << i;
  }
}

TEST(WindowPieces, TakeGivesTheLastCutsPag) {
  std::mt19937_64 rng(49);
  for (int round = 0; round < testing::random_inputs(300, 60); ++round) {
    const uint32_t workers = 1 + static_cast<uint32_t>(rng() % 5);
    std::vector<Event> events;
    std::vector<uint64_t> per_worker(workers);
    int64_t correlator = 0;
    for (uint32_t w = 0; w < workers; ++w) {
      int64_t t = static_cast<int64_t>(rng() % 1000);
      for (int n = static_cast<int>(rng() % 80); n > 0; --n) {
        t += static_cast<int64_t>(rng() % 3 == 0 ? rng() % 3 : rng() % 400);
        events.push_back(random_event(rng, w * 3, t));
        if (rng() % 4 == 0) {  // a message to another worker
          const uint32_t r = static_cast<uint32_t>(rng() % workers);
          const int64_t tr = t + static_cast<int64_t>(rng() % 500) - 50;
          Event s, v;
          s.ts = t;
          s.worker = w * 3;
          v.ts = std::max<int64_t>(tr, 0);
          v.worker = r * 3;
          s.remote = r * 3;
          v.remote = w * 3;
          s.activity = v.activity = ActivityType::data_message;
          s.kind = EventKind::send;
          v.kind = EventKind::recv;
          s.flags = v.flags = kHasRemote;
          if (rng() % 10 != 0) {
            s.correlator = v.correlator = ++correlator;
            s.flags |= kHasCorrelator;
            v.flags |= kHasCorrelator;
          }
          if (rng() % 8 != 0) events.push_back(s);
          if (rng() % 8 != 0) events.push_back(v);
        }
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.ts < b.ts; });
    if (events.empty()) continue;
    for (const Event& e : events) ++per_worker[e.worker / 3];
    const bool unique = rng() % 2, reserve = rng() % 2;
    StreamingPag copied, taken;
    for (StreamingPag* p : {&copied, &taken}) {
      if (unique) p->assume_unique_correlators();
      for (uint32_t w = 0; w < workers; ++w) {
        p->declare(w * 3);
        if (reserve && p == &taken) p->reserve_worker(w * 3, per_worker[w]);
      }
      for (const Event& e : events) ASSERT_EQ(p->add(e), StreamingPag::Added::ok);
      p->finish();
    }
    const int64_t first = events.front().ts, last = events.back().ts;
    int64_t start = first;
    if (rng() % 2) {  // an earlier cut, retired
      const int64_t mid =
          first + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - first + 1));
      copied.cut(first, mid, false);
      taken.cut(first, mid, false);
      copied.retire(mid);
      taken.retire(mid);
      start = mid;
    }
    int64_t end = last;
    bool closed = true;
    if (rng() % 3 == 0) {  // a part of what is left
      end = start + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - start + 1));
      closed = rng() % 2;
    }
    const Pag want = copied.cut(start, end, closed);
    const Pag got = taken.take(start, end, closed);
    expect_same_pag(got, want, round);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace snailtrail::test_window_pieces
