// Brute-force oracle: random small traces whose PAG is rebuilt independently from
// activity intervals, every V_s -> V_e path enumerated, and CP computed from its
// definition (thesis Eq. 3.2) rather than from path counts. The segmented rule
// (docs/PAG.md §4) is checked the same way: segments found from the activity intervals,
// brute force in each, combined by duration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_cp_oracle {
namespace {

struct Seg {
  int64_t s, e;
  ActivityType type;
};
struct Msg {
  uint32_t from, to;
  int64_t send, recv;
  int64_t corr;
};
struct Scenario {
  int workers;
  std::vector<std::vector<Seg>> segs;  // contiguous per worker
  std::vector<Msg> msgs;
  Trace trace;
};

constexpr ActivityType kLocal[] = {ActivityType::processing,      ActivityType::serialization,
                                   ActivityType::deserialization, ActivityType::scheduling,
                                   ActivityType::buffer,          ActivityType::unknown};

// Random contiguous timelines, messages between arbitrary instants inside them, and
// waiting segments that end where a message is received (Assumption 2). With `idle`:
// workers that start late and end early (lifetimes far apart), fewer messages and
// explicit waiting activities that end without a receive, so that every worker may wait
// at once (idle instants).
Scenario make_scenario(std::mt19937_64& rng, bool idle = false) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Scenario sc;
  sc.workers = static_cast<int>(uni(2, 6));
  sc.segs.resize(sc.workers);
  for (int w = 0; w < sc.workers; ++w) {
    int64_t t = uni(0, idle ? 14 : 3);
    int n = static_cast<int>(uni(1, 8));
    for (int i = 0; i < n; ++i) {
      int64_t d = uni(0, 4) == 0 ? 0 : uni(1, 6);
      ActivityType type = kLocal[uni(0, 5)];
      if (idle && uni(0, 2) == 0) type = ActivityType::waiting;
      sc.segs[w].push_back({t, t + d, type});
      t += d;
    }
  }
  int n_msgs = static_cast<int>(uni(0, idle ? 4 : 7));
  for (int k = 0; k < n_msgs; ++k) {
    uint32_t a = static_cast<uint32_t>(uni(0, sc.workers - 1));
    uint32_t b = static_cast<uint32_t>(uni(0, sc.workers - 1));
    int64_t a_lo = sc.segs[a].front().s, a_hi = sc.segs[a].back().e;
    int64_t b_lo = sc.segs[b].front().s, b_hi = sc.segs[b].back().e;
    int64_t send = uni(a_lo, a_hi);
    int64_t lo = std::max(send, b_lo);
    if (lo > b_hi) continue;
    int64_t recv = uni(lo, std::min(b_hi, lo + 8));
    // Zero-duration messages only go to higher worker ids: no cycles (those are broken
    // by dropping messages, tested in CpExamples).
    if (send == recv && a >= b) continue;
    sc.msgs.push_back({a, b, send, recv, k});
  }
  // Turn some segments that end at a receive into waiting.
  for (const Msg& m : sc.msgs)
    for (Seg& s : sc.segs[m.to])
      if (s.e == m.recv && s.e > s.s && uni(0, 1)) s.type = ActivityType::waiting;

  testing::TraceBuilder b;
  for (int w = 0; w < sc.workers; ++w)
    for (const Seg& s : sc.segs[w]) b.activity(static_cast<uint32_t>(w), s.type, s.s, s.e);
  for (const Msg& m : sc.msgs) b.message(m.from, m.send, m.to, m.recv, m.corr);
  sc.trace = b.build();
  // Shuffle events of one node: their order must not matter.
  auto& ev = sc.trace.events;
  for (size_t i = 0; i < ev.size();) {
    size_t j = i;
    while (j < ev.size() && ev[j].worker == ev[i].worker && ev[j].ts == ev[i].ts) ++j;
    std::shuffle(ev.begin() + static_cast<std::ptrdiff_t>(i),
                 ev.begin() + static_cast<std::ptrdiff_t>(j), rng);
    i = j;
  }
  return sc;
}

