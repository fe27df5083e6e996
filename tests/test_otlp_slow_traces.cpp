// `serve --otlp`'s slow traces (src/serve/otlp_slow.cpp): GET /api/slow-traces against the
// latencies and span counts the tests build in, GET /api/trace against the static
// Waterfall of `report -f json` on the same spans from a file, the bound of --slow-traces
// against a brute-force pick, and `serve --otlp --http` serving /traces behind its token.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "otlp_builder.hpp"
#include "otlp_receiver_util.hpp"
#include "process_util.hpp"
#include "serve/otlp_receiver.hpp"
#include "serve/otlp_slow.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_otlp_slow_traces {
namespace {

using testing::TestResource;
using testing::TestSpan;

constexpr const char* kJson = "application/json";
constexpr int64_t kMs = 1'000'000;

std::string hex(int n, int width) {
  return fmt::format("{:0{}x}", n, width);
}

// Trace `n` (id 000..0n): a root "GET /n" of `ms` milliseconds on service "api" with
// `children` sequential children "step" on "db" inside it (so `children + 1` spans).
TestResource trace_of(int n, int64_t ms, int children) {
  TestResource r;
  r.service = "api";
  const std::string trace = hex(n, 32);
  const int64_t t0 = int64_t{1'700'000'000'000} * kMs + n * 1000 * kMs;
  TestSpan root;
  root.trace = trace;
  root.id = hex(n * 100, 16);
  root.name = fmt::format("GET /{}", n);
  root.start = t0;
  root.end = t0 + ms * kMs;
  r.spans.push_back(root);
  for (int c = 0; c < children; ++c) {
    TestSpan s;
    s.trace = trace;
    s.id = hex(n * 100 + c + 1, 16);
    s.parent = root.id;
    s.name = "step";
    // Overlapping halves: the critical path runs through some of them, not all.
    s.start = t0 + (ms * kMs) * c / (children + 1);
    s.end = s.start + (ms * kMs) / children;
    r.spans.push_back(s);
  }
  return r;
}

// The receiver of these tests: traces complete 100 ms after their last span.
class Receiver : public testing::TestReceiver {
 public:
  Receiver(serve::OtlpOptions o, const std::string& name)
      : TestReceiver(quick(std::move(o)), name) {}
  using TestReceiver::post;
  void post(const std::vector<TestResource>& request) {
    auto res = post(testing::otlp_json(request), kJson);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  }

