// OTLP/JSON and Jaeger JSON importers: hand-made fixtures in tests/data (otlp-*.json,
// jaeger-*.json), the workers, activities and messages they map to, and CP values
// computed by hand (docs/IMPORTERS.md, "Spans").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "importers/common/activity_map.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::test_import_otel {
namespace {

const std::string kData = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/";
constexpr auto P = ActivityType::processing;
constexpr auto W = ActivityType::waiting;
constexpr auto DM = ActivityType::data_message;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // the OTLP fixture's time origin

struct Segment {
  uint32_t worker;
  int64_t start, end;  // relative to the origin, in the test's unit
  ActivityType type;
  std::string op;
  bool operator==(const Segment&) const = default;
};

void PrintTo(const Segment& s, std::ostream* os) {
  *os << "{w" << s.worker << " " << s.start << ".." << s.end << " " << name_of(s.type) << " '"
      << s.op << "'}";
}

std::vector<Segment> segments(const Trace& t, int64_t origin, int64_t unit) {
  std::map<uint32_t, Event> open;
  std::vector<Segment> out;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::start) open[e.worker] = e;
    if (e.kind == EventKind::end) {
      const Event& s = open.at(e.worker);
      out.push_back({e.worker, (s.ts - origin) / unit, (e.ts - origin) / unit, e.activity,
                     s.has(kHasOperator) ? t.operator_name(s.op) : ""});
    }
  }
  std::sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start < b.start;
  });
  return out;
}

struct Msg {
  uint32_t from;
  int64_t send;
  uint32_t to;
  int64_t recv;
  bool operator==(const Msg&) const = default;
};
void PrintTo(const Msg& m, std::ostream* os) {
  *os << "{w" << m.from << "@" << m.send << " -> w" << m.to << "@" << m.recv << "}";
}

std::vector<Msg> messages(const Trace& t, int64_t origin, int64_t unit) {
  std::map<int64_t, Msg> by_id;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::send) {
      by_id[e.correlator].from = e.worker;
      by_id[e.correlator].send = (e.ts - origin) / unit;
    } else if (e.kind == EventKind::recv) {
      by_id[e.correlator].to = e.worker;
      by_id[e.correlator].recv = (e.ts - origin) / unit;
    }
  }
  std::vector<Msg> out;
  for (auto& [id, m] : by_id) out.push_back(m);
  std::sort(out.begin(), out.end(), [](const Msg& a, const Msg& b) {
    return a.send != b.send ? a.send < b.send : a.from < b.from;
  });
  return out;
}

uint64_t diag(const Trace& t, const std::string& key) {
  for (const auto& [k, n] : t.import_diagnostics)
    if (k == key) return n;
  return 0;
}

WindowSummary analyze_whole(const Trace& t) {
  Pag pag = build_pag(t);
  AnalysisOptions opt;
  std::vector<WindowSummary> ws;
  analyze_pag(pag, opt, [&](const WindowView& v) { ws.push_back(v.summary); });
  EXPECT_EQ(ws.size(), 1u);
  return ws.empty() ? WindowSummary{} : ws[0];
}

double op_cp(const WindowSummary& w, const Trace& t, const std::string& name) {
  for (const auto& [id, v] : w.cp.op)
    if (t.operator_name(id) == name) return v;
  return 0;
}

