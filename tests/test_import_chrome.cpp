// Chrome Trace Event Format importer: hand-made fixtures in tests/data (chrome-*.json),
// the PAG shape they produce and CP values computed by hand (docs/IMPORTERS.md); and
// the export to that format (`convert --to chrome`), read back by the importer.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/activity_map.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "output/chrome_export.hpp"
#include "process_util.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"
#include "trace_builder.hpp"

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

// ---- Export: `convert --to chrome` (output/chrome_export.hpp) ----

std::string export_chrome(const Trace& t, ChromeExportStats* stats = nullptr,
                          AnalysisOptions opt = {}) {
  std::string out;
  const ChromeExportStats st =
      write_chrome_trace(t, opt, [&](std::string_view s) { out.append(s); });
  if (stats) *stats = st;
  return out;
}

// The export's events as parsed back with simdjson: slices per pid, flows by id.
struct Exported {
  struct Slice {
    uint64_t pid;
    double ts, dur;  // us
    std::string name, cat;
    double critical_ns;
  };
  std::vector<Slice> slices;
  std::map<uint64_t, std::string> process_names;
  struct Flow {
    int s = 0, f = 0;
    uint64_t from = 0, to = 0;
    double send = 0, recv = 0;
    std::string name;
  };
  std::map<uint64_t, Flow> flows;
  int64_t origin = 0;
};

