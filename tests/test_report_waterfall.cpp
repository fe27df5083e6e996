// The "Waterfall" of `snailtrail report` for span traces (report/waterfall.hpp): its data
// against a hand-computed 3-span trace and requests::critical_paths, the bounded pick of
// traces against nearest-rank percentiles computed by hand, and the command end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "importers/otel/otel_importer.hpp"
#include "process_util.hpp"
#include "report/waterfall.hpp"
#include "report/waterfall_percentiles.hpp"
#include "requests/critical_path.hpp"
#include "requests/folded.hpp"
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

// As `report` builds it (with the percentile views of its default options).
std::string waterfall_json(const std::string& path, size_t max_traces) {
  report::WaterfallBuilder b({path, max_traces, /*percentiles=*/true});
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

// ---- The Percentiles and Diff views: what `critical-path --percentile/--diff` print.

// Folded lines "stack n1 [n2]" (the numbers the last fields: a stack may hold spaces).
std::map<std::string, std::vector<int64_t>> folded(const std::string& text, size_t fields) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& line : testing::lines_of(text)) {
    if (line.empty()) continue;
    std::string rest = line;
    std::vector<int64_t> nums(fields);
    for (size_t k = fields; k-- > 0;) {
      const size_t sp = rest.rfind(' ');
      EXPECT_NE(sp, std::string::npos) << line;
      if (sp == std::string::npos) return out;
      nums[k] = std::stoll(rest.substr(sp + 1));
      rest.resize(sp);
    }
    EXPECT_TRUE(out.emplace(rest, nums).second) << "repeated stack " << rest;
  }
  return out;
}

// The page's views as {stack: numbers} maps, the stacks resolved.
struct Views {
  std::map<double, std::map<std::string, std::vector<int64_t>>> percentile;  // by p
  std::map<double, int64_t> traces, rows_total;
  std::map<std::pair<double, double>, std::map<std::string, std::vector<int64_t>>> diff;
  std::map<std::pair<double, double>, std::pair<int64_t, int64_t>> diff_traces;
};
Views views_of(simdjson::dom::element pc) {
  Views v;
  std::vector<std::string> stacks;
  for (simdjson::dom::element s : pc["stacks"].get_array()) stacks.push_back(str(s));
  for (simdjson::dom::element view : pc["views"].get_array()) {
    const double p = double(view["p"]);
    v.traces[p] = int64_t(view["traces"]);
    v.rows_total[p] = int64_t(view["rows_total"]);
    auto& rows = v.percentile[p];
    for (simdjson::dom::element r : view["rows"].get_array())
      rows[stacks.at(uint64_t(r.at(0)))] = {int64_t(r.at(1))};
  }
  for (simdjson::dom::element d : pc["diffs"].get_array()) {
    const std::pair<double, double> ab{double(d["a"]), double(d["b"])};
    v.diff_traces[ab] = {int64_t(d["traces_a"]), int64_t(d["traces_b"])};
    auto& rows = v.diff[ab];
    for (simdjson::dom::element r : d["rows"].get_array())
      rows[stacks.at(uint64_t(r.at(0)))] = {int64_t(r.at(1)), int64_t(r.at(2))};
  }
  return v;
}

// Three traces by hand (the critical path rule of kThreeSpans): a1 100 µs, api GET /x 60
// and cache get 40 under it; a2 60 µs, GET /y [0, 60] with get [10, 55]: GET /y 15, get
// 45; a3 30 µs, GET /z [0, 30] with query [5, 25]: GET /z 10, query 20. Nearest ranks of
// 3 traces: p99 +- 1 -> ranks 3..3 (a1), p50 +- 1 -> ranks 2..2 (a2), p90 +- 1 -> 3..3.
const std::vector<J> kHandTraces = {
    {"00000000000000a3", "0000000000000031", "", "GET /z", "p1", 5000, 30},
    {"00000000000000a3", "0000000000000032", "0000000000000031", "query", "p2", 5005, 20},
    kThreeSpans[0],
    kThreeSpans[1],
    kThreeSpans[2],
    {"00000000000000a2", "0000000000000021", "", "GET /y", "p1", 3000, 60},
    {"00000000000000a2", "0000000000000022", "0000000000000021", "get", "p3", 3010, 45},
};

TEST(ReportWaterfall, PercentileViewsMatchTheHandComputedTimes) {
  const std::string in = testing::write_temp("waterfall-pc-hand.json", jaeger(kHandTraces));
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(waterfall_json(in, 200));
  const Views v = views_of(d["percentiles"]);
  using Rows = std::map<std::string, std::vector<int64_t>>;
  const std::vector<double> ps = {0, 50, 90, 99};  // the defaults: pick 99, diff 50 99
  for (double p : ps) EXPECT_TRUE(v.percentile.count(p)) << p;
  EXPECT_EQ(v.percentile.size(), ps.size());
  EXPECT_EQ(v.diff.size(), ps.size() * (ps.size() - 1) / 2);
  EXPECT_EQ(v.percentile.at(0), (Rows{{"api:GET /x", {60}},
                                      {"api:GET /x;cache:get", {40}},
                                      {"api:GET /y", {15}},
                                      {"api:GET /y;cache:get", {45}},
                                      {"api:GET /z", {10}},
                                      {"api:GET /z;db:query", {20}}}));
  EXPECT_EQ(v.traces.at(0), 3);
  EXPECT_EQ(v.percentile.at(99), (Rows{{"api:GET /x", {60}}, {"api:GET /x;cache:get", {40}}}));
  EXPECT_EQ(v.traces.at(99), 1);
  EXPECT_EQ(v.percentile.at(50), (Rows{{"api:GET /y", {15}}, {"api:GET /y;cache:get", {45}}}));
  // The diff p50 -> p99: a2's times on the left, a1's on the right, 0 where absent.
  EXPECT_EQ(v.diff.at({50, 99}), (Rows{{"api:GET /x", {0, 60}},
                                       {"api:GET /x;cache:get", {0, 40}},
                                       {"api:GET /y", {15, 0}},
                                       {"api:GET /y;cache:get", {45, 0}}}));
  EXPECT_EQ(v.diff_traces.at({50, 99}), std::make_pair(int64_t{1}, int64_t{1}));
  // All traces against p99: the mean of three (a1 60 + a2 15 + a3 10 over 3 traces).
  EXPECT_EQ(v.diff.at({0, 99}).at("api:GET /x"), (std::vector<int64_t>{20, 60}));
  EXPECT_EQ(v.diff.at({0, 99}).at("api:GET /z;db:query"), (std::vector<int64_t>{7, 0}));
}

