// Windows cut into segments (docs/PAG.md §4) on Chrome traces shaped like the ones real
// tools write: threads that start late, end early or sleep, a whole-process idle instant
// in a long PyTorch-profiler-like trace, and the profiler's own envelope slice. CP values
// are computed by hand in the comments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "importers/chrome/chrome_importer.hpp"
#include "output/names.hpp"
#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_segments {
namespace {

// Complete slice `name` of pid 1, thread `tid`, [ts, ts + dur] in microseconds.
std::string slice(const char* name, int64_t ts, int64_t dur, int tid) {
  return fmt::format(R"j({{"ph":"X","cat":"op","name":"{}","ts":{},"dur":{},"pid":1,"tid":{}}},)j",
                     name, ts, dur, tid);
}

std::string thread_names() {
  return R"j({"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"app"}},)j"
         R"j({"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"early"}},)j"
         R"j({"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"late"}},)j"
         R"j({"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"main"}},)j";
}

std::string document(std::string events) {
  events.pop_back();  // the last comma
  return R"j({"traceEvents":[)j" + events + "]}";
}

struct Result {
  std::vector<WindowSummary> windows;
  std::map<std::string, double> worker_cp;  // of the last window, by worker name
  Trace trace;
};

Result analyze(const std::string& json, int64_t window_ns, bool segments = true) {
  Result r;
  r.trace = importers::parse_chrome(json, "fixture.json");
  const Pag pag = build_pag(r.trace);
  const Names names(r.trace, pag);
  AnalysisOptions opt;
  opt.segments = segments;
  opt.windows.width_ns = window_ns;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    r.windows.push_back(v.summary);
    r.worker_cp.clear();
    for (size_t w = 0; w < v.summary.cp.worker.size(); ++w)
      r.worker_cp[names.worker[w]] = v.summary.cp.worker[w];
  });
  return r;
}

