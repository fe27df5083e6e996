// Trace streams through NATS JetStream (docs/SERVE.md, "Through NATS JetStream"): `send
// --to nats://...` into a stream, `serve --nats ... --durable` out of it. The oracle is
// `analyze` of the same trace: the windows serve writes (across a SIGKILL and a restart,
// or split over shards) equal analyze's, none lost, none doubled. Each test starts its own
// nats-server on a free loopback port with a temporary store.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"
#include "serve/window_resume.hpp"
#include "sim_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_nats {
namespace {

namespace fs = std::filesystem;
using testing::Process;

std::string find_nats_server() {
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/sbin:/usr/local/sbin:/sbin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', pos), dirs.size());
    const fs::path p = fs::path(dirs.substr(pos, colon - pos)) / "nats-server";
    if (colon > pos && ::access(p.c_str(), X_OK) == 0) return p.string();
    pos = colon + 1;
  }
  return "";
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class ServeNats : public testing::TempDirTest {
 protected:
  ServeNats() : TempDirTest("nats") {}

  void SetUp() override {
    TempDirTest::SetUp();
    binary_ = find_nats_server();
    if (binary_.empty()) GTEST_SKIP() << "nats-server is not installed (make deps installs it)";
  }
  void TearDown() override {
    if (nats_pid_ > 0) {
      ::kill(nats_pid_, SIGKILL);
      int status = 0;
      ::waitpid(nats_pid_, &status, 0);
    }
    TempDirTest::TearDown();
  }

  // nats-server on a free loopback port (with JetStream unless `jetstream` is false).
  void start_nats(bool jetstream = true) {
    port_ = free_port();
    ASSERT_GT(port_, 0);
    std::vector<std::string> args = {binary_, "-a", "127.0.0.1", "-p", std::to_string(port_)};
    if (jetstream) args.insert(args.end(), {"-js", "-sd", path("store").string()});
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = path("nats-server.log").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    ASSERT_EQ(posix_spawn(&nats_pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!accepts(port_) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(accepts(port_)) << testing::slurp(path("nats-server.log"));
  }

  std::string url(const std::string& stream) const {
    return "nats://127.0.0.1:" + std::to_string(port_) + "/" + stream;
  }

  fs::path simulated(int64_t duration_ns, uint64_t seed) const {
    const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", duration_ns, seed);
    write_trace(sim.trace, path("trace.snail").string());
    return path("trace.snail");
  }

  // `analyze TRACE --window 1ms --format jsonl` without its final run record.
  std::vector<std::string> analyze_lines(const fs::path& trace) {
    Process p({"analyze", trace.string(), "--window", "1ms", "--format", "jsonl", "--no-progress"},
              path("analyze.out"), path("analyze.err"));
    EXPECT_EQ(p.wait(), 0) << p.err();
    std::vector<std::string> lines = lines_of(p.out());
    if (!lines.empty() && lines.back().rfind("{\"run\":", 0) == 0) lines.pop_back();
    return lines;
  }

  void send(const fs::path& trace, const std::string& stream) {
    Process p({"send", trace.string(), "--to", url(stream)}, path("send.out"), path("send.err"));
    ASSERT_EQ(p.wait(), 0) << p.err();
  }

  std::unique_ptr<Process> serve(const std::string& stream, const std::string& durable,
                                 const std::string& out, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {
        "serve",    "--nats", url(stream), "--durable",        durable,
        "--window", "1ms",    "--out",     path(out).string(), "--quiet"};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<Process>(args, path(durable + ".out"), path(durable + ".err"));
  }

  std::string binary_;
  pid_t nats_pid_ = -1;
  int port_ = -1;
};

// send -> stream -> serve --drain: the windows equal analyze's, line for line.
TEST_F(ServeNats, SentTraceServedEqualsAnalyze) {
  start_nats();
  const fs::path trace = simulated(300'000'000, 7);
  const auto expected = analyze_lines(trace);
  ASSERT_GT(expected.size(), 200u);
  send(trace, "TR");
  auto s = serve("TR", "one", "windows.jsonl", {"--drain"});
  ASSERT_EQ(s->wait(), 0) << s->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

// SIGKILL of serve mid-stream, restart with the same durable and --out: every window
// exactly once. The first run may have written any prefix of the windows when killed.
TEST_F(ServeNats, SigkillThenRestartWritesEveryWindowOnce) {
  start_nats();
  const fs::path trace = simulated(1'000'000'000, 11);
  const auto expected = analyze_lines(trace);
  ASSERT_GT(expected.size(), 500u);
  send(trace, "TR");
  for (size_t round = 0; round < 3; ++round) {
    // Killed after a few windows, after more and (the last round) never before its end.
    auto first = serve("TR", "dur", "windows.jsonl");
    const size_t want = round == 0 ? 1 : round == 1 ? expected.size() / 2 : SIZE_MAX;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (want != SIZE_MAX && std::chrono::steady_clock::now() < deadline &&
           lines_of(testing::slurp(path("windows.jsonl"))).size() < want)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (want == SIZE_MAX) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first->signal(SIGKILL);
    EXPECT_EQ(first->wait(), 128 + SIGKILL);
    const std::string text = testing::slurp(path("windows.jsonl"));
    const auto partial = lines_of(text);
    ASSERT_LE(partial.size(), expected.size());
    // Killed in the middle of a write, the last line may be torn: a prefix of its window's
    // (the restart cuts it, below).
    const bool torn = !text.empty() && text.back() != '\n';
    for (size_t i = 0; i < partial.size(); ++i) {
      if (torn && i + 1 == partial.size())
        ASSERT_TRUE(expected[i].starts_with(partial[i])) << i << ": " << partial[i];
      else
        ASSERT_EQ(partial[i], expected[i]) << i;
    }
  }
  // A crash in the middle of a line: the torn line is cut and its window written again.
  {
    std::ofstream torn(path("windows.jsonl"), std::ios::app);
    torn << expected[lines_of(testing::slurp(path("windows.jsonl"))).size()].substr(0, 40);
  }
  auto again = serve("TR", "dur", "windows.jsonl", {"--drain"});
  ASSERT_EQ(again->wait(), 0) << again->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

// Two shards, each with its own durable: their windows together are analyze's, each
// window written by exactly one of them (index mod 2).
TEST_F(ServeNats, TwoShardsTogetherEqualAnalyze) {
  start_nats();
  const fs::path trace = simulated(300'000'000, 5);
  const auto expected = analyze_lines(trace);
  send(trace, "TR");
  auto a = serve("TR", "shard0", "s0.jsonl", {"--drain", "--shard", "0/2"});
  auto b = serve("TR", "shard1", "s1.jsonl", {"--drain", "--shard", "1/2"});
  ASSERT_EQ(a->wait(), 0) << a->err();
  ASSERT_EQ(b->wait(), 0) << b->err();
  const auto s0 = lines_of(testing::slurp(path("s0.jsonl")));
  const auto s1 = lines_of(testing::slurp(path("s1.jsonl")));
  EXPECT_GT(s0.size(), 0u);
  EXPECT_GT(s1.size(), 0u);
  std::vector<std::string> got = s0;
  got.insert(got.end(), s1.begin(), s1.end());
  std::vector<std::string> want = expected;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

// `run --trace-to nats://...` publishes the run's events as it goes; serve's windows of
// the stream equal analyze's of the same run's --trace file.
TEST_F(ServeNats, RunTraceToNatsEqualsAnalyzeOfItsTrace) {
  start_nats();
  Process run(
      {"run", "wordcount", "--workers", "2", "--rate", "200000", "--duration", "300ms", "--keys",
       "1000", "--skew", "0.3", "--trace", path("run.snail").string(), "--trace-to", url("RUN")},
      path("run.out"), path("run.err"));
  ASSERT_EQ(run.wait(), 0) << run.err();
  EXPECT_NE(run.err().find("trace-to: sent "), std::string::npos) << run.err();
  auto s = serve("RUN", "r", "windows.jsonl", {"--drain", "--lateness", "10s"});
  ASSERT_EQ(s->wait(), 0) << s->err();
  Process p({"analyze", path("run.snail").string(), "--window", "1ms", "--format", "jsonl",
             "--no-progress"},
            path("analyze.out"), path("analyze.err"));
  ASSERT_EQ(p.wait(), 0) << p.err();
  std::vector<std::string> want = lines_of(p.out());
  ASSERT_FALSE(want.empty());
  want.pop_back();  // the run record
  EXPECT_GT(want.size(), 100u);
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), want);
}

// No server, or one without JetStream: a clear error and a non-zero exit, no hang.
TEST_F(ServeNats, UnreachableOrNoJetStreamIsAClearError) {
  const int closed = free_port();
  const std::string nowhere = "nats://127.0.0.1:" + std::to_string(closed) + "/TR";
  simulated(50'000'000, 1);
  testing::CommandResult r = testing::run_binary(
      "send " + path("trace.snail").string() + " --to " + nowhere + " --connect-timeout 0.2", 20);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("cannot connect to nats://127.0.0.1:" + std::to_string(closed)),
            std::string::npos)
      << r.out;
  r = testing::run_binary("serve --nats " + nowhere + " --durable d --nats-timeout 0.2 --out " +
                              path("w.jsonl").string(),
                          20);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("cannot connect"), std::string::npos) << r.out;
  start_nats(/*jetstream=*/false);
  r = testing::run_binary("send " + path("trace.snail").string() + " --to " + url("TR"), 20);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("start nats-server with -js"), std::string::npos) << r.out;
}

// resume_window_output against hand-written files.
class WindowResume : public testing::TempDirTest {
 protected:
  WindowResume() : TempDirTest("resume") {}
  void write(const std::string& text) { std::ofstream(path("w.jsonl")) << text; }
};

TEST_F(WindowResume, FindsTheLastWindowAndCutsATornLine) {
  const std::string file = path("w.jsonl").string();
  EXPECT_EQ(serve::resume_window_output(file), -1);  // no file yet
  write("");
  EXPECT_EQ(serve::resume_window_output(file), -1);
  write("{\"window\":{\"index\":0,\"start_ns\":0}}\n{\"window\":{\"index\":1,\"sta");
  EXPECT_EQ(serve::resume_window_output(file), 0);
  EXPECT_EQ(testing::slurp(file), "{\"window\":{\"index\":0,\"start_ns\":0}}\n");
  write("{\"window\":{\"index\":3}}\n{\"empty_windows\":{\"first_index\":4,\"count\":9}}\n");
  EXPECT_EQ(serve::resume_window_output(file), 12);  // the run's last window
  write("{\"window\":{\"ind");
  EXPECT_EQ(serve::resume_window_output(file), -1);
  EXPECT_EQ(testing::slurp(file), "");
}

TEST_F(WindowResume, ALastLineThatIsNoWindowIsRefusedWithItsOffset) {
  write("{\"window\":{\"index\":0}}\n{\"run\":{}}\n");
  try {
    serve::resume_window_output(path("w.jsonl").string());
    FAIL() << "accepted a file whose last line is no window";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("byte offset 23"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace snailtrail::test_serve_nats