// Edge key: (src worker, src ts, dst worker, dst ts, is message).
using Key = std::tuple<uint32_t, int64_t, uint32_t, int64_t, bool>;

struct OracleEdge {
  Key key;
  ActivityType type;
  int64_t weight;
  bool cut_end = false;  // a timeline edge that goes on after the window's end
};

struct OracleResult {
  double paths = 0;  // exact for these sizes
  std::map<Key, double> cp;
  std::array<double, kActivityTypeCount> activity{};
  bool too_many = false;
};

// The window's timeline and message edges, clipped to [ts, te].
std::vector<OracleEdge> window_edges(const Scenario& sc, int64_t ts, int64_t te, bool closed_end) {
  std::vector<OracleEdge> edges;
  for (int w = 0; w < sc.workers; ++w) {
    // Node times of worker w: all segment borders and message instants.
    std::set<int64_t> times;
    for (const Seg& s : sc.segs[w]) times.insert(s.s), times.insert(s.e);
    for (const Msg& m : sc.msgs) {
      if (m.from == static_cast<uint32_t>(w)) times.insert(m.send);
      if (m.to == static_cast<uint32_t>(w)) times.insert(m.recv);
    }
    std::vector<int64_t> t(times.begin(), times.end());
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      int64_t a = t[i], b = t[i + 1];
      if (!(a < te && b > ts)) continue;
      ActivityType type = ActivityType::unknown;
      for (const Seg& s : sc.segs[w])
        if (s.s <= a && s.e >= b && s.e > s.s) type = s.type;
      int64_t ca = std::max(a, ts), cb = std::min(b, te);
      edges.push_back({{static_cast<uint32_t>(w), ca, static_cast<uint32_t>(w), cb, false},
                       type,
                       cb - ca,
                       b > te});
    }
  }
  for (const Msg& m : sc.msgs) {
    bool in = m.send == m.recv ? (m.send >= ts && (m.send < te || (closed_end && m.send == te)))
                               : (m.send < te && m.recv > ts);
    if (!in) continue;
    int64_t ca = std::max(m.send, ts), cb = std::min(m.recv, te);
    edges.push_back({{m.from, ca, m.to, cb, true}, ActivityType::data_message, cb - ca});
  }
  return edges;
}

// Every path from the nodes at the earliest time (V_s) to those at the latest (V_e).
OracleResult oracle(const Scenario& sc, int64_t ts, int64_t te, bool closed_end) {
  const std::vector<OracleEdge> edges = window_edges(sc, ts, te, closed_end);
  OracleResult r;
  if (edges.empty()) return r;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& e : edges) {
    lo = std::min({lo, std::get<1>(e.key), std::get<3>(e.key)});
    hi = std::max({hi, std::get<1>(e.key), std::get<3>(e.key)});
  }
  if (hi == lo) return r;
  // Adjacency over nodes (worker, ts) without waiting edges.
  std::map<std::pair<uint32_t, int64_t>, std::vector<size_t>> out;
  std::set<std::pair<uint32_t, int64_t>> nodes;
  for (size_t i = 0; i < edges.size(); ++i) {
    auto [sw, st, dw, dt, msg] = edges[i].key;
    nodes.insert({sw, st});
    nodes.insert({dw, dt});
    if (edges[i].type != ActivityType::waiting) out[{sw, st}].push_back(i);
  }
  std::map<Key, double> sum;
  std::vector<size_t> path;
  double count = 0;
  const double span = static_cast<double>(hi - lo);
  // Depth-first enumeration; each visit of a V_e node ends one path.
  std::function<void(std::pair<uint32_t, int64_t>)> dfs = [&](std::pair<uint32_t, int64_t> v) {
    if (r.too_many) return;
    if (v.second == hi) {
      count += 1;
      if (count > 2e5) r.too_many = true;
      for (size_t i : path) {
        sum[edges[i].key] += static_cast<double>(edges[i].weight) / span;
        r.activity[static_cast<int>(edges[i].type)] += static_cast<double>(edges[i].weight) / span;
      }
    }
    auto it = out.find(v);
    if (it == out.end()) return;
    for (size_t i : it->second) {
      path.push_back(i);
      dfs({std::get<2>(edges[i].key), std::get<3>(edges[i].key)});
      path.pop_back();
    }
  };
  for (const auto& v : nodes)
    if (v.second == lo) dfs(v);
  r.paths = count;
  if (count > 0) {
    for (auto& [k, v] : sum) r.cp[k] = v / count;
    for (double& a : r.activity) a /= count;
  }
  return r;
}