// Thread "early" runs [0, 50 ms], thread "late" [40, 100 ms], nothing links them.
TEST(Segments, ThreadsThatStartLateAndEndEarlyShareTheCp) {
  const std::string json =
      document(thread_names() + slice("load", 0, 50'000, 1) + slice("render", 40'000, 60'000, 2));
  // The thesis' single span: no path from the only node at 0 to the only node at 100.
  const Result thesis = analyze(json, 0, false);
  ASSERT_EQ(thesis.windows.size(), 1u);
  EXPECT_TRUE(thesis.windows[0].diagnostics.no_paths);

  // "late" starts with no message arriving: a border at 40. Segments [0, 40] (early
  // alone) and [40, 100], whose only path is late's ("early" stops at 50 with nothing
  // after it: a dead end, as in the thesis).
  const Result r = analyze(json, 0);
  ASSERT_EQ(r.windows.size(), 1u);
  const WindowSummary& w = r.windows[0];
  EXPECT_FALSE(w.diagnostics.no_paths);
  EXPECT_EQ(w.diagnostics.segments, 2u);
  EXPECT_EQ(w.diagnostics.no_path_segments, 0u);
  EXPECT_EQ(w.diagnostics.property2_violations, 0u);
  EXPECT_EQ(w.diagnostics.property1_violations, 0u);
  EXPECT_EQ(w.cp_ns, 100'000'000);
  EXPECT_NEAR(r.worker_cp.at("app/early"), 40 / 100.0, 1e-12);
  EXPECT_NEAR(r.worker_cp.at("app/late"), 60 / 100.0, 1e-12);
  // "load" runs across the border at 40: still one top activity.
  ASSERT_EQ(w.top.size(), 2u);
  EXPECT_EQ(w.top[1].start, 0);
  EXPECT_EQ(w.top[1].end, 50'000'000);
  EXPECT_NEAR(w.top[1].cp, 0.4, 1e-12);
}

// "main" runs [0, 100 ms] but sleeps [40, 70]; "early" ends at 30; "late" starts at 60.
// Idle (everyone waits, nothing in flight): [40, 60]. Borders: 60 (late starts, no message
// arrives), 70 (main's sleep ends, no message arrives). Segments: [0, 40] (one path: main;
// early stops at 30, a dead end), [60, 70] (late; main sleeps), [70, 100] (main + late,
// one path each). T = 80 ms: main (40 + 15) / 80, late (10 + 15) / 80, early 0.
TEST(Segments, ASleepingThreadAndAnIdleInstant) {
  const std::string json =
      document(thread_names() + slice("parse", 0, 30'000, 1) + slice("step", 0, 40'000, 3) +
               slice("sleep", 40'000, 30'000, 3) + slice("step", 70'000, 30'000, 3) +
               slice("paint", 60'000, 40'000, 2));
  const Result thesis = analyze(json, 0, false);
  EXPECT_TRUE(thesis.windows.at(0).diagnostics.no_paths);
  EXPECT_EQ(thesis.windows.at(0).diagnostics.property2_violations, 1u);

  const Result r = analyze(json, 0);
  const WindowSummary& w = r.windows.at(0);
  EXPECT_FALSE(w.diagnostics.no_paths);
  EXPECT_EQ(w.diagnostics.property2_violations, 1u);
  EXPECT_EQ(w.diagnostics.property2_ns, 20'000'000);
  EXPECT_EQ(w.diagnostics.segments, 3u);
  EXPECT_EQ(w.cp_ns, 80'000'000);
  EXPECT_NEAR(r.worker_cp.at("app/main"), 55 / 80.0, 1e-12);
  EXPECT_NEAR(r.worker_cp.at("app/late"), 25 / 80.0, 1e-12);
  EXPECT_NEAR(r.worker_cp.at("app/early"), 0.0, 1e-12);
  // The conventional profile still covers the whole window, idle interval included:
  // 30 ms of waiting in 170 ms of timelines, as with the thesis' single span.
  EXPECT_NEAR(w.diagnostics.waiting_share, 30.0 / 170, 1e-12);
  EXPECT_NEAR(w.conventional.activity[static_cast<int>(ActivityType::waiting)], 30.0 / 170, 1e-12);
  EXPECT_EQ(w.diagnostics.waiting_share, thesis.windows.at(0).diagnostics.waiting_share);
  double total = 0;
  for (double v : w.cp.activity) total += v;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

// Idle time while some worker waits for its input (a `waiting` edge of a source operator,
// as `snailtrail run` records it) is the job keeping up (input_idle_ns), not a Property 2
// violation; idle time no input wait covers is one. Times in ms:
//   worker 0: processing [0, 10], waits for input [10, 30], waits [30, 40], processing
//             [40, 50], waits [50, 60], processing [60, 70]
//   worker 1: processing [0, 20], waits [20, 60], processing [60, 70]
// Idle: [20, 40] (input covers [20, 30]) and [50, 60]: 10 ms input-bound, 2 violating
// intervals of 10 ms each; the CP is spread over the 50 ms that are not idle.
TEST(Segments, WaitsForInputAreTheJobKeepingUp) {
  constexpr auto P = ActivityType::processing;
  constexpr auto W = ActivityType::waiting;
  constexpr int64_t ms = 1'000'000;
  constexpr uint32_t source = 0, count = 1;
  testing::TraceBuilder b;
  b.activity(0, P, 0, 10 * ms, count)
      .activity(0, W, 10 * ms, 30 * ms, source)
      .activity(0, W, 30 * ms, 40 * ms)
      .activity(0, P, 40 * ms, 50 * ms, count)
      .activity(0, W, 50 * ms, 60 * ms)
      .activity(0, P, 60 * ms, 70 * ms, count)
      .activity(1, P, 0, 20 * ms, count)
      .activity(1, W, 20 * ms, 60 * ms)
      .activity(1, P, 60 * ms, 70 * ms, count);
  const Pag pag = build_pag(b.build());
  AnalysisOptions opt;
  std::vector<WindowSummary> windows;
  analyze_pag(pag, opt, [&](const WindowView& v) { windows.push_back(v.summary); });
  ASSERT_EQ(windows.size(), 1u);
  const Diagnostics& d = windows[0].diagnostics;
  EXPECT_EQ(d.input_idle_ns, 10 * ms);
  EXPECT_EQ(d.property2_violations, 2u);
  EXPECT_EQ(d.property2_ns, 20 * ms);
  EXPECT_EQ(windows[0].cp_ns, 40 * ms);

  // Waiting for input through both idle intervals: no violation at all.
  testing::TraceBuilder all;
  all.activity(0, P, 0, 10 * ms, count)
      .activity(0, W, 10 * ms, 40 * ms, source)
      .activity(0, P, 40 * ms, 50 * ms, count)
      .activity(0, W, 50 * ms, 60 * ms, source)
      .activity(0, P, 60 * ms, 70 * ms, count)
      .activity(1, P, 0, 20 * ms, count)
      .activity(1, W, 20 * ms, 60 * ms)
      .activity(1, P, 60 * ms, 70 * ms, count);
  const Pag pag2 = build_pag(all.build());
  windows.clear();
  analyze_pag(pag2, opt, [&](const WindowView& v) { windows.push_back(v.summary); });
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].diagnostics.input_idle_ns, 30 * ms);
  EXPECT_EQ(windows[0].diagnostics.property2_violations, 0u);
  EXPECT_EQ(windows[0].diagnostics.property2_ns, 0);
  EXPECT_EQ(windows[0].cp_ns, 40 * ms);
  EXPECT_NEAR(input_idle_share(windows[0]), 30.0 / 70, 1e-12);
}

// A PyTorch profiler trace of 41 steps of 1 s: the CPU thread runs aten::mm for 600 ms,
// launches a kernel (flow ac2g) and waits in cudaStreamSynchronize until the step ends;
// the kernel runs from 610 ms to the step's end, except in step 20 where it ends 22 ms
// early: the whole process is idle for 22 ms. The profiler's envelope slice spans all.
std::string pytorch_trace() {
  std::string ev =
      R"j({"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python"}},)j"
      R"j({"ph":"M","name":"thread_name","pid":100,"tid":100,"args":{"name":"main"}},)j"
      R"j({"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}},)j"
      R"j({"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}},)j"
      R"j({"ph":"X","cat":"Trace","ts":0,"dur":41000000,"pid":"Spans","tid":"PyTorch Profiler",)j"
      R"j("name":"PyTorch Profiler (0)","args":{"Op count":0}},)j"
      R"j({"name":"process_sort_index","ph":"M","ts":0,"pid":"Spans","tid":0,"args":{"sort_index":1}},)j"
      R"j({"name":"Iteration Start: PyTorch Profiler","ph":"i","s":"g","pid":"Traces","tid":"x","ts":0},)j";
  for (int64_t step = 0; step < 41; ++step) {
    const int64_t t = step * 1'000'000;
    const int64_t kernel_end = step == 20 ? 978'000 : 1'000'000;
    ev += fmt::format(
        R"j({{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":{},"dur":600000,"pid":100,"tid":100}},)j"
        R"j({{"ph":"s","cat":"ac2g","name":"ac2g","id":{},"ts":{},"pid":100,"tid":100}},)j"
        R"j({{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize wait","ts":{},"dur":400000,"pid":100,"tid":100}},)j"
        R"j({{"ph":"f","cat":"ac2g","name":"ac2g","id":{},"ts":{},"bp":"e","pid":0,"tid":7}},)j"
        R"j({{"ph":"X","cat":"kernel","name":"gemm","ts":{},"dur":{},"pid":0,"tid":7}},)j",
        t, step, t + 600'000, t + 600'000, step, t + 610'000, t + 610'000, kernel_end - 610'000);
  }
  return document(ev);
}

