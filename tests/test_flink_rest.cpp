// `scale policy --flink URL` and `scale manage --flink URL` (scale/flink_rest.hpp,
// scale/sources.hpp): Flink REST responses shaped like a Flink 1.18 JobManager's (GET
// /jobs, /jobs/:jobid, /jobs/:jobid/vertices/:vertexid/subtasks/metrics, PUT
// /jobs/:jobid/resource-requirements) parsed by hand-checked expectations, and the whole
// commands against mock JobManagers on 127.0.0.1 reaching DS2's hand-computed decisions.
#include <gtest/gtest.h>
#include <httplib.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"
#include "scale/flink_rest.hpp"
#include "scale/sources.hpp"

namespace snailtrail::scale::test_flink_rest {
namespace {

const std::string kJob = "6b1af540c0c0bb3fcfcad50ac037c862";
const std::string kSource = "cbc357ccb763df2852fee8c4fc7d55f2";
const std::string kFlatMap = "90bea66de1c231edf33913ecd54406c1";
const std::string kCount = "0a448493b4782967b150582570326227";

const std::string kJobsBody =
    R"({"jobs":[{"id":"a1b2c3d4e5f60718293a4b5c6d7e8f90","status":"FINISHED"},)"
    R"({"id":")" +
    kJob + R"(","status":"RUNNING"}]})";

// GET /jobs/:jobid of a word count: Source (1) -> Flat Map (2) -> Count (1).
std::string job_body() {
  auto vertex = [](const std::string& id, const std::string& name, int p) {
    return R"({"id":")" + id + R"(","name":")" + name + R"(","maxParallelism":128,"parallelism":)" +
           std::to_string(p) +
           R"(,"status":"RUNNING","start-time":1700000000123,"end-time":-1,"duration":61234,)"
           R"("tasks":{"RUNNING":)" +
           std::to_string(p) +
           R"(,"FINISHED":0,"CANCELED":0,"FAILED":0},"metrics":{"read-bytes":0,)"
           R"("read-bytes-complete":true,"write-bytes":1234,"write-bytes-complete":true,)"
           R"("read-records":0,"read-records-complete":true,"write-records":100,)"
           R"("write-records-complete":true,"accumulated-backpressured-time":0,)"
           R"("accumulated-idle-time":0,"accumulated-busy-time":"NaN"}})";
  };
  auto node = [](const std::string& id, int p, const std::string& description,
                 const std::string& input) {
    std::string s = R"({"id":")" + id + R"(","parallelism":)" + std::to_string(p) +
                    R"(,"operator":"","operator_strategy":"","description":")" + description +
                    R"(")";
    if (!input.empty())
      s += R"(,"inputs":[{"num":0,"id":")" + input +
           R"(","ship_strategy":"HASH","exchange":"pipelined_bounded"}])";
    return s + R"(,"optimizer_properties":{}})";
  };
  return R"({"jid":")" + kJob +
         R"(","name":"WordCount","isStoppable":false,"state":"RUNNING","start-time":1700000000000,)"
         R"("end-time":-1,"duration":61500,"maxParallelism":-1,"now":1700000061500,)"
         R"("timestamps":{"RUNNING":1700000000100,"CREATED":1700000000000},"vertices":[)" +
         vertex(kSource, "Source: Socket Stream", 1) + "," + vertex(kFlatMap, "Flat Map", 2) + "," +
         vertex(kCount, "Keyed Aggregation -> Sink: Print to Std. Out", 1) +
         R"(],"status-counts":{"RUNNING":3},"plan":{"jid":")" + kJob +
         R"(","name":"WordCount","type":"STREAMING","nodes":[)" +
         node(kCount, 1, "Keyed Aggregation<br/>+- Sink: Print to Std. Out<br/>", kFlatMap) + "," +
         node(kFlatMap, 2, "Flat Map<br/>", kSource) + "," +
         node(kSource, 1, "Source: Socket Stream<br/>", "") + "]}}";
}

// GET .../subtasks/metrics?get=...&agg=avg,max,sum: one object per metric.
std::string metrics_body(const std::string& busy_avg, double busy_max, double in, double out) {
  return R"([{"id":"busyTimeMsPerSecond","max":)" + std::to_string(busy_max) + R"(,"avg":)" +
         busy_avg +
         R"(,"sum":0.0},{"id":"idleTimeMsPerSecond","max":500.0,"avg":400.0,"sum":800.0},)"
         R"({"id":"backPressuredTimeMsPerSecond","max":0.0,"avg":0.0,"sum":0.0},)"
         R"({"id":"numRecordsInPerSecond","max":)" +
         std::to_string(in) + R"(,"avg":0.0,"sum":)" + std::to_string(in) +
         R"(},{"id":"numRecordsOutPerSecond","max":0.0,"avg":0.0,"sum":)" + std::to_string(out) +
         "}]";
}

