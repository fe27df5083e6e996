// Credentials and TLS on the NATS path (issue 40 item 4; docs/SERVE.md, "NATS credentials
// and TLS"): `send --to`, `serve --nats` and `run --trace-to` against a nats-server that
// wants a user and password, a token, TLS or a client certificate. The oracle of the
// streams that get through is `analyze` of the same trace, line for line; the refusals
// must be quick, say why, and never print the password or token. The address handling
// (redaction, host, scheme) is checked against hand-written addresses.
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <openssl/evp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nats_test_util.hpp"
#include "process_util.hpp"
#include "serve/nats_creds.hpp"
#include "serve/nats_link.hpp"
#include "sim_test_util.hpp"
#include "tls_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_nats_auth {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::Process;

using testing::lines_of;

// Seconds a command took, with its result.
struct Timed {
  CommandResult result;
  double seconds = 0;
};
Timed timed_run(const std::string& args) {
  const auto t0 = std::chrono::steady_clock::now();
  Timed t;
  t.result = testing::run_binary(args, 180);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

// Operator mode, made here (Debian packages no `nsc`): nkeys are ed25519 keys written as
// base32 of a type prefix, the key and a CRC-16 (XMODEM); JWTs are signed by the
// issuer's nkey ("ed25519-nkey"). An operator signs the accounts, an account its users.
uint16_t crc16(const std::string& bytes) {
  uint16_t crc = 0;
  for (unsigned char b : bytes) {
    crc ^= static_cast<uint16_t>(b << 8);
    for (int i = 0; i < 8; ++i)
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

std::string base32(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    buffer = (buffer << 8) | b;
    for (bits += 8; bits >= 5; bits -= 5) out += alphabet[(buffer >> (bits - 5)) & 31];
  }
  if (bits > 0) out += alphabet[(buffer << (5 - bits)) & 31];
  return out;
}

std::string base64url(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    buffer = (buffer << 8) | b;
    for (bits += 8; bits >= 6; bits -= 6) out += alphabet[(buffer >> (bits - 6)) & 63];
  }
  if (bits > 0) out += alphabet[(buffer << (6 - bits)) & 63];
  return out;
}

std::string with_crc(std::string raw) {
  const uint16_t c = crc16(raw);
  raw += static_cast<char>(c & 0xff);
  raw += static_cast<char>(c >> 8);
  return base32(raw);
}

// An ed25519 nkey of a type (prefix byte: operator 14 << 3, account 0, user 20 << 3).
struct NKey {
  explicit NKey(unsigned char prefix) {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    std::string seed(32, '\0'), pub(32, '\0');
    size_t n = 32;
    EVP_PKEY_get_raw_private_key(key, reinterpret_cast<unsigned char*>(seed.data()), &n);
    n = 32;
    EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(pub.data()), &n);
    public_key = with_crc(std::string(1, static_cast<char>(prefix)) + pub);
    const unsigned char seed_prefix = 18 << 3;
    seed_text = with_crc(std::string{static_cast<char>(seed_prefix | (prefix >> 5)),
                                     static_cast<char>((prefix & 31) << 3)} +
                         seed);
  }
  ~NKey() { EVP_PKEY_free(key); }
  NKey(const NKey&) = delete;
  NKey& operator=(const NKey&) = delete;
  std::string sign(const std::string& text) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::string sig(64, '\0');
    size_t n = sig.size();
    EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key);
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &n,
                   reinterpret_cast<const unsigned char*>(text.data()), text.size());
    EVP_MD_CTX_free(ctx);
    return sig;
  }
  EVP_PKEY* key = nullptr;
  std::string public_key, seed_text;
};

// A JWT about `subject`, signed by `issuer`; `nats` is the claims' "nats" object.
std::string jwt(const NKey& issuer, const std::string& subject, const std::string& nats) {
  const std::string header = base64url(R"({"typ":"JWT","alg":"ed25519-nkey"})");
  const std::string claims =
      base64url(R"({"jti":")" + std::string(52, 'J') + R"(","iat":)" +
                std::to_string(std::time(nullptr)) + R"(,"iss":")" + issuer.public_key +
                R"(","sub":")" + subject + R"(","name":"snailtrail-test","nats":)" + nats + "}");
  return header + "." + claims + "." + base64url(issuer.sign(header + "." + claims));
}

