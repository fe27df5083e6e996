// The "Waterfall" of `snailtrail report` for span traces (report/waterfall.hpp): its data
// against a hand-computed 3-span trace and requests::critical_paths, the bounded pick of
// traces against nearest-rank percentiles computed by hand, and the command end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "importers/otel/otel_importer.hpp"
#include "process_util.hpp"
#include "report/waterfall.hpp"
#include "requests/critical_path.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_report_waterfall {
namespace {

// A Jaeger span: times in µs, as Jaeger writes them.
struct J {
  std::string trace, id, parent, op, process;
  int64_t start_us, duration_us;
};

std::string jaeger(const std::vector<J>& spans) {
  std::string traces;
  // One `data` entry per trace, in order of first appearance.
  std::vector<std::string> order;
  for (const J& s : spans)
    if (std::find(order.begin(), order.end(), s.trace) == order.end()) order.push_back(s.trace);
  for (const std::string& t : order) {
    std::string list;
    for (const J& s : spans) {
      if (s.trace != t) continue;
      if (!list.empty()) list += ",";
      list += "{\"traceID\":\"" + s.trace + "\",\"spanID\":\"" + s.id + "\",\"operationName\":\"" +
              s.op + "\",\"references\":[";
      if (!s.parent.empty())
        list += "{\"refType\":\"CHILD_OF\",\"traceID\":\"" + s.trace + "\",\"spanID\":\"" +
                s.parent + "\"}";
      list += "],\"startTime\":" + std::to_string(s.start_us) +
              ",\"duration\":" + std::to_string(s.duration_us) + ",\"processID\":\"" + s.process +
              "\"}";
    }
    if (!traces.empty()) traces += ",";
    traces += "{\"traceID\":\"" + t + "\",\"spans\":[" + list +
              "],\"processes\":{\"p1\":{\"serviceName\":\"api\"},\"p2\":{\"serviceName\":\"db\"},"
              "\"p3\":{\"serviceName\":\"cache\"}}}";
  }
  return "{\"data\":[" + traces + "]}";
}

// A: api GET /x [1000, 1100] µs; B: db query [1010, 1050]; C: cache get [1040, 1080].
// By hand, walking back from A's end: A runs critical in [1080, 1100) after C, its last
// child to end; C in [1040, 1080); B ends at 1050, after C's start, so it is not on the
// path; A again in [1000, 1040). In time order: A [0, 40), C [40, 80), A [80, 100) µs
// from the trace's start. Critical: A 60, B 0, C 40 µs. Self: A 100 - |[10, 80)| = 30,
// B 40, C 40 µs.
const std::vector<J> kThreeSpans = {
    {"00000000000000a1", "0000000000000001", "", "GET /x", "p1", 1000, 100},
    {"00000000000000a1", "0000000000000002", "0000000000000001", "query", "p2", 1010, 40},
    {"00000000000000a1", "0000000000000003", "0000000000000001", "get", "p3", 1040, 40},
};

std::string waterfall_json(const std::string& path, size_t max_traces) {
  report::WaterfallBuilder b({path, max_traces});
  importers::stream_spans(path, "auto", 1,
                          [&](size_t unit, const importers::SpanSet& set) { b.add(unit, set); });
  return b.json();
}

std::string str(simdjson::dom::element e) {
  return std::string(std::string_view(e));
}

TEST(ReportWaterfall, ThreeSpanTraceMatchesTheHandComputedPath) {
  const std::string path = testing::write_temp("waterfall-3.json", jaeger(kThreeSpans));
  const std::string json = waterfall_json(path, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(json);
  EXPECT_EQ(int64_t(d["traces_total"]), 1);
  EXPECT_EQ(int64_t(d["spans_total"]), 3);
  EXPECT_EQ(int64_t(d["left_out"]), 0);
  simdjson::dom::element t = d["traces"].at(0);
  simdjson::dom::array names = d["names"];
  auto name = [&](simdjson::dom::element i) { return str(names.at(size_t(int64_t(i)))); };
  EXPECT_EQ(str(t["id"]), "00000000000000a1");
  EXPECT_EQ(int64_t(t["start_ns"]), 1000000);
  EXPECT_EQ(int64_t(t["duration_ns"]), 100000);
  EXPECT_EQ(int64_t(t["spans"]), 3);
  EXPECT_EQ(name(t["root"].at(0)), "api");
  EXPECT_EQ(name(t["root"].at(1)), "GET /x");
  // Rows depth first, children by start: A, B, C.
  struct Want {
    int64_t parent, depth;
    std::string service, operation;
    int64_t start, duration, self, critical;
    std::string id;
  };
  const std::vector<Want> rows = {
      {-1, 0, "api", "GET /x", 0, 100000, 30000, 60000, "0000000000000001"},
      {0, 1, "db", "query", 10000, 40000, 40000, 0, "0000000000000002"},
      {0, 1, "cache", "get", 40000, 40000, 40000, 40000, "0000000000000003"},
  };
  simdjson::dom::array got = t["rows"];
  ASSERT_EQ(got.size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    simdjson::dom::element x = got.at(r);
    EXPECT_EQ(int64_t(x.at(0)), rows[r].parent) << r;
    EXPECT_EQ(int64_t(x.at(1)), rows[r].depth) << r;
    EXPECT_EQ(name(x.at(2)), rows[r].service) << r;
    EXPECT_EQ(name(x.at(3)), rows[r].operation) << r;
    EXPECT_EQ(int64_t(x.at(4)), rows[r].start) << r;
    EXPECT_EQ(int64_t(x.at(5)), rows[r].duration) << r;
    EXPECT_EQ(int64_t(x.at(6)), rows[r].self) << r;
    EXPECT_EQ(int64_t(x.at(7)), rows[r].critical) << r;
    EXPECT_EQ(str(x.at(9)), rows[r].id) << r;
  }
  // The critical sections in time order: [row, start, end].
  const std::vector<std::array<int64_t, 3>> sections = {
      {0, 0, 40000}, {2, 40000, 80000}, {0, 80000, 100000}};
  simdjson::dom::array p = t["path"];
  ASSERT_EQ(p.size(), sections.size());
  for (size_t k = 0; k < sections.size(); ++k)
    for (size_t f = 0; f < 3; ++f) EXPECT_EQ(int64_t(p.at(k).at(f)), sections[k][f]) << k;

  // The same numbers as critical-path's: per span its critical time, the path's duration.
  const importers::SpanSet set = importers::read_spans(path);
  const std::vector<requests::CriticalPath> paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].duration_ns, int64_t(t["duration_ns"]));
  ASSERT_EQ(paths[0].path.size(), 2u);  // A and C
  for (const requests::PathStep& s : paths[0].path) {
    const std::string id = set.ids.text(set.spans[s.span].id);
    for (size_t r = 0; r < rows.size(); ++r)
      if (rows[r].id == id) {
        EXPECT_EQ(s.critical_ns, rows[r].critical) << id;
      }
  }
}

