// `serve --otlp` (src/serve/otlp_receiver.cpp, otlp_http.cpp) over HTTP on 127.0.0.1:
// critical paths equal to `critical-path` on the same spans from a file, the OTLP/HTTP
// answers (200 with partial success, 400, 413, 415, 429 with Retry-After) and a receiver
// that keeps serving after each.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "otlp_builder.hpp"
#include "otlp_receiver_util.hpp"
#include "process_util.hpp"
#include "serve/otlp_receiver.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_otlp_receiver {
namespace {

using testing::TestResource;
using testing::TestSpan;

constexpr const char* kProto = "application/x-protobuf";
constexpr const char* kJson = "application/json";
const std::string kTrace = "0af7651916cd43dd8448eb211c80319c";
const std::string kOther = "4bf92f3577b34da6a3ce929d0e0e4736";

std::string sid(int n) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016x", n);
  return buf;
}
TestSpan span(const std::string& trace, int id, int parent, const char* name, int64_t s,
              int64_t e) {
  TestSpan t;
  t.trace = trace;
  t.id = sid(id);
  t.parent = parent ? sid(parent) : "";
  t.name = name;
  t.start = s;
  t.end = e;
  return t;
}

std::string gzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

using Receiver = testing::TestReceiver;

serve::OtlpOptions quick() {
  serve::OtlpOptions o;
  o.traces.idle_ns = 200'000'000;
  o.threads = 2;
  return o;
}

// The hand-computed example of test_otlp_decode.cpp (nested, sequential, overlapping,
// linked-only and parentless children) and a second trace, in three requests whose
// children come before their parents.
std::vector<std::vector<TestResource>> out_of_order_requests() {
  constexpr int64_t ms = 1'000'000;
  TestSpan g = span(kTrace, 7, 0, "G", 92 * ms, 130 * ms);
  g.links.push_back({"", sid(1)});
  return {{{"back",
            {span(kTrace, 3, 2, "C", 15 * ms, 35 * ms), span(kTrace, 5, 1, "E", 45 * ms, 60 * ms)}},
           {"db", {span(kOther, 2, 1, "query", 5, 25)}}},
          {{"front", {g, span(kTrace, 8, 0, "H", 200 * ms, 230 * ms)}}},
          {{"front",
            {span(kTrace, 1, 0, "A", 0, 100 * ms), span(kTrace, 4, 1, "D", 40 * ms, 70 * ms),
             span(kOther, 1, 0, "get", 0, 30)}},
           {"back", {span(kTrace, 2, 1, "B", 10 * ms, 40 * ms)}}}};
}

TEST(OtlpReceiver, PathsEqualCriticalPathOnTheSameSpansFromAFile) {
  for (const char* type : {kProto, kJson}) {
    Receiver r(quick(), "otlp-equal.jsonl");
    // Held, so that a slow machine cannot split the trace by the idle time between requests.
    (*r).hold(true);
    std::string file;
    for (const auto& q : out_of_order_requests()) {
      const std::string body = type == kProto ? testing::otlp_protobuf(q) : testing::otlp_json(q);
      auto res = r.post(body, type);
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 200);
      file += testing::otlp_json(q) + "\n";  // the collector's file: one request a line
    }
    (*r).hold(false);
    const std::vector<std::string> lines = r.lines(2);
    ASSERT_EQ(lines.size(), 2u) << type;
    const std::string path = testing::write_temp("otlp-equal-spans.json", file);
    const auto cli = testing::run_binary("critical-path --format json " + path, 60);
    ASSERT_EQ(cli.code, 0) << cli.out;
    const std::string head = "{\"traces\": [";
    ASSERT_EQ(cli.out.rfind(head, 0), 0u) << cli.out;
    const std::string traces =
        cli.out.substr(head.size(), cli.out.find("], \"services\"") - head.size());
    // Both traces' objects, and nothing else: the lines' lengths add up.
    EXPECT_NE(traces.find(lines[0]), std::string::npos) << lines[0] << "\n" << traces;
    EXPECT_NE(traces.find(lines[1]), std::string::npos) << lines[1] << "\n" << traces;
    EXPECT_EQ(lines[0].size() + lines[1].size() + 2, traces.size());
    // And the hand-computed figures (test_otlp_decode.cpp): 130 ms over two roots.
    const std::string& example = lines[0].find(kTrace) != std::string::npos ? lines[0] : lines[1];
    EXPECT_NE(example.find("\"duration_ns\": 130000000, \"spans\": 7, \"clipped_children\": 1"),
              std::string::npos)
        << example;
  }
}

