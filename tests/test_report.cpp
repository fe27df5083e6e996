// The report's reducer (src/report): downsampling keeps totals, top-N + "other" sums, sizes
// stay bounded, timelines keep the most critical edges; the page embeds data safely.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "report/report.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_report {
namespace {

using report::ReportBuilder;
using report::ReportOptions;
using report::SeriesPoint;

// Names for workers without metadata: ids 0, 1, ... or the given ids, named by their id.
struct FakeNames {
  Trace trace;
  Pag pag;
  Names names;
  explicit FakeNames(uint32_t workers) : names(trace, with_workers(pag, workers)) {}
  explicit FakeNames(std::vector<uint32_t> ids) : names(trace, with_ids(pag, std::move(ids))) {}
  static const Pag& with_workers(Pag& pag, uint32_t n) {
    pag.worker_ids.resize(n);
    std::iota(pag.worker_ids.begin(), pag.worker_ids.end(), 0u);
    return pag;
  }
  static const Pag& with_ids(Pag& pag, std::vector<uint32_t> ids) {
    pag.worker_ids = std::move(ids);
    return pag;
  }
};

// Window k of width 1000 ns, with paths over its whole length: processing CP k/10, the rest
// data_message; conventional processing 0.5. Workers: CP {0.5, 0.3, 0.2}, conventional
// {0.2, 0.3, 0.5}. Operators 7 (CP 0.4, conv 0.1) and 9 (CP 0.1, conv 0.4).
WindowSummary window(uint64_t k) {
  WindowSummary w;
  w.index = k;
  w.window = {static_cast<int64_t>(k) * 1000, static_cast<int64_t>(k + 1) * 1000, false};
  w.span_start = w.window.start;
  w.span_end = w.window.end;
  w.cp_ns = w.span_end - w.span_start;  // no idle interval
  w.has_paths = true;
  w.events = 10;
  w.cp.activity[static_cast<int>(ActivityType::processing)] = static_cast<double>(k) / 10;
  w.cp.activity[static_cast<int>(ActivityType::data_message)] = 1 - static_cast<double>(k) / 10;
  w.conventional.activity[static_cast<int>(ActivityType::processing)] = 0.5;
  w.conventional.activity[static_cast<int>(ActivityType::waiting)] = 0.5;
  w.cp.worker = {0.5, 0.3, 0.2};
  w.conventional.worker = {0.2, 0.3, 0.5};
  w.cp.op = {{7, 0.4}, {9, 0.1}};
  w.conventional.op = {{7, 0.1}, {9, 0.4}};
  w.cp.communication = {{0, 1, 0.25}};
  w.conventional.communication = {{0, 1, 0.125}, {1, 2, 0.5}};
  return w;
}

TEST(ReportReducer, KeepLargestSumsTheRestIntoOther) {
  // cp + conv: id 0: 0.6, id 1: 0.2, id 2: 0.05, id 3: 0.5 -> keep ids 0 and 3.
  std::vector<SeriesPoint::Group> g = {{0, 0.5, 0.1}, {1, 0.1, 0.1}, {2, 0.05, 0}, {3, 0.2, 0.3}};
  double ocp = 0, oconv = 0;
  report::keep_largest(g, 2, ocp, oconv);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].id, 0u);  // sorted by id
  EXPECT_EQ(g[1].id, 3u);
  EXPECT_DOUBLE_EQ(ocp, 0.15);  // 0.1 + 0.05
  EXPECT_DOUBLE_EQ(oconv, 0.1);
  // Fewer groups than kept: unchanged.
  report::keep_largest(g, 5, ocp, oconv);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_DOUBLE_EQ(ocp, 0.15);
}