// The segmented rule of docs/PAG.md §4, from the activity intervals: a worker is active
// from its first to its last node in the window; idle intervals are the stretches of
// [earliest node, latest node] covered by no non-waiting activity and no message in
// flight; segment borders are their ends, the start of an active interval where no
// message arrives and the end of a waiting edge where no message arrives (unless the
// window cuts it); each segment
// is brute-forced as a window of its own (V_s / V_e at its borders) and the segments
// with paths are combined weighted by their length.
struct SegmentedOracle {
  OracleResult combined;
  uint64_t segments = 0, no_path_segments = 0, idle = 0;
  int64_t idle_ns = 0;
};

SegmentedOracle segmented_oracle(const Scenario& sc, int64_t ts, int64_t te, bool closed_end) {
  SegmentedOracle out;
  const std::vector<OracleEdge> edges = window_edges(sc, ts, te, closed_end);
  if (edges.empty()) return out;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::map<uint32_t, std::pair<int64_t, int64_t>> active;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const auto& e : edges) {
    auto [sw, st, dw, dt, msg] = e.key;
    lo = std::min({lo, st, dt});
    hi = std::max({hi, st, dt});
    if (!msg) {
      auto [it, fresh] = active.try_emplace(sw, st, dt);
      it->second.first = std::min(it->second.first, st);
      it->second.second = std::max(it->second.second, dt);
    }
    if (dt > st && (msg || e.type != ActivityType::waiting)) busy.emplace_back(st, dt);
  }
  if (hi == lo) return out;
  // Idle: unit steps of [lo, hi] that nothing busy covers (times are small integers).
  std::vector<bool> idle_at(static_cast<size_t>(hi - lo), true);
  for (auto [a, b] : busy)
    for (int64_t t = a; t < b; ++t) idle_at[static_cast<size_t>(t - lo)] = false;
  std::set<int64_t> borders{lo, hi};
  for (int64_t t = lo; t < hi; ++t) {
    const bool now = idle_at[static_cast<size_t>(t - lo)];
    const bool before = t > lo && idle_at[static_cast<size_t>(t - 1 - lo)];
    if (now) ++out.idle_ns;
    if (now && !before) ++out.idle;
    if (now != before) borders.insert(t);
  }
  // Where messages arrive.
  std::set<std::pair<uint32_t, int64_t>> receives;
  for (const auto& e : edges)
    if (std::get<4>(e.key)) receives.insert({std::get<2>(e.key), std::get<3>(e.key)});
  // Workers that start with no message arriving.
  for (const auto& [w, ab] : active)
    if (ab.first > lo && !receives.count({w, ab.first})) borders.insert(ab.first);
  // Waits that no message ends (and that the window does not cut).
  for (const auto& e : edges) {
    auto [sw, st, dw, dt, msg] = e.key;
    if (!msg && e.type == ActivityType::waiting && !e.cut_end && !receives.count({dw, dt}))
      borders.insert(dt);
  }
  std::vector<std::pair<int64_t, int64_t>> segs;
  for (auto it = borders.begin(); std::next(it) != borders.end(); ++it)
    if (!idle_at[static_cast<size_t>(*it - lo)]) segs.emplace_back(*it, *std::next(it));
  std::vector<OracleResult> results;
  int64_t total = 0;
  for (size_t k = 0; k < segs.size(); ++k) {
    const auto [p, q] = segs[k];
    // Only the last part of the span (segment or idle) owns its end instant, unless the
    // next window starts there.
    const bool closed = q == hi && !(q == te && !closed_end);
    // Inside a segment every active worker spans it: V_s is at p and V_e at q.
    int64_t slo = INT64_MAX, shi = INT64_MIN;
    for (const auto& e : window_edges(sc, p, q, closed)) {
      slo = std::min({slo, std::get<1>(e.key), std::get<3>(e.key)});
      shi = std::max({shi, std::get<1>(e.key), std::get<3>(e.key)});
    }
    EXPECT_EQ(slo, p);
    EXPECT_EQ(shi, q);
    results.push_back(oracle(sc, p, q, closed));
    if (results.back().too_many) out.combined.too_many = true;
    if (results.back().paths > 0)
      total += q - p;
    else
      ++out.no_path_segments;
  }
  out.segments = segs.size();
  if (total == 0) return out;
  out.combined.paths = 1;
  for (size_t k = 0; k < segs.size(); ++k) {
    const OracleResult& r = results[k];
    if (r.paths == 0) continue;
    out.combined.paths *= r.paths;
    const double weight =
        static_cast<double>(segs[k].second - segs[k].first) / static_cast<double>(total);
    for (const auto& [key, v] : r.cp) out.combined.cp[key] += v * weight;
    for (int a = 0; a < kActivityTypeCount; ++a) out.combined.activity[a] += r.activity[a] * weight;
  }
  return out;
}

