// "Tasks per stage" of `snailtrail report` for Spark event logs (report/stages.hpp): the
// embedded data of a hand-written 3-stage log against the distribution computed by hand
// (nearest-rank percentiles, GC, shuffle, spill, DAG edges, skew), the stages' CP against
// `analyze`'s operator table, and the command end to end.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <string>
#include <vector>

#include "importers/spark/spark_importer.hpp"
#include "process_util.hpp"
#include "report/stages.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_report_stages {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;  // ms
constexpr int64_t kMs = 1'000'000;          // ns

// A SparkListenerTaskEnd line shaped as Spark 3.x writes it (all fields of 3.3's
// JsonProtocol; times in ms, Shuffle Write Time in ns). Deserialization 1 ms,
// serialization 0, one ms of scheduler delay.
struct Task {
  int stage, id;
  const char* executor;
  int64_t launch;                                                      // ms after kT0
  int run, gc;                                                         // ms
  int64_t remote_read, local_read, written, memory_spill, disk_spill;  // bytes
};
std::string task_end(const Task& t) {
  const int64_t launch = kT0 + t.launch, finish = launch + 1 + t.run + 1;
  char buf[4096];
  std::snprintf(
      buf, sizeof buf,
      R"({"Event":"SparkListenerTaskEnd","Stage ID":%d,"Stage Attempt ID":0,"Task Type":"ShuffleMapTask","Task End Reason":{"Reason":"Success"},)"
      R"("Task Info":{"Task ID":%d,"Index":%d,"Attempt":0,"Partition ID":%d,"Launch Time":%lld,"Executor ID":"%s","Host":"h%s","Locality":"PROCESS_LOCAL","Speculative":false,"Getting Result Time":0,"Finish Time":%lld,"Failed":false,"Killed":false,"Accumulables":[]},)"
      R"("Task Executor Metrics":{"JVMHeapMemory":0,"JVMOffHeapMemory":0},)"
      R"("Task Metrics":{"Executor Deserialize Time":1,"Executor Deserialize CPU Time":900000,"Executor Run Time":%d,"Executor CPU Time":1000000,"Peak Execution Memory":0,"Result Size":2000,"JVM GC Time":%d,"Result Serialization Time":0,"Memory Bytes Spilled":%lld,"Disk Bytes Spilled":%lld,)"
      R"("Shuffle Read Metrics":{"Remote Blocks Fetched":1,"Local Blocks Fetched":1,"Fetch Wait Time":0,"Remote Bytes Read":%lld,"Remote Bytes Read To Disk":0,"Local Bytes Read":%lld,"Total Records Read":10,"Remote Requests Duration":0,"Push Based Shuffle":{"Corrupt Merged Block Chunks":0,"Merged Fetch Fallback Count":0,"Merged Remote Blocks Fetched":0,"Merged Local Blocks Fetched":0,"Merged Remote Chunks Fetched":0,"Merged Local Chunks Fetched":0,"Merged Remote Bytes Read":0,"Merged Local Bytes Read":0,"Merged Remote Requests Duration":0}},)"
      R"("Shuffle Write Metrics":{"Shuffle Bytes Written":%lld,"Shuffle Write Time":1000,"Shuffle Records Written":10},"Input Metrics":{"Bytes Read":0,"Records Read":0},"Output Metrics":{"Bytes Written":0,"Records Written":0},"Updated Blocks":[]}})"
      "\n",
      t.stage, t.id, t.id, t.id, static_cast<long long>(launch), t.executor, t.executor,
      static_cast<long long>(finish), t.run, t.gc, static_cast<long long>(t.memory_spill),
      static_cast<long long>(t.disk_spill), static_cast<long long>(t.remote_read),
      static_cast<long long>(t.local_read), static_cast<long long>(t.written));
  return buf;
}
std::string stage_line(const char* event, int id, const char* parents, int64_t submitted,
                       int64_t completed) {
  std::string s = std::string(R"({"Event":")") + event + R"(","Stage Info":{"Stage ID":)" +
                  std::to_string(id) + R"(,"Stage Attempt ID":0,"Stage Name":"stage)" +
                  std::to_string(id) +
                  R"( at Q.scala:1","Number of Tasks":4,"RDD Info":[],"Parent IDs":[)" + parents +
                  R"(],"Details":"","Submission Time":)" + std::to_string(kT0 + submitted);
  if (completed >= 0) s += ",\"Completion Time\":" + std::to_string(kT0 + completed);
  return s + R"(,"Accumulables":[],"Resource Profile Id":0},"Properties":{}})" + "\n";
}

