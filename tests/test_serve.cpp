// Live windowing (serve/live_analyzer.hpp, pag/streaming.hpp): on the same events, the
// windows a live stream emits equal `analyze`'s, whatever the arrival interleaving and
// however the windows are grouped into cuts.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "http_test_util.hpp"
#include "importers/importer.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/to_trace.hpp"
#include "kernel_sim.hpp"
#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "pag/streaming.hpp"
#include "process_util.hpp"
#include "serve/live_analyzer.hpp"
#include "sim_test_util.hpp"
#include "spark_log_util.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve {
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
// With `idle`: workers that start late and stop early, and explicit waiting activities
// that no message ends, so that windows are cut into segments (docs/PAG.md §4).
Trace random_trace(std::mt19937_64& rng, int64_t max_delay, bool idle = false) {
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
    int64_t end = horizon;
    if (idle) {
      t = uni(0, horizon / 2);
      end = uni(t, horizon);
    }
    while (t < end) {
      ActivityType a = types[uni(0, 3)];
      if (idle && uni(0, 3) == 0) a = ActivityType::waiting;
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
    if (v.summary.window.empty_run > 0)
      write_empty_windows_json(buf, v.summary);
    else
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

void check_live_equals_batch(bool idle, uint64_t seed, size_t* segmented = nullptr,
                             size_t* with_idle = nullptr) {
  std::mt19937_64 rng(seed);
  size_t compared = 0, incremental = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t max_delay = 60'000;
    const Trace trace = random_trace(rng, max_delay, idle);
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
    if (segmented)
      for (const std::string& w : expected)
        if (w.find("\"segments\":1,") == std::string::npos &&
            w.find("\"segments\":0,") == std::string::npos)
          ++*segmented;
    if (with_idle)
      for (const std::string& w : expected)
        if (w.find("\"property2_violations\":0,") == std::string::npos ||
            w.find("\"input_idle_ns\":0,") == std::string::npos)  // idle, some for input
          ++*with_idle;
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(incremental, 250u);
}

TEST(LiveAnalyzer, RandomTracesEqualBatchAnalysis) {
  check_live_equals_batch(false, 20261122);
}

// Windows cut into segments (idle intervals, workers starting late or stopping early,
// waits that no message ends) come out of serve as out of analyze.
TEST(LiveAnalyzer, SegmentedWindowsEqualBatchAnalysis) {
  size_t segmented = 0, with_idle = 0;
  check_live_equals_batch(true, 20261124, &segmented, &with_idle);
  EXPECT_GT(segmented, 500u);
  EXPECT_GT(with_idle, 50u);
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
      if (v.summary.window.empty_run > 0)
        write_empty_windows_json(buf, v.summary);
      else
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

// A trace of `events`, ordered as build_pag wants them (by worker, then time).
Trace trace_of(std::vector<Event> events) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
  });
  Trace trace;
  trace.events.resize(events.size());
  std::copy(events.begin(), events.end(), trace.events.begin());
  return trace;
}

// Issue 25 item 1: the window plan, checked against a brute force that lists every
// window of the range and counts its events. Entries cover the windows in order; a
// window is analyzed unless it and the kEmptyWindowsAnalyzed before it have no events;
// the others form maximal runs.
TEST(PlanWindows, RunsOfEmptyWindowsMatchBruteForce) {
  std::mt19937_64 rng(25);
  size_t runs = 0;
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<Event> events;
    const int64_t w = std::uniform_int_distribution<int64_t>(1, 50)(rng);
    const int workers = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int k = 0; k < workers; ++k) {
      int64_t ts = std::uniform_int_distribution<int64_t>(-200, 200)(rng);
      const int n = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int i = 0; i < n; ++i) {
        events.push_back(local(k, ts, ActivityType::processing, EventKind::start));
        ts += std::uniform_int_distribution<int64_t>(0, 3)(rng) == 0
                  ? std::uniform_int_distribution<int64_t>(0, 600)(rng)
                  : std::uniform_int_distribution<int64_t>(0, 20)(rng);
        events.push_back(local(k, ts, ActivityType::processing, EventKind::end));
        ts += std::uniform_int_distribution<int64_t>(0, 30)(rng);
      }
    }
    const Pag pag = build_pag(trace_of(events));
    WindowSpec spec;
    spec.width_ns = w;
    if (round % 3 == 1) spec.from_ns = std::uniform_int_distribution<int64_t>(-250, 100)(rng);
    if (round % 3 == 2) spec.to_ns = std::uniform_int_distribution<int64_t>(0, 500)(rng);
    if (spec.from_ns && spec.to_ns && *spec.to_ns <= *spec.from_ns) continue;
    // Brute force: every window, as before the compaction.
    int64_t lo = pag.first_ts, hi = pag.last_ts;
    if (spec.from_ns) lo = std::max(lo, *spec.from_ns);
    if (spec.to_ns) hi = std::min(hi, *spec.to_ns);
    const int64_t origin = spec.from_ns.value_or(0);
    auto fdiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
    struct W {
      int64_t start, end;
      bool closed;
      uint64_t events;
    };
    std::vector<W> all;
    if (hi >= lo) {
      int64_t k0 = fdiv(lo - origin, w), k1 = fdiv(hi - origin, w);
      if (k1 > k0 && origin + k1 * w == hi) --k1;
      for (int64_t k = k0; k <= k1; ++k) {
        W x{origin + k * w, origin + k * w + w, k == k1, 0};
        if (spec.to_ns && x.end > *spec.to_ns) x.end = *spec.to_ns;
        for (int64_t ts : pag.event_ts)
          if (ts >= x.start && (ts < x.end || (x.closed && ts == x.end))) ++x.events;
        all.push_back(x);
      }
    }
    std::vector<bool> analyzed(all.size());
    uint64_t empty_before = 0;
    for (size_t j = 0; j < all.size(); ++j) {
      analyzed[j] = all[j].events > 0 || empty_before < kEmptyWindowsAnalyzed;
      empty_before = all[j].events > 0 ? 0 : empty_before + 1;
    }
    const std::vector<Window> plan = plan_windows(pag, spec);
    size_t i = 0;
    for (const Window& e : plan) {
      ASSERT_LT(i, all.size());
      if (e.empty_run == 0) {
        EXPECT_EQ(e.start, all[i].start);
        EXPECT_EQ(e.end, all[i].end);
        EXPECT_EQ(e.closed_end, all[i].closed);
        EXPECT_TRUE(analyzed[i]) << "window " << i;
        ++i;
        continue;
      }
      EXPECT_TRUE(i > 0 && analyzed[i - 1]) << "runs are maximal";
      EXPECT_EQ(e.start, all[i].start);
      for (uint64_t j = 0; j < e.empty_run; ++j, ++i) {
        ASSERT_LT(i, all.size());
        EXPECT_FALSE(analyzed[i]) << "window " << i << " is in a run";
        EXPECT_EQ(all[i].events, 0u);
      }
      EXPECT_EQ(e.end, all[i - 1].end);
      EXPECT_TRUE(i == all.size() || analyzed[i]) << "runs are maximal";
      ++runs;
    }
    EXPECT_EQ(i, all.size());
  }
  EXPECT_GT(runs, 50u);
}

// Issue 25 item 1: two events at 0 and 2^63 - 1 (and a gap of 1e16 ns): the live analyzer
// and the batch analysis finish at once, with a handful of lines, and agree.
TEST(LiveAnalyzer, AbsurdGapsCostNothingAndEqualBatch) {
  const int64_t far[] = {10'000'000'000'000'000, INT64_MAX};
  for (int64_t last : far) {
    SCOPED_TRACE(last);
    const Trace t = trace_of({local(0, 0, ActivityType::processing, EventKind::start),
                              local(1, 500, ActivityType::processing, EventKind::start),
                              local(1, 2'500'000, ActivityType::processing, EventKind::end),
                              local(0, last, ActivityType::processing, EventKind::end)});
    LiveOptions lo;
    lo.window_ns = 1'000'000;  // 1 ms: 1e10 to 1e13 windows
    const auto start = std::chrono::steady_clock::now();
    const auto expected = batch_windows(t, lo);
    std::mt19937_64 rng(1);
    LiveStats stats;
    const auto got = live_windows(t, lo, rng, &stats);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20);
    // Windows 0, 1 (no events, after one with events: analyzed), 2, 3 to 18 (the first 16
    // without events: analyzed), one run up to the last window, which holds the last event
    // (at its closed end for 1e16).
    const int64_t k_last = last / lo.window_ns - (last % lo.window_ns == 0 ? 1 : 0);
    ASSERT_EQ(expected.size(), 21u);
    for (int i = 0; i < 19; ++i)
      EXPECT_EQ(expected[i].rfind("{\"window\":{\"index\":" + std::to_string(i) + ",", 0), 0u)
          << expected[i];
    EXPECT_EQ(expected[19],
              fmt::format("{{\"empty_windows\":{{\"first_index\":19,\"count\":{},\"start_ns\":"
                          "19000000,\"end_ns\":{}}}}}",
                          k_last - 19, k_last * lo.window_ns));
    EXPECT_EQ(expected[20].rfind("{\"window\":{\"index\":" + std::to_string(k_last) + ",", 0), 0u)
        << expected[20];
    EXPECT_NE(expected[20].find("\"end_ns\":" + std::to_string(last) + "}"), std::string::npos)
        << "the last window ends at the last event, saturated at INT64_MAX: " << expected[20];
    ASSERT_EQ(got, expected);
    EXPECT_EQ(stats.empty_windows, static_cast<uint64_t>(k_last - 19));
    EXPECT_EQ(stats.empty_runs, 1u);
  }
}