TEST(Segments, PyTorchTraceWithA22msIdleInstantKeepsItsCp) {
  const std::string json = pytorch_trace();
  const Result thesis = analyze(json, 0, false);
  EXPECT_TRUE(thesis.windows.at(0).diagnostics.no_paths);

  const Result r = analyze(json, 0);
  // The envelope is no activity: no worker for it, counted.
  EXPECT_EQ(r.worker_cp.count("pid Spans/tid PyTorch Profiler"), 0u);
  std::set<uint32_t> workers;
  for (const Event& e : r.trace.events) workers.insert(e.worker);
  EXPECT_EQ(workers.size(), 2u);
  uint64_t envelopes = 0;
  for (const auto& [k, n] : r.trace.import_diagnostics)
    if (k == "chrome.envelope_events") envelopes = n;
  EXPECT_EQ(envelopes, 1u);

  // Per step: aten::mm 600 ms, the launch message 10 ms, the kernel 390 ms (368 in step
  // 20); the 22 ms idle carry no CP. T = 41 s - 22 ms.
  const WindowSummary& w = r.windows.at(0);
  const double T = 41'000 - 22;
  EXPECT_FALSE(w.diagnostics.no_paths);
  EXPECT_EQ(w.diagnostics.property2_violations, 1u);
  EXPECT_EQ(w.diagnostics.property2_ns, 22'000'000);
  EXPECT_EQ(w.diagnostics.no_path_segments, 0u);
  EXPECT_NEAR(r.worker_cp.at("python/main"), 41 * 600 / T, 1e-12);
  EXPECT_NEAR(r.worker_cp.at("GPU 0/stream 7"), (40 * 390 + 368) / T, 1e-12);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(ActivityType::data_message)], 41 * 10 / T, 1e-12);

  // Windowed: every 1 s window has CP; the one with the idle instant spreads it over
  // 978 ms and counts one Property 2 violation.
  const Result win = analyze(json, 1'000'000'000);
  ASSERT_EQ(win.windows.size(), 41u);
  for (const WindowSummary& x : win.windows) {
    SCOPED_TRACE(x.index);
    EXPECT_FALSE(x.diagnostics.no_paths);
    EXPECT_EQ(x.diagnostics.property2_violations, x.index == 20 ? 1u : 0u);
    EXPECT_EQ(x.cp_ns, x.index == 20 ? 978'000'000 : 1'000'000'000);
  }
}

TEST(Segments, ChromeEnvelopeAndTracingMetadataSlicesAreSkipped) {
  const std::string json = document(
      thread_names() + slice("work", 0, 100, 1) +
      R"j({"ph":"X","cat":"__metadata","name":"thread_name","ts":0,"dur":100,"pid":1,"tid":1},)j"
      R"j({"ph":"X","cat":"disabled-by-default-devtools.timeline","name":"TracingStartedInBrowser","ts":0,"dur":100,"pid":1,"tid":2},)j"
      R"j({"ph":"B","cat":"Trace","name":"PyTorch Profiler (1)","ts":0,"pid":"Spans","tid":"t"},)j"
      R"j({"ph":"E","cat":"Trace","name":"PyTorch Profiler (1)","ts":100,"pid":"Spans","tid":"t"
},)j"
      R"j({"ph":"I","name":"TracingStartedInPage","ts":0,"pid":1,"tid":1},)j");
  const Trace t = importers::parse_chrome(json, "fixture.json");
  std::map<std::string, uint64_t> diag(t.import_diagnostics.begin(), t.import_diagnostics.end());
  EXPECT_EQ(diag["chrome.envelope_events"], 4u);
  EXPECT_EQ(diag["chrome.ignored_events"], 1u);
  EXPECT_EQ(diag.count("chrome.unmatched_ends"), 0u);
  EXPECT_EQ(t.events.size(), 2u);  // start and end of "work"
}

}  // namespace
}  // namespace snailtrail::test_segments