// The metrics: the source emits 10000 records/s busy 500 ms/s; the flat map turns them
// into 50000 words at 500 ms/s busy per subtask; the count takes 50000/s and is busy all
// the time.
std::map<std::string, std::string> vertex_metrics() {
  return {{kSource, metrics_body("500.0", 500, 0, 10000)},
          {kFlatMap, metrics_body("500.0", 520, 10000, 50000)},
          {kCount, metrics_body("1000.0", 1000, 50000, 0)}};
}

TEST(FlinkRest, ParsesTheJobGraph) {
  const FlinkJob job = parse_flink_job(job_body(), "job");
  EXPECT_EQ(job.id, kJob);
  EXPECT_EQ(job.name, "WordCount");
  EXPECT_EQ(job.state, "RUNNING");
  ASSERT_EQ(job.topology.size(), 3u);
  EXPECT_EQ(job.topology.names[1], "Flat Map");
  EXPECT_EQ(job.topology.ids[1], kFlatMap);
  EXPECT_EQ(job.topology.parallelism, (std::vector<uint32_t>{1, 2, 1}));
  EXPECT_EQ(job.topology.edges, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 2}, {0, 1}}));
  EXPECT_EQ(job.topology.topological_order(), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(parse_running_job(kJobsBody, "jobs"), kJob);
  EXPECT_THROW(parse_running_job(R"({"jobs":[]})", "jobs"), std::runtime_error);
  EXPECT_THROW(parse_flink_job("{\"jid\":", "job"), std::runtime_error);
  EXPECT_THROW(parse_flink_job(R"({"jid":"x","name":"n","state":"RUNNING","vertices":[]})", "job"),
               std::runtime_error);
}

TEST(FlinkRest, MetricsAndRates) {
  FlinkVertexMetrics m = parse_flink_vertex_metrics(metrics_body("500.0", 520, 10000, 50000), "m");
  EXPECT_DOUBLE_EQ(m.busy_ms_avg, 500);
  EXPECT_DOUBLE_EQ(m.busy_ms_max, 520);
  EXPECT_DOUBLE_EQ(m.idle_ms_avg, 400);
  EXPECT_DOUBLE_EQ(m.backpressured_ms_avg, 0);
  EXPECT_DOUBLE_EQ(m.records_in, 10000);
  EXPECT_DOUBLE_EQ(m.records_out, 50000);
  // Legacy sources report busy time as "NaN".
  m = parse_flink_vertex_metrics(metrics_body("\"NaN\"", 0, 0, 10000), "m");
  EXPECT_TRUE(std::isnan(m.busy_ms_avg));

  FlinkJob job = parse_flink_job(job_body(), "job");
  const auto vm = vertex_metrics();
  for (uint32_t op = 0; op < 3; ++op)
    job.metrics[op] = parse_flink_vertex_metrics(vm.at(job.topology.ids[op]), "m");
  const std::vector<InstanceRates> r = flink_instance_rates(job);
  ASSERT_EQ(r.size(), 4u);  // 1 + 2 + 1 subtasks
  // Flat map subtask: 5000 records in over 0.5 s busy = 10000/s true processing,
  // 25000 out / 0.5 s = 50000/s true output; observed: per second.
  EXPECT_EQ(r[1].op, 1u);
  EXPECT_DOUBLE_EQ(r[1].true_processing, 10000);
  EXPECT_DOUBLE_EQ(r[1].true_output, 50000);
  EXPECT_DOUBLE_EQ(r[1].observed_processing, 5000);
  EXPECT_DOUBLE_EQ(r[3].true_processing, 50000);  // the count: 50000 in, busy all the time
}