struct Ours {
  double paths;
  std::map<Key, double> cp;
  WindowSummary summary;
};

// segments: false is the thesis' single span (AnalysisOptions::segments).
Ours ours(const Trace& trace, int64_t from, int64_t to, bool segments) {
  Pag pag = build_pag(trace);
  AnalysisOptions opt;
  opt.segments = segments;
  opt.windows = WindowSpec{0, from, to};
  Ours o{0, {}, {}};
  int windows = 0;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    ++windows;
    o.paths = v.cp.paths.to_double();
    o.summary = v.summary;
    const Snapshot& s = v.snapshot;
    for (uint32_t u = 0; u + 1 < s.node_count(); ++u)
      if (s.edge[u] != kNone)
        o.cp[{pag.worker_ids[s.worker[u]], s.ts[u], pag.worker_ids[s.worker[u + 1]], s.ts[u + 1],
              false}] += v.cp.timeline_cp[u];
    for (size_t k = 0; k < s.msg_src.size(); ++k)
      o.cp[{pag.worker_ids[s.worker[s.msg_src[k]]], s.ts[s.msg_src[k]],
            pag.worker_ids[s.worker[s.msg_dst[k]]], s.ts[s.msg_dst[k]], true}] +=
          v.cp.message_cp[k] * s.mult(k);  // a merged edge is that many pieces
  });
  EXPECT_LE(windows, 1);
  return o;
}

TEST(CpOracle, RandomSmallTracesMatchBruteForce) {
  std::mt19937_64 rng(20261121);
  int checked = 0, skipped = 0, with_paths = 0;
  while (checked < 1200) {
    Scenario sc = make_scenario(rng);
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const Event& e : sc.trace.events)
      first = std::min(first, e.ts), last = std::max(last, e.ts);
    // Either the whole trace or a random sub-window.
    int64_t ts = first, te = last;
    if (rng() % 2) {
      ts = first + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - first + 1));
      te = ts + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - ts + 1));
    }
    if (te <= ts) continue;
    OracleResult want = oracle(sc, ts, te, true);
    if (want.too_many) {
      ++skipped;
      continue;
    }
    Ours got = ours(sc.trace, ts, te, /*segments=*/false);
    ++checked;
    SCOPED_TRACE(::testing::Message()
                 << "trace #" << checked << " window [" << ts << ", " << te << "]");
    ASSERT_EQ(got.paths, want.paths);
    if (want.paths == 0) continue;
    ++with_paths;
    // Every edge the oracle knows must match; edges it lacks must have CP 0.
    for (const auto& [k, v] : want.cp) {
      auto it = got.cp.find(k);
      ASSERT_NE(it, got.cp.end());
      ASSERT_NEAR(it->second, v, 1e-12);
    }
    double total = 0;
    for (const auto& [k, v] : got.cp) {
      total += v;
      if (!want.cp.count(k)) {
        ASSERT_EQ(v, 0.0);
      }
    }
    ASSERT_NEAR(total, 1.0, 1e-9);
    for (int a = 0; a < kActivityTypeCount; ++a)
      ASSERT_NEAR(got.summary.cp.activity[a], want.activity[a], 1e-12);
  }
  EXPECT_LT(skipped, checked / 10);
  EXPECT_GT(with_paths, checked / 2);
}