const char* kNoLimits =
    R"("limits":{"subs":-1,"data":-1,"payload":-1,"imports":-1,"exports":-1,"wildcards":true,)"
    R"("conn":-1,"leaf":-1,"mem_storage":-1,"disk_storage":-1,"streams":-1,"consumer":-1})";

// A .creds file of a new user of `account`.
std::string creds_of(const NKey& account) {
  const NKey user(20 << 3);
  return "-----BEGIN NATS USER JWT-----\n" +
         jwt(account, user.public_key,
             R"({"pub":{},"sub":{},"subs":-1,"data":-1,"payload":-1,"type":"user","version":2})") +
         "\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n" + user.seed_text +
         "\n------END USER NKEY SEED------\n";
}

class NatsAuth : public testing::TempDirTest {
 protected:
  NatsAuth() : TempDirTest("natsauth") {}

  void SetUp() override {
    TempDirTest::SetUp();
    binary_ = testing::find_nats_server();
    if (binary_.empty()) GTEST_SKIP() << "nats-server is not installed (make deps installs it)";
  }

  // The address of stream `stream` on the server, with `userinfo` ("USER:PASS" or TOKEN).
  std::string url(const std::string& stream, const std::string& userinfo = "",
                  const std::string& scheme = "nats") const {
    return scheme + "://" + (userinfo.empty() ? "" : userinfo + "@") +
           "127.0.0.1:" + std::to_string(nats_.port()) + "/" + stream;
  }

  fs::path simulated(int64_t duration_ns, uint64_t seed) {
    const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", duration_ns, seed);
    write_trace(sim.trace, path("trace.snail").string());
    return path("trace.snail");
  }

  // `analyze TRACE --window 1ms --format jsonl` without its final run record.
  std::vector<std::string> analyze_lines(const fs::path& trace) {
    return testing::analyze_window_lines(trace, path("analyze.out"), path("analyze.err"));
  }

  // `send TRACE --to TO MORE...`, then `serve --nats FROM --drain MORE_SERVE...`: serve's
  // windows must equal analyze's. Returns send's stderr.
  std::string send_and_serve(const fs::path& trace, const std::string& to,
                             const std::vector<std::string>& more_send, const std::string& from,
                             const std::vector<std::string>& more_serve) {
    const auto expected = analyze_lines(trace);
    EXPECT_GT(expected.size(), 100u);
    std::vector<std::string> args = {"send", trace.string(), "--to", to};
    args.insert(args.end(), more_send.begin(), more_send.end());
    Process send(args, path("send.out"), path("send.err"));
    EXPECT_EQ(send.wait(), 0) << send.err();
    args = {"serve",   "--nats",   from,  "--durable", "d",
            "--drain", "--window", "1ms", "--out",     path("windows.jsonl").string()};
    args.insert(args.end(), more_serve.begin(), more_serve.end());
    Process serve(args, path("serve.out"), path("serve.err"));
    EXPECT_EQ(serve.wait(), 0) << serve.err();
    EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
    serve_err_ = serve.err();
    return send.err();
  }

  // A nats-server in operator mode (an operator, its system account and one account with
  // JetStream, preloaded) and the .creds files "user.creds" of a user of that account and
  // "stranger.creds" of a user of an account the operator never signed.
  void start_operator_mode_server() {
    const NKey op(14 << 3), account(0), system(0), stranger(0);
    std::ofstream(path("op.jwt")) << jwt(op, op.public_key, R"({"type":"operator","version":2})");
    std::ofstream(path("server.conf"))
        << "operator: " << path("op.jwt").string() << "\nsystem_account: " << system.public_key
        << "\nresolver: MEMORY\nresolver_preload: {\n  " << account.public_key << ": "
        << jwt(op, account.public_key,
               std::string("{") + kNoLimits + R"(,"type":"account","version":2})")
        << "\n  " << system.public_key << ": "
        << jwt(op, system.public_key,
               R"({"limits":{"subs":-1,"data":-1,"payload":-1,"imports":-1,"exports":-1,)"
               R"("wildcards":true,"conn":-1,"leaf":-1},"type":"account","version":2})")
        << "\n}\n";
    std::ofstream(path("user.creds")) << creds_of(account);
    std::ofstream(path("stranger.creds")) << creds_of(stranger);
    nats_.start(binary_, dir_, {"-c", path("server.conf").string()});
  }