// Stage 0 and 1 run side by side, stage 2 reads both (and names stage 5, which Spark
// skipped: not in the log, so no edge).
//   stage 0: run 10, 20, 30, 100 ms; GC 1, 2, 3, 4; writes 1000 B each; task 3 spills
//            2048 B in memory, 512 B on disk
//   stage 1: run 40, 50, 60 ms; GC 5 each; writes 500 B each; and a failed attempt
//   stage 2: run 30, 35 ms; reads 3000 + 1000 B and 1500 + 0 B
std::string hand_log() {
  std::string log =
      R"({"Event":"SparkListenerApplicationStart","App Name":"q","App ID":"app-1","Timestamp":1700000000000,"User":"u"})"
      "\n";
  for (const char* e : {"1", "2"})
    log +=
        std::string(
            R"({"Event":"SparkListenerExecutorAdded","Timestamp":1700000000000,"Executor ID":")") +
        e + R"(","Executor Info":{"Host":"h","Total Cores":4,"Log Urls":{}}})" + "\n";
  log +=
      R"({"Event":"SparkListenerJobStart","Job ID":0,"Submission Time":1700000000000,"Stage IDs":[0,1,2,5],"Properties":{}})"
      "\n";
  log += stage_line("SparkListenerStageSubmitted", 0, "", 1, -1);
  log += stage_line("SparkListenerStageSubmitted", 1, "", 1, -1);
  const std::vector<Task> first = {
      {0, 0, "1", 2, 10, 1, 0, 0, 1000, 0, 0}, {0, 1, "1", 2, 20, 2, 0, 0, 1000, 0, 0},
      {0, 2, "1", 2, 30, 3, 0, 0, 1000, 0, 0}, {0, 3, "1", 2, 100, 4, 0, 0, 1000, 2048, 512},
      {1, 4, "2", 2, 40, 5, 0, 0, 500, 0, 0},  {1, 5, "2", 2, 50, 5, 0, 0, 500, 0, 0},
      {1, 6, "2", 2, 60, 5, 0, 0, 500, 0, 0},
  };
  for (const Task& t : first) log += task_end(t);
  // A failed attempt of a stage 1 task (500 ms): left out of the numbers, counted.
  std::string failed = task_end({1, 9, "2", 2, 500, 50, 0, 0, 99, 0, 0});
  failed.replace(failed.find("\"Success\""), 9, "\"ExceptionFailure\"");
  failed.replace(failed.find("\"Failed\":false"), 14, "\"Failed\":true");
  log += failed;
  log += stage_line("SparkListenerStageCompleted", 0, "", 1, 110);
  log += stage_line("SparkListenerStageCompleted", 1, "", 1, 110);
  log += stage_line("SparkListenerStageSubmitted", 2, "0,1,5", 111, -1);
  log += task_end({2, 7, "1", 112, 30, 0, 3000, 1000, 0, 0, 0});
  log += task_end({2, 8, "2", 112, 35, 0, 1500, 0, 0, 0, 0});
  log += stage_line("SparkListenerStageCompleted", 2, "0,1,5", 111, 160);
  log +=
      R"({"Event":"SparkListenerJobEnd","Job ID":0,"Completion Time":1700000000161,"Job Result":{"Result":"JobSucceeded"}})"
      "\n";
  return log;
}

