// Chrome Trace Event Format importer: hand-made fixtures in tests/data (chrome-*.json),
// the PAG shape they produce and CP values computed by hand (docs/IMPORTERS.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/activity_map.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::test_import_chrome {
namespace {

const std::string kData = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/";

// One activity or message as the importer emitted it, per worker, for shape checks.
struct Segment {
  uint32_t worker;
  int64_t start, end;
  ActivityType type;
  std::string op;
  bool operator==(const Segment&) const = default;
};

std::vector<Segment> segments(const Trace& t) {
  std::map<uint32_t, Event> open;
  std::vector<Segment> out;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::start) open[e.worker] = e;
    if (e.kind == EventKind::end) {
      const Event& s = open.at(e.worker);
      EXPECT_EQ(s.activity, e.activity);
      out.push_back(
          {e.worker, s.ts, e.ts, e.activity, s.has(kHasOperator) ? t.operator_name(s.op) : ""});
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
  ActivityType type;
  bool operator==(const Msg&) const = default;
};

std::vector<Msg> messages(const Trace& t) {
  std::map<int64_t, Msg> by_id;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::send) {
      by_id[e.correlator].from = e.worker;
      by_id[e.correlator].send = e.ts;
      by_id[e.correlator].type = e.activity;
    } else if (e.kind == EventKind::recv) {
      by_id[e.correlator].to = e.worker;
      by_id[e.correlator].recv = e.ts;
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

// The whole trace as one window.
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

constexpr auto P = ActivityType::processing;
constexpr auto DM = ActivityType::data_message;

TEST(ChromeImport, FlowsNestingLanesAndDiagnostics) {
  const Trace t = importers::import_trace(kData + "chrome-flows.json");
  // Workers: the loader thread, the main thread, and a second lane for the slice that
  // overlaps "step" without nesting in it.
  ASSERT_EQ(t.worker_names.size(), 3u);
  EXPECT_EQ(t.worker_name(0), "trainer/loader");
  EXPECT_EQ(t.worker_name(1), "trainer/main");
  EXPECT_EQ(t.worker_name(2), "trainer/main (lane 1)");
  // "matmul" nests in "step": step runs before and after it (self time).
  const std::vector<Segment> expected = {
      {0, 0, 10000, P, "load"},     {1, 12000, 14000, P, "step"},    {1, 14000, 20000, P, "matmul"},
      {1, 20000, 30000, P, "step"}, {2, 25000, 35000, P, "overlap"},
  };
  EXPECT_EQ(segments(t), expected);
  // s/f flow: "bp": "e" binds the end to the next slice (step at 12 us); bind_id flow:
  // from matmul's end (20 us) to overlap's start (25 us).
  const std::vector<Msg> msgs = {{0, 10000, 1, 12000, DM}, {1, 20000, 2, 25000, DM}};
  EXPECT_EQ(messages(t), msgs);
  EXPECT_EQ(diag(t, "chrome.overlapping_slices_moved"), 1u);
  EXPECT_EQ(diag(t, "chrome.unmatched_ends"), 1u);  // the E at 40 us
  EXPECT_EQ(diag(t, "chrome.ignored_events"), 1u);  // the instant event
  EXPECT_EQ(diag(t, "chrome.unclosed_begins"), 0u);

  // One transient path over [0, 35 us]: load 10, message 2, step 2, matmul 6, message 5,
  // overlap 10 (step's tail 20..30 leads nowhere): CP = weight / 35.
  const WindowSummary w = analyze_whole(t);
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.paths_log10, 0.0, 1e-12);  // exactly one path
  EXPECT_NEAR(w.cp.activity[int(P)], 28.0 / 35, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(DM)], 7.0 / 35, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "load"), 10.0 / 35, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "step"), 2.0 / 35, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "matmul"), 6.0 / 35, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "overlap"), 10.0 / 35, 1e-9);
}

TEST(ChromeImport, TensorFlowInputDependenciesBecomeMessagesAndWaiting) {
  const Trace t = importers::import_trace(kData + "chrome-tf-timeline.json");
  ASSERT_EQ(t.worker_names.size(), 2u);
  EXPECT_EQ(t.worker_name(0), "/job:worker/task:0/device:CPU:0 Compute/tid 0");
  // BiasAdd consumes MatMul's output (other thread); Relu consumes BiasAdd's. The
  // control input ^dense/MatMul is on Relu's own thread: program order, no message.
  const std::vector<Msg> msgs = {{0, 10'000'000, 1, 12'000'000, DM},
                                 {1, 16'000'000, 0, 20'000'000, DM}};
  EXPECT_EQ(messages(t), msgs);
  EXPECT_EQ(diag(t, "chrome.inputs_without_producer"), 3u);  // x, kernel/read, bias/read

  // Thread 0 sends at 10 ms and receives at 20 ms: the gap is waiting (thesis §3.4).
  // The only path: MatMul 10, msg 2, BiasAdd 4, msg 4, Relu 5 of 25 ms.
  const WindowSummary w = analyze_whole(t);
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.cp.activity[int(ActivityType::waiting)], 0.0, 1e-12);
  EXPECT_NEAR(w.conventional.activity[int(ActivityType::waiting)], 10.0 / 35, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(P)], 19.0 / 25, 1e-9);
  EXPECT_NEAR(w.cp.activity[int(DM)], 6.0 / 25, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "MatMul"), 0.4, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "BiasAdd"), 0.16, 1e-9);
  EXPECT_NEAR(op_cp(w, t, "Relu"), 0.2, 1e-9);
}

