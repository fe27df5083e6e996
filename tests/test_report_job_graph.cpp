// The "Job graph" of `snailtrail report` (report/job_graph.hpp): the embedded graph of a
// hand-written dataflow trace (3 operators, 2 workers, one exchange) against values
// computed by hand (nodes, the edge, parallelism, busy and output per worker, the stall
// window) and its CP per operator and per worker against `analyze` of the same trace.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "process_util.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_report_job_graph {
namespace {

// Times in µs. Operators 1 src, 2 map, 3 count; workers 0 (w0) and 1 (w1).
//   w0: src input [0,20), map processing [20,50), map serialization [50,60), sends one
//       batch to w1 at 60, count processing [60,90), waiting [90,100), count [100,160)
//   w1: src input [0,10), map processing [10,40), waiting [40,65) (the batch arrives at
//       62), count processing [65,100), waiting [100,160)
// The exchange map -> count: the send follows map's serialization, the first activity
// with an operator after the receipt is count's processing.
std::string hand_trace() {
  std::string t = R"({"meta":"worker","id":0,"name":"w0"})"
                  "\n"
                  R"({"meta":"worker","id":1,"name":"w1"})"
                  "\n"
                  R"({"meta":"operator","id":1,"name":"src"})"
                  "\n"
                  R"({"meta":"operator","id":2,"name":"map"})"
                  "\n"
                  R"({"meta":"operator","id":3,"name":"count"})"
                  "\n";
  auto act = [&](int w, const char* type, int op, int from, int to) {
    const std::string o = op > 0 ? ",\"operator\":" + std::to_string(op) : "";
    t += "{\"ts\":" + std::to_string(from * 1000) + ",\"worker\":" + std::to_string(w) +
         ",\"activity\":\"" + type + "\",\"event\":\"start\"" + o + "}\n";
    t += "{\"ts\":" + std::to_string(to * 1000) + ",\"worker\":" + std::to_string(w) +
         ",\"activity\":\"" + type + "\",\"event\":\"end\"" + o + "}\n";
  };
  act(0, "input", 1, 0, 20);
  act(0, "processing", 2, 20, 50);
  act(0, "serialization", 2, 50, 60);
  t +=
      R"({"ts":60000,"worker":0,"activity":"data_message","event":"send","correlator":1,"remote":1})"
      "\n";
  act(0, "processing", 3, 60, 90);
  act(0, "waiting", 0, 90, 100);
  act(0, "processing", 3, 100, 160);
  act(1, "input", 1, 0, 10);
  act(1, "processing", 2, 10, 40);
  // The receipt falls inside the wait: each worker's events in time order.
  t +=
      R"({"ts":40000,"worker":1,"activity":"waiting","event":"start"})"
      "\n"
      R"({"ts":62000,"worker":1,"activity":"data_message","event":"recv","correlator":1,"remote":0})"
      "\n"
      R"({"ts":65000,"worker":1,"activity":"waiting","event":"end"})"
      "\n";
  act(1, "processing", 3, 65, 100);
  act(1, "waiting", 0, 100, 160);
  return t;
}

std::map<std::string, double> number_map(simdjson::dom::object o) {
  std::map<std::string, double> m;
  for (auto [k, v] : o) m[std::string(k)] = double(v);
  return m;
}

TEST(ReportJobGraph, HandTraceMatchesHandValuesAndAnalyze) {
  const std::string in = testing::write_temp("jobgraph.jsonl", hand_trace());
  const testing::CommandResult r =
      testing::run_binary("report " + in + " --window whole -f json -o - --no-progress");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  simdjson::dom::element g = doc["jobgraph"];
  EXPECT_EQ(int64_t(g["length_ns"]), 160000);
  EXPECT_EQ(uint64_t(g["windows"]), 1u);
  EXPECT_EQ(uint64_t(g["stall_windows"]), 0u);
  std::vector<std::string> workers;
  for (simdjson::dom::element w : simdjson::dom::array(g["workers"]))
    workers.emplace_back(std::string_view(w));
  ASSERT_EQ(workers, (std::vector<std::string>{"w0", "w1"}));

  // One channel, map -> count, one message.
  simdjson::dom::array channels = g["channels"];
  ASSERT_EQ(channels.size(), 1u);
  std::vector<int64_t> ch;
  for (simdjson::dom::element x : simdjson::dom::array(channels.at(0))) ch.push_back(int64_t(x));
  EXPECT_EQ(ch, (std::vector<int64_t>{2, 3, 1}));

  // Busy and output per (operator, worker) by hand, µs over the 160 µs analyzed.
  const std::map<int, std::vector<std::vector<double>>> want = {
      {1, {{20, 0}, {10, 0}}}, {2, {{40, 10}, {30, 0}}}, {3, {{90, 0}, {35, 0}}}};
  const std::map<int, std::string> names = {{1, "src"}, {2, "map"}, {3, "count"}};
  const std::map<int, int64_t> depth = {{1, 0}, {2, 0}, {3, 1}};

  // analyze's CP of the same trace and window (its JSONL window line).
  const testing::CommandResult a =
      testing::run_binary("analyze " + in + " --window whole --format jsonl --no-progress");
  ASSERT_EQ(a.code, 0) << a.out;
  simdjson::dom::parser ap;
  simdjson::dom::element line = ap.parse(testing::lines_of(a.out).at(0));
  const std::map<std::string, double> op_cp = number_map(line["operator"]);
  const std::map<std::string, double> worker_cp = number_map(line["worker"]);
  ASSERT_EQ(op_cp.size(), 3u) << a.out;

  simdjson::dom::array ops = g["operators"];
  ASSERT_EQ(ops.size(), 3u);
  std::vector<double> row_cp_sum(2, 0.0);
  for (simdjson::dom::element op : ops) {
    const int id = static_cast<int>(int64_t(op["id"]));
    ASSERT_TRUE(want.count(id)) << id;
    EXPECT_EQ(std::string_view(op["name"]), names.at(id));
    EXPECT_EQ(int64_t(op["depth"]), depth.at(id)) << id;
    EXPECT_EQ(int64_t(op["workers"]), 2) << id;
    const auto& w = want.at(id);
    EXPECT_NEAR(double(op["busy"]), (w[0][0] + w[1][0]) / (2 * 160.0), 1e-6) << id;
    EXPECT_NEAR(double(op["output"]), (w[0][1] + w[1][1]) / (2 * 160.0), 1e-6) << id;
    EXPECT_NEAR(double(op["cp"]), op_cp.at(names.at(id)), 1e-5) << id;
    simdjson::dom::array rows = op["rows"];
    ASSERT_EQ(rows.size(), 2u) << id;
    double sum = 0;
    for (simdjson::dom::element row : rows) {
      simdjson::dom::array x = row;
      const size_t k = size_t(int64_t(x.at(0)));
      ASSERT_LT(k, 2u);
      EXPECT_NEAR(double(x.at(1)), w[k][0] / 160.0, 1e-6) << id << " " << k;
      EXPECT_NEAR(double(x.at(2)), w[k][1] / 160.0, 1e-6) << id << " " << k;
      sum += double(x.at(3));
      row_cp_sum[k] += double(x.at(3));
    }
    EXPECT_NEAR(sum, double(op["cp"]), 1e-5) << id;
  }
  // Per worker over all its activities: busy by hand, CP as analyze's worker CP.
  const std::vector<double> busy = {(20 + 40 + 90) / 160.0, (10 + 30 + 35) / 160.0};
  for (simdjson::dom::element row : simdjson::dom::array(g["worker_totals"])) {
    simdjson::dom::array x = row;
    const size_t k = size_t(int64_t(x.at(0)));
    ASSERT_LT(k, 2u);
    EXPECT_NEAR(double(x.at(1)), busy[k], 1e-6) << k;
    EXPECT_NEAR(double(x.at(2)), k == 0 ? 10 / 160.0 : 0.0, 1e-6) << k;
    EXPECT_NEAR(double(x.at(3)), worker_cp.at(workers[k]), 1e-5) << k;
    EXPECT_NEAR(row_cp_sum[k], double(x.at(3)), 1e-5) << k;  // all activities carry an op
  }
}

// In 50 µs windows, [100, 150) holds no end of an operator's activity (w0's count runs
// through it, w1 waits): a stall, kept apart from the windows around it.
TEST(ReportJobGraph, WindowWithoutACompletedActivityIsAStall) {
  const std::string in = testing::write_temp("jobgraph-stall.jsonl", hand_trace());
  const testing::CommandResult r =
      testing::run_binary("report " + in + " --window 50us -f json -o - --no-progress");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element g = parser.parse(r.out)["jobgraph"];
  EXPECT_EQ(uint64_t(g["windows"]), 4u);
  EXPECT_EQ(uint64_t(g["stall_windows"]), 1u);
  std::vector<uint64_t> stalls;
  for (simdjson::dom::element p : simdjson::dom::array(g["points"]))
    stalls.push_back(uint64_t(p["stalls"]));
  EXPECT_EQ(stalls, (std::vector<uint64_t>{0, 0, 1, 0}));
  // The HTML page carries the section and its script.
  const testing::CommandResult h = testing::run_binary("report " + in + " -o - --no-progress");
  ASSERT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("id=\"sec-jobgraph\""), std::string::npos);
  EXPECT_NE(h.out.find("drawGraph"), std::string::npos);
}