TEST(ReportReducer, MergePointsSumsEverythingAndKeepsTotals) {
  SeriesPoint a, b;
  a.first_window = 0, a.last_window = 0, a.start = 0, a.end = 10, a.windows = 1, a.events = 3;
  b.first_window = 1, b.last_window = 1, b.start = 10, b.end = 20, b.windows = 1, b.events = 4;
  a.cp_weight = b.cp_weight = a.conv_weight = b.conv_weight = 10;
  a.cp[0] = 2, b.cp[0] = 3;
  a.workers = {{1, 1.0, 0.0}, {4, 0.5, 0.5}};
  b.workers = {{1, 1.0, 1.0}, {2, 0.25, 0.0}, {4, 0.0, 0.1}};
  a.other_worker_cp = 0.125;
  // Merged: id 1: (2, 1) = 3, id 2: (0.25, 0) = 0.25, id 4: (0.5, 0.6) = 1.1; keep 2 ->
  // ids 1 and 4, other = 0.125 + 0.25 cp.
  report::merge_points(a, b, 2);
  EXPECT_EQ(a.last_window, 1u);
  EXPECT_EQ(a.end, 20);
  EXPECT_EQ(a.windows, 2u);
  EXPECT_EQ(a.events, 7u);
  EXPECT_EQ(a.cp_weight, 20);
  EXPECT_DOUBLE_EQ(a.cp[0], 5);
  ASSERT_EQ(a.workers.size(), 2u);
  EXPECT_EQ(a.workers[0].id, 1u);
  EXPECT_DOUBLE_EQ(a.workers[0].cp, 2);
  EXPECT_DOUBLE_EQ(a.workers[0].conv, 1);
  EXPECT_EQ(a.workers[1].id, 4u);
  EXPECT_DOUBLE_EQ(a.workers[1].conv, 0.6);
  EXPECT_DOUBLE_EQ(a.other_worker_cp, 0.375);
}

TEST(ReportReducer, DownsamplingMergesPairsAndKeepsTotals) {
  FakeNames n(3);
  ReportOptions opt;
  opt.max_points = 4;
  opt.bucket_groups = 2;
  ReportBuilder b(opt);
  for (uint64_t k = 0; k < 10; ++k) {
    b.add(window(k), n.names);
    EXPECT_LE(b.points().size(), 4u);
  }
  // 4 points, the 5th merges pairs (2 windows per point); windows 6-7 fill a 4th point,
  // window 8 merges again (4 per point): [0-3] [4-7] [8-9].
  ASSERT_EQ(b.points().size(), 3u);
  EXPECT_EQ(b.bucket_windows(), 4u);
  const auto& p = b.points();
  EXPECT_EQ(p[0].first_window, 0u);
  EXPECT_EQ(p[0].last_window, 3u);
  EXPECT_EQ(p[1].first_window, 4u);
  EXPECT_EQ(p[1].last_window, 7u);
  EXPECT_EQ(p[2].first_window, 8u);
  EXPECT_EQ(p[2].last_window, 9u);
  EXPECT_EQ(p[2].start, 8000);
  EXPECT_EQ(p[2].end, 10000);
  const int proc = static_cast<int>(ActivityType::processing);
  // Mean processing CP of windows 0-3: (0 + 0.1 + 0.2 + 0.3) / 4 = 0.15; of 8-9: 0.85.
  EXPECT_NEAR(p[0].cp[proc] / static_cast<double>(p[0].cp_weight), 0.15, 1e-12);
  EXPECT_NEAR(p[2].cp[proc] / static_cast<double>(p[2].cp_weight), 0.85, 1e-12);
  // Totals over points equal the sums over windows: sum_k k/10 * 1000 = 4500.
  double total = 0, events = 0;
  for (const SeriesPoint& q : p) {
    total += q.cp[proc];
    events += static_cast<double>(q.events);
  }
  EXPECT_NEAR(total, 4500, 1e-9);
  EXPECT_EQ(events, 100);
  // Workers: cp + conv = 0.7, 0.6, 0.7 -> workers 0 and 2 kept; worker 1 (CP 0.3, conv 0.3)
  // is "other" in every point.
  for (const SeriesPoint& q : p) {
    ASSERT_EQ(q.workers.size(), 2u);
    EXPECT_EQ(q.workers[0].id, 0u);
    EXPECT_EQ(q.workers[1].id, 2u);
    const double w = static_cast<double>(q.cp_weight);
    EXPECT_NEAR(q.workers[0].cp / w, 0.5, 1e-12);
    EXPECT_NEAR(q.other_worker_cp / w, 0.3, 1e-12);
    EXPECT_NEAR(q.other_worker_conv / static_cast<double>(q.conv_weight), 0.3, 1e-12);
    // Operators fit: nothing in "other".
    ASSERT_EQ(q.ops.size(), 2u);
    EXPECT_EQ(q.ops[0].id, 7u);
    EXPECT_NEAR(q.ops[0].cp / w, 0.4, 1e-12);
    EXPECT_EQ(q.other_op_cp, 0);
  }
}

