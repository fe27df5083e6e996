// Timeline construction and gap filling (docs/PAG.md), message matching and the
// diagnostics counted for recoverable input problems.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "pag/correlator_table.hpp"
#include "pag/open_halves.hpp"
#include "sanitized.hpp"
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

// The live message matching's flat table (pag/correlator_table.hpp) against a reference:
// the node-based map with a vector of halves per key that StreamingPag used before, on
// random sequences of halves with few keys (duplicates, receives before sends, halves
// that expire unmatched, keys retired and used again).
namespace snailtrail::test_correlator_table {
namespace {

using Half = CorrelatorTable::Half;
using Key = CorrelatorTable::Key;

// The matching as StreamingPag did it with std::unordered_map<Key, KeyState>.
class Reference {
 public:
  bool add(const Key& key, bool is_send, const Half& half, std::vector<IssueAt>& issues,
           Half& partner) {
    State& k = keys_[std::make_tuple(key.sender, key.receiver, key.correlator)];
    k.last_ts = std::max(k.last_ts, half.ts);
    auto count_duplicates = [&](uint32_t n, int64_t& first_ts) {
      if (n == 1) first_ts = half.ts;
      if (n == 2) issues.push_back({first_ts, Issue::duplicate_correlator});
      if (n >= 2) issues.push_back({half.ts, Issue::duplicate_correlator});
    };
    if (is_send) {
      count_duplicates(++k.n_send, k.first_send_ts);
      if (k.n_send == 1 && k.n_recv >= 2)
        for (int64_t t : k.recvs_before_send) issues.push_back({t, Issue::duplicate_correlator});
      k.recvs_before_send.clear();
      if (!k.recvs.empty()) {
        partner = k.recvs.front();
        k.recvs.erase(k.recvs.begin());
        return true;
      }
      k.sends.push_back(half);
    } else {
      if (k.n_send == 0) {
        if (++k.n_recv == 1) k.first_recv_ts = half.ts;
        k.recvs_before_send.push_back(half.ts);
      } else {
        count_duplicates(++k.n_recv, k.first_recv_ts);
      }
      if (!k.sends.empty()) {
        partner = k.sends.front();
        k.sends.erase(k.sends.begin());
        return true;
      }
      k.recvs.push_back(half);
    }
    return false;
  }
  void expire(int64_t end, bool closed_end, std::vector<IssueAt>& issues) {
    auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
    for (auto& [key, k] : keys_) {
      while (!k.sends.empty() && before_end(k.sends.front().ts)) {
        issues.push_back({k.sends.front().ts, Issue::unmatched_send});
        k.sends.erase(k.sends.begin());
      }
      while (!k.recvs.empty() && before_end(k.recvs.front().ts)) {
        issues.push_back({k.recvs.front().ts, Issue::unmatched_recv});
        k.recvs.erase(k.recvs.begin());
      }
    }
  }
  void retire(int64_t horizon) {
    std::erase_if(keys_, [&](const auto& kv) {
      return kv.second.sends.empty() && kv.second.recvs.empty() && kv.second.last_ts < horizon;
    });
  }
  size_t keys() const { return keys_.size(); }
  size_t open_halves() const {
    size_t n = 0;
    for (const auto& [key, k] : keys_) n += k.sends.size() + k.recvs.size();
    return n;
  }

