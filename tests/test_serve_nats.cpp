// Trace streams through NATS JetStream (docs/SERVE.md, "Through NATS JetStream"): `send
// --to nats://...` into a stream, `serve --nats ... --durable` out of it. The oracle is
// `analyze` of the same trace: the windows serve writes (across a SIGKILL and a restart,
// or split over shards) equal analyze's, none lost, none doubled. Each test starts its own
// nats-server on a free loopback port with a temporary store.
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.hpp"
#include "nats_test_util.hpp"
#include "process_util.hpp"
#include "serve/ingest.hpp"
#include "serve/nats_source.hpp"
#include "serve/window_resume.hpp"
#include "sim_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_serve_nats {
namespace {

namespace fs = std::filesystem;
using testing::Process;

using testing::lines_of;

class ServeNats : public testing::TempDirTest {
 protected:
  ServeNats() : TempDirTest("nats") {}

  void SetUp() override {
    TempDirTest::SetUp();
    binary_ = testing::find_nats_server();
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

  // nats-server on a free loopback port (with JetStream unless `jetstream` is false); with
  // `same_port`, on the port and the store of the previous one (a restart).
  void start_nats(bool jetstream = true, bool same_port = false) {
    if (!same_port) port_ = testing::free_loopback_port();
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
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    ASSERT_EQ(posix_spawn(&nats_pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!testing::loopback_accepts(port_) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(testing::loopback_accepts(port_)) << testing::slurp(path("nats-server.log"));
  }

  // Stops nats-server (SIGTERM: a clean shutdown; SIGKILL: a crash) and starts it again
  // on the same port with the same store.
  void restart_nats(int sig) {
    ASSERT_GT(nats_pid_, 0);
    ::kill(nats_pid_, sig);
    int status = 0;
    ::waitpid(nats_pid_, &status, 0);
    nats_pid_ = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // clients notice
    start_nats(true, /*same_port=*/true);
  }

  size_t lines_in(const std::string& file) const {
    return lines_of(testing::slurp(path(file))).size();
  }

  // Polls until `file` has at least `n` lines (false after `timeout_s`).
  bool wait_lines(const std::string& file, size_t n, double timeout_s = 30) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (lines_in(file) < n)
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return true;
  }

  std::unique_ptr<Process> start_send(const fs::path& trace, const std::string& stream,
                                      const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args = {"send", trace.string(), "--to", url(stream)};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<Process>(args, path(name + ".out"), path(name + ".err"));
  }

  std::string url(const std::string& stream) const {
    return "nats://127.0.0.1:" + std::to_string(port_) + "/" + stream;
  }

  fs::path simulated(int64_t duration_ns, uint64_t seed) {
    const sim::SimResult sim = testing::simulate_example("wordcount-skew-30", duration_ns, seed);
    write_trace(sim.trace, path("trace.snail").string());
    events_ = sim.trace.events.size();
    return path("trace.snail");
  }

  // `analyze TRACE --window 1ms --format jsonl` without its final run record.
  std::vector<std::string> analyze_lines(const fs::path& trace) {
    return testing::analyze_window_lines(trace, path("analyze.out"), path("analyze.err"));
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

  void restart_mid_stream(int sig);

  std::string binary_;
  size_t events_ = 0;  // of the last simulated trace
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

// `send --speed 2x` into the stream paces by event time: a trace of 300 ms of events takes
// at least about 150 ms to publish (far less at max speed), and what it published is
// served as analyze reads the file, line for line.
TEST_F(ServeNats, PacedSendIsServedEqualToAnalyze) {
  start_nats();
  const fs::path trace = simulated(300'000'000, 9);
  const auto expected = analyze_lines(trace);
  ASSERT_GT(expected.size(), 200u);
  const auto t0 = std::chrono::steady_clock::now();
  Process p({"send", trace.string(), "--to", url("PACED"), "--speed", "2x"}, path("send.out"),
            path("send.err"));
  ASSERT_EQ(p.wait(), 0) << p.err();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.14) << "300 ms of events at 2x";
  auto s = serve("PACED", "paced", "windows.jsonl", {"--drain"});
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
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
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
  const int closed = testing::free_loopback_port();
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

// A number printed before `label` in `text` (e.g. "12 delivered again"), or -1.
long long number_before(const std::string& text, const std::string& label) {
  const size_t at = text.find(" " + label);
  if (at == std::string::npos) return -1;
  size_t from = at;
  while (from > 0 && std::isdigit(static_cast<unsigned char>(text[from - 1]))) --from;
  return from < at ? std::stoll(text.substr(from, at - from)) : -1;
}

// nats-server stopped and started again (same port, same store) while `send` publishes
// and `serve` reads: send either finishes or fails saying to resume (it never reconnects
// on its own: what the client would buffer meanwhile could be stored out of order), and a
// `send --resume` then publishes the rest; serve reconnects and goes on. Oracle: analyze
// of the trace, line for line.
void ServeNats::restart_mid_stream(int sig) {
  start_nats();
  const fs::path trace = simulated(600'000'000, 13);
  const auto expected = analyze_lines(trace);
  ASSERT_GT(expected.size(), 300u);
  // Paced over about 1.5 s, so that the restart falls in the middle of both.
  const std::vector<std::string> pace = {"--rate", std::to_string(events_ * 2 / 3)};
  auto reader = serve("TR", "live", "windows.jsonl", {"--idle-timeout", "120s"});
  auto producer = start_send(trace, "TR", "send1", pace);
  ASSERT_TRUE(wait_lines("windows.jsonl", 20)) << reader->err();
  const size_t before = lines_in("windows.jsonl");
  restart_nats(sig);
  if (producer->wait() != 0) {  // a clear error, then the rest
    EXPECT_NE(producer->err().find("run the same send again with --resume"), std::string::npos)
        << producer->err();
    auto resumed = start_send(trace, "TR", "send2", {pace[0], pace[1], "--resume"});
    ASSERT_EQ(resumed->wait(), 0) << resumed->err();
  }
  // serve came back on its own: it writes windows after the restart.
  EXPECT_TRUE(wait_lines("windows.jsonl", std::max(before + 50, expected.size() / 2)))
      << reader->err();
  reader->signal(SIGTERM);  // the open windows are left to the next run
  EXPECT_EQ(reader->wait(), 0) << reader->err();
  auto last = serve("TR", "live", "windows.jsonl", {"--drain"});
  ASSERT_EQ(last->wait(), 0) << last->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

TEST_F(ServeNats, BrokerStoppedMidStreamLosesAndDoublesNothing) {
  restart_mid_stream(SIGTERM);
}

TEST_F(ServeNats, BrokerKilledMidStreamLosesAndDoublesNothing) {
  restart_mid_stream(SIGKILL);
}

// A slow consumer: serve stopped (SIGSTOP) for longer than its ack wait while a paced
// producer publishes, so JetStream delivers the messages it holds unacknowledged again;
// they are skipped by their stream sequence. Oracle: analyze's windows, line for line
// (serve stopped with SIGTERM, then a --drain run closes the last windows); the
// redeliveries are counted. Nothing here waits a fixed time for serve (under the
// sanitizers on a loaded machine it may be ten times slower): it is stopped once it has
// written a window and only counts as stopped while JetStream says it holds messages
// delivered and not acknowledged (the precondition of a redelivery; else it goes on and
// is stopped again), and it is ended once /metrics counts the redeliveries. The stop
// itself lasts 3 ack waits of nats-server's clock. The producer publishes for about 3 s.
TEST_F(ServeNats, StoppedConsumerPastItsAckWaitSkipsRedeliveries) {
  start_nats();
  const fs::path trace = simulated(600'000'000, 17);
  const auto expected = analyze_lines(trace);
  std::vector<std::string> args = {"serve",
                                   "--nats",
                                   url("TR"),
                                   "--durable",
                                   "slow",
                                   "--window",
                                   "1ms",
                                   "--out",
                                   path("windows.jsonl").string(),
                                   "--nats-ack-wait",
                                   "0.5",
                                   "--idle-timeout",
                                   "120s",
                                   "--http",
                                   "127.0.0.1:0",
                                   "--port-file",
                                   path("ports").string()};
  Process reader(args, path("slow.out"), path("slow.err"));
  auto producer = start_send(trace, "TR", "send", {"--rate", std::to_string(events_ / 3)});
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << reader.err();
  natsConnection* nc = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&nc, url("").c_str()), NATS_OK);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
  auto ack_pending = [&] {
    jsConsumerInfo* ci = nullptr;
    int64_t n = -1;
    if (js_GetConsumerInfo(&ci, js, "TR", "slow", nullptr, nullptr) == NATS_OK) {
      n = ci->NumAckPending;
      jsConsumerInfo_Destroy(ci);
    }
    return n;
  };
  bool holding = false;
  for (size_t written = 1; !holding && written <= 20; ++written) {
    ASSERT_TRUE(wait_lines("windows.jsonl", written)) << reader.err();
    reader.signal(SIGSTOP);
    // What the server sent before the stop is counted at once (a stopped serve asks for
    // nothing more): a second is far more than the answer takes.
    holding = testing::wait_until([&] { return ack_pending() > 0; }, 1);
    if (!holding) reader.signal(SIGCONT);
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  ASSERT_TRUE(holding) << "serve never held unacknowledged messages when stopped";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // nats-server's 3 ack waits
  reader.signal(SIGCONT);
  uint64_t redelivered = 0;
  EXPECT_TRUE(testing::wait_until([&] {
    const std::string m = testing::http_get(http, "/metrics");
    const size_t at = m.find("\nsnailtrail_nats_redelivered_total ");
    if (at != std::string::npos)
      redelivered = std::stoull(m.substr(at + std::strlen("\nsnailtrail_nats_redelivered_total ")));
    return redelivered > 0;
  })) << reader.err();
  ASSERT_EQ(producer->wait(), 0) << producer->err();
  reader.signal(SIGTERM);
  ASSERT_EQ(reader.wait(), 0) << reader.err();
  EXPECT_GT(number_before(reader.err(), "delivered again"), 0) << reader.err();
  auto last = serve("TR", "slow", "windows.jsonl", {"--drain"});
  ASSERT_EQ(last->wait(), 0) << last->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

// The consumer's gap path (NatsSource::fill_gap): messages the durable consumer delivered
// that never reached the reader (in production: in flight when nats-server stopped; here:
// a second client bound to the same durable takes the first three and never acknowledges
// them) are fetched by their stream sequence before the next one is taken. Every event
// arrives exactly once (oracle: the trace's events, as a multiset of their 40 bytes), and
// the gap counter says 3.
TEST_F(ServeNats, MessagesDeliveredElsewhereAreFetchedBySequence) {
  start_nats();
  const fs::path trace = simulated(300'000'000, 5);
  send(trace, "GAP");
  serve::NatsSourceOptions options;
  options.address = url("GAP");
  options.durable = "d";
  options.drain = true;
  serve::NatsProgress progress;
  serve::IngestCounters counters;
  serve::NatsSource source(options, progress, counters, false);

  natsConnection* nc = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&nc, ("nats://127.0.0.1:" + std::to_string(port_)).c_str()),
            NATS_OK);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "GAP";
  so.Consumer = "d";  // bind to the reader's durable consumer
  natsSubscription* stealer = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  ASSERT_EQ(js_PullSubscribe(&stealer, js, "GAP.>", nullptr, nullptr, &so, &code), NATS_OK) << code;
  natsMsgList taken{nullptr, 0};
  ASSERT_EQ(natsSubscription_Fetch(&taken, stealer, 3, 5000, &code), NATS_OK) << code;
  EXPECT_EQ(taken.Count, 3);
  natsMsgList_Destroy(&taken);  // never acknowledged

  serve::BatchQueue queue(size_t{1} << 40);
  const std::atomic<bool> stop{false};
  source.run(queue, stop);
  EXPECT_TRUE(progress.drained.load());
  std::vector<std::string> got, want;
  while (std::optional<serve::Batch> b = queue.pop(0))
    for (const Event& e : b->events) got.emplace_back(reinterpret_cast<const char*>(&e), sizeof e);
  for (const Event& e : read_trace(trace.string()).events)
    want.emplace_back(reinterpret_cast<const char*>(&e), sizeof e);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(counters.nats_gap_fetched.load(), 3u);
  EXPECT_GT(counters.nats_messages.load(), 3u);
  EXPECT_EQ(counters.nats_redelivered.load(), 0u);
  natsSubscription_Destroy(stealer);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

// A producer killed mid-stream (SIGKILL) and a new one with --resume: it publishes only
// what the stream does not hold (per worker, after the last message stored under the
// trace's id), and serve's windows equal analyze's: nothing lost, nothing doubled (a
// doubled event would be older than its worker's previous one: dropped and counted in
// the window's diagnostics, which analyze's lines do not have).
TEST_F(ServeNats, KilledProducerResumedByANewOne) {
  start_nats();
  const fs::path trace = simulated(600'000'000, 19);
  const auto expected = analyze_lines(trace);
  const std::vector<std::string> pace = {"--rate", std::to_string(events_)};  // about 1 s
  auto first = start_send(trace, "TR", "send1", pace);
  // Killed after 400 ms, once the stream holds events (the first message names the trace):
  // under the sanitizers the producer may not have published any after 400 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  natsConnection* nc = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&nc, url("").c_str()), NATS_OK);
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
  uint64_t stored = 0;
  for (int i = 0; i < 3000 && stored < 2; ++i) {
    jsStreamInfo* si = nullptr;
    if (js_GetStreamInfo(&si, js, "TR", nullptr, nullptr) == NATS_OK) {
      stored = si->State.Msgs;
      jsStreamInfo_Destroy(si);
    }
    if (stored < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  ASSERT_GE(stored, 2u) << first->err();
  first->signal(SIGKILL);
  ASSERT_EQ(first->wait(), 128 + SIGKILL);
  auto second = start_send(trace, "TR", "send2", {pace[0], pace[1], "--resume"});
  ASSERT_EQ(second->wait(), 0) << second->err();
  const long long skipped = number_before(second->err(), "events were stored already");
  EXPECT_GT(skipped, 0) << second->err();
  EXPECT_LT(skipped, static_cast<long long>(events_)) << second->err();
  auto reader = serve("TR", "r", "windows.jsonl", {"--drain"});
  ASSERT_EQ(reader->wait(), 0) << reader->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

// The same trace sent twice (no --resume) within the stream's duplicate window: the
// server recognizes every message by its id and stores nothing twice.
TEST_F(ServeNats, SameTraceSentTwiceIsStoredOnce) {
  start_nats();
  const fs::path trace = simulated(300'000'000, 23);
  const auto expected = analyze_lines(trace);
  send(trace, "TR");
  send(trace, "TR");
  auto reader = serve("TR", "r", "windows.jsonl", {"--drain"});
  ASSERT_EQ(reader->wait(), 0) << reader->err();
  EXPECT_EQ(lines_of(testing::slurp(path("windows.jsonl"))), expected);
}

// --resume on a stream that holds the whole trace publishes nothing; --resume over TCP
// and --repeat over NATS are refused.
TEST_F(ServeNats, ResumeOfACompleteSendPublishesNothing) {
  start_nats();
  const fs::path trace = simulated(100'000'000, 29);
  send(trace, "TR");
  auto again = start_send(trace, "TR", "again", {"--resume"});
  ASSERT_EQ(again->wait(), 0) << again->err();
  EXPECT_EQ(number_before(again->err(), "events were stored already"),
            static_cast<long long>(events_))
      << again->err();
  EXPECT_NE(again->err().find("sent 0 events"), std::string::npos) << again->err();
  testing::CommandResult r =
      testing::run_binary("send " + trace.string() + " --to 127.0.0.1:1 --resume", 20);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--resume applies to nats://"), std::string::npos) << r.out;
  r = testing::run_binary("send " + trace.string() + " --to " + url("TR") + " --repeat 2", 20);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--repeat is for the TCP path"), std::string::npos) << r.out;
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
