// The Job graph live (docs/REPORT.md, "Job graph", live): GET /api/jobgraph of `serve
// --http` and of `run --http` is the report's "jobgraph" member for the same windows. The
// oracle is the static path: `report TRACE -f json` on the same events (for serve, with
// --to at the end of the last window serve has closed: serve holds the window of the last
// event until its input ends).
#include <gtest/gtest.h>
#include <httplib.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.hpp"
#include "process_util.hpp"
#include "sim_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_live_job_graph {
namespace {

namespace fs = std::filesystem;
namespace dom = simdjson::dom;
using testing::dashboard_port;
using testing::http_get;
using testing::Process;
using testing::slurp;

class LiveJobGraph : public testing::TempDirTest {
 protected:
  LiveJobGraph() : TempDirTest("live-jobgraph") {}
  // The "jobgraph" member of `report TRACE -f json ARGS...`, minified ("" on failure).
  std::string report_jobgraph(const fs::path& trace, std::vector<std::string> args) {
    std::vector<std::string> cmd = {"report",       trace.string(), "-f",
                                    "json",         "-o",           path("report.json").string(),
                                    "--no-progress"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    Process p(cmd, path("report.out"), path("report.err"));
    EXPECT_EQ(p.wait(), 0) << p.err();
    dom::parser parser;
    dom::element doc;
    if (parser.load(path("report.json").string()).get(doc)) return "";
    dom::element g;
    if (doc["jobgraph"].get(g)) return "";
    return simdjson::minify(g);
  }
};

std::string minified(const std::string& json) {
  dom::parser parser;
  dom::element e;
  if (parser.parse(json).get(e)) return "not JSON: " + json.substr(0, 200);
  return simdjson::minify(e);
}

// serve --tcp: a simulated word count sent in; once the 19 windows before the one holding
// the last event have closed, /api/jobgraph equals `report --to 190ms`'s (windows 0..18 of
// 10 ms, stalls included), while its /api/report dashboard keeps working.
TEST_F(LiveJobGraph, ServeEqualsTheStaticReport) {
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 3);
  const fs::path trace = path("trace.jsonl");
  write_trace(sim.trace, trace.string());
  Process server(
      {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "10ms", "--lateness",
       "1ms", "--idle-timeout", "200ms", "--port-file", path("ports").string(), "--quiet"},
      path("serve.out"), path("serve.err"));
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server.err();
  EXPECT_EQ(http_get(http, "/api/jobgraph"), "null");  // before any window
  Process producer({"send", trace.string(), "--to", "127.0.0.1:" + std::to_string(tcp)},
                   path("send.out"), path("send.err"));
  ASSERT_EQ(producer.wait(), 0) << producer.err();
  std::string live;
  testing::wait_until([&] {
    live = http_get(http, "/api/jobgraph");
    return live.find("\"windows\":19,") != std::string::npos;
  });
  ASSERT_NE(live.find("\"windows\":19,"), std::string::npos) << live.substr(0, 300);
  const std::string want = report_jobgraph(trace, {"--window", "10ms", "--to", "190ms"});
  ASSERT_FALSE(want.empty());
  EXPECT_NE(want.find("\"stall_windows\":"), std::string::npos);
  EXPECT_EQ(minified(live), want);
  // The dashboard's page polls it.
  EXPECT_NE(http_get(http, "/").find("api/jobgraph"), std::string::npos);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(), 0) << server.err();
}

// serve --http with a token: /api/jobgraph is behind it like every /api route.
TEST_F(LiveJobGraph, ServeNeedsTheToken) {
  std::ofstream(path("token")) << "s3cret-token-value-0123456789\n";
  Process server({"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token-file",
                  path("token").string(), "--port-file", path("ports").string(), "--quiet"},
                 path("serve.out"), path("serve.err"));
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server.err();
  int status = 0;
  http_get(http, "/api/jobgraph", &status);
  EXPECT_EQ(status, 401);
  httplib::Client client("127.0.0.1", http);
  auto res =
      client.Get("/api/jobgraph", {{"Authorization", "Bearer s3cret-token-value-0123456789"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "null");
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait(), 0) << server.err();
}

// run --http: a Megaphone migration at 500 ms; while the run goes the graph grows, and
// once it has ended /api/jobgraph equals `report TRACE --window 200ms --stats-json STATS`
// on the run's own --trace (the last window included, the migration marked).
TEST_F(LiveJobGraph, RunEqualsTheStaticReportWithItsMarks) {
  const fs::path trace = path("run.snail"), stats = path("stats.json");
  Process run({"run",          "keycount",      "--workers", "2",           "--bins",
               "16",           "--migrate-at",  "500ms",     "--rate",      "20000",
               "--duration",   "1500ms",        "--http",    "127.0.0.1:0", "--http-window",
               "200ms",        "--http-linger", "20",        "--trace",     trace.string(),
               "--stats-json", stats.string(),  "-q"},
              path("run.out"), path("run.err"));
  ASSERT_TRUE(run.started());
  const int port = dashboard_port(path("run.err"), 30);
  ASSERT_GT(port, 0) << slurp(path("run.err"));
  std::vector<uint64_t> seen;  // windows in the graph while it runs
  std::string final_graph;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string timeline = http_get(port, "/api/timeline");
    const std::string graph = http_get(port, "/api/jobgraph");
    const bool done = timeline.find("\"done\": true") != std::string::npos;
    dom::parser parser;
    dom::element g;
    if (!parser.parse(graph).get(g) && g.is_object()) seen.push_back(uint64_t(g["windows"]));
    if (done) {
      // The graph was complete before the run's outputs (finish comes first).
      final_graph = http_get(port, "/api/jobgraph");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(final_graph.empty()) << slurp(path("run.err"));
  const std::string want =
      report_jobgraph(trace, {"--window", "200ms", "--stats-json", stats.string()});
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(minified(final_graph), want);
  EXPECT_NE(want.find("\"kind\":\"migration\""), std::string::npos) << want.substr(0, 300);
  EXPECT_NE(want.find("\"name\":\"count\""), std::string::npos) << want.substr(0, 300);
  // Windows arrived while it ran, never fewer than before.
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  const std::string page = http_get(port, "/");
  EXPECT_NE(page.find("api/jobgraph"), std::string::npos);
  EXPECT_NE(page.find("id=\"sec-jobgraph\""), std::string::npos);
  run.signal(SIGTERM);
  run.wait();
}

// --http-window 0: no Job graph (and no tracing for it); a bad width is refused.
TEST_F(LiveJobGraph, RunWithoutTheJobGraph) {
  Process run({"run", "wordcount", "--duration", "300ms", "--http", "127.0.0.1:0", "--http-window",
               "0", "--http-linger", "20", "-q"},
              path("run.out"), path("run.err"));
  const int port = dashboard_port(path("run.err"), 30);
  ASSERT_GT(port, 0) << slurp(path("run.err"));
  EXPECT_EQ(http_get(port, "/api/jobgraph"), "null");
  run.signal(SIGTERM);
  run.wait();
  Process bad({"run", "wordcount", "--duration", "100ms", "--http", "127.0.0.1:0",
               "--http-window=-5ms", "-q"},
              path("bad.out"), path("bad.err"));
  EXPECT_EQ(bad.wait(), 2) << bad.err();
  EXPECT_NE(bad.err().find("--http-window"), std::string::npos) << bad.err();
}

}  // namespace
}  // namespace snailtrail::test_live_job_graph
