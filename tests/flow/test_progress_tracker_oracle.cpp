// The incremental progress tracker (src/flow/progress.cpp, issue 35) against a brute
// force kept here: random acyclic graphs, random pointstamp update sequences (negative
// transients, counts that return to zero, several applies before one recompute), and
// after every round each edge's frontier equal to the least positive time over every
// location that reaches it, recomputed from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "flow/progress.hpp"
#include "sanitized.hpp"

namespace snailtrail::flow {
namespace {

struct Brute {
  uint32_t ops = 0;
  std::vector<EdgeSpec> edges;
  std::map<std::pair<uint32_t, Time>, int64_t> counts;

  // path[a][b]: a directed path of one or more edges from operator a to operator b.
  std::vector<std::vector<bool>> paths() const {
    std::vector<std::vector<bool>> p(ops, std::vector<bool>(ops, false));
    for (const EdgeSpec& e : edges) p[e.from_op][e.to_op] = true;
    for (uint32_t k = 0; k < ops; ++k)
      for (uint32_t a = 0; a < ops; ++a)
        for (uint32_t b = 0; b < ops; ++b)
          if (p[a][k] && p[k][b]) p[a][b] = true;
    return p;
  }
  Time least_positive(uint32_t loc) const {
    Time t = kTimeMax;
    for (const auto& [key, c] : counts)
      if (key.first == loc && c > 0) t = std::min(t, key.second);
    return t;
  }
  Time frontier(uint32_t f) const {
    const auto p = paths();
    const uint32_t at = edges[f].from_op;  // the operator whose output feeds edge f
    Time t = kTimeMax;
    for (uint32_t e = 0; e < edges.size(); ++e)
      if (e == f || edges[e].to_op == at || p[edges[e].to_op][at])
        t = std::min(t, least_positive(edge_location(e)));
    for (uint32_t op = 0; op < ops; ++op)
      if (op == at || p[op][at]) t = std::min(t, least_positive(output_location(op)));
    return t;
  }
  bool all_empty() const {
    for (const auto& [key, c] : counts)
      if (c != 0) return false;
    return true;
  }
};

void check_round(const ProgressTracker& tr, const Brute& b, uint64_t seed, int round) {
  for (uint32_t f = 0; f < b.edges.size(); ++f)
    ASSERT_EQ(tr.frontier(f), b.frontier(f))
        << "seed " << seed << " round " << round << " edge " << f;
  for (uint32_t op = 0; op < b.ops; ++op)
    ASSERT_EQ(tr.held(output_location(op)), b.least_positive(output_location(op)))
        << "seed " << seed << " round " << round << " op " << op;
  ASSERT_EQ(tr.all_empty(), b.all_empty()) << "seed " << seed << " round " << round;
}

TEST(FlowProgressTracker, IncrementalFrontiersEqualBruteForceOnRandomUpdates) {
  const int seeds = snailtrail::testing::random_inputs(300, 60);
  ProgressTracker tr;  // one tracker re-initialized per graph: no state may leak across
  for (int s = 1; s <= seeds; ++s) {
    const uint64_t seed = static_cast<uint64_t>(s);
    std::mt19937_64 rng(seed);
    Brute b;
    b.ops = 2 + static_cast<uint32_t>(rng() % 7);
    const uint32_t n_edges = 1 + static_cast<uint32_t>(rng() % (2 * b.ops));
    for (uint32_t i = 0; i < n_edges; ++i) {
      const uint32_t from = static_cast<uint32_t>(rng() % (b.ops - 1));
      const uint32_t to = from + 1 + static_cast<uint32_t>(rng() % (b.ops - 1 - from));
      b.edges.push_back({from, to});
    }
    // The runtime creates edges in the order of their operators (topological order).
    std::stable_sort(b.edges.begin(), b.edges.end(),
                     [](const EdgeSpec& x, const EdgeSpec& y) { return x.from_op < y.from_op; });
    tr.init(b.ops, b.edges);
    tr.recompute();
    check_round(tr, b, seed, -1);
    const uint32_t locs = 2 * std::max<uint32_t>(b.ops, n_edges);
    const Time span = 1 + rng() % 12;  // few distinct times: counts meet and cancel
    for (int round = 0; round < 40; ++round) {
      const int applies = 1 + static_cast<int>(rng() % 3);
      for (int a = 0; a < applies; ++a) {
        std::vector<ProgressUpdate> u;
        const int n = static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i) {
          const size_t had = u.size();
          if (!b.counts.empty() && rng() % 3 == 0) {  // cancel a pointstamp exactly
            auto it = b.counts.begin();
            std::advance(it, static_cast<long>(rng() % b.counts.size()));
            if (it->second != 0) u.push_back({it->first.first, it->first.second, -it->second});
          } else {
            const int64_t d = static_cast<int64_t>(rng() % 5) - 2;
            if (d != 0)
              u.push_back({static_cast<uint32_t>(rng() % locs),
                           static_cast<Time>(rng() % span) + round / 8, d});
          }
          if (u.size() > had) b.counts[{u.back().loc, u.back().time}] += u.back().delta;
        }
        tr.apply(u.data(), u.size());
      }
      tr.recompute();
      check_round(tr, b, seed, round);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace snailtrail::flow