TEST(ReportReducer, SizesStayBoundedForManyWindows) {
  FakeNames n(3);
  ReportOptions opt;
  opt.max_points = 64;
  ReportBuilder b(opt);
  for (uint64_t k = 0; k < 10000; ++k) b.add(window(k % 10), n.names);
  // 10000 windows in points of 256 windows (64 * 256 >= 10000 > 64 * 128).
  EXPECT_EQ(b.bucket_windows(), 256u);
  EXPECT_EQ(b.points().size(), 40u);  // ceil(10000 / 256)
  EXPECT_EQ(b.aggregate().windows, 10000u);
  const std::string json = b.json();
  EXPECT_LT(json.size(), 64u * 1024);
}

TEST(ReportReducer, JsonHoldsMeansOtherAndHeatmap) {
  FakeNames n(3);
  ReportOptions opt;
  opt.max_points = 4;
  opt.bucket_groups = 2;
  opt.top_groups = 2;
  opt.heatmap_workers = 2;
  opt.source = "t.snail";
  ReportBuilder b(opt);
  for (uint64_t k = 0; k < 2; ++k) b.add(window(k), n.names);
  const std::string json = b.json();
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(json);
  EXPECT_EQ(std::string_view(d["source"]), "t.snail");
  EXPECT_EQ(int64_t(d["windows"]), 2);
  simdjson::dom::array pts = d["series"]["points"];
  ASSERT_EQ(pts.size(), 2u);
  // Window 1: processing CP 0.1, workers [0, 0.5, 0.2] and [2, 0.2, 0.5], other [0.3, 0.3].
  simdjson::dom::element p1 = pts.at(1);
  EXPECT_DOUBLE_EQ(double(p1["cp"].at(0)), 0.1);
  EXPECT_DOUBLE_EQ(double(p1["workers"].at(0).at(1)), 0.5);
  EXPECT_DOUBLE_EQ(double(p1["workers_other"].at(0)), 0.3);
  // Whole trace: workers 0 and 2 (0.7 each) shown, "other" = worker 1 (0.3, 0.3), count 1.
  simdjson::dom::element w = d["overall"]["workers"];
  EXPECT_EQ(simdjson::dom::array(w["groups"]).size(), 2u);
  EXPECT_DOUBLE_EQ(double(w["other"]["cp"]), 0.3);
  EXPECT_EQ(int64_t(w["other"]["count"]), 1);
  // Heatmap, 2 workers kept of 3: communication mass per worker (as sender or receiver):
  // 0: 0.25 + 0.125 = 0.375, 1: 0.375 + 0.5 = 0.875, 2: 0.5 -> workers 1 and 2 kept, 0 is
  // "other". Labels [1, 2, other]; cell (other -> 1) has CP 0.25.
  simdjson::dom::element hm = d["overall"]["heatmap"];
  simdjson::dom::array labels = hm["labels"];
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(std::string_view(labels.at(0)), "1");
  EXPECT_EQ(std::string_view(labels.at(2)), "other");
  EXPECT_DOUBLE_EQ(double(hm["cp"].at(2 * 3 + 0)), 0.25);
  EXPECT_DOUBLE_EQ(double(hm["conv"].at(0 * 3 + 1)), 0.5);  // 1 -> 2
  EXPECT_DOUBLE_EQ(double(hm["conv"].at(2 * 3 + 0)), 0.125);
}

TEST(ReportReducer, JsonBeforeTheFirstWindow) {
  // serve answers /api/report before any window closed.
  ReportBuilder b{ReportOptions{}};
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(b.json());
  EXPECT_EQ(int64_t(d["windows"]), 0);
  EXPECT_EQ(simdjson::dom::array(d["series"]["points"]).size(), 0u);
  EXPECT_EQ(simdjson::dom::array(d["timelines"]).size(), 0u);
  EXPECT_EQ(simdjson::dom::array(d["overall"]["heatmap"]["labels"]).size(), 0u);
}