  std::string binary_;
  testing::NatsServer nats_;
  std::string serve_err_;  // of the last send_and_serve
};

// The password of the URL reaches nats-server (it accepts the connection and the stream
// is served equal to analyze) and is never printed: send's and serve's lines show
// nats://alice:***@...
TEST_F(NatsAuth, UserAndPasswordInTheUrlStreamEqualToAnalyze) {
  nats_.start(binary_, dir_, {"--user", "alice", "--pass", "Pw-7f3e"});
  const fs::path trace = simulated(300'000'000, 31);
  const std::string sent =
      send_and_serve(trace, url("TR", "alice:Pw-7f3e"), {}, url("TR", "alice:Pw-7f3e"), {});
  EXPECT_NE(sent.find("to nats://alice:***@127.0.0.1:"), std::string::npos) << sent;
  EXPECT_NE(serve_err_.find("reading nats://alice:***@127.0.0.1:"), std::string::npos)
      << serve_err_;
  EXPECT_EQ(sent.find("Pw-7f3e"), std::string::npos) << sent;
  EXPECT_EQ(serve_err_.find("Pw-7f3e"), std::string::npos) << serve_err_;
}

// A wrong password, a wrong token or none at all: exit 1 at once (not after retrying for
// the connect timeout of 120 s), "nats-server refused ...", the secret not printed.
TEST_F(NatsAuth, RefusedCredentialsFailAtOnceWithoutPrintingThem) {
  nats_.start(binary_, dir_, {"--user", "alice", "--pass", "Pw-7f3e"});
  const fs::path trace = simulated(50'000'000, 1);
  Timed t = timed_run("send " + trace.string() + " --to " + url("TR", "alice:Wr0ng-9a1") +
                      " --connect-timeout 120");
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a refusal";
  EXPECT_NE(t.result.out.find("nats-server refused the credentials of nats://alice:***@"),
            std::string::npos)
      << t.result.out;
  EXPECT_EQ(t.result.out.find("Wr0ng-9a1"), std::string::npos) << t.result.out;
  t = timed_run("serve --nats " + url("TR", "alice:Wr0ng-9a1") +
                " --durable d --nats-timeout 120 --out " + path("w.jsonl").string());
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a refusal";
  EXPECT_NE(t.result.out.find("nats-server refused the credentials"), std::string::npos)
      << t.result.out;
  EXPECT_EQ(t.result.out.find("Wr0ng-9a1"), std::string::npos) << t.result.out;
  // No credentials: the message says where they go.
  t = timed_run("send " + trace.string() + " --to " + url("TR") + " --connect-timeout 120");
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a refusal";
  EXPECT_NE(t.result.out.find("without credentials"), std::string::npos) << t.result.out;
}

