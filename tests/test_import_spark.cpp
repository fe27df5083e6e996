// The Spark event log importer (src/importers/spark): placement of tasks on slots, the
// driver's timeline, the scheduler-delay split, Spark 1.6-3.x field names, zstd, errors
// and counted problems, and CP on a hand-made two-stage job computed by hand.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "importers/importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "importers/streaming.hpp"
#include "spark_log_util.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"

namespace test_import_spark {

namespace {

using namespace snailtrail;
namespace fs = std::filesystem;
namespace spark = snailtrail::importers::spark;
using namespace snailtrail::testing::spark_log;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000'000 * kMs;  // the fixture's epoch, ns

const fs::path kFixture = fs::path(SNAILTRAIL_SOURCE_DIR) / "tests/data/spark-2stage-eventlog";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, std::string_view s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

fs::path temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("snailtrail-spark-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

struct Activity {
  uint32_t worker;
  ActivityType type;
  int64_t start, end;  // ms after kT0
  bool operator<(const Activity& o) const {
    return std::tie(worker, start, end, type) < std::tie(o.worker, o.start, o.end, o.type);
  }
  bool operator==(const Activity& o) const = default;
};

// Start/end pairs per worker (the importer never nests activities).
std::vector<Activity> activities(const Trace& t, uint32_t worker) {
  std::vector<Activity> out;
  std::optional<Event> open;
  for (const Event& e : t.events) {
    if (e.worker != worker || e.is_message()) continue;
    if (e.kind == EventKind::start) {
      EXPECT_FALSE(open) << "nested activity at " << e.ts;
      open = e;
    } else {
      EXPECT_TRUE(open && open->activity == e.activity) << "end without start at " << e.ts;
      out.push_back({worker, e.activity, (open->ts - kT0), (e.ts - kT0)});
      open.reset();
    }
  }
  return out;
}

Activity act(uint32_t w, ActivityType t, double start_ms, double end_ms) {
  return {w, t, std::llround(start_ms * kMs), std::llround(end_ms * kMs)};
}

// (worker, ts in ns after kT0) of every receive of a task launch on a slot.
std::set<std::pair<uint32_t, int64_t>> slot_receives(const Trace& t) {
  std::set<std::pair<uint32_t, int64_t>> out;
  for (const Event& e : t.events)
    if (e.worker != 0 && e.kind == EventKind::recv) out.insert({e.worker, e.ts - kT0});
  return out;
}

uint64_t diagnostic(const Trace& t, const std::string& name) {
  for (const auto& [k, v] : t.import_diagnostics)
    if (k == name) return v;
  return 0;
}

std::vector<WindowSummary> analyze(const Trace& t, int64_t width_ns = 0) {
  Pag pag = build_pag(t);
  AnalysisOptions opt;
  opt.windows.width_ns = width_ns;
  std::vector<WindowSummary> out;
  analyze_pag(pag, opt, [&](const WindowView& v) { out.push_back(v.summary); });
  return out;
}

// ---------------------------------------------------------------------------------------
// The hand-made fixture (tests/data/spark-2stage-eventlog, described in
// tests/data/spark-2stage.md): 2 executors x 2 cores, job 0 = stage 0 (tasks 0-3) then
// stage 1 (tasks 4, 5). Every task's scheduler delay is 3 ms: 1 ms on the launch message,
// 2 ms on the result message with the default split 1:2. Times in ms after kT0.

TEST(SparkImport, FixtureIsDetectedAsSpark) {
  EXPECT_EQ(importers::detect_importer(kFixture.string()).name, "spark");
  const Trace t = importers::import_trace(kFixture.string());
  EXPECT_TRUE(t.import_diagnostics.empty());
  EXPECT_EQ(t.worker_name(0), "driver");
  EXPECT_EQ(t.worker_name(1), "exec 1 slot 0");
  EXPECT_EQ(t.worker_name(2), "exec 1 slot 1");
  EXPECT_EQ(t.worker_name(3), "exec 2 slot 0");
  EXPECT_EQ(t.worker_names.count(4), 0u);  // executor 2 slot 1 never runs a task
  EXPECT_EQ(t.operator_name(0), "stage 0 (map at Fixture.scala:10)");
  EXPECT_EQ(t.operator_name(1), "stage 1 (reduce at Fixture.scala:11)");
}

TEST(SparkImport, TasksGoToTheMostRecentlyUsedFreeSlot) {
  const Trace t = importers::import_trace(kFixture.string());
  // Task k starts at launch + 1 ms. Tasks 0, 1 (executor 1) and 2 (executor 2) start at
  // 21: task 0 takes slot 0, task 1 slot 1 (slot 0 busy), task 2 executor 2's slot 0.
  // Task 3 starts at 57 on executor 1: slot 0 is free since 44, slot 1 since 54; the most
  // recently used is slot 1 (least recently used would be slot 0). Task 5 at 77, executor
  // 1: slot 0 free since 44, slot 1 since 69 -> slot 1 again. Task 4 at 77, executor 2:
  // slot 0 (free since 63) is preferred to the never-used slot 1.
  const std::set<std::pair<uint32_t, int64_t>> expected = {
      {1, 21 * kMs}, {2, 21 * kMs}, {3, 21 * kMs}, {2, 57 * kMs}, {2, 77 * kMs}, {3, 77 * kMs}};
  EXPECT_EQ(slot_receives(t), expected);
}

TEST(SparkImport, ExecutorMetricsBecomeActivitiesOnTheSlot) {
  const Trace t = importers::import_trace(kFixture.string());
  using A = ActivityType;
  // Task 2: deserialize 1, run 40 (of which shuffle write 4 ms = 4,000,000 ns), result
  // serialization 1. Task 4: deserialize 1, run 20 (fetch wait 5, GC 3), serialization 1.
  const std::vector<Activity> w3 = {act(3, A::deserialization, 21, 22),
                                    act(3, A::processing, 22, 58),
                                    act(3, A::io, 58, 62),
                                    act(3, A::serialization, 62, 63),
                                    act(3, A::deserialization, 77, 78),
                                    act(3, A::io, 78, 83),
                                    act(3, A::processing, 83, 95),
                                    act(3, A::buffer, 95, 98),
                                    act(3, A::serialization, 98, 99)};
  EXPECT_EQ(activities(t, 3), w3);
  // Task 0: deserialize 2, run 20 with GC 2, serialization 1.
  const std::vector<Activity> w1 = {act(1, A::deserialization, 21, 23),
                                    act(1, A::processing, 23, 41), act(1, A::buffer, 41, 43),
                                    act(1, A::serialization, 43, 44)};
  EXPECT_EQ(activities(t, 1), w1);
  // Every activity of a stage's task carries the stage as operator.
  for (const Event& e : t.events)
    if (e.worker == 3 && !e.is_message()) {
      ASSERT_TRUE(e.has(kHasOperator));
      EXPECT_EQ(e.op, e.ts - kT0 < 70 * kMs ? 0u : 1u);
    }
}

TEST(SparkImport, DriverSchedulesWaitsAndHoldsTheBarrier) {
  const Trace t = importers::import_trace(kFixture.string());
  using A = ActivityType;
  // Job submitted at 10, stage 0 at 12, first launches at 20: scheduling 10-20. Tasks are
  // out until 71, each gap ending with a result: waiting 20-71. The last result of stage 0
  // arrives at 71, the stage completes at 72: barrier 71-72. Stage 1 is submitted at 74 and
  // launched at 76: scheduling 72-76. Results at 92 and 101: waiting 76-101. The job ends at
  // 102: scheduling 101-102.
  const std::vector<Activity> driver = {
      act(0, A::scheduling, 10, 20),         act(0, A::waiting, 20, 71),
      act(0, A::barrier_processing, 71, 72), act(0, A::scheduling, 72, 76),
      act(0, A::waiting, 76, 101),           act(0, A::scheduling, 101, 102)};
  EXPECT_EQ(activities(t, 0), driver);
  int64_t waiting = 0;
  for (const Activity& a : activities(t, 0))
    if (a.type == A::waiting) waiting += a.end - a.start;
  EXPECT_EQ(waiting, 76 * kMs);

  // One launch and one result message per task, all control messages through the driver.
  int sends = 0, recvs = 0;
  std::multiset<int64_t> driver_recv_ms;
  for (const Event& e : t.events) {
    if (!e.is_message()) continue;
    EXPECT_EQ(e.activity, A::control_message);
    EXPECT_TRUE(e.has(kHasCorrelator) && e.has(kHasRemote));
    EXPECT_TRUE(e.worker == 0 || e.remote == 0);
    if (e.worker == 0) (e.kind == EventKind::send ? sends : recvs)++;
    if (e.worker == 0 && e.kind == EventKind::recv) driver_recv_ms.insert((e.ts - kT0) / kMs);
  }
  EXPECT_EQ(sends, 6);
  EXPECT_EQ(recvs, 6);
  // Results arrive at the driver at the tasks' Finish Time (task 5's includes 1 ms of
  // getting the result).
  EXPECT_EQ(driver_recv_ms, (std::multiset<int64_t>{46, 56, 65, 71, 92, 101}));
}

TEST(SparkImport, CriticalParticipationOfTheFixtureByHand) {
  const Trace t = importers::import_trace(kFixture.string());
  const auto windows = analyze(t);
  ASSERT_EQ(windows.size(), 1u);
  const WindowSummary& w = windows[0];
  ASSERT_TRUE(w.has_paths);
  // The driver waits from 20 to 71 and 76 to 101, so a path from the driver's node at 10
  // to its node at 102 must leave it at 20 and come back through the result that ends a
  // waiting edge and is followed by non-waiting work: 71 (task 3), whose slot got its
  // launch at 56 from the result of task 1 (same slot, launched at 20); and 101 (task 4).
  // Tasks 0, 2 and 5 end in waiting driver time: dead ends. So there is exactly one
  // transient critical path:
  //   driver scheduling 10-20 | launch 20-21 | task 1 on slot (21-54: deser 2, processing
  //   30, serialization 1) | result 54-56 | launch 56-57 | task 3 (57-69: 1, 10, 1) |
  //   result 69-71 | barrier 71-72 | scheduling 72-76 | launch 76-77 | task 4 (77-99:
  //   deser 1, io 5, processing 12, buffer 3, serialization 1) | result 99-101 |
  //   scheduling 101-102.
  // CP of each edge = duration / 92 ms: processing 30+10+12 = 52, scheduling 10+4+1 = 15,
  // control messages 1+2+1+2+1+2 = 9, io 5, deserialization 2+1+1 = 4, serialization 3,
  // buffer 3, barrier 1; sum 92.
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);  // N = 1
  using A = ActivityType;
  const std::map<A, double> expected = {{A::processing, 52},     {A::scheduling, 15},
                                        {A::control_message, 9}, {A::io, 5},
                                        {A::deserialization, 4}, {A::serialization, 3},
                                        {A::buffer, 3},          {A::barrier_processing, 1}};
  for (int i = 0; i < kActivityTypeCount; ++i) {
    const auto it = expected.find(static_cast<A>(i));
    const double want = it == expected.end() ? 0.0 : it->second / 92.0;
    EXPECT_NEAR(w.cp.activity[i], want, 1e-12) << name_of(static_cast<A>(i));
  }
  // Conventional profile: waiting edges are the driver's 51 + 25 ms, slot 2's gaps 54-57
  // and 69-77 (3 + 8) and slot 3's gap 63-77 (14): 101 ms of all edges' 280 ms (timelines:
  // driver 92, slot 1 23, slot 2 68, slot 3 78; messages: 6 launches of 1 ms, results
  // 2+2+2+2+2 and task 5's 3).
  EXPECT_NEAR(w.conventional.activity[static_cast<int>(A::waiting)], 101.0 / 280.0, 1e-12);
  EXPECT_NEAR(w.diagnostics.waiting_share, 101.0 / 261.0, 1e-12);
  EXPECT_EQ(w.diagnostics.property1_violations, 0u);
  EXPECT_EQ(w.diagnostics.property2_violations, 0u);
  for (uint64_t n : w.diagnostics.issues) EXPECT_EQ(n, 0u);
}

TEST(SparkImport, DelaySplitMovesTheSlotStart) {
  const std::string text = read_text(kFixture);
  // 1:1: half of task 0's 3 ms delay on the launch -> starts at 21.5.
  Trace t = spark::parse_event_log(text, "fixture", spark::parse_delay_split("1:1"));
  EXPECT_EQ(activities(t, 1).front(), act(1, ActivityType::deserialization, 21.5, 23.5));
  // 0:1: the task starts at its launch.
  t = spark::parse_event_log(text, "fixture", spark::parse_delay_split("0:1"));
  EXPECT_EQ(activities(t, 1).front(), act(1, ActivityType::deserialization, 20, 22));
  // 1:0: it ends when the driver gets the result, less 1 ns (no zero-duration result).
  t = spark::parse_event_log(text, "fixture", spark::parse_delay_split("1:0"));
  EXPECT_EQ(activities(t, 1).back(),
            (Activity{1, ActivityType::serialization, 45 * kMs, 46 * kMs - 1}));
  // Through the registry option, as the CLI passes it.
  importers::ImportOptions o;
  o.spark_delay_split = "1:1";
  t = importers::import_trace(kFixture.string(), "spark", o);
  EXPECT_EQ(activities(t, 1).front(), act(1, ActivityType::deserialization, 21.5, 23.5));
}

TEST(SparkImport, DelaySplitSyntax) {
  EXPECT_EQ(spark::parse_delay_split("1:2").launch_weight, 1u);
  EXPECT_EQ(spark::parse_delay_split("1:2").result_weight, 2u);
  EXPECT_EQ(spark::parse_delay_split("0:5").launch_weight, 0u);
  for (const char* bad : {"", "1", "1:", ":2", "0:0", "-1:2", "1:2:3", "a:b", "1.5:2", " 1:2"})
    EXPECT_THROW(spark::parse_delay_split(bad), std::invalid_argument) << bad;
}

TEST(SparkImport, ZstdCompressedLogGivesTheSameTrace) {
  const std::string text = read_text(kFixture);
  std::string z(ZSTD_compressBound(text.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 3));
  const fs::path path = temp_path("app-1.zstd");
  write_text(path, z);
  EXPECT_EQ(importers::detect_importer(path.string()).name, "spark");
  const Trace plain = spark::parse_event_log(text, "x");
  const Trace zipped = importers::import_trace(path.string());
  EXPECT_EQ(to_jsonl(zipped), to_jsonl(plain));
  EXPECT_TRUE(zipped.import_diagnostics.empty());

  // A compressed log still being written: the frame is cut short.
  write_text(path, std::string_view(z).substr(0, z.size() - 40));
  const Trace cut = importers::import_trace(path.string(), "spark");
  EXPECT_EQ(diagnostic(cut, "spark.truncated_compressed_data"), 1u);
  EXPECT_LT(cut.events.size(), plain.events.size());

  // Corrupt compressed data (a reserved bit of the frame header) is an error.
  std::string bad = z;
  bad[4] = static_cast<char>(0xFF);
  write_text(path, bad);
  try {
    importers::import_trace(path.string(), "spark");
    ADD_FAILURE() << "corrupt zstd accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("zstd"), std::string::npos) << e.what();
  }
}

TEST(SparkImport, TruncatedLastLineIsCountedNotFatal) {
  std::string text = read_text(kFixture);
  text.resize(text.size() - 30);  // inside the last line (ApplicationEnd), no newline
  const Trace t = spark::parse_event_log(text, "cut");
  EXPECT_EQ(diagnostic(t, "spark.truncated_last_line"), 1u);
  EXPECT_EQ(t.events.size(), spark::parse_event_log(read_text(kFixture), "x").events.size());
}

TEST(SparkImport, ErrorsNameTheLine) {
  const std::string text = read_text(kFixture);
  auto error_of = [](const std::string& s) -> std::string {
    try {
      spark::parse_event_log(s, "log");
    } catch (const TraceError& e) {
      return e.what();
    }
    return "";
  };
  // Invalid JSON on line 3 of 24 (not the last line: not a truncation).
  std::string bad = text;
  bad.insert(bad.find("\n", bad.find("\n") + 1) + 1, "{\"Event\": oops}\n");
  EXPECT_NE(error_of(bad).find("log: line 3: invalid JSON"), std::string::npos) << error_of(bad);
  // A task without its launch time.
  bad = text;
  const size_t at = bad.find(
      "\"Launch Time\":1700000000020,\"Executor ID\":\"1\",\"Host\":\"h1\","
      "\"Locality\":\"PROCESS_LOCAL\",\"Speculative\":false,\"Getting Result "
      "Time\":0,\"Finish Time\":1700000000046");
  ASSERT_NE(at, std::string::npos);
  bad.erase(at, std::string("\"Launch Time\":1700000000020,").size());
  EXPECT_NE(error_of(bad).find("line 11: missing \"Launch Time\""), std::string::npos)
      << error_of(bad);
  EXPECT_NE(error_of("{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":-1}\n")
                .find("line 1: \"Stage ID\" is out of range"),
            std::string::npos);
  EXPECT_NE(error_of("{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0,\"Submission Time\":1.5}")
                .find("\"Submission Time\" must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("[1,2]\n{}\n").find("line 1: not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"a\":1}\n").find("line 1: missing \"Event\""), std::string::npos);
  // Garbage alone is not a "truncated log": nothing valid came before it.
  EXPECT_NE(error_of("not json").find("line 1: invalid JSON"), std::string::npos);
}

TEST(SparkImport, LocalModeExecutorGetsSlotsOnDemand) {
  // No ExecutorAdded for "driver" (local mode): two overlapping tasks need two slots.
  const std::string log = task_end(0, 0, "driver", 100, 200, metrics(0, 97, 0)) +
                          task_end(0, 1, "driver", 100, 150, metrics(0, 47, 0)) +
                          task_end(0, 2, "driver", 160, 170, metrics(0, 7, 0));
  const Trace t = spark::parse_event_log(log, "local");
  EXPECT_EQ(diagnostic(t, "spark.executors_without_cores"), 1u);
  EXPECT_EQ(t.worker_name(1), "local slot 0");
  EXPECT_EQ(t.worker_name(2), "local slot 1");
  // Task 2 starts at 161 when slot 1 (task 1, busy until 148) is free, slot 0 is not.
  std::set<std::pair<uint32_t, int64_t>> recvs;
  for (const Event& e : t.events)
    if (e.worker != 0 && e.kind == EventKind::recv) recvs.insert({e.worker, e.ts / kMs});
  EXPECT_EQ(recvs, (std::set<std::pair<uint32_t, int64_t>>{{1, 101}, {2, 101}, {2, 161}}));
  EXPECT_FALSE(analyze(t).empty());
}

TEST(SparkImport, MoreTasksThanCoresGetAnExtraSlotAndAreCounted) {
  const std::string log = executor_added("7", 1) + task_end(0, 0, "7", 0, 10, metrics(0, 10, 0)) +
                          task_end(0, 1, "7", 0, 10, metrics(0, 10, 0));
  const Trace t = spark::parse_event_log(log, "x");
  EXPECT_EQ(diagnostic(t, "spark.tasks_beyond_executor_cores"), 1u);
  EXPECT_EQ(t.worker_names.size(), 3u);  // driver and two slots
}

TEST(SparkImport, TaskCpusDividesCoresIntoSlots) {
  // 4 cores, spark.task.cpus 2: two slots, so the third concurrent task is beyond them.
  const std::string env =
      "{\"Event\":\"SparkListenerEnvironmentUpdate\",\"Spark Properties\":{\"spark.task.cpus\":"
      "\"2\"}}\n";
  std::string log = env + executor_added("1", 4);
  for (int i = 0; i < 3; ++i) log += task_end(0, i, "1", 0, 10, metrics(0, 10, 0));
  const Trace t = spark::parse_event_log(log, "x");
  EXPECT_EQ(diagnostic(t, "spark.tasks_beyond_executor_cores"), 1u);
}

TEST(SparkImport, ExecutorTimeBeyondTheTaskIsShrunkToFit) {
  // Launch 0, finish 10 ms, but deserialize 2 + run 10 + serialize 1 = 13 ms (millisecond
  // rounding in real logs). Scaled by 10/13: deserialize 1538461 ns, run 7692307 ns,
  // serialization the remaining 769232 ns; no scheduler delay left, so the task starts at
  // its launch and would end at its finish: 1 ns is taken off the serialization so that
  // the result message does not take zero time.
  const std::string log = executor_added("1", 1) + task_end(0, 0, "1", 0, 10, metrics(2, 10, 1));
  const Trace t = spark::parse_event_log(log, "x");
  EXPECT_EQ(diagnostic(t, "spark.executor_time_exceeds_task_time"), 1u);
  std::vector<std::tuple<ActivityType, int64_t, int64_t>> got;
  std::optional<int64_t> open;
  for (const Event& e : t.events)
    if (e.worker == 1 && !e.is_message()) {
      if (e.kind == EventKind::start)
        open = e.ts;
      else
        got.emplace_back(e.activity, *open, e.ts);
    }
  using A = ActivityType;
  EXPECT_EQ(got, (std::vector<std::tuple<A, int64_t, int64_t>>{
                     {A::deserialization, 0, 1538461},
                     {A::processing, 1538461, 1538461 + 7692307},
                     {A::serialization, 9230768, 9'999'999}}));
}

TEST(SparkImport, CountedProblems) {
  // Task 0 has no metrics (e.g. ExecutorLostFailure): unknown on its slot from launch to
  // finish. Task 1 finishes before its launch: dropped. Task 2 started, never ended. Stage 5
  // was submitted but never completed. Job 3 started, never ended.
  const std::string log =
      executor_added("1", 2) +
      "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":5,\"Stage "
      "Name\":\"s\",\"Number of Tasks\":1,\"Submission Time\":0}}\n"
      "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":3,\"Submission Time\":0}\n" +
      task_end(5, 0, "1", 1, 9, "") + task_end(5, 1, "1", 9, 8, metrics(0, 0, 0)) +
      task_end(5, 4, "1", 9, 9, metrics(0, 0, 0)) +  // zero duration: dropped
      "{\"Event\":\"SparkListenerTaskStart\",\"Stage ID\":5,\"Task Info\":{\"Task ID\":2}}\n";
  const Trace t = spark::parse_event_log(log, "x");
  EXPECT_EQ(diagnostic(t, "spark.tasks_without_metrics"), 1u);
  EXPECT_EQ(diagnostic(t, "spark.tasks_finished_before_launch"), 1u);
  EXPECT_EQ(diagnostic(t, "spark.tasks_without_end"), 1u);
  EXPECT_EQ(diagnostic(t, "spark.stages_without_completion"), 1u);
  EXPECT_EQ(diagnostic(t, "spark.jobs_without_end"), 1u);
  EXPECT_EQ(diagnostic(t, "spark.zero_duration_tasks"), 1u);
  // The metric-less task: recv at 1, unknown from 1 to 1 ns before 9, send there.
  std::vector<Activity> slot;
  std::optional<Event> open;
  for (const Event& e : t.events)
    if (e.worker == 1 && !e.is_message()) {
      if (e.kind == EventKind::start)
        open = e;
      else
        slot.push_back({1, e.activity, open->ts, e.ts});
    }
  EXPECT_EQ(slot, (std::vector<Activity>{{1, ActivityType::unknown, 1 * kMs, 9 * kMs - 1}}));
}

TEST(SparkImport, UnsupportedCodecIsExplained) {
  // lz4 is read now (test_import_spark_codecs.cpp); lzf, Spark's other codec, is not.
  const fs::path path = temp_path("app-20231114-0001.lzf");
  write_text(path, std::string_view("ZV\x01\x00\x26\x00\x00\x00", 8));
  EXPECT_EQ(importers::detect_importer(path.string()).name, "spark");
  try {
    importers::import_trace(path.string());
    ADD_FAILURE() << "lzf accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("compressed with lzf"), std::string::npos) << e.what();
  }
  // A cut LZ4Block header: read, nothing decoded, the cut counted.
  const fs::path lz4 = temp_path("app-20231114-0001.lz4");
  write_text(lz4, std::string_view("LZ4Block\x26\x00\x00\x00", 12));
  const Trace t = importers::import_trace(lz4.string(), "spark");
  EXPECT_EQ(diagnostic(t, "spark.truncated_compressed_data"), 1u);
  EXPECT_TRUE(t.events.empty());
}

TEST(SparkImport, SniffScores) {
  EXPECT_EQ(spark::sniff("x", "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"1.6.3\"}"),
            90);
  EXPECT_EQ(spark::sniff("x", "\xEF\xBB\xBF{ \"Event\" : \"SparkListenerJobStart\"}"), 90);
  EXPECT_EQ(spark::sniff("x.jsonl", "{\"ts\":1,\"worker\":0,\"activity\":\"processing\"}"), 0);
  EXPECT_EQ(spark::sniff("x", "{\"Events\":\"SparkListenerJobStart\"}"), 0);
  EXPECT_EQ(spark::sniff("x", ""), 0);
  EXPECT_EQ(spark::sniff("x.zstd", "\x28\xB5\x2F\xFD garbage"), 0);
}

// ---------------------------------------------------------------------------------------
// End to end: the snailtrail binary recognises the log by its content.

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

TEST(SparkImportCli, AnalyzeDetectsTheLogAndGivesTheHandComputedCp) {
  const std::string out = run("analyze " + kFixture.string() +
                              " --window whole --format jsonl --summary activity,diagnostics");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  // The window's line (the run's follows).
  ASSERT_EQ(parser.parse(out.substr(0, out.find('\n'))).get(doc), simdjson::SUCCESS) << out;
  const std::map<std::string, double> expected = {
      {"processing", 52}, {"scheduling", 15},        {"control_message", 9},
      {"io", 5},          {"deserialization", 4},    {"serialization", 3},
      {"buffer", 3},      {"barrier_processing", 1}, {"waiting", 0}};
  for (const auto& [name, ms] : expected) {
    double v = -1;
    ASSERT_EQ(doc["activity"][name].get_double().get(v), simdjson::SUCCESS) << name << out;
    EXPECT_NEAR(v, ms / 92, 1e-12) << name;
  }
  EXPECT_NE(run("analyze " + kFixture.string() + " --spark-delay-split 1-2")
                .find("--spark-delay-split must be LAUNCH:RESULT"),
            std::string::npos);
  // convert writes what the importer produced, with the delay split passed through.
  const std::string jsonl = temp_path("fixture.jsonl").string();
  run("convert " + kFixture.string() + " " + jsonl + " --spark-delay-split 1:1");
  const Trace converted = read_trace(jsonl);
  EXPECT_EQ(to_jsonl(converted), to_jsonl(spark::parse_event_log(read_text(kFixture), "x",
                                                                 spark::parse_delay_split("1:1"))));
  EXPECT_EQ(activities(converted, 1).front(), act(1, ActivityType::deserialization, 21.5, 23.5));
}

// ---------------------------------------------------------------------------------------
// Generated larger logs (spark_log_util.hpp): the importer must place every task without
// extra slots, and the analysis must hold its invariants.

TEST(SparkImportGenerated, EveryTaskFitsItsExecutorAndCpSumsToOne) {
  const GeneratedLog g = generate_log(4, 4, 30, 200, 7);
  const Trace t = spark::parse_event_log(g.text, "generated");
  EXPECT_TRUE(t.import_diagnostics.empty()) << t.import_diagnostics.front().first;
  // 6000 tasks: one launch and one result each, all matched; 16 slots at most.
  size_t sends = 0;
  std::set<uint32_t> workers;
  for (const Event& e : t.events) {
    sends += e.kind == EventKind::send;
    workers.insert(e.worker);
  }
  EXPECT_EQ(sends, 2 * g.tasks);
  EXPECT_LE(workers.size(), 17u);
  const auto windows = analyze(t, 100 * kMs);
  ASSERT_GT(windows.size(), 10u);
  for (const WindowSummary& w : windows) {
    for (uint64_t n : w.diagnostics.issues) EXPECT_EQ(n, 0u) << "window " << w.index;
    // Results never take zero time, so launches and results never form zero-duration
    // cycles (which would make CP drop messages and could leave no transient path).
    EXPECT_EQ(w.diagnostics.zero_duration_cycles, 0u) << "window " << w.index;
    ASSERT_TRUE(w.has_paths) << "window " << w.index;
    double sum = 0;
    for (double v : w.cp.activity) sum += v;
    EXPECT_NEAR(sum, 1.0, 1e-9) << "window " << w.index;
  }
}

// ---------------------------------------------------------------------------------------
// Streaming (spark::make_stream, serve --follow --importer spark): the batch importer is
// the stream fed the whole log; fed in pieces of any size the stream gives the same
// events, names and diagnostics, a job's events as soon as the job has ended.

struct Streamed {
  Trace trace;            // everything, in the order the stream emitted it
  size_t before_end = 0;  // events emitted before finish()
};

Streamed stream_in_chunks(const std::string& text, uint64_t seed, size_t max_chunk) {
  std::mt19937_64 rng(seed);
  auto stream = spark::make_stream("chunks", importers::ImportOptions{});
  Streamed out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::uniform_int_distribution<size_t>(1, max_chunk)(rng);
    stream->feed(std::string_view(text).substr(pos, n), out.trace);
    pos += n;
  }
  out.before_end = out.trace.events.size();
  stream->finish(out.trace);
  out.trace.import_diagnostics = stream->diagnostics();
  return out;
}

// Same events as a multiset per worker (the batch trace orders workers differently only
// if epochs interleave them: each worker's own sequence must be identical).
void expect_same_trace(const Trace& streamed, const Trace& batch) {
  ASSERT_EQ(streamed.events.size(), batch.events.size());
  std::map<uint32_t, std::vector<Event>> a, b;
  for (const Event& e : streamed.events) a[e.worker].push_back(e);
  for (const Event& e : batch.events) b[e.worker].push_back(e);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [w, events] : a) {
    const std::vector<Event>& other = b[w];
    ASSERT_EQ(events.size(), other.size()) << "worker " << w;
    for (size_t i = 0; i < events.size(); ++i)
      ASSERT_EQ(std::memcmp(&events[i], &other[i], sizeof(Event)), 0)
          << "worker " << w << " event " << i;
    for (size_t i = 1; i < events.size(); ++i)
      ASSERT_LE(events[i - 1].ts, events[i].ts) << "worker " << w << " event " << i;
  }
  EXPECT_EQ(streamed.worker_names, batch.worker_names);
  EXPECT_EQ(streamed.operator_names, batch.operator_names);
  EXPECT_EQ(streamed.import_diagnostics, batch.import_diagnostics);
}