TEST(ReportReducer, IndicesBeyondTheNamesGetTheirOwnSlot) {
  // Names for one worker (id 7) but a summary that refers to dense index 3: the index is
  // taken for the id, nothing is read out of bounds.
  FakeNames one(std::vector<uint32_t>{7});
  ReportBuilder b{ReportOptions{}};
  WindowSummary w = window(0);
  w.cp.worker = {1.0};
  w.conventional.worker = {1.0};
  w.cp.communication = {{0, 3, 0.5}};
  w.conventional.communication = {};
  w.top = {{3, 0, ActivityType::data_message, kNone, 0, 5, 0.5}};
  b.add(w, one.names);
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(b.json());
  simdjson::dom::array names = d["workers"];
  ASSERT_EQ(names.size(), 4u);  // 7, then indices 1, 2, 3 as ids
  EXPECT_EQ(std::string_view(names.at(0)), "7");
  EXPECT_EQ(std::string_view(names.at(3)), "3");
  EXPECT_EQ(std::string_view(d["overall"]["top"].at(0)["worker"]), "3");
  EXPECT_EQ(std::string_view(d["overall"]["top"].at(0)["remote"]), "7");
}

TEST(ReportReducer, WorkersAreKeyedByIdAcrossPags) {
  // serve cuts a PAG per batch of windows: worker 5 is dense index 0 in the first
  // window's PAG (ids {5, 9}) and 1 in the second's (ids {2, 5, 9}).
  FakeNames first(std::vector<uint32_t>{5, 9}), second(std::vector<uint32_t>{2, 5, 9});
  ReportOptions opt;
  ReportBuilder b(opt);
  WindowSummary w0 = window(0), w1 = window(1);
  w0.cp.worker = {0.6, 0.4};
  w0.conventional.worker = {0.5, 0.5};
  w0.cp.communication = {{0, 1, 0.25}};  // 5 -> 9
  w0.conventional.communication = {{0, 1, 0.125}};
  w0.top = {{1, kNone, ActivityType::processing, kNone, 0, 10, 0.4}};
  w1.cp.worker = {0.0, 0.6, 0.4};
  w1.conventional.worker = {0.2, 0.4, 0.4};
  w1.cp.communication = {{1, 2, 0.5}};  // 5 -> 9
  w1.conventional.communication = {{1, 2, 0.25}};
  w1.top = {{2, kNone, ActivityType::processing, kNone, 1000, 1010, 0.4}};
  b.add(w0, first.names);
  b.add(w1, second.names);
  // Slots in order of appearance: 5 -> 0, 9 -> 1, 2 -> 2. Equal weights (spans 1000):
  // worker 5 CP (0.6 + 0.6) / 2 = 0.6, worker 9 0.4, worker 2 0; message 5 -> 9 0.375.
  const Aggregate& agg = b.aggregate();
  ASSERT_EQ(agg.cp.worker.size(), 3u);
  EXPECT_NEAR(agg.cp.worker[0] / static_cast<double>(agg.weight_ns), 0.6, 1e-12);
  EXPECT_NEAR(agg.cp.worker[1] / static_cast<double>(agg.weight_ns), 0.4, 1e-12);
  EXPECT_NEAR(agg.conventional.worker[2] / static_cast<double>(agg.weight_ns), 0.1, 1e-12);
  ASSERT_EQ(agg.cp.communication.size(), 1u);
  EXPECT_EQ(agg.cp.communication[0].src, 0u);
  EXPECT_EQ(agg.cp.communication[0].dst, 1u);
  EXPECT_NEAR(agg.cp.communication[0].value / static_cast<double>(agg.weight_ns), 0.375, 1e-12);
  ASSERT_EQ(agg.top.size(), 2u);
  EXPECT_EQ(agg.top[0].worker, 1u);  // worker 9 in both windows
  EXPECT_EQ(agg.top[1].worker, 1u);
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(b.json());
  simdjson::dom::array names = d["workers"];
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(std::string_view(names.at(0)), "5");
  EXPECT_EQ(std::string_view(names.at(2)), "2");
}

