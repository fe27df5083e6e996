// `scale policy --flink URL` (scale/flink_rest.hpp): Flink REST responses shaped like a
// Flink 1.18 JobManager's (GET /jobs, /jobs/:jobid, /jobs/:jobid/vertices/:vertexid/
// subtasks/metrics) parsed by hand-checked expectations, and the whole command against a
// mock JobManager on 127.0.0.1 reaching DS2's hand-computed decision.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>

#include "process_util.hpp"
#include "scale/flink_rest.hpp"

namespace snailtrail::scale {
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

}  // namespace
}  // namespace snailtrail::scale