// nats://TOKEN@...: the right token streams (oracle: analyze), a wrong one is refused,
// neither is printed (nats://***@...).
TEST_F(NatsAuth, TokenInTheUrl) {
  nats_.start(binary_, dir_, {"--auth", "Tk-5c2d8"});
  const fs::path trace = simulated(300'000'000, 37);
  const std::string sent =
      send_and_serve(trace, url("TK", "Tk-5c2d8"), {}, url("TK", "Tk-5c2d8"), {});
  EXPECT_NE(sent.find("to nats://***@127.0.0.1:"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("Tk-5c2d8"), std::string::npos) << sent;
  EXPECT_EQ(serve_err_.find("Tk-5c2d8"), std::string::npos) << serve_err_;
  const CommandResult r =
      testing::run_binary("send " + trace.string() + " --to " + url("TK", "Tk-bad77"), 60);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("refused the credentials of nats://***@"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Tk-bad77"), std::string::npos) << r.out;
}

// `run --trace-to nats://USER:PASS@...`: published with the URL's credentials (serve's
// windows equal analyze of the run's --trace), the summary line redacted.
TEST_F(NatsAuth, RunTraceToWithCredentialsEqualsAnalyzeOfItsTrace) {
  nats_.start(binary_, dir_, {"--user", "alice", "--pass", "Pw-7f3e"});
  Process run(
      {"run", "wordcount", "--workers", "2", "--rate", "200000", "--duration", "300ms", "--keys",
       "1000", "--trace", path("run.snail").string(), "--trace-to", url("RUN", "alice:Pw-7f3e")},
      path("run.out"), path("run.err"));
  ASSERT_EQ(run.wait(), 0) << run.err();
  EXPECT_NE(run.err().find("trace-to: sent "), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("nats://alice:***@"), std::string::npos) << run.err();
  EXPECT_EQ(run.err().find("Pw-7f3e"), std::string::npos) << run.err();
  Process serve(
      {"serve", "--nats", url("RUN", "alice:Pw-7f3e"), "--durable", "r", "--drain", "--lateness",
       "10s", "--window", "1ms", "--out", path("windows.jsonl").string(), "--quiet"},
      path("serve.out"), path("serve.err"));
  ASSERT_EQ(serve.wait(), 0) << serve.err();
  std::vector<std::string> want = analyze_lines(path("run.snail"));
  EXPECT_GT(want.size(), 100u);
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), want);
}

// nats-server with TLS (a certificate for 127.0.0.1 made by openssl): tls:// with the CA
// streams equal to analyze, for send, serve and run; a CA that did not sign it, or a
// certificate for another host, fails at once naming TLS and the CA option.
TEST_F(NatsAuth, TlsWithTheServersCaWorksAnotherCaOrHostIsRefused) {
  testing::make_certificate(dir_, "cert.pem", "key.pem");
  testing::make_certificate(dir_, "other.pem", "other-key.pem");
  if (HasFatalFailure()) return;
  nats_.start(
      binary_, dir_,
      {"--tls", "--tlscert", path("cert.pem").string(), "--tlskey", path("key.pem").string()});
  const fs::path trace = simulated(300'000'000, 41);
  const std::string ca = path("cert.pem").string();
  send_and_serve(trace, url("TLS", "", "tls"), {"--tls-ca", ca}, url("TLS", "", "tls"),
                 {"--nats-tls-ca", ca});
  Timed t = timed_run("send " + trace.string() + " --to " + url("TLS", "", "tls") +
                      " --connect-timeout 120 --tls-ca " + path("other.pem").string());
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a TLS failure";
  EXPECT_NE(t.result.out.find("TLS with tls://127.0.0.1:"), std::string::npos) << t.result.out;
  EXPECT_NE(t.result.out.find("--tls-ca " + path("other.pem").string()), std::string::npos)
      << t.result.out;
  t = timed_run("serve --nats " + url("TLS", "", "tls") + " --durable e --nats-timeout 120 " +
                "--nats-tls-ca " + path("other.pem").string() + " --out " +
                path("w.jsonl").string());
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a TLS failure";
  EXPECT_NE(t.result.out.find("--nats-tls-ca " + path("other.pem").string()), std::string::npos)
      << t.result.out;
  // Plain nats:// without a CA option: the server wants TLS, the system store does not
  // trust our CA.
  const CommandResult r = testing::run_binary("send " + trace.string() + " --to " + url("TLS"), 60);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("TLS with"), std::string::npos) << r.out;
  // A certificate signed by the right CA but for another host: the host name is checked.
  nats_.stop();
  const std::string log = path("openssl-host.log").string();
  const std::string make =
      "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=elsewhere.example -addext "
      "subjectAltName=DNS:elsewhere.example -days 1 -keyout " +
      path("host-key.pem").string() + " -out " + path("host.pem").string() + " >" + log + " 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0) << testing::slurp(log);
  nats_.start(
      binary_, dir_,
      {"--tls", "--tlscert", path("host.pem").string(), "--tlskey", path("host-key.pem").string()});
  const CommandResult h =
      testing::run_binary("send " + trace.string() + " --to " + url("TLS", "", "tls") +
                              " --tls-ca " + path("host.pem").string(),
                          60);
  EXPECT_EQ(h.code, 1) << h.out;
  EXPECT_NE(h.out.find("mismatch"), std::string::npos) << h.out;
}

