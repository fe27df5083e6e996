// Idle is not unknown (issue 33 item 4): a Spark driver between jobs is `waiting`, in a
// log read whole and in one fed in chunks (a job's events come when it ends).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "importers/spark/spark_importer.hpp"
#include "importers/streaming.hpp"
#include "spark_log_util.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::test_import_spark_idle {
namespace {

using namespace testing::spark_log;
constexpr int64_t kMs = 1'000'000;

// A job of one stage with one 2-task stage on executor 1, from `at` ms.
std::string job(int id, int64_t at) {
  const std::string sid = std::to_string(id);
  std::string s = "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":" + sid +
                  ",\"Submission Time\":" + std::to_string(at) + ",\"Stage IDs\":[" + sid + "]}\n";
  s += "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":" + sid +
       ",\"Stage Attempt ID\":0,\"Stage Name\":\"collect\",\"Number of Tasks\":2,"
       "\"Submission Time\":" +
       std::to_string(at + 1) + "}}\n";
  s += task_end(id, 2 * id, "1", at + 2, at + 40, metrics(1, 35, 1));
  s += task_end(id, 2 * id + 1, "1", at + 2, at + 50, metrics(1, 45, 1));
  s += "{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":" + sid +
       ",\"Stage Attempt ID\":0,\"Submission Time\":" + std::to_string(at + 1) +
       ",\"Completion Time\":" + std::to_string(at + 51) + "}}\n";
  s += "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":" + sid +
       ",\"Completion Time\":" + std::to_string(at + 52) + "}\n";
  return s;
}

// The driver's (worker 0) activities as (type, start ms, end ms) from `t0` ms.
std::vector<std::tuple<ActivityType, int64_t, int64_t>> driver(const Trace& t, int64_t t0) {
  std::vector<std::tuple<ActivityType, int64_t, int64_t>> out;
  std::map<int, int64_t> open;
  for (const Event& e : t.events) {
    if (e.worker != 0 || e.is_message()) continue;
    if (e.kind == EventKind::start) open[int(e.activity)] = e.ts;
    if (e.kind == EventKind::end)
      out.emplace_back(e.activity, open.at(int(e.activity)) / kMs - t0, e.ts / kMs - t0);
  }
  return out;
}

TEST(SparkIdle, DriverBetweenJobsWaits) {
  const int64_t t0 = 1'700'000'000'000;
  // Two jobs 3 s apart: the driver runs the application's own code in between.
  const std::string log = executor_added("1", 2) + job(0, t0 + 100) + job(1, t0 + 3'100);
  using A = ActivityType;
  const std::vector<std::tuple<A, int64_t, int64_t>> expected = {
      {A::scheduling, 100, 102},         {A::waiting, 102, 150},
      {A::barrier_processing, 150, 151}, {A::scheduling, 151, 152},
      {A::waiting, 152, 3'100},          {A::scheduling, 3'100, 3'102},
      {A::waiting, 3'102, 3'150},        {A::barrier_processing, 3'150, 3'151},
      {A::scheduling, 3'151, 3'152}};
  const Trace whole = importers::spark::parse_event_log(log, "app-1");
  EXPECT_EQ(driver(whole, t0), expected);

  // Fed line by line: each job is an epoch of its own; the same timeline.
  auto stream = importers::spark::make_stream("app-1", importers::ImportOptions{});
  Trace fed;
  for (size_t a = 0; a < log.size();) {
    const size_t b = log.find('\n', a) + 1;
    stream->feed(std::string_view(log).substr(a, b - a), fed);
    a = b;
  }
  stream->finish(fed);
  EXPECT_EQ(driver(fed, t0), expected);

  // Nothing is unknown; the idle driver carries no CP.
  const Pag pag = build_pag(whole);
  std::vector<WindowSummary> ws;
  analyze_pag(pag, AnalysisOptions{}, [&](const WindowView& v) { ws.push_back(v.summary); });
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].diagnostics.unknown_share, 0.0);
  EXPECT_EQ(ws[0].cp.activity[int(A::unknown)], 0.0);
  EXPECT_EQ(ws[0].cp.activity[int(A::waiting)], 0.0);
  EXPECT_GT(ws[0].diagnostics.waiting_share, 0.5);
}

}  // namespace
}  // namespace snailtrail::test_import_spark_idle