// --max-jump: an event far ahead of everything seen is refused and counted; the stream
// goes on.
TEST(LiveAnalyzer, JumpsBeyondMaxJumpAreRefused) {
  LiveOptions lo;
  lo.window_ns = 1000;
  lo.lateness_ns = 0;
  lo.max_jump_ns = 1'000'000;
  std::vector<LiveWindow> got;
  LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w); });
  EXPECT_TRUE(live.add(local(0, 0, ActivityType::processing, EventKind::start)));
  EXPECT_FALSE(live.add(local(0, INT64_MAX, ActivityType::processing, EventKind::end)));
  EXPECT_FALSE(live.add(local(1, 1'000'001, ActivityType::processing, EventKind::start)));
  EXPECT_TRUE(live.add(local(1, 1'000'000, ActivityType::processing, EventKind::start)));
  EXPECT_TRUE(live.add(local(0, 1'500'000, ActivityType::processing, EventKind::end)));
  EXPECT_TRUE(live.add(local(1, 1'600'000, ActivityType::processing, EventKind::end)));
  EXPECT_EQ(live.stats().time_jumps, 2u);
  live.advance();
  live.finish();
  ASSERT_FALSE(got.empty());
  EXPECT_NE(got[0].json.find("\"time_jumps\":2"), std::string::npos) << got[0].json;
  // Windows 0 to 1599 (the last event, 1600000, at the closed end of the last): those with
  // events, the 16 after each, and three runs.
  EXPECT_EQ(live.stats().windows + live.stats().empty_windows, 1600u);
  EXPECT_EQ(got.size(), 55u);
}

// Issue 25 item 8: an activity left open by a producer that was cut off, whose windows
// closed while the others went on, is reported at shutdown (in the last window).
TEST(LiveAnalyzer, ActivitiesOpenAtShutdownAreReported) {
  LiveOptions lo;
  lo.window_ns = 1000;
  lo.lateness_ns = 0;
  std::vector<LiveWindow> got;
  LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w); });
  live.add(local(1, 100, ActivityType::processing, EventKind::start));  // never ends
  for (int64_t t = 0; t <= 10'500; t += 500)                            // ends with an end
    live.add(local(2, t, ActivityType::processing, t % 1000 ? EventKind::end : EventKind::start));
  live.set_idle(1);  // its producer is gone
  live.advance();
  ASSERT_GE(got.size(), 5u) << "windows closed past worker 1's last node";
  live.finish();
  EXPECT_EQ(live.stats().unterminated_at_shutdown, 1u);
  uint64_t reported = 0;
  for (const LiveWindow& w : got)
    reported += w.summary.diagnostics.issues[static_cast<int>(Issue::unterminated_activity)];
  EXPECT_EQ(reported, 1u);
  EXPECT_NE(got.back().json.find("\"unterminated_activities\":1"), std::string::npos)
      << got.back().json;
}

// The index a window line (or an empty_windows record, by its first window) starts with.
uint64_t line_index(const std::string& line) {
  for (const char* key : {"{\"window\":{\"index\":", "{\"empty_windows\":{\"first_index\":"})
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key)));
  ADD_FAILURE() << "not a window line: " << line;
  return 0;
}

// serve --shard I/N: shard I emits exactly the windows of the unsharded analyzer whose
// index is I mod N, equal byte for byte (their late-event diagnostics included), and
// analyzes no other window. Oracle: the unsharded LiveAnalyzer (itself checked against
// the batch analysis above).
TEST(LiveAnalyzer, ShardsEmitTheirWindowsOnlyAndAnalyzeNoOther) {
  std::mt19937_64 rng(20261129);
  uint64_t skipped = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t max_delay = 60'000;
    const Trace trace = random_trace(rng, max_delay, round % 2 == 1);
    LiveOptions lo;
    lo.window_ns = std::uniform_int_distribution<int64_t>(20'000, 300'000)(rng);
    lo.lateness_ns = max_delay + 1;
    lo.pag.gap_threshold_ns = 100'000;
    LiveStats all_stats;
    const uint64_t seed = rng();
    std::mt19937_64 feed(seed);
    const auto all = live_windows(trace, lo, feed, &all_stats);
    const uint32_t n = 2 + static_cast<uint32_t>(round % 3);
    std::vector<std::string> merged;
    uint64_t analyzed = 0;
    for (uint32_t i = 0; i < n; ++i) {
      LiveOptions shard = lo;
      shard.shard_index = i;
      shard.shard_count = n;
      LiveStats stats;
      std::mt19937_64 shard_feed(seed + 1 + i);  // another interleaving: same windows
      const auto got = live_windows(trace, shard, shard_feed, &stats);
      for (const std::string& line : got) EXPECT_EQ(line_index(line) % n, i) << line;
      merged.insert(merged.end(), got.begin(), got.end());
      EXPECT_EQ(stats.windows + stats.skipped_windows, all_stats.windows);
      analyzed += stats.windows;
      skipped += stats.skipped_windows;
    }
    EXPECT_EQ(analyzed, all_stats.windows);  // each window analyzed by one shard
    std::sort(merged.begin(), merged.end(), [](const std::string& a, const std::string& b) {
      return line_index(a) < line_index(b);
    });
    ASSERT_EQ(merged, all);
  }
  EXPECT_GT(skipped, 500u);
}

// Late events go into the diagnostics of the next window, also when that window is
// another shard's: shard 0 of 2 must not carry them on into its next one.
TEST(LiveAnalyzer, LateEventsOfAnotherShardsWindowStayThere) {
  auto run = [](uint32_t index, uint32_t count) {
    LiveOptions lo;
    lo.window_ns = 1000;
    lo.lateness_ns = 0;
    lo.shard_index = index;
    lo.shard_count = count;
    std::vector<std::string> got;
    LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w.json); });
    for (uint32_t w : {1u, 2u}) {
      live.add(local(w, 0, ActivityType::processing, EventKind::start));
      live.add(local(w, 5000, ActivityType::processing, EventKind::end));
      live.add(local(w, 5001, ActivityType::processing, EventKind::start));
    }
    live.advance();                                                      // windows 0 to 4
    live.add(local(2, 10, ActivityType::scheduling, EventKind::start));  // late: window 5's
    for (uint32_t w : {1u, 2u}) live.add(local(w, 7000, ActivityType::processing, EventKind::end));
    live.finish();
    return got;
  };
  const auto all = run(0, 1);
  ASSERT_EQ(all.size(), 7u);
  ASSERT_NE(all[5].find("\"late_events\":1"), std::string::npos) << all[5];
  EXPECT_EQ(all[6].find("late_events"), std::string::npos) << all[6];
  EXPECT_EQ(run(0, 2), (std::vector<std::string>{all[0], all[2], all[4], all[6]}));
  EXPECT_EQ(run(1, 2), (std::vector<std::string>{all[1], all[3], all[5]}));
}

// The same feed as live_windows, but windows may close as soon as the first worker has
// shown up (no hold for the others): the workers that start later have late events.
std::vector<std::string> live_windows_with_late(const Trace& trace, const LiveOptions& lo,
                                                uint64_t seed, LiveStats* stats) {
  std::mt19937_64 rng(seed);
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
  while (left > 0) {
    // Stream 0 runs ahead: it takes half of the turns.
    size_t s = std::uniform_int_distribution<size_t>(0, 2 * streams.size() - 1)(rng);
    if (s >= streams.size()) s = 0;
    if (pos[s] == streams[s].size()) {
      s = 0;
      while (pos[s] == streams[s].size()) ++s;
    }
    size_t burst = std::uniform_int_distribution<size_t>(1, 8)(rng);
    for (; burst > 0 && pos[s] < streams[s].size(); --burst, --left) live.add(streams[s][pos[s]++]);
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) live.advance();
  }
  live.finish();
  *stats = live.stats();
  return out;
}

