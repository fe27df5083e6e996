// Which part of a Spark application was analyzed (issue 33 item 4): the importer records
// SparkListenerApplicationStart/End on the trace, and the table's heading and JSONL's run
// line say what the windows cover of it (docs/OUTPUT.md "Coverage").
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <string>

#include "importers/spark/spark_importer.hpp"
#include "process_util.hpp"
#include "spark_log_util.hpp"

namespace snailtrail::test_import_spark_span {
namespace {

using namespace testing::spark_log;
using testing::run_binary;
using testing::slurp;
using testing::TempDirTest;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000'000;  // the application's start (ms)

std::string app_start(int64_t ms) {
  return "{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"power\",\"App ID\":"
         "\"app-20231114221320-0001\",\"Timestamp\":" +
         std::to_string(ms) + ",\"User\":\"spark\"}\n";
}
std::string app_end(int64_t ms) {
  return "{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":" + std::to_string(ms) + "}\n";
}

// One job of one 2-task stage on executor 1, submitted at `at` ms, ending at `end` ms.
std::string job(int64_t at, int64_t end) {
  std::string s = "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0,\"Submission Time\":" +
                  std::to_string(at) + ",\"Stage IDs\":[0]}\n";
  s += "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":0,\"Stage "
       "Attempt ID\":0,\"Stage Name\":\"collect\",\"Number of Tasks\":2,\"Submission Time\":" +
       std::to_string(at + 10) + "}}\n";
  s += task_end(0, 0, "1", at + 20, end - 30, metrics(10, end - at - 80, 5));
  s += task_end(0, 1, "1", at + 20, end - 40, metrics(10, end - at - 90, 5));
  s += "{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":0,\"Stage "
       "Attempt ID\":0,\"Submission Time\":" +
       std::to_string(at + 10) + ",\"Completion Time\":" + std::to_string(end - 10) + "}}\n";
  s +=
      "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0,\"Completion Time\":" + std::to_string(end) +
      "}\n";
  return s;
}

// The application runs 142.5 s; its only job from +80 s to +142.1 s.
std::string late_job_log(bool with_end = true) {
  return app_start(kT0) + executor_added("1", 2) + job(kT0 + 80'000, kT0 + 142'100) +
         (with_end ? app_end(kT0 + 142'500) : std::string());
}

TEST(SparkApplicationSpan, ImporterRecordsStartAndEnd) {
  const Trace t = importers::spark::parse_event_log(late_job_log(), "app.log");
  ASSERT_TRUE(t.application.has_value());
  EXPECT_EQ(t.application->start, kT0 * kMs);
  ASSERT_TRUE(t.application->end.has_value());
  EXPECT_EQ(*t.application->end, (kT0 + 142'500) * kMs);
  // A log still being written has no end yet; a log without ApplicationStart, no span.
  const Trace open = importers::spark::parse_event_log(late_job_log(false), "app.log");
  ASSERT_TRUE(open.application.has_value());
  EXPECT_FALSE(open.application->end.has_value());
  const Trace none = importers::spark::parse_event_log(
      executor_added("1", 2) + job(kT0 + 80'000, kT0 + 142'100), "app.log");
  EXPECT_FALSE(none.application.has_value());
  // A negative timestamp is an error with its line, as for every other time.
  try {
    importers::spark::parse_event_log(app_start(-5), "bad.log");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.log: line 1"), std::string::npos) << e.what();
  }
}

class SparkSpanCli : public TempDirTest {
 protected:
  SparkSpanCli() : TempDirTest("sparkspan") {}
};

TEST_F(SparkSpanCli, HeadingAndRunLineSayWhichPartWasAnalyzed) {
  const std::string log = path("app-20231114221320-0001").string();
  std::ofstream(log) << late_job_log();
  const auto table = run_binary("analyze " + log);
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("over 62.1s of the application's 142.5s (from +80s to +142.1s)"),
            std::string::npos)
      << table.out;
  const std::string jsonl = path("out.jsonl").string();
  const auto r = run_binary("analyze " + log + " --format jsonl -o " + jsonl);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = slurp(jsonl);
  const size_t last = text.rfind("{\"run\"");
  ASSERT_NE(last, std::string::npos) << text;
  simdjson::dom::parser parser;
  const simdjson::padded_string line(text.substr(last));
  const simdjson::dom::element app = parser.parse(line)["run"]["application"];
  EXPECT_EQ(app["start_ns"].get_int64().value(), kT0 * kMs);
  EXPECT_EQ(app["end_ns"].get_int64().value(), (kT0 + 142'500) * kMs);
  EXPECT_EQ(app["covered_from_ns"].get_int64().value(), (kT0 + 80'000) * kMs);
  EXPECT_EQ(app["covered_to_ns"].get_int64().value(), (kT0 + 142'100) * kMs);
  EXPECT_EQ(app["covered_ns"].get_int64().value(), 62'100 * kMs);
}

TEST_F(SparkSpanCli, LogWithoutEndSaysSo) {
  const std::string log = path("app-20231114221320-0002").string();
  std::ofstream(log) << late_job_log(false);
  const auto table = run_binary("analyze " + log);
  ASSERT_EQ(table.code, 0) << table.out;
  std::string flat;  // the heading as one line (the table wraps it)
  for (char c : table.out)
    if (c != '\n' && !(c == ' ' && !flat.empty() && flat.back() == ' ')) flat += c;
  EXPECT_NE(flat.find("over 62.1s of the application (from +80s to +142.1s after its start; the "
                      "log has no end)"),
            std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace snailtrail::test_import_spark_span