TEST(ChromeImport, BareArrayWithoutClosingBracketAndFractionalMicroseconds) {
  const std::string text =
      "[{\"ph\":\"B\",\"name\":\"a\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":1.5},\n"
      " {\"ph\":\"E\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":2.25},\n";
  const Trace t = importers::parse_chrome(text, "cut.json");
  const std::vector<Segment> expected = {{0, 1500, 2250, P, "a"}};
  EXPECT_EQ(segments(t), expected);
  EXPECT_EQ(t.worker_name(0), "pid p/tid t");
}

TEST(ChromeImport, ActivityDefaultsAndMapFile) {
  EXPECT_EQ(importers::default_chrome_activity("WaitForData"), ActivityType::waiting);
  EXPECT_EQ(importers::default_chrome_activity("DeserializeBatch"), ActivityType::deserialization);
  EXPECT_EQ(importers::default_chrome_activity("serialize"), ActivityType::serialization);
  EXPECT_EQ(importers::default_chrome_activity("Memcpy HtoD"), ActivityType::io);
  EXPECT_EQ(importers::default_chrome_activity("Conv2D"), ActivityType::processing);
  const importers::ActivityMap map = importers::parse_activity_map(
      "[[rule]]\nname = \"mat*\"\nactivity = \"serialization\"\n"
      "[[rule]]\ncategory = \"io\"\nactivity = \"input\"\n",
      "map.toml");
  const Trace t = importers::parse_chrome(
      "[{\"ph\":\"X\",\"name\":\"matmul\",\"cat\":\"op\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1},"
      "{\"ph\":\"X\",\"name\":\"load\",\"cat\":\"io\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},"
      "{\"ph\":\"X\",\"name\":\"idle\",\"cat\":\"x\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1}]",
      "m.json", map);
  const std::vector<Segment> expected = {{0, 0, 1000, ActivityType::serialization, "matmul"},
                                         {0, 1000, 2000, ActivityType::input, "load"},
                                         {0, 2000, 3000, ActivityType::waiting, ""}};
  EXPECT_EQ(segments(t), expected);
}