// Activities and messages of a trace that span more than one window border: the parts of
// windows a shard must get from the windows of the others.
std::pair<size_t, size_t> spanning(const Trace& trace, int64_t width) {
  size_t activities = 0, messages = 0;
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, int64_t> sends;
  std::map<uint32_t, int64_t> started;
  auto crosses = [&](int64_t a, int64_t b) { return b / width - a / width >= 2; };
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::start) started[e.worker] = e.ts;
    if (e.kind == EventKind::end && started.count(e.worker) && crosses(started[e.worker], e.ts))
      ++activities;
    if (e.kind == EventKind::send) sends[{e.worker, e.remote, e.correlator}] = e.ts;
  }
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::recv) continue;
    auto it = sends.find({e.remote, e.worker, e.correlator});
    if (it != sends.end() && crosses(it->second, e.ts)) ++messages;
  }
  return {activities, messages};
}

std::vector<std::string> by_index(std::vector<std::string> lines) {
  std::stable_sort(lines.begin(), lines.end(), [](const std::string& a, const std::string& b) {
    return line_index(a) < line_index(b);
  });
  return lines;
}

// N = 1..4 shards over many random messy traces, with narrow windows so that activities
// and messages span several windows. Oracles: without late events, the union of the
// shards' windows is the batch analysis byte for byte (each shard fed in its own
// interleaving); with late events (workers joining after windows closed), it is the
// unsharded LiveAnalyzer's output fed the same way (itself equal to the batch analysis
// without late events, above), late-event diagnostics included.
TEST(LiveAnalyzer, ShardUnionEqualsBatchOverManyRandomTraces) {
  std::mt19937_64 rng(20261130);
  size_t spanning_activities = 0, spanning_messages = 0, late = 0, windows_with_late = 0,
         compared = 0;
  for (int round = 0; round < 80; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t max_delay = 60'000;
    const Trace trace = random_trace(rng, max_delay, round % 2 == 1);
    LiveOptions lo;
    lo.window_ns = std::uniform_int_distribution<int64_t>(5'000, 200'000)(rng);
    lo.lateness_ns = max_delay + 1;
    lo.pag.gap_threshold_ns = 100'000;
    const auto [acts, msgs] = spanning(trace, lo.window_ns);
    spanning_activities += acts;
    spanning_messages += msgs;
    const auto expected = batch_windows(trace, lo);
    const uint32_t n = 1 + static_cast<uint32_t>(round % 4);
    std::vector<std::string> merged;
    for (uint32_t i = 0; i < n; ++i) {
      LiveOptions shard = lo;
      shard.shard_index = i;
      shard.shard_count = n;
      std::mt19937_64 feed(rng());
      const auto got = live_windows(trace, shard, feed);
      merged.insert(merged.end(), got.begin(), got.end());
    }
    ASSERT_EQ(by_index(merged), expected);
    compared += expected.size();

    LiveOptions tight = lo;
    tight.lateness_ns = std::uniform_int_distribution<int64_t>(0, max_delay)(rng);
    const uint64_t seed = rng();
    LiveStats all_stats;
    const auto all = live_windows_with_late(trace, tight, seed, &all_stats);
    late += all_stats.late_events;
    for (const std::string& line : all)
      if (line.find("\"late_events\":0") == std::string::npos &&
          line.find("\"late_events\"") != std::string::npos)
        ++windows_with_late;
    merged.clear();
    for (uint32_t i = 0; i < n; ++i) {
      LiveOptions shard = tight;
      shard.shard_index = i;
      shard.shard_count = n;
      LiveStats stats;
      const auto got = live_windows_with_late(trace, shard, seed, &stats);
      EXPECT_EQ(stats.late_events, all_stats.late_events);
      merged.insert(merged.end(), got.begin(), got.end());
    }
    ASSERT_EQ(by_index(merged), all);
  }
  EXPECT_GT(compared, 2000u);
  EXPECT_GT(spanning_activities, 200u);
  EXPECT_GT(spanning_messages, 200u);
  EXPECT_GT(late, 100u);
  EXPECT_GT(windows_with_late, 20u);
}

// Events on window borders: every event time of random messy traces (activities and
// messages spanning several windows, duplicates, skew) rounded down to a multiple of a
// third, a half or a whole window, so that many events open their window and the trace
// ends on a border (the last window's closed end). A shard keeps of another shard's
// window only each worker's first event time (StreamingPag::keep_event_times_if): the
// shards' windows together stay the batch analysis's, fed in random interleavings.
TEST(LiveAnalyzer, ShardUnionEqualsBatchWithEventsOnWindowBorders) {
  std::mt19937_64 rng(20261202);
  size_t on_border = 0, compared = 0, empty_runs = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t max_delay = 60'000;
    Trace trace = random_trace(rng, max_delay, round % 2 == 1);
    LiveOptions lo;
    lo.window_ns = std::uniform_int_distribution<int64_t>(5'000, 200'000)(rng);
    // Rounding moves a half by up to a window: the lateness covers that too.
    lo.lateness_ns = max_delay + lo.window_ns + 1;
    lo.pag.gap_threshold_ns = 100'000;
    const int64_t grid = lo.window_ns / (1 + round % 3);
    for (Event& e : trace.events) {
      e.ts -= e.ts % grid;
      on_border += e.ts % lo.window_ns == 0;
    }
    std::stable_sort(trace.events.begin(), trace.events.end(), [](const Event& a, const Event& b) {
      return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
    });
    const auto expected = batch_windows(trace, lo);
    for (const std::string& line : expected)
      empty_runs += line.find("empty_windows") != std::string::npos;
    const uint32_t n = 2 + static_cast<uint32_t>(round % 3);
    std::vector<std::string> merged;
    for (uint32_t i = 0; i < n; ++i) {
      LiveOptions shard = lo;
      shard.shard_index = i;
      shard.shard_count = n;
      std::mt19937_64 feed(rng());
      const auto got = live_windows(trace, shard, feed);
      merged.insert(merged.end(), got.begin(), got.end());
    }
    ASSERT_EQ(by_index(merged), expected);
    compared += expected.size();
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(on_border, 4000u);
  EXPECT_GT(empty_runs, 2u);
}

