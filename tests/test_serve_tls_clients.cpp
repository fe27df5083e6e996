// Issue 40, the clients: `run --trace-to` and `scale manage --serve` against a serve with
// TLS and tokens, tokens re-read on SIGHUP, and an expired certificate refused by every
// client. Certificates are made here with the `openssl` command; everything stays on
// 127.0.0.1 (ports chosen by the kernel).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"
#include "serve/auth.hpp"
#include "sim_test_util.hpp"
#include "tls_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_tls_clients {
namespace {

namespace fs = std::filesystem;
using testing::Process;

using testing::lines_of;

class ServeTlsClients : public testing::TempDirTest {
 protected:
  ServeTlsClients() : TempDirTest("serve-tls-clients") {}
  void SetUp() override {
    TempDirTest::SetUp();
    write("token", "write-token-1234\n");
    write("read-token", "read-token-5678\n");
    write("wrong-token", "write-token-1235\n");
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::string file(const std::string& name) const { return path(name).string(); }
  // Runs the binary to its end (at most 120 s).
  std::unique_ptr<Process> run(const std::string& name, const std::vector<std::string>& args) {
    auto p = start(name, args);
    p->wait();
    return p;
  }
  std::unique_ptr<Process> start(const std::string& name, const std::vector<std::string>& args) {
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }
  // serve with TLS (cert.pem) and tokens, its ports in `ports`.
  std::unique_ptr<Process> serve_tls(const std::vector<std::string>& extra,
                                     const std::string& cert = "cert.pem",
                                     const std::string& key = "key.pem") {
    std::vector<std::string> args = {"serve",       "--tcp",       "127.0.0.1:0", "--tls-cert",
                                     file(cert),    "--tls-key",   file(key),     "--token-file",
                                     file("token"), "--port-file", file("ports")};
    args.insert(args.end(), extra.begin(), extra.end());
    return start("serve", args);
  }
  const std::string token = "write-token-1234";
  const std::string read_token = "read-token-5678";
};

// `run --trace-to` over TLS with the token: serve's windows are those `analyze` makes of
// the run's own --trace file (the oracle: the same events, read offline). Before it, a run
// with a wrong token and one trusting another certificate are refused (exit 1, the reason
// said) and leave nothing in serve: the windows would differ otherwise.
TEST_F(ServeTlsClients, RunTraceToOverTlsWithToken) {
  testing::make_certificate(dir_);
  testing::make_certificate(dir_, "other.pem", "other-key.pem");
  auto server =
      serve_tls({"--window", "100ms", "--lateness", "10s", "--out", file("windows.jsonl")});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  ASSERT_GT(tcp, 0) << server->err();
  const std::string to = "127.0.0.1:" + std::to_string(tcp);
  auto run_to = [&](const std::string& name, const std::string& token_file, const std::string& ca,
                    const std::string& trace) {
    std::vector<std::string> args = {"run",
                                     "wordcount",
                                     "--workers",
                                     "2",
                                     "--rate",
                                     "100000",
                                     "--duration",
                                     "300ms",
                                     "--keys",
                                     "1000",
                                     "--trace-to",
                                     to,
                                     "--trace-to-token-file",
                                     file(token_file),
                                     "--trace-to-tls-ca",
                                     file(ca)};
    if (!trace.empty()) args.insert(args.end(), {"--trace", file(trace)});
    return run(name, args);
  };
  auto wrong = run_to("wrong", "wrong-token", "cert.pem", "");
  EXPECT_EQ(wrong->wait(), 1) << wrong->err();
  EXPECT_NE(wrong->err().find("--trace-to-token-file"), std::string::npos)
      << "the hint names the flag: " << wrong->err();
  auto untrusted = run_to("untrusted", "token", "other.pem", "");
  EXPECT_EQ(untrusted->wait(), 1) << untrusted->err();
  EXPECT_NE(untrusted->err().find("the server's certificate is not trusted"), std::string::npos)
      << untrusted->err();
  auto good = run_to("good", "token", "cert.pem", "run.snail");
  ASSERT_EQ(good->wait(), 0) << good->err();
  EXPECT_NE(good->err().find("trace-to: sent "), std::string::npos) << good->err();
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  EXPECT_NE(server->err().find("its token is not accepted"), std::string::npos) << server->err();
  const auto got = lines_of(testing::slurp(path("windows.jsonl")));
  ASSERT_GE(got.size(), 2u) << server->err();
  auto analyze = run("analyze", {"analyze", file("run.snail"), "--window", "100ms", "--format",
                                 "jsonl", "--no-progress"});
  ASSERT_EQ(analyze->wait(), 0) << analyze->err();
  auto want = lines_of(analyze->out());
  ASSERT_FALSE(want.empty());
  want.pop_back();  // analyze's last line is the run's verdict, which serve does not write
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "window " << i;
  // The flags need --trace-to, and a token file must be valid (usage errors, exit 2).
  auto alone = run(
      "alone", {"run", "keycount", "--records", "10", "--trace-to-tls-ca", file("cert.pem"), "-q"});
  EXPECT_EQ(alone->wait(), 2) << alone->err();
  write("empty-token", "\n");
  auto empty = run("empty", {"run", "keycount", "--records", "10", "--trace-to", to,
                             "--trace-to-token-file", file("empty-token"), "-q"});
  EXPECT_EQ(empty->wait(), 2) << empty->err();
  EXPECT_NE(empty->err().find("--trace-to-token-file"), std::string::npos) << empty->err();
}

// `scale manage --serve https://...` with the CA and the read token follows serve's rates
// and decides as `scale manage --trace` does on the same trace (the oracle, as in
// ServeCli.ScaleManageFollowsServesRates); no token, a wrong one, another CA or no CA
// (the system's store then) are refused with the reason.
TEST_F(ServeTlsClients, ScaleManageOverTlsWithToken) {
  testing::make_certificate(dir_);
  testing::make_certificate(dir_, "other.pem", "other-key.pem");
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-0", 3'000'000'000, 4);
  write_trace(sim.trace, file("trace.snail"));
  auto batch = run("batch", {"scale", "manage", "--trace", file("trace.snail"), "--interval", "1s",
                             "--max-decisions", "1", "--format", "json"});
  ASSERT_EQ(batch->wait(), 0) << batch->err();
  const std::string expected = batch->out();
  ASSERT_NE(expected.find("\"epoch\": 0, \"parallelism\": "), std::string::npos) << expected;
  auto server =
      serve_tls({"--http", "127.0.0.1:0", "--read-token-file", file("read-token"), "--window",
                 "100ms", "--rate-interval", "1s", "--idle-timeout", "300ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  auto producer =
      run("send", {"send", file("trace.snail"), "--to", "127.0.0.1:" + std::to_string(tcp),
                   "--tls-ca", file("cert.pem"), "--token-file", file("token")});
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  const std::string url = "https://127.0.0.1:" + std::to_string(http);
  auto manage = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"scale",           "manage", "--serve",    url,
                                     "--max-decisions", "1",      "--format",   "json",
                                     "--poll",          "50ms",   "--duration", "60s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(name, args);
  };
  auto reader =
      manage("reader", {"--tls-ca", file("cert.pem"), "--token-file", file("read-token")});
  ASSERT_EQ(reader->wait(), 0) << reader->err();
  EXPECT_EQ(reader->out(), expected);
  auto writer = manage("writer", {"--tls-ca", file("cert.pem"), "--token-file", file("token")});
  ASSERT_EQ(writer->wait(), 0) << writer->err();
  EXPECT_EQ(writer->out(), expected) << "the write token reads too";
  auto none = manage("none", {"--tls-ca", file("cert.pem")});
  EXPECT_EQ(none->wait(), 1) << none->err();
  EXPECT_NE(none->err().find("HTTP 401: it needs a token, give --token-file"), std::string::npos)
      << none->err();
  auto wrong = manage("wrong", {"--tls-ca", file("cert.pem"), "--token-file", file("wrong-token")});
  EXPECT_EQ(wrong->wait(), 1) << wrong->err();
  EXPECT_NE(wrong->err().find("HTTP 401: it refuses the token"), std::string::npos) << wrong->err();
  auto untrusted =
      manage("untrusted", {"--tls-ca", file("other.pem"), "--token-file", file("read-token")});
  EXPECT_EQ(untrusted->wait(), 1) << untrusted->err();
  EXPECT_NE(untrusted->err().find("the server's certificate is not trusted"), std::string::npos)
      << untrusted->err();
  // Without --tls-ca: the system's CA store, which does not know the test's certificate.
  auto no_ca = manage("no-ca", {"--token-file", file("read-token")});
  EXPECT_EQ(no_ca->wait(), 1) << no_ca->err();
  EXPECT_NE(no_ca->err().find("not trusted: self-signed certificate (checked against the "
                              "system's CA store"),
            std::string::npos)
      << no_ca->err();
  // Over https:// another host is allowed (verified by its certificate); plain http:// not.
  auto plain = run("plain", {"scale", "manage", "--serve", "http://192.0.2.1:7879", "--tls-ca",
                             file("cert.pem")});
  EXPECT_EQ(plain->wait(), 2) << plain->err();
  EXPECT_NE(plain->err().find("--tls-ca needs an https:// URL"), std::string::npos) << plain->err();
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  for (const char* t : {"write-token-1234", "read-token-5678", "write-token-1235"})
    for (const auto& p : {reader.get(), writer.get(), wrong.get(), server.get()})
      EXPECT_EQ(p->err().find(t), std::string::npos) << "no token in a message";
}

// The token files re-read: the files' tokens, and a bad file keeps the previous ones.
TEST_F(ServeTlsClients, TokenFilesReload) {
  const serve::AuthTokens t = serve::load_token_files(file("token"), file("read-token"));
  const serve::AuthTokens copy = t;  // a listener's copy sees the reload too
  EXPECT_TRUE(copy.may_write(token));
  EXPECT_TRUE(copy.may_read(read_token));
  write("token", "rotated-write\n");
  write("read-token", "rotated-read\n");
  EXPECT_TRUE(copy.may_write(token)) << "not before the reload";
  t.reload();
  EXPECT_FALSE(copy.may_write(token));
  EXPECT_FALSE(copy.may_read(token));
  EXPECT_FALSE(copy.may_read(read_token));
  EXPECT_TRUE(copy.may_write("rotated-write"));
  EXPECT_TRUE(copy.may_read("rotated-write"));
  EXPECT_TRUE(copy.may_read("rotated-read"));
  EXPECT_FALSE(copy.may_write("rotated-read"));
  write("read-token", "two words\n");
  write("token", "third-write\n");
  EXPECT_THROW(t.reload(), std::invalid_argument);
  EXPECT_TRUE(copy.may_write("rotated-write")) << "a bad file changes neither token";
  EXPECT_FALSE(copy.may_write("third-write"));
  EXPECT_TRUE(copy.may_read("rotated-read"));
}

// SIGHUP makes serve re-read its token files: after the signal the new tokens get in
// (TCP ingest and the HTTP API) and the old ones are refused; a bad file then keeps the
// tokens in force and says so.
TEST_F(ServeTlsClients, SighupRotatesTheTokens) {
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 5);
  write_trace(sim.trace, file("trace.snail"));
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token-file",
                      file("token"), "--read-token-file", file("read-token"), "--port-file",
                      file("ports"), "--window", "10ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  const std::string to = "127.0.0.1:" + std::to_string(tcp);
  EXPECT_EQ(testing::plain_get(http, "/api/windows", read_token).status, 200);
  write("token", "write-token-rotated\n");
  write("read-token", "read-token-rotated\n");
  write("new-token", "write-token-rotated\n");
  EXPECT_EQ(testing::plain_get(http, "/api/windows", read_token).status, 200)
      << "a written file alone changes nothing";
  server->signal(SIGHUP);
  // The analysis loop polls the signal every 50 ms at most.
  int old_status = 0;
  testing::wait_until([&] {
    old_status = testing::plain_get(http, "/api/windows", read_token).status;
    return old_status == 401;
  });
  EXPECT_EQ(old_status, 401) << server->err();
  EXPECT_EQ(testing::plain_get(http, "/api/windows", token).status, 401);
  EXPECT_EQ(testing::plain_get(http, "/api/windows", "read-token-rotated").status, 200);
  EXPECT_EQ(testing::plain_get(http, "/api/windows", "write-token-rotated").status, 200);
  auto old_send = run("old", {"send", file("trace.snail"), "--to", to, "--token-file",
                              file("wrong-token")});  // any token but the rotated one
  EXPECT_EQ(old_send->wait(), 1) << old_send->err();
  write("old-token", token + "\n");
  auto old_token = run(
      "old-token", {"send", file("trace.snail"), "--to", to, "--token-file", file("old-token")});
  EXPECT_EQ(old_token->wait(), 1) << old_token->err();
  auto new_send =
      run("new", {"send", file("trace.snail"), "--to", to, "--token-file", file("new-token")});
  EXPECT_EQ(new_send->wait(), 0) << new_send->err();
  std::string metrics;
  testing::wait_until([&] {
    metrics = testing::plain_get(http, "/metrics", "read-token-rotated").body;
    return testing::metric_value(metrics, "snailtrail_events_ingested_total") >=
           sim.trace.events.size();
  });
  EXPECT_EQ(testing::metric_value(metrics, "snailtrail_events_ingested_total"),
            sim.trace.events.size());
  EXPECT_EQ(testing::metric_value(metrics, "snailtrail_connections_unauthorized_total"), 2u);
  // A bad file: the rotated tokens stay.
  write("token", "\n");
  server->signal(SIGHUP);
  testing::wait_until(
      [&] { return server->err().find("kept the previous tokens") != std::string::npos; });
  EXPECT_NE(server->err().find("kept the previous tokens: --token-file: " + file("token")),
            std::string::npos)
      << server->err();
  EXPECT_EQ(testing::plain_get(http, "/api/windows", "write-token-rotated").status, 200);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  EXPECT_NE(server->err().find("SIGHUP: re-read the token files"), std::string::npos);
  EXPECT_EQ(server->err().find("rotated"), std::string::npos) << "no token in the log";
}

// A certificate whose notAfter has passed: send, run --trace-to and scale manage --serve
// refuse it, saying it expired (the same certificate not expired is trusted in the tests
// above).
TEST_F(ServeTlsClients, ExpiredCertificateIsRefused) {
  testing::make_certificate(dir_, "expired.pem", "expired-key.pem", -1);
  // The generator's oracle: openssl itself finds it expired.
  ASSERT_NE(std::system(
                ("openssl x509 -checkend 0 -noout -in " + file("expired.pem") + " >/dev/null 2>&1")
                    .c_str()),
            0);
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 100'000'000, 5);
  write_trace(sim.trace, file("trace.snail"));
  auto server = serve_tls({"--http", "127.0.0.1:0"}, "expired.pem", "expired-key.pem");
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  const std::string to = "127.0.0.1:" + std::to_string(tcp);
  const std::string why = "the server's certificate is not trusted: certificate has expired";
  auto sent = run("send", {"send", file("trace.snail"), "--to", to, "--tls-ca", file("expired.pem"),
                           "--token-file", file("token")});
  EXPECT_EQ(sent->wait(), 1) << sent->err();
  EXPECT_NE(sent->err().find(why), std::string::npos) << sent->err();
  auto ran =
      run("run", {"run", "keycount", "--records", "1000", "--trace-to", to, "--trace-to-tls-ca",
                  file("expired.pem"), "--trace-to-token-file", file("token"), "-q"});
  EXPECT_EQ(ran->wait(), 1) << ran->err();
  EXPECT_NE(ran->err().find(why), std::string::npos) << ran->err();
  auto managed =
      run("manage", {"scale", "manage", "--serve", "https://127.0.0.1:" + std::to_string(http),
                     "--tls-ca", file("expired.pem"), "--token-file", file("token")});
  EXPECT_EQ(managed->wait(), 1) << managed->err();
  EXPECT_NE(managed->err().find(why), std::string::npos) << managed->err();
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

}  // namespace
}  // namespace snailtrail::test_serve_tls_clients
