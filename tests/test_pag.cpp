// Timeline construction and gap filling (docs/PAG.md), message matching and the
// diagnostics counted for recoverable input problems.
#include <gtest/gtest.h>

#include <random>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_pag {
namespace {

using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;
constexpr auto S = ActivityType::serialization;
constexpr auto DM = ActivityType::data_message;
constexpr auto U8 = [](ActivityType t) { return static_cast<uint8_t>(t); };

// Nodes and edge types of worker `w` as (ts, type-of-edge-leaving) pairs.
std::vector<std::pair<int64_t, int>> timeline(const Pag& pag, uint32_t w) {
  std::vector<std::pair<int64_t, int>> out;
  for (uint32_t v = pag.worker_begin[w]; v < pag.worker_begin[w + 1]; ++v)
    out.emplace_back(pag.node_ts[v], pag.edge_type[v] == kNoEdge ? -1 : pag.edge_type[v]);
  return out;
}
std::pair<int64_t, int> N(int64_t ts, ActivityType t) {
  return {ts, U8(t)};
}
std::pair<int64_t, int> Last(int64_t ts) {
  return {ts, -1};
}

Pag build(TraceBuilder& b, int64_t h) {
  return build_pag(b.build(), PagOptions{h});
}

size_t issues(const Pag& pag, Issue which) {
  size_t n = 0;
  for (const IssueAt& i : pag.issues) n += i.issue == which;
  return n;
}

TEST(GapFilling, ShortGapBetweenActivitiesExtendsTheEarlierOne) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20);
  EXPECT_EQ(timeline(build(b, 5), 0), (std::vector{N(0, P), N(12, S), Last(20)}));
}

TEST(GapFilling, LongGapBetweenActivitiesIsUnknown) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20);
  EXPECT_EQ(timeline(build(b, 2), 0),
            (std::vector{N(0, P), N(10, ActivityType::unknown), N(12, S), Last(20)}));
}

TEST(GapFilling, ShortGapBeforeReceiveMovesTheLocalSide) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20).activity(1, P, 0, 20);
  b.message(1, 5, 0, 12, 1);
  Pag pag = build(b, 5);
  EXPECT_EQ(timeline(pag, 0), (std::vector{N(0, P), N(12, S), Last(20)}));
  ASSERT_EQ(pag.messages.size(), 1u);
  EXPECT_EQ(pag.messages[0].dst_ts, 12);  // message nodes never move
}

TEST(GapFilling, LongGapBeforeReceiveIsWaiting) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20).activity(1, P, 0, 20);
  b.message(1, 5, 0, 12, 1);
  EXPECT_EQ(timeline(build(b, 2), 0),
            (std::vector{N(0, P), N(10, ActivityType::waiting), N(12, S), Last(20)}));
}

TEST(GapFilling, ShortGapAfterSendMovesTheNextStartBack) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20).activity(1, P, 0, 30);
  b.message(0, 10, 1, 15, 1);
  EXPECT_EQ(timeline(build(b, 5), 0), (std::vector{N(0, P), N(10, S), Last(20)}));
}

TEST(GapFilling, LongGapAfterSendIsUnknown) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(0, S, 12, 20).activity(1, P, 0, 30);
  b.message(0, 10, 1, 15, 1);
  EXPECT_EQ(timeline(build(b, 1), 0),
            (std::vector{N(0, P), N(10, ActivityType::unknown), N(12, S), Last(20)}));
}