// Fixture otlp-request.json (ms after 1700000000 s): trace 1 is
//   A frontend GET /checkout [0,100] root
//   B frontend call backend  [10,80]  child of A (same service: nests on A's lane)
//   C backend  POST /price   [15,75]  child of B
//   D db       query         [20,50]  child of C
//   E backend  render        [55,70]  child of C (nests on C's lane)
//   F frontend audit         [85,120] child of A, outlives it (second frontend lane)
//   G mailer   notify        [105,130] linked to F
// and trace 2 is H frontend GET /health [200,210].
TEST(OtelImport, OtlpSpansBecomeLanesActivitiesAndMessages) {
  const Trace t = importers::import_trace(kData + "otlp-request.json");
  ASSERT_EQ(t.worker_names.size(), 5u);
  EXPECT_EQ(t.worker_name(0), "frontend");
  EXPECT_EQ(t.worker_name(1), "frontend (lane 1)");
  EXPECT_EQ(t.worker_name(2), "backend");
  EXPECT_EQ(t.worker_name(3), "db");
  EXPECT_EQ(t.worker_name(4), "mailer");
  // Self time is the span's type; while a child runs on another worker and returns before
  // the parent ends, the parent waits. H reuses lane 0 once A has ended.
  const std::vector<Segment> expected = {
      {0, 0, 10, P, "frontend: GET /checkout"},
      {0, 10, 15, P, "frontend: call backend"},
      {0, 15, 75, W, ""},
      {0, 75, 80, P, "frontend: call backend"},
      {0, 80, 100, P, "frontend: GET /checkout"},
      {0, 200, 210, P, "frontend: GET /health"},
      {1, 85, 120, P, "frontend: audit"},
      {2, 15, 20, P, "backend: POST /price"},
      {2, 20, 50, W, ""},
      {2, 50, 55, P, "backend: POST /price"},
      {2, 55, 70, P, "backend: render"},
      {2, 70, 75, P, "backend: POST /price"},
      {3, 20, 50, P, "db: query"},
      {4, 105, 130, P, "mailer: notify"},
  };
  EXPECT_EQ(segments(t, kT0, kMs), expected);
  // Calls and returns across workers; F gets a call but no return (it outlives A); the
  // link G -> F leaves F when G starts (F still runs then).
  const std::vector<Msg> msgs = {{0, 15, 2, 15}, {2, 20, 3, 20}, {3, 50, 2, 50},
                                 {2, 75, 0, 75}, {0, 85, 1, 85}, {1, 105, 4, 105}};
  EXPECT_EQ(messages(t, kT0, kMs), msgs);
  EXPECT_TRUE(t.import_diagnostics.empty());

  // One window [0, 210] ms with a single transient path (waiting is never critical; F and
  // G lead nowhere): A 10, B 5, C 5, D 30, C 5, E 15, C 5, B 5, A 20, unknown gap 100,
  // H 10; messages weigh 0.
  const WindowSummary w = analyze_whole(t);
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);
  EXPECT_NEAR(w.cp.activity[int(P)], 110.0 / 210, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(ActivityType::unknown)], 100.0 / 210, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(W)], 0.0, 1e-12);
  EXPECT_NEAR(op_cp(w, t, "frontend: GET /checkout"), 30.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "frontend: call backend"), 10.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "backend: POST /price"), 15.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "db: query"), 30.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "backend: render"), 15.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "frontend: GET /health"), 10.0 / 210, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "frontend: audit"), 0.0, 1e-12);
  EXPECT_NEAR(w.cp.worker[0], 150.0 / 210, 1e-9);
  EXPECT_NEAR(w.cp.worker[2], 30.0 / 210, 1e-9);
  EXPECT_NEAR(w.cp.worker[3], 30.0 / 210, 1e-9);
  EXPECT_NEAR(w.cp.worker[1], 0.0, 1e-12);
}

// Fixture jaeger-request.json (us after 0): R api GET /order [1000,1100] root;
// S api auth [1005,1015] child of R; K inventory reserve [995,1055] child of R but starts
// before it (clock skew); Q queue publish [1060,1090] child of R; W worker consume
// [1095,1150] FOLLOWS_FROM Q.
TEST(OtelImport, JaegerReferencesSkewAndFollowsFrom) {
  const Trace t = importers::import_trace(kData + "jaeger-request.json");
  ASSERT_EQ(t.worker_names.size(), 4u);
  EXPECT_EQ(t.worker_name(0), "api");
  EXPECT_EQ(t.worker_name(1), "inventory");
  EXPECT_EQ(t.worker_name(2), "queue");
  EXPECT_EQ(t.worker_name(3), "worker");
  const std::vector<Segment> expected = {
      {0, 1000, 1005, W, ""},  // waiting for K, whose call is lost to skew
      {0, 1005, 1015, P, "api: auth"},
      {0, 1015, 1055, W, ""},
      {0, 1055, 1060, P, "api: GET /order"},
      {0, 1060, 1090, W, ""},
      {0, 1090, 1100, P, "api: GET /order"},
      {1, 995, 1055, P, "inventory: reserve"},
      {2, 1060, 1090, P, "queue: publish"},
      {3, 1095, 1150, P, "worker: consume"},
  };
  EXPECT_EQ(segments(t, 0, 1000), expected);
  const std::vector<Msg> msgs = {
      {1, 1055, 0, 1055}, {0, 1060, 2, 1060}, {2, 1090, 0, 1090}, {2, 1090, 3, 1095}};
  EXPECT_EQ(messages(t, 0, 1000), msgs);
  EXPECT_EQ(diag(t, "jaeger.children_starting_before_parent"), 1u);

  // Window [995, 1150] us, one path: K 60, R 5, Q 30, message 5 (follows-from), W 55.
  const WindowSummary w = analyze_whole(t);
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.cp.activity[int(P)], 150.0 / 155, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(DM)], 5.0 / 155, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "inventory: reserve"), 60.0 / 155, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "api: GET /order"), 5.0 / 155, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "queue: publish"), 30.0 / 155, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "worker: consume"), 55.0 / 155, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "api: auth"), 0.0, 1e-12);
}

