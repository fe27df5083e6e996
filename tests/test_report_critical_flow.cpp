// "Critical flow" of `snailtrail report` for kernel traces (report/critical_flow.hpp): the
// embedded lanes, paths and hops of a hand-written 3-thread perf trace against values
// computed by hand, the bounds (lanes, intervals, segments) on a model built by hand, the
// page's paths against `kernel critical-path --format json`, and the command end to end.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kernel/lttng_ctf.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel_dual_text.hpp"
#include "kernel_perf_text.hpp"
#include "kernel_sim.hpp"
#include "process_util.hpp"
#include "report/critical_flow.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_report_critical_flow {
namespace {

using testing::PerfStyle;
using testing::PerfText;

constexpr int64_t kBase = 555'000'000'000;  // perf times: seconds since boot
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

// A(100) runs 0-10 µs and sleeps until B wakes it at 40; it runs 41-50 and sleeps to the
// end (70, no wake-up seen). B(200) runs 0-5, sleeps on a timer that fires at 30, runs
// 32-45, waits for the disk until the NVMe interrupt at 60, runs 62-70. C(300) runs 0-20,
// is preempted 20-25 and runs 25-70: most running time, but alone on its path.
//
// By hand (µs from the first event; states: 0 running, 1 preempted, 2 timer,
// 3 block_device, 6 blocked):
//   lanes  A: 0-10 run | 10-40 blocked | 40-41 pre | 41-50 run | 50-70 blocked
//          B: 0-5 run | 5-30 timer | 30-32 pre | 32-45 run | 45-60 disk | 60-62 pre | 62-70 run
//          C: 0-20 run | 20-25 pre | 25-70 run
//   CP(A, 0..70): A run 0-10 | B timer 10-30 | B pre 30-32 | B run 32-40 | A pre 40-41 |
//                 A run 41-50 | A blocked 50-70; hops A->B at 10, B->A at 40.
//   CP(B, 0..70) is B's own lane (disk 45-60 woken from irq 33); CP(C) is C's lane.
template <class W>
void hand_events(W& p) {
  p.name(100, "client");
  p.name(200, "worker");
  p.name(300, "cruncher");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.sched_switch(1, us(0), 0, "R", 200);
  p.sched_switch(2, us(0), 0, "R", 300);
  p.sched_switch(1, us(5), 200, "S", 0);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.sched_switch(2, us(20), 300, "R", 0);
  p.sched_switch(2, us(25), 0, "R", 300);
  p.hrtimer_entry(1, us(30), 0);
  p.waking(1, us(30), 0, 200, 1);
  p.hrtimer_exit(1, us(30), 0);
  p.sched_switch(1, us(32), 0, "R", 200);
  p.waking(1, us(40), 200, 100, 0);
  p.sched_switch(0, us(41), 0, "R", 100);
  p.sched_switch(1, us(45), 200, "D", 0);
  p.sched_switch(0, us(50), 100, "S", 0);
  p.irq_entry(1, us(60), 0, 33);
  p.block_complete(1, us(60), 0);
  p.waking(1, us(60), 0, 200, 1);
  p.irq_exit(1, us(60), 0, 33);
  p.sched_switch(1, us(62), 0, "R", 200);
  p.sched_switch(1, us(70), 200, "S", 0);
  p.sched_switch(2, us(70), 300, "S", 0);
}
std::string hand_trace() {
  PerfText p(PerfStyle::kv);
  hand_events(p);
  return p.text();
}

kernel::KernelModel hand_model() {
  return kernel::build_model(kernel::parse_perf_script(hand_trace(), "hand.txt"));
}

// Flat [start, end, state] in µs from `t0`.
using Triples = std::vector<int64_t>;
Triples lane_us(const report::FlowThread& t, int64_t t0) {
  Triples out;
  for (const auto& iv : t.intervals)
    out.insert(out.end(),
               {(iv.start - t0) / 1000, (iv.end - t0) / 1000, static_cast<int64_t>(iv.state)});
  return out;
}
// [start, end, thread (index in flow.threads), state] in µs.
using Quads = std::vector<std::vector<int64_t>>;
Quads segments_us(const report::CriticalFlow& f, const report::FlowPath& p, int64_t t0) {
  Quads out;
  for (size_t k = 0; k < p.kept; ++k) {
    const auto& s = p.result.path[k];
    int64_t idx = -1;
    for (size_t j = 0; j < f.threads.size(); ++j)
      if (f.threads[j].thread == s.thread) idx = static_cast<int64_t>(j);
    out.push_back({(s.start - t0) / 1000, (s.end - t0) / 1000, idx, static_cast<int64_t>(s.state)});
  }
  return out;
}

TEST(ReportCriticalFlow, LanesPathsAndHopsMatchTheHandComputation) {
  const kernel::KernelModel m = hand_model();
  ASSERT_TRUE(m.diagnostics.items().empty()) << m.diagnostics.items().front().first;
  report::CriticalFlowOptions o;
  const report::CriticalFlow f = report::build_critical_flow(m, o);
  EXPECT_EQ(f.from, us(0));
  EXPECT_EQ(f.to, us(70));
  EXPECT_EQ(f.candidates, 3u);
  EXPECT_EQ(f.lanes_left_out, 0u);
  // Lanes: the initial path's threads first (A, then B: 30 µs on A's path), then C.
  ASSERT_EQ(f.threads.size(), 3u);
  const int tids[] = {100, 200, 300};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(m.threads[f.threads[k].thread].tid, tids[k]) << k;
    EXPECT_TRUE(f.threads[k].lane);
  }
  const int64_t t0 = f.from;
  EXPECT_EQ(lane_us(f.threads[0], t0),
            (Triples{0, 10, 0, 10, 40, 6, 40, 41, 1, 41, 50, 0, 50, 70, 6}));
  EXPECT_EQ(lane_us(f.threads[1], t0),
            (Triples{0, 5, 0, 5, 30, 2, 30, 32, 1, 32, 45, 0, 45, 60, 3, 60, 62, 1, 62, 70, 0}));
  EXPECT_EQ(lane_us(f.threads[2], t0), (Triples{0, 20, 0, 20, 25, 1, 25, 70, 0}));
  EXPECT_EQ(f.threads[0].running_ns, 19'000);
  EXPECT_EQ(f.threads[1].running_ns, 26'000);
  EXPECT_EQ(f.threads[2].running_ns, 65'000);
  EXPECT_EQ(f.threads[1].blocked_ns, 40'000);

  // The picker by running time: C, B, A; the page opens on A, the only path with hops.
  ASSERT_EQ(f.paths.size(), 3u);
  EXPECT_EQ(f.paths[0].thread, 2u);
  EXPECT_EQ(f.paths[1].thread, 1u);
  EXPECT_EQ(f.paths[2].thread, 0u);
  EXPECT_EQ(f.initial, 2u);
  const report::FlowPath& a = f.paths[2];
  EXPECT_EQ(segments_us(f, a, t0), (Quads{{0, 10, 0, 0},
                                          {10, 30, 1, 2},
                                          {30, 32, 1, 1},
                                          {32, 40, 1, 0},
                                          {40, 41, 0, 1},
                                          {41, 50, 0, 0},
                                          {50, 70, 0, 6}}));
  ASSERT_EQ(a.hops.size(), 2u);
  EXPECT_EQ(a.hops_total, 2u);
  EXPECT_EQ(a.hops[0].at, us(10));
  EXPECT_EQ(a.hops[0].from, 0u);
  EXPECT_EQ(a.hops[0].to, 1u);
  EXPECT_EQ(a.hops[1].at, us(40));
  EXPECT_EQ(a.hops[1].from, 1u);
  EXPECT_EQ(a.hops[1].to, 0u);
  // Time per thread and state on A's path: A 40 µs (19 run, 1 pre, 20 blocked), B 30.
  ASSERT_EQ(a.per_thread.size(), 2u);
  EXPECT_EQ(a.per_thread[0].first, 0u);
  EXPECT_EQ(a.per_thread[0].second, (std::array<int64_t, 8>{19'000, 1'000, 0, 0, 0, 0, 20'000, 0}));
  EXPECT_EQ(a.per_thread[1].first, 1u);
  EXPECT_EQ(a.per_thread[1].second, (std::array<int64_t, 8>{8'000, 2'000, 20'000, 0, 0, 0, 0, 0}));
  // B's path is its own lane, the disk wait named by its interrupt; no hop.
  const report::FlowPath& b = f.paths[1];
  EXPECT_EQ(segments_us(f, b, t0), (Quads{{0, 5, 1, 0},
                                          {5, 30, 1, 2},
                                          {30, 32, 1, 1},
                                          {32, 45, 1, 0},
                                          {45, 60, 1, 3},
                                          {60, 62, 1, 1},
                                          {62, 70, 1, 0}}));
  EXPECT_EQ(kernel::irq_label(m.strings, b.result.path[4].irq), "irq 33 (nvme0q33)");
  EXPECT_TRUE(b.hops.empty());
  EXPECT_EQ(segments_us(f, f.paths[0], t0), (Quads{{0, 20, 2, 0}, {20, 25, 2, 1}, {25, 70, 2, 0}}));

  // The same in the page's JSON (times in ns from t0).
  const std::string json = report::critical_flow_json(m, f, o);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["view"]), "critical-flow");
  EXPECT_EQ(int64_t(doc["t0_ns"]), us(0));
  EXPECT_EQ(int64_t(doc["duration_ns"]), 70'000);
  EXPECT_EQ(uint64_t(doc["initial"]), 2u);
  std::vector<int64_t> iv;
  for (simdjson::dom::element v : simdjson::dom::array(doc["threads"].at(2)["iv"]))
    iv.push_back(int64_t(v));
  EXPECT_EQ(iv, (std::vector<int64_t>{0, 20'000, 0, 20'000, 25'000, 1, 25'000, 70'000, 0}));
  simdjson::dom::element pa = doc["paths"].at(2);
  std::vector<std::vector<int64_t>> hops;
  for (simdjson::dom::element h : simdjson::dom::array(pa["hops"])) {
    hops.emplace_back();
    for (simdjson::dom::element v : simdjson::dom::array(h)) hops.back().push_back(int64_t(v));
  }
  EXPECT_EQ(hops, (std::vector<std::vector<int64_t>>{{10'000, 0, 1}, {40'000, 1, 0}}));
  simdjson::dom::array seg = doc["paths"].at(1)["segments"];
  EXPECT_EQ(int64_t(seg.at(4).at(4)), 0);   // the disk wait's irq: irqs[0]
  EXPECT_EQ(int64_t(seg.at(1).at(4)), -1);  // a timer names no interrupt
  EXPECT_EQ(std::string_view(doc["irqs"].at(0)), "irq 33 (nvme0q33)");
}

// --thread and --from/--to: the page opens on the thread asked for, lanes and paths cut to
// the range (A's path over 20-60 µs by hand: B timer 20-30 | B pre | B run 32-40 | A pre |
// A run 41-50 | A blocked 50-60).
TEST(ReportCriticalFlow, ThreadAndRangeAsKernelCriticalPathTakesThem) {
  const kernel::KernelModel m = hand_model();
  report::CriticalFlowOptions o;
  o.thread = m.find_tid(300).front();
  o.from_given = o.to_given = true;
  o.from = us(20);
  o.to = us(60);
  const report::CriticalFlow f = report::build_critical_flow(m, o);
  ASSERT_EQ(f.paths.size(), 3u);
  EXPECT_EQ(m.threads[f.threads[f.paths[f.initial].thread].thread].tid, 300);
  EXPECT_EQ(m.threads[f.threads[0].thread].tid, 300);  // the initial path's thread first
  EXPECT_EQ(lane_us(f.threads[0], f.from), (Triples{0, 5, 1, 5, 40, 0}));
  const report::FlowPath* a = nullptr;
  for (const auto& p : f.paths)
    if (m.threads[f.threads[p.thread].thread].tid == 100) a = &p;
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->from, us(20));
  EXPECT_EQ(a->to, us(60));
  Quads want = {{0, 10, -1, 2},  {10, 12, -1, 1}, {12, 20, -1, 0},
                {20, 21, -2, 1}, {21, 30, -2, 0}, {30, 40, -2, 6}};
  int64_t ia = -1, ib = -1;
  for (size_t j = 0; j < f.threads.size(); ++j) {
    if (m.threads[f.threads[j].thread].tid == 100) ia = static_cast<int64_t>(j);
    if (m.threads[f.threads[j].thread].tid == 200) ib = static_cast<int64_t>(j);
  }
  for (auto& s : want) s[2] = s[2] == -1 ? ib : ia;
  EXPECT_EQ(segments_us(f, *a, f.from), want);
  ASSERT_EQ(a->hops.size(), 1u);  // B -> A at 40 µs; the path starts on B
  EXPECT_EQ(a->hops[0].at, us(40));
}

// Bounds on a model built by hand: lanes beyond the cap are counted, a lane's adjacent
// intervals of one state merge, a busy lane keeps its longest intervals, and a long path
// embeds its first segments (hops between them only).
TEST(ReportCriticalFlow, BoundsAreKeptAndCounted) {
  kernel::KernelModel m;
  m.source = "by-hand";
  auto add_thread = [&](int tid, const char* comm) -> kernel::Thread& {
    kernel::Thread& t = m.threads.emplace_back();
    t.tid = tid;
    t.comm = m.strings.intern(comm);
    return t;
  };
  // T1: 100 contiguous intervals, the k-th k+1 ns long, running and preempted in turn,
  // then two running intervals that touch (merged into one, 1000 ns).
  kernel::Thread& t1 = add_thread(1, "busy");
  int64_t at = 0;
  for (int k = 0; k < 100; ++k) {
    kernel::Interval iv;
    iv.start = at;
    iv.end = at + k + 1;
    iv.state = k % 2 ? kernel::ThreadState::preempted : kernel::ThreadState::running;
    if (k == 99) iv.state = kernel::ThreadState::preempted;
    t1.intervals.push_back(iv);
    at = iv.end;
  }
  for (int k = 0; k < 2; ++k) {
    kernel::Interval iv;
    iv.start = at;
    iv.end = at + 500;
    t1.intervals.push_back(iv);
    at = iv.end;
  }
  // T2 and T3: one running interval each (T2 longer).
  for (int tid : {2, 3}) {
    kernel::Interval iv;
    iv.start = 0;
    iv.end = tid == 2 ? 300 : 200;
    add_thread(tid, "idle").intervals.push_back(iv);
  }
  m.begin = 0;
  m.end = at;

  report::CriticalFlowOptions o;
  o.lanes = 2;
  o.lane_intervals = 64;  // one lane's cap: max(64, 64 / 2) = 64
  o.paths = 1;
  const report::CriticalFlow f = report::build_critical_flow(m, o);
  ASSERT_EQ(f.paths.size(), 1u);  // the most running time: T1
  ASSERT_EQ(f.threads.size(), 2u);
  EXPECT_EQ(f.threads[0].thread, 0);
  EXPECT_EQ(f.threads[1].thread, 1);  // T2: more running time than T3
  EXPECT_EQ(f.lanes_left_out, 1u);
  EXPECT_EQ(f.candidates, 3u);
  const report::FlowThread& busy = f.threads[0];
  EXPECT_EQ(busy.intervals_merged, 101u);  // 100 + the two touching ones as one
  ASSERT_EQ(busy.intervals.size(), 64u);
  // The 64 longest: the merged 1000 ns one and k = 37..99 (38..100 ns), in time order.
  for (size_t i = 0; i < 63; ++i)
    EXPECT_EQ(busy.intervals[i].end - busy.intervals[i].start, static_cast<int64_t>(i + 38)) << i;
  EXPECT_EQ(busy.intervals[63].end - busy.intervals[63].start, 1000);

  // T1's path is its own lane unmerged (101 segments); cut at 3.
  o.path_segments = 3;
  const report::CriticalFlow g = report::build_critical_flow(m, o);
  EXPECT_EQ(g.paths[0].kept, 3u);
  EXPECT_EQ(g.paths[0].result.path.size(), 101u);
  const std::string json = report::critical_flow_json(m, g, o);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(uint64_t(doc["lanes_left_out"]), 1u);
  EXPECT_EQ(uint64_t(doc["intervals_left_out"]), 101u - 64u);
  EXPECT_EQ(uint64_t(doc["threads"].at(0)["iv_left_out"]), 101u - 64u);
  EXPECT_EQ(simdjson::dom::array(doc["paths"].at(0)["segments"]).size(), 3u);
  EXPECT_EQ(uint64_t(doc["paths"].at(0)["segments_total"]), 101u);

  // A range without any traced time is an error, not an empty page.
  o.from_given = o.to_given = true;
  o.from = at + 10;
  o.to = at + 20;
  EXPECT_THROW(report::build_critical_flow(m, o), std::invalid_argument);
}

// The command: a perf trace gets the page (auto and --view critical-flow); each embedded
// path equals what `kernel critical-path --format json` prints for that thread.
TEST(ReportCriticalFlow, CommandPathsEqualKernelCriticalPath) {
  const std::string trace = testing::write_temp("flow-sched.txt", hand_trace());
  const std::string html = testing::write_temp("flow.html", "");
  const testing::CommandResult r = testing::run_binary("report " + trace + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = testing::slurp(html);
  EXPECT_NE(page.find("<title>snailtrail report: Critical flow</title>"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_DATA*/"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_JS*/"), std::string::npos);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);

  const std::string json_path = testing::write_temp("flow.json", "");
  const testing::CommandResult j = testing::run_binary(
      "report " + trace + " --view critical-flow -f json --thread worker -o " + json_path);
  ASSERT_EQ(j.code, 0) << j.out;
  const std::string text = testing::slurp(json_path);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  EXPECT_EQ(std::string_view(doc["format"]), "perf-sched");
  simdjson::dom::array threads = doc["threads"];
  simdjson::dom::array paths = doc["paths"];
  ASSERT_EQ(paths.size(), 3u);
  const int64_t t0 = doc["t0_ns"];
  EXPECT_EQ(
      int64_t(threads.at(size_t(int64_t(paths.at(uint64_t(doc["initial"]))["thread"])))["tid"]),
      200);
  for (simdjson::dom::element p : paths) {
    const int64_t tid = threads.at(size_t(int64_t(p["thread"])))["tid"];
    const std::string cp_path = testing::write_temp("flow-cp.json", "");
    const testing::CommandResult c =
        testing::run_binary("kernel critical-path " + trace + " --thread " + std::to_string(tid) +
                            " --format json -o " + cp_path);
    ASSERT_EQ(c.code, 0) << c.out;
    simdjson::dom::parser cp_parser;
    const std::string cp_text = testing::slurp(cp_path);
    simdjson::dom::element cp = cp_parser.parse(cp_text);
    EXPECT_EQ(int64_t(cp["from_ns"]), t0 + int64_t(p["from_ns"])) << tid;
    EXPECT_EQ(int64_t(cp["to_ns"]), t0 + int64_t(p["to_ns"])) << tid;
    simdjson::dom::array want = cp["path"], got = p["segments"];
    ASSERT_EQ(want.size(), got.size()) << tid;
    EXPECT_EQ(uint64_t(p["segments_total"]), want.size());
    EXPECT_EQ(uint64_t(p["waker_hops"]), uint64_t(cp["waker_hops"]));
    for (size_t k = 0; k < want.size(); ++k) {
      simdjson::dom::element w = want.at(k), s = got.at(k);
      EXPECT_EQ(t0 + int64_t(s.at(0)), int64_t(w["start_ns"])) << tid << " " << k;
      EXPECT_EQ(t0 + int64_t(s.at(1)), int64_t(w["end_ns"])) << tid << " " << k;
      EXPECT_EQ(int64_t(threads.at(size_t(int64_t(s.at(2))))["tid"]), int64_t(w["tid"]));
      EXPECT_EQ(std::string_view(doc["states"].at(size_t(int64_t(s.at(3))))),
                std::string_view(w["state"]));
      const int64_t irq = s.at(4);
      std::string_view want_irq;
      if (w["irq"].get(want_irq) == simdjson::SUCCESS) {
        ASSERT_GE(irq, 0);
        EXPECT_EQ(std::string_view(doc["irqs"].at(size_t(irq))), want_irq);
      } else {
        EXPECT_EQ(irq, -1);
      }
    }
    // The per-state totals equal the table's.
    std::array<int64_t, 8> sums{};
    for (simdjson::dom::element row : simdjson::dom::array(p["per_thread"]))
      for (size_t s = 0; s < 8; ++s) sums[s] += int64_t(row.at(s + 1));
    for (size_t s = 0; s < 8; ++s)
      EXPECT_EQ(sums[s], int64_t(cp["states"][std::string_view(doc["states"].at(s))])) << s;
  }

  // --from/--to as kernel critical-path reads them.
  const testing::CommandResult ranged = testing::run_binary(
      "report " + trace + " -f json --thread 100 --from +20us --to +60us -o " + json_path);
  ASSERT_EQ(ranged.code, 0) << ranged.out;
  const std::string ranged_text = testing::slurp(json_path);
  simdjson::dom::element rd = parser.parse(ranged_text);
  EXPECT_EQ(int64_t(rd["t0_ns"]), us(20));
  EXPECT_EQ(int64_t(rd["duration_ns"]), 40'000);
  EXPECT_EQ(std::string_view(rd["range"]), "given");

  // --view dataflow keeps the PAG views of before.
  const testing::CommandResult flow =
      testing::run_binary("report " + trace + " --view dataflow -f json -o - --no-progress");
  ASSERT_EQ(flow.code, 0) << flow.out;
  EXPECT_NE(flow.out.find("\"timelines\""), std::string::npos);

  // Bad input: a clear error naming the file or the thread, never a page.
  const std::string junk = testing::write_temp("flow-junk.txt", "not a kernel trace\n");
  const testing::CommandResult e =
      testing::run_binary("report " + junk + " --view critical-flow -o -");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("flow-junk.txt"), std::string::npos) << e.out;
  const testing::CommandResult no_thread =
      testing::run_binary("report " + trace + " --thread 999 -o -");
  EXPECT_NE(no_thread.code, 0);
  EXPECT_NE(no_thread.out.find("no thread with tid or comm '999'"), std::string::npos)
      << no_thread.out;
  const testing::CommandResult missing =
      testing::run_binary("report " + trace + ".missing --view critical-flow -o -");
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find(".missing"), std::string::npos) << missing.out;
}

// An LTTng CTF directory of the same events (tests/kernel_ctf_writer.py) gets the same
// page data as the perf text: only the source and the reader differ.
TEST(ReportCriticalFlow, LttngTraceGetsTheSameFlow) {
  if (!kernel::have_lttng_reader()) GTEST_SKIP() << "built without libbabeltrace2";
  if (std::system("/usr/bin/python3 -c 'import bt2' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-bt2 is not installed";
  testing::DualText d;
  hand_events(d);
  const std::string spec = testing::write_temp("flow-ctf.spec", d.spec);
  const std::string ctf = testing::write_temp("flow-ctf", "");
  std::remove(ctf.c_str());
  const std::string cmd = "/usr/bin/python3 " SNAILTRAIL_SOURCE_DIR
                          "/tests/kernel_ctf_writer.py '" +
                          ctf + "' < '" + spec + "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string perf = testing::write_temp("flow-ctf-perf.txt", d.text());
  const std::string a = testing::write_temp("flow-ctf.json", "");
  const std::string b = testing::write_temp("flow-perf.json", "");
  const testing::CommandResult r = testing::run_binary("report " + ctf + " -f json -o " + a);
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(testing::run_binary("report " + perf + " -f json -o " + b).code, 0);
  const std::string from_ctf = testing::slurp(a), from_perf = testing::slurp(b);
  EXPECT_NE(from_ctf.find("\"view\":\"critical-flow\""), std::string::npos) << from_ctf;
  EXPECT_NE(from_ctf.find("\"format\":\"lttng\""), std::string::npos) << from_ctf;
  const size_t at = from_ctf.find("\"t0_ns\""), bt = from_perf.find("\"t0_ns\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(from_ctf.substr(at), from_perf.substr(bt));
  EXPECT_NE(from_ctf.find("\"hops\":[[10000,0,1],[40000,1,0]]"), std::string::npos) << from_ctf;
  std::string rm = "rm -rf '" + ctf + "'";
  EXPECT_EQ(std::system(rm.c_str()), 0);
}

// For measurements (docs/REPORT.md "Critical flow"): writes a large perf script text from
// the kernel tests' scheduler simulation. KERNEL_TRACE=path, KERNEL_THREADS, KERNEL_CPUS,
// KERNEL_TICKS (1 ms each).
TEST(CriticalFlowGenerated, DISABLED_WriteLargeTrace) {
  auto env = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : fallback;
  };
  const char* out = std::getenv("KERNEL_TRACE");
  testing::Sim<PerfText> sim(7, PerfStyle::compact, PerfText(PerfStyle::compact));
  sim.run(env("KERNEL_THREADS", 200), env("KERNEL_CPUS", 16), env("KERNEL_TICKS", 5000));
  std::ofstream(out ? out : "/tmp/kernel-large.txt") << sim.p.text();
}

}  // namespace
}  // namespace snailtrail::test_report_critical_flow