// A shard retains every event time of its own windows and, of another shard's window,
// only each worker's first one: with 4 shards, windows of 100 us and a lateness of 3
// windows, at most about half of what the unsharded analyzer retains at any moment
// (which holds every event of the open windows), and the same windows together.
TEST(LiveAnalyzer, ShardsRetainOneEventTimePerWorkerOfOtherShardsWindows) {
  std::vector<Event> events;
  const uint32_t workers = 4;
  int64_t corr = 0;
  for (int64_t t = 0; t < 10'000'000; t += 2'000) {
    for (uint32_t w = 0; w < workers; ++w) {
      events.push_back(local(w, t + w, ActivityType::processing, EventKind::start, w));
      events.push_back(local(w, t + w + 1'500, ActivityType::processing, EventKind::end, w));
    }
    const uint32_t s = static_cast<uint32_t>(t / 2'000 % workers);
    ++corr;
    events.push_back(half(s, (s + 1) % workers, t + 1'700, EventKind::send, corr, true));
    events.push_back(
        half((s + 1) % workers, s, t + 1'900 + t % 300'000, EventKind::recv, corr, true));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  auto run = [&](uint32_t index, uint32_t count, size_t& most) {
    LiveOptions lo;
    lo.window_ns = 100'000;
    lo.lateness_ns = 300'000;
    lo.shard_index = index;
    lo.shard_count = count;
    std::vector<std::string> got;
    LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w.json); });
    most = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      live.add(events[i]);
      if (i % 64 == 63) live.advance();
      // From the tenth window on (before the first one closes, shards are not set up yet).
      if (live.closed_until() >= 1'000'000)
        most = std::max(most, live.pag().retained_event_times());
    }
    live.finish();
    return got;
  };
  size_t one_most = 0;
  const auto all = run(0, 1, one_most);
  ASSERT_GT(all.size(), 99u);
  ASSERT_GT(one_most, 1'000u);
  const uint32_t n = 4;
  std::vector<std::string> merged;
  for (uint32_t i = 0; i < n; ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    size_t most = 0;
    const auto got = run(i, n, most);
    merged.insert(merged.end(), got.begin(), got.end());
    EXPECT_LE(most, one_most / 2);
    RecordProperty("retained_event_times_" + std::to_string(i),
                   std::to_string(most) + " of " + std::to_string(one_most));
  }
  EXPECT_EQ(by_index(merged), all);
}

// A long regular trace: 4 workers, 10 us activities with gaps, messages between them,
// 201 windows of 100 us, fed in time order with windows closing as they go. Each of N
// shards cuts PAGs only around its own windows: about 1/N of the nodes and message edges
// the unsharded analyzer cuts (each window's own plus at most one node before and one
// after per worker; bound: 1.3/N), and together they cut at least all of them. Their windows
// together are the unsharded analyzer's.
TEST(LiveAnalyzer, ShardsCutNoPagForOtherShardsWindows) {
  std::vector<Event> events;
  const uint32_t workers = 4;
  int64_t corr = 0;
  for (int64_t t = 0; t < 20'000'000; t += 12'000) {
    for (uint32_t w = 0; w < workers; ++w) {
      events.push_back(local(w, t + w, ActivityType::processing, EventKind::start, w));
      events.push_back(local(w, t + w + 10'000, ActivityType::processing, EventKind::end, w));
    }
    const uint32_t s = static_cast<uint32_t>(t / 12'000 % workers);
    ++corr;
    events.push_back(half(s, (s + 1) % workers, t + 10'500, EventKind::send, corr, true));
    events.push_back(half((s + 1) % workers, s, t + 11'500, EventKind::recv, corr, true));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  auto run = [&](uint32_t index, uint32_t count, LiveStats& stats) {
    LiveOptions lo;
    lo.window_ns = 100'000;
    lo.lateness_ns = 0;
    lo.shard_index = index;
    lo.shard_count = count;
    std::vector<std::string> got;
    LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w.json); });
    for (size_t i = 0; i < events.size(); ++i) {
      live.add(events[i]);
      if (i % 64 == 63) live.advance();
    }
    live.finish();
    stats = live.stats();
    return got;
  };
  LiveStats one;
  const auto all = run(0, 1, one);
  ASSERT_EQ(all.size(), 201u);  // the last events are at 20.0035 ms
  ASSERT_GT(one.cut_nodes, 5'000u);
  ASSERT_GT(one.cut_messages, 1'000u);
  for (uint32_t n = 2; n <= 4; ++n) {
    SCOPED_TRACE("shards " + std::to_string(n));
    std::vector<std::string> merged;
    uint64_t nodes = 0, messages = 0;
    for (uint32_t i = 0; i < n; ++i) {
      LiveStats stats;
      const auto got = run(i, n, stats);
      merged.insert(merged.end(), got.begin(), got.end());
      const uint64_t windows = stats.windows;
      EXPECT_LE(stats.cut_nodes, one.cut_nodes / n + windows * workers * 2 + 64);
      EXPECT_LE(stats.cut_nodes, one.cut_nodes * 13 / 10 / n);
      EXPECT_LE(stats.cut_messages, one.cut_messages * 13 / 10 / n);
      RecordProperty("cut_nodes_" + std::to_string(n) + "_" + std::to_string(i),
                     std::to_string(stats.cut_nodes) + " of " + std::to_string(one.cut_nodes));
      nodes += stats.cut_nodes;
      messages += stats.cut_messages;
    }
    EXPECT_GE(nodes, one.cut_nodes - 200 * workers);
    EXPECT_GE(messages, one.cut_messages - 200);
    EXPECT_EQ(by_index(merged), all);
  }
}

}  // namespace
}  // namespace snailtrail::test_serve

// ---------------------------------------------------------------------------------------------
// The serve and send commands, as processes talking TCP and HTTP on loopback.

namespace snailtrail::test_serve {
namespace {

namespace fs = std::filesystem;
using testing::http_get;
using testing::Process;

class ServeCli : public testing::TempDirTest {
 protected:
  ServeCli() : TempDirTest("serve") {}
  // Simulates examples/NAME.toml into FILE in the test's folder.
  fs::path simulated(const std::string& name, int64_t duration_ns, uint64_t seed,
                     const std::string& file) const {
    const sim::SimResult sim = testing::simulate_example(name, duration_ns, seed);
    write_trace(sim.trace, path(file).string());
    return path(file);
  }
  // What `analyze TRACE --window WINDOW --format jsonl` prints.
  std::string analyze_jsonl(const fs::path& trace, const std::string& window,
                            const std::string& importer = "auto") {
    Process p({"analyze", trace.string(), "--importer", importer, "--window", window, "--format",
               "jsonl", "--no-progress"},
              path("analyze.out"), path("analyze.err"));
    EXPECT_EQ(p.wait(), 0) << p.err();
    // Its last line is the run's verdict, which serve (never done) does not write.
    std::string out = p.out();
    const size_t run = out.rfind("{\"run\":");
    if (run != std::string::npos && (run == 0 || out[run - 1] == '\n')) out.resize(run);
    return out;
  }
  std::unique_ptr<Process> start(const std::string& name, const std::vector<std::string>& args) {
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }
  // `serve --follow FILE` writing windows.jsonl, with the HTTP API on a free port, which
  // is returned (0 if it never listened).
  int follow(const fs::path& file, const std::string& window, std::unique_ptr<Process>& server) {
    server = start(
        "serve", {"serve", "--follow", file.string(), "--window", window, "--http", "127.0.0.1:0",
                  "--port-file", path("ports").string(), "--out", path("windows.jsonl").string()});
    return testing::wait_for_port(path("ports"), "http");
  }
};

// A JSON value with object members sorted by key and array elements sorted: equal for
// documents that differ only in the order of equal-ranked entries.
std::string canonical_json(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      std::vector<std::string> members;
      simdjson::dom::object obj;
      if (e.get_object().get(obj)) return "?";
      for (auto [k, v] : obj) members.push_back(std::string(k) + ":" + canonical_json(v));
      std::sort(members.begin(), members.end());
      std::string out = "{";
      for (const auto& m : members) out += m + ",";
      return out + "}";
    }
    case simdjson::dom::element_type::ARRAY: {
      std::vector<std::string> items;
      simdjson::dom::array arr;
      if (e.get_array().get(arr)) return "?";
      for (auto v : arr) items.push_back(canonical_json(v));
      std::sort(items.begin(), items.end());
      std::string out = "[";
      for (const auto& m : items) out += m + ",";
      return out + "]";
    }
    default:
      return simdjson::minify(e);
  }
}

using testing::lines_of;

// Issue #5's acceptance test: 4 producers, each carrying a quarter of the workers, into
// `serve --window 1ms`; after SIGTERM its output equals `analyze --window 1ms`.
TEST_F(ServeCli, FourProducersGiveAnalyzesWindows) {
  const fs::path trace = simulated("wordcount-skew-30", 300'000'000, 7, "trace.snail");
  const Trace events = read_trace(trace.string());
  const auto expected = lines_of(analyze_jsonl(trace, "1ms"));
  ASSERT_GT(expected.size(), 250u);

  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "1ms",
                      "--wait-for", "4", "--out", path("windows.jsonl").string(), "--port-file",
                      path("ports").string()});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  ASSERT_GT(tcp, 0) << server->err();
  std::vector<uint32_t> ids;
  for (const Event& e : events.events)
    if (std::find(ids.begin(), ids.end(), e.worker) == ids.end()) ids.push_back(e.worker);
  std::sort(ids.begin(), ids.end());
  ASSERT_GE(ids.size(), 4u);
  std::vector<std::unique_ptr<Process>> producers;
  for (size_t p = 0; p < 4; ++p) {
    std::string list;
    for (size_t i = p; i < ids.size(); i += 4)
      list += (list.empty() ? "" : ",") + std::to_string(ids[i]);
    // Two producers speak JSONL, two the binary framing.
    producers.push_back(start("send" + std::to_string(p),
                              {"send", trace.string(), "--to", "127.0.0.1:" + std::to_string(tcp),
                               "--workers", list, "--format", p % 2 ? "jsonl" : "snail"}));
  }
  for (auto& p : producers) ASSERT_EQ(p->wait(), 0) << p->err();
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  const auto got = lines_of(testing::slurp(path("windows.jsonl")));
  ASSERT_EQ(got.size(), expected.size()) << server->err();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "window " << i;
}

void send_bytes(int port, const std::string& bytes, bool close_abruptly = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
  if (close_abruptly) {
    linger l{1, 0};  // RST instead of FIN: a producer that died
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  } else {
    ::shutdown(fd, SHUT_WR);
    char sink[64];
    while (::recv(fd, sink, sizeof sink, 0) > 0) {
    }
  }
  ::close(fd);
}

uint64_t metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stoull(line.substr(name.size() + 1));
  ADD_FAILURE() << "no metric " << name << " in\n" << text;
  return 0;
}

// Garbage, malformed lines, a .snail stream cut inside a block and a producer that
// vanishes mid-frame: nothing crashes, every complete event is kept, and /metrics counts
// the problems.
TEST_F(ServeCli, BadStreamsAreCountedAndCompleteEventsKept) {
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "10us",
                      "--lateness", "1s", "--out", path("windows.jsonl").string(), "--port-file",
                      path("ports").string()});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(tcp, 0) << server->err();
  ASSERT_GT(http, 0) << server->err();
  EXPECT_EQ(http_get(http, "/healthz"), "ok\n");
  int status = 0;
  http_get(http, "/api/summary/latest", &status);
  EXPECT_EQ(status, 404) << "no window yet";

  // JSONL with two malformed lines among 6 good events; the last line has no newline
  // (a truncated line at the end of the stream).
  auto ev = [](int w, int64_t ts, const char* kind) {
    return fmt::format(R"({{"ts":{},"worker":{},"activity":"processing","event":"{}"}})", ts, w,
                       kind) +
           "\n";
  };
  std::string jsonl = ev(1, 0, "start") + "{not json\n" + ev(1, 5000, "end") +
                      ev(1, 5000, "start") + "[1,2,3]\n" + ev(1, 40000, "end") +
                      ev(1, 40000, "start") + ev(1, 80000, "end") + R"({"ts":9)";
  send_bytes(tcp, jsonl);

  // A .snail stream: header, one complete block of 4 events, then half of a second block,
  // and the producer disappears.
  Trace t;
  for (int64_t ts : {0, 20000, 20000, 80000}) {
    Event e;
    e.ts = ts;
    e.worker = 2;
    e.activity = ActivityType::processing;
    e.kind = ts == 0 || (ts == 20000 && t.events.size() == 2) ? EventKind::start : EventKind::end;
    t.events.push_back(e);
  }
  SnailWriteOptions one_block;
  const std::string image = to_snail(t, one_block);
  const std::string second_block = image.substr(16);
  send_bytes(tcp, image + second_block.substr(0, second_block.size() / 2), true);

  // Pure garbage: not JSON, not .snail.
  send_bytes(tcp, std::string(3000, '\x01') + "\n\xff\xfe garbage\n");

  // The counts show up in /metrics while the server runs.
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_connections_total") == 3 &&
           metric(metrics, "snailtrail_connections_open") == 0;
  });
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), 6u + 4u);
  EXPECT_EQ(metric(metrics, "snailtrail_invalid_lines_total"), 2u + 2u);
  EXPECT_EQ(metric(metrics, "snailtrail_truncated_streams_total"), 2u);
  EXPECT_EQ(metric(metrics, "snailtrail_connections_total"), 3u);
  server->signal(SIGINT);
  ASSERT_EQ(server->wait(), 0) << server->err();
  uint64_t events = 0;
  for (const std::string& line : lines_of(testing::slurp(path("windows.jsonl")))) {
    const size_t at = line.find("\"events\":");
    ASSERT_NE(at, std::string::npos);
    events += std::stoull(line.substr(at + 9));
  }
  EXPECT_EQ(events, 10u) << "every complete event is in some window";
}

