// Who may send and who may read (issue 40, first part): bearer tokens on the HTTP API,
// the OTLP receiver and the TCP ingest, TLS on the HTTP listeners, and the refusal to
// listen beyond loopback without TLS and a token. Certificates are made here with the
// `openssl` command; every connection stays on loopback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "otlp_builder.hpp"
#include "process_util.hpp"
#include "serve/auth.hpp"
#include "sim_test_util.hpp"
#include "tls_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_auth {
namespace {

namespace fs = std::filesystem;
using testing::https_get;
using testing::Process;
using Answer = testing::HttpAnswer;

Answer http_get(int port, const std::string& target, const std::string& token = "") {
  return testing::plain_get(port, target, token);
}
template <class Client>
Answer get(Client& client, const std::string& target, const std::string& token) {
  return testing::get_with_token(client, target, token);
}
uint64_t metric(const std::string& text, const std::string& name) {
  return testing::metric_value(text, name);
}

// --- The pieces, against oracles -------------------------------------------------------

// Every pair of strings over {a, b} up to length 4 (and some with a NUL and high bytes):
// the constant-time comparison agrees with operator==.
TEST(ServeAuth, ConstantTimeEqualsAgreesWithEquality) {
  std::vector<std::string> all = {""};
  for (size_t len = 1; len <= 4; ++len) {
    const size_t before = all.size();
    for (size_t i = 0; i < before; ++i)
      if (all[i].size() == len - 1) {
        all.push_back(all[i] + 'a');
        all.push_back(all[i] + 'b');
      }
  }
  all.push_back(std::string("a\0b", 3));
  all.push_back(std::string("a\0", 2));
  all.push_back("\xff\x80");
  size_t equal = 0;
  for (const std::string& x : all)
    for (const std::string& y : all) {
      ASSERT_EQ(serve::constant_time_equals(x, y), x == y) << '"' << x << "\" vs \"" << y << '"';
      equal += x == y;
    }
  EXPECT_EQ(equal, all.size());  // the loop saw both answers
}

TEST(ServeAuth, TokensReadAndWrite) {
  serve::AuthTokens none;
  EXPECT_TRUE(none.may_read("")) << "no token configured: open";
  EXPECT_TRUE(none.may_write(""));
  serve::AuthTokens t{"w-secret", "r-secret"};
  EXPECT_TRUE(t.may_write("w-secret"));
  EXPECT_FALSE(t.may_write("r-secret")) << "the read token does not ingest";
  EXPECT_FALSE(t.may_write(""));
  EXPECT_FALSE(t.may_write("w-secre"));
  EXPECT_TRUE(t.may_read("w-secret")) << "the write token reads too";
  EXPECT_TRUE(t.may_read("r-secret"));
  EXPECT_FALSE(t.may_read("x-secret"));
  EXPECT_FALSE(t.may_read(""));
}

TEST(ServeAuth, BearerHeaderValues) {
  EXPECT_EQ(serve::bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(serve::bearer_token("bearer abc"), "abc") << "the scheme is case-insensitive";
  EXPECT_EQ(serve::bearer_token("  BEARER   abc \r"), "abc");
  EXPECT_EQ(serve::bearer_token("Basic abc"), "");
  EXPECT_EQ(serve::bearer_token("Bearer "), "");
  EXPECT_EQ(serve::bearer_token("Bearerabc"), "");
  EXPECT_EQ(serve::bearer_token(""), "");
}

TEST(ServeAuth, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "[::1]", "localhost"})
    EXPECT_TRUE(serve::is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "example.org", "126.0.0.1",
                        "localhost.example.org", "::ffff:10.0.0.1"})
    EXPECT_FALSE(serve::is_loopback_host(h)) << h;
}