TEST(SparkStream, FixtureInRandomChunksEqualsBatch) {
  const std::string text = read_text(kFixture);
  const Trace batch = spark::parse_event_log(text, "x");
  EXPECT_EQ(batch.events.size(), 82u);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Streamed s = stream_in_chunks(text, seed, seed % 2 ? 7 : 700);
    expect_same_trace(s.trace, batch);
    // One job, ended by its JobEnd line before ApplicationEnd: emitted before the end.
    EXPECT_EQ(s.before_end, 82u);
  }
}

TEST(SparkStream, GeneratedLogsInRandomChunksEqualBatch) {
  for (bool starts : {false, true}) {
    const GeneratedLog g = generate_log(3, 2, 12, 20, 11, starts);
    const Trace batch = spark::parse_event_log(g.text, "x");
    EXPECT_TRUE(batch.import_diagnostics.empty());
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const Streamed s = stream_in_chunks(g.text, seed, seed * 300);
      expect_same_trace(s.trace, batch);
      // Four jobs of three stages, the log's last line ends the last: all emitted before
      // the end of the input (AJobsEventsComeWhenItEnds checks a job at a time).
      EXPECT_EQ(s.before_end, batch.events.size());
    }
  }
}

TEST(SparkStream, ZstdLogInRandomChunksEqualsPlainBatch) {
  // Two frames (zstd logs are written frame by frame), cut anywhere.
  const GeneratedLog g = generate_log(3, 2, 12, 20, 7, true);
  const size_t half = g.text.find('\n', g.text.size() / 2) + 1;
  std::string z;
  for (std::string_view part :
       {std::string_view(g.text).substr(0, half), std::string_view(g.text).substr(half)}) {
    std::string frame(ZSTD_compressBound(part.size()), '\0');
    frame.resize(ZSTD_compress(frame.data(), frame.size(), part.data(), part.size(), 3));
    z += frame;
  }
  const Trace batch = spark::parse_event_log(g.text, "x");
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Streamed s = stream_in_chunks(z, seed, seed % 2 ? 3 : 5000);
    expect_same_trace(s.trace, batch);
  }
  // Cut inside the second frame: the first frame's jobs, and the cut counted at the end.
  const Streamed cut = stream_in_chunks(z.substr(0, z.size() - 200), 1, 4000);
  EXPECT_GT(cut.trace.events.size(), 0u);
  EXPECT_LT(cut.trace.events.size(), batch.events.size());
  EXPECT_EQ(diagnostic(cut.trace, "spark.truncated_compressed_data"), 1u);
}