// nats-server --tlsverify: without a client certificate the connection is closed (a
// clear error naming --nats-tls-cert, no retry loop); with one that its CA signed, the
// stream is served equal to analyze.
TEST_F(NatsAuth, ClientCertificateForTlsVerify) {
  testing::make_certificate(dir_, "cert.pem", "key.pem");
  testing::make_certificate(dir_, "client.pem", "client-key.pem");
  if (HasFatalFailure()) return;
  nats_.start(binary_, dir_,
              {"--tlsverify", "--tlscert", path("cert.pem").string(), "--tlskey",
               path("key.pem").string(), "--tlscacert", path("client.pem").string()});
  const fs::path trace = simulated(300'000'000, 43);
  const std::string ca = path("cert.pem").string();
  const Timed t = timed_run("send " + trace.string() + " --to " + url("MT", "", "tls") +
                            " --connect-timeout 120 --tls-ca " + ca);
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a refusal";
  EXPECT_NE(t.result.out.find("--nats-tls-cert"), std::string::npos) << t.result.out;
  const std::vector<std::string> client = {"--nats-tls-cert", path("client.pem").string(),
                                           "--nats-tls-key", path("client-key.pem").string()};
  std::vector<std::string> send_args = {"--tls-ca", ca};
  send_args.insert(send_args.end(), client.begin(), client.end());
  std::vector<std::string> serve_args = {"--nats-tls-ca", ca};
  serve_args.insert(serve_args.end(), client.begin(), client.end());
  send_and_serve(trace, url("MT", "", "tls"), send_args, url("MT", "", "tls"), serve_args);
  // run --trace-to with the client certificate: what it streams equals analyze of its trace.
  Process run({"run",
               "wordcount",
               "--workers",
               "2",
               "--rate",
               "200000",
               "--duration",
               "200ms",
               "--keys",
               "1000",
               "--trace",
               path("run.snail").string(),
               "--trace-to",
               url("MTRUN", "", "tls"),
               "--trace-to-tls-ca",
               ca,
               "--trace-to-nats-tls-cert",
               path("client.pem").string(),
               "--trace-to-nats-tls-key",
               path("client-key.pem").string()},
              path("run.out"), path("run.err"));
  ASSERT_EQ(run.wait(), 0) << run.err();
  Process serve({"serve", "--nats", url("MTRUN", "", "tls"), "--nats-tls-ca", ca, "--nats-tls-cert",
                 path("client.pem").string(), "--nats-tls-key", path("client-key.pem").string(),
                 "--durable", "r", "--drain", "--lateness", "10s", "--window", "1ms", "--out",
                 path("run-windows.jsonl").string(), "--quiet"},
                path("serve-run.out"), path("serve-run.err"));
  ASSERT_EQ(serve.wait(), 0) << serve.err();
  const std::vector<std::string> want = analyze_lines(path("run.snail"));
  EXPECT_GT(want.size(), 50u);
  EXPECT_EQ(lines_of(testing::slurp(path("run-windows.jsonl"))), want);
  // Without it, the run is refused at once, naming the option.
  const CommandResult r =
      testing::run_binary("run wordcount --duration 100ms --trace-to " + url("MTRUN", "", "tls") +
                              " --trace-to-tls-ca " + ca,
                          60);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--trace-to-nats-tls-cert"), std::string::npos) << r.out;
}