class ServeAuthFiles : public testing::TempDirTest {
 protected:
  ServeAuthFiles() : TempDirTest("serve-auth") {}
  fs::path file(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
};

TEST_F(ServeAuthFiles, TokenFiles) {
  EXPECT_EQ(serve::read_token_file(file("a", "s3cret\n").string(), "--token-file"), "s3cret");
  EXPECT_EQ(serve::read_token_file(file("b", " s3cret \r\nignored\n").string(), "--token-file"),
            "s3cret");
  EXPECT_EQ(serve::read_token_file(file("c", "s3cret").string(), "--token-file"), "s3cret");
  for (const auto& [name, text, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty", "", "holds no token"},
           {"blank", " \n", "holds no token"},
           {"space", "two words\n", "not printable ASCII"},
           {"long", std::string(5000, 'x'), "longer than 4096"}}) {
    try {
      serve::read_token_file(file(name, text).string(), "--token-file");
      ADD_FAILURE() << name << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--token-file"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find(text.substr(0, 9) + "\n"), std::string::npos)
          << "the message does not repeat the file's content";
    }
  }
  try {
    serve::read_token_file(path("missing").string(), "--read-token-file");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(path("missing").string()), std::string::npos);
  }
}

// --- The commands ------------------------------------------------------------------------

// Writes `bytes` to 127.0.0.1:port and reads until the server closes; returns whether it
// closed the connection within 5 s.
bool send_and_wait_close(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // The server may close while we write (it refuses after the first line): that is fine.
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);  // the end of the stream
  char sink[256];
  ssize_t n;
  while ((n = ::recv(fd, sink, sizeof sink, 0)) > 0) {
  }
  const bool closed = n == 0 || (n < 0 && errno == ECONNRESET);
  ::close(fd);
  return closed;
}

class ServeAuthCli : public testing::TempDirTest {
 protected:
  ServeAuthCli() : TempDirTest("serve-auth") {}
  void SetUp() override {
    TempDirTest::SetUp();
    std::ofstream(path("token")) << "write-token-1234\n";
    std::ofstream(path("read-token")) << "read-token-5678\n";
    std::ofstream(path("wrong-token")) << "write-token-1235\n";
  }
  std::unique_ptr<Process> start(const std::string& name, const std::vector<std::string>& args) {
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }
  // A self-signed certificate for 127.0.0.1 (its own CA) and its key.
  void make_certificate(const std::string& cert = "cert.pem", const std::string& key = "key.pem") {
    testing::make_certificate(dir_, cert, key);
  }
  const std::string token = "write-token-1234";
  const std::string read_token = "read-token-5678";
};

// The API and the dashboard answer 401 (with WWW-Authenticate: Bearer) without a valid
// token, the write and the read token both read, and /healthz stays open.
TEST_F(ServeAuthCli, HttpApiNeedsAToken) {
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token-file",
                      path("token").string(), "--read-token-file", path("read-token").string(),
                      "--port-file", path("ports").string(), "--window", "10ms"});
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  for (const char* target : {"/", "/api/windows", "/api/report", "/metrics", "/api/rates"}) {
    const Answer none = http_get(http, target);
    EXPECT_EQ(none.status, 401) << target;
    EXPECT_EQ(none.authenticate.rfind("Bearer", 0), 0u) << target << ": " << none.authenticate;
    EXPECT_EQ(http_get(http, target, "write-token-123").status, 401) << target;
    EXPECT_EQ(http_get(http, target, "write-token-12345").status, 401) << target;
    EXPECT_EQ(http_get(http, target, token).status, 200) << target;
    EXPECT_EQ(http_get(http, target, read_token).status, 200) << target;
  }
  const Answer health = http_get(http, "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(server->err().find(token), std::string::npos) << "the token is never logged";
  EXPECT_EQ(server->err().find(read_token), std::string::npos);
}

