// Acceptance items of issue #6 that cut across the importers: a Spark driver that is the
// bottleneck shows up as the critical worker (thesis Fig. 3.1/3.8), and every JSON
// importer (spark, chrome, otlp, jaeger) ignores unknown fields, names the line or byte
// of a malformed record, and handles a file cut off inside a record.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "summary/analysis.hpp"

namespace test_import_acceptance {

namespace {

using namespace snailtrail;
namespace fs = std::filesystem;
namespace spark = snailtrail::importers::spark;
using A = ActivityType;

fs::path temp_path(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-acceptance-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void write_text(const fs::path& p, std::string_view s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

std::string run(const std::string& args) {
  const std::string cmd = std::string(SNAILTRAIL_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

uint64_t diagnostic(const Trace& t, const std::string& name) {
  for (const auto& [k, v] : t.import_diagnostics)
    if (k == name) return v;
  return 0;
}

// One whole-trace window, as `analyze --window whole` computes it.
struct Analyzed {
  WindowSummary summary;
  std::vector<uint32_t> worker_ids;  // dense index -> worker id
};

Analyzed analyze_whole(const Trace& t) {
  const Pag pag = build_pag(t);
  AnalysisOptions opt;  // width 0: one window over the whole trace
  std::vector<WindowSummary> windows;
  analyze_pag(pag, opt, [&](const WindowView& v) { windows.push_back(v.summary); });
  EXPECT_EQ(windows.size(), 1u);
  return {windows.empty() ? WindowSummary{} : windows[0], pag.worker_ids};
}

double worker_cp(const Analyzed& a, uint32_t worker_id) {
  for (size_t i = 0; i < a.worker_ids.size(); ++i)
    if (a.worker_ids[i] == worker_id) return a.summary.cp.worker[i];
  return -1;
}

// The worker id with the largest CP (ties: the lowest id).
uint32_t top_worker(const Analyzed& a) {
  size_t best = 0;
  for (size_t i = 1; i < a.worker_ids.size(); ++i)
    if (a.summary.cp.worker[i] > a.summary.cp.worker[best]) best = i;
  return a.worker_ids[best];
}

// Activity types ordered by CP, largest first.
std::vector<A> types_by_cp(const Groups& g) {
  std::vector<A> types;
  for (int i = 0; i < kActivityTypeCount; ++i) types.push_back(static_cast<A>(i));
  std::stable_sort(types.begin(), types.end(), [&](A x, A y) {
    return g.activity[static_cast<int>(x)] > g.activity[static_cast<int>(y)];
  });
  return types;
}

double of(const Groups& g, A type) {
  return g.activity[static_cast<int>(type)];
}

// Two traces are the same import: same events in the same order, names, diagnostics.
void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    ASSERT_TRUE(x.ts == y.ts && x.worker == y.worker && x.kind == y.kind &&
                x.activity == y.activity && x.flags == y.flags &&
                (!x.has(kHasRemote) || x.remote == y.remote) &&
                (!x.has(kHasOperator) || x.op == y.op) &&
                (!x.has(kHasCorrelator) || x.correlator == y.correlator))
        << "event " << i;
  }
  EXPECT_EQ(a.worker_names, b.worker_names);
  EXPECT_EQ(a.operator_names, b.operator_names);
  EXPECT_EQ(a.import_diagnostics, b.import_diagnostics);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------------------------------
// Spark event log lines (times in ms since the epoch, as Spark writes them).

constexpr int64_t kT = 1'700'000'000'000;  // ms

std::string executor_added(int id, int cores) {
  return "{\"Event\":\"SparkListenerExecutorAdded\",\"Timestamp\":" + std::to_string(kT) +
         ",\"Executor ID\":\"" + std::to_string(id) + "\",\"Executor Info\":{\"Host\":\"h" +
         std::to_string(id) + "\",\"Total Cores\":" + std::to_string(cores) +
         ",\"Log Urls\":{}}}\n";
}
std::string job_start(int job, int64_t t) {
  return "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":" + std::to_string(job) +
         ",\"Submission Time\":" + std::to_string(t) + ",\"Stage IDs\":[" + std::to_string(job) +
         "]}\n";
}
std::string job_end(int job, int64_t t) {
  return "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":" + std::to_string(job) +
         ",\"Completion Time\":" + std::to_string(t) +
         ",\"Job Result\":{\"Result\":\"JobSucceeded\"}}\n";
}
std::string stage(bool completed, int id, int64_t submitted, int64_t completion) {
  return std::string("{\"Event\":\"SparkListenerStage") + (completed ? "Completed" : "Submitted") +
         "\",\"Stage Info\":{\"Stage ID\":" + std::to_string(id) +
         ",\"Stage Attempt ID\":0,\"Stage Name\":\"map\",\"Number of Tasks\":1,"
         "\"Submission Time\":" +
         std::to_string(submitted) +
         (completed ? ",\"Completion Time\":" + std::to_string(completion) : std::string()) +
         "}}\n";
}
// `extra` is spliced into the event, its Task Info and its Task Metrics (unknown fields).
std::string task_end(int stage_id, int task, int executor, int64_t launch, int64_t finish,
                     int deser, int run, int ser, int gc, std::string_view extra = {}) {
  const std::string x(extra);
  return "{\"Event\":\"SparkListenerTaskEnd\"" + x + ",\"Stage ID\":" + std::to_string(stage_id) +
         ",\"Stage Attempt ID\":0,\"Task Type\":\"ResultTask\",\"Task End Reason\":{\"Reason\":"
         "\"Success\"},\"Task Info\":{\"Task ID\":" +
         std::to_string(task) + x + ",\"Index\":" + std::to_string(task) +
         ",\"Attempt\":0,\"Launch Time\":" + std::to_string(launch) + ",\"Executor ID\":\"" +
         std::to_string(executor) +
         "\",\"Host\":\"h\",\"Locality\":\"PROCESS_LOCAL\",\"Speculative\":false,"
         "\"Getting Result Time\":0,\"Finish Time\":" +
         std::to_string(finish) +
         ",\"Failed\":false,\"Killed\":false,\"Accumulables\":[]},\"Task Metrics\":{"
         "\"Executor Deserialize Time\":" +
         std::to_string(deser) + ",\"Executor Deserialize CPU Time\":100000" + x +
         ",\"Executor Run Time\":" + std::to_string(run) +
         ",\"Executor CPU Time\":1000000,\"Result Size\":1500,\"JVM GC Time\":" +
         std::to_string(gc) + ",\"Result Serialization Time\":" + std::to_string(ser) +
         ",\"Memory Bytes Spilled\":0,\"Disk Bytes Spilled\":0}}\n";
}

// One job of one stage of `tasks` tasks on 4 executors of 2 cores, tasks round-robin
// over the executors. Task i is launched at kT + period*i + first and finishes `length`
// ms later; its executor reports deserialization 0, run `run`, serialization 0. The stage
// completes (and the job ends) 1 ms after the last result.
std::string one_stage_log(int tasks, int64_t first, int64_t period, int64_t length, int run) {
  std::string log;
  for (int e = 1; e <= 4; ++e) log += executor_added(e, 2);
  log += job_start(0, kT) + stage(false, 0, kT, 0);
  int64_t last = kT;
  for (int i = 0; i < tasks; ++i) {
    const int64_t launch = kT + first + period * i;
    last = launch + length;
    log += task_end(0, i, i % 4 + 1, launch, last, 0, run, 0, 0);
  }
  return log + stage(true, 0, kT, last + 1) + job_end(0, last + 1);
}

// ---------------------------------------------------------------------------------------
// The driver as the bottleneck (thesis Fig. 3.1/3.8): many tiny tasks, each 3 ms from
// launch to result, but the driver launches only one every 8 ms. Hand computation with
// N = 400 tasks, times in ms after kT:
//   driver: scheduling 0-5 (job and stage open, no task out), then for every task i:
//     waiting L_i..L_i+3 (a task out, the next instant is its result), scheduling
//     L_i+3..L_i+8 (nothing out until the next launch); after the last result at 8N,
//     barrier_processing 8N..8N+1 (stage completion).
//   task i: scheduler delay = 3 - (0 + 2 + 0) = 1 ms, split 1:2: launch message 1/3 ms,
//     processing 2 ms on the slot, result message 2/3 ms.
// A path cannot take the driver's waiting edges nor a slot's waiting between tasks, so
// there is exactly one transient path: scheduling 5 | launch | processing | result |
// scheduling 5 | ... | barrier 1, of length 8N + 1 = 3201 ms. CP: scheduling 5N/3201,
// processing 2N/3201, control_message N/3201, barrier 1/3201; the driver worker
// (scheduling + barrier) 2001/3201 = 62.5%; each of the 4 slots used 200/3201 = 6.2%.
// Conventional profile (all edges, messages included): driver 8N+1; the slot of
// executor k runs tasks k, k+4, ..., from L_k + 1/3 to L_k + 32*99 + 3 - 2/3, i.e.
// 3170 ms each; messages N * 1 ms; total 3201 + 4*3170 + 400 = 16281 ms, of which
// scheduling is 2000 ms = 12.3%.
constexpr int kTinyTasks = 400;

TEST(ImportAcceptance, SparkDriverBottleneckIsTheCriticalWorker) {
  const Trace t = spark::parse_event_log(one_stage_log(kTinyTasks, 5, 8, 3, 2), "driver-bound");
  EXPECT_TRUE(t.import_diagnostics.empty());
  ASSERT_EQ(t.worker_name(0), "driver");
  const Analyzed a = analyze_whole(t);
  const WindowSummary& w = a.summary;
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);  // one path
  const double n = kTinyTasks, total = 8 * n + 1;
  EXPECT_NEAR(of(w.cp, A::scheduling), 5 * n / total, 1e-9);
  EXPECT_NEAR(of(w.cp, A::processing), 2 * n / total, 1e-9);
  EXPECT_NEAR(of(w.cp, A::control_message), n / total, 1e-9);
  EXPECT_NEAR(of(w.cp, A::barrier_processing), 1 / total, 1e-9);
  EXPECT_EQ(of(w.cp, A::waiting), 0.0);
  EXPECT_EQ(types_by_cp(w.cp).front(), A::scheduling);
  EXPECT_EQ(top_worker(a), 0u);
  EXPECT_NEAR(worker_cp(a, 0), (5 * n + 1) / total, 1e-9);
  for (uint32_t slot = 1; slot < a.worker_ids.size(); ++slot)
    EXPECT_NEAR(worker_cp(a, a.worker_ids[slot]), 2 * n / 4 / total, 1e-9);
  EXPECT_EQ(a.worker_ids.size(), 5u);  // the driver and slot 0 of each executor
  // Conventional profiling sees a driver that is mostly idle among idle slots.
  EXPECT_NEAR(of(w.conventional, A::scheduling), 5 * n / 16281, 1e-9);
  EXPECT_GT(of(w.cp, A::scheduling), 5 * of(w.conventional, A::scheduling));
  for (uint64_t k : w.diagnostics.issues) EXPECT_EQ(k, 0u);
}

// The contrast: the same driver (a launch every 8 ms) in front of tasks of 60 ms (run 58,
// scheduler delay 2: launch message 2/3 ms, result 4/3 ms), so that 8 run at once, two
// per executor, one per core. Times in ms after kT; L_i = 5 + 8i, results at L_i + 60 =
// 8(i+8) + 1. The driver schedules from 0 to the first result at 65 (tasks out, the next
// instant a launch), then every 8 ms: result at 8m+1, scheduling to the launch at 8m+5,
// waiting to the next result. A path that reaches the driver by a result continues with
// a launch 4 ms later, so the chains are tasks i, i+8, i+16, ...; after the last launch
// the driver only waits, so only the chain of the last task (399: tasks 7, 15, ..., 399,
// 50 tasks, all on exec 4 slot 1) reaches the end. One path, of length 8*399 + 65 + 1 =
// 3258 ms: scheduling 0-61 and 49 times 4 ms (257), 50 tasks of launch 2/3 + processing
// 58 + result 4/3 ms, barrier 1. CP: processing 2900/3258 = 89%, scheduling 257/3258 =
// 7.9%, control messages 100/3258; the driver 258/3258, the slot 2900/3258.
TEST(ImportAcceptance, SparkLongTasksKeepTheDriverOffThePath) {
  const Trace t = spark::parse_event_log(one_stage_log(kTinyTasks, 5, 8, 60, 58), "task-bound");
  EXPECT_TRUE(t.import_diagnostics.empty());  // never more tasks than cores
  const Analyzed a = analyze_whole(t);
  const WindowSummary& w = a.summary;
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);
  EXPECT_EQ(a.worker_ids.size(), 9u);  // the driver and both slots of every executor
  EXPECT_NEAR(of(w.cp, A::processing), 2900.0 / 3258, 1e-9);
  EXPECT_NEAR(of(w.cp, A::scheduling), 257.0 / 3258, 1e-9);
  EXPECT_NEAR(of(w.cp, A::control_message), 100.0 / 3258, 1e-9);
  EXPECT_NEAR(of(w.cp, A::barrier_processing), 1.0 / 3258, 1e-9);
  EXPECT_EQ(types_by_cp(w.cp).front(), A::processing);
  EXPECT_EQ(t.worker_name(top_worker(a)), "exec 4 slot 1");
  EXPECT_NEAR(worker_cp(a, top_worker(a)), 2900.0 / 3258, 1e-9);
  EXPECT_NEAR(worker_cp(a, 0), 258.0 / 3258, 1e-9);
  for (uint64_t k : w.diagnostics.issues) EXPECT_EQ(k, 0u);
}

// The same through the command line: `analyze` detects the log by content and lists the
// driver first among workers and scheduling first among activity types.
TEST(ImportAcceptance, SparkDriverBottleneckThroughAnalyze) {
  const fs::path log = temp_path("app-driver-bound");
  write_text(log, one_stage_log(kTinyTasks, 5, 8, 3, 2));
  const std::string out =
      run("analyze " + log.string() + " --window whole --format jsonl --summary activity,worker");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  // The window's line (the run's follows).
  ASSERT_EQ(parser.parse(out.substr(0, out.find('\n'))).get(doc), simdjson::SUCCESS) << out;
  double scheduling = -1, driver = -1;
  ASSERT_EQ(doc["activity"]["scheduling"].get_double().get(scheduling), simdjson::SUCCESS);
  ASSERT_EQ(doc["worker"]["driver"].get_double().get(driver), simdjson::SUCCESS);
  EXPECT_NEAR(scheduling, 2000.0 / 3201, 1e-12);
  EXPECT_NEAR(driver, 2001.0 / 3201, 1e-12);
}

// ---------------------------------------------------------------------------------------
// Unknown fields, malformed and truncated records: Spark.

// A small log whose TaskEnd events carry `extra` in the event, Task Info and Task Metrics,
// plus events of types the importer does not know.
std::string spark_log(std::string_view extra, bool unknown_events) {
  std::string log = executor_added(1, 2);
  if (unknown_events)
    log +=
        "{\"Event\":\"SparkListenerBlockManagerAdded\",\"Block Manager ID\":{\"Executor ID\":"
        "\"1\"},\"Maximum Memory\":1}\n"
        "{\"Event\":\"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart\","
        "\"executionId\":0,\"physicalPlanDescription\":\"== Plan ==\"}\n"
        "{\"Event\":\"SparkListenerSomethingNew\",\"Payload\":[1,{\"a\":null},\"x\"]}\n";
  log += job_start(0, kT) + stage(false, 0, kT, 0);
  log += task_end(0, 0, 1, kT + 2, kT + 30, 1, 25, 1, 2, extra);
  log += task_end(0, 1, 1, kT + 3, kT + 22, 2, 15, 0, 0, extra);
  log += task_end(0, 2, 1, kT + 31, kT + 40, 0, 8, 0, 0, extra);
  return log + stage(true, 0, kT, kT + 41) + job_end(0, kT + 42);
}

const std::string kSparkExtra =
    ",\"Unknown Number\":7,\"Unknown Object\":{\"Launch Time\":\"not me\",\"x\":[1,2]},"
    "\"Unknown Null\":null";

TEST(ImportAcceptance, SparkIgnoresUnknownFieldsAndEvents) {
  const Trace plain = spark::parse_event_log(spark_log("", false), "plain");
  const Trace extra = spark::parse_event_log(spark_log(kSparkExtra, true), "extra");
  ASSERT_GT(plain.events.size(), 20u);
  expect_same_trace(plain, extra);
}

TEST(ImportAcceptance, SparkMalformedRecordNamesItsLine) {
  std::string log = spark_log("", false);
  // Line 4 is the first TaskEnd (executor, job, stage, task): cut a brace out of it.
  size_t line4 = 0;
  for (int i = 0; i < 3; ++i) line4 = log.find('\n', line4) + 1;
  std::string broken = log;
  broken.erase(broken.find("},\"Task Metrics\"", line4), 1);
  EXPECT_NE(error_of([&] { spark::parse_event_log(broken, "log"); }).find("log: line 4:"),
            std::string::npos)
      << error_of([&] { spark::parse_event_log(broken, "log"); });
  // A well-formed record with a field of the wrong type is named the same way.
  broken = log;
  broken.replace(broken.find("\"Launch Time\":", line4), 14, "\"Launch Time\":\"x\",\"y\":");
  EXPECT_NE(error_of([&] { spark::parse_event_log(broken, "log"); }).find("log: line 4:"),
            std::string::npos)
      << error_of([&] { spark::parse_event_log(broken, "log"); });
}

TEST(ImportAcceptance, SparkLogCutMidRecordIsAnalyzedUpToTheLastCompleteOne) {
  // A job still running: the log ends inside the third TaskEnd. The result must be the
  // log of the complete records (without the job and stage ends, which come later), plus
  // the counted truncation.
  const std::string log = spark_log("", false);
  const size_t third = log.find("\"Task ID\":2");
  const size_t third_line = log.rfind('\n', third) + 1;
  const std::string cut = log.substr(0, third + 5);
  const Trace t = spark::parse_event_log(cut, "cut");
  const Trace complete = spark::parse_event_log(log.substr(0, third_line), "complete");
  EXPECT_EQ(diagnostic(t, "spark.truncated_last_line"), 1u);
  Trace expected = complete;
  expected.import_diagnostics.insert(expected.import_diagnostics.begin(),
                                     {"spark.truncated_last_line", 1});
  std::sort(expected.import_diagnostics.begin(), expected.import_diagnostics.end());
  Trace got = t;
  std::sort(got.import_diagnostics.begin(), got.import_diagnostics.end());
  expect_same_trace(got, expected);
  // The two tasks that finished are analyzed; `analyze` shows the truncation.
  const Analyzed a = analyze_whole(t);
  // One path, through task 0 (task 1's result ends in the driver's waiting): scheduling
  // 0-2, launch 2-2 1/3, deserialization 1, processing 25 - GC 2 = 23, buffer (GC) 2,
  // serialization 1, result to 30. Processing 23/30.
  ASSERT_TRUE(a.summary.has_paths);
  EXPECT_NEAR(of(a.summary.cp, A::processing), 23.0 / 30, 1e-9);
  const fs::path file = temp_path("app-cut");
  write_text(file, cut);
  const std::string out = run("analyze " + file.string() + " --window whole --summary diagnostics");
  EXPECT_NE(out.find("spark.truncated_last_line"), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------
// Chrome trace events. `x` is spliced into the top-level object and into every event
// (also inside args, and as fields the Trace Event Format has but the importer ignores).

std::string chrome_events(std::string_view x) {
  const std::string e(x);
  return "{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\"" + e +
         ",\"args\":{\"name\":\"main\"" + e +
         "}},\n"
         "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":\"step\",\"cat\":\"op\",\"ts\":100,"
         "\"dur\":30" +
         e +
         "},\n"
         "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":\"matmul\",\"cat\":\"op\",\"ts\":105," +
         "\"dur\":10,\"args\":{\"shape\":[2,2]" + e + "}" + e +
         "},\n"
         "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"name\":\"load\",\"cat\":\"io\",\"ts\":90,"
         "\"dur\":14" +
         e +
         "},\n"
         "{\"ph\":\"s\",\"pid\":1,\"tid\":2,\"name\":\"f\",\"cat\":\"c\",\"id\":1,\"ts\":104" +
         e +
         "},\n"
         "{\"ph\":\"f\",\"pid\":1,\"tid\":1,\"name\":\"f\",\"cat\":\"c\",\"id\":1,\"ts\":105,"
         "\"bp\":\"e\"" +
         e + "}";
}
const std::string kChromeExtra =
    ",\"tts\":17,\"cname\":\"good\",\"zz_unknown\":{\"ts\":\"no\",\"list\":[1,{\"a\":null}]},"
    "\"zz_flag\":true";

TEST(ImportAcceptance, ChromeIgnoresUnknownFields) {
  using importers::parse_chrome;
  const Trace plain = parse_chrome("{\"traceEvents\":[" + chrome_events("") + "]}", "plain");
  const Trace extra =
      parse_chrome("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"v\":1}" + kChromeExtra +
                       ",\"traceEvents\":[" + chrome_events(kChromeExtra) + "],\"zz_after\":[]}",
                   "extra");
  // step 100-130 with matmul nested, load on thread 2 and a flow load -> matmul: 8 slice
  // events (step, matmul, step again, load) and a message.
  ASSERT_GE(plain.events.size(), 10u);
  expect_same_trace(plain, extra);
}

TEST(ImportAcceptance, ChromeMalformedRecordNamesItsByteOrEvent) {
  using importers::parse_chrome;
  const std::string text = "{\"traceEvents\":[" + chrome_events("") + "]}";
  // The brace closing event 2 (matmul) replaced by a bracket: the JSON structure breaks
  // exactly there.
  std::string broken = text;
  const size_t at = broken.find("},\n", broken.find("\"matmul\""));
  ASSERT_EQ(broken.substr(at - 6, 7), "[2,2]}}");
  broken[at] = ']';
  EXPECT_NE(error_of([&] {
              parse_chrome(broken, "t.json");
            }).find("t.json: byte " + std::to_string(at) + ":"),
            std::string::npos)
      << error_of([&] { parse_chrome(broken, "t.json"); });
  // Valid JSON, but event 3 (load) has a ts that is not a number: named by its index.
  broken = text;
  broken.replace(broken.find("\"ts\":90"), 7, "\"ts\":\"90\"");
  EXPECT_NE(error_of([&] { parse_chrome(broken, "t.json"); }).find("t.json: traceEvents[3]:"),
            std::string::npos)
      << error_of([&] { parse_chrome(broken, "t.json"); });
}

TEST(ImportAcceptance, ChromeArrayCutAfterARecordKeepsTheCompleteRecords) {
  using importers::parse_chrome;
  // The JSON Array Format of a trace still recording: no closing bracket, a trailing
  // comma after the last complete event.
  const std::string events = chrome_events("");
  const size_t last = events.rfind(",\n{");
  const Trace complete = parse_chrome("[" + events.substr(0, last) + "]", "complete");
  const Trace cut = parse_chrome("[" + events.substr(0, last) + ",\n", "cut");
  expect_same_trace(cut, complete);
}

// ---------------------------------------------------------------------------------------
// OTLP/JSON, the collector's file exporter: one request per line. Spans: frontend
// GET / 1.000-1.100 s calls backend query 1.010-1.060 s (a second request line).

std::string otlp_line(std::string_view service, std::string_view span, std::string_view x) {
  const std::string e(x);
  return "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
         "\"value\":{\"stringValue\":\"" +
         std::string(service) + "\"" + e + "}}]" + e +
         "},\"scopeSpans\":[{\"scope\":{\"name\":\"lib\"" + e + "},\"spans\":[" +
         std::string(span) + "]" + e + "}]" + e + "}]" + e + "}\n";
}
std::string otlp_file(std::string_view x) {
  const std::string e(x);
  return otlp_line("frontend",
                   "{\"traceId\":\"aa01\",\"spanId\":\"01\",\"name\":\"GET /\",\"kind\":2,"
                   "\"startTimeUnixNano\":\"1000000000\",\"endTimeUnixNano\":\"1100000000\"" +
                       e + "}",
                   x) +
         otlp_line("backend",
                   "{\"traceId\":\"aa01\",\"spanId\":\"02\",\"parentSpanId\":\"01\","
                   "\"name\":\"query\",\"kind\":\"SPAN_KIND_SERVER\","
                   "\"startTimeUnixNano\":1010000000,\"endTimeUnixNano\":\"1060000000\"" +
                       e + "}",
                   x);
}
// Known to OTLP but unused by the importer (status, events, flags, schemaUrl) and unknown.
const std::string kOtlpExtra =
    ",\"status\":{\"code\":1},\"events\":[{\"name\":\"e\",\"timeUnixNano\":\"5\"}],"
    "\"flags\":256,\"schemaUrl\":\"https://x\",\"zz_unknown\":{\"spanId\":\"99\",\"l\":[null]}";

Trace otlp_trace(const std::string& text, const std::string& source) {
  return importers::spans_to_trace(importers::parse_otlp(text, source), {});
}

TEST(ImportAcceptance, OtlpIgnoresUnknownFields) {
  const Trace plain = otlp_trace(otlp_file(""), "plain");
  const Trace extra = otlp_trace(otlp_file(kOtlpExtra), "extra");
  ASSERT_GE(plain.events.size(), 8u);  // two spans, call and return
  expect_same_trace(plain, extra);
}

TEST(ImportAcceptance, OtlpMalformedRecordNamesItsByteOrSpan) {
  const std::string text = otlp_file("");
  // A bracket for a brace inside the second line's span.
  std::string broken = text;
  const size_t at = broken.find("}]", broken.find("\"query\""));
  broken[at] = ']';
  EXPECT_NE(error_of([&] {
              otlp_trace(broken, "s.json");
            }).find("s.json: byte " + std::to_string(at) + ":"),
            std::string::npos)
      << error_of([&] { otlp_trace(broken, "s.json"); });
  // Valid JSON, but the second span's start is not an integer.
  broken = text;
  broken.replace(broken.find("1010000000"), 10, "\"1.5e9\"");
  EXPECT_NE(error_of([&] {
              otlp_trace(broken, "s.json");
            }).find("s.json: document 2: resourceSpans[0].scopeSpans[0].spans[0]"),
            std::string::npos)
      << error_of([&] { otlp_trace(broken, "s.json"); });
}

// ---------------------------------------------------------------------------------------
// Jaeger JSON (query API answer): api GET /order 1000-1100 us calls inventory reserve
// 1010-1050 us.

std::string jaeger_file(std::string_view x) {
  const std::string e(x);
  return "{\"data\":[{\"traceID\":\"t1\",\"spans\":[{\"traceID\":\"t1\",\"spanID\":\"a\","
         "\"operationName\":\"GET /order\",\"references\":[],\"startTime\":1000,"
         "\"duration\":100,\"tags\":[{\"key\":\"span.kind\",\"type\":\"string\",\"value\":"
         "\"server\"" +
         e + "}],\"processID\":\"p1\"" + e +
         "},{\"traceID\":\"t1\",\"spanID\":\"b\",\"operationName\":\"reserve\","
         "\"references\":[{\"refType\":\"CHILD_OF\",\"traceID\":\"t1\",\"spanID\":\"a\"" +
         e + "}],\"startTime\":1010,\"duration\":40,\"tags\":[],\"processID\":\"p2\"" + e +
         "}],\"processes\":{\"p1\":{\"serviceName\":\"api\",\"tags\":[]" + e +
         "},\"p2\":{\"serviceName\":\"inventory\"}}" + e + "}]" + e + "}";
}
const std::string kJaegerExtra =
    ",\"flags\":1,\"logs\":[{\"timestamp\":1020,\"fields\":[]}],\"warnings\":null,"
    "\"zz_unknown\":{\"startTime\":5,\"x\":[true]}";

Trace jaeger_trace(const std::string& text, const std::string& source) {
  return importers::spans_to_trace(importers::parse_jaeger(text, source), {});
}

TEST(ImportAcceptance, JaegerIgnoresUnknownFields) {
  const Trace plain = jaeger_trace(jaeger_file(""), "plain");
  const Trace extra = jaeger_trace(jaeger_file(kJaegerExtra), "extra");
  ASSERT_GE(plain.events.size(), 8u);
  expect_same_trace(plain, extra);
}

TEST(ImportAcceptance, JaegerMalformedRecordNamesItsByteOrSpan) {
  const std::string text = jaeger_file("");
  std::string broken = text;
  const size_t at = broken.find("}]", broken.find("\"reserve\""));
  broken[at] = ']';
  EXPECT_NE(error_of([&] {
              jaeger_trace(broken, "j.json");
            }).find("j.json: byte " + std::to_string(at) + ":"),
            std::string::npos)
      << error_of([&] { jaeger_trace(broken, "j.json"); });
  broken = text;
  broken.replace(broken.find("\"startTime\":1010"), 16, "\"startTime\":\"soon\"");
  EXPECT_NE(error_of([&] { jaeger_trace(broken, "j.json"); }).find("j.json: data[0].spans[1]"),
            std::string::npos)
      << error_of([&] { jaeger_trace(broken, "j.json"); });
}

}  // namespace

}  // namespace test_import_acceptance