TEST(OtelImport, MapFileOverridesSpanActivities) {
  const std::string path = ::testing::TempDir() + "otel-map.toml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "[[rule]]\nservice = \"queue\"\nactivity = \"io\"\n"
        "[[rule]]\nkind = \"server\"\nname = \"GET *\"\nactivity = \"scheduling\"\n",
        f);
    std::fclose(f);
  }
  importers::ImportOptions options;
  options.map_file = path;
  const Trace t = importers::import_trace(kData + "jaeger-request.json", "jaeger", options);
  const WindowSummary w = analyze_whole(t);
  EXPECT_NEAR(w.cp.activity[int(ActivityType::io)], 30.0 / 155, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(ActivityType::scheduling)], 5.0 / 155, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(P)], 115.0 / 155, 1e-9);
}

TEST(OtelImport, OtlpJsonLinesAndThreads) {
  // Two requests, one per line (the collector's file exporter); thread.name separates
  // the workers of one service.
  const std::string line =
      "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":"
      "{\"stringValue\":\"svc\"}}]},\"scopeSpans\":[{\"spans\":[{\"traceId\":\"t{N}\",\"spanId\":"
      "\"s{N}\",\"name\":\"op\",\"startTimeUnixNano\":\"{S}\",\"endTimeUnixNano\":\"{E}\","
      "\"attributes\":[{\"key\":\"thread.name\",\"value\":{\"stringValue\":\"th{N}\"}}]}]}]}]}\n";
  auto fill = [&](int n, int s, int e) {
    std::string l = line;
    for (auto [k, v] : {std::pair{"{N}", std::to_string(n)},
                        {"{S}", std::to_string(s)},
                        {"{E}", std::to_string(e)}})
      for (size_t p; (p = l.find(k)) != std::string::npos;) l.replace(p, 3, v);
    return l;
  };
  const importers::SpanSet set = importers::parse_otlp(fill(1, 0, 10) + fill(2, 5, 20), "x.jsonl");
  ASSERT_EQ(set.spans.size(), 2u);
  const Trace t = importers::spans_to_trace(set, {});
  EXPECT_EQ(t.worker_name(0), "svc/th1");
  EXPECT_EQ(t.worker_name(1), "svc/th2");
  const std::vector<Segment> expected = {{0, 0, 10, P, "svc: op"}, {1, 5, 20, P, "svc: op"}};
  EXPECT_EQ(segments(t, 0, 1), expected);
}

TEST(OtelImport, ConcurrentSpansOfOneServiceGetLanes) {
  // Three overlapping requests in one service, no threads known: three lanes, then the
  // lowest free lane is reused.
  std::string spans;
  const int times[][2] = {{0, 10}, {2, 8}, {4, 12}, {11, 15}};
  for (int i = 0; i < 4; ++i)
    spans += fmt::format(
        "{}{{\"traceId\":\"t{}\",\"spanId\":\"s\",\"name\":\"r\",\"startTimeUnixNano\":{},"
        "\"endTimeUnixNano\":{}}}",
        i ? "," : "", i, times[i][0], times[i][1]);
  const importers::SpanSet set = importers::parse_otlp(
      "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[" + spans + "]}]}]}", "c.json");
  const Trace t = importers::spans_to_trace(set, {});
  const std::vector<Segment> expected = {{0, 0, 10, P, "unknown_service: r"},
                                         {0, 11, 15, P, "unknown_service: r"},
                                         {1, 2, 8, P, "unknown_service: r"},
                                         {2, 4, 12, P, "unknown_service: r"}};
  EXPECT_EQ(segments(t, 0, 1), expected);
  EXPECT_EQ(t.worker_name(2), "unknown_service (lane 2)");
}