TEST(OtlpReceiver, AnswersExportResponsesWithPartialSuccess) {
  Receiver r(quick(), "otlp-partial.jsonl");
  const std::vector<TestResource> good = {{"s", {span(kTrace, 1, 0, "x", 1, 2)}}};
  auto res = r.post(testing::otlp_protobuf(good), kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kProto);
  EXPECT_EQ(res->body, "");  // an empty ExportTraceServiceResponse
  res = r.post(testing::otlp_json(good), "application/json; charset=utf-8");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{}");
  // A span without a span id: rejected alone.
  testing::ProtoWriter no_id, scope, rs, request;
  no_id.bytes(1, testing::unhex(kTrace)).bytes(5, "no id");
  request.message(1, rs.message(2, scope.message(2, no_id)));
  res = r.post(testing::otlp_protobuf(good) + request.str(), kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // partial_success (1) { rejected_spans (1) = 1, error_message (2) }
  ASSERT_GE(res->body.size(), 6u);
  EXPECT_EQ(res->body.substr(0, 1), "\x0a");
  EXPECT_EQ(static_cast<size_t>(res->body[1]), res->body.size() - 2);
  EXPECT_EQ(res->body.substr(2, 3), std::string("\x08\x01\x12", 3));
  res = r.post(R"({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": ")" + kTrace +
                   R"(", "name": "no id", "startTimeUnixNano": 1, "endTimeUnixNano": 2}]}]}]})",
               kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body.rfind(R"({"partialSuccess": {"rejectedSpans": "1", "errorMessage": ")", 0),
            0u)
      << res->body;
  EXPECT_EQ((*r).counters().spans_rejected.load(), 2u);
  EXPECT_EQ((*r).counters().spans_accepted.load(), 3u);
}

TEST(OtlpReceiver, BadRequestsAreAnsweredAndTheReceiverKeepsServing) {
  serve::OtlpOptions o = quick();
  o.max_body = 1 << 20;
  Receiver r(o, "otlp-bad.jsonl");
  const std::string good = testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}});
  auto still_serving = [&] {
    auto res = r.post(good, kProto);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  };
  auto expect_status = [&](httplib::Result res, int status, const char* what) {
    ASSERT_TRUE(res) << what;
    EXPECT_EQ(res->status, status) << what << ": " << res->body;
    still_serving();
  };
  expect_status(r.post(std::string("\x0a\xff\xff\xff\x0f garbage", 12), kProto), 400, "garbage");
  expect_status(r.post("{\"resourceSpans\": [", kJson), 400, "cut JSON");
  expect_status(r.post(good.substr(0, good.size() - 3), kProto), 400, "truncated protobuf");
  auto res = r.post(good.substr(0, good.size() - 3), kJson);  // protobuf sent as JSON
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("\"message\": \"request: byte "), std::string::npos) << res->body;
  expect_status(r.post(good, "text/plain"), 415, "another content type");
  expect_status(r.post(std::string((1 << 20) + 1, '\0'), kProto), 413, "over the limit");
  // The same over the limit, chunked (no Content-Length).
  expect_status(r.client().Post(
                    "/v1/traces",
                    [](size_t offset, httplib::DataSink& sink) {
                      if (offset >= (3u << 19)) {
                        sink.done();
                        return true;
                      }
                      const std::string chunk(1 << 16, '\0');
                      return sink.write(chunk.data(), chunk.size());
                    },
                    kProto),
                413, "chunked, over the limit");
  // gzip: accepted; a small body that inflates past the limit is a zip bomb.
  expect_status(r.post(gzip(good), kProto, {{"Content-Encoding", "gzip"}}), 200, "gzip");
  expect_status(r.post(gzip(std::string(8 << 20, '\0')), kProto, {{"Content-Encoding", "gzip"}}),
                413, "gzip bomb");
  expect_status(r.post("not gzip at all", kProto, {{"Content-Encoding", "gzip"}}), 400, "bad gzip");
  // A chunked body within the limit.
  expect_status(r.client().Post(
                    "/v1/traces",
                    [&](size_t offset, httplib::DataSink& sink) {
                      if (offset >= good.size()) {
                        sink.done();
                        return true;
                      }
                      return sink.write(good.data() + offset,
                                        std::min<size_t>(3, good.size() - offset));
                    },
                    kProto),
                200, "chunked");
  const serve::OtlpCounters& c = (*r).counters();
  EXPECT_EQ(c.bad_requests.load(), 5u);
  EXPECT_EQ(c.too_large.load(), 3u);
  EXPECT_EQ(c.unsupported_type.load(), 1u);
}