TEST(ChromeImport, MapFileErrorsNameTheLine) {
  auto error = [](const std::string& text) {
    try {
      importers::parse_activity_map(text, "m.toml");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("[[rule]]\nname = \"a\"\nactivity = \"data_message\"\n").substr(0, 14),
            "m.toml: line 3");
  EXPECT_NE(error("[[rule]]\nname = \"a\"\n").find("needs an 'activity'"), std::string::npos);
  EXPECT_NE(error("[[rule]]\nactivity = \"io\"\n").find("at least one of"), std::string::npos);
  EXPECT_NE(error("[[rule]]\nnam = \"a\"\nactivity = \"io\"\n").find("line 2: unknown key"),
            std::string::npos);
  EXPECT_NE(error("rule = 3\n").find("array of tables"), std::string::npos);
  EXPECT_NE(error("[[rule]\n").find("m.toml: line 1"), std::string::npos);
}

TEST(ChromeImport, GlobMatching) {
  using importers::glob_match;
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*c", "abbbc"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("*Send*", "_HostSend"));
  EXPECT_FALSE(glob_match("*Send", "SendX"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
}

TEST(ChromeImport, BadInputIsAnErrorWithAPosition) {
  auto error = [](const std::string& text) {
    try {
      importers::parse_chrome(text, "bad.json");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("{\"traceEvents\": 3}"),
            "bad.json: top level: an object without a \"traceEvents\" array");
  EXPECT_EQ(error("[{\"ph\":\"X\",\"ts\":0,\"dur\":1},{\"ts\":1}]"),
            "bad.json: traceEvents[1]: missing \"ph\" (event phase)");
  EXPECT_EQ(error("[{\"ph\":\"X\",\"dur\":1}]"), "bad.json: traceEvents[0]: missing \"ts\"");
  EXPECT_EQ(error("[{\"ph\":\"X\",\"ts\":\"1\",\"dur\":1}]"),
            "bad.json: traceEvents[0]: \"ts\" must be a number of microseconds in range");
  EXPECT_EQ(error("[{\"ph\":\"X\",\"ts\":1e300,\"dur\":1}]"),
            "bad.json: traceEvents[0]: \"ts\" must be a number of microseconds in range");
  EXPECT_EQ(error("[1]"), "bad.json: traceEvents[0]: an event must be an object");
  EXPECT_EQ(error("{\"traceEvents\": [{\"ph\": \"X\",, }]}").substr(0, 19), "bad.json: byte 28: ");
  EXPECT_EQ(error("42"), "bad.json: top level: neither an array of events nor an object");
  // Recoverable problems are counted, not fatal.
  const Trace t = importers::parse_chrome(
      "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":0,\"dur\":-1},{\"ph\":\"X\",\"name\":\"b\",\"ts\":0},"
      "{\"ph\":\"B\",\"name\":\"c\",\"ts\":5},{\"ph\":\"t\",\"id\":1,\"ts\":1},"
      "{\"ph\":\"s\",\"id\":2,\"ts\":1},{\"ph\":\"f\",\"ts\":2}]",
      "r.json");
  EXPECT_EQ(diag(t, "chrome.negative_durations"), 1u);
  EXPECT_EQ(diag(t, "chrome.complete_without_dur"), 1u);
  EXPECT_EQ(diag(t, "chrome.unclosed_begins"), 1u);
  EXPECT_EQ(diag(t, "chrome.flows_without_start"), 1u);
  EXPECT_EQ(diag(t, "chrome.flows_without_end"), 1u);
  EXPECT_EQ(diag(t, "chrome.flows_without_id"), 1u);
  EXPECT_TRUE(t.events.empty());
}

TEST(ChromeImport, DetectedByContent) {
  EXPECT_EQ(importers::detect_importer(kData + "chrome-flows.json").name, "chrome");
  EXPECT_EQ(importers::detect_importer(kData + "chrome-tf-timeline.json").name, "chrome");
  EXPECT_EQ(importers::sniff_chrome("x.json", "  {\"traceEvents\": ["), 90);
  EXPECT_EQ(importers::sniff_chrome("x.txt", "{\"resourceSpans\": ["), 0);
}

// Generated input: many threads with deeply nested slices and flows; the timeline of
// every worker is contiguous while its slices are open, and the event count matches.
TEST(ChromeImport, GeneratedNestedSlicesKeepWorkersSequential) {
  std::string text = "[";
  int64_t expected_segments = 0;
  for (int tid = 0; tid < 8; ++tid)
    for (int k = 0; k < 200; ++k) {
      const int64_t base = k * 100;
      // outer [base, base+90], inner [base+10, base+50]: outer self time is split in 2.
      text += fmt::format(
          "{{\"ph\":\"X\",\"name\":\"outer\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":90}},"
          "{{\"ph\":\"X\",\"name\":\"inner\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":40}},",
          tid, base, tid, base + 10);
      expected_segments += 3;
      if (k > 0) ++expected_segments;  // idle (waiting) since the previous outer's end
      if (tid > 0)
        text += fmt::format(
            "{{\"ph\":\"s\",\"id\":{},\"pid\":1,\"tid\":{},\"ts\":{}}},"
            "{{\"ph\":\"f\",\"id\":{},\"pid\":1,\"tid\":0,\"ts\":{}}},",
            tid * 1000 + k, tid, base + 50, tid * 1000 + k, base + 60);
    }
  text.back() = ']';
  const Trace t = importers::parse_chrome(text, "gen.json");
  EXPECT_EQ(t.worker_names.size(), 8u);
  EXPECT_EQ(segments(t).size(), size_t(expected_segments));
  EXPECT_EQ(messages(t).size(), 7u * 200);
  EXPECT_TRUE(t.import_diagnostics.empty());
  const Pag pag = build_pag(t);
  EXPECT_EQ(pag.messages.size(), 7u * 200);
}

// Found by fuzz_chrome (ASan): locating the syntax error of a document nested thousands of
// arrays deep walked it recursively and overflowed the stack. Now an error at a byte.
TEST(ChromeImport, DeeplyNestedDamageIsAnErrorNotAStackOverflow) {
  const std::string nest = std::string(4000, '[') + std::string(3999, ']');
  for (const std::string key : {"traceEvents", "resourceSpans", "data"}) {
    const std::string text = "{\"" + key + "\":" + nest;
    try {
      if (key == "traceEvents") (void)importers::parse_chrome(text, "deep.json");
      if (key == "resourceSpans") (void)importers::parse_otlp(text, "deep.json");
      if (key == "data") (void)importers::parse_jaeger(text, "deep.json");
      ADD_FAILURE() << key << ": accepted";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("deep.json: byte "), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_import_chrome