// A TCP producer without the token line, or with a wrong or read-only token, is closed
// with nothing ingested; `send --token-file` gets in.
TEST_F(ServeAuthCli, TcpIngestNeedsTheTokenLine) {
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 5);
  write_trace(sim.trace, path("trace.jsonl").string());
  const std::string jsonl = testing::slurp(path("trace.jsonl"));
  ASSERT_GT(sim.trace.events.size(), 100u);
  auto server =
      start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token-file",
                      path("token").string(), "--read-token-file", path("read-token").string(),
                      "--port-file", path("ports").string(), "--window", "10ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  EXPECT_TRUE(send_and_wait_close(tcp, jsonl)) << "no token line";
  EXPECT_TRUE(send_and_wait_close(tcp, "Bearer write-token-1235\n" + jsonl)) << "wrong token";
  EXPECT_TRUE(send_and_wait_close(tcp, "Bearer " + read_token + "\n" + jsonl)) << "read token";
  EXPECT_TRUE(send_and_wait_close(tcp, "Bearer " + token)) << "ended before the line's end";
  std::string metrics = http_get(http, "/metrics", read_token).body;
  EXPECT_EQ(metric(metrics, "snailtrail_connections_unauthorized_total"), 4u) << metrics;
  // `send` with a wrong token learns it: the server resets the connection.
  auto refused = start(
      "refused", {"send", path("trace.jsonl").string(), "--to", "127.0.0.1:" + std::to_string(tcp),
                  "--token-file", path("wrong-token").string()});
  EXPECT_EQ(refused->wait(), 1) << refused->err();
  EXPECT_TRUE(refused->err().find("did not take the stream") != std::string::npos ||
              refused->err().find("reset by peer") != std::string::npos)
      << refused->err();
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), 0u);
  EXPECT_EQ(metric(metrics, "snailtrail_bytes_received_total"), 0u);
  // The right token, as the first line that `send` writes (CRLF tolerated by hand).
  auto producer =
      start("send", {"send", path("trace.jsonl").string(), "--to",
                     "127.0.0.1:" + std::to_string(tcp), "--token-file", path("token").string()});
  EXPECT_EQ(producer->wait(), 0) << producer->err();
  EXPECT_TRUE(send_and_wait_close(tcp, "Bearer " + token + "\r\n" + jsonl));
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics", token).body;
    return metric(metrics, "snailtrail_events_ingested_total") >= 2 * sim.trace.events.size();
  });
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), 2 * sim.trace.events.size());
  EXPECT_EQ(metric(metrics, "snailtrail_connections_unauthorized_total"), 5u);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(server->err().find(token), std::string::npos) << "the token is never logged";
  EXPECT_NE(server->err().find("closed, its first line is not its token"), std::string::npos)
      << server->err();
}

// Without a token configured, a stream that starts with a token line is read as if it did
// not (a producer with --token-file works against an open server).
TEST_F(ServeAuthCli, TokenLineIsSkippedWithoutATokenConfigured) {
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 6);
  write_trace(sim.trace, path("trace.snail").string());
  auto server = start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--port-file", path("ports").string(), "--window", "10ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  auto producer =
      start("send", {"send", path("trace.snail").string(), "--to",
                     "127.0.0.1:" + std::to_string(tcp), "--token-file", path("token").string()});
  EXPECT_EQ(producer->wait(), 0) << producer->err();
  std::string metrics;
  testing::wait_until([&] {
    metrics = http_get(http, "/metrics").body;
    return metric(metrics, "snailtrail_events_ingested_total") >= sim.trace.events.size();
  });
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), sim.trace.events.size());
  EXPECT_EQ(metric(metrics, "snailtrail_invalid_blocks_total"), 0u);
  EXPECT_EQ(metric(metrics, "snailtrail_broken_streams_total"), 0u);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// The HTTP API over HTTPS: verified clients with the token get in (curl --cacert and