// `n` connections to 127.0.0.1:`port` that send nothing, appended to `fds`.
void connect_idle(int port, int n, std::vector<int>& fds) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << i;
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << i;
    fds.push_back(fd);
  }
}

// Connections waiting in the accept queue of the listener on `port` (the rx_queue of its
// LISTEN line in /proc/net/tcp or tcp6), -1 if there is none.
int accept_backlog(int port) {
  const std::string suffix = fmt::format(":{:04X}", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(testing::slurp(table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues;
      fields >> slot >> local >> remote >> state >> queues;
      if (state == "0A" && local.ends_with(suffix))
        return std::stoi(queues.substr(queues.find(':') + 1), nullptr, 16);
    }
  }
  return -1;
}

// 10 000 idle connections (connected, nothing sent, as an SDK's kept-alive sockets) cost
// the receiver a buffer each, never a thread (HttpFront): at its connection limit a new
// client takes the place of the longest-idle one, so an export on a new connection is
// still answered 200, and so is one on the newest idle connection. (On httplib's pool of
// threads, each idle connection held a thread for its keep-alive time.)
TEST(OtlpReceiver, TenThousandIdleConnectionsDoNotLockClientsOut) {
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  constexpr int kIdle = 10000;
  const rlim_t want = kIdle + 4096 + 256;  // the idle sockets and the receiver's ends
  if (rl.rlim_max < want) GTEST_SKIP() << "the open-file limit (" << rl.rlim_max << ") is low";
  rl.rlim_cur = std::max(rl.rlim_cur, want);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &rl), 0);
  Receiver r(quick(), "otlp-idle.jsonl");
  std::vector<int> idle;
  ASSERT_NO_FATAL_FAILURE(connect_idle((*r).port(), kIdle, idle));
  const std::string good = testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}});
  auto res = r.post(good, kProto);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  // The newest idle connection is still open and served.
  const std::string request =
      "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: " + std::string(kProto) +
      "\r\nContent-Length: " + std::to_string(good.size()) + "\r\nConnection: close\r\n\r\n" + good;
  ASSERT_EQ(::send(idle.back(), request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  timeval tv{10, 0};
  ::setsockopt(idle.back(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(idle.back(), buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 200") << answer;
  for (int fd : idle) ::close(fd);
  EXPECT_EQ((*r).counters().spans_accepted.load(), 2u);
}

// --otlp-max-connections: at the limit, a new client takes the place of the longest-idle
// connection, which the receiver closes (the client reads the end of the stream).
TEST(OtlpReceiver, ConnectionLimitMakesRoomByClosingTheLongestIdle) {
  serve::OtlpOptions o = quick();
  o.max_connections = 8;
  Receiver r(o, "otlp-limit.jsonl");
  std::vector<int> idle;
  ASSERT_NO_FATAL_FAILURE(connect_idle((*r).port(), 8, idle));
  // All 8 accepted (none left in the listener's queue), not after a fixed time.
  ASSERT_TRUE(testing::wait_until([&] { return accept_backlog((*r).port()) == 0; }));
  auto res = r.post(testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}}), kProto);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  timeval tv{10, 0};
  ::setsockopt(idle.front(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte;
  EXPECT_EQ(::recv(idle.front(), &byte, 1, 0), 0) << "the longest-idle connection is closed";
  for (int fd : idle) ::close(fd);
}

// A 100 MB body, over the default --otlp-max-body (16 MiB), sent whole by a client that
// reads the answer only after writing it: 413 with the OTLP error body (protobuf, as the
// request), and the receiver goes on serving.
TEST(OtlpReceiver, AHundredMegabyteBodyIsAnswered413) {
  Receiver r(quick(), "otlp-huge.jsonl");
  auto res = r.post(std::string(100'000'000, '\0'), kProto);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(res->get_header_value("Content-Type"), kProto);
  EXPECT_NE(res->body.find("over 16777216 bytes (--otlp-max-body)"), std::string::npos)
      << res->body;
  const std::string good = testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}});
  res = r.post(good, kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ((*r).counters().too_large.load(), 1u);
}

TEST(OtlpReceiver, AFullBufferIsAnswered429WithRetryAfter) {
  serve::OtlpOptions o = quick();
  o.buffer_spans = 10;
  Receiver r(o, "otlp-full.jsonl");
  std::vector<TestSpan> spans;
  for (int i = 1; i <= 8; ++i) spans.push_back(span(kTrace, i, 0, "x", i, i + 1));
  const std::string body = testing::otlp_protobuf({{"s", spans}});
  (*r).hold(true);
  auto res = r.post(body, kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = r.post(body, kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  (*r).hold(false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*r).counters().buffered_spans.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  res = r.post(body, kProto);  // the retry
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ((*r).counters().throttled.load(), 1u);
  EXPECT_EQ((*r).counters().spans_accepted.load(), 16u);
}

TEST(OtlpReceiver, EvictionsAreCountedInMetrics) {
  serve::OtlpOptions o = quick();
  o.traces.max_open_traces = 1;
  o.traces.idle_ns = 60'000'000'000;  // only the bound completes traces here
  Receiver r(o, "otlp-evict.jsonl");
  for (const std::string& t : {kTrace, kOther, kTrace}) {
    auto res = r.post(testing::otlp_protobuf({{"s", {span(t, 1, 0, "x", 1, 2)}}}), kProto);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_EQ(r.lines(2).size(), 2u);
  auto res = r.client().Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\nsnailtrail_otlp_traces_evicted_total 2\n"), std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("\nsnailtrail_otlp_open_traces 1\n"), std::string::npos) << res->body;
}

// The command: `serve --otlp` on a free port, its port file, and at SIGTERM the traces
// still open are completed and written.
TEST(OtlpReceiver, ServeCommandWritesOpenTracesAtSigterm) {
  const std::string base = ::testing::TempDir() + std::to_string(::getpid()) + "-otlp-cli";
  std::remove((base + ".port").c_str());
  testing::Process serve({"serve", "--otlp", "127.0.0.1:0", "--port-file", base + ".port", "--out",
                          base + ".jsonl", "--trace-idle", "1h"},
                         base + ".stdout", base + ".stderr");
  ASSERT_TRUE(serve.started());
  const int port = testing::wait_for_port(base + ".port", "otlp");
  ASSERT_GT(port, 0) << serve.err();
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/v1/traces",
                         testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}}), kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.err();
  const std::string out = testing::slurp(base + ".jsonl");
  EXPECT_EQ(out.rfind("{\"trace_id\": \"" + kTrace + "\"", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  EXPECT_NE(serve.err().find("1 OTLP request, 1 span accepted, 0 rejected; 1 trace written"),
            std::string::npos)
      << serve.err();
}

// Twenty traces of three services with distinct durations (a 2- or 3-level tree each).
std::vector<TestResource> twenty_traces() {
  constexpr int64_t ms = 1'000'000;
  std::vector<TestResource> out = {{"front", {}}, {"back", {}}, {"db", {}}};
  for (int i = 0; i < 20; ++i) {
    const std::string trace = fmt::format("{:032x}", 0x100 + i);
    out[0].spans.push_back(span(trace, 1, 0, "get", 0, (10 + 3 * i) * ms));
    out[1].spans.push_back(span(trace, 2, 1, "work", 1 * ms, (5 + 2 * i) * ms));
    if (i % 2 == 0) out[2].spans.push_back(span(trace, 3, 2, "query", 2 * ms, (4 + i) * ms));
  }
  return out;
}

// /api/critical-path over the recent traces answers what `critical-path` answers on a file
// of the same spans: its services, its folded stacks, around a percentile, and the diff.
TEST(OtlpReceiver, LiveCriticalPathEqualsCriticalPathOnAFileOfTheSameSpans) {
  Receiver r(quick(), "otlp-live.jsonl");
  const std::vector<TestResource> request = twenty_traces();
  auto posted = r.post(testing::otlp_json(request), kJson);
  ASSERT_TRUE(posted);
  ASSERT_EQ(posted->status, 200);
  ASSERT_EQ(r.lines(20).size(), 20u);
  const std::string file = testing::write_temp("otlp-live-spans.json", testing::otlp_json(request));
  auto get = [&](const std::string& query) {
    auto res = r.client().Get("/api/critical-path" + query);
    EXPECT_TRUE(res) << query;
    return res ? res->body : std::string();
  };
  auto cli = [&](const std::string& args) {
    const auto out = testing::run_binary("critical-path " + args + " " + file, 60);
    EXPECT_EQ(out.code, 0) << args << ": " << out.out;
    return out.out;
  };
  // The services array, byte for byte.
  const std::string json = cli("--format json");
  const size_t at = json.find("\"services\": ["), end = json.find("], \"import_diagnostics\"");
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string services = json.substr(at, end + 1 - at);
  const std::string live = get("");
  EXPECT_NE(live.find(services), std::string::npos) << live << "\n" << services;
  EXPECT_NE(live.find("\"traces\": 20, \"dropped_traces\": 0, "), std::string::npos) << live;
  // Durations 10, 13, ..., 67 ms: nearest-rank p50 is the 10th, p90 the 18th.
  EXPECT_NE(live.find("\"duration_ns\": {\"p50\": 37000000, \"p90\": 61000000, \"p99\": "
                      "67000000, \"max\": 67000000}"),
            std::string::npos)
      << live;
  EXPECT_EQ(get("?format=folded"), cli("--format folded"));
  EXPECT_EQ(get("?format=folded&percentile=p50&bucket=10"),
            cli("--format folded --percentile 50 --bucket 10"));
  EXPECT_EQ(get("?diff=50,95&bucket=5"), cli("--diff 50 95 --bucket 5"));
  // Around p50 +- 10 points: ranks 8 to 12 (the 40th and 60th percentiles), 5 traces.
  EXPECT_NE(get("?percentile=50&bucket=10").find("\"traces_around\": 5, "), std::string::npos);
  // Per service in /metrics: the services' critical time in seconds.
  auto metrics = r.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::regex row(R"re("service": "([a-z]+)", "critical_ns": ([0-9]+))re");
  int rows = 0;
  for (std::sregex_iterator m(services.begin(), services.end(), row), e; m != e; ++m, ++rows) {
    const std::string line =
        fmt::format("\nsnailtrail_otlp_critical_seconds_total{{service=\"{}\"}} {}\n",
                    (*m)[1].str(), std::stod((*m)[2].str()) / 1e9);
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line << metrics->body;
  }
  EXPECT_EQ(rows, 3);
  // Bad queries are answered 400 with what was wrong.
  for (const char* bad : {"?minutes=x", "?percentile=101", "?diff=50", "?format=svg", "?top=3"}) {
    auto res = r.client().Get(std::string("/api/critical-path") + bad);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad;
    EXPECT_EQ(res->body.rfind("{\"error\": ", 0), 0u) << res->body;
  }
}

// The window keeps at most --otlp-window-traces; the oldest go first and are counted.
TEST(OtlpReceiver, LiveWindowKeepsTheNewestTracesAndCountsTheDropped) {
  serve::OtlpOptions o = quick();
  o.live.max_traces = 5;
  Receiver r(o, "otlp-live-cap.jsonl");
  auto posted = r.post(testing::otlp_json(twenty_traces()), kJson);
  ASSERT_TRUE(posted);
  ASSERT_EQ(r.lines(20).size(), 20u);
  auto res = r.client().Get("/api/critical-path");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\"traces\": 5, \"dropped_traces\": 15, "), std::string::npos)
      << res->body;
  // Nothing completed in the last 0.0001 minutes (6 ms) after a pause of 100 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  res = r.client().Get("/api/critical-path?minutes=0.0001");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\"traces\": 0, "), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("\"duration_ns\": null, \"services\": []"), std::string::npos)
      << res->body;
}

// --otlp beside --tcp: one process, the receiver on its own port (in the port file) with
// its paths in --otlp-out, the windows of the TCP producers in --out.
TEST(OtlpReceiver, ServeCommandReceivesSpansBesideATcpSource) {
  const std::string base = ::testing::TempDir() + std::to_string(::getpid()) + "-otlp-both";
  std::remove((base + ".port").c_str());
  testing::Process serve({"serve", "--tcp", "127.0.0.1:0", "--otlp", "127.0.0.1:0", "--otlp-out",
                          base + ".paths", "--out", base + ".windows", "--window", "1ms",
                          "--port-file", base + ".port", "--trace-idle", "1h"},
                         base + ".stdout", base + ".stderr");
  ASSERT_TRUE(serve.started());
  const int otlp = testing::wait_for_port(base + ".port", "otlp");
  const int tcp = testing::wait_for_port(base + ".port", "tcp");
  ASSERT_GT(otlp, 0) << serve.err();
  ASSERT_GT(tcp, 0) << serve.err();
  httplib::Client client("127.0.0.1", otlp);
  auto res = client.Post("/v1/traces",
                         testing::otlp_protobuf({{"s", {span(kTrace, 1, 0, "x", 1, 2)}}}), kProto);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const auto sent =
      testing::run_binary("send " + std::string(SNAILTRAIL_SOURCE_DIR) +
                              "/examples/pipeline.jsonl --to 127.0.0.1:" + std::to_string(tcp),
                          30);
  EXPECT_EQ(sent.code, 0) << sent.out;
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.err();
  const std::string paths = testing::slurp(base + ".paths");
  EXPECT_EQ(paths.rfind("{\"trace_id\": \"" + kTrace + "\"", 0), 0u) << paths;
  EXPECT_EQ(std::count(paths.begin(), paths.end(), '\n'), 1);
  const std::string windows = testing::slurp(base + ".windows");
  EXPECT_NE(windows.find("\"window\""), std::string::npos) << windows.substr(0, 300);
  EXPECT_EQ(windows.find("trace_id"), std::string::npos);
}

TEST(OtlpReceiver, ServeCommandRefusesBadOptions) {
  for (const auto& [args, error] : std::vector<std::pair<std::string, std::string>>{
           {"serve --otlp --tcp", "needs --otlp-out FILE"},
           {"serve --otlp 127.0.0.1:0 --otlp-max-body 12XB", "not a size"},
           {"serve --otlp 127.0.0.1:0 --max-open-traces 0", "must be at least 1"},
           {"serve --otlp 127.0.0.1:0 --otlp-max-connections 0",
            "--otlp-max-connections must be at least 1"},
           {"serve --otlp 127.0.0.1:0 --trace-idle 0s", "--trace-idle must be positive"}}) {
    const auto r = testing::run_binary(args, 30);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_NE(r.out.find(error), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace snailtrail::test_otlp_receiver