TEST_F(ServeCli, HttpApiServesRetainedWindows) {
  const fs::path trace = simulated("wordcount-skew-30", 200'000'000, 3, "trace.jsonl");
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "10ms",
                      "--lateness", "1ms", "--retain", "5", "--idle-timeout", "200ms",
                      "--port-file", path("ports").string(), "--quiet"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  auto producer =
      start("send", {"send", trace.string(), "--to", "127.0.0.1:" + std::to_string(tcp)});
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  // Windows close while the server runs (no SIGTERM yet): once the producer's workers are
  // idle, every window but the one holding the last event (index 19).
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics");
    return metric(metrics, "snailtrail_windows_emitted_total") >= 19;
  });
  EXPECT_EQ(metric(metrics, "snailtrail_windows_emitted_total"), 19u);
  EXPECT_NE(metrics.find("snailtrail_latest_window_cp{activity=\"processing\"}"),
            std::string::npos);
  // Only the last 5 are retained, oldest first.
  const std::string windows = http_get(http, "/api/windows");
  std::vector<size_t> indices;
  for (size_t at = windows.find("{\"window\":{\"index\":"); at != std::string::npos;
       at = windows.find("{\"window\":{\"index\":", at + 1))
    indices.push_back(std::stoul(windows.substr(at + std::strlen("{\"window\":{\"index\":"))));
  EXPECT_EQ(indices, (std::vector<size_t>{14, 15, 16, 17, 18})) << windows.substr(0, 300);
  const std::string since = http_get(http, "/api/windows?since=160000000");
  EXPECT_EQ(since.find("\"index\":15"), std::string::npos);
  EXPECT_NE(since.find("\"index\":16"), std::string::npos);
  int status = 0;
  http_get(http, "/api/windows?since=abc", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(http_get(http, "/api/summary/latest").find("\"index\":18"), std::string::npos);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(lines_of(server->out()).size(), 20u) << "stdout has every window";
}

// Without listeners, serve reads stdin to its end, emits every window and exits.
TEST_F(ServeCli, StdinStreamEndsWithTheStream) {
  const fs::path trace = simulated("spark-microbatch", 300'000'000, 5, "trace.jsonl");
  const std::string expected = analyze_jsonl(trace, "5ms");
  Process serve({"serve", "--stdin", "--window", "5ms", "--quiet"}, path("serve.out"),
                path("serve.err"), trace);
  ASSERT_EQ(serve.wait(), 0) << serve.err();
  EXPECT_EQ(serve.out(), expected);
  EXPECT_GT(lines_of(serve.out()).size(), 50u);
}

// --follow reads a file as it grows, from before it exists to SIGTERM.
TEST_F(ServeCli, FollowsAGrowingFile) {
  const std::string text =
      testing::slurp(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl");
  const std::string expected =
      analyze_jsonl(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl", "1ms");
  const fs::path file = path("growing.jsonl");
  std::unique_ptr<Process> server;
  const int http = follow(file, "1ms", server);
  ASSERT_GT(http, 0) << server->err();
  {
    std::ofstream out(file, std::ios::binary);
    const size_t cut = text.find('\n', text.size() / 2) + 1;
    out << text.substr(0, cut) << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    out << text.substr(cut) << std::flush;
  }
  EXPECT_TRUE(testing::wait_until([&] {
    return metric(http_get(http, "/metrics"), "snailtrail_events_ingested_total") == 320;
  }));
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), expected);
}

// A kernel trace as perf script text, written in two parts while serve follows it (the
// format sniffed): its windows equal analyze's on the complete file.
TEST_F(ServeCli, FollowsAGrowingPerfScriptText) {
  testing::Sim<testing::PerfText> sim(11, testing::PerfStyle::kv,
                                      testing::PerfText(testing::PerfStyle::kv));
  sim.run(5, 2, 60);
  const std::string text = sim.p.text();
  const fs::path complete = path("complete.txt");
  std::ofstream(complete, std::ios::binary) << text;
  const std::string expected = analyze_jsonl(complete, "1ms");
  const size_t events =
      kernel::to_trace(kernel::build_model(kernel::parse_perf_script(text, "t"))).events.size();
  const fs::path file = path("growing.txt");
  std::unique_ptr<Process> server;
  const int http = follow(file, "1ms", server);
  ASSERT_GT(http, 0) << server->err();
  {
    std::ofstream out(file, std::ios::binary);
    const size_t cut = text.size() / 2;  // inside a line
    out << text.substr(0, cut) << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    out << text.substr(cut) << std::flush;
  }
  // The open intervals are only final at shutdown: wait for the ones closed before.
  EXPECT_TRUE(testing::wait_until([&] {
    return metric(http_get(http, "/metrics"), "snailtrail_events_ingested_total") >= events / 2;
  }));
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  // Worker ids follow first appearance in a stream (names are the batch's), so only ties
  // between workers (top list order, the single path, the verdict's "most on") may
  // differ: every window's CP and profile per activity, worker, operator and worker
  // pair must be equal, by name.
  const auto got = lines_of(testing::slurp(path("windows.jsonl")));
  const auto want = lines_of(expected);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(got.size(), 10u);
  simdjson::dom::parser pa, pb;
  for (size_t i = 0; i < got.size(); ++i) {
    simdjson::dom::object a, b;
    ASSERT_FALSE(pa.parse(got[i]).get(a)) << got[i];
    ASSERT_FALSE(pb.parse(want[i]).get(b)) << want[i];
    for (const char* key : {"window", "events", "activity", "worker", "operator", "communication",
                            "conventional", "diagnostics"}) {
      simdjson::dom::element x, y;
      ASSERT_FALSE(a.at_key(key).get(x)) << key;
      ASSERT_FALSE(b.at_key(key).get(y)) << key;
      EXPECT_EQ(canonical_json(x), canonical_json(y)) << "window " << i << " " << key;
    }
  }
}