 private:
  static serve::OtlpOptions quick(serve::OtlpOptions o) {
    o.traces.idle_ns = 100 * kMs;
    o.threads = 2;
    return o;
  }
};

struct Listed {
  std::string id, service, root;
  int64_t duration_ns, spans, completed_unix_ms;
};
std::vector<Listed> parse_list(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(body);
  std::vector<Listed> out;
  for (simdjson::dom::element t : doc["traces"].get_array()) {
    Listed l;
    l.id = std::string(std::string_view(t["id"]));
    l.service = std::string(std::string_view(t["service"]));
    l.root = std::string(std::string_view(t["root"]));
    l.duration_ns = int64_t(t["duration_ns"]);
    l.spans = int64_t(t["spans"]);
    l.completed_unix_ms = int64_t(t["completed_unix_ms"]);
    out.push_back(l);
  }
  return out;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The list: every trace of the window, slowest first, with the latency and the span count
// each was built with (the root's duration: its children lie inside it).
TEST(OtlpSlowTraces, ListsTheSlowestFirstWithTheirLatenciesAndSpanCounts) {
  Receiver r({}, "slow-list.jsonl");
  const std::vector<std::pair<int64_t, int>> built = {{30, 1}, {70, 2}, {50, 0}, {90, 3}, {10, 1}};
  std::vector<TestResource> request;
  for (size_t i = 0; i < built.size(); ++i)
    request.push_back(trace_of(static_cast<int>(i + 1), built[i].first, built[i].second));
  const int64_t before = wall_ms();
  r.post(request);
  r.wait_written(built.size());
  const int64_t after = wall_ms();
  const std::vector<Listed> list = parse_list(r.get("/api/slow-traces"));
  // By hand: 90 (trace 4), 70 (2), 50 (3), 30 (1), 10 (5) ms.
  const std::vector<int> order = {4, 2, 3, 1, 5};
  ASSERT_EQ(list.size(), order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& [ms, children] = built[order[k] - 1];
    EXPECT_EQ(list[k].id, hex(order[k], 32)) << k;
    EXPECT_EQ(list[k].duration_ns, ms * kMs) << k;
    EXPECT_EQ(list[k].spans, children + 1) << k;
    EXPECT_EQ(list[k].service, "api");
    EXPECT_EQ(list[k].root, fmt::format("GET /{}", order[k]));
    EXPECT_GE(list[k].completed_unix_ms, before);
    EXPECT_LE(list[k].completed_unix_ms, after);
  }
  EXPECT_EQ((*r).slow_traces()->size(), 5u);
  EXPECT_EQ((*r).slow_traces()->spans(), 12u);
  const std::string metrics = r.get("/metrics");
  EXPECT_NE(metrics.find("\nsnailtrail_otlp_slow_traces 5\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nsnailtrail_otlp_slow_trace_spans 12\n"), std::string::npos);
}

// /api/trace answers the Waterfall data `report --traces 1 -f json` writes for a file of
// the same spans (the same critical_paths and rows), all but the source's name.
TEST(OtlpSlowTraces, TraceEqualsTheStaticWaterfallOfTheSameSpansFromAFile) {
  Receiver r({}, "slow-trace.jsonl");
  // Trace 7 with nested and overlapping children on two services, and one more trace.
  TestResource api = trace_of(7, 120, 3);
  TestSpan deep;
  deep.trace = api.spans[0].trace;
  deep.id = hex(790, 16);
  deep.parent = api.spans[2].id;  // under the second step
  deep.name = "SELECT";
  deep.start = api.spans[2].start + 5 * kMs;
  deep.end = api.spans[2].end + 3 * kMs;  // past its parent's end: clipped
  TestResource db{"db", {deep}};
  r.post({api, db, trace_of(8, 20, 1)});
  r.wait_written(2);
  const std::string live = r.get("/api/trace?id=" + hex(7, 32));
  const std::string file = testing::write_temp("slow-trace-7.json", testing::otlp_json({api, db}));
  const std::string out = testing::write_temp("slow-trace-7-waterfall.json", "");
  const auto res = testing::run_binary("report " + file + " -o " + out + " -f json --traces 1", 60);
  ASSERT_EQ(res.code, 0) << res.out;
  std::string expected = testing::slurp(out);
  // The file's page also has its percentile views (all its traces; the live page asks
  // api/critical-path for them): the last member, left out of the comparison.
  const size_t pc = expected.find(",\"percentiles\":{");
  ASSERT_NE(pc, std::string::npos) << expected;
  expected = expected.substr(0, pc) + "}\n";
  const std::string from = ",\"traces_total\":";
  ASSERT_NE(expected.find(from), std::string::npos) << expected;
  ASSERT_NE(live.find(from), std::string::npos) << live;
  EXPECT_EQ(live.substr(live.find(from)), expected.substr(expected.find(from)));
  EXPECT_EQ(live.rfind("{\"schema\":1,\"view\":\"waterfall\",\"source\":\"serve --otlp\"", 0), 0u)
      << live;
  // Not a stub: the trace has its 5 rows and a critical path of more than one section.
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(live);
  simdjson::dom::element t = doc["traces"].at(0);
  EXPECT_EQ(t["rows"].get_array().size(), 5u);
  EXPECT_GT(t["path"].get_array().size(), 1u);
  EXPECT_EQ(int64_t(t["duration_ns"]), 120 * kMs);
  // Each row's critical time is what `critical-path` puts on the path for that span.
  const auto cp = testing::run_binary("critical-path " + file + " --format json", 60);
  ASSERT_EQ(cp.code, 0) << cp.out;
  simdjson::dom::parser cp_parser;
  simdjson::dom::element cp_doc = cp_parser.parse(cp.out);
  std::map<std::string, int64_t> on_path;
  for (simdjson::dom::element step : cp_doc["traces"].at(0)["path"].get_array())
    on_path[std::string(std::string_view(step["span_id"]))] += int64_t(step["self_ns"]);
  ASSERT_GT(on_path.size(), 1u);
  int64_t total = 0;
  for (simdjson::dom::element row : t["rows"].get_array()) {
    const std::string span_id(std::string_view(row.at(9)));
    const int64_t critical = int64_t(row.at(7));
    EXPECT_EQ(critical, on_path.count(span_id) ? on_path[span_id] : 0) << span_id;
    total += critical;
  }
  EXPECT_EQ(total, 120 * kMs);
  // Unknown and missing ids.
  r.get("/api/trace?id=" + hex(9, 32), 404);
  r.get("/api/trace", 400);
}

// Over --slow-traces, only the K slowest remain (oracle: the posted latencies sorted), and a
// trace evicted is answered 404.
TEST(OtlpSlowTraces, OnlyTheKSlowestRemain) {
  serve::OtlpOptions o;
  o.slow.max_traces = 3;
  Receiver r(o, "slow-bound.jsonl");
  std::vector<int64_t> ms = {12, 80, 33, 5, 61, 47, 99, 18, 70, 26};
  std::vector<TestResource> request;
  for (size_t i = 0; i < ms.size(); ++i)
    request.push_back(trace_of(static_cast<int>(i + 1), ms[i], static_cast<int>(i % 3)));
  r.post(request);
  r.wait_written(ms.size());
  const std::vector<Listed> list = parse_list(r.get("/api/slow-traces"));
  std::vector<int64_t> sorted = ms;
  std::sort(sorted.rbegin(), sorted.rend());
  ASSERT_EQ(list.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(list[k].duration_ns, sorted[k] * kMs) << k;
    const size_t i = std::find(ms.begin(), ms.end(), sorted[k]) - ms.begin();
    EXPECT_EQ(list[k].id, hex(static_cast<int>(i + 1), 32));
  }
  EXPECT_EQ((*r).slow_traces()->size(), 3u);
  r.get("/api/trace?id=" + hex(1, 32), 404);  // 12 ms: evicted
  r.get("/api/trace?id=" + hex(7, 32));       // 99 ms: kept
}

// The heap against brute force: random latencies, sizes and completion times. Without
// expiry the kept set is the K slowest of all (sorted); with a window, the heap's rule
// (keep a trace if there is room or it beats the fastest kept; drop the old and the
// fastest over the bounds) replayed on a plain list.
TEST(OtlpSlowTraces, HeapMatchesABruteForcePick) {
  std::mt19937 rng(7);
  for (const bool expiring : {false, true}) {
    serve::SlowTraceLimits lim;
    lim.max_traces = 8;
    lim.max_spans = expiring ? 60 : 1'000'000;
    lim.window_ns = expiring ? 50 * kMs : int64_t{1} << 60;
    serve::SlowTraces slow(lim);
    struct Model {
      int64_t d, at;
      uint64_t seq;
      size_t spans;
    };
    std::vector<Model> model;
    std::vector<int64_t> all;
    int64_t now = 0;
    for (uint64_t n = 0; n < 400; ++n) {
      now += std::uniform_int_distribution<int64_t>(0, 3 * kMs)(rng);
      const int64_t d = std::uniform_int_distribution<int64_t>(1, 1000)(rng) * 1000 + n;
      const size_t spans = std::uniform_int_distribution<size_t>(1, 12)(rng);
      all.push_back(d);
      // The model: the rule as the docs state it, on a list.
      std::erase_if(model, [&](const Model& m) { return m.at < now - lim.window_ns; });
      size_t kept_spans = 0;
      for (const Model& m : model) kept_spans += m.spans;
      int64_t fastest = INT64_MAX;
      for (const Model& m : model) fastest = std::min(fastest, m.d);
      const bool take = (model.size() < lim.max_traces && kept_spans + spans <= lim.max_spans) ||
                        (!model.empty() && d > fastest);
      ASSERT_EQ(slow.wants(d, spans, now), take) << n;
      if (!take) continue;
      model.push_back({d, now, n, spans});
      kept_spans += spans;
      while (model.size() > lim.max_traces || kept_spans > lim.max_spans) {
        auto f = std::min_element(model.begin(), model.end(), [](const Model& a, const Model& b) {
          return a.d != b.d ? a.d < b.d : a.seq > b.seq;
        });
        kept_spans -= f->spans;
        model.erase(f);
      }
      // The unit of one trace of `spans` rows and latency d.
      report::WaterfallBuilder::Unit u;
      u.ids = hex(static_cast<int>(n), 32);
      u.names = {"svc", "op"};
      u.rows.resize(spans);
      report::WaterfallBuilder::Trace t{};
      t.id_len = 32;
      t.duration_ns = d;
      t.spans = static_cast<uint32_t>(spans);
      t.rows_end = static_cast<uint32_t>(spans);
      u.traces.push_back(t);
      slow.add(std::move(u), now, 0);
      ASSERT_EQ(slow.size(), model.size()) << n;
    }
    std::vector<int64_t> expected;
    for (const Model& m : model) expected.push_back(m.d);
    std::sort(expected.rbegin(), expected.rend());
    if (!expiring) {
      std::sort(all.rbegin(), all.rend());
      all.resize(lim.max_traces);
      EXPECT_EQ(expected, all);
    }
    std::vector<int64_t> listed;
    for (const Listed& l : parse_list(slow.list_json(now))) listed.push_back(l.duration_ns);
    EXPECT_EQ(listed, expected) << (expiring ? "with a window" : "without expiry");
  }
}

// The whole command: `serve --otlp --http` with a token serves /traces, /api/slow-traces and
// /api/trace on the --http port behind the token, and the dashboard links /traces.
TEST(OtlpSlowTraces, ServeHttpServesTheSlowTracesBehindItsToken) {
  const std::string base = ::testing::TempDir() + std::to_string(::getpid()) + "-slow-http";
  std::remove((base + ".port").c_str());
  const std::string token = testing::write_temp("slow-token", "slow-token-123456\n");
  testing::Process serve({"serve", "--otlp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--otlp-out",
                          base + ".paths", "--out", "/dev/null", "--port-file", base + ".port",
                          "--trace-idle", "100ms", "--token-file", token},
                         base + ".stdout", base + ".stderr");
  ASSERT_TRUE(serve.started());
  const int otlp = testing::wait_for_port(base + ".port", "otlp");
  const int http = testing::wait_for_port(base + ".port", "http");
  ASSERT_GT(otlp, 0) << serve.err();
  ASSERT_GT(http, 0) << serve.err();
  const httplib::Headers auth = {{"Authorization", "Bearer slow-token-123456"}};
  httplib::Client sender("127.0.0.1", otlp);
  auto posted = sender.Post("/v1/traces", auth,
                            testing::otlp_json({trace_of(1, 40, 1), trace_of(2, 60, 2)}), kJson);
  ASSERT_TRUE(posted);
  ASSERT_EQ(posted->status, 200);
  httplib::Client client("127.0.0.1", http);
  std::vector<Listed> list;
  testing::wait_until([&] {
    auto res = client.Get("/api/slow-traces", auth);
    if (res && res->status == 200) list = parse_list(res->body);
    return list.size() >= 2;
  });
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].duration_ns, 60 * kMs);
  EXPECT_EQ(list[1].duration_ns, 40 * kMs);
  for (const std::string& target :
       {std::string("/traces"), std::string("/api/slow-traces"), "/api/trace?id=" + list[0].id}) {
    auto none = client.Get(target);
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401) << target;
    auto with = client.Get(target, auth);
    ASSERT_TRUE(with);
    EXPECT_EQ(with->status, 200) << target;
  }
  auto page = client.Get("/traces", auth);
  EXPECT_NE(page->body.find("\"live\":true"), std::string::npos);
  auto dashboard = client.Get("/", auth);
  ASSERT_TRUE(dashboard);
  EXPECT_NE(dashboard->body.find("<a id=\"slow-traces-link\" href=\"traces\">"), std::string::npos);
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.err();
}

}  // namespace
}  // namespace snailtrail::test_otlp_slow_traces