// A JobManager on a free loopback port answering with the fixtures.
class MockJobManager {
 public:
  MockJobManager() {
    server_.Get("/jobs", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kJobsBody, "application/json");
    });
    server_.Get("/jobs/" + kJob, [this](const httplib::Request&, httplib::Response& res) {
      ++requests;
      res.set_content(job_body(), "application/json");
    });
    server_.Get(R"(/jobs/([0-9a-f]+)/vertices/([0-9a-f]+)/subtasks/metrics)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  ++requests;
                  const auto vm = vertex_metrics();
                  auto it = vm.find(req.matches[2]);
                  if (req.matches[1] != kJob || it == vm.end() ||
                      req.get_param_value("get").find("busyTimeMsPerSecond") == std::string::npos) {
                    res.status = 404;
                    res.set_content(R"({"errors":["Not found."]})", "application/json");
                    return;
                  }
                  res.set_content(it->second, "application/json");
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~MockJobManager() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> requests{0};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

class FlinkPolicyCli : public testing::TempDirTest {
 protected:
  FlinkPolicyCli() : TempDirTest("flink") {}
  testing::CommandResult policy(const std::string& args) {
    return testing::run_binary("scale policy " + args);
  }
};

TEST_F(FlinkPolicyCli, DrivesDs2ToItsDecision) {
  MockJobManager jm;
  // Sources at their observed 10000/s: the flat map's 2 subtasks of 10000/s true rate
  // need 1; the count (50000/s needed, 50000/s true) keeps its 1.
  testing::CommandResult r = policy("--flink " + jm.url() + " -f json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("parallelism": {"Source: Socket Stream": 1, "Flat Map": 1, )"
                       R"("Keyed Aggregation -> Sink: Print to Std. Out": 1})"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(jm.requests.load(), 1 + 3);  // the job, then each vertex's metrics
  // The source's true output (10000 records in 0.5 s busy = 20000/s) as target: the flat
  // map needs 20000 / 10000 = 2, the count 20000 x 5 / 50000 = 2.
  r = policy("--flink " + jm.url() + " --job " + kJob + " --source-target true -f json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("parallelism": {"Source: Socket Stream": 1, "Flat Map": 2, )"
                       R"("Keyed Aggregation -> Sink: Print to Std. Out": 2})"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("target_rate": {"Source: Socket Stream": 20000, "Flat Map": 20000, )"
                       R"("Keyed Aggregation -> Sink: Print to Std. Out": 100000})"),
            std::string::npos)
      << r.out;
  // The table names the job.
  r = policy("--flink " + jm.url());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Flink job " + kJob + " \"WordCount\" (RUNNING)"), std::string::npos)
      << r.out;
  // An unknown job: the error names the URL and the HTTP status.
  r = policy("--flink " + jm.url() + " --job ffffffffffffffffffffffffffffffff");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("HTTP 404"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(jm.url() + "/jobs/ffffffffffffffffffffffffffffffff"), std::string::npos)
      << r.out;
}

// ---- scale manage --flink -----------------------------------------------------------

// The body of PUT /jobs/:jobid/resource-requirements, checked by hand.
TEST(FlinkRest, ResourceRequirementsBody) {
  const FlinkJob job = parse_flink_job(job_body(), "job");
  EXPECT_EQ(flink_resource_requirements(job.topology, {1, 3, 2}),
            "{\"" + kSource + R"(": {"parallelism": {"lowerBound": 1, "upperBound": 1}}, ")" +
                kFlatMap + R"(": {"parallelism": {"lowerBound": 1, "upperBound": 3}}, ")" + kCount +
                R"(": {"parallelism": {"lowerBound": 1, "upperBound": 2}}})");
}