// Issue #8: `scale manage --serve` follows the DS2 rates serve computes from a live
// stream. A simulated word count streamed into serve gives the same first decision as
// `scale manage --trace` on the trace file (both start their intervals at the first
// event, 0 in a simulated trace).
TEST_F(ServeCli, ScaleManageFollowsServesRates) {
  const fs::path trace = simulated("wordcount-skew-0", 3'000'000'000, 4, "trace.snail");
  ASSERT_EQ(read_trace(trace.string()).events.front().ts, 0);
  Process batch({"scale", "manage", "--trace", trace.string(), "--interval", "1s",
                 "--max-decisions", "1", "--format", "json"},
                path("batch.out"), path("batch.err"));
  ASSERT_EQ(batch.wait(), 0) << batch.err();
  const std::string expected = batch.out();
  ASSERT_NE(expected.find("\"epoch\": 0, \"parallelism\": "), std::string::npos) << expected;

  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "100ms",
                      "--rate-interval", "1s", "--idle-timeout", "300ms", "--out",
                      path("windows.jsonl").string(), "--port-file", path("ports").string()});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  const std::string url = "http://127.0.0.1:" + std::to_string(http);
  // A manager with a decision limit, and one that runs until serve goes away.
  auto manager = start("manage", {"scale", "manage", "--serve", url, "--max-decisions", "1",
                                  "--format", "json", "--poll", "50ms", "--duration", "120s"});
  auto follower =
      start("follow", {"scale", "manage", "--serve", url, "--poll", "50ms", "--duration", "120s"});
  auto producer =
      start("send", {"send", trace.string(), "--to", "127.0.0.1:" + std::to_string(tcp)});
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  ASSERT_EQ(manager->wait(), 0) << manager->err();
  EXPECT_EQ(manager->out(), expected);

  // With a DS2 topology file whose ids differ from serve's (1, 2, 3 against 0, 1, 2): the
  // operators are matched by name, and the decision is the same.
  {
    std::ofstream topo(path("topology.csv"));
    topo << "1,source,4,2,flatmap,4\n2,flatmap,4,3,count,4\n";
  }
  auto with_file = start(
      "file", {"scale", "manage", "--serve", url, "--topology", path("topology.csv").string(),
               "--max-decisions", "1", "--format", "json", "--poll", "50ms", "--duration", "60s"});
  ASSERT_EQ(with_file->wait(), 0) << with_file->err();
  EXPECT_EQ(with_file->out(), expected);
  // The policy interval is serve's: another --interval is a usage error.
  auto other_interval =
      start("interval", {"scale", "manage", "--serve", url.substr(7), "--interval", "5s"});
  EXPECT_EQ(other_interval->wait(), 2);
  EXPECT_NE(other_interval->err().find("--interval 5s differs from the rate interval"),
            std::string::npos)
      << other_interval->err();

  // The endpoint itself: 1 s intervals with serve's topology (source -> flatmap -> count).
  const std::string page = http_get(http, "/api/rates");
  EXPECT_NE(page.find("\"interval_ns\": 1000000000, \"first_event_ns\": 0"), std::string::npos)
      << page.substr(0, 300);
  EXPECT_NE(page.find("{\"id\": 1, \"name\": \"flatmap\", \"instances\": 4}"), std::string::npos)
      << page.substr(0, 300);
  EXPECT_NE(page.find("\"edges\": [[0, 1], [1, 2]]"), std::string::npos) << page.substr(0, 300);
  EXPECT_NE(page.find("{\"epoch\": 1, \"start_ns\": 1000000000, \"end_ns\": 2000000000"),
            std::string::npos);
  int status = 0;
  http_get(http, "/api/rates?since=x", &status);
  EXPECT_EQ(status, 400);
  const std::string metrics = http_get(http, "/metrics");
  EXPECT_GE(metric(metrics, "snailtrail_rate_intervals_total"), 2u);
  EXPECT_NE(metrics.find("snailtrail_operator_true_processing_rate{operator=\"count\"}"),
            std::string::npos);

  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  // The follower noticed that serve went away, after printing its decisions.
  ASSERT_EQ(follower->wait(), 0) << follower->err();
  EXPECT_NE(follower->err().find("went away"), std::string::npos) << follower->err();
  EXPECT_NE(follower->out().find("epoch 0 (1 s): "), std::string::npos) << follower->out();
  // Nothing to follow: a clear error; and only loopback addresses are accepted.
  auto gone = start("gone", {"scale", "manage", "--serve", url});
  EXPECT_EQ(gone->wait(), 1);
  EXPECT_NE(gone->err().find("cannot reach serve at " + url), std::string::npos) << gone->err();
  auto remote = start("remote", {"scale", "manage", "--serve", "http://192.0.2.1:7879"});
  EXPECT_EQ(remote->wait(), 2);
  EXPECT_NE(remote->err().find("only loopback addresses"), std::string::npos) << remote->err();
  for (const char* bad : {"127.0.0.1", "http://127.0.0.1:99999", "http://127.0.0.1:7879/api"}) {
    auto p = start("bad", {"scale", "manage", "--serve", bad});
    EXPECT_EQ(p->wait(), 2) << bad;
    EXPECT_NE(p->err().find("--serve: "), std::string::npos) << p->err();
  }
  // https:// without --tls-ca is a valid URL (verified against the system's CA store):
  // not a usage error, it fails at the connection (nothing listens there over TLS).
  auto https = start("https", {"scale", "manage", "--serve", "https://127.0.0.1:7879"});
  EXPECT_EQ(https->wait(), 1) << https->err();
  EXPECT_NE(https->err().find("serve at https://127.0.0.1:7879"), std::string::npos)
      << https->err();
}

// `scale manage --serve` against an HTTP server that is not serve, or answers nonsense:
// clear errors (exit 1), never a crash.
TEST_F(ServeCli, ScaleManageRejectsWhatIsNotARatesPage) {
  std::string body = "<html>not json</html>";
  httplib::Server fake;
  fake.Get("/api/rates", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { fake.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto run = [&](const std::string& name) {
    auto p =
        start(name, {"scale", "manage", "--serve", url, "--idle-exit", "1s", "--poll", "50ms"});
    const int code = p->wait();
    return std::make_pair(code, p->err());
  };
  auto [code, err] = run("html");
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("serve at " + url + ": rates page: not JSON"), std::string::npos) << err;
  body = R"({"interval_ns": 1000, "first_event_ns": 0, "topology": {"operators": [
      {"id": 0, "name": "a", "instances": 1}, {"id": 1, "name": "b", "instances": 1}],
      "edges": [[0, 1], [1, 0]]}, "intervals": [{"epoch": 0, "start_ns": 0, "end_ns": 1000,
      "instances": []}]})";
  std::tie(code, err) = run("cycle");
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("cycle"), std::string::npos) << err;
  // A valid page without news: --idle-exit ends the run.
  body = R"({"interval_ns": 1000, "first_event_ns": 0, "topology": {"operators": [],
      "edges": []}, "intervals": []})";
  std::tie(code, err) = run("empty");
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(err.find("no new interval from serve at " + url + " for 1s"), std::string::npos) << err;
  fake.stop();
  thread.join();
}

// `scale manage --serve` on pages by hand: the manager starts over when the stream reveals
// a new operator, and decides on the rates of the page (source at 250/s, map at 100/s per
// instance of useful time: 3 maps).
TEST_F(ServeCli, ScaleManageRestartsWhenTheTopologyGrows) {
  auto instance = [](int op, const char* name, int worker, double useful, double records) {
    return fmt::format(
        R"({{"operator": {}, "operator_name": "{}", "instance": 0, "worker": {}, "window_s": 1,
            "useful_s": {}, "records_processed": {}, "records_pushed": {}}})",
        op, name, worker, useful, records, records);
  };
  const std::string source_only =
      R"({"interval_ns": 1000000000, "first_event_ns": 0, "topology": {"operators": [
          {"id": 0, "name": "source", "instances": 1}], "edges": []}, "intervals": [
          {"epoch": 0, "start_ns": 0, "end_ns": 1000000000, "instances": [)" +
      instance(0, "source", 0, 0.1, 250) + "]}]}";
  const std::string both =
      R"({"interval_ns": 1000000000, "first_event_ns": 0, "topology": {"operators": [
          {"id": 0, "name": "source", "instances": 1}, {"id": 1, "name": "map", "instances": 1}],
          "edges": [[0, 1]]}, "intervals": [
          {"epoch": 1, "start_ns": 1000000000, "end_ns": 2000000000, "instances": [)" +
      instance(0, "source", 0, 0.1, 250) + ", " + instance(1, "map", 1, 1, 100) + "]}]}";
  std::mutex mu;
  std::string body = source_only;
  int requests = 0;
  httplib::Server fake;
  fake.Get("/api/rates", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu);
    res.set_content(body, "application/json");
    if (++requests == 2) body = both;  // the second page is seen after the first
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { fake.listen_after_bind(); });
  auto p = start("manage", {"scale", "manage", "--serve", "127.0.0.1:" + std::to_string(port),
                            "--max-decisions", "1", "--poll", "20ms", "--duration", "60s"});
  EXPECT_EQ(p->wait(), 0) << p->err();
  fake.stop();
  thread.join();
  EXPECT_NE(p->err().find("the stream revealed a new operator or edge: the manager starts over"),
            std::string::npos)
      << p->err();
  EXPECT_EQ(p->out(),
            "epoch 1 (2 s): source=1 map=3\n  ds2: source=1 map=3 (sources at 250/s = 100.0% of "
            "the target)\n");
}