// --nats-creds: a missing or empty file is named before any connection (exit 2, even
// with no server at all); a file that is no credentials file is named with libnats'
// reason (it read the file: the option reaches the client); a well-formed one that the
// server cannot verify is refused as credentials (accepted ones: the operator test below).
TEST_F(NatsAuth, CredsFileErrors) {
  const fs::path trace = simulated(50'000'000, 1);
  const std::string nowhere =
      "nats://127.0.0.1:" + std::to_string(testing::free_loopback_port()) + "/TR";
  CommandResult r = testing::run_binary("send " + trace.string() + " --to " + nowhere +
                                            " --nats-creds " + path("missing.creds").string(),
                                        60);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--nats-creds " + path("missing.creds").string() + ": cannot read it"),
            std::string::npos)
      << r.out;
  r = testing::run_binary("serve --nats " + nowhere + " --durable d --nats-creds " +
                              path("missing.creds").string() + " --out " + path("w.jsonl").string(),
                          60);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--nats-creds"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cannot connect"), std::string::npos) << r.out;
  r = testing::run_binary("run wordcount --duration 100ms --trace-to " + nowhere +
                              " --trace-to-nats-creds " + path("missing.creds").string(),
                          60);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--trace-to-nats-creds"), std::string::npos) << r.out;
  { std::ofstream(path("empty.creds")); }
  r = testing::run_binary("send " + trace.string() + " --to " + nowhere + " --nats-creds " +
                              path("empty.creds").string(),
                          60);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the file is empty"), std::string::npos) << r.out;
  // Refused on a TCP destination.
  r = testing::run_binary(
      "send " + trace.string() + " --to 127.0.0.1:1 --nats-creds " + path("empty.creds").string(),
      60);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("apply to nats:// destinations"), std::string::npos) << r.out;

  nats_.start(binary_, dir_, {"--user", "alice", "--pass", "Pw-7f3e"});
  std::ofstream(path("garbage.creds")) << "not a credentials file\n";
  Timed t = timed_run("send " + trace.string() + " --to " + url("TR") +
                      " --connect-timeout 120 --nats-creds " + path("garbage.creds").string());
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a bad file";
  EXPECT_NE(t.result.out.find("not a usable NATS credentials file"), std::string::npos)
      << t.result.out;
  // Well formed (a JWT and a valid user seed), but not signed by any operator this server
  // knows: libnats signs the server's nonce with the seed and sends the JWT; refused.
  std::ofstream(path("user.creds"))
      << "-----BEGIN NATS USER JWT-----\n"
         "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJ4In0.c2ln\n"
         "------END NATS USER JWT------\n\n"
         "-----BEGIN USER NKEY SEED-----\n"
         "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU\n"
         "------END USER NKEY SEED------\n";
  t = timed_run("send " + trace.string() + " --to " + url("TR") +
                " --connect-timeout 120 --nats-creds " + path("user.creds").string());
  EXPECT_EQ(t.result.code, 1) << t.result.out;
  EXPECT_LT(t.seconds, 60) << "retried a refusal";
  EXPECT_NE(t.result.out.find("refused the credentials of nats://127.0.0.1:"), std::string::npos)
      << t.result.out;
  EXPECT_NE(t.result.out.find("--nats-creds " + path("user.creds").string()), std::string::npos)
      << t.result.out;
}

// Operator mode: nats-server trusts an operator whose account (with JetStream) signed our
// user's JWT. `--nats-creds` with that user's file streams equal to analyze (send, serve,
// run); without it, or with a user of an account the operator did not sign, refused.
TEST_F(NatsAuth, CredsFileOfAnOperatorsUserStreamsEqualToAnalyze) {
  start_operator_mode_server();
  const fs::path trace = simulated(300'000'000, 47);
  const std::string creds = path("user.creds").string();
  send_and_serve(trace, url("OP"), {"--nats-creds", creds}, url("OP"), {"--nats-creds", creds});
  CommandResult r = testing::run_binary("send " + trace.string() + " --to " + url("OP"), 60);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("without credentials"), std::string::npos) << r.out;
  r = testing::run_binary("send " + trace.string() + " --to " + url("OP") + " --nats-creds " +
                              path("stranger.creds").string(),
                          60);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("refused the credentials"), std::string::npos) << r.out;
  Process run({"run", "wordcount", "--workers", "2", "--rate", "200000", "--duration", "200ms",
               "--keys", "1000", "--trace", path("run.snail").string(), "--trace-to", url("OPRUN"),
               "--trace-to-nats-creds", creds},
              path("run.out"), path("run.err"));
  ASSERT_EQ(run.wait(), 0) << run.err();
  Process serve({"serve", "--nats", url("OPRUN"), "--nats-creds", creds, "--durable", "r",
                 "--drain", "--lateness", "10s", "--window", "1ms", "--out",
                 path("run-windows.jsonl").string(), "--quiet"},
                path("serve-run.out"), path("serve-run.err"));
  ASSERT_EQ(serve.wait(), 0) << serve.err();
  const std::vector<std::string> want = analyze_lines(path("run.snail"));
  EXPECT_GT(want.size(), 50u);
  EXPECT_EQ(lines_of(testing::slurp(path("run-windows.jsonl"))), want);
}