TEST(GapFilling, BetweenMessagesThresholdDoesNotApply) {
  // send -> recv is waiting, recv -> recv and send -> send are unknown, however short.
  TraceBuilder b;
  b.activity(1, P, 0, 40);
  b.message(0, 10, 1, 12, 1);  // worker 0: send@10
  b.message(1, 13, 0, 14, 2);  // worker 0: recv@14  (send -> recv: waiting)
  b.message(1, 14, 0, 15, 3);  // worker 0: recv@15  (recv -> recv: unknown)
  b.message(0, 16, 1, 17, 4);  // worker 0: send@16  (recv -> send: unknown)
  b.message(0, 17, 1, 18, 5);  // worker 0: send@17  (send -> send: unknown)
  EXPECT_EQ(timeline(build(b, 1000), 0),
            (std::vector{N(10, ActivityType::waiting), N(14, ActivityType::unknown),
                         N(15, ActivityType::unknown), N(16, ActivityType::unknown), Last(17)}));
}

TEST(GapFilling, EndWithoutStartFillsTheGapAndIsCounted) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).event(0, 15, S, EventKind::end);
  Pag pag = build(b, 1);
  EXPECT_EQ(timeline(pag, 0), (std::vector{N(0, P), N(10, S), Last(15)}));
  EXPECT_EQ(issues(pag, Issue::end_without_start), 1u);
}

TEST(GapFilling, OverlappingStartClosesTheOpenActivity) {
  TraceBuilder b;
  b.event(0, 0, P, EventKind::start)
      .event(0, 5, S, EventKind::start)
      .event(0, 10, S, EventKind::end);
  Pag pag = build(b, 1);
  EXPECT_EQ(timeline(pag, 0), (std::vector{N(0, P), N(5, S), Last(10)}));
  EXPECT_EQ(issues(pag, Issue::overlapping_activity), 1u);
}

TEST(GapFilling, MismatchedEndAndUnterminatedActivityAreCounted) {
  TraceBuilder b;
  b.event(0, 0, P, EventKind::start).event(0, 5, S, EventKind::end);
  b.event(0, 6, P, EventKind::start).event(0, 9, ActivityType::io, EventKind::start);
  Pag pag = build(b, 0);
  EXPECT_EQ(issues(pag, Issue::mismatched_end), 1u);
  EXPECT_EQ(issues(pag, Issue::overlapping_activity), 1u);
  EXPECT_EQ(issues(pag, Issue::unterminated_activity), 1u);
}

TEST(GapFilling, EventsOfOneNodeInAnyOrder) {
  // At t=10: end P, zero-duration io, start S, send. Every order gives one timeline.
  std::vector<Event> node;
  {
    TraceBuilder b;
    b.event(0, 10, P, EventKind::end)
        .event(0, 10, ActivityType::io, EventKind::start)
        .event(0, 10, ActivityType::io, EventKind::end)
        .event(0, 10, S, EventKind::start)
        .message(0, 10, 1, 12, 9);
    for (const Event& e : b.trace.events)
      if (e.worker == 0) node.push_back(e);
  }
  std::sort(node.begin(), node.end(), [](const Event& a, const Event& b) {
    return std::tie(a.kind, a.activity) < std::tie(b.kind, b.activity);
  });
  std::vector<std::pair<int64_t, int>> first;
  int orders = 0;
  do {
    Trace t;
    Event s{};
    s.worker = 0;
    s.activity = P;
    s.kind = EventKind::start;
    t.events.push_back(s);
    for (const Event& e : node) t.events.push_back(e);
    Event e{};
    e.ts = 20;
    e.worker = 0;
    e.activity = S;
    e.kind = EventKind::end;
    t.events.push_back(e);
    Event r{};
    r.ts = 12;
    r.worker = 1;
    r.remote = 0;
    r.correlator = 9;
    r.activity = DM;
    r.kind = EventKind::recv;
    r.flags = kHasCorrelator | kHasRemote;
    t.events.push_back(r);
    Pag pag = build_pag(t, PagOptions{1});
    auto tl = timeline(pag, 0);
    if (orders++ == 0) first = tl;
    ASSERT_EQ(tl, first);
    ASSERT_EQ(pag.messages.size(), 1u);
    ASSERT_TRUE(pag.issues.empty());
  } while (std::next_permutation(node.begin(), node.end(), [](const Event& a, const Event& b) {
    return std::tie(a.kind, a.activity) < std::tie(b.kind, b.activity);
  }));
  EXPECT_EQ(orders, 120);
  EXPECT_EQ(first, (std::vector{N(0, P), N(10, S), Last(20)}));
}