// Segments, when asked for, add up per span to the path's critical times, and to the
// trace's duration: on a trace with a zero-length child and two roots.
TEST(ReportWaterfall, SegmentsAddUpToTheCriticalTimes) {
  const std::vector<J> spans = {
      {"00000000000000b1", "0000000000000001", "", "r1", "p1", 0, 50},
      {"00000000000000b1", "0000000000000002", "0000000000000001", "z", "p2", 20, 0},
      {"00000000000000b1", "0000000000000003", "0000000000000001", "c", "p3", 5, 10},
      {"00000000000000b1", "0000000000000004", "", "r2", "p1", 60, 30},
      {"00000000000000b1", "0000000000000005", "0000000000000004", "d", "p2", 70, 30},
  };
  const std::string path = testing::write_temp("waterfall-segs.json", jaeger(spans));
  const importers::SpanSet set = importers::read_spans(path);
  const std::vector<requests::CriticalPath> paths = requests::critical_paths(set, nullptr, true);
  ASSERT_EQ(paths.size(), 1u);
  const requests::CriticalPath& p = paths[0];
  // By hand: r1 [0,5), c [5,15), r1 [15,50) (the zero-length z splits nothing); r2
  // [60,70), d [70,90) (d is clipped to r2's end at 90). In ns.
  const std::vector<std::array<int64_t, 3>> want = {
      {0, 0, 5000}, {2, 5000, 15000}, {0, 15000, 50000}, {3, 60000, 70000}, {4, 70000, 90000}};
  ASSERT_EQ(p.segments.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(p.segments[k].span, want[k][0]) << k;
    EXPECT_EQ(p.segments[k].start_ns, want[k][1]) << k;
    EXPECT_EQ(p.segments[k].end_ns, want[k][2]) << k;
  }
  int64_t sum = 0;
  for (const requests::PathSegment& s : p.segments) sum += s.end_ns - s.start_ns;
  EXPECT_EQ(sum, p.duration_ns);
  for (const requests::PathStep& step : p.path) {
    int64_t per_span = 0;
    for (const requests::PathSegment& s : p.segments)
      if (s.span == step.span) per_span += s.end_ns - s.start_ns;
    EXPECT_EQ(per_span, step.critical_ns) << step.span;
  }
  // Without asking, no segments.
  EXPECT_TRUE(requests::critical_paths(set)[0].segments.empty());
}