// libnats 3.4 (Debian 12) sends no signature when the signature of the server's nonce
// begins with a zero byte, and the server refuses that connection: 1 in 256, seen once in
// CI. 600 connections in a row with the operator's user all succeed (without the retry of
// serve::sign_nonce, one of them fails with probability 1 - (255/256)^600 = 90%).
TEST_F(NatsAuth, SixHundredConnectionsWithACredsFileAllSucceed) {
  start_operator_mode_server();
  serve::NatsAuth auth;
  auth.creds = path("user.creds").string();
  const serve::NatsAddress address = serve::parse_nats_address(url("OP"));
  int connected = 0;
  for (int i = 0; i < 600; ++i) {
    try {
      serve::NatsLink link(address, 5.0, false, auth);
      ++connected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "connection " << i << ": " << e.what();
      break;
    }
  }
  EXPECT_EQ(connected, 600);
}

// The nonce signature against OpenSSL's ed25519 of the same key and against libnats'
// nats_Sign of the seed's text: equal, except the ones that begin with a zero byte, which
// are withheld (empty); nonces are tried until at least one such signature was met. A
// public key, a damaged checksum and a short seed are refused.
TEST(NatsCreds, NonceSignatureIsEd25519AndOneWithALeadingZeroByteIsWithheld) {
  ASSERT_EQ(nats_Open(-1), NATS_OK);  // libnats' base32 tables
  const NKey user(20 << 3);
  int withheld = 0, checked = 0;
  for (int i = 0; withheld == 0 || checked < 300; ++i) {
    ASSERT_LT(i, 100000) << "no signature with a leading zero byte";
    const std::string nonce = "nonce-" + std::to_string(i);
    const std::string want = user.sign(nonce);
    const std::vector<unsigned char> got = serve::sign_nonce(user.seed_text, nonce);
    unsigned char* by_libnats = nullptr;
    int length = 0;
    ASSERT_EQ(nats_Sign(user.seed_text.c_str(), nonce.c_str(), &by_libnats, &length), NATS_OK);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(by_libnats), length), want);
    std::free(by_libnats);
    if (static_cast<unsigned char>(want[0]) == 0) {
      EXPECT_TRUE(got.empty()) << nonce;
      ++withheld;
    } else {
      EXPECT_EQ(std::string(got.begin(), got.end()), want) << nonce;
    }
    ++checked;
  }
  EXPECT_THROW(serve::sign_nonce(user.public_key, "x"), std::runtime_error);
  std::string damaged = user.seed_text;
  damaged[10] = damaged[10] == 'A' ? 'B' : 'A';
  EXPECT_THROW(serve::sign_nonce(damaged, "x"), std::runtime_error);
  EXPECT_THROW(serve::sign_nonce(user.seed_text.substr(0, 40), "x"), std::runtime_error);
}