// A running Spark application appends to its event log: serve follows it (the format
// sniffed from its first line) and its windows equal `analyze --importer spark` of the
// final file. The log is written in pieces cut inside lines, a job's events reach the
// server when the job ends (docs/SERVE.md, "Following foreign formats").
TEST_F(ServeCli, FollowsAGrowingSparkEventLog) {
  const testing::spark_log::GeneratedLog g =
      testing::spark_log::generate_log(3, 2, 12, 20, 11, /*task_starts=*/true);
  const fs::path whole = path("app-whole");
  {
    std::ofstream out(whole, std::ios::binary);
    out << g.text;
  }
  const size_t events = importers::import_trace(whole.string(), "spark").events.size();
  const std::string expected = analyze_jsonl(whole, "10ms", "spark");
  ASSERT_GT(lines_of(expected).size(), 50u);

  const fs::path file = path("app-20240101000000-0001.inprogress");
  std::unique_ptr<Process> server;
  const int http = follow(file, "10ms", server);
  ASSERT_GT(http, 0) << server->err();
  uint64_t seen_midway = 0;
  {
    std::ofstream out(file, std::ios::binary);
    const size_t pieces = 5;
    for (size_t i = 0; i < pieces; ++i) {
      const size_t from = g.text.size() * i / pieces, to = g.text.size() * (i + 1) / pieces;
      out << g.text.substr(from, to - from) << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (i == 2)  // the first three fifths are written: wait until serve took their events
        testing::wait_until([&] {
          seen_midway = metric(http_get(http, "/metrics"), "snailtrail_events_ingested_total");
          return seen_midway > 0;
        });
    }
  }
  EXPECT_TRUE(testing::wait_until([&] {
    return metric(http_get(http, "/metrics"), "snailtrail_events_ingested_total") == events;
  }));
  // Jobs that ended in the first three fifths were analyzed while the log grew.
  EXPECT_GT(seen_midway, 0u);
  EXPECT_LT(seen_midway, events);
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), expected);
}

// An original SnailTrail MessagePack log is binary (no lines): a small one is sniffed
// as soon as its bytes are read, and followed record by record.
TEST_F(ServeCli, FollowsAMessagePackLog) {
  // Records of 7 integers: ts (uint64), worker, activity, event, correlator, remote,
  // operator. Two workers process in turns and message each other.
  std::string log;
  auto record = [&](uint64_t ts, int worker, int activity, int event, int corr, int remote) {
    log += '\xcf';
    for (int b = 7; b >= 0; --b) log += static_cast<char>((ts >> (8 * b)) & 0xff);
    log += static_cast<char>(worker);
    log += static_cast<char>(activity);
    log += static_cast<char>(event);
    log += static_cast<char>(corr < 0 ? 0xff : corr);  // -1: negative fixint
    log += static_cast<char>(remote < 0 ? 0xff : remote);
    log += '\xff';  // operator: none
  };
  const uint64_t t0 = 1'000'000'000;
  for (int i = 0; i < 20; ++i) {
    const uint64_t t = t0 + uint64_t(i) * 1'000'000;
    const int w = i % 2;
    record(t, w, 4, 1, -1, -1);               // processing start
    record(t + 800'000, w, 4, 2, -1, -1);     // end
    record(t + 800'000, w, 10, 3, i, 1 - w);  // data message sent
    record(t + 900'000, 1 - w, 10, 4, i, w);  // received
  }
  const fs::path whole = path("whole.msgpack");
  {
    std::ofstream out(whole, std::ios::binary);
    out << log;
  }
  const std::string expected = analyze_jsonl(whole, "2ms", "snailtrail-msgpack");
  ASSERT_GT(lines_of(expected).size(), 5u);
  const fs::path file = path("growing.msgpack");
  std::unique_ptr<Process> server;
  const int http = follow(file, "2ms", server);
  ASSERT_GT(http, 0) << server->err();
  {
    std::ofstream out(file, std::ios::binary);
    out << log.substr(0, 301) << std::flush;  // inside a record
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    out << log.substr(301) << std::flush;
  }
  uint64_t ingested = 0;
  testing::wait_until([&] {
    ingested = metric(http_get(http, "/metrics"), "snailtrail_events_ingested_total");
    return ingested >= 80;
  });
  EXPECT_EQ(ingested, 80u);  // before shutdown: the file has no newline to wait for
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), expected);
}

// Chrome and Jaeger traces are single JSON documents: following one is refused with the
// reason, at start (an existing file, or --importer) or when the file appears.
TEST_F(ServeCli, FollowRefusesSingleDocumentFormats) {
  const std::string chrome = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/chrome-flows.json";
  auto existing = start("a", {"serve", "--follow", chrome, "--quiet"});
  EXPECT_EQ(existing->wait(), 2);
  EXPECT_NE(existing->err().find("cannot read " + chrome +
                                 " as chrome: a chrome trace is one JSON document"),
            std::string::npos)
      << existing->err();
  auto named = start("b", {"serve", "--follow", path("x.json").string(), "--importer", "jaeger"});
  EXPECT_EQ(named->wait(), 2);
  EXPECT_NE(named->err().find("as jaeger: a jaeger trace is one JSON document"), std::string::npos)
      << named->err();
  // Appears later: logged, not followed; with no other source the server ends. (The file
  // appears once the server says it waits for it: under ASan on a loaded machine the start
  // may take longer than any fixed sleep.)
  const fs::path later = path("later.json");
  auto server = start("c", {"serve", "--follow", later.string()});
  testing::wait_until([&] { return server->err().find("waiting for") != std::string::npos; });
  EXPECT_NE(server->err().find("snailtrail serve: waiting for " + later.string() + " to appear"),
            std::string::npos)
      << server->err();
  fs::copy_file(chrome, later);
  EXPECT_EQ(server->wait(), 0);
  EXPECT_NE(server->err().find("not following it: serve --follow cannot read"), std::string::npos)
      << server->err();
}

// Waits for `p` at most `limit_s` seconds (then kills it: a hang fails, it does not block
// the suite); returns the exit code and the time it took.
int wait_within(Process& p, double limit_s, double* took = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done.load() &&
           std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(limit_s))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!done.load()) p.signal(SIGKILL);
  });
  const int code = p.wait();
  done = true;
  watchdog.join();
  if (took) *took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return code;
}

std::string event_line(uint32_t worker, int64_t ts, const char* kind,
                       const char* activity = "processing") {
  return fmt::format("{{\"ts\":{},\"worker\":{},\"activity\":\"{}\",\"event\":\"{}\"}}\n", ts,
                     worker, activity, kind);
}

