// Live windowing (serve/live_analyzer.hpp, pag/streaming.hpp): on the same events, the
// windows a live stream emits equal `analyze`'s, whatever the arrival interleaving and
// however the windows are grouped into cuts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "output/writers.hpp"
#include "pag/streaming.hpp"
#include "serve/live_analyzer.hpp"
#include "sim_test_util.hpp"
#include "summary/analysis.hpp"

namespace snailtrail {
namespace {

Event local(uint32_t w, int64_t ts, ActivityType a, EventKind k, uint32_t op = kNone) {
  Event e;
  e.ts = ts;
  e.worker = w;
  e.activity = a;
  e.kind = k;
  if (op != kNone) {
    e.op = op;
    e.flags |= kHasOperator;
  }
  return e;
}

Event half(uint32_t w, uint32_t remote, int64_t ts, EventKind k, int64_t corr, bool with_corr) {
  Event e;
  e.ts = ts;
  e.worker = w;
  e.remote = remote;
  e.activity = ActivityType::data_message;
  e.kind = k;
  e.flags = kHasRemote;
  if (with_corr) {
    e.correlator = corr;
    e.flags |= kHasCorrelator;
  }
  return e;
}

// A messy random trace: overlapping, unmatched and mismatched activities, gaps shorter
// and longer than the threshold, messages that are unmatched, duplicated, without
// correlator or received "before" they were sent (clock skew) — all within `max_delay`,
// so that a live stream with that lateness can know everything `analyze` knows.
Trace random_trace(std::mt19937_64& rng, int64_t max_delay) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const uint32_t workers = static_cast<uint32_t>(uni(2, 5));
  const int64_t horizon = uni(200'000, 3'000'000);
  std::vector<Event> events;
  const ActivityType types[] = {ActivityType::processing, ActivityType::serialization,
                                ActivityType::deserialization, ActivityType::scheduling};
  for (uint32_t w = 0; w < workers; ++w) {
    int64_t t = uni(0, 50'000);
    while (t < horizon) {
      const ActivityType a = types[uni(0, 3)];
      const uint32_t op = uni(0, 3) == 0 ? kNone : static_cast<uint32_t>(uni(1, 3));
      const int64_t len = uni(0, 3) == 0 ? uni(1, 200) : uni(1'000, 150'000);
      if (uni(0, 9) != 0) events.push_back(local(w * 7, t, a, EventKind::start, op));
      if (uni(0, 9) != 0) events.push_back(local(w * 7, t + len, a, EventKind::end, op));
      if (uni(0, 19) == 0)
        events.push_back(local(w * 7, t + len / 2, types[uni(0, 3)],
                               EventKind::start));  // overlapping
      t += len + (uni(0, 2) == 0 ? uni(0, 90'000) : uni(100'000, 400'000));
    }
  }
  int64_t corr = 0;
  const int64_t messages = uni(5, 120);
  for (int64_t m = 0; m < messages; ++m) {
    const uint32_t s = static_cast<uint32_t>(uni(0, workers - 1));
    uint32_t r = static_cast<uint32_t>(uni(0, workers - 1));
    if (r == s && uni(0, 3) != 0) r = (r + 1) % workers;
    const int64_t ts = uni(0, horizon);
    int64_t tr = ts + uni(0, max_delay);
    if (uni(0, 15) == 0) tr = ts - uni(1, max_delay / 4);  // skew
    if (uni(0, 10) == 0) tr = ts;                          // zero duration
    const int64_t c = ++corr;
    const bool with_corr = uni(0, 25) != 0;
    if (uni(0, 12) != 0) events.push_back(half(s * 7, r * 7, ts, EventKind::send, c, with_corr));
    if (uni(0, 12) != 0) events.push_back(half(r * 7, s * 7, tr, EventKind::recv, c, with_corr));
    // A duplicate correlator, close in time (a live stream cannot report a repeat that
    // comes after the first use's window was emitted).
    if (uni(0, 8) == 0) {
      events.push_back(half(s * 7, r * 7, ts + uni(0, 500), EventKind::send, c, true));
    }
    if (uni(0, 12) == 0)
      events.push_back(half(r * 7, s * 7, tr + uni(0, 500), EventKind::recv, c, true));
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
  });
  Trace trace;
  trace.events.resize(events.size());
  std::copy(events.begin(), events.end(), trace.events.begin());
  return trace;
}

std::vector<std::string> batch_windows(const Trace& trace, const LiveOptions& lo) {
  const Pag pag = build_pag(trace, lo.pag);
  AnalysisOptions opt;
  opt.pag = lo.pag;
  opt.windows.width_ns = lo.window_ns;
  opt.summary = lo.summary;
  const Names names(trace, pag);
  std::vector<std::string> out;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    fmt::memory_buffer buf;
    write_window_json(buf, v.summary, names, lo.selection);
    out.emplace_back(buf.data(), buf.size());
  });
  return out;
}

// Feeds the trace's per-worker streams in a random interleaving, with advance() calls
// at random points.
std::vector<std::string> live_windows(const Trace& trace, const LiveOptions& lo,
                                      std::mt19937_64& rng, LiveStats* stats = nullptr) {
  std::vector<std::string> out;
  LiveAnalyzer live(lo, [&](LiveWindow& w) { out.push_back(w.json); });
  std::vector<std::vector<Event>> streams;
  std::vector<uint32_t> ids;
  for (const Event& e : trace.events) {
    auto it = std::find(ids.begin(), ids.end(), e.worker);
    if (it == ids.end()) {
      ids.push_back(e.worker);
      streams.emplace_back();
      it = ids.end() - 1;
    }
    streams[static_cast<size_t>(it - ids.begin())].push_back(e);
  }
  std::vector<size_t> pos(streams.size(), 0);
  size_t left = trace.events.size();
  // Windows are closed by the workers known so far: hold them until every worker (every
  // producer, in serve: --wait-for) has shown up.
  live.hold(true);
  size_t started = 0;
  while (left > 0) {
    size_t s = std::uniform_int_distribution<size_t>(0, streams.size() - 1)(rng);
    if (pos[s] == streams[s].size()) continue;
    size_t burst = std::uniform_int_distribution<size_t>(1, 8)(rng);
    if (pos[s] == 0 && ++started == streams.size()) live.hold(false);
    for (; burst > 0 && pos[s] < streams[s].size(); --burst, --left) live.add(streams[s][pos[s]++]);
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) live.advance();
  }
  live.finish();
  if (stats) *stats = live.stats();
  return out;
}

TEST(LiveAnalyzer, RandomTracesEqualBatchAnalysis) {
  std::mt19937_64 rng(20261122);
  size_t compared = 0, incremental = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t max_delay = 60'000;
    const Trace trace = random_trace(rng, max_delay);
    LiveOptions lo;
    lo.window_ns = std::uniform_int_distribution<int64_t>(20'000, 700'000)(rng);
    lo.lateness_ns = max_delay + 1;
    lo.pag.gap_threshold_ns = 100'000;
    const auto expected = batch_windows(trace, lo);
    LiveStats stats;
    const auto got = live_windows(trace, lo, rng, &stats);
    EXPECT_EQ(stats.late_events, 0u);
    EXPECT_EQ(stats.out_of_order, 0u);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == expected[i]) continue;
      size_t d = 0;
      while (d < got[i].size() && d < expected[i].size() && got[i][d] == expected[i][d]) ++d;
      const size_t from = d > 80 ? d - 80 : 0;
      FAIL() << "window " << i << " differs at byte " << d
             << ":\n  live:  " << got[i].substr(from, 200)
             << "\n  batch: " << expected[i].substr(from, 200);
    }
    compared += got.size();
    if (stats.windows > 1) ++incremental;
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(incremental, 250u);
}

