// `snailtrail run --http` (docs/CLOSED-LOOP.md "The live dashboard"): a closed-loop run
// with a rate step serves /api/timeline while it runs and, with --http-linger, after it
// ends. The timeline polled during the run is a prefix of the final one; the final one's
// decisions and migrations equal the same run's --stats-json ones, its intervals are the
// --stats-json intervals (same times, same latencies) with times increasing; `/` is the
// self-contained page that polls it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.hpp"
#include "process_util.hpp"
#include "tls_test_util.hpp"

namespace test_run_dashboard {

namespace {

using snailtrail::testing::dashboard_port;
using snailtrail::testing::http_get;
using snailtrail::testing::Process;
using snailtrail::testing::slurp;
namespace dom = simdjson::dom;

class RunDashboardTest : public snailtrail::testing::TempDirTest {
 protected:
  RunDashboardTest() : TempDirTest("run-dashboard") {}

  // `run keycount` with its dashboard over TLS (cert.pem, key.pem) behind the bearer token
  // `token` (written to the file "token"); started, or a test failure.
  std::unique_ptr<Process> start_secured_run(const std::string& token) {
    std::ofstream(path("token")) << token << "\n";
    auto p = std::make_unique<Process>(
        std::vector<std::string>{"run", "keycount", "--duration", "1s", "--http", "127.0.0.1:0",
                                 "--http-linger", "30", "--tls-cert", path("cert.pem").string(),
                                 "--tls-key", path("key.pem").string(), "--token-file",
                                 path("token").string(), "-q"},
        path("out"), path("err"));
    EXPECT_TRUE(p->started());
    return p;
  }
};

std::vector<std::pair<double, double>> times_and_p99(dom::element tl) {
  std::vector<std::pair<double, double>> out;
  for (dom::element p : dom::array(tl["intervals"]))
    out.emplace_back(double(p["t_s"]), double(p["p99_ms"]));
  return out;
}

TEST_F(RunDashboardTest, TimelineEqualsStatsJsonAndThePageIsServed) {
  const auto stats = path("stats.json");
  // 50 us a record: one worker keeps up with at most 20 k records/s; the step to 24 k/s
  // needs 2 (the closed loop's acceptance run, tests/loop/test_loop.cpp).
  Process p({"run", "keycount", "--autoscale", "--max-workers", "4", "--rate-profile",
             "0s:6k,2s:24k", "--cost-us", "50", "--duration", "5s", "--policy-interval", "500ms",
             "--bins", "64", "--keys", "20000", "--http", "127.0.0.1:0", "--http-linger", "2",
             "--stats-json", stats.string(), "-q",
             // The Job graph (tested by LiveJobGraph.*) would trace and analyze this
             // overloaded run beside it; this test is about the timeline.
             "--http-window", "0"},
            path("out"), path("err"));
  ASSERT_TRUE(p.started());
  const int port = dashboard_port(path("err"), 30);
  ASSERT_GT(port, 0) << slurp(path("err"));

  // Poll as the page does until the run has ended.
  std::vector<std::string> live;  // bodies with "done": false and intervals
  std::string final_body;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const std::string body = http_get(port, "/api/timeline", &status);
    if (status == 200) {
      dom::parser parser;
      dom::element tl = parser.parse(body);
      if (bool(tl["done"])) {
        final_body = body;
        break;
      }
      if (dom::array(tl["intervals"]).size() > 0) live.push_back(body);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(final_body.empty()) << "the timeline never said done\n" << slurp(path("err"));
  EXPECT_FALSE(live.empty()) << "no timeline seen while the job ran";

  // The page, while lingering.
  int status = 0;
  std::string type;
  const std::string page = http_get(port, "/", &status, &type);
  EXPECT_EQ(status, 200);
  EXPECT_NE(type.find("text/html"), std::string::npos);
  EXPECT_NE(page.find("<svg id=\"latency\""), std::string::npos);
  EXPECT_NE(page.find("api/timeline"), std::string::npos);
  EXPECT_EQ(page.find("://cdn"), std::string::npos);  // self-contained
  EXPECT_EQ(page.find("<script src"), std::string::npos);

  ASSERT_EQ(p.wait(), 0) << slurp(path("err"));
  dom::parser sp, fp;
  dom::element want = sp.parse(slurp(stats));
  dom::element got = fp.parse(final_body);

  // Decisions and migrations: exactly the --stats-json ones, and the run had some.
  EXPECT_EQ(simdjson::minify(got["decisions"]), simdjson::minify(want["decisions"]));
  EXPECT_EQ(simdjson::minify(got["migrations"]), simdjson::minify(want["migrations"]));
  const dom::array decisions = want["decisions"];
  EXPECT_GE(decisions.size(), 1u) << final_body;
  EXPECT_GE(dom::array(want["migrations"]).size(), 1u) << final_body;
  for (dom::element d : decisions) {
    EXPECT_EQ(std::string_view(d["kind"]), "ds2");
    EXPECT_FALSE(std::string_view(d["reason"]).empty());
  }

  // Latency points: the --stats-json intervals, times strictly increasing, values present.
  const auto points = times_and_p99(got);
  std::vector<std::pair<double, double>> stats_points;
  for (dom::element s : dom::array(want["intervals"]))
    stats_points.emplace_back(double(s["t_s"]), double(s["p99_ms"]));
  EXPECT_EQ(points, stats_points);
  ASSERT_GE(points.size(), 10u);  // 5 s in 250 ms intervals
  double max_p99 = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_GT(points[i].first, points[i - 1].first) << i;
    max_p99 = std::max(max_p99, points[i].second);
  }
  EXPECT_GT(max_p99, 0);
  uint64_t records = 0, active_max = 0;
  for (dom::element iv : dom::array(got["intervals"])) {
    records += uint64_t(iv["records"]);
    EXPECT_GE(double(iv["throughput"]), 0);
    EXPECT_LE(double(iv["p50_ms"]), double(iv["p99_ms"]));
    EXPECT_LE(double(iv["p99_ms"]), double(iv["max_ms"]));
    active_max = std::max(active_max, uint64_t(iv["active_workers"]));
  }
  EXPECT_GT(records, 0u);
  // The active workers seen by the intervals follow the decisions: more than 1 at the end.
  EXPECT_GE(active_max, 2u);
  EXPECT_EQ(std::string_view(got["config"]["job"]), "keycount");
  EXPECT_EQ(uint64_t(got["config"]["workers"]), 4u);

  // What was served live is a prefix of the final timeline.
  for (const std::string& body : live) {
    dom::parser lp;
    const auto early = times_and_p99(lp.parse(body));
    ASSERT_LE(early.size(), points.size());
    EXPECT_TRUE(std::equal(early.begin(), early.end(), points.begin()));
  }
}

// A browser keeps spare sockets open, and tabs left open keep theirs: 150 sockets that
// never send a byte (over the dashboard's 64 connections) must not lock a real client out.
TEST_F(RunDashboardTest, IdleSocketsMakeRoomForRealClients) {
  Process p(
      {"run", "keycount", "--rate", "20k", "--duration", "30s", "--http", "127.0.0.1:0", "-q"},
      path("out"), path("err"));
  ASSERT_TRUE(p.started());
  const int port = dashboard_port(path("err"), 30);
  ASSERT_GT(port, 0) << slurp(path("err"));
  auto connect_idle = [&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  };
  std::vector<int> idle;
  for (int i = 0; i < 150; ++i) idle.push_back(connect_idle());
  for (int i = 0; i < 10; ++i) {
    int status = 0;
    EXPECT_EQ(http_get(port, "/healthz", &status), "ok\n") << "request " << i;
    EXPECT_EQ(status, 200);
  }
  // The oldest idle sockets were closed for them: reading one gives end of file at once.
  char byte;
  timeval tv{2, 0};
  ::setsockopt(idle.front(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(idle.front(), &byte, 1, 0), 0);
  for (int fd : idle) ::close(fd);
  p.signal(SIGTERM);
  p.wait();
}

TEST_F(RunDashboardTest, BadAddressAndReferenceAreRefused) {
  auto r = snailtrail::testing::run_binary("run keycount --duration 100ms --http 127.0.0.1:99999");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad port"), std::string::npos) << r.out;
  r = snailtrail::testing::run_binary("run keycount --reference --duration 100ms --http 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--http: not with --reference"), std::string::npos) << r.out;
  // A plain run (no planner): the dashboard serves empty decisions and migrations and
  // lingers; port alone binds 127.0.0.1.
  r = snailtrail::testing::run_binary("run keycount --duration 300ms --http 0 -q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("live dashboard on http://127.0.0.1:"), std::string::npos) << r.out;
}

// `curl --cacert CA [-H "Authorization: Bearer TOKEN"] URL`: "STATUS BODY" ("000 " when
// curl got no answer, e.g. the certificate was refused).
std::string curl(const std::string& url, const std::filesystem::path& ca,
                 const std::string& token = "") {
  std::string cmd = "curl -s -m 10 -w '%{http_code}' -o - --cacert " + ca.string();
  if (!token.empty()) cmd += " -H 'Authorization: Bearer " + token + "'";
  cmd += " " + url + " 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  if (out.size() < 3) return out;
  return out.substr(out.size() - 3) + " " + out.substr(0, out.size() - 3);
}

// `run --http` takes serve --http's rule (docs/SERVE.md, "Running across hosts"): with
// --tls-cert/--tls-key it is HTTPS (curl --cacert verifies it), with --token-file every
// page but /healthz answers 401 without the token and 200 with it; a non-loopback address
// without TLS and a token exits 2 naming the flags, as serve does.
TEST_F(RunDashboardTest, TokenAndTlsAsServeHttp) {
  snailtrail::testing::make_certificate(dir_);
  const std::unique_ptr<Process> run = start_secured_run("dash-token-2468");
  Process& p = *run;
  const int port = dashboard_port(path("err"), 30);
  ASSERT_GT(port, 0) << slurp(path("err"));
  EXPECT_NE(slurp(path("err"))
                .find("live dashboard on https://127.0.0.1:" + std::to_string(port) +
                      "/ (bearer token required)"),
            std::string::npos)
      << slurp(path("err"));
  const std::string base = "https://127.0.0.1:" + std::to_string(port);
  const auto ca = path("cert.pem");
  EXPECT_EQ(curl(base + "/api/timeline", ca).substr(0, 4), "401 ");
  EXPECT_EQ(curl(base + "/", ca).substr(0, 4), "401 ");
  EXPECT_EQ(curl(base + "/api/timeline", ca, "dash-token-2469").substr(0, 4), "401 ");
  const std::string ok = curl(base + "/api/timeline", ca, "dash-token-2468");
  EXPECT_EQ(ok.substr(0, 4), "200 ") << ok;
  EXPECT_NE(ok.find("\"config\": {\"job\": \"keycount\""), std::string::npos) << ok;
  EXPECT_EQ(curl(base + "/", ca, "dash-token-2468").substr(0, 4), "200 ");
  EXPECT_EQ(curl(base + "/healthz", ca), "200 ok\n");
  // Plain HTTP on the TLS port gets no page.
  int status = 0;
  http_get(port, "/healthz", &status);
  EXPECT_NE(status, 200);
  p.signal(SIGTERM);
  p.wait();
  EXPECT_EQ(slurp(path("err")).find("dash-token"), std::string::npos) << "no token in the log";
  // Beyond loopback without TLS and a token: exit 2 naming the flags (nothing binds).
  auto r = snailtrail::testing::run_binary("run keycount --duration 100ms --http 0.0.0.0:0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--http 0.0.0.0:0 listens beyond this host (not loopback) without TLS "
                       "and a token"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("give --tls-cert FILE --tls-key FILE and --token-file FILE, or "
                       "--insecure"),
            std::string::npos)
      << r.out;
  r = snailtrail::testing::run_binary("run keycount --duration 100ms --http 0.0.0.0:0 --tls-cert " +
                                      path("cert.pem").string() + " --tls-key " +
                                      path("key.pem").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("without a token"), std::string::npos) << r.out;
  r = snailtrail::testing::run_binary("run keycount --duration 100ms --token-file " +
                                      path("token").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("apply to --http"), std::string::npos) << r.out;
}

// SIGHUP makes `run` re-read its dashboard's token file and certificate, as serve does
// (docs/SERVE.md, "Running across hosts"): after the files are replaced (token B, a
// certificate of CA B) and the signal, only token B and CA B get in.
TEST_F(RunDashboardTest, SighupRotatesTheTokenAndTheCertificate) {
  snailtrail::testing::make_ca(dir_, "ca-a");
  snailtrail::testing::make_ca(dir_, "ca-b");
  snailtrail::testing::make_signed_certificate(dir_, "ca-a", "cert.pem", "key.pem");
  snailtrail::testing::make_signed_certificate(dir_, "ca-b", "cert-b.pem", "key-b.pem");
  const std::unique_ptr<Process> run = start_secured_run("token-a-1357");
  Process& p = *run;
  const int port = dashboard_port(path("err"), 30);
  ASSERT_GT(port, 0) << slurp(path("err"));
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/api/timeline";
  EXPECT_EQ(curl(url, path("ca-a.pem"), "token-a-1357").substr(0, 4), "200 ");
  EXPECT_EQ(curl(url, path("ca-b.pem"), "token-a-1357").substr(0, 4), "000 ");
  std::filesystem::copy_file(path("cert-b.pem"), path("cert.pem"),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(path("key-b.pem"), path("key.pem"),
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(path("token")) << "token-b-2468\n";
  p.signal(SIGHUP);
  snailtrail::testing::wait_until(
      [&] { return slurp(path("err")).find("re-read the certificate") != std::string::npos; });
  const std::string log = slurp(path("err"));
  EXPECT_NE(log.find("snailtrail run: SIGHUP: re-read the token files"), std::string::npos) << log;
  EXPECT_NE(log.find("snailtrail run: SIGHUP: re-read the certificate"), std::string::npos) << log;
  EXPECT_EQ(curl(url, path("ca-b.pem"), "token-b-2468").substr(0, 4), "200 ");
  EXPECT_EQ(curl(url, path("ca-b.pem"), "token-a-1357").substr(0, 4), "401 ");
  EXPECT_EQ(curl(url, path("ca-a.pem"), "token-b-2468").substr(0, 4), "000 ");
  p.signal(SIGTERM);
  p.wait();
  EXPECT_EQ(slurp(path("err")).find("token-"), std::string::npos) << "no token in the log";
}

}  // namespace

}  // namespace test_run_dashboard