// The closed loop's decisions and migrations come from `run --stats-json` (not the trace):
// marked at time_s * 1e9 ns of trace time; a file that is not such JSON is named.
TEST(ReportJobGraph, StatsJsonMarksDecisionsAndMigrations) {
  const std::string in = testing::write_temp("jobgraph-marks.jsonl", hand_trace());
  const std::string stats = testing::write_temp(
      "jobgraph-stats.json",
      R"({"decisions": [{"time_s": 5e-05, "kind": "scale", "active_workers": 2, "reason": "r"}],)"
      R"( "migrations": [{"strategy": "batched", "start_s": 6e-05, "end_s": 8e-05, "bins_moved": 4}]})");
  const testing::CommandResult r = testing::run_binary(
      "report " + in + " --window 50us --stats-json " + stats + " -f json -o - --no-progress");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::array marks = parser.parse(r.out)["jobgraph"]["marks"];
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(std::string_view(marks.at(0)["kind"]), "decision");
  EXPECT_EQ(int64_t(marks.at(0)["t_ns"]), 50000);
  EXPECT_EQ(std::string_view(marks.at(0)["text"]), "scale: 2 active workers; r");
  EXPECT_EQ(std::string_view(marks.at(1)["kind"]), "migration");
  EXPECT_EQ(int64_t(marks.at(1)["t0_ns"]), 60000);
  EXPECT_EQ(int64_t(marks.at(1)["t1_ns"]), 80000);

  const std::string bad = testing::write_temp("jobgraph-bad-stats.json", "[1, 2");
  const testing::CommandResult e =
      testing::run_binary("report " + in + " --stats-json " + bad + " -o - --no-progress");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("jobgraph-bad-stats.json"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace snailtrail::test_report_job_graph