// Issue 25 item 1: one absurd timestamp (2^63 - 1), or a gap of 1e16 ns, after an event at
// 0. `serve` and `analyze` finish within seconds with a few lines, and agree; by default
// serve refuses the jump (--max-jump) and says so.
TEST_F(ServeCli, AbsurdTimestampsFinishFastWithBoundedOutput) {
  for (int64_t last : {INT64_MAX, int64_t{10'000'000'000'000'000}}) {
    SCOPED_TRACE(last);
    std::ofstream(path("t.jsonl"))
        << event_line(0, 0, "start") << event_line(1, 10, "start")
        << event_line(1, 2'000'000'000, "end") << event_line(0, last, "end");
    double took = 0;
    Process analyze({"analyze", path("t.jsonl").string(), "--format", "jsonl", "--no-progress"},
                    path("a.out"), path("a.err"));
    ASSERT_EQ(wait_within(analyze, 30, &took), 0) << analyze.err();
    EXPECT_LT(took, 20);
    auto expected = lines_of(analyze.out());
    // 3 with events, 17 without, 1 run of empty windows, then the run's verdict (which
    // serve does not write)
    EXPECT_EQ(expected.size(), 22u) << analyze.out();
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(expected.back().rfind("{\"run\":", 0), 0u);
    expected.pop_back();
    EXPECT_NE(analyze.out().find("{\"empty_windows\":{\"first_index\":19,"), std::string::npos)
        << analyze.out();
    EXPECT_NE(analyze.err().find("were not analyzed"), std::string::npos) << analyze.err();
    // The table and CSV too.
    for (const char* format : {"table", "csv"}) {
      Process other({"analyze", path("t.jsonl").string(), "--format", format, "--no-progress"},
                    path("o.out"), path("o.err"));
      EXPECT_EQ(wait_within(other, 30), 0) << other.err();
    }

    Process serve({"serve", "--stdin", "--max-jump", "0", "--out", path("w.jsonl").string()},
                  path("s.out"), path("s.err"), path("t.jsonl"));
    ASSERT_EQ(wait_within(serve, 30, &took), 0) << serve.err();
    EXPECT_LT(took, 20);
    EXPECT_EQ(lines_of(testing::slurp(path("w.jsonl"))), expected) << serve.err();

    // Default flags: the jump is refused, logged and counted; the rest is analyzed.
    Process refusing({"serve", "--stdin", "--out", path("w2.jsonl").string()}, path("r.out"),
                     path("r.err"), path("t.jsonl"));
    ASSERT_EQ(wait_within(refusing, 30, &took), 0) << refusing.err();
    EXPECT_LT(took, 20);
    EXPECT_NE(refusing.err().find("refused an event of worker 0 at ts " + std::to_string(last)),
              std::string::npos)
        << refusing.err();
    EXPECT_NE(refusing.err().find("1 refused jumps"), std::string::npos) << refusing.err();
    const auto windows = lines_of(testing::slurp(path("w2.jsonl")));
    ASSERT_EQ(windows.size(), 2u);  // [0 s, 1 s) and [1 s, 2 s], the last event at its end
    EXPECT_NE(windows[0].find("\"time_jumps\":1"), std::string::npos) << windows[0];
  }
}

// Issue 25 item 1: a shutdown that cannot finish (here: the reader of --out's FIFO stopped
// reading) ends at the second SIGTERM.
TEST_F(ServeCli, SecondSignalForcesExit) {
  const fs::path trace = simulated("wordcount-skew-30", 100'000'000, 3, "trace.jsonl");
  const fs::path fifo = path("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // never reads
  ASSERT_GE(reader, 0);
  Process serve({"serve", "--stdin", "--tcp", "127.0.0.1:0", "--window", "10us", "--start-grace",
                 "0", "--out", fifo.string(), "--port-file", path("ports").string()},
                path("s.out"), path("s.err"), trace);
  ASSERT_GT(testing::wait_for_port(path("ports"), "tcp"), 0) << serve.err();
  // The pipe fills up (then serve's writes block: its 10,000 windows are far more than the
  // pipe holds), then the first signal is handled before the second is sent (two pending
  // at once would be one).
  const int capacity = ::fcntl(reader, F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  EXPECT_TRUE(testing::wait_until([&] {
    int queued = 0;
    return ::ioctl(reader, FIONREAD, &queued) == 0 && queued >= capacity / 2;
  })) << serve.err();
  serve.signal(SIGTERM);
  EXPECT_TRUE(testing::wait_until([&] { return !testing::signal_pending(serve.pid(), SIGTERM); }));
  serve.signal(SIGTERM);
  double took = 0;
  EXPECT_EQ(wait_within(serve, 20, &took), 128 + SIGTERM) << serve.err();
  EXPECT_TRUE(serve.exited()) << "ended by its handler, not killed";
  EXPECT_NE(serve.err().find("second signal"), std::string::npos) << serve.err();
  ::close(reader);
}

// Issue 25 item 6: the reader of --out goes away: serve reports it and exits non-zero
// instead of analyzing into nothing.
TEST_F(ServeCli, LostOutputReaderFailsTheServer) {
  const fs::path fifo = path("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  Process serve(
      {"serve", "--tcp", "127.0.0.1:0", "--window", "1ms", "--lateness", "0ns", "--start-grace",
       "0", "--out", fifo.string(), "--port-file", path("ports").string()},
      path("s.out"), path("s.err"));
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  ASSERT_GT(tcp, 0) << serve.err();
  ::close(reader);  // the consumer is gone before the first window
  std::string text;
  for (int64_t t = 0; t < 20'000'000; t += 500'000)
    text += event_line(0, t, (t / 500'000) % 2 ? "end" : "start");
  send_bytes(tcp, text);
  const int code = wait_within(serve, 20);
  EXPECT_EQ(code, 1) << serve.err();
  EXPECT_NE(serve.err().find("cannot write the windows to " + fifo.string() + ": Broken pipe"),
            std::string::npos)
      << serve.err();
}

double metric_value(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  ADD_FAILURE() << "no metric " << name << " in\n" << text;
  return -1;
}

// Issue 25 item 7: a producer that connects after another has sent everything loses its
// events as late; serve warns on stderr and in /metrics. With the default start grace,
// producers connecting together lose nothing.
TEST_F(ServeCli, LateProducersAreWarnedAbout) {
  auto worker_text = [](uint32_t w) {
    std::string text;
    for (int64_t t = 0; t <= 10'000'000; t += 100'000)
      text += event_line(w, t, (t / 100'000) % 2 ? "end" : "start");
    return text;
  };
  for (bool grace : {false, true}) {
    SCOPED_TRACE(grace ? "default grace" : "no grace");
    fs::remove(path("ports"));
    std::vector<std::string> args = {
        "serve",    "--tcp",       "127.0.0.1:0",          "--http", "127.0.0.1:0",
        "--window", "1ms",         "--lateness",           "0ns",    "--idle-timeout",
        "60s",      "--port-file", path("ports").string(), "--out",  path("w.jsonl").string()};
    if (!grace) args.insert(args.end(), {"--start-grace", "0"});
    auto server = start(grace ? "grace" : "nograce", args);
    const int tcp = testing::wait_for_port(path("ports"), "tcp");
    const int http = testing::wait_for_port(path("ports"), "http");
    ASSERT_GT(http, 0) << server->err();
    send_bytes(tcp, worker_text(0));
    if (!grace) {  // wait until worker 0's windows have closed
      ASSERT_TRUE(testing::wait_until([&] {
        return metric(http_get(http, "/metrics"), "snailtrail_windows_emitted_total") > 0;
      }));
    }
    send_bytes(tcp, worker_text(1));
    // Wait for the outcome: without grace, the late events counted and warned about; with
    // it, both workers' windows closing (only once worker 1's events are taken: none late).
    std::string m;
    testing::wait_until([&] {
      m = http_get(http, "/metrics");
      if (grace) return metric(m, "snailtrail_windows_emitted_total") > 0;
      return metric(m, "snailtrail_late_events_warning") == 1 &&
             metric(m, "snailtrail_late_events_total") > 50 &&
             metric_value(m, "snailtrail_late_event_share") > 0.25;
    });
    server->signal(SIGTERM);
    ASSERT_EQ(wait_within(*server, 30), 0) << server->err();
    if (grace) {
      EXPECT_EQ(metric(m, "snailtrail_late_events_total"), 0u) << m;
      EXPECT_EQ(metric(m, "snailtrail_late_events_warning"), 0u) << m;
      EXPECT_EQ(server->err().find("warning"), std::string::npos) << server->err();
    } else {
      EXPECT_GT(metric(m, "snailtrail_late_events_total"), 50u) << m;
      EXPECT_GT(metric_value(m, "snailtrail_late_event_share"), 0.25) << m;
      EXPECT_EQ(metric(m, "snailtrail_late_events_warning"), 1u) << m;
      EXPECT_NE(server->err().find("were dropped (late): producers that start after others "
                                   "need --wait-for N"),
                std::string::npos)
          << server->err();
    }
  }
}

// Issue 25 item 8: --help shows no default address for --http (there is no HTTP server
// unless it is given), and without it none listens.
TEST_F(ServeCli, HttpHelpMatchesBehaviour) {
  auto help = start("help", {"serve", "--help"});
  ASSERT_EQ(help->wait(), 0);
  const std::string text = help->out();
  EXPECT_EQ(text.find("TEXT=127.0.0.1:7879"), std::string::npos) << text;
  EXPECT_EQ(text.find("TEXT=127.0.0.1:7878"), std::string::npos) << text;
  EXPECT_NE(text.find("no HTTP server without this option"), std::string::npos) << text;
  std::ofstream(path("t.jsonl")) << event_line(0, 0, "start") << event_line(0, 5, "end");
  Process serve({"serve", "--stdin", "--port-file", path("ports").string()}, path("s.out"),
                path("s.err"), path("t.jsonl"));
  ASSERT_EQ(wait_within(serve, 30), 0) << serve.err();
  EXPECT_EQ(testing::slurp(path("ports")).find("http="), std::string::npos);
  EXPECT_EQ(serve.err().find("HTTP API"), std::string::npos) << serve.err();
}

TEST_F(ServeCli, UsageErrors) {
  auto no_source = start("a", {"serve"});
  EXPECT_EQ(no_source->wait(), 2);
  EXPECT_NE(no_source->err().find("no source"), std::string::npos) << no_source->err();
  auto bad_port = start("b", {"serve", "--tcp", "127.0.0.1:99999"});
  EXPECT_EQ(bad_port->wait(), 2);
  auto bad_speed = start("c", {"send", "x.jsonl", "--speed", "fast"});
  EXPECT_EQ(bad_speed->wait(), 2);
  EXPECT_NE(bad_speed->err().find("--speed"), std::string::npos) << bad_speed->err();
}

}  // namespace
}  // namespace snailtrail::test_serve