// The segmented rule against brute force per segment, on the scenarios above and on
// ones with idle instants and workers that start late or end early.
TEST(CpOracle, SegmentedRandomSmallTracesMatchBruteForcePerSegment) {
  std::mt19937_64 rng(20261124);
  int checked = 0, skipped = 0, with_paths = 0, multi = 0, idle = 0, no_path_segments = 0;
  while (checked < 2000) {
    Scenario sc = make_scenario(rng, checked % 3 != 0);
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const Event& e : sc.trace.events)
      first = std::min(first, e.ts), last = std::max(last, e.ts);
    int64_t ts = first, te = last;
    if (rng() % 2) {
      ts = first + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - first + 1));
      te = ts + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - ts + 1));
    }
    if (te <= ts) continue;
    SegmentedOracle want = segmented_oracle(sc, ts, te, true);
    if (want.combined.too_many) {
      ++skipped;
      continue;
    }
    Ours got = ours(sc.trace, ts, te, /*segments=*/true);
    ++checked;
    SCOPED_TRACE(::testing::Message()
                 << "trace #" << checked << " window [" << ts << ", " << te << "]");
    const Diagnostics& d = got.summary.diagnostics;
    ASSERT_EQ(d.segments, want.segments);
    ASSERT_EQ(d.no_path_segments, want.no_path_segments);
    ASSERT_EQ(d.property2_violations, want.idle);
    ASSERT_EQ(d.property2_ns, want.idle_ns);
    ASSERT_EQ(d.no_paths, want.combined.paths == 0);
    ASSERT_EQ(got.summary.has_paths, want.combined.paths > 0);
    multi += want.segments > 1;
    idle += want.idle > 0;
    no_path_segments += want.no_path_segments > 0;
    if (want.combined.paths == 0) continue;
    ++with_paths;
    ASSERT_NEAR(got.paths / want.combined.paths, 1.0, 1e-12);
    for (const auto& [k, v] : want.combined.cp) {
      auto it = got.cp.find(k);
      ASSERT_NE(it, got.cp.end());
      ASSERT_NEAR(it->second, v, 1e-12);
    }
    double total = 0;
    for (const auto& [k, v] : got.cp) {
      total += v;
      if (!want.combined.cp.count(k)) {
        ASSERT_EQ(v, 0.0);
      }
    }
    ASSERT_NEAR(total, 1.0, 1e-9);
    for (int a = 0; a < kActivityTypeCount; ++a)
      ASSERT_NEAR(got.summary.cp.activity[a], want.combined.activity[a], 1e-12);
    // The single sampled path covers the time CP is spread over.
    double single = 0;
    for (double v : got.summary.single_path.activity) single += v;
    ASSERT_NEAR(single, 1.0, 1e-9);
  }
  EXPECT_LT(skipped, checked / 10);
  EXPECT_GT(with_paths, checked / 2);
  EXPECT_GT(multi, checked / 4);
  EXPECT_GT(idle, checked / 10);
  EXPECT_GT(no_path_segments, 0);
}

}  // namespace
}  // namespace snailtrail::test_cp_oracle
