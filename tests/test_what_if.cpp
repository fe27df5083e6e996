// What-if (cp/what_if.hpp, summary/what_if.hpp): hand-computed PAGs (a chain, a
// fork-join, a straggler whose speed-up saves only the gap to the next path) and random
// small traces against an independent replay of the activity intervals.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "cp/what_if.hpp"
#include "process_util.hpp"
#include "summary/analysis.hpp"
#include "trace_builder.hpp"
#include "what_if_util.hpp"

namespace snailtrail::test_what_if {
namespace {

using testing::analyze_whole;
using testing::CommandResult;
using testing::run_binary;
using testing::slurp;
using testing::TempDirTest;
using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;
constexpr auto Wt = ActivityType::waiting;

double saved(const WindowSummary& s, WhatIfKind kind, uint32_t id, bool peer = false) {
  for (const WhatIf& x : s.what_if)
    if (x.kind == kind && x.id == id && x.peer_median == peer) return x.saved_ns;
  return 0;  // not listed: nothing saved
}

// w0 works 10, its message takes 2, w1 works 8 after waiting for it.
TEST(WhatIf, ChainSavesWhatEachStepLoses) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(1, Wt, 0, 12).activity(1, P, 12, 20).message(0, 10, 1, 12, 1);
  const WindowSummary s = analyze_whole(b.build());
  ASSERT_TRUE(s.has_paths);
  EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 0), 5);    // 10 -> 5
  EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 1), 4);    // 8 -> 4
  EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::activity, 0), 9);  // processing: both
  EXPECT_DOUBLE_EQ(
      saved(s, WhatIfKind::activity, static_cast<uint32_t>(ActivityType::data_message)), 1);
  // Largest saving first.
  ASSERT_FALSE(s.what_if.empty());
  EXPECT_EQ(s.what_if.front().kind, WhatIfKind::activity);
  EXPECT_DOUBLE_EQ(s.what_if.front().saved_ns, 9);
}

// w0 forks to w1 (10 of work) and w2 (5), both join on w3. Speeding up w1 saves only
// until w2's path takes over: 10x faster saves 5, not 9; w2 is off the critical path.
TEST(WhatIf, ForkJoinStragglerSavesOnlyTheGapToTheNextPath) {
  TraceBuilder b;
  b.activity(0, P, 0, 2).activity(0, Wt, 2, 16);
  b.activity(1, Wt, 0, 3).activity(1, P, 3, 13).activity(1, Wt, 13, 16);
  b.activity(2, Wt, 0, 3).activity(2, P, 3, 8).activity(2, Wt, 8, 16);
  b.activity(3, Wt, 0, 14).activity(3, P, 14, 16);
  b.message(0, 2, 1, 3, 1).message(0, 2, 2, 3, 2).message(1, 13, 3, 14, 3).message(2, 8, 3, 9, 4);
  const Trace t = b.build();
  const WindowSummary s2 = analyze_whole(t, 2);
  EXPECT_DOUBLE_EQ(saved(s2, WhatIfKind::worker, 1), 5);  // 10 -> 5: now ties with w2
  EXPECT_DOUBLE_EQ(saved(s2, WhatIfKind::worker, 2), 0);
  EXPECT_DOUBLE_EQ(saved(s2, WhatIfKind::worker, 3), 1);
  const WindowSummary s10 = analyze_whole(t, 10);
  EXPECT_DOUBLE_EQ(saved(s10, WhatIfKind::worker, 1), 5);  // 10 -> 1, but w2 ends at 8
  // No operators: the workers run nothing in common, so none has peers to be as fast as
  // (a peer median needs 3 instances of one operator: test_what_if_segments.cpp).
  for (const WhatIf& x : s2.what_if) EXPECT_FALSE(x.peer_median);
}