// Worker 0: processing [0, 4], serialization [4, 10]; worker 1: processing [0, 10]; one
// window [0, 10]. Transient paths: one per worker, N = 2, so
// CP = w / (N * 10): 4/20 = 0.2, 6/20 = 0.3 and 10/20 = 0.5.
Trace two_workers() {
  testing::TraceBuilder t;
  t.activity(0, ActivityType::processing, 0, 4, 1);
  t.activity(0, ActivityType::serialization, 4, 10, 1);
  t.activity(1, ActivityType::processing, 0, 10, 1);
  return t.build();
}

TEST(ReportTimeline, KeepsTheMostCriticalEdges) {
  Trace trace = two_workers();
  Pag pag = build_pag(trace);
  AnalysisOptions opt;
  std::vector<report::Timeline> got;
  analyze_pag(pag, opt,
              [&](const WindowView& v) { got.push_back(report::extract_timeline(v, 2)); });
  ASSERT_EQ(got.size(), 1u);
  const report::Timeline& t = got[0];
  EXPECT_EQ(t.dropped_edges, 1u);  // worker 0's processing (CP 0.2)
  ASSERT_EQ(t.edges.size(), 2u);
  EXPECT_EQ(t.edges[0].worker, 0u);
  EXPECT_EQ(t.edges[0].type, ActivityType::serialization);
  EXPECT_EQ(t.edges[0].start, 4);
  EXPECT_EQ(t.edges[0].end, 10);
  EXPECT_NEAR(t.edges[0].cp, 0.3, 1e-12);
  EXPECT_EQ(t.edges[1].worker, 1u);
  EXPECT_NEAR(t.edges[1].cp, 0.5, 1e-12);
  EXPECT_NEAR(t.score, 0.5, 1e-12);
}

TEST(ReportTimeline, KeepsFirstLatestAndMostConcentratedWindows) {
  // Ten windows of 10 ns; window k's worker 1 runs [10k, 10k + 10], worker 0 runs five
  // 2-ns activities: N = 2 paths, the top CP is worker 1's 10 / (2 * 10) = 0.5. In window 4
  // worker 0 runs one 10-ns activity (top CP still 0.5); in window 6 it waits, so worker
  // 1's edge is the only path: CP 1, the most concentrated window.
  testing::TraceBuilder tb;
  for (int64_t k = 0; k < 10; ++k) {
    tb.activity(1, ActivityType::processing, 10 * k, 10 * k + 10, 1);
    if (k == 4) {
      tb.activity(0, ActivityType::processing, 10 * k, 10 * k + 10, 1);
    } else if (k == 6) {
      tb.activity(0, ActivityType::waiting, 10 * k, 10 * k + 10);
    } else {
      for (int64_t s = 0; s < 10; s += 2)
        tb.activity(0, ActivityType::processing, 10 * k + s, 10 * k + s + 2, 1);
    }
  }
  Trace trace = tb.build();
  Pag pag = build_pag(trace);
  Names names(trace, pag);
  ReportOptions ro;
  ro.timelines = 3;
  ReportBuilder b(ro);
  AnalysisOptions opt;
  opt.windows.width_ns = 10;
  opt.pag.gap_threshold_ns = 1;
  analyze_pag(pag, opt, [&](const WindowView& v) { b.add(v, names); });
  auto kept = b.timelines();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0]->summary.index, 0u);  // first
  EXPECT_EQ(kept[2]->summary.index, 9u);  // latest
  EXPECT_EQ(kept[1]->summary.index, 6u);
  EXPECT_NEAR(kept[1]->score, 1.0, 1e-12);
  EXPECT_NEAR(kept[0]->score, 0.5, 1e-12);
}

TEST(ReportPage, EmbedsDataWithoutBreakingTheScript) {
  const std::string json = R"({"source":"</script><script>alert(1)</script>"})";
  const std::string page = report::render_report_html(json);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(page.find(R"(\u003c/script>\u003cscript>alert(1)\u003c/script>)"), std::string::npos);
  EXPECT_NE(page.find("window.SNAILTRAIL_MODE = \"file\""), std::string::npos);
  EXPECT_EQ(page.find("/*SNAILTRAIL_"), std::string::npos);                  // every marker filled
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));  // no fetches
  const std::string live = report::render_dashboard_html();
  EXPECT_NE(live.find("window.SNAILTRAIL_MODE = \"live\""), std::string::npos);
  EXPECT_NE(live.find(">null</script>"), std::string::npos);
}

