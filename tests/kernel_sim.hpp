// A small random scheduler simulation for the kernel-trace tests: it writes a trace
// through W (PerfText, or DualText for perf text and LTTng CTF at once) and keeps its own
// ground truth: each thread's intervals and who or what ended each wait, forks, and a
// pointwise definition of the critical path evaluated on that truth.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_perf_text.hpp"

namespace snailtrail::testing {

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

template <class W>
struct Sim {
  std::mt19937_64 rng;
  PerfStyle style;
  W p;
  std::map<int, SimThread> th;
  std::vector<int> cpu_cur;
  int tick = 0, seq = 0;
  int64_t last_ts = 0;

  Sim(uint64_t seed, PerfStyle s, W w) : rng(seed), style(s), p(std::move(w)) {}

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

}  // namespace snailtrail::testing