// Every embedded view equals what `critical-path --percentile P --format folded` and
// `--diff A B` print on the same file: stacks, numbers and how many rows.
TEST(ReportWaterfall, PercentileViewsEqualCriticalPathOutput) {
  // 40 traces of two roots, durations and child times varied: views differ per percentile.
  std::vector<J> spans;
  for (int i = 0; i < 40; ++i) {
    const std::string t = fmt::format("{:016x}", 0xe00 + i);
    const int64_t t0 = 10'000 * i, dur = 50 + (i * 37) % 400;
    const bool x = i % 3 != 0;
    spans.push_back(
        {t, fmt::format("{:016x}", 0x100 + 4 * i), "", x ? "GET /x" : "GET /y", "p1", t0, dur});
    const std::string root = spans.back().id;
    spans.push_back(
        {t, fmt::format("{:016x}", 0x101 + 4 * i), root, "query", "p2", t0 + 5, dur / 2 + (i % 7)});
    spans.push_back(
        {t, fmt::format("{:016x}", 0x102 + 4 * i), root, "get", "p3", t0 + dur / 3, dur / 2});
    if (i % 4 == 0)
      spans.push_back({t, fmt::format("{:016x}", 0x103 + 4 * i), spans[spans.size() - 2].id, "lock",
                       "p2", t0 + 6, dur / 4});
  }
  const std::string in = testing::write_temp("waterfall-pc-cli.json", jaeger(spans));
  const testing::CommandResult r =
      testing::run_binary("report " + in + " -f json -o - --percentile p95 --diff 10,p75");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(r.out);
  simdjson::dom::element pc = d["percentiles"];
  EXPECT_EQ(double(pc["pick"]), 95);
  EXPECT_EQ(double(pc["diff"].at(0)), 10);
  EXPECT_EQ(double(pc["diff"].at(1)), 75);
  const Views v = views_of(pc);
  ASSERT_EQ(v.percentile.size(), 7u);  // all, 10, 50, 75, 90, 95, 99
  for (const auto& [p, rows] : v.percentile) {
    const testing::CommandResult c =
        testing::run_binary(fmt::format("critical-path {} --format folded --percentile {}", in, p));
    ASSERT_EQ(c.code, 0) << c.out;
    const auto want = folded(c.out, 1);
    EXPECT_EQ(rows, want) << "p" << p;
    EXPECT_EQ(v.rows_total.at(p), static_cast<int64_t>(want.size())) << p;
    EXPECT_FALSE(rows.empty()) << p;
  }
  ASSERT_EQ(v.diff.size(), 21u);
  for (const auto& [ab, rows] : v.diff) {
    const testing::CommandResult c =
        testing::run_binary(fmt::format("critical-path {} --diff {} {}", in, ab.first, ab.second));
    ASSERT_EQ(c.code, 0) << c.out;
    EXPECT_EQ(rows, folded(c.out, 2)) << ab.first << " " << ab.second;
  }
  // The same options written as critical-path takes them give the same page data.
  const testing::CommandResult same =
      testing::run_binary("report " + in + " -f json -o - --percentile 95 --diff p10 75");
  EXPECT_EQ(same.out, r.out);
}

// Over max_rows a view keeps its most critical rows and counts the rest; a diff keeps the
// largest changes either way.
TEST(ReportWaterfall, PercentileViewsAreBounded) {
  const std::string in = testing::write_temp("waterfall-pc-cap.json", jaeger(kHandTraces));
  requests::PathCollection all;
  importers::stream_spans(in, "auto", 1, [&](size_t, const importers::SpanSet& set) {
    std::vector<uint32_t> parent;
    const auto paths = requests::critical_paths(set, &parent);
    all.add(requests::summarize_paths(set, paths, parent, true));
  });
  report::PercentileViewOptions opt;
  opt.max_rows = 2;
  simdjson::dom::parser parser;
  simdjson::dom::element pc = parser.parse(report::percentiles_json(all, opt));
  const Views v = views_of(pc);
  using Rows = std::map<std::string, std::vector<int64_t>>;
  // All traces: 60 (GET /x), 45 (GET /y;get) kept; 40 + 20 + 15 + 10 left out.
  EXPECT_EQ(v.percentile.at(0), (Rows{{"api:GET /x", {60}}, {"api:GET /y;cache:get", {45}}}));
  EXPECT_EQ(v.rows_total.at(0), 6);
  EXPECT_EQ(int64_t(pc["views"].at(0)["left_out_us"]), 85);
  // p50 -> p99: changes 60, 40, -15, -45: the two largest in size are 60 and -45.
  EXPECT_EQ(v.diff.at({50, 99}),
            (Rows{{"api:GET /x", {0, 60}}, {"api:GET /y;cache:get", {45, 0}}}));
}

}  // namespace
}  // namespace snailtrail::test_report_waterfall
