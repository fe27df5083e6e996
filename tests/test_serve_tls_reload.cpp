// Issue 40, the server side: certificates reloaded on SIGHUP on every TLS listener of
// serve (TCP ingest, HTTP API, OTLP), clients that verify against the system's CA store
// when no --tls-ca is given, and a flood of unauthenticated connections that neither
// starves an authenticated producer nor grows serve's memory. Certificates are made here
// with the `openssl` command; everything stays on 127.0.0.1 (ports chosen by the kernel).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"
#include "sanitized.hpp"
#include "sim_test_util.hpp"
#include "tls_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_tls_reload {
namespace {

namespace fs = std::filesystem;
using testing::Process;

// A TCP connection to 127.0.0.1:port (-1: none), with 5 s send and receive timeouts so
// that a stalled server fails the test instead of hanging it.
int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A TLS session to 127.0.0.1:port that trusts only the CA in `ca` and checks that the
// certificate names 127.0.0.1: `error` is empty once established, else why not (the
// verification's reason when the certificate was refused).
class TlsSession {
 public:
  TlsSession(int port, const fs::path& ca) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_ || SSL_CTX_load_verify_locations(ctx_, ca.c_str(), nullptr) != 1) {
      error = "cannot load " + ca.string();
      return;
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = connect_local(port);
    if (fd_ < 0) {
      error = "cannot connect";
      return;
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    if (SSL_connect(ssl_) != 1) {
      const long v = SSL_get_verify_result(ssl_);
      error = v != X509_V_OK ? X509_verify_cert_error_string(v) : "handshake failed";
      ERR_clear_error();
    }
  }
  ~TlsSession() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;
  bool ok() const { return error.empty(); }
  bool write(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const int n = SSL_write(ssl_, data.data() + done, static_cast<int>(data.size() - done));
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Ends the stream (close_notify), and waits for the server to close its side.
  void finish() {
    SSL_shutdown(ssl_);
    ::shutdown(fd_, SHUT_WR);
    char buf[256];
    while (SSL_read(ssl_, buf, sizeof buf) > 0) {
    }
  }
  std::string error;

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
};

class ServeTlsReload : public testing::TempDirTest {
 protected:
  ServeTlsReload() : TempDirTest("serve-tls-reload") {}
  void SetUp() override {
    TempDirTest::SetUp();
    write("token", token + "\n");
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  void copy(const std::string& from, const std::string& to) const {
    fs::copy_file(path(from), path(to), fs::copy_options::overwrite_existing);
  }
  std::string file(const std::string& name) const { return path(name).string(); }
  std::unique_ptr<Process> start(const std::string& name, const std::vector<std::string>& args) {
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }
  std::unique_ptr<Process> run(const std::string& name, const std::vector<std::string>& args) {
    auto p = start(name, args);
    p->wait();
    return p;
  }
  // Waits (up to 60 s) until `text` is in the server's log.
  static bool wait_for_log(const Process& server, const std::string& text) {
    return testing::wait_until([&] { return server.err().find(text) != std::string::npos; });
  }
  // The server's ingested events, read over HTTPS trusting `ca`, once it reached `want`
  // (or after 60 s).
  uint64_t events_ingested(int http, const std::string& ca, uint64_t want) const {
    uint64_t got = 0;
    testing::wait_until([&] {
      const std::string m = testing::https_get(http, "/metrics", path(ca), token).body;
      if (m.find("snailtrail_events_ingested_total") != std::string::npos)
        got = testing::metric_value(m, "snailtrail_events_ingested_total");
      return got >= want;
    });
    return got;
  }
  const std::string token = "reload-token-4321";
};

// serve starts with certificate A (signed by CA A); the files are replaced with
// certificate B (another CA) and SIGHUP reloads them on the TCP ingest, the HTTP API and
// the OTLP receiver: a client trusting only CA B gets in, one trusting only CA A is
// refused, on each port (the oracle: OpenSSL's own verification in the client). A session
// established before the signal keeps its certificate and still delivers a whole trace.
// A bad pair (a key that does not match, a file that cannot be read) is logged naming the
// file and B stays.
TEST_F(ServeTlsReload, SighupReloadsTheCertificates) {
  testing::make_ca(dir_, "ca-a");
  testing::make_ca(dir_, "ca-b");
  testing::make_signed_certificate(dir_, "ca-a", "cert-a.pem", "key-a.pem");
  testing::make_signed_certificate(dir_, "ca-b", "cert-b.pem", "key-b.pem");
  copy("cert-a.pem", "cert.pem");
  copy("key-a.pem", "key.pem");
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 100'000'000, 5);
  write_trace(sim.trace, file("trace.snail"));
  auto server = start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--otlp",
                                "127.0.0.1:0", "--otlp-out", file("otlp.jsonl"), "--tls-cert",
                                file("cert.pem"), "--tls-key", file("key.pem"), "--token-file",
                                file("token"), "--port-file", file("ports"), "--window", "10ms"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  const int otlp = testing::wait_for_port(path("ports"), "otlp");
  ASSERT_GT(otlp, 0) << server->err();
  const std::vector<std::pair<const char*, int>> ports = {
      {"tcp", tcp}, {"http", http}, {"otlp", otlp}};
  for (const auto& [name, port] : ports) {
    EXPECT_TRUE(TlsSession(port, path("ca-a.pem")).ok()) << name;
    EXPECT_EQ(TlsSession(port, path("ca-b.pem")).error, "unable to get local issuer certificate")
        << name;
  }
  // Established with A before the reload; its stream is sent after it.
  TlsSession kept(tcp, path("ca-a.pem"));
  ASSERT_TRUE(kept.ok()) << kept.error;
  ASSERT_TRUE(kept.write("Bearer " + token + "\n"));
  copy("cert-b.pem", "cert.pem");
  copy("key-b.pem", "key.pem");
  EXPECT_TRUE(TlsSession(http, path("ca-a.pem")).ok()) << "files alone change nothing";
  server->signal(SIGHUP);
  ASSERT_TRUE(wait_for_log(*server, "SIGHUP: re-read the certificate " + file("cert.pem")))
      << server->err();
  for (const auto& [name, port] : ports) {
    EXPECT_TRUE(TlsSession(port, path("ca-b.pem")).ok()) << name;
    EXPECT_EQ(TlsSession(port, path("ca-a.pem")).error, "unable to get local issuer certificate")
        << name;
  }
  SnailWriteOptions stream;
  stream.version = 1;  // a stream has no block index
  ASSERT_TRUE(kept.write(to_snail(sim.trace, stream)));
  kept.finish();
  EXPECT_EQ(events_ingested(http, "ca-b.pem", sim.trace.events.size()), sim.trace.events.size());
  // A key that does not match the certificate: logged, B stays.
  copy("cert-a.pem", "cert.pem");
  server->signal(SIGHUP);
  EXPECT_TRUE(wait_for_log(
      *server, "SIGHUP: kept the previous certificate: --tls-key: the key in " + file("key.pem") +
                   " does not match the certificate in " + file("cert.pem")))
      << server->err();
  // A certificate that cannot be read: the same.
  fs::remove(path("cert.pem"));
  server->signal(SIGHUP);
  EXPECT_TRUE(wait_for_log(
      *server,
      "SIGHUP: kept the previous certificate: --tls-cert: cannot read " + file("cert.pem")))
      << server->err();
  for (const auto& [name, port] : ports) {
    EXPECT_TRUE(TlsSession(port, path("ca-b.pem")).ok()) << name;
    EXPECT_FALSE(TlsSession(port, path("ca-a.pem")).ok()) << name;
  }
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
  EXPECT_EQ(server->err().find(token), std::string::npos) << "no token in the log";
}

// Without --tls-ca, TLS asked for by the address (tls://HOST:PORT for send and run
// --trace-to, https:// for scale manage --serve) is verified against the system's CA
// store, which does not know the test's self-signed certificate: each client refuses it,
// saying why. The oracle that it is the system store: OpenSSL's default paths follow
// SSL_CERT_FILE, and with it naming the certificate the same send gets every event in.
TEST_F(ServeTlsReload, ClientsVerifyAgainstTheSystemStoreWithoutTlsCa) {
  testing::make_certificate(dir_);
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 100'000'000, 5);
  write_trace(sim.trace, file("trace.snail"));
  auto server = start("serve", {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--tls-cert", file("cert.pem"), "--tls-key", file("key.pem"),
                                "--token-file", file("token"), "--port-file", file("ports")});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  const std::string to = "tls://127.0.0.1:" + std::to_string(tcp);
  const std::string why = "the server's certificate is not trusted: self-signed certificate";
  const std::string store = "checked against the system's CA store";
  auto sent = run("send", {"send", file("trace.snail"), "--to", to, "--token-file", file("token")});
  EXPECT_EQ(sent->wait(), 1) << sent->err();
  EXPECT_NE(sent->err().find(why + " (" + store + "; a private CA needs --tls-ca FILE)"),
            std::string::npos)
      << sent->err();
  auto ran = run("run", {"run", "keycount", "--records", "1000", "--trace-to", to,
                         "--trace-to-token-file", file("token"), "-q"});
  EXPECT_EQ(ran->wait(), 1) << ran->err();
  EXPECT_NE(ran->err().find(why + " (" + store + "; a private CA needs --trace-to-tls-ca FILE)"),
            std::string::npos)
      << ran->err();
  auto managed =
      run("manage", {"scale", "manage", "--serve", "https://127.0.0.1:" + std::to_string(http),
                     "--token-file", file("token")});
  EXPECT_EQ(managed->wait(), 1) << managed->err();
  EXPECT_NE(managed->err().find(why + " (" + store), std::string::npos) << managed->err();
  EXPECT_EQ(events_ingested(http, "cert.pem", 0), 0u);
  // The same send with the system store made of the test's certificate.
  ::setenv("SSL_CERT_FILE", file("cert.pem").c_str(), 1);
  auto trusted =
      run("trusted", {"send", file("trace.snail"), "--to", to, "--token-file", file("token")});
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(trusted->wait(), 0) << trusted->err();
  EXPECT_EQ(events_ingested(http, "cert.pem", sim.trace.events.size()), sim.trace.events.size());
  // tls:// with --tls-ca: that file, not the store.
  auto with_ca = run("with-ca", {"send", file("trace.snail"), "--to", to, "--token-file",
                                 file("token"), "--tls-ca", file("cert.pem")});
  EXPECT_EQ(with_ca->wait(), 0) << with_ca->err();
  EXPECT_EQ(events_ingested(http, "cert.pem", 2 * sim.trace.events.size()),
            2 * sim.trace.events.size());
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->err();
}

// serve's resident memory (VmRSS of /proc/PID/status, KiB; 0: unknown).
uint64_t rss_kib(pid_t pid) {
  std::istringstream in(testing::slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

// One unauthenticated connection attempt of kind `k % 3`: connect and close at once; a
// plain-text token line on the TLS port; a TLS session (trusting `ca`) with a wrong token.
void unauthenticated_attempt(int port, const fs::path& ca, uint64_t k) {
  if (k % 3 == 2) {
    TlsSession s(port, ca);
    if (s.ok()) s.write("Bearer not-the-token\n");
    return;
  }
  const int fd = connect_local(port);
  if (fd < 0) return;
  if (k % 3 == 1) {
    static const char line[] = "Bearer not-the-token\n";
    [[maybe_unused]] ssize_t n = ::send(fd, line, sizeof line - 1, MSG_NOSIGNAL);
  }
  ::close(fd);
}

// Issue 40, item 5: 3 000 unauthenticated connection attempts, about 1 000 a second (3 s), on
// the TCP ingest (TLS and a token) while an authenticated producer sends a trace paced
// over about 2 s. The producer is not starved: its whole trace is ingested and serve's
// windows equal `analyze`'s of the same file (the oracle). Memory does not grow with the
// attempts: VmRSS after them is within 20 MiB of before (3 000 attempts that each kept
// even 7 KiB would pass that). No timing is asserted but the (generous) wait for the
// producer. Release build only: under a sanitizer every handshake costs ten times more.
TEST_F(ServeTlsReload, UnauthenticatedFloodNeitherStarvesNorGrowsMemory) {
  if (testing::kSanitized) GTEST_SKIP() << "a load test: release build only";
  testing::make_ca(dir_, "ca");
  testing::make_signed_certificate(dir_, "ca", "cert.pem", "key.pem");
  const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", 300'000'000, 11);
  write_trace(sim.trace, file("trace.snail"));
  auto server = start("serve", {"serve",
                                "--tcp",
                                "127.0.0.1:0",
                                "--http",
                                "127.0.0.1:0",
                                "--tls-cert",
                                file("cert.pem"),
                                "--tls-key",
                                file("key.pem"),
                                "--token-file",
                                file("token"),
                                "--port-file",
                                file("ports"),
                                "--window",
                                "100ms",
                                "--lateness",
                                "10s",
                                "--out",
                                file("windows.jsonl"),
                                "--quiet"});
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server->err();
  // Warm up (OpenSSL's and the allocator's first-use costs), then the baseline.
  for (uint64_t k = 0; k < 60; ++k) unauthenticated_attempt(tcp, path("ca.pem"), k);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t before = rss_kib(server->pid());
  ASSERT_GT(before, 0u);
  // Two threads of 1,500 attempts at most 500 a second each: 3 s, longer if the machine is
  // slower (a count, not a duration: a loaded machine still makes all 3,000).
  constexpr uint64_t kPerThread = 1500;
  std::atomic<uint64_t> attempts{0};
  const auto start_at = std::chrono::steady_clock::now();
  std::vector<std::thread> flood;
  for (int t = 0; t < 2; ++t)
    flood.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const auto due = start_at + std::chrono::microseconds(2000 * i + 1000 * t);
        std::this_thread::sleep_until(due);
        unauthenticated_attempt(tcp, path("ca.pem"), i + static_cast<uint64_t>(t));
        ++attempts;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string rate = std::to_string(sim.trace.events.size() / 2 + 1);
  auto producer =
      start("send", {"send", file("trace.snail"), "--to", "127.0.0.1:" + std::to_string(tcp),
                     "--tls-ca", file("ca.pem"), "--token-file", file("token"), "--rate", rate});
  for (std::thread& t : flood) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_at).count();
  EXPECT_EQ(producer->wait(), 0) << producer->err();
  // serve has taken the trace and counted the refused attempts (the last closes).
  std::string metrics;
  testing::wait_until([&] {
    metrics = testing::https_get(http, "/metrics", path("ca.pem"), token).body;
    return metrics.find("snailtrail_connections_tls_failed_total") != std::string::npos &&
           testing::metric_value(metrics, "snailtrail_events_ingested_total") ==
               sim.trace.events.size() &&
           testing::metric_value(metrics, "snailtrail_connections_unauthorized_total") +
                   testing::metric_value(metrics, "snailtrail_connections_tls_failed_total") >=
               attempts.load() / 3;
  });
  const uint64_t after = rss_kib(server->pid());
  std::cout << "[ flood    ] " << attempts.load() << " unauthenticated attempts in " << seconds
            << " s; serve's VmRSS " << before << " KiB before, " << after << " KiB after; "
            << testing::metric_value(metrics, "snailtrail_connections_unauthorized_total")
            << " unauthorized, "
            << testing::metric_value(metrics, "snailtrail_connections_tls_failed_total")
            << " failed TLS handshakes\n";
  EXPECT_EQ(attempts.load(), 2 * kPerThread);
  EXPECT_LT(after, before + 20 * 1024) << "VmRSS grew from " << before << " KiB";
  EXPECT_EQ(testing::metric_value(metrics, "snailtrail_events_ingested_total"),
            sim.trace.events.size());
  EXPECT_GE(testing::metric_value(metrics, "snailtrail_connections_unauthorized_total") +
                testing::metric_value(metrics, "snailtrail_connections_tls_failed_total"),
            attempts.load() / 3);
  server->signal(SIGTERM);
  ASSERT_EQ(server->wait(), 0) << server->err();
  auto analyze = run("analyze", {"analyze", file("trace.snail"), "--window", "100ms", "--format",
                                 "jsonl", "--no-progress"});
  ASSERT_EQ(analyze->wait(), 0) << analyze->err();
  std::string want = analyze->out();
  const size_t verdict = want.rfind("{\"run\":");
  ASSERT_NE(verdict, std::string::npos);
  want.resize(verdict);  // analyze's last line is the run's verdict, which serve does not write
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(testing::slurp(path("windows.jsonl")), want);
}

}  // namespace
}  // namespace snailtrail::test_serve_tls_reload