// httplib's SSL client), without it 401; a plain-HTTP client fails cleanly and the
// server goes on.
TEST_F(ServeAuthCli, HttpsWithTokenAndCaVerification) {
  make_certificate();
  auto server = start(
      "serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--tls-cert",
                path("cert.pem").string(), "--tls-key", path("key.pem").string(), "--token-file",
                path("token").string(), "--port-file", path("ports").string()});
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  EXPECT_NE(server->err().find("https://127.0.0.1:"), std::string::npos) << server->err();
  const Answer ok = https_get(http, "/api/windows", path("cert.pem"), token);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "[]\n");
  EXPECT_EQ(https_get(http, "/api/windows", path("cert.pem")).status, 401);
  EXPECT_EQ(https_get(http, "/healthz", path("cert.pem")).status, 200);
  // Plain HTTP against the HTTPS port: no answer, the connection closed.
  EXPECT_EQ(http_get(http, "/healthz").status, -1);
  // With curl, as an operator would.
  if (std::system("command -v curl >/dev/null 2>&1") == 0) {
    const std::string url = "https://127.0.0.1:" + std::to_string(http);
    const std::string curl = "curl -s -o " + path("curl.body").string() +
                             " -w '%{http_code}' --max-time 10 --cacert " +
                             path("cert.pem").string() + " ";
    auto run = [&](const std::string& args) {
      const int rc = std::system((curl + args + " > " + path("curl.code").string()).c_str());
      EXPECT_EQ(rc, 0) << args;
      return testing::slurp(path("curl.code"));
    };
    EXPECT_EQ(run("-H 'Authorization: Bearer " + token + "' " + url + "/api/windows"), "200");
    EXPECT_EQ(testing::slurp(path("curl.body")), "[]\n");
    EXPECT_EQ(run(url + "/api/windows"), "401");
    EXPECT_EQ(run("-H 'Authorization: Bearer " + read_token + "' " + url + "/metrics"), "401");
  }
  const Answer metrics = https_get(http, "/metrics", path("cert.pem"), token);
  EXPECT_GE(metric(metrics.body, "snailtrail_http_tls_failures_total"), 1u) << "the plain client";
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// The TCP ingest over TLS: `send --tls-ca` with the token gets every event in; a client
// trusting another certificate, or asking for another host name, refuses the server; a
// plain-TCP producer against the TLS port is closed with nothing ingested.
TEST_F(ServeAuthCli, TcpIngestOverTls) {
  make_certificate();
  make_certificate("other.pem", "other-key.pem");
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 200'000'000, 7);
  write_trace(sim.trace, path("trace.snail").string());
  auto server = start(
      "serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--tls-cert",
                path("cert.pem").string(), "--tls-key", path("key.pem").string(), "--token-file",
                path("token").string(), "--port-file", path("ports").string(), "--window", "10ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  const std::string to = "127.0.0.1:" + std::to_string(tcp);
  auto send = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"send",
                                     path("trace.snail").string(),
                                     "--token-file",
                                     path("token").string(),
                                     "--connect-timeout",
                                     "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto p = start(name, args);
    p->wait();
    return p;
  };
  auto untrusted = send("untrusted", {"--to", to, "--tls-ca", path("other.pem").string()});
  EXPECT_EQ(untrusted->wait(), 1) << untrusted->err();
  EXPECT_NE(untrusted->err().find("not trusted"), std::string::npos) << untrusted->err();
  auto wrong_host = send(
      "host", {"--to", "localhost:" + std::to_string(tcp), "--tls-ca", path("cert.pem").string()});
  EXPECT_EQ(wrong_host->wait(), 1) << wrong_host->err();
  EXPECT_NE(wrong_host->err().find("not trusted"), std::string::npos) << wrong_host->err();
  // A plain producer: the server closes with its input unread, the reset says so.
  auto plain = send("plain", {"--to", to});
  EXPECT_EQ(plain->wait(), 1) << plain->err();
  EXPECT_TRUE(plain->err().find("did not take the stream") != std::string::npos ||
              plain->err().find("reset by peer") != std::string::npos)
      << plain->err();
  std::string metrics = https_get(http, "/metrics", path("cert.pem"), token).body;
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), 0u);
  EXPECT_GE(metric(metrics, "snailtrail_connections_tls_failed_total"), 1u);
  auto good = send("good", {"--to", to, "--tls-ca", path("cert.pem").string()});
  EXPECT_EQ(good->wait(), 0) << good->err();
  metrics = https_get(http, "/metrics", path("cert.pem"), token).body;
  EXPECT_EQ(metric(metrics, "snailtrail_events_ingested_total"), sim.trace.events.size());
  EXPECT_EQ(metric(metrics, "snailtrail_truncated_streams_total"), 0u);
  EXPECT_EQ(metric(metrics, "snailtrail_connections_unauthorized_total"), 0u);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// A client that does not trust the certificate (another CA) is refused by its own