// The importer keeps what the stage page needs from real 3.x TaskEnd lines.
TEST(ReportStages, ImporterKeepsTheStagePageMetrics) {
  importers::spark::TaskTable table;
  importers::spark::SparkOptions o;
  o.table = &table;
  importers::spark::parse_event_log(hand_log(), "hand", o);
  ASSERT_EQ(table.tasks.size(), 10u);
  EXPECT_TRUE(table.tasks[7].failed);
  EXPECT_FALSE(table.tasks[6].failed);
  const auto& t3 = table.tasks[3];
  EXPECT_EQ(t3.stage_id, 0u);
  EXPECT_EQ(t3.duration_ns, 100 * kMs);
  EXPECT_EQ(t3.gc_ns, 4 * kMs);
  EXPECT_EQ(t3.shuffle_write_bytes, 1000);
  EXPECT_EQ(t3.memory_spill_bytes, 2048);
  EXPECT_EQ(t3.disk_spill_bytes, 512);
  EXPECT_EQ(table.tasks[8].shuffle_read_bytes, 4000);
  ASSERT_EQ(table.stages.size(), 3u);
  EXPECT_EQ(table.stages[2].parents, (std::vector<uint32_t>{0, 1, 5}));
  EXPECT_EQ(table.stages[2].name, "stage2 at Q.scala:1");
  // Without a table the import is unchanged (and keeps nothing).
  EXPECT_EQ(importers::spark::parse_event_log(hand_log(), "hand").events.size(),
            importers::spark::parse_event_log(hand_log(), "hand", o).events.size());
}