TEST(OtelImport, BrokenReferencesAreCounted) {
  // a -> b -> a is a cycle; c's parent is not in the file; d is a duplicate id of a;
  // e ends before it starts (clamped).
  const std::string text =
      "{\"data\":[{\"traceID\":\"t\",\"processes\":{\"p\":{\"serviceName\":\"s\"}},\"spans\":["
      "{\"traceID\":\"t\",\"spanID\":\"a\",\"startTime\":0,\"duration\":10,\"processID\":\"p\","
      "\"references\":[{\"refType\":\"CHILD_OF\",\"spanID\":\"b\"}]},"
      "{\"traceID\":\"t\",\"spanID\":\"b\",\"startTime\":1,\"duration\":5,\"processID\":\"p\","
      "\"references\":[{\"refType\":\"CHILD_OF\",\"spanID\":\"a\"}]},"
      "{\"traceID\":\"t\",\"spanID\":\"c\",\"startTime\":2,\"duration\":1,\"processID\":\"p\","
      "\"references\":[{\"refType\":\"CHILD_OF\",\"spanID\":\"zz\"}]},"
      "{\"traceID\":\"t\",\"spanID\":\"a\",\"startTime\":3,\"duration\":1,\"processID\":\"q\"},"
      "{\"traceID\":\"t\",\"spanID\":\"e\",\"startTime\":4,\"duration\":-3,\"processID\":\"p\"}"
      "]}]}";
  const importers::SpanSet set = importers::parse_jaeger(text, "b.json");
  auto count = [&](const std::string& k) {
    for (const auto& [key, n] : set.diagnostics)
      if (key == k) return n;
    return uint64_t(0);
  };
  EXPECT_EQ(count("jaeger.parent_cycles"), 1u);
  EXPECT_EQ(count("jaeger.orphan_spans"), 1u);
  EXPECT_EQ(count("jaeger.duplicate_span_ids"), 1u);
  EXPECT_EQ(count("jaeger.negative_durations"), 1u);
  EXPECT_EQ(count("jaeger.spans_without_process"), 1u);
  EXPECT_EQ(set.spans[4].end, set.spans[4].start);
  // The cycle is broken at one span: exactly one of a, b keeps its parent.
  EXPECT_EQ(
      (set.spans[0].parent == importers::kNoSpan) + (set.spans[1].parent == importers::kNoSpan), 1);
  const Trace t = importers::spans_to_trace(set, {});
  EXPECT_FALSE(t.events.empty());
}