// The file as `nsc` writes it (with its IMPORTANT banner), with CRLF line ends, and the
// files that lack a part or hold the wrong thing: each error says what is wrong and never
// quotes the seed.
TEST(NatsCreds, ParsesWhatNscWritesAndSaysWhatIsWrong) {
  const std::string jwt_line = "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiJVQSJ9.c2ln";
  const std::string seed_line = "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU";
  const std::string nsc = "-----BEGIN NATS USER JWT-----\n" + jwt_line +
                          "\n------END NATS USER JWT------\n\n"
                          "************************* IMPORTANT *************************\n"
                          "NKEY Seed printed below can be used to sign and prove identity.\n"
                          "NKEYs are sensitive and should be treated as secrets.\n\n"
                          "-----BEGIN USER NKEY SEED-----\n" +
                          seed_line +
                          "\n------END USER NKEY SEED------\n\n"
                          "*************************************************************\n";
  serve::NatsCreds c = serve::parse_nats_creds(nsc);
  EXPECT_EQ(c.jwt, jwt_line);
  EXPECT_EQ(c.seed, seed_line);
  std::string crlf;
  for (char ch : nsc) crlf += ch == '\n' ? std::string("  \r\n") : std::string(1, ch);
  c = serve::parse_nats_creds(crlf);
  EXPECT_EQ(c.jwt, jwt_line);
  EXPECT_EQ(c.seed, seed_line);
  const auto error_of = [](const std::string& text) {
    try {
      serve::parse_nats_creds(text);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("not a credentials file\n").find("no user JWT"), std::string::npos);
  const std::string no_seed = nsc.substr(0, nsc.find("-----BEGIN USER NKEY SEED"));
  EXPECT_NE(error_of(no_seed).find("no nkey seed"), std::string::npos);
  std::string two_part = nsc;
  two_part.replace(two_part.find(jwt_line), jwt_line.size(), "eyJ0eXAiOiJKV1QifQ.c2ln");
  EXPECT_NE(error_of(two_part).find("header.claims.signature"), std::string::npos);
  std::string public_key = nsc;
  public_key.replace(public_key.find(seed_line), 1, "U");
  const std::string e = error_of(public_key);
  EXPECT_NE(e.find("does not start with S"), std::string::npos) << e;
  EXPECT_EQ(e.find(seed_line.substr(1)), std::string::npos) << e;
}

// The address forms, by hand: what is redacted, the host the certificate must name, the
// scheme; errors about a malformed address do not quote its password.
TEST(NatsAddress, RedactsPasswordsAndTokensAndFindsTheHost) {
  using serve::parse_nats_address;
  using serve::redact_nats_url;
  EXPECT_EQ(redact_nats_url("nats://alice:pw@h:4222/S"), "nats://alice:***@h:4222/S");
  EXPECT_EQ(redact_nats_url("nats://tok@h:4222/S"), "nats://***@h:4222/S");
  EXPECT_EQ(redact_nats_url("tls://u:p@ss@h:1/S"), "tls://u:***@h:1/S");  // '@' in the password
  EXPECT_EQ(redact_nats_url("nats://h:4222/S"), "nats://h:4222/S");
  EXPECT_EQ(redact_nats_url("nats://h:4222/S@x"), "nats://h:4222/S@x");  // '@' after the host
  EXPECT_EQ(redact_nats_url("127.0.0.1:7878"), "127.0.0.1:7878");
  // tls:// with a stream is NATS over TLS; without one, serve's TCP ingest over TLS.
  EXPECT_TRUE(serve::is_nats_address("nats://h:4222/S"));
  EXPECT_TRUE(serve::is_nats_address("tls://u:p@h:4443/S"));
  EXPECT_FALSE(serve::is_nats_address("tls://127.0.0.1:7878"));
  EXPECT_FALSE(serve::is_nats_address("127.0.0.1:7878"));
  serve::NatsAddress a = parse_nats_address("tls://u:p@ss@nats.example:4443/TR");
  EXPECT_TRUE(a.tls);
  EXPECT_EQ(a.host, "nats.example");
  EXPECT_EQ(a.server, "tls://u:p@ss@nats.example:4443");
  EXPECT_EQ(a.stream, "TR");
  EXPECT_EQ(a.text, "tls://u:***@nats.example:4443/TR");
  a = parse_nats_address("nats://[::1]:4222/X");
  EXPECT_FALSE(a.tls);
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.text, "nats://[::1]:4222/X");
  EXPECT_TRUE(serve::is_nats_address("tls://h:1/S"));
  EXPECT_FALSE(serve::is_nats_address("127.0.0.1:7878"));
  for (const std::string bad : {"nats://alice:Secret-42@h:4222/", "nats://alice:Secret-42@h:1",
                                "nats://alice:Secret-42@h:1/a.b"}) {
    try {
      parse_nats_address(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).find("Secret-42"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_serve_nats_auth