// Windows close while the stream goes on, and memory does not grow with the stream.
TEST(LiveAnalyzer, EmitsWindowsAsTheyCloseWithBoundedState) {
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 3'000'000'000);
  LiveOptions lo;
  lo.window_ns = 100'000'000;
  lo.lateness_ns = 10'000'000;
  size_t emitted = 0, max_nodes = 0;
  LiveAnalyzer live(lo, [&](LiveWindow&) { ++emitted; });
  // The simulator's trace is in global time order: the way a live system produces it.
  std::vector<size_t> emitted_at;
  for (size_t i = 0; i < sim.trace.events.size(); ++i) {
    live.add(sim.trace.events[i]);
    if (i % 1000 == 0) {
      live.advance();
      max_nodes = std::max(max_nodes, live.pag().retained_nodes());
    }
  }
  const size_t before_finish = emitted;
  live.finish();
  EXPECT_GE(before_finish, 25u) << "windows must close during the stream, not at its end";
  EXPECT_LE(emitted - before_finish, 2u);
  // A window's worth of nodes plus the lateness, not the whole trace's.
  const Pag whole = build_pag(sim.trace, lo.pag);
  EXPECT_LT(max_nodes, whole.node_count() / 10) << max_nodes << " of " << whole.node_count();
}

TEST(LiveAnalyzer, SimulatedTraceEqualsBatchInGlobalTimeOrder) {
  for (const char* name : {"wordcount-skew-30", "spark-microbatch", "timely-iterative"}) {
    SCOPED_TRACE(name);
    const sim::SimResult sim = testing::simulate_example(name, 400'000'000);
    LiveOptions lo;
    lo.window_ns = 10'000'000;
    lo.lateness_ns = 50'000'000;
    std::vector<std::string> got;
    LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w.json); });
    live.add_names(sim.trace);
    for (size_t i = 0; i < sim.trace.events.size(); ++i) {
      live.add(sim.trace.events[i]);
      if (i % 500 == 0) live.advance();
    }
    live.finish();
    const Pag pag = build_pag(sim.trace, lo.pag);
    AnalysisOptions opt;
    opt.windows.width_ns = lo.window_ns;
    const Names names(sim.trace, pag);
    std::vector<std::string> expected;
    analyze_pag(pag, opt, [&](const WindowView& v) {
      fmt::memory_buffer buf;
      write_window_json(buf, v.summary, names, lo.selection);
      expected.emplace_back(buf.data(), buf.size());
    });
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "window " << i;
  }
}