TEST(OtelImport, BadInputIsAnErrorWithAPosition) {
  auto error = [](auto parse, const std::string& text) {
    try {
      parse(text, "bad.json");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto otlp = [](const std::string& t, const std::string& s) { importers::parse_otlp(t, s); };
  auto jaeger = [](const std::string& t, const std::string& s) { importers::parse_jaeger(t, s); };
  EXPECT_EQ(error(otlp, "{\"x\": 1}"), "bad.json: top level: missing \"resourceSpans\"");
  EXPECT_EQ(
      error(otlp, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"t\"}]}]}]}"),
      "bad.json: resourceSpans[0].scopeSpans[0].spans[0]: missing \"spanId\"");
  EXPECT_EQ(error(otlp,
                  "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"t\","
                  "\"spanId\":\"s\",\"startTimeUnixNano\":\"12x\",\"endTimeUnixNano\":1}]}]}]}"),
            "bad.json: resourceSpans[0].scopeSpans[0].spans[0]: \"startTimeUnixNano\" must be a "
            "non-negative integer (or a decimal string) of ns");
  EXPECT_EQ(error(otlp, "{\"resourceSpans\": [}").substr(0, 18), "bad.json: byte 19:");
  EXPECT_EQ(error(jaeger, "[]"), "bad.json: top level: expected an object with \"data\"");
  EXPECT_EQ(error(jaeger, "{\"data\":[{\"spans\":[{\"traceID\":\"t\",\"spanID\":\"s\"}]}]}"),
            "bad.json: data[0].spans[0]: \"startTime\" must be a number of microseconds in range");
  EXPECT_EQ(error(jaeger, "{\"data\": 5}"),
            "bad.json: top level: \"data\" must be an array of traces");
}

// A Jaeger span's members are read in one pass: the first of a repeated name counts (as
// a lookup by name finds it), null is absent, and the checks come in the documented order.
TEST(OtelImport, JaegerSpanMembersFirstWinsNullIsAbsentErrorsInOrder) {
  auto span = [](const std::string& members) {
    return "{\"data\":[{\"traceID\":\"t\",\"spans\":[{" + members +
           "}],\"processes\":{\"p1\":{\"serviceName\":\"svc\"}}}]}";
  };
  const std::string ok =
      "\"traceID\":\"t\",\"spanID\":\"a\",\"startTime\":10,\"duration\":5,\"processID\":\"p1\"";
  {
    const importers::SpanSet set = importers::parse_jaeger(
        span(ok + ",\"operationName\":\"first\",\"operationName\":\"second\",\"spanID\":\"b\","
                  "\"parentSpanID\":null,\"tags\":[{\"key\":\"span.kind\",\"value\":\"client\"}]"),
        "dup.json");
    ASSERT_EQ(set.spans.size(), 1u);
    EXPECT_EQ(set.str(set.spans[0].operation), "first");
    EXPECT_EQ(set.ids.text(set.spans[0].id), "a");
    EXPECT_EQ(set.str(set.spans[0].service), "svc");
    EXPECT_EQ(set.spans[0].kind, importers::SpanKind::client);
    EXPECT_EQ(set.spans[0].end - set.spans[0].start, 5000);
    EXPECT_TRUE(set.refs.empty());
  }
  auto error = [&](const std::string& members) {
    try {
      importers::parse_jaeger(span(members), "bad.json");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string at = "bad.json: data[0].spans[0]: ";
  EXPECT_EQ(error("\"spanID\":5"), at + "missing \"traceID\"");
  EXPECT_EQ(error("\"traceID\":null,\"spanID\":5"), at + "missing \"traceID\"");
  EXPECT_EQ(error("\"spanID\":5,\"traceID\":\"t\""), at + "\"spanID\" must be a string");
  EXPECT_EQ(error("\"traceID\":\"t\",\"spanID\":\"\""), at + "empty \"traceID\" or \"spanID\"");
  EXPECT_EQ(error("\"operationName\":1," + ok), at + "\"operationName\" must be a string");
  EXPECT_EQ(error(ok + ",\"duration\":\"5\""), "no error");  // the first "duration" counts
  EXPECT_EQ(error("\"duration\":\"5\"," + ok),
            at + "\"duration\" must be a number of microseconds in range");
  EXPECT_EQ(error(ok + ",\"references\":{}"), at + "\"references\" must be an array");
  EXPECT_EQ(error(ok + ",\"references\":[{\"spanID\":3}]"),
            at.substr(0, at.size() - 2) + ".references[0]: \"spanID\" must be a string");
  EXPECT_EQ(error(ok + ",\"parentSpanID\":7"), at + "\"parentSpanID\" must be a string");
  EXPECT_EQ(error("\"processID\":1," + ok), at + "\"processID\" must be a string");
}

TEST(OtelImport, DetectedByContent) {
  EXPECT_EQ(importers::detect_importer(kData + "otlp-request.json").name, "otlp");
  EXPECT_EQ(importers::detect_importer(kData + "jaeger-request.json").name, "jaeger");
  EXPECT_EQ(importers::sniff_otlp("a.json", "{\"traceEvents\":[]}"), 0);
  EXPECT_EQ(importers::sniff_jaeger("a.json", "{\"resourceSpans\":[]}"), 0);
}

}  // namespace
}  // namespace snailtrail::test_import_otel
