// The verdict's what-if rules (summary/verdict.hpp, docs/PAG.md §verdict): the straggler
// threshold on hand-made savings, and on inputs in the shapes real tools write: Spark
// event logs (a 2-task stage; a TPC-DS-like job with one heavy stage of uniform tasks)
// and a PyTorch-profiler-like Chrome trace where one op holds most of the critical path.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <random>
#include <string>

#include "output/names.hpp"
#include "output/verdict_text.hpp"
#include "process_util.hpp"
#include "spark_log_util.hpp"
#include "summary/summary.hpp"
#include "summary/verdict.hpp"

namespace snailtrail::test_verdict_rules {
namespace {

using testing::CommandResult;
using testing::run_binary;
using testing::TempDirTest;

WhatIf saving(WhatIfKind kind, uint32_t id, double ns, bool peer = false) {
  return WhatIf{kind, id, peer, peer ? 1.5 : 2.0, ns, 0, 0, 0, 0, 0};
}

// A straggler needs a 2x saving >= 5 % of the span, >= half the best worker-or-operator
// saving, and slowness against peers running the same operator (a peer-median row).
TEST(VerdictRules, StragglerThreshold) {
  Groups cp, conv;
  cp.worker = {0.7, 0.2, 0.1};  // the old CP-only rule would call worker 0 the straggler
  conv.worker = {0.3, 0.35, 0.35};
  cp.op = {{4, 0.3}};
  conv.op = {{4, 0.5}};
  const double span = 1000;
  // 4 % of the span: no straggler; nothing saves 5 %: the CP rules without the straggler.
  Verdict v = decide_verdict(
      cp, conv, true, {saving(WhatIfKind::worker, 0, 40), saving(WhatIfKind::worker, 0, 30, true)},
      span);
  EXPECT_NE(v.kind, VerdictKind::straggler);
  // 12 %, slower than its peers, and the operator saves 20 %: a straggler.
  std::vector<WhatIf> wi = {saving(WhatIfKind::worker, 0, 120), saving(WhatIfKind::op, 4, 200),
                            saving(WhatIfKind::worker, 0, 90, true)};
  v = decide_verdict(cp, conv, true, wi, span);
  EXPECT_EQ(v.kind, VerdictKind::straggler);
  EXPECT_EQ(v.id, 0u);
  // Less than half of the operator's saving: the operator.
  wi[0].saved_ns = 90;
  v = decide_verdict(cp, conv, true, wi, span);
  EXPECT_EQ(v.kind, VerdictKind::op);
  EXPECT_EQ(v.id, 4u);
  ASSERT_NE(v.what_if, nullptr);
  EXPECT_EQ(v.what_if->saved_ns, 200);
  // Not slower than any peer (no peer-median row): the operator, even saving less.
  wi = {saving(WhatIfKind::worker, 0, 300), saving(WhatIfKind::op, 4, 200)};
  v = decide_verdict(cp, conv, true, wi, span);
  EXPECT_EQ(v.kind, VerdictKind::op);
  // No operator saves 5 %: the worker (a thread of a capture), not a straggler.
  wi = {saving(WhatIfKind::worker, 0, 300), saving(WhatIfKind::op, 4, 20)};
  v = decide_verdict(cp, conv, true, wi, span);
  EXPECT_EQ(v.kind, VerdictKind::worker);
  EXPECT_EQ(v.id, 0u);
  // An operator with less than 40 % of the CP but the largest saving is named.
  cp.worker = {0.34, 0.33, 0.33};
  conv.worker = {0.34, 0.33, 0.33};
  wi = {saving(WhatIfKind::op, 4, 150)};
  EXPECT_EQ(decide_verdict(cp, conv, true, wi, span).kind, VerdictKind::op);
  EXPECT_EQ(decide_verdict(cp, conv, true, {}, span).kind, VerdictKind::balanced);
}

// A window idle for at least half its length with some worker waiting for its input
// (snailtrail run's open-loop jobs below capacity): the job keeps up, whatever dominates
// the short busy stretches (here the wake-up lag, scheduling); below half, that decides.
TEST(VerdictRules, IdleWaitingForInputKeepsUp) {
  Groups cp, conv;
  cp.worker = {0.5, 0.5};
  conv.worker = {0.5, 0.5};
  cp.activity[static_cast<int>(ActivityType::scheduling)] = 0.7;
  cp.activity[static_cast<int>(ActivityType::processing)] = 0.3;
  Verdict v = decide_verdict(cp, conv, true, {}, 1000, 0.6);
  EXPECT_EQ(v.kind, VerdictKind::input);
  EXPECT_DOUBLE_EQ(v.input_idle, 0.6);
  const Trace trace;
  const Pag pag;
  EXPECT_EQ(verdict_text(v, Names(trace, pag)),
            "The job keeps up with its input: every worker waited, some for input, 60.0% of "
            "the time. Next: nothing limits it at this rate; load it more to find what would.");
  v = decide_verdict(cp, conv, true, {}, 1000, 0.4);
  EXPECT_EQ(v.kind, VerdictKind::activity);
  EXPECT_EQ(v.id, static_cast<uint32_t>(ActivityType::scheduling));
  EXPECT_EQ(v.input_idle, 0.0);
}

// The share of input-bound idle time is over the part of the window the trace covers: a
// 500 ms run in a 1 s window that waited for input 480 ms of it keeps up (96 %), where
// the window's nominal length made it 48 % and the rule missed it.
TEST(VerdictRules, InputIdleShareIsOverTheCoveredPartOfTheWindow) {
  WindowSummary w;
  w.window.start = 0;
  w.window.end = 1'000'000'000;
  w.span_start = 5'000'000;
  w.span_end = 505'000'000;
  w.diagnostics.input_idle_ns = 480'000'000;
  EXPECT_DOUBLE_EQ(input_idle_share(w), 0.96);
  w.span_start = w.span_end = 0;  // no span recorded: the window's length
  EXPECT_DOUBLE_EQ(input_idle_share(w), 0.48);
}

// The sentences: a Spark stage limits the job, uniform or skewed by its tasks; threads of
// one process hand off through memory, never "check the network".
TEST(VerdictRules, StageAndHandOffSentences) {
  Trace trace;
  trace.operator_names[7] = "stage 7 (count at power.py:191)";
  trace.operator_names[3] = "flatmap";
  Pag pag;
  pag.worker_ids = {0, 1};
  const Names names(trace, pag);
  WhatIf row{WhatIfKind::op, 7, false, 2, 16.6e9, 128, 1.0e9, 1.01e9, 1.04e9, 1.05e9};
  Verdict v;
  v.kind = VerdictKind::op;
  v.id = 7;
  v.cp = 0.35;
  v.what_if = &row;
  std::string text = verdict_text(v, names);
  EXPECT_EQ(text.rfind("Spark stage 7 (count at power.py:191) limits the job: 35.0%", 0), 0u)
      << text;
  EXPECT_NE(text.find("Its 128 tasks are uniform, not skew (min / median / p95 / max: "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("DS2"), std::string::npos) << text;
  row.task_max = 4.2e9;  // one task 4.2 s against a median of 1.01 s
  text = verdict_text(v, names);
  EXPECT_NE(text.find("Its tasks are skewed: the slowest takes "), std::string::npos) << text;
  EXPECT_NE(text.find("(4.2x the median "), std::string::npos) << text;
  v.id = 3;
  row.id = 3;
  EXPECT_EQ(verdict_text(v, names).rfind("Operator flatmap is the bottleneck", 0), 0u);
  Verdict c;
  c.kind = VerdictKind::communication;
  c.cp = 0.4;
  EXPECT_NE(verdict_text(c, names).find("check the network"), std::string::npos);
  c.one_process = true;
  text = verdict_text(c, names);
  EXPECT_EQ(text.find("network"), std::string::npos) << text;
  EXPECT_NE(text.find("Hand-offs between threads"), std::string::npos) << text;
  // The pair whose messages hold the most CP is named: which queue to look at.
  c.top_pair = {1, 0};
  c.top_pair_cp = 0.25;
  text = verdict_text(c, names);
  EXPECT_NE(text.find("of the critical paths, most from " + names.worker[1] + " to " +
                      names.worker[0] + " (25.0%). In one process"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("look at the queue from " + names.worker[1] + " to " + names.worker[0]),
            std::string::npos)
      << text;
  c.one_process = false;
  text = verdict_text(c, names);
  EXPECT_NE(text.find("most from " + names.worker[1] + " to " + names.worker[0] +
                      " (25.0%). Next: co-locate"),
            std::string::npos)
      << text;
}

// ---------------------------------------------------------------------------------------
// Spark event logs as Spark 3 writes them: one job, stages one after another, every task
// with its TaskStart and TaskEnd, on executors of `cores` cores.
struct SparkJob {
  int executors = 1, cores = 2;
  std::vector<std::vector<int>> stage_tasks_ms;  // per stage, its tasks' run times
};

std::string spark_log(const SparkJob& job) {
  namespace sl = testing::spark_log;
  std::string text = "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.3.2\"}\n";
  const int64_t t0 = 1'700'000'000'000;
  for (int e = 0; e < job.executors; ++e)
    text += sl::executor_added(std::to_string(e + 1), job.cores);
  text += "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0,\"Submission Time\":" +
          std::to_string(t0) + "}\n";
  int64_t now = t0 + 5;
  int task = 0;
  const int slots = job.executors * job.cores;
  for (size_t s = 0; s < job.stage_tasks_ms.size(); ++s) {
    const std::string id = std::to_string(s);
    text += "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":" + id +
            ",\"Stage Attempt ID\":0,\"Stage Name\":\"count at /home/analyst/jobs/power.py:191\","
            "\"Number of Tasks\":" +
            std::to_string(job.stage_tasks_ms[s].size()) +
            ",\"Submission Time\":" + std::to_string(now) + "}}\n";
    std::vector<int64_t> free(static_cast<size_t>(slots), now + 1);
    std::vector<std::pair<int64_t, std::string>> lines;
    int64_t last = now;
    for (int run : job.stage_tasks_ms[s]) {
      auto it = std::min_element(free.begin(), free.end());
      const auto slot = static_cast<int>(it - free.begin());
      const std::string exec = std::to_string(slot / job.cores + 1);
      const int64_t launch = *it, finish = launch + 2 + run + 1;
      lines.emplace_back(2 * launch + 1, sl::task_start(static_cast<int>(s), task, exec, launch));
      lines.emplace_back(2 * finish, sl::task_end(static_cast<int>(s), task, exec, launch, finish,
                                                  sl::metrics(2, run, 1)));
      *it = finish + 1;
      last = std::max(last, finish);
      ++task;
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [t, line] : lines) text += line;
    text += "{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":" + id +
            ",\"Stage Attempt ID\":0,\"Submission Time\":" + std::to_string(now) +
            ",\"Completion Time\":" + std::to_string(last + 1) + "}}\n";
    now = last + 3;
  }
  text +=
      "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0,\"Completion Time\":" + std::to_string(now) +
      "}\n";
  return text;
}

class VerdictInputs : public TempDirTest {
 protected:
  VerdictInputs() : TempDirTest("verdict-rules") {}
  // The run's line ({"run":…,"verdict":…,"what_if":[…]}) of `analyze --what-if -f jsonl`
  // on a file holding `text`.
  simdjson::dom::element analyze(const std::string& name, const std::string& text,
                                 const std::string& options = "--window whole") {
    const std::string file = path(name).string();
    std::ofstream(file) << text;
    const CommandResult r =
        run_binary("analyze " + file + " --what-if " + options + " -f jsonl --no-progress");
    EXPECT_EQ(r.code, 0) << r.out;
    all_ = r.out;
    const size_t at = r.out.find("{\"run\":");
    out_ = at == std::string::npos ? "{}" : r.out.substr(at, r.out.find('\n', at) - at);
    return parser_.parse(out_).value();
  }
  std::string all_;
  std::string out_;
  simdjson::dom::parser parser_;
};

// The saving of the what-if row of `kind` named `name` (2x), or -1.
double row_saving(simdjson::dom::element doc, const std::string& kind, const std::string& name) {
  simdjson::dom::array rows;
  if (doc["what_if"].get(rows) != simdjson::SUCCESS) return -1;
  for (simdjson::dom::element x : rows) {
    if (std::string(x["kind"].get_string().value()) != kind) continue;
    if (std::string(x["name"].get_string().value()) != name) continue;
    if (std::string(x["basis"].get_string().value()) != "factor") continue;
    return x["saved_ns"].get_double().value();
  }
  return -1;
}

// A stage of 4 short tasks, then a 2-task stage (846 ms and 864 ms) on 2 slots: the 2-task
// stage limits the job (twice as fast it saves ~430 ms of ~1.4 s); no slot is a straggler
// (two slots are no peer group, and a slot 2x faster saves 18 ms).
TEST_F(VerdictInputs, SparkTwoTaskStageIsTheStageNotASlot) {
  SparkJob job;
  job.stage_tasks_ms = {{120, 125, 118, 122}, {846, 864}};
  const auto doc = analyze("two-task-stage.log", spark_log(job));
  const auto v = doc["verdict"];
  const std::string kind(v["kind"].get_string().value());
  const std::string name(v["name"].get_string().value());
  const std::string text(v["text"].get_string().value());
  EXPECT_EQ(kind, "operator") << text;
  EXPECT_EQ(name, "stage 1 (count at power.py:191)") << text;
  EXPECT_EQ(text.find("straggler"), std::string::npos) << text;
  EXPECT_NE(text.find("limits the job"), std::string::npos) << text;
  const double stage = row_saving(doc, "operator", name);
  EXPECT_NEAR(stage, 432e6, 0.05 * 432e6) << out_;
  EXPECT_NE(text.find("Twice as fast, it would shorten the critical path by 4"), std::string::npos)
      << text;
}

// A TPC-DS-like job: 20 stages on 8 executors of 4 cores; stage 7 runs 128 tasks of about
// 1 s (uniform), about a third of the job. The verdict names that stage as heavy, not
// skewed, with its task distribution; not "nothing stands out", not a slot.
TEST_F(VerdictInputs, SparkHeavyUniformStageIsNamed) {
  std::mt19937_64 rng(35);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SparkJob job;
  job.executors = 8;
  job.cores = 4;
  for (int s = 0; s < 20; ++s) {
    std::vector<int> tasks;
    if (s == 7) {
      for (int k = 0; k < 128; ++k) tasks.push_back(uni(985, 1015));
    } else {
      const int n = uni(8, 64);
      const int base = uni(150, 300);
      for (int k = 0; k < n; ++k) tasks.push_back(base + uni(-20, 20));
    }
    job.stage_tasks_ms.push_back(tasks);
  }
  const auto doc = analyze("tpcds.log", spark_log(job));
  const auto v = doc["verdict"];
  const std::string text(v["text"].get_string().value());
  EXPECT_EQ(std::string(v["kind"].get_string().value()), "operator") << text;
  EXPECT_EQ(std::string(v["name"].get_string().value()), "stage 7 (count at power.py:191)") << text;
  EXPECT_NE(text.find("limits the job"), std::string::npos) << text;
  EXPECT_NE(text.find("128 tasks are uniform, not skew (min / median / p95 / max: "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Nothing stands out"), std::string::npos) << text;
  // Its 2x saving: about half of its 4 rounds of 1 s.
  const double stage = row_saving(doc, "operator", "stage 7 (count at power.py:191)");
  EXPECT_NEAR(stage, 2.0e9, 0.1e9) << out_;
}

// A PyTorch-profiler-like capture: the main thread runs 10 iterations of four ops with
// small gaps; aten::conv2d is 59 % of them. A helper thread has a few slices, the last
// near the end. The verdict names aten::conv2d, with its own what-if row: twice as fast it
// saves half of its time (the serial property), and no row compares unrelated threads.
// Needs the helper thread's gap between its two slices to be idle (`waiting`): as
// `unknown` it held 47 % of CP and capped the op's saving at 2.5 % (verdict balanced).
TEST_F(VerdictInputs, ProfilerCaptureNamesTheHeavyOp) {
  std::string events;
  auto slice = [&](const char* name, int tid, int64_t ts, int64_t dur) {
    events += std::string(events.empty() ? "" : ",\n") + "{\"name\":\"" + name +
              "\",\"cat\":\"cpu_op\",\"ph\":\"X\",\"pid\":7,\"tid\":" + std::to_string(tid) +
              ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) + ",\"args\":{}}";
  };
  int64_t t = 1000;
  for (int i = 0; i < 10; ++i) {
    slice("aten::conv2d", 1, t, 590);
    slice("aten::relu", 1, t + 595, 100);
    slice("aten::add", 1, t + 700, 150);
    slice("aten::copy_", 1, t + 855, 145);
    t += 1010;
  }
  slice("pt_autograd_worker", 2, 1500, 40);
  slice("pt_autograd_worker", 2, t - 60, 50);
  const std::string text =
      "{\"traceEvents\":[\n" + events + "\n],\"displayTimeUnit\":\"ms\",\"deviceProperties\":[]}\n";
  const auto doc = analyze("profile.pt.trace.json", text);
  const auto v = doc["verdict"];
  const std::string said(v["text"].get_string().value());
  EXPECT_EQ(std::string(v["kind"].get_string().value()), "operator") << said << all_;
  EXPECT_EQ(std::string(v["name"].get_string().value()), "aten::conv2d") << said;
  const double conv = row_saving(doc, "operator", "aten::conv2d");
  EXPECT_NEAR(conv, 0.5 * 5900e3, 1e3) << out_;
  EXPECT_EQ(out_.find("peer_median"), std::string::npos) << out_;
  EXPECT_EQ(said.find("DS2"), std::string::npos) << said;
}

}  // namespace
}  // namespace snailtrail::test_verdict_rules