// A source paced from outside (its waits end without a message) cannot start earlier:
// speeding up the consumer saves only its own tail.
TEST(WhatIf, ExternalPacingHoldsReleaseTimes) {
  TraceBuilder b;
  b.activity(0, P, 0, 1).activity(0, Wt, 1, 10).activity(0, P, 10, 11).activity(0, Wt, 11, 20);
  b.activity(1, Wt, 0, 2).activity(1, P, 2, 6).activity(1, Wt, 6, 12).activity(1, P, 12, 20);
  b.message(0, 1, 1, 2, 1).message(0, 11, 1, 12, 2);
  // The whole window has an idle interval (no transient path without segments). Before
  // the what-if was measured per segment, the source's second batch held at 10 capped w1
  // to its last batch (8 -> 4: saved 4) and the source to 0.5.
  // Per CP segment ([0, 6] and [10, 20], idle between): each segment's critical time
  // counts, as CP counts it: w1 saves 2 + 4, the source 0.5 + 0.5 (docs/PAG.md §5).
  const WindowSummary g = analyze_whole(b.build(), 2, true);
  EXPECT_DOUBLE_EQ(saved(g, WhatIfKind::worker, 1), 6);
  EXPECT_DOUBLE_EQ(saved(g, WhatIfKind::worker, 0), 1);
}

// A consumer with a backlog: w1 takes m2 at 10 when done with m1, so m2's recorded 8
// is mostly queueing; its transport time is that of the waited-for m1 (1). w1 2x faster
// works off both back to back from 2: ends at 10, saves 8 (with m2 held at its recorded
// duration it would save only 4).
TEST(WhatIf, QueuedReceiveWaitsOnlyForTheTransport) {
  TraceBuilder b;
  b.activity(0, P, 0, 1).activity(0, P, 1, 2);
  b.activity(1, Wt, 0, 2).activity(1, P, 2, 10).activity(1, P, 10, 18);
  b.message(0, 1, 1, 2, 1).message(0, 2, 1, 10, 2);
  const WindowSummary s = analyze_whole(b.build());
  ASSERT_TRUE(s.has_paths);
  EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 1), 8);
}

// A driver schedules task A (sent at 2) and task B (sent at 8) in one scheduling
// activity from 2 to 8; A's result arrives at 5 while it schedules, B's ends its wait at
// 12, then a barrier to 13. The driver 2x faster: A sent at 1, result at 4; B sent at 4,
// done at 7, result at 8; the barrier needs both: 8 to 8.5, saves 4.5. (Held at its
// receive inside the scheduling, A's result would delay B's scheduling: saves only 3.)
TEST(WhatIf, ReceiveInsideAnActivityHoldsTheNextWait) {
  constexpr auto S = ActivityType::scheduling;
  TraceBuilder b;
  b.activity(0, S, 0, 2).activity(0, S, 2, 8).activity(0, Wt, 8, 12);
  b.activity(0, ActivityType::barrier_processing, 12, 13);
  b.activity(1, Wt, 0, 3).activity(1, P, 3, 4);
  b.activity(2, Wt, 0, 9).activity(2, P, 9, 11);
  b.message(0, 2, 1, 3, 1).message(1, 4, 0, 5, 2).message(0, 8, 2, 9, 3).message(2, 11, 0, 12, 4);
  const WindowSummary s = analyze_whole(b.build());
  ASSERT_TRUE(s.has_paths);
  EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 0), 4.5);
}

// --- Random traces against a replay of the intervals ---

struct Seg {
  int64_t s, e;
  ActivityType type;
};
struct Msg {
  uint32_t from, to;
  int64_t send, recv;
};