TEST(SparkStream, AJobsEventsComeWhenItEnds) {
  // Job 0 = stages 0-2. Feed the log up to its JobEnd line: exactly job 0's tasks are
  // emitted (2 messages per task on each side), all before the job's end; nothing of
  // job 1; the driver is named once.
  const GeneratedLog g = generate_log(2, 2, 6, 10, 3, true);
  const size_t job_end = g.text.find("\"SparkListenerJobEnd\"");
  const size_t line_end = g.text.find('\n', job_end) + 1;
  auto stream = spark::make_stream("x", importers::ImportOptions{});
  Trace out;
  stream->feed(std::string_view(g.text).substr(0, line_end - 1), out);
  EXPECT_EQ(out.events.size(), 0u);  // the JobEnd line is not complete yet
  stream->feed(std::string_view(g.text).substr(line_end - 1, 1), out);
  size_t sends = 0;
  int64_t latest = 0;
  for (const Event& e : out.events) {
    sends += e.kind == EventKind::send;
    latest = std::max(latest, e.ts);
  }
  EXPECT_EQ(sends, 2u * 30);  // 3 stages x 10 tasks: a launch and a result each
  const int64_t end_ms = std::stoll(g.text.substr(g.text.find("Completion Time", job_end) + 17));
  EXPECT_LE(latest, end_ms * kMs);
  EXPECT_EQ(out.worker_names.at(0), "driver");
  Trace rest;
  stream->feed(std::string_view(g.text).substr(line_end), rest);
  stream->finish(rest);
  EXPECT_EQ(rest.worker_names.count(0), 0u);
  for (const Event& e : rest.events) EXPECT_GE(e.ts, latest);
}