// ---- the command, end to end ----

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliRun {
  int rc;
  std::string out, err;
};

CliRun report_cli(const std::string& args) {
  static const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-report-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = std::string(SNAILTRAIL_BINARY) + " " + args + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
}

TEST(ReportCli, PointsMatchAnalyzePerWindow) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-report-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl";
  const fs::path html = dir / "r.html", json = dir / "r.json", jsonl = dir / "a.jsonl";
  CliRun r = report_cli("report " + trace + " -o " + html.string() + " --window 1ms");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Prints the path and the size.
  EXPECT_EQ(r.out.rfind(html.string() + " (", 0), 0u) << r.out;
  const std::string page = slurp(html);
  EXPECT_NE(r.out.find("(" + std::to_string(page.size()) + " bytes, "), std::string::npos) << r.out;
  EXPECT_NE(page.find("<script id=\"snailtrail-data\" type=\"application/json\">{\"schema\":1"),
            std::string::npos);
  ASSERT_EQ(report_cli("report " + trace + " -o " + json.string() + " -f json --window 1ms").rc, 0);
  ASSERT_EQ(report_cli("analyze " + trace + " -o " + jsonl.string() +
                       " --format jsonl --window 1ms --no-progress")
                .rc,
            0);
  // The oracle: analyze's per-window activity CP, here one window per point.
  simdjson::dom::parser parser, line_parser;
  simdjson::dom::element d = parser.parse(slurp(json));
  simdjson::dom::array points = d["series"]["points"];
  std::istringstream lines(slurp(jsonl));
  std::string line;
  size_t k = 0;
  for (; std::getline(lines, line); ++k) {
    if (line.rfind("{\"run\":", 0) == 0) break;  // analyze's last line: the run's verdict
    ASSERT_LT(k, points.size());
    simdjson::dom::element w = line_parser.parse(line);
    simdjson::dom::element p = points.at(k);
    EXPECT_EQ(uint64_t(p["w0"]), uint64_t(w["window"]["index"]));
    EXPECT_EQ(uint64_t(p["events"]), uint64_t(w["events"]));
    for (auto [type, value] : simdjson::dom::object(w["activity"])) {
      const int t = static_cast<int>(*parse_activity(type));
      EXPECT_NEAR(double(p["cp"].at(t)), double(value), 1e-5 * double(value) + 1e-12)
          << "window " << k << " " << type;
    }
  }
  EXPECT_EQ(k, points.size());
  EXPECT_GT(k, 1u);
  fs::remove_all(dir);
}

TEST(ReportCli, SameDataForAnyThreadCount) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-report-j-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl";
  for (const char* j : {"1", "2", "3"})
    ASSERT_EQ(report_cli("report " + trace + " -o " + (dir / j).string() +
                         " -f json --window 500us --timelines 3 -j " + j)
                  .rc,
              0);
  const std::string one = slurp(dir / "1");
  EXPECT_GT(one.size(), 1000u);
  EXPECT_EQ(one, slurp(dir / "2"));
  EXPECT_EQ(one, slurp(dir / "3"));
  fs::remove_all(dir);
}

TEST(ReportCli, ErrorsExitWithTheDocumentedCodes) {
  const std::string trace = std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/pipeline.jsonl";
  EXPECT_EQ(report_cli("report /nonexistent/t.snail -o /dev/null").rc, 1);
  CliRun r = report_cli("report " + trace + " -o /dev/null --window 0s");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--window must be positive"), std::string::npos) << r.err;
  EXPECT_EQ(report_cli("report -o /dev/null").rc, 2);  // no trace
  EXPECT_EQ(report_cli("report " + trace).rc, 2);      // no output
  EXPECT_EQ(report_cli("report " + trace + " -o /dev/null --max-points 1").rc, 2);
  EXPECT_EQ(report_cli("report " + trace + " -o /dev/null --from +1h").rc, 2);  // no window
}

}  // namespace
}  // namespace snailtrail::test_report
