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

namespace snailtrail::test_kernel_oracle {
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

// The network hop (packets followed to their sender, across hosts in real traces): the
// simulated models with senders attached at random to their packet waits, each sender
// running when it sends; the critical path must equal the pointwise definition
// evaluated on the model: at x, a wait another thread ended moves to that thread, and a
// packet wait moves to the sender when x is at or before the send (after it: `network`).
std::pair<int32_t, std::string> pointwise(const kernel::KernelModel& m, int32_t t, int64_t x) {
  for (int guard = 0; guard < 10000; ++guard) {
    const auto& ivs = m.threads[t].intervals;
    auto it = std::lower_bound(ivs.begin(), ivs.end(), x,
                               [](const kernel::Interval& iv, int64_t v) { return iv.start < v; });
    if (it == ivs.begin()) {
      const kernel::Thread& th = m.threads[t];
      if (th.parent >= 0 && th.birth != INT64_MIN && x <= th.birth) {
        t = th.parent;
        continue;
      }
      return {t, "unknown"};
    }
    const kernel::Interval& iv = *(it - 1);
    if (iv.end < x) return {t, "unknown"};
    if (iv.state == kernel::ThreadState::running) return {t, "running"};
    if (iv.state == kernel::ThreadState::preempted) return {t, "preempted"};
    if (iv.cause == kernel::WakeCause::thread && iv.waker >= 0) {
      t = iv.waker;
      continue;
    }
    if (iv.cause == kernel::WakeCause::network && iv.waker >= 0 && x <= iv.sent) {
      t = iv.waker;
      continue;
    }
    switch (iv.cause) {
      case kernel::WakeCause::timer:
        return {t, "timer"};
      case kernel::WakeCause::block_device:
        return {t, "block_device"};
      case kernel::WakeCause::network:
        return {t, "network"};
      case kernel::WakeCause::interrupt:
        return {t, "interrupt"};
      default:
        return {t, "blocked"};
    }
  }
  return {-1, "loop"};
}

TEST(KernelOracle, PacketWaitsFollowTheSenderPointwise) {
  int paths_checked = 0;
  uint64_t packet_hops = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Sim<PerfText> sim(seed, PerfStyle::kv, PerfText(PerfStyle::kv));
    std::mt19937_64 pick(seed * 104729);
    sim.run(3 + static_cast<int>(seed % 4), 1 + static_cast<int>(seed % 3),
            20 + static_cast<int>(seed % 30));
    SCOPED_TRACE("seed " + std::to_string(seed));
    kernel::KernelModel m =
        kernel::build_model(kernel::parse_perf_script(sim.p.text(), "sim.perf"));
    const auto n = static_cast<int32_t>(m.threads.size());
    // Attach a sender to every packet wait that some other thread could have sent: one
    // of its running intervals starting before the wait's end; the send inside it. A
    // sender's own later waits may lead back here only at strictly earlier instants.
    for (int32_t t = 0; t < n; ++t)
      for (kernel::Interval& iv : m.threads[t].intervals) {
        if (iv.state != kernel::ThreadState::blocked || iv.cause != kernel::WakeCause::network)
          continue;
        std::vector<std::pair<int32_t, const kernel::Interval*>> runs;
        for (int32_t u = 0; u < n; ++u)
          if (u != t)
            for (const kernel::Interval& r : m.threads[u].intervals)
              if (r.state == kernel::ThreadState::running && r.start < iv.end)
                runs.emplace_back(u, &r);
        if (runs.empty() || pick() % 4 == 0) continue;  // some packets stay unmatched
        const auto& [u, r] = runs[pick() % runs.size()];
        const int64_t hi = std::min(r->end, iv.end);
        iv.waker = u;
        iv.sent =
            r->start + 1 + static_cast<int64_t>(pick() % static_cast<uint64_t>(hi - r->start));
      }
    std::set<int64_t> bounds;
    for (const kernel::Thread& th : m.threads) {
      for (const kernel::Interval& v : th.intervals) {
        bounds.insert(v.start);
        bounds.insert(v.end);
        if (v.sent != INT64_MIN) bounds.insert(v.sent);
      }
      if (th.birth != INT64_MIN) bounds.insert(th.birth);
    }
    for (int q = 0; q < 6; ++q) {
      const auto t = static_cast<int32_t>(pick() % static_cast<uint64_t>(n));
      int64_t from = m.begin + static_cast<int64_t>(pick() % (m.end - m.begin + 1));
      int64_t to = m.begin + static_cast<int64_t>(pick() % (m.end - m.begin + 1));
      if (q == 0) from = m.begin, to = m.end;
      if (from > to) std::swap(from, to);
      if (from == to) continue;
      const kernel::CriticalPathResult r = kernel::critical_path(m, t, from, to);
      packet_hops += r.packet_hops;
      ASSERT_FALSE(r.path.empty());
      EXPECT_EQ(r.path.front().start, from);
      EXPECT_EQ(r.path.back().end, to);
      for (size_t k = 1; k < r.path.size(); ++k) EXPECT_EQ(r.path[k].start, r.path[k - 1].end);
      std::set<int64_t> points(bounds.upper_bound(from), bounds.lower_bound(to));
      points.insert(to);
      size_t seg = 0;
      for (int64_t x : points) {
        while (seg < r.path.size() && r.path[seg].end < x) ++seg;
        ASSERT_LT(seg, r.path.size());
        const auto want = pointwise(m, t, x);
        EXPECT_EQ(r.path[seg].thread, want.first) << "thread " << t << " x " << x;
        EXPECT_EQ(kernel::name_of(r.path[seg].state), want.second) << "thread " << t << " x " << x;
      }
      ++paths_checked;
    }
  }
  EXPECT_GT(paths_checked, 800);
  EXPECT_GT(packet_hops, 20u);  // the network hop was exercised (39 with these seeds)
}

}  // namespace
}  // namespace snailtrail::test_kernel_oracle