TEST(LiveAnalyzer, LateAndOutOfOrderEventsAreCountedNotMerged) {
  LiveOptions lo;
  lo.window_ns = 1000;
  lo.lateness_ns = 0;
  std::vector<LiveWindow> got;
  LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w); });
  // Worker 1 works from 0 to 5000; worker 2 from 0 to 5000 too.
  for (uint32_t w : {1u, 2u}) {
    live.add(local(w, 0, ActivityType::processing, EventKind::start));
    live.add(local(w, 2500, ActivityType::processing, EventKind::end));
    live.add(local(w, 2500, ActivityType::processing, EventKind::start));
  }
  live.add(local(1, 5000, ActivityType::processing, EventKind::end));
  live.add(local(2, 5000, ActivityType::processing, EventKind::end));
  live.add(local(1, 5001, ActivityType::processing, EventKind::start));
  live.add(local(2, 5001, ActivityType::processing, EventKind::start));
  EXPECT_EQ(live.advance(), 5u);  // [0,1000) ... [4000,5000)
  // Too late for the closed windows; older than worker 1's last event.
  live.add(local(1, 4999, ActivityType::scheduling, EventKind::start));
  live.add(local(2, 10, ActivityType::scheduling, EventKind::start));
  EXPECT_EQ(live.stats().late_events, 2u);
  live.add(local(1, 5000, ActivityType::scheduling, EventKind::end));  // its node is closed
  live.add(local(1, 6000, ActivityType::processing, EventKind::end));
  live.add(local(2, 6000, ActivityType::processing, EventKind::end));
  live.finish();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(live.stats().out_of_order, 1u);
  EXPECT_EQ(got[5].summary.window.start, 5000);
  EXPECT_TRUE(got[5].summary.window.closed_end);
  EXPECT_NE(got[5].json.find("\"input\":{\"late_events\":2,\"out_of_order_events\":1}"),
            std::string::npos)
      << got[5].json;
  EXPECT_EQ(got[0].json.find("\"input\""), std::string::npos);
}

TEST(LiveAnalyzer, IdleWorkersStopHoldingWindowsBack) {
  LiveOptions lo;
  lo.window_ns = 1000;
  lo.lateness_ns = 100;
  size_t emitted = 0;
  LiveAnalyzer live(lo, [&](LiveWindow&) { ++emitted; });
  live.add(local(1, 0, ActivityType::processing, EventKind::start));
  live.add(local(1, 500, ActivityType::processing, EventKind::end));
  for (int64_t t = 0; t <= 10'000; t += 250)
    live.add(local(2, t, ActivityType::processing, t % 500 ? EventKind::end : EventKind::start));
  EXPECT_EQ(live.advance(), 0u) << "worker 1 holds every window back";
  live.set_idle(1);
  EXPECT_EQ(live.advance(), 9u);  // up to 9000: worker 2 is at 10000 < 10000 + lateness
  live.add(local(1, 12'000, ActivityType::processing, EventKind::start));  // back again
  EXPECT_FALSE(live.is_idle(1));
  live.hold(true);
  for (int64_t t = 10'250; t <= 20'000; t += 250)
    live.add(local(2, t, ActivityType::processing, t % 500 ? EventKind::end : EventKind::start));
  EXPECT_EQ(live.advance(), 0u) << "held";
  live.hold(false);
  EXPECT_EQ(live.advance(), 0u) << "worker 1's node at 12000 may still receive events";
  live.add(local(1, 12'500, ActivityType::processing, EventKind::end));
  // Worker 1's nodes up to 12000 are final: windows ending at 10000, 11000, 12000 close.
  EXPECT_EQ(live.advance(), 3u);
  EXPECT_EQ(emitted, 12u);
}

}  // namespace
}  // namespace snailtrail