// A JobManager whose job follows its parallelism, as Flink's adaptive scheduler does after
// PUT .../resource-requirements: the source could emit 20000 sentences/s, every flat map
// subtask processes 10000/s and every count subtask 50000 words/s when busy all the time;
// the slowest stage sets the rate (backpressure), and busy time per subtask is its share
// of that rate over its capacity. At 1/2/1 the count holds the job to 10000/s (the
// fixture of the policy test above); at 1/2/2 it runs at 20000/s, every subtask busy all
// the time. After a PUT
// the next read of the job says RESTARTING, then the job runs with the new parallelism;
// after `finish_after` reads of the job it is FINISHED.
class LiveJobManager {
 public:
  explicit LiveJobManager(int finish_after) : finish_after_(finish_after) {
    server_.Get("/jobs/" + kJob, [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++job_reads_;
      std::string body = job_body_for(p_);
      const std::string state = job_reads_ > finish_after_ ? "FINISHED"
                                : restarting_              ? "RESTARTING"
                                                           : "RUNNING";
      restarting_ = false;
      const std::string running = R"("state":"RUNNING")";
      body.replace(body.find(running), running.size(), R"("state":")" + state + "\"");
      res.set_content(body, "application/json");
    });
    server_.Get("/jobs", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kJobsBody, "application/json");
    });
    server_.Get(R"(/jobs/([0-9a-f]+)/vertices/([0-9a-f]+)/subtasks/metrics)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  std::lock_guard<std::mutex> lock(mu_);
                  const std::string v = req.matches[2];
                  // Sentences/s through the job: the least of the source's 20000, the flat
                  // map's 10000 per subtask and the count's 50000 words = 10000 sentences per
                  // subtask; busy time per subtask = its share / its capacity.
                  const double pf = p_[1], pc = p_[2];
                  const double thr = std::min({20000.0, 10000 * pf, 10000 * pc});
                  auto busy = [](double ms) { return std::to_string(ms); };
                  std::string body;
                  if (v == kSource)
                    body = metrics_body(busy(thr / 20000 * 1000), thr / 20000 * 1000, 0, thr);
                  else if (v == kFlatMap)
                    body = metrics_body(busy(thr / pf / 10000 * 1000), thr / pf / 10000 * 1000, thr,
                                        5 * thr);
                  else
                    body = metrics_body(busy(5 * thr / pc / 50000 * 1000),
                                        5 * thr / pc / 50000 * 1000, 5 * thr, 0);
                  res.set_content(body, "application/json");
                });
    server_.Put("/jobs/" + kJob + "/resource-requirements",
                [this](const httplib::Request& req, httplib::Response& res) {
                  std::lock_guard<std::mutex> lock(mu_);
                  puts_.push_back(req.body);
                  simdjson::dom::parser parser;
                  simdjson::dom::object o;
                  if (parser.parse(req.body).get(o)) {
                    res.status = 400;
                    return;
                  }
                  const std::string ids[3] = {kSource, kFlatMap, kCount};
                  for (int i = 0; i < 3; ++i) {
                    uint64_t upper = 0, lower = 0;
                    if (o[ids[i]]["parallelism"]["upperBound"].get(upper) ||
                        o[ids[i]]["parallelism"]["lowerBound"].get(lower) || lower != 1) {
                      res.status = 400;
                      return;
                    }
                    p_[i] = static_cast<int>(upper);
                  }
                  restarting_ = true;
                  res.set_content("{}", "application/json");
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~LiveJobManager() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> puts() {
    std::lock_guard<std::mutex> lock(mu_);
    return puts_;
  }
  std::vector<int> parallelism() {
    std::lock_guard<std::mutex> lock(mu_);
    return {p_[0], p_[1], p_[2]};
  }
  int job_reads() {
    std::lock_guard<std::mutex> lock(mu_);
    return job_reads_;
  }

 private:
  // job_body() with the vertices' parallelism replaced.
  static std::string job_body_for(const int p[3]) {
    std::string body = job_body();
    const std::string ids[3] = {kSource, kFlatMap, kCount};
    const int initial[3] = {1, 2, 1};
    for (int i = 0; i < 3; ++i) {
      const std::string from = R"(,"parallelism":)" + std::to_string(initial[i]);
      const size_t at = body.find(from, body.find(R"({"id":")" + ids[i] + R"(","name")"));
      body.replace(at, from.size(), R"(,"parallelism":)" + std::to_string(p[i]));
    }
    return body;
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  int p_[3] = {1, 2, 1};
  bool restarting_ = false;
  int job_reads_ = 0;
  const int finish_after_;
  std::vector<std::string> puts_;
};

class FlinkManageCli : public testing::TempDirTest {
 protected:
  FlinkManageCli() : TempDirTest("flink-manage") {}
};

const std::string kCountName = "Keyed Aggregation -> Sink: Print to Std. Out";

// DS2 on the live job with the sources' true output as target (20000/s): the flat map's
// 2 subtasks of 10000/s suffice, the count needs 20000 x 5 / 50000 = 2. --apply declares
// it; the job restarts (that read is skipped) and runs at 1/2/2 at the target rate, where
// DS2 is content: one decision until the job finishes.
TEST_F(FlinkManageCli, AppliesDs2sDecisionThroughTheRestApi) {
  LiveJobManager jm(8);
  testing::CommandResult r = testing::run_binary(
      "scale manage --flink " + jm.url() + " --source-target true --interval 20ms -f json --apply");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"({"decisions": [)"
                       "\n"
                       R"(  {"time_s": 0.02, "epoch": 0, "parallelism": )"
                       R"({"Source: Socket Stream": 1, "Flat Map": 2, ")" +
                       kCountName + R"(": 2}, "reason": "ds2: )"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(R"("epoch": 1)"), std::string::npos) << r.out;  // one decision only
  const std::vector<std::string> puts = jm.puts();
  ASSERT_EQ(puts.size(), 1u) << r.out;
  EXPECT_EQ(puts[0],
            flink_resource_requirements(parse_flink_job(job_body(), "job").topology, {1, 2, 2}));
  EXPECT_EQ(jm.parallelism(), (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(jm.job_reads(), 9);  // 8 RUNNING or RESTARTING, then FINISHED
  EXPECT_NE(r.out.find("is RESTARTING: epoch 1 skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is FINISHED; stopping"), std::string::npos) << r.out;
}

// Without --apply the job is not changed; activation 2 combines two intervals before
// deciding, and --max-decisions 1 ends the loop at the first decision.
TEST_F(FlinkManageCli, DryRunWithActivationPrintsTheDecision) {
  LiveJobManager jm(100);
  testing::CommandResult r =
      testing::run_binary("scale manage --flink " + jm.url() + " --job " + kJob +
                          " --source-target true --interval 20ms --activation 2 "
                          "--max-decisions 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("epoch 0: 4 instances\nepoch 1: 4 instances\n"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("epoch 1 (0 s): Source: Socket Stream=1 Flat Map=2 " + kCountName + "=2\n  ds2: "),
      std::string::npos)
      << r.out;
  EXPECT_TRUE(jm.puts().empty());
  EXPECT_EQ(jm.job_reads(), 2);
  // The observed source rate as target (the default): the flat map's 2 subtasks at half
  // their capacity are one too many.
  r = testing::run_binary("scale manage --flink " + jm.url() +
                          " --interval 20ms --max-decisions 1 -f json -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("parallelism": {"Source: Socket Stream": 1, "Flat Map": 1, ")" +
                       kCountName + R"(": 1})"),
            std::string::npos)
      << r.out;
}