// verification: the server's certificate is what the client checks.
TEST_F(ServeAuthCli, UntrustedCertificateIsRefusedByTheClient) {
  make_certificate();
  make_certificate("other.pem", "other-key.pem");
  auto server = start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--tls-cert", path("cert.pem").string(), "--tls-key",
                                path("key.pem").string(), "--port-file", path("ports").string()});
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  EXPECT_EQ(https_get(http, "/healthz", path("cert.pem")).status, 200);
  EXPECT_EQ(https_get(http, "/healthz", path("other.pem")).status, -1);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// Bad certificate or key files: exit 2 with the file named, before anything listens.
TEST_F(ServeAuthCli, BadCertificateFilesExit2) {
  make_certificate();
  make_certificate("other.pem", "other-key.pem");
  std::ofstream(path("garbage.pem")) << "not a certificate\n";
  const std::string base = "serve --tcp 127.0.0.1:0 --http 127.0.0.1:0 ";
  for (const auto& [cert, key, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"missing.pem", "key.pem", "cannot read"},
           {"cert.pem", "missing.pem", "cannot read"},
           {"garbage.pem", "key.pem", "is not a PEM certificate"},
           {"cert.pem", "garbage.pem", "is not a PEM private key"},
           {"cert.pem", "other-key.pem", "does not match"}}) {
    const auto r = testing::run_binary(
        base + "--tls-cert " + path(cert).string() + " --tls-key " + path(key).string(), 30);
    EXPECT_EQ(r.code, 2) << cert << " " << key << ": " << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
    const std::string named = why == "does not match" || cert == "cert.pem" ? key : cert;
    EXPECT_NE(r.out.find(path(named).string()), std::string::npos) << r.out;
  }
  const auto half = testing::run_binary(base + "--tls-cert " + path("cert.pem").string(), 30);
  EXPECT_EQ(half.code, 2) << half.out;
  EXPECT_NE(half.out.find("--tls-cert and --tls-key go together"), std::string::npos) << half.out;
}