TEST(Messages, MatchingAndItsDiagnostics) {
  TraceBuilder b;
  b.activity(0, P, 0, 100).activity(1, P, 0, 100);
  b.message(0, 10, 1, 20, 1);                           // fine
  b.message(0, 30, 1, 25, 2);                           // received before sent
  b.event(0, 40, DM, EventKind::send);                  // no correlator
  b.message(0, 50, 1, 60, 3).message(0, 55, 1, 70, 3);  // duplicate correlator: both paired
  Trace t = b.build();
  Event lone{};
  lone.ts = 80;
  lone.worker = 0;
  lone.remote = 1;
  lone.correlator = 99;
  lone.activity = DM;
  lone.kind = EventKind::send;
  lone.flags = kHasCorrelator | kHasRemote;
  t.events.push_back(lone);  // unmatched send
  Event orphan = lone;
  orphan.worker = 1;
  orphan.remote = 0;
  orphan.correlator = 98;
  orphan.kind = EventKind::recv;
  orphan.ts = 90;
  t.events.push_back(orphan);  // unmatched receive
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& x, const Event& y) {
    return x.worker != y.worker ? x.worker < y.worker : x.ts < y.ts;
  });
  Pag pag = build_pag(t);
  EXPECT_EQ(pag.messages.size(), 3u);
  EXPECT_EQ(issues(pag, Issue::negative_duration_message), 1u);
  EXPECT_EQ(issues(pag, Issue::message_without_correlator), 1u);
  EXPECT_EQ(issues(pag, Issue::duplicate_correlator), 4u);
  EXPECT_EQ(issues(pag, Issue::unmatched_send), 1u);
  EXPECT_EQ(issues(pag, Issue::unmatched_recv), 1u);

  // The counts land in the windows where they happened.
  AnalysisOptions opt;
  opt.windows.width_ns = 50;
  std::vector<WindowSummary> ws;
  analyze_pag(pag, opt, [&](const WindowView& v) { ws.push_back(v.summary); });
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].diagnostics.issues[static_cast<int>(Issue::negative_duration_message)], 1u);
  EXPECT_EQ(ws[1].diagnostics.issues[static_cast<int>(Issue::unmatched_send)], 1u);
  EXPECT_EQ(ws[1].diagnostics.issues[static_cast<int>(Issue::unmatched_recv)], 1u);
}

TEST(Order, TimestampsGoingBackwardsNameTheEvent) {
  Trace t;
  t.source = "t.jsonl";
  Event a{};
  a.ts = 10;
  a.activity = P;
  Event c = a;
  c.ts = 5;
  c.kind = EventKind::end;
  t.events = {a, c};
  t.lines = {3, 4};
  try {
    build_pag(t);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:4"), std::string::npos) << e.what();
  }
}

// Worker ids may be anything (thread ids, hashes): large and small ids mixed give the
// same PAG as dense ids, workers in ascending id order.
TEST(Workers, SparseLargeIdsBehaveLikeDenseOnes) {
  const std::vector<uint32_t> ids = {4000000000u, 7u, 1u << 22, 12u, 3000000000u};
  auto make = [&](const std::vector<uint32_t>& id) {
    TraceBuilder b;
    for (size_t w = 0; w < id.size(); ++w)
      b.activity(id[w], P, 0, 10 + static_cast<int64_t>(w))
          .activity(id[w], S, 10 + static_cast<int64_t>(w), 40);
    for (size_t w = 0; w + 1 < id.size(); ++w)
      b.message(id[w], 10 + static_cast<int64_t>(w), id[w + 1], 20, static_cast<int64_t>(w));
    Trace t = b.build();
    // Interleave the workers' events by time, as a collector would.
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const Event& x, const Event& y) { return x.ts < y.ts; });
    return t;
  };
  // Dense ids in the same relative order as the sparse ones.
  std::vector<uint32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> dense(ids.size());
  for (size_t w = 0; w < ids.size(); ++w)
    dense[w] = static_cast<uint32_t>(std::lower_bound(sorted.begin(), sorted.end(), ids[w]) -
                                     sorted.begin());
  Pag a = build_pag(make(ids)), b = build_pag(make(dense));
  EXPECT_EQ(a.worker_ids, sorted);
  EXPECT_EQ(a.worker_begin, b.worker_begin);
  EXPECT_TRUE(std::equal(a.node_ts.begin(), a.node_ts.end(), b.node_ts.begin(), b.node_ts.end()));
  EXPECT_EQ(a.messages.size(), b.messages.size());
}