// The replay: every instant of a worker where something starts, ends, is sent or is
// received moves to new(t) = max(release, new(previous instant) + the scaled time between,
// new(send) + latency of each message it waits for), relaxed to a fixed point over the
// instants in time order. A message received when the worker waited (or before its first
// activity) is waited for at its receive with its own latency; one received between two
// busy activities at its receive with the shortest latency of the waited-for messages
// between the same workers (else of all of them; never more than its own); one received
// inside an activity at the worker's next instant that ends a wait (or nowhere).
// Independent of the PAG, its snapshot and its ordering.
double replay_length(const std::vector<std::vector<Seg>>& segs, const std::vector<Msg>& msgs,
                     uint32_t fast_worker, double factor) {
  int64_t start = INT64_MAX, end = INT64_MIN;
  std::vector<std::vector<int64_t>> instants(segs.size());
  for (size_t w = 0; w < segs.size(); ++w) {
    for (const Seg& s : segs[w]) {
      instants[w].push_back(s.s);
      instants[w].push_back(s.e);
      start = std::min(start, s.s);
      end = std::max(end, s.e);
    }
  }
  for (const Msg& m : msgs) {
    instants[m.from].push_back(m.send);
    instants[m.to].push_back(m.recv);
  }
  for (auto& v : instants) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  auto seg_at = [&](size_t w, int64_t a, int64_t b) -> const Seg* {  // the segment over (a, b)
    for (const Seg& s : segs[w])
      if (s.s <= a && b <= s.e && s.s < s.e) return &s;
    return nullptr;
  };
  std::map<std::pair<size_t, int64_t>, double> now;
  for (size_t w = 0; w < segs.size(); ++w)
    for (int64_t t : instants[w]) now[{w, t}] = 0;
  // Where and with which latency each message is waited for.
  auto before_of = [&](size_t w, int64_t t) -> const Seg* {
    const auto& v = instants[w];
    const size_t i = static_cast<size_t>(std::lower_bound(v.begin(), v.end(), t) - v.begin());
    return i > 0 ? seg_at(w, v[i - 1], t) : nullptr;
  };
  auto inside = [&](size_t w, int64_t t) {
    for (const Seg& s : segs[w])
      if (s.s < t && t < s.e) return true;
    return false;
  };
  std::vector<int> kind(msgs.size());
  std::map<std::pair<uint32_t, uint32_t>, double> pair_min;
  double any_min = -1;
  for (size_t k = 0; k < msgs.size(); ++k) {
    const Msg& m = msgs[k];
    const Seg* b = before_of(m.to, m.recv);
    kind[k] = !b || b->type == Wt ? 0 : inside(m.to, m.recv) ? 2 : 1;
    if (kind[k] != 0) continue;
    const double d = static_cast<double>(m.recv - m.send);
    auto [it, fresh] = pair_min.try_emplace({m.from, m.to}, d);
    if (!fresh) it->second = std::min(it->second, d);
    any_min = any_min < 0 ? d : std::min(any_min, d);
  }
  std::vector<int64_t> at(msgs.size(), INT64_MIN);  // the instant that waits for it
  std::vector<double> latency(msgs.size());
  for (size_t k = 0; k < msgs.size(); ++k) {
    const Msg& m = msgs[k];
    latency[k] = static_cast<double>(m.recv - m.send);
    if (kind[k] == 2) {
      for (int64_t t : instants[m.to]) {
        const Seg* b = t > m.recv ? before_of(m.to, t) : nullptr;
        if (b && b->type == Wt) {
          at[k] = t;
          break;
        }
      }
      continue;
    }
    at[k] = m.recv;
    if (kind[k] == 1) {
      const auto it = pair_min.find({m.from, m.to});
      if (it != pair_min.end())
        latency[k] = std::min(latency[k], it->second);
      else if (any_min >= 0)
        latency[k] = std::min(latency[k], any_min);
    }
  }
  for (int round = 0; round < 1000; ++round) {
    bool changed = false;
    for (size_t w = 0; w < segs.size(); ++w) {
      for (size_t i = 0; i < instants[w].size(); ++i) {
        const int64_t t = instants[w][i];
        bool received = false;
        double d = 0;
        for (size_t k = 0; k < msgs.size(); ++k) {
          const Msg& m = msgs[k];
          if (m.to == w && m.recv == t) received = true;
          if (m.to == w && at[k] == t) d = std::max(d, now[{m.from, m.send}] + latency[k]);
        }
        const Seg* before = i > 0 ? seg_at(w, instants[w][i - 1], t) : nullptr;
        if (before) {
          double dt = before->type == Wt ? 0 : static_cast<double>(t - instants[w][i - 1]);
          if (w == fast_worker && before->type != Wt && before->type != ActivityType::unknown)
            dt /= factor;
          d = std::max(d, now[{w, instants[w][i - 1]}] + dt);
        }
        // Something starts at t: a segment with a duration, or a message.
        bool starts = false;
        for (const Seg& s : segs[w]) starts = starts || (s.s == t && s.e > s.s);
        for (const Msg& m : msgs) starts = starts || (m.from == w && m.send == t);
        if (starts && !received && (!before || before->type == Wt))
          d = std::max(d, static_cast<double>(t - start));
        if (d != now[{w, t}]) {
          now[{w, t}] = d;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  double length = 0;
  for (const auto& [k, d] : now) length = std::max(length, d);
  (void)end;
  return length;
}

TEST(WhatIf, RandomTracesMatchTheReplay) {
  std::mt19937_64 rng(20261124);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr ActivityType kLocal[] = {P, ActivityType::serialization, ActivityType::unknown, P};
  int checked = 0;
  for (int iter = 0; iter < 3000 && checked < 400; ++iter) {
    const int workers = static_cast<int>(uni(2, 5));
    std::vector<std::vector<Seg>> segs(workers);
    for (int w = 0; w < workers; ++w) {
      int64_t t = uni(0, 3);
      const int n = static_cast<int>(uni(1, 6));
      for (int i = 0; i < n; ++i) {
        const int64_t d = uni(1, 6);
        segs[w].push_back({t, t + d, kLocal[uni(0, 3)]});
        t += d;
      }
    }
    std::vector<Msg> msgs;
    const int n_msgs = static_cast<int>(uni(0, 6));
    for (int k = 0; k < n_msgs; ++k) {
      const auto a = static_cast<uint32_t>(uni(0, workers - 1));
      const auto c = static_cast<uint32_t>(uni(0, workers - 1));
      if (a == c) continue;
      const int64_t send = uni(segs[a].front().s, segs[a].back().e);
      const int64_t lo = std::max(send + 1, segs[c].front().s);
      if (lo > segs[c].back().e) continue;
      msgs.push_back({a, c, send, uni(lo, std::min(segs[c].back().e, lo + 5))});
    }
    // Waits end at receives (the model's waits), chosen at random.
    for (const Msg& m : msgs)
      for (Seg& s : segs[m.to])
        if (s.e == m.recv && uni(0, 1)) s.type = Wt;
    TraceBuilder b;
    for (int w = 0; w < workers; ++w)
      for (const Seg& s : segs[w]) b.activity(static_cast<uint32_t>(w), s.type, s.s, s.e);
    for (size_t k = 0; k < msgs.size(); ++k)
      b.message(msgs[k].from, msgs[k].send, msgs[k].to, msgs[k].recv, static_cast<int64_t>(k));
    const Trace trace = b.build();
    Pag pag = build_pag(trace);
    AnalysisOptions opt;
    opt.segments = false;  // the plain snapshot of the whole trace
    bool seen = false;
    analyze_pag(pag, opt, [&](const WindowView& v) {
      if (seen || v.snapshot.node_count() == 0) return;
      seen = true;
      LongestPath lp;
      lp.prepare(v.snapshot, pag);
      // No speed-up: every node where something starts keeps its time.
      ASSERT_LE(lp.base_length(), static_cast<double>(lp.span()));
      ASSERT_DOUBLE_EQ(replay_length(segs, msgs, UINT32_MAX, 1), lp.base_length());
      for (int w = 0; w < workers; ++w) {
        std::vector<float> div(v.snapshot.node_count(), 1.0f);
        for (uint32_t u = 0; u < v.snapshot.node_count(); ++u)
          if (v.snapshot.has_timeline_edge(u) && v.snapshot.worker[u] == static_cast<uint32_t>(w) &&
              v.snapshot.type[u] != static_cast<uint8_t>(Wt) &&
              v.snapshot.type[u] != static_cast<uint8_t>(ActivityType::unknown))
            div[u] = 3;
        const double ours = lp.length(div, {});
        const double want = replay_length(segs, msgs, static_cast<uint32_t>(pag.worker_ids[w]), 3);
        ASSERT_NEAR(ours, want, 1e-6) << "iteration " << iter << ", worker " << w;
      }
    });
    if (seen) ++checked;
  }
  EXPECT_GE(checked, 400);
}

// Segmented windows (w1 starts late with no message: a segment border at 3). Whole
// window: w0 2x faster ends at 5, but w1, held at its start 3, still works until 8: saves
// 2. Per segment: [0, 3] 3 -> 1.5 and [3, 10] 7 -> max(3.5, w1's 5): saves 3.5. w1 2x
// faster saves nothing either way (w0 holds both segments).
TEST(WhatIf, PerSegmentAndWholeWindow) {
  TraceBuilder b;
  b.activity(0, P, 0, 10).activity(1, P, 3, 8);
  const Trace t = b.build();
  for (bool segments : {true, false}) {
    const WindowSummary s = analyze_whole(t, 2, segments);
    ASSERT_TRUE(s.has_paths) << segments;
    EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 0), segments ? 3.5 : 2) << segments;
    EXPECT_DOUBLE_EQ(saved(s, WhatIfKind::worker, 1), 0) << segments;
  }
}

// The command: every JSONL window carries "what_if"; on the simulator's skewed wordcount
// the worker whose speed-up saves most is the planted hot worker, and the table has its
// section.
class WhatIfCli : public TempDirTest {
 protected:
  WhatIfCli() : TempDirTest("what-if") {}
};

TEST_F(WhatIfCli, NamesThePlantedStragglerInJsonlAndTable) {
  const std::string trace = path("skew.snail").string(), truth = path("truth.json").string();
  const CommandResult sim = run_binary("simulate " + std::string(SNAILTRAIL_SOURCE_DIR) +
                                       "/examples/wordcount-skew-50.toml -d 3s --seed 3 -q -o " +
                                       trace + " --truth " + truth);
  ASSERT_EQ(sim.code, 0) << sim.out;
  ASSERT_NE(slurp(truth).find("\"hot_worker\": \"count-0\""), std::string::npos) << slurp(truth);
  const CommandResult j = run_binary("analyze " + trace + " --what-if -f jsonl --no-progress");
  ASSERT_EQ(j.code, 0) << j.out;
  size_t lines = 0, with = 0;
  for (size_t p = 0; p < j.out.size();) {
    const size_t e = j.out.find('\n', p);
    const std::string line = j.out.substr(p, e - p);
    p = e == std::string::npos ? j.out.size() : e + 1;
    if (line.rfind("{", 0) != 0) continue;  // stderr (merged): the --window auto note
    // The last line is the run's: its what-if summed over the windows.
    if (line.rfind("{\"run\":", 0) == 0) {
      EXPECT_NE(line.find("\"what_if\":[{\"kind\":"), std::string::npos) << line;
      continue;
    }
    ++lines;
    if (line.find("\"what_if\":[") != std::string::npos) ++with;
    // The first worker item of each window is the hot worker.
    const std::string key = "{\"kind\":\"worker\",\"name\":\"";
    const size_t w = line.find(key);
    if (w != std::string::npos) {
      EXPECT_EQ(line.substr(w + key.size(), 8), "count-0\"") << line;
    }
  }
  EXPECT_EQ(lines, 3u);
  EXPECT_EQ(with, lines);
  const CommandResult t = run_binary("analyze " + trace + " --what-if --no-progress");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("WHAT IF"), std::string::npos) << t.out;
  // Without the flag the output has no what-if at all.
  const CommandResult plain = run_binary("analyze " + trace + " -f jsonl --no-progress");
  EXPECT_EQ(plain.out.find("what_if"), std::string::npos);
  EXPECT_NE(run_binary("analyze " + trace + " --what-if --what-if-speedup 1").code, 0);
}

}  // namespace
}  // namespace snailtrail::test_what_if