// Beyond loopback: refused (exit 2, naming the flags) without TLS and a token, allowed
// with both (HTTP) or with --insecure. Nothing is sent off loopback: the refused binds
// never happen, and the allowed ones are reached through 127.0.0.1.
TEST_F(ServeAuthCli, NonLoopbackBindNeedsTlsAndTokenOrInsecure) {
  make_certificate();
  const std::string tls =
      " --tls-cert " + path("cert.pem").string() + " --tls-key " + path("key.pem").string();
  const std::string tok = " --token-file " + path("token").string();
  for (const std::string& args :
       {std::string("serve --tcp 127.0.0.1:0 --http 0.0.0.0:0"),
        "serve --tcp 127.0.0.1:0 --http 0.0.0.0:0" + tok,
        "serve --tcp 127.0.0.1:0 --http 0.0.0.0:0" + tls,
        "serve --tcp 0.0.0.0:0 --http 127.0.0.1:0" + tls,
        "serve --tcp 0.0.0.0:0 --http 127.0.0.1:0" + tok, std::string("serve --otlp 0.0.0.0:0"),
        "serve --otlp 0.0.0.0:0" + tok}) {
    const auto r = testing::run_binary(args, 30);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("0.0.0.0:0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--insecure"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("listens beyond this host"), std::string::npos) << r.out;
    for (const char* flag : {"--tls-cert", "--tls-key", "--token-file"})
      EXPECT_NE(r.out.find(flag), std::string::npos) << flag << " in " << r.out;
  }
  // With TLS and a token, the HTTP API may listen on every address.
  {
    auto server = start(
        "tls", {"serve", "--tcp", "127.0.0.1:0", "--http", "0.0.0.0:0", "--tls-cert",
                path("cert.pem").string(), "--tls-key", path("key.pem").string(), "--token-file",
                path("token").string(), "--port-file", path("ports1").string()});
    const int http = testing::wait_for_port(path("ports1"), "http");
    ASSERT_GT(http, 0) << server->err();
    EXPECT_EQ(https_get(http, "/api/windows", path("cert.pem"), token).status, 200);
    server->signal(SIGTERM);
    EXPECT_EQ(server->wait(), 0) << server->err();
  }
  // --insecure: the user means it.
  auto server = start("insecure", {"serve", "--tcp", "0.0.0.0:0", "--http", "0.0.0.0:0",
                                   "--insecure", "--port-file", path("ports2").string()});
  const int http = testing::wait_for_port(path("ports2"), "http");
  ASSERT_GT(http, 0) << server->err();
  EXPECT_EQ(http_get(http, "/api/windows").status, 200);
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// The OTLP receiver: POST /v1/traces needs the write token (nothing is taken without it),
// /metrics the read one, over HTTPS.
TEST_F(ServeAuthCli, OtlpNeedsTheTokenOverHttps) {
  make_certificate();
  auto server = start("otlp", {"serve", "--otlp", "127.0.0.1:0", "--tls-cert",
                               path("cert.pem").string(), "--tls-key", path("key.pem").string(),
                               "--token-file", path("token").string(), "--read-token-file",
                               path("read-token").string(), "--port-file", path("ports").string(),
                               "--out", path("paths.jsonl").string(), "--trace-idle", "1h"});
  const int port = testing::wait_for_port(path("ports"), "otlp");
  ASSERT_GT(port, 0) << server->err();
  testing::TestSpan s;
  s.trace = "0af7651916cd43dd8448eb211c80319c";
  s.id = "0000000000000001";
  s.name = "x";
  s.start = 1;
  s.end = 2;
  const std::string body = testing::otlp_protobuf({{"svc", {s}}});
  // A refused request is answered before its body is read, and the connection closed:
  // the client's write may meet a closed socket.
  const auto old_pipe = std::signal(SIGPIPE, SIG_IGN);
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(path("cert.pem").c_str());
  client.enable_server_certificate_verification(true);
  auto post = [&](const std::string& tok) {
    httplib::Headers h;
    if (!tok.empty()) h.emplace("Authorization", "Bearer " + tok);
    auto res = client.Post("/v1/traces", h, body, "application/x-protobuf");
    return res ? res->status : -1;
  };
  EXPECT_EQ(post(""), 401);
  EXPECT_EQ(post("nope"), 401);
  EXPECT_EQ(post(read_token), 401) << "the read token does not ingest";
  EXPECT_EQ(get(client, "/metrics", "").status, 401);
  const Answer before = get(client, "/metrics", read_token);
  EXPECT_EQ(before.status, 200);
  EXPECT_EQ(metric(before.body, "snailtrail_otlp_requests_total"), 0u) << before.body;
  EXPECT_EQ(post(token), 200);
  const Answer after = get(client, "/metrics", token);
  EXPECT_EQ(metric(after.body, "snailtrail_otlp_spans_accepted_total"), 1u) << after.body;
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  const std::string out = testing::slurp(path("paths.jsonl"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  std::signal(SIGPIPE, old_pipe);
}

}  // namespace
}  // namespace snailtrail::test_serve_auth
