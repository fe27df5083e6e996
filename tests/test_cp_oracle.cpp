// Brute-force oracle: random small traces whose PAG is rebuilt independently from
// activity intervals, every V_s -> V_e path enumerated, and CP computed from its
// definition (thesis Eq. 3.2) rather than from path counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail {
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
// waiting segments that end where a message is received (Assumption 2).
Scenario make_scenario(std::mt19937_64& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Scenario sc;
  sc.workers = static_cast<int>(uni(2, 6));
  sc.segs.resize(sc.workers);
  for (int w = 0; w < sc.workers; ++w) {
    int64_t t = uni(0, 3);
    int n = static_cast<int>(uni(1, 8));
    for (int i = 0; i < n; ++i) {
      int64_t d = uni(0, 4) == 0 ? 0 : uni(1, 6);
      sc.segs[w].push_back({t, t + d, kLocal[uni(0, 5)]});
      t += d;
    }
  }
  int n_msgs = static_cast<int>(uni(0, 7));
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
};

struct OracleResult {
  double paths = 0;  // exact for these sizes
  std::map<Key, double> cp;
  std::array<double, kActivityTypeCount> activity{};
  bool too_many = false;
};

OracleResult oracle(const Scenario& sc, int64_t ts, int64_t te, bool closed_end) {
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
      edges.push_back(
          {{static_cast<uint32_t>(w), ca, static_cast<uint32_t>(w), cb, false}, type, cb - ca});
    }
  }
  for (const Msg& m : sc.msgs) {
    bool in = m.send == m.recv ? (m.send >= ts && (m.send < te || (closed_end && m.send == te)))
                               : (m.send < te && m.recv > ts);
    if (!in) continue;
    int64_t ca = std::max(m.send, ts), cb = std::min(m.recv, te);
    edges.push_back({{m.from, ca, m.to, cb, true}, ActivityType::data_message, cb - ca});
  }
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

struct Ours {
  double paths;
  std::map<Key, double> cp;
  WindowSummary summary;
};

Ours ours(const Trace& trace, int64_t from, int64_t to) {
  Pag pag = build_pag(trace);
  AnalysisOptions opt;
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
          v.cp.message_cp[k];
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
    Ours got = ours(sc.trace, ts, te);
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

}  // namespace
}  // namespace snailtrail
