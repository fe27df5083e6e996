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

namespace snailtrail {
namespace {

using testing::PerfStyle;
using testing::PerfText;

struct TruthIv {
  int64_t start, end;
  int state;          // 0 running, 1 preempted, 2 blocked
  std::string label;  // blocked: thread, timer, block_device, network, interrupt, none
  int waker = -1;     // tid
};

struct SimThread {
  int tid = 0;
  int state = -1;  // -1 unborn, 0 running, 1 runnable, 2 blocked
  int64_t since = 0;
  std::string block_kind;
  int wake_tick = -1;
  int parent = -1;  // tid
  int64_t birth = INT64_MIN;
  std::vector<TruthIv> ivs;
};

struct Sim {
  std::mt19937_64 rng;
  PerfStyle style;
  PerfText p;
  std::map<int, SimThread> th;
  std::vector<int> cpu_cur;
  int tick = 0, seq = 0;
  int64_t last_ts = 0;

  Sim(uint64_t seed, PerfStyle s) : rng(seed), style(s), p(s) {}

  int64_t next_ts() {
    last_ts = int64_t{1000} * 1'000'000'000 + int64_t{tick} * 1'000'000 + int64_t{seq++} * 1000;
    return last_ts;
  }
  int rnd(int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
  double uni() { return std::uniform_real_distribution<double>(0, 1)(rng); }

  void enter(int tid, int state, int64_t ts, const std::string& label = "", int waker = -1) {
    SimThread& t = th[tid];
    if (t.state >= 0 && ts > t.since)
      t.ivs.push_back({t.since, ts, t.state, t.state == 2 ? label : "", waker});
    t.state = state;
    t.since = ts;
  }

  std::vector<int> with_state(int state, const std::string& kind = "") {
    std::vector<int> out;
    for (auto& [tid, t] : th)
      if (t.state == state && (kind.empty() || t.block_kind == kind)) out.push_back(tid);
    return out;
  }

  // Switch on cpu c from its current thread (prev_state) to a runnable thread or idle.
  void switch_out(int c, const std::string& prev_state) {
    const int64_t ts = next_ts();
    const int prev = cpu_cur[c];
    std::vector<int> runnable = with_state(1);
    runnable.erase(std::remove(runnable.begin(), runnable.end(), prev), runnable.end());
    const int next = runnable.empty() ? 0 : runnable[rnd(static_cast<int>(runnable.size()))];
    p.sched_switch(c, ts, prev, prev_state, next);
    if (prev) enter(prev, prev_state[0] == 'R' ? 1 : 2, ts);
    if (next) enter(next, 0, ts);
    cpu_cur[c] = next;
  }

  void external_wake(SimThread& t) {
    const int c = rnd(static_cast<int>(cpu_cur.size()));
    const int cur = cpu_cur[c];
    const std::string kind = t.block_kind;
    if (kind == "timer") p.hrtimer_entry(c, next_ts(), cur);
    if (kind == "block_device") {
      p.irq_entry(c, next_ts(), cur, 33);
      p.block_complete(c, next_ts(), cur);
    }
    if (kind == "network") {
      p.softirq_entry(c, next_ts(), cur, 3);
      p.net_receive(c, next_ts(), cur);
    }
    if (kind == "interrupt") p.irq_entry(c, next_ts(), cur, 9);
    const int64_t ts = next_ts();
    if (style == PerfStyle::pid_tid)
      p.wakeup(c, ts, cur, t.tid, c);
    else
      p.waking(c, ts, cur, t.tid, c);
    enter(t.tid, 1, ts, kind);
    if (kind == "timer") p.hrtimer_exit(c, next_ts(), cur);
    if (kind == "block_device" || kind == "interrupt") p.irq_exit(c, next_ts(), cur, 33);
    if (kind == "network") p.softirq_exit(c, next_ts(), cur, 3);
  }

  void run(int threads, int cpus, int ticks) {
    cpu_cur.assign(cpus, 0);
    for (int k = 0; k < threads; ++k) {
      const int tid = 101 + k;
      th[tid].tid = tid;
      p.name(tid, k % 2 ? "worker " + std::to_string(k) : "t" + std::to_string(k));
    }
    // The first thread runs on cpu 0 from the start; the others are forked later.
    tick = 0;
    seq = 0;
    {
      const int64_t ts = next_ts();
      p.sched_switch(0, ts, 0, "R", 101);
      th[101].state = 0;
      th[101].since = ts;
      cpu_cur[0] = 101;
    }
    static const char* kinds[] = {"timer", "block_device", "network", "interrupt", "thread"};
    for (tick = 1; tick <= ticks; ++tick) {
      seq = 0;
      for (auto& [tid, t] : th)
        if (t.state == 2 && t.block_kind != "thread" && t.wake_tick == tick) external_wake(t);
      for (int c = 0; c < cpus; ++c) {
        const int r = cpu_cur[c];
        if (r == 0) {
          if (!with_state(1).empty() && uni() < 0.8) switch_out(c, "R");
          continue;
        }
        const double u = uni();
        if (u < 0.35) continue;
        if (u < 0.55) {
          SimThread& t = th[r];
          t.block_kind = kinds[rnd(5)];
          t.wake_tick = tick + 1 + rnd(5);
          switch_out(c, t.block_kind == "block_device" ? "D" : "S");
        } else if (u < 0.72) {
          const std::vector<int> waiting = with_state(2, "thread");
          if (waiting.empty()) continue;
          const int w = waiting[rnd(static_cast<int>(waiting.size()))];
          const int64_t ts = next_ts();
          const int target_cpu = rnd(cpus);
          if (style == PerfStyle::pid_tid) {
            p.wakeup(c, ts, r, w, target_cpu);
          } else {
            p.waking(c, ts, r, w, target_cpu);
            // The kernel may emit sched_wakeup on the target CPU, under its current task.
            if (uni() < 0.5) p.wakeup(target_cpu, next_ts(), cpu_cur[target_cpu], w, target_cpu);
          }
          enter(w, 1, ts, "thread", r);
        } else if (u < 0.82) {
          if (!with_state(1).empty()) switch_out(c, "R+");
        } else if (u < 0.9) {
          const std::vector<int> unborn = with_state(-1);
          if (unborn.empty()) continue;
          const int child = unborn.front();
          const int64_t ts = next_ts();
          p.fork(c, ts, r, child);
          p.wakeup_new(c, next_ts(), r, child, rnd(cpus));
          SimThread& ct = th[child];
          ct.parent = r;
          ct.birth = ts;
          ct.state = 1;
          ct.since = ts;
        }
      }
    }
    // Every open state ends at the last event, as in the model.
    for (auto& [tid, t] : th)
      if (t.state >= 0 && last_ts > t.since)
        t.ivs.push_back({t.since, last_ts, t.state, t.state == 2 ? "none" : "", -1});
  }

  // The pointwise definition: (tid, state) on the critical path of `tid` at the instant
  // just before X (intervals contain X when start < X <= end).
  std::pair<int, std::string> label(int tid, int64_t x) const {
    int cur = tid;
    for (int hop = 0; hop < 10000; ++hop) {
      const SimThread& t = th.at(cur);
      const TruthIv* iv = nullptr;
      for (const TruthIv& v : t.ivs)
        if (v.start < x && x <= v.end) iv = &v;
      if (!iv) {
        if (t.parent >= 0 && x <= t.birth) {
          cur = t.parent;
          continue;
        }
        return {cur, "unknown"};
      }
      if (iv->state == 2 && iv->label == "thread") {
        cur = iv->waker;
        continue;
      }
      if (iv->state == 0) return {cur, "running"};
      if (iv->state == 1) return {cur, "preempted"};
      return {cur, iv->label == "none" ? "blocked" : iv->label};
    }
    return {-1, "cycle"};
  }
};

TEST(KernelOracle, RandomSchedulesModelAndCriticalPath) {
  int paths_checked = 0, hops_seen = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const PerfStyle style = static_cast<PerfStyle>(seed % 3);
    Sim sim(seed, style);
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