// 20 one-span traces of 1..20 ms, at most 5 embedded. Nearest rank (ascending, 1-based):
// p99 -> rank 20 (20 ms), p90 -> rank 18 (18 ms), p50 -> rank 10 (10 ms); the slowest
// fill the rest: 19 and 17 ms. Listed slowest first.
TEST(ReportWaterfall, PicksTheSlowestAndThePercentiles) {
  std::vector<J> spans;
  const int64_t ms[] = {7, 3, 20, 12, 1, 15, 9, 18, 5, 11, 2, 16, 8, 19, 4, 13, 6, 17, 10, 14};
  for (int i = 0; i < 20; ++i)
    spans.push_back({fmt::format("{:016x}", 0xc00 + i), fmt::format("{:016x}", 0xd00 + i), "", "op",
                     "p1", 1000 * i, 1000 * ms[i]});
  const std::string path = testing::write_temp("waterfall-picks.json", jaeger(spans));
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(waterfall_json(path, 5));
  EXPECT_EQ(int64_t(d["traces_total"]), 20);
  EXPECT_EQ(int64_t(d["traces_shown"]), 5);
  EXPECT_EQ(int64_t(d["left_out"]), 15);
  const std::vector<std::pair<int64_t, std::string>> want = {
      {20, "p99"}, {19, ""}, {18, "p90"}, {17, ""}, {10, "p50"}};
  const std::vector<int64_t> ranks = {1, 2, 3, 4, 11};
  simdjson::dom::array traces = d["traces"];
  ASSERT_EQ(traces.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(int64_t(traces.at(k)["duration_ns"]), want[k].first * 1000000) << k;
    EXPECT_EQ(str(traces.at(k)["pick"]), want[k].second) << k;
    EXPECT_EQ(int64_t(traces.at(k)["rank"]), ranks[k]) << k;
  }
}

// The command: span inputs get the waterfall page, self-contained; --view dataflow the
// PAG views; bad input a clear error.
TEST(ReportWaterfall, CommandWritesTheWaterfallForSpanTraces) {
  const std::string in = testing::write_temp("waterfall-cli.json", jaeger(kThreeSpans));
  const std::string html = testing::write_temp("waterfall-cli.html", "");
  const testing::CommandResult r = testing::run_binary("report " + in + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = testing::slurp(html);
  EXPECT_NE(page.find("<h2>Waterfall"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_DATA*/"), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_JS*/"), std::string::npos);
  EXPECT_NE(page.find("\"path\":[[0,0,40000],[2,40000,80000],[0,80000,100000]]"),
            std::string::npos);
  // No external resources: nothing to fetch.
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);

  const testing::CommandResult j = testing::run_binary("report " + in + " -f json -o -");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"view\":\"waterfall\""), std::string::npos);
  EXPECT_EQ(j.out, waterfall_json(in, 200));

  const testing::CommandResult flow =
      testing::run_binary("report " + in + " --view dataflow -f json -o - --no-progress");
  ASSERT_EQ(flow.code, 0) << flow.out;
  EXPECT_NE(flow.out.find("\"timelines\""), std::string::npos);

  const std::string bad = testing::write_temp("waterfall-bad.json", "{\"data\": [{\"traceID\": ");
  const testing::CommandResult e = testing::run_binary("report " + bad + " --view waterfall -o -");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("waterfall-bad.json"), std::string::npos) << e.out;
}

// A file cut inside its second trace (still being written): the first trace is drawn, the
// cut is said on stderr and kept in the data, which the page shows.
TEST(ReportWaterfall, CutFileIsSaidNotHidden) {
  std::vector<J> spans = kThreeSpans;
  spans.push_back({"00000000000000a2", "0000000000000011", "", "GET /y", "p1", 2000, 50});
  const std::string full = jaeger(spans);
  const std::string cut = full.substr(0, full.find("0000000000000011") + 10);
  const std::string in = testing::write_temp("waterfall-cut.json", cut);
  const testing::CommandResult r = testing::run_binary("report " + in + " -f json -o -");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the input ends inside a record"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"import_diagnostics\":{\"jaeger.truncated_file\":1}"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"traces_total\":1,"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace snailtrail::test_report_waterfall