TEST(Windows, PlanAlignsToWidthAndClipsToRange) {
  TraceBuilder b;
  b.activity(0, P, 1500, 4000);
  Pag pag = build_pag(b.build());
  auto w = plan_windows(pag, WindowSpec{1000, {}, {}});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].start, 1000);
  EXPECT_EQ(w[2].end, 4000);  // a range ending on a border opens no empty window
  EXPECT_TRUE(w[2].closed_end);
  auto f = plan_windows(pag, WindowSpec{1000, 1200, 2500});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].start, 1200);
  EXPECT_EQ(f[1].end, 2500);
  auto whole = plan_windows(pag, WindowSpec{});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].start, 1500);
  EXPECT_EQ(whole[0].end, 4000);
}

// Larger random traces with gaps, waiting and messages: CP sums to 1 in every window
// that has a transient path, and windows cover every event exactly once.
TEST(CpInvariant, SumsToOneOnLargerRandomTraces) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 30; ++round) {
    TraceBuilder b;
    const uint32_t W = 2 + static_cast<uint32_t>(rng() % 10);
    int corr = 0;
    std::vector<int64_t> t(W, 0);
    for (int step = 0; step < 400; ++step) {
      uint32_t w = static_cast<uint32_t>(rng() % W);
      int64_t gap = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 50) : 0;
      int64_t d = static_cast<int64_t>(rng() % 40);
      auto type = static_cast<ActivityType>(rng() % 12);
      b.activity(w, type, t[w] + gap, t[w] + gap + d, static_cast<uint32_t>(rng() % 3));
      t[w] += gap + d;
      if (rng() % 3 == 0) {
        uint32_t to = static_cast<uint32_t>(rng() % W);
        int64_t lat = static_cast<int64_t>(rng() % 30);
        b.message(w, t[w], to, std::max(t[w] + lat, t[to]), corr++);
        t[to] = std::max(t[w] + lat, t[to]);
      }
    }
    Trace trace = b.build();
    Pag pag = build_pag(trace, PagOptions{static_cast<int64_t>(rng() % 20)});
    AnalysisOptions opt;
    opt.windows.width_ns = 50 + static_cast<int64_t>(rng() % 500);
    uint64_t events = 0;
    analyze_pag(pag, opt, [&](const WindowView& v) {
      events += v.summary.events;
      if (!v.cp.has_paths()) return;
      double sum = 0;
      for (double c : v.cp.timeline_cp) sum += c;
      // A merged message edge stands for mult(k) pieces, each with its message_cp.
      for (size_t k = 0; k < v.cp.message_cp.size(); ++k)
        sum += v.cp.message_cp[k] * v.snapshot.mult(k);
      ASSERT_NEAR(sum, 1.0, 1e-9) << "round " << round << " window " << v.summary.index;
      double act = 0;
      for (double a : v.summary.cp.activity) act += a;
      ASSERT_NEAR(act, 1.0, 1e-9);
    });
    EXPECT_EQ(events, trace.events.size());
  }
}

}  // namespace
}  // namespace snailtrail::test_pag