TEST(ReportStages, DistributionMatchesTheHandComputation) {
  importers::spark::TaskTable table;
  importers::spark::SparkOptions o;
  o.table = &table;
  importers::spark::parse_event_log(hand_log(), "hand", o);
  const auto st = report::summarize_stages(table, {{0, 0.5}, {2, 0.25}, {9, 0.1}});
  ASSERT_EQ(st.size(), 3u);
  // Nearest rank: p50 of 4 is the 2nd, p95 of 4 the 4th; of 3: 2nd and 3rd; of 2: 1st, 2nd.
  EXPECT_EQ(st[0].tasks, 4u);
  EXPECT_EQ(st[0].min_ns, 10 * kMs);
  EXPECT_EQ(st[0].median_ns, 20 * kMs);
  EXPECT_EQ(st[0].p95_ns, 100 * kMs);
  EXPECT_EQ(st[0].max_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(st[0].skew, 5.0);
  EXPECT_TRUE(st[0].skewed);
  EXPECT_EQ(st[0].gc_ns, 10 * kMs);
  EXPECT_EQ(st[0].total_ns, 160 * kMs);
  EXPECT_EQ(st[0].shuffle_write_bytes, 4000);
  EXPECT_EQ(st[0].shuffle_read_bytes, 0);
  EXPECT_EQ(st[0].memory_spill_bytes, 2048);
  EXPECT_EQ(st[0].disk_spill_bytes, 512);
  // 20 bins over [10, 100] ms, 4.5 ms wide: 10 -> 0, 20 -> 2, 30 -> 4, 100 -> 19.
  std::vector<uint32_t> h(20, 0);
  h[0] = h[2] = h[4] = h[19] = 1;
  EXPECT_EQ(st[0].histogram, h);
  EXPECT_DOUBLE_EQ(st[0].cp, 0.5);

  EXPECT_EQ(st[1].tasks, 3u);
  EXPECT_EQ(st[1].failed_tasks, 1u);
  EXPECT_EQ(st[0].failed_tasks, 0u);
  EXPECT_EQ(st[1].min_ns, 40 * kMs);
  EXPECT_EQ(st[1].median_ns, 50 * kMs);
  EXPECT_EQ(st[1].p95_ns, 60 * kMs);
  EXPECT_EQ(st[1].max_ns, 60 * kMs);
  EXPECT_DOUBLE_EQ(st[1].skew, 1.2);
  EXPECT_FALSE(st[1].skewed);
  EXPECT_EQ(st[1].gc_ns, 15 * kMs);
  EXPECT_EQ(st[1].shuffle_write_bytes, 1500);
  EXPECT_EQ(st[1].cp, 0.0);  // not in the CP list

  EXPECT_EQ(st[2].median_ns, 30 * kMs);
  EXPECT_EQ(st[2].p95_ns, 35 * kMs);
  EXPECT_FALSE(st[2].skewed);
  EXPECT_EQ(st[2].shuffle_read_bytes, 5500);
  EXPECT_DOUBLE_EQ(st[2].cp, 0.25);
  // The DAG: 0 -> 2 and 1 -> 2; the skipped stage 5 is no node and no edge.
  EXPECT_TRUE(st[0].parents.empty());
  EXPECT_TRUE(st[1].parents.empty());
  EXPECT_EQ(st[2].parents, (std::vector<uint32_t>{0, 1}));
}

// The percent of `stage N` in `analyze --summary operator`'s table (-1 if absent).
double analyze_cp(const std::string& out, int stage) {
  const std::string key = "stage " + std::to_string(stage) + " (";
  for (const std::string& line : testing::lines_of(out)) {
    if (line.find(key) == std::string::npos) continue;
    const size_t pct = line.find('%');
    size_t b = line.rfind(' ', pct);
    return std::stod(line.substr(b + 1, pct - b - 1)) / 100;
  }
  return -1;
}

// The command: a Spark log gets the page (auto and --view stages), its JSON holds the hand
// numbers and the CP `analyze` finds for the stages; bad input is a clear error.
TEST(ReportStages, CommandWritesTheStagesPage) {
  const std::string in = testing::write_temp("stages-eventlog", hand_log());
  const std::string html = testing::write_temp("stages.html", "");
  const testing::CommandResult r = testing::run_binary("report " + in + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = testing::slurp(html);
  EXPECT_NE(page.find("<title>snailtrail report: Tasks per stage</title>"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_DATA*/"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_JS*/"), std::string::npos);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);

  const std::string json = testing::write_temp("stages.json", "");
  const testing::CommandResult j =
      testing::run_binary("report " + in + " --view stages -f json -o " + json);
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("--window auto chose the whole trace"), std::string::npos) << j.out;
  simdjson::dom::parser parser;
  const std::string text = testing::slurp(json);
  simdjson::dom::element doc = parser.parse(text);
  EXPECT_EQ(std::string_view(doc["view"]), "stages");
  EXPECT_EQ(uint64_t(doc["tasks_total"]), 9u);
  simdjson::dom::array stages = doc["stages"];
  ASSERT_EQ(stages.size(), 3u);
  const std::vector<std::vector<int64_t>> want = {
      {10, 20, 100, 100}, {40, 50, 60, 60}, {30, 30, 35, 35}};
  const testing::CommandResult a =
      testing::run_binary("analyze " + in + " --summary operator --no-progress");
  ASSERT_EQ(a.code, 0) << a.out;
  size_t k = 0;
  for (simdjson::dom::element s : stages) {
    EXPECT_EQ(int64_t(s["id"]), int64_t(k));
    simdjson::dom::array d = s["duration_ns"];
    size_t i = 0;
    for (simdjson::dom::element v : d) EXPECT_EQ(int64_t(v), want[k][i++] * kMs) << k;
    EXPECT_EQ(bool(s["skewed"]), k == 0) << k;
    uint64_t sum = 0;
    for (simdjson::dom::element c : simdjson::dom::array(s["histogram"])) sum += uint64_t(c);
    EXPECT_EQ(sum, uint64_t(s["tasks"])) << k;
    // As analyze's table (one decimal of a percent).
    const double cp = analyze_cp(a.out, static_cast<int>(k));
    ASSERT_GE(cp, 0) << a.out;
    EXPECT_NEAR(double(s["cp"]), cp, 0.0006) << k << a.out;
    ++k;
  }

  const testing::CommandResult flow =
      testing::run_binary("report " + in + " --view dataflow -f json -o - --no-progress");
  ASSERT_EQ(flow.code, 0) << flow.out;
  EXPECT_NE(flow.out.find("\"timelines\""), std::string::npos);

  const std::string bad = testing::write_temp(
      "stages-bad-eventlog",
      hand_log().substr(0, 400) + "\n{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":\"x\"}\n");
  const testing::CommandResult e = testing::run_binary("report " + bad + " --view stages -o -");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("stages-bad-eventlog"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("line "), std::string::npos) << e.out;
}

}  // namespace
}  // namespace snailtrail::test_report_stages