TEST(SparkStream, TaskEndedAfterItsJobIsCountedNotDrawnOutOfOrder) {
  // A job ends while nothing is open; then a TaskEnd (no TaskStart in the log) for a task
  // launched before that end: its time was already emitted, so it is dropped, counted.
  const std::string log =
      executor_added("1", 1) +
      "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0,\"Submission Time\":0}\n" +
      task_end(0, 0, "1", 1, 10, metrics(0, 8, 0)) +
      "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0,\"Completion Time\":12}\n" +
      task_end(0, 1, "1", 5, 20, metrics(0, 8, 0));
  const Trace t = spark::parse_event_log(log, "x");
  EXPECT_EQ(diagnostic(t, "spark.tasks_ended_after_their_job"), 1u);
  size_t sends = 0;
  for (const Event& e : t.events) sends += e.kind == EventKind::send;
  EXPECT_EQ(sends, 2u);  // task 0 only
}

TEST(SparkStream, CutLastLineIsCountedAtTheEnd) {
  std::string text = read_text(kFixture);
  text.resize(text.size() - 30);
  auto stream = spark::make_stream("x", importers::ImportOptions{});
  Trace out;
  stream->feed(text, out);
  EXPECT_TRUE(stream->diagnostics().empty());  // the unterminated line may still grow
  stream->finish(out);
  EXPECT_EQ(stream->diagnostics(),
            (std::vector<std::pair<std::string, uint64_t>>{{"spark.truncated_last_line", 1}}));
  EXPECT_EQ(out.events.size(), 82u);
}

// Writes a large generated log for measuring the importer by hand:
//   SPARK_LOG=/tmp/big-eventlog SPARK_STAGES=3000 snailtrail_tests
//     --gtest_also_run_disabled_tests --gtest_filter='*WriteLargeLog*'
TEST(SparkImportGenerated, DISABLED_WriteLargeLog) {
  const char* path = std::getenv("SPARK_LOG");
  const char* stages = std::getenv("SPARK_STAGES");
  ASSERT_TRUE(path);
  const GeneratedLog g = generate_log(16, 8, stages ? std::atoi(stages) : 1000, 200, 1);
  write_text(path, g.text);
  std::printf("%zu tasks, %zu bytes\n", g.tasks, g.text.size());
}

}  // namespace

}  // namespace test_import_spark
