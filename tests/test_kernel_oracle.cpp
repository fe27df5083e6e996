// Independent oracle for the kernel reader, model and critical path: a small random
// scheduler simulation writes `perf script` text and keeps its own ground truth (each
// thread's intervals and who or what ended each wait). The parsed model must equal the
// truth, and the critical path must equal a pointwise definition evaluated on the truth:
// at instant x, start from the target thread and, while the thread at hand is blocked at
// x by a wait another thread ended, move to that thread (before a thread's birth, to its
// parent); the segment covering x names the thread reached and its state at x.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernel/critical_path.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel_perf_text.hpp"
#include "kernel_sim.hpp"

namespace snailtrail {
namespace {

using testing::PerfStyle;
using testing::PerfText;
using testing::Sim;
using testing::TruthIv;

TEST(KernelOracle, RandomSchedulesModelAndCriticalPath) {
  int paths_checked = 0, hops_seen = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const PerfStyle style = static_cast<PerfStyle>(seed % 3);
    Sim<PerfText> sim(seed, style, PerfText(style));
    std::mt19937_64 pick(seed * 7919);
    sim.run(2 + static_cast<int>(seed % 5), 1 + static_cast<int>(seed % 3),
            10 + static_cast<int>(seed % 40));
    SCOPED_TRACE("seed " + std::to_string(seed));
    const kernel::KernelModel m =
        kernel::build_model(kernel::parse_perf_script(sim.p.text(), "sim.perf"));
    // The model equals the truth, thread by thread.
    std::map<int, int32_t> index;
    for (size_t i = 0; i < m.threads.size(); ++i) {
      ASSERT_EQ(index.count(m.threads[i].tid), 0u);
      index[m.threads[i].tid] = static_cast<int32_t>(i);
    }
    for (const auto& [tid, t] : sim.th) {
      if (t.state < 0) {
        EXPECT_EQ(index.count(tid), 0u);
        continue;
      }
      ASSERT_EQ(index.count(tid), 1u) << "tid " << tid;
      const kernel::Thread& mt = m.threads[index[tid]];
      ASSERT_EQ(mt.intervals.size(), t.ivs.size()) << "tid " << tid;
      for (size_t k = 0; k < t.ivs.size(); ++k) {
        const kernel::Interval& a = mt.intervals[k];
        const TruthIv& b = t.ivs[k];
        EXPECT_EQ(a.start, b.start) << tid << " #" << k;
        EXPECT_EQ(a.end, b.end) << tid << " #" << k;
        EXPECT_EQ(static_cast<int>(a.state), b.state) << tid << " #" << k;
        if (b.state == 2) {
          EXPECT_EQ(kernel::name_of(a.cause), b.label) << tid << " #" << k;
          if (b.label == "thread") {
            ASSERT_GE(a.waker, 0);
            EXPECT_EQ(m.threads[a.waker].tid, b.waker);
          }
        }
      }
      if (t.parent >= 0) {
        ASSERT_GE(mt.parent, 0);
        EXPECT_EQ(m.threads[mt.parent].tid, t.parent);
        EXPECT_EQ(mt.birth, t.birth);
      }
    }
    EXPECT_TRUE(m.diagnostics.items().empty()) << m.diagnostics.items().front().first;
    // Critical paths of random threads over random ranges equal the pointwise oracle.
    std::set<int64_t> bounds;
    for (const auto& [tid, t] : sim.th) {
      for (const TruthIv& v : t.ivs) bounds.insert(v.start), bounds.insert(v.end);
      if (t.birth != INT64_MIN) bounds.insert(t.birth);
    }
    std::vector<int> born;
    for (const auto& [tid, t] : sim.th)
      if (t.state >= 0) born.push_back(tid);
    for (int q = 0; q < 6; ++q) {
      const int tid = born[pick() % born.size()];
      int64_t from = m.begin + static_cast<int64_t>(pick() % (m.end - m.begin + 1));
      int64_t to = m.begin + static_cast<int64_t>(pick() % (m.end - m.begin + 1));
      if (q == 0) from = m.begin, to = m.end;
      if (from > to) std::swap(from, to);
      if (from == to) continue;
      const kernel::CriticalPathResult r = kernel::critical_path(m, index[tid], from, to);
      EXPECT_EQ(r.inconsistent, 0u);
      hops_seen += r.waker_hops > 0;
      // The path partitions [from, to].
      ASSERT_FALSE(r.path.empty());
      EXPECT_EQ(r.path.front().start, from);
      EXPECT_EQ(r.path.back().end, to);
      for (size_t k = 1; k < r.path.size(); ++k) {
        EXPECT_EQ(r.path[k].start, r.path[k - 1].end);
        EXPECT_FALSE(r.path[k].thread == r.path[k - 1].thread &&
                     r.path[k].state == r.path[k - 1].state);
      }
      std::set<int64_t> points(bounds.upper_bound(from), bounds.lower_bound(to));
      points.insert(to);
      size_t seg = 0;
      for (int64_t x : points) {
        while (seg < r.path.size() && r.path[seg].end < x) ++seg;
        ASSERT_LT(seg, r.path.size());
        const auto want = sim.label(tid, x);
        EXPECT_EQ(m.threads[r.path[seg].thread].tid, want.first) << "tid " << tid << " x " << x;
        EXPECT_EQ(kernel::name_of(r.path[seg].state), want.second) << "tid " << tid << " x " << x;
      }
      ++paths_checked;
    }
  }
  EXPECT_GT(paths_checked, 1000);
  EXPECT_GT(hops_seen, 100);  // the oracle exercised waker recursion, not just own states
}

}  // namespace
}  // namespace snailtrail