Exported parse_export(const std::string& json) {
  Exported r;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  r.origin = int64_t(doc["otherData"]["time_origin_ns"]);
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"];
    const uint64_t pid = e["pid"];
    EXPECT_EQ(uint64_t(e["tid"]), pid);
    if (ph == "M") {
      if (std::string_view(e["name"]) == "process_name")
        r.process_names[pid] = std::string(std::string_view(e["args"]["name"]));
    } else if (ph == "X") {
      r.slices.push_back(
          {pid, double(e["ts"]), double(e["dur"]), std::string(std::string_view(e["name"])),
           std::string(std::string_view(e["cat"])), double(e["args"]["critical_ns"])});
    } else if (ph == "s" || ph == "f") {
      Exported::Flow& f = r.flows[uint64_t(e["id"])];
      f.name = std::string(std::string_view(e["name"]));
      if (ph == "s") {
        ++f.s;
        f.from = pid;
        f.send = double(e["ts"]);
      } else {
        ++f.f;
        f.to = pid;
        f.recv = double(e["ts"]);
        EXPECT_EQ(std::string_view(e["bp"]), "e");
      }
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  return r;
}

// Worker 0: A [0, 200123) with a send at 150000 inside it, then D to 300000; worker 1:
// B [0, 100000), waiting to 200123, C to 300000, receiving at 200123. Times from 10^12 ns.
Trace export_fixture() {
  constexpr int64_t t0 = 1'000'000'000'000;
  snailtrail::testing::TraceBuilder b;
  b.activity(0, P, t0, t0 + 200'123, 1)
      .activity(0, P, t0 + 200'123, t0 + 300'000, 2)
      .activity(1, P, t0, t0 + 100'000, 3)
      .activity(1, ActivityType::waiting, t0 + 100'000, t0 + 200'123)
      .activity(1, P, t0 + 200'123, t0 + 300'000, 4)
      .message(0, t0 + 150'000, 1, t0 + 200'123, 7);
  Trace t = b.build();
  t.worker_names = {{0, "w0"}, {1, "w1"}};
  t.operator_names = {{1, "A"}, {2, "D"}, {3, "B"}, {4, "C"}};
  return t;
}

TEST(ChromeExport, SlicesFlowsAndCriticalPathByHand) {
  const Trace t = export_fixture();
  ChromeExportStats st;
  const Exported ex = parse_export(export_chrome(t, &st));
  EXPECT_EQ(ex.origin, 1'000'000'000'000);
  EXPECT_EQ(ex.process_names, (std::map<uint64_t, std::string>{{0, "w0"}, {1, "w1"}}));
  // By hand: 5 activities (A is one slice, though the send cuts it into two edges), one
  // message. One window: the transient paths are A-D and A-msg-C (B only leads into
  // waiting): A, D, C and the message are critical, B and waiting are not. Critical ns:
  // c(e) w(e) / N with N = 2: A's part before the send is on both paths (150000), after it
  // on A-D only (50123 / 2); D and C 99877 / 2 each.
  ASSERT_EQ(ex.slices.size(), 5u);
  struct Want {
    uint64_t pid;
    double ts, dur;
    const char* name;
    const char* cat;
    double critical_ns;
  };
  const Want want[] = {{0, 0, 200.123, "A", "processing,critical", 150000 + 50123 / 2.0},
                       {0, 200.123, 99.877, "D", "processing,critical", 99877 / 2.0},
                       {1, 0, 100, "B", "processing", 0},
                       {1, 100, 100.123, "waiting", "waiting", 0},
                       {1, 200.123, 99.877, "C", "processing,critical", 99877 / 2.0}};
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(ex.slices[i].pid, want[i].pid);
    EXPECT_DOUBLE_EQ(ex.slices[i].ts, want[i].ts);
    EXPECT_DOUBLE_EQ(ex.slices[i].dur, want[i].dur);
    EXPECT_EQ(ex.slices[i].name, want[i].name);
    EXPECT_EQ(ex.slices[i].cat, want[i].cat);
    EXPECT_NEAR(ex.slices[i].critical_ns, want[i].critical_ns, 1.0);  // written as integers
  }
  ASSERT_EQ(ex.flows.size(), 1u);
  const Exported::Flow& f = ex.flows.begin()->second;
  EXPECT_EQ(f.s, 1);
  EXPECT_EQ(f.f, 1);
  EXPECT_EQ(f.from, 0u);
  EXPECT_EQ(f.to, 1u);
  EXPECT_DOUBLE_EQ(f.send, 150.0);
  EXPECT_DOUBLE_EQ(f.recv, 200.123);
  EXPECT_EQ(f.name, "critical");
  EXPECT_EQ(st.slices, 5u);
  EXPECT_EQ(st.critical_slices, 3u);
  EXPECT_EQ(st.flows, 1u);
  EXPECT_EQ(st.critical_flows, 1u);
  EXPECT_EQ(st.windows, 1u);
}

TEST(ChromeExport, ChromeImporterReadsBackTheSameActivities) {
  // Three workers, each a chain of activities of varying length, messages from inside
  // one worker's activity to the start of another's; counted here independently.
  snailtrail::testing::TraceBuilder b;
  std::map<uint32_t, std::vector<int64_t>> durations;  // per worker, in order
  std::map<uint32_t, std::vector<int64_t>> starts;
  uint64_t activities = 0;
  for (uint32_t w = 0; w < 3; ++w) {
    int64_t ts = 5'000'000'007;
    for (int k = 0; k < 12; ++k) {
      const int64_t d = 200'001 + 37'003 * ((k * 7 + w * 3) % 5);
      b.activity(w, k % 4 == 3 ? ActivityType::serialization : P, ts, ts + d, k % 3);
      durations[w].push_back(d);
      starts[w].push_back(ts);
      ts += d;
      ++activities;
    }
  }
  uint64_t sent = 0;
  for (int k = 1; k < 11; ++k) {
    const uint32_t from = k % 3, to = (k + 1) % 3;
    const int64_t send = starts[from][k] + 1'000, recv = starts[to][k + 1];
    if (recv <= send) continue;
    b.message(from, send, to, recv, 100 + k);
    ++sent;
  }
  Trace t = b.build();
  ChromeExportStats st;
  const std::string json = export_chrome(t, &st);
  EXPECT_EQ(st.slices, activities);
  EXPECT_EQ(st.flows, sent);
  const Exported ex = parse_export(json);
  EXPECT_EQ(ex.slices.size(), activities);
  EXPECT_EQ(ex.flows.size(), sent);
  for (const auto& [id, f] : ex.flows) {  // every "s" has its "f", in time order
    EXPECT_EQ(f.s, 1) << id;
    EXPECT_EQ(f.f, 1) << id;
    EXPECT_LE(f.send, f.recv) << id;
  }
  std::map<uint64_t, size_t> per_pid;
  for (const auto& s : ex.slices) ++per_pid[s.pid];
  for (uint32_t w = 0; w < 3; ++w) EXPECT_EQ(per_pid[w], durations[w].size()) << w;

  // Round trip: the chrome importer reads our output back into the same activities
  // (per worker, count and ns durations) and the same messages.
  const Trace back = importers::parse_chrome(json, "export.json");
  const std::vector<Segment> segs = segments(back);
  std::map<std::string, std::vector<int64_t>> got;
  for (const Segment& s : segs) got[back.worker_name(s.worker)].push_back(s.end - s.start);
  ASSERT_EQ(got.size(), 3u);
  for (uint32_t w = 0; w < 3; ++w) EXPECT_EQ(got[fmt::format("{}/{}", w, w)], durations[w]) << w;
  const std::vector<Msg> msgs = messages(back);
  EXPECT_EQ(msgs.size(), sent);
  for (const Msg& m : msgs) EXPECT_EQ(m.type, DM);
  EXPECT_EQ(diag(back, "chrome.flows_without_end"), 0u);
  EXPECT_EQ(diag(back, "chrome.flows_without_start"), 0u);
}

class ChromeExportCli : public snailtrail::testing::TempDirTest {
 protected:
  ChromeExportCli() : TempDirTest("chrome-export") {}
};

TEST_F(ChromeExportCli, ConvertToChromeThenImportIt) {
  write_trace(export_fixture(), path("t.jsonl").string());
  const std::string out = path("t.json").string();
  auto r = snailtrail::testing::run_binary("convert " + path("t.jsonl").string() + " " + out +
                                           " --to chrome --window whole");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(Trace Event Format): 5 slices (3 on a critical path), 1 messages as "
                       "flows (1 critical), CP over 1 windows (--window whole)"),
            std::string::npos)
      << r.out;
  const Trace back = importers::import_trace(out);  // detected as chrome by content
  EXPECT_EQ(segments(back).size(), 5u);
  EXPECT_EQ(messages(back).size(), 1u);
  r = snailtrail::testing::run_binary("convert " + path("t.jsonl").string() + " " + out +
                                      " --to perfetto");
  EXPECT_NE(r.code, 0);
  r = snailtrail::testing::run_binary("convert " + path("t.jsonl").string() + " " +
                                      path("t2.jsonl").string() + " --window 1s");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("only matter with --to chrome"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace snailtrail::test_import_chrome