// JSON lines: one object per decision and line, nothing else. In a dry run the job keeps
// its parallelism, so the manager repeats its decision in the next interval.
TEST_F(FlinkManageCli, JsonLinesOnePerDecision) {
  LiveJobManager jm(100);
  testing::CommandResult r = testing::run_binary("scale manage --flink " + jm.url() +
                                                 " --interval 20ms --max-decisions 2 -f jsonl");
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(r.out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 2u) << r.out;
  simdjson::dom::parser parser;
  for (int64_t k = 0; k < 2; ++k) {
    simdjson::dom::object o;
    ASSERT_EQ(parser.parse(lines[k]).get(o), simdjson::SUCCESS) << lines[k];
    EXPECT_EQ(int64_t(o["epoch"]), k);
    EXPECT_DOUBLE_EQ(double(o["time_s"]), 0.02 * static_cast<double>(k + 1));
    EXPECT_EQ(uint64_t(o["parallelism"]["Flat Map"]), 1u);
    EXPECT_EQ(uint64_t(o["parallelism"][kCountName]), 1u);
    EXPECT_EQ(std::string_view(o["reason"]).substr(0, 5), "ds2: ");
  }
  EXPECT_TRUE(jm.puts().empty());
  // --simulate writes one document at the end: no JSON lines there.
  r = testing::run_binary("scale manage --simulate x.toml -f jsonl");
  EXPECT_EQ(r.code, 2) << r.out;
}

// scale policy reads the job once, whatever its state (the header names it); scale
// manage stops at a terminal state without a decision.
TEST_F(FlinkManageCli, PolicyTakesTheJobInAnyState) {
  LiveJobManager jm(0);  // FINISHED from the first read
  testing::CommandResult r =
      testing::run_binary("scale policy --flink " + jm.url() + " --job " + kJob + " -f json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("parallelism": {"Source: Socket Stream": 1, "Flat Map": 1, ")"),
            std::string::npos)
      << r.out;
  r = testing::run_binary("scale policy --flink " + jm.url() + " --job " + kJob);
  EXPECT_NE(r.out.find("(FINISHED)"), std::string::npos) << r.out;
  r = testing::run_binary("scale manage --flink " + jm.url() + " --job " + kJob);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is FINISHED; stopping"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no scaling decision"), std::string::npos) << r.out;
}

TEST_F(FlinkManageCli, Errors) {
  LiveJobManager jm(100);
  testing::CommandResult r = testing::run_binary("scale manage --flink " + jm.url() +
                                                 " --job ffffffffffffffffffffffffffffffff");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("HTTP 404"), std::string::npos) << r.out;
  r = testing::run_binary("scale manage --job " + kJob + " --trace x.jsonl");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--job needs --flink URL"), std::string::npos) << r.out;
  r = testing::run_binary("scale manage --ds2-metrics . --topology t.csv --apply");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--apply needs a COMMAND"), std::string::npos) << r.out;
  r = testing::run_binary("scale manage --flink " + jm.url() + " --serve http://127.0.0.1:1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("exactly one of"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace snailtrail::scale::test_flink_rest