 private:
  struct State {
    std::vector<Half> sends, recvs;
    uint32_t n_send = 0, n_recv = 0;
    int64_t last_ts = INT64_MIN;
    int64_t first_send_ts = 0, first_recv_ts = 0;
    std::vector<int64_t> recvs_before_send;
  };
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, State> keys_;
};

std::vector<std::pair<int64_t, int>> sorted(const std::vector<IssueAt>& issues) {
  std::vector<std::pair<int64_t, int>> out;
  for (const IssueAt& i : issues) out.emplace_back(i.ts, static_cast<int>(i.issue));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CorrelatorTable, MatchesTheReferenceOnRandomHalves) {
  const int traces = testing::random_inputs(300, 60);
  for (int seed = 0; seed < traces; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    CorrelatorTable table;
    Reference ref;
    // Few workers and correlators: many keys are used more than once.
    const uint32_t workers = 1 + static_cast<uint32_t>(rng() % 3);
    const int64_t correlators = 1 + static_cast<int64_t>(rng() % (seed % 2 ? 8 : 400));
    int64_t horizon = 0;
    size_t pairs = 0;
    for (int step = 0; step < 600; ++step) {
      const uint64_t r = rng() % 100;
      std::vector<IssueAt> got, want;
      if (r < 4) {  // a window cut: what is before its end expires, then retires
        const int64_t end = horizon + static_cast<int64_t>(rng() % 30);
        const bool closed = rng() % 4 == 0;
        table.expire(end, closed, got);
        ref.expire(end, closed, want);
        if (!closed) {
          table.retire(end);
          ref.retire(end);
          horizon = end;
        }
      } else {
        const Key key{static_cast<uint32_t>(rng() % workers),
                      static_cast<uint32_t>(rng() % workers),
                      static_cast<int64_t>(rng() % static_cast<uint64_t>(correlators))};
        const bool is_send = rng() % 2 == 0;
        const Half half{horizon + static_cast<int64_t>(rng() % 40), static_cast<uint32_t>(step),
                        static_cast<uint64_t>(step) * 7, static_cast<ActivityType>(rng() % 3)};
        Half p1{}, p2{};
        const bool m1 = table.add(key, is_send, half, got, p1);
        const bool m2 = ref.add(key, is_send, half, want, p2);
        ASSERT_EQ(m1, m2) << "seed " << seed << " step " << step;
        if (m1) {
          ++pairs;
          ASSERT_EQ(std::tie(p1.ts, p1.worker, p1.node, p1.type),
                    std::tie(p2.ts, p2.worker, p2.node, p2.type))
              << "seed " << seed << " step " << step;
        }
      }
      ASSERT_EQ(sorted(got), sorted(want)) << "seed " << seed << " step " << step;
      ASSERT_EQ(table.keys(), ref.keys()) << "seed " << seed << " step " << step;
      ASSERT_EQ(table.open_halves(), ref.open_halves()) << "seed " << seed << " step " << step;
    }
    EXPECT_GT(pairs, 0u) << "seed " << seed;
  }
}

// A hand-checked case: a receive twice before its send, a send matched, a correlator
// used again, a half expired unmatched, and a key gone after the horizon passed it.
TEST(CorrelatorTable, DuplicatesUnmatchedAndRetiredKeysByHand) {
  CorrelatorTable t;
  std::vector<IssueAt> issues;
  Half p{};
  const Key k{1, 2, 7};
  EXPECT_FALSE(t.add(k, false, {10, 1, 0, ActivityType::data_message}, issues, p));
  EXPECT_FALSE(t.add(k, false, {12, 1, 1, ActivityType::data_message}, issues, p));
  EXPECT_TRUE(issues.empty());  // repeated receives count only once the key has a send
  ASSERT_TRUE(t.add(k, true, {5, 0, 3, ActivityType::data_message}, issues, p));
  EXPECT_EQ(p.ts, 10);  // the first receive
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{10, 3}, {12, 3}}));
  issues.clear();
  ASSERT_TRUE(t.add(k, true, {6, 0, 4, ActivityType::data_message}, issues, p));
  EXPECT_EQ(p.ts, 12);
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{5, 3}, {6, 3}}));
  issues.clear();
  EXPECT_FALSE(t.add({2, 1, 7}, true, {20, 1, 2, ActivityType::data_message}, issues, p));
  EXPECT_EQ(t.open_halves(), 1u);
  t.expire(20, false, issues);
  EXPECT_TRUE(issues.empty());  // 20 is not before 20
  t.expire(20, true, issues);
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{20, 0}}));
  EXPECT_EQ(t.keys(), 2u);
  t.retire(13);  // key k's last half was at 12
  EXPECT_EQ(t.keys(), 1u);
  issues.clear();
  EXPECT_FALSE(t.add(k, true, {30, 0, 9, ActivityType::data_message}, issues, p));
  EXPECT_TRUE(issues.empty());  // a fresh key: no duplicate
}

// OpenHalves (the waiting halves with unique correlators) against a std::map: random
// sends and receives over few keys, so that probe runs collide, wrap and shift back on
// deletion; every match, every removal and the size equal the map's.
TEST(OpenHalves, MatchesAMapOnRandomHalves) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < testing::random_inputs(200, 40); ++round) {
    OpenHalves t;
    std::map<std::tuple<uint32_t, uint32_t, int64_t, bool>, Half> ref;
    const uint32_t workers = 1 + static_cast<uint32_t>(rng() % 4);
    const int64_t correlators = 1 + static_cast<int64_t>(rng() % 60);
    for (int step = 0; step < 500; ++step) {
      const Key k{static_cast<uint32_t>(rng() % workers), static_cast<uint32_t>(rng() % workers),
                  static_cast<int64_t>(rng() % correlators)};
      const bool is_send = rng() % 2;
      const auto mine = std::make_tuple(k.sender, k.receiver, k.correlator, is_send);
      const auto other = std::make_tuple(k.sender, k.receiver, k.correlator, !is_send);
      if (ref.count(mine)) continue;  // unique per key and side, as the table assumes
      const Half h{step, static_cast<uint32_t>(rng() % 8), static_cast<uint64_t>(step),
                   ActivityType::data_message};
      Half p{};
      const bool matched = t.match_or_wait(k, is_send, h, p);
      auto it = ref.find(other);
      ASSERT_EQ(matched, it != ref.end()) << "round " << round << " step " << step;
      if (matched) {
        EXPECT_EQ(p.ts, it->second.ts);
        EXPECT_EQ(p.node, it->second.node);
        EXPECT_EQ(p.worker, it->second.worker);
        ref.erase(it);
      } else {
        ref.emplace(mine, h);
      }
      ASSERT_EQ(t.size(), ref.size());
      if (step % 97 == 96) {  // expire the older half of what waits
        const int64_t cut = step - 40;
        std::vector<std::pair<int64_t, bool>> gone, want;
        t.remove_if([&](const Half& x, bool s) {
          if (x.ts >= cut) return false;
          gone.emplace_back(x.ts, s);
          return true;
        });
        for (auto r = ref.begin(); r != ref.end();)
          if (r->second.ts < cut) {
            want.emplace_back(r->second.ts, std::get<3>(r->first));
            r = ref.erase(r);
          } else {
            ++r;
          }
        std::sort(gone.begin(), gone.end());
        std::sort(want.begin(), want.end());
        ASSERT_EQ(gone, want);
        ASSERT_EQ(t.size(), ref.size());
      }
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_correlator_table
